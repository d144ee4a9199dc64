"""benchmarks/studies/pooling_combine.py: several compare-pooling runs pooled into one
comparison equal one run over the joined tables."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.study


def _runs_dir(path, datasets, seeds=3, encoder="resnet"):
    import pandas as pd

    rng = np.random.default_rng(sum(map(ord, path.name)))
    rows = [{"dataset": d, "encoder": encoder, "pool": p, "time_warp": 0.0, "seed": s,
             "test_accuracy": float(rng.uniform(0.5, 1.0)), "test_macro_f1": 0.5,
             "val_accuracy": 0.5, "best_epoch": 1, "epochs_run": 1, "seconds": 1.0,
             "n_params": 10}
            for d in datasets for p in ("mean", "max", "mha") for s in range(seeds)]
    path.mkdir()
    pd.DataFrame(rows).to_csv(path / "runs.csv", index=False)
    (path / "config.yaml").write_text(f"datasets: {datasets}\n")
    return path


def test_pooling_combine_equals_one_run_over_the_joined_tables(load_benchmark, tmp_path):
    import pandas as pd

    from kairo.tsc._compare import pooling_tests

    probe = load_benchmark("studies/pooling_combine")
    a = _runs_dir(tmp_path / "a", ["GunPoint", "ArrowHead"])
    b = _runs_dir(tmp_path / "b", ["JapaneseVowels"])
    c = _runs_dir(tmp_path / "c", ["GunPoint"], encoder="transformer")
    assert probe.main([str(a), str(b), str(c), "--out", str(tmp_path / "out")]) == 0
    joined = pd.concat([pd.read_csv(d / "runs.csv") for d in (a, b, c)], ignore_index=True)
    got = pd.read_csv(tmp_path / "out" / "tests.csv")
    want = pooling_tests(joined)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
    assert set(got.encoder) == {"resnet", "transformer", "all"}
    assert got[(got.encoder == "resnet") & (got.pool == "max")].pairs.item() == 9
    assert {p.name for p in (tmp_path / "out").iterdir()} == {
        "runs.csv", "summary.csv", "tests.csv", "pooling.png", "sources.json"}


def test_pooling_combine_refuses_overlap_bad_tables_and_an_existing_out(load_benchmark,
                                                                         tmp_path, capsys):
    probe = load_benchmark("studies/pooling_combine")
    a = _runs_dir(tmp_path / "a", ["GunPoint"])
    b = _runs_dir(tmp_path / "b", ["GunPoint", "ArrowHead"])
    (tmp_path / "empty").mkdir()
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "runs.csv").write_text("dataset,accuracy\nGunPoint,0.9\n")
    cases = [([a, b], "may come from one folder only"),
             ([a, tmp_path / "empty"], "empty/runs.csv: cannot read"),
             ([a, tmp_path / "bad"], "bad/runs.csv: expected a runs.csv of kairo tsc "
                                     "compare-pooling"),
             ([a], "exists; choose a new folder")]
    for dirs, msg in cases:
        out = a if msg.startswith("exists") else tmp_path / "out"
        with pytest.raises(SystemExit):
            probe.main([*map(str, dirs), "--out", str(out)])
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_pooling_combine_takes_only_the_named_datasets_of_a_folder(load_benchmark, tmp_path,
                                                                    capsys):
    import pandas as pd

    probe = load_benchmark("studies/pooling_combine")
    old = _runs_dir(tmp_path / "old", ["GunPoint", "ArrowHead", "BasicMotions"])
    new = _runs_dir(tmp_path / "new", ["GunPoint"])
    # the newer folder's GunPoint replaces the old one's: no overlap error
    assert probe.main([f"{old}:ArrowHead,BasicMotions", str(new),
                       "--out", str(tmp_path / "out")]) == 0
    runs = pd.read_csv(tmp_path / "out" / "runs.csv")
    want = pd.concat([pd.read_csv(old / "runs.csv").query("dataset != 'GunPoint'"),
                      pd.read_csv(new / "runs.csv")], ignore_index=True)
    pd.testing.assert_frame_equal(runs.drop(columns="source"), want, check_dtype=False)
    assert sorted(set(runs.source)) == sorted([f"{old}:ArrowHead,BasicMotions", str(new)])
    for arg, msg in [(f"{old}:OSULeaf", "has no runs of OSULeaf"),
                     (f"{old}:", "got no dataset after ':'")]:
        with pytest.raises(SystemExit):
            probe.main([arg, "--out", str(tmp_path / "out2")])
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "out2").exists()
