"""``kairo tsc benchmark --select cv``: stratified folds of the training split, the pooled CV
accuracy per candidate, the choice (first candidate wins a tie), the refit of the winner,
reuse of saved folds, and the errors bad options get."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from kairo import DataError
from kairo.tsc import ModelConfig, TrainConfig, load_dataset
from kairo.tsc._grid import cv_folds, run_grid
from kairo.tsc._selection import cv_summary
from kairo.cli import main

# the peers (MiniRocket, MultiRocket-Hydra) play no part in the selection tested here
TINY = ["--epochs", "2", "--d-model", "8", "--blocks", "1", "--workers", "1", "--peers", ""]


def test_cv_folds_partition_and_stratify():
    y = np.repeat(np.arange(3), [12, 9, 7])
    folds = cv_folds(y, 4, seed=3)
    assert len(folds) == 4
    held = np.concatenate([b for _, b in folds])
    assert np.array_equal(np.sort(held), np.arange(len(y)))         # each series held out once
    for fit, out in folds:
        assert not set(fit) & set(out) and len(fit) + len(out) == len(y)
        # stratified: each class's held-out count is within one of its share
        assert np.all(np.abs(np.bincount(y[out], minlength=3) - np.bincount(y) / 4) < 1)
    again = cv_folds(y, 4, seed=3)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(folds, again))     # seeded
    other = cv_folds(y, 4, seed=4)
    assert any(not np.array_equal(a[1], b[1]) for a, b in zip(folds, other))
    with pytest.raises(DataError, match="8-fold .* the smallest class has 7"):
        cv_folds(y, 8, seed=0)


def test_cv_summary_pools_folds_and_averages_repeats():
    rows = []
    # candidate a: repeat 0 gets 8 + 9 of 20, repeat 1 gets 10 + 10 of 20
    for seed, hits in ((0, (8, 9)), (1, (10, 10))):
        for fold, h in enumerate(hits):
            rows.append({"dataset": "d", "encoder": "resnet", "pool": "mean", "time_warp": 0.0,
                         "seed": seed, "fold": fold, "cv_hits": h, "cv_n": 10})
            rows.append({"dataset": "d", "encoder": "resnet", "pool": "mean", "time_warp": 0.2,
                         "seed": seed, "fold": fold, "cv_hits": 5, "cv_n": 10})
    s = cv_summary(pd.DataFrame(rows))
    assert list(s.time_warp) == [0.0, 0.2]                          # candidate order kept
    a = s.iloc[0]
    assert a.cv_accuracy == pytest.approx((0.85 + 1.0) / 2)
    assert a.cv_sd == pytest.approx(np.std([0.85, 1.0], ddof=1))
    assert (a.repeats, a.cv_series) == (2, 40)
    assert s.iloc[1].cv_accuracy == pytest.approx(0.5)
    # with the configured candidates and datasets, rows follow their order
    two = pd.concat([pd.DataFrame(rows).assign(dataset=d) for d in ("d", "e")])
    s = cv_summary(two, [("resnet", "mean", 0.2), ("resnet", "mean", 0)], ["e", "d"])
    assert list(zip(s.dataset, s.time_warp)) == [("e", 0.2), ("e", 0.0), ("d", 0.2), ("d", 0.0)]
    assert list(s.cv_accuracy) == pytest.approx([0.5, 0.925, 0.5, 0.925])


def test_a_fold_job_trains_on_the_other_folds_only(tmp_path):
    """A fold job (one ``kairo tsc train`` run with cv_folds) equals fitting the fold's
    training part by hand and scoring its held-out part; the test split is not scored."""
    from kairo.tsc import evaluate, fit

    train = load_dataset("ItalyPowerDemand", "train")
    m = ModelConfig(encoder="resnet", pool="mean", d_model=8, blocks=1)
    t = TrainConfig(epochs=2, val_fraction=0.0, seed=1, threads=1, time_warp=0.2)
    job = {"dataset": "ItalyPowerDemand", "model": dataclasses.asdict(m),
           "train": dataclasses.asdict(t), "threads": 1, "mnist1d_length": 40,
           "fold": {"folds": 3, "index": 2, "split_seed": 1}}
    [row] = run_grid([job], tmp_path / "runs", workers=1).to_dict("records")
    fit_idx, out_idx = cv_folds(train.y, 3, 1)[2]
    res = fit(m, t, train.subset(fit_idx), progress_bar=False)
    pred = evaluate(res["model"], train.subset(out_idx))["pred"]
    assert row["cv_hits"] == int((pred == train.y[out_idx]).sum())
    assert row["cv_n"] == len(out_idx) and row["fold"] == 2 and row["time_warp"] == 0.2
    assert "test_accuracy" not in row
    summary = (tmp_path / "runs" / row["run"] / "summary.json").read_text()
    assert "cv_accuracy" in summary and "test_accuracy" not in summary


def test_benchmark_select_cv_chooses_refits_and_reuses(tmp_path, capsys):
    out = tmp_path / "cv"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean,max", "--time-warps", "0,0.2", "--select", "cv", "--folds",
                 "2", "--seeds", "2", *TINY, "--out", str(out)]) == 0
    cv = pd.read_csv(out / "cv_runs.csv")
    assert len(cv) == 2 * 2 * 2                      # pools × warps × folds, one repeat
    assert "test_accuracy" not in cv                 # the test split plays no part
    per = cv.groupby(["pool", "time_warp"]).cv_n.sum()
    assert (per == 67).all()                         # all 67 training series, once each
    sel = pd.read_csv(out / "selection.csv")
    top = sel.cv_accuracy.max()
    first_best = sel[sel.cv_accuracy == top].iloc[0]           # ties go to the first listed
    row = pd.read_csv(out / "benchmark.csv").iloc[0]
    assert (row["pool"], row.time_warp) == (first_best["pool"], first_best.time_warp)
    assert row.cv_accuracy == pytest.approx(top)
    refit = pd.read_csv(out / "refit_runs.csv")
    assert set(refit.seed) == {0, 1} and set(refit.time_warp) == {first_best.time_warp}
    assert set(refit["pool"]) == {first_best["pool"]} and (refit.epochs_run == 2).all()
    assert row.kairo == pytest.approx(refit.test_accuracy.mean())

    # the saved folds choose again without retraining them; the refit is reproducible
    capsys.readouterr()
    again = tmp_path / "again"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean,max", "--time-warps", "0,0.2", "--select", "cv", "--reuse",
                 str(out / "cv_runs.csv"), "--seeds", "2", *TINY, "--out", str(again)]) == 0
    assert "chosen by 2-fold CV × 1" in capsys.readouterr().out   # the table's folds
    pd.testing.assert_frame_equal(pd.read_csv(again / "selection.csv"), sel)
    timings = ["seconds", "fit_seconds"]
    pd.testing.assert_frame_equal(pd.read_csv(again / "refit_runs.csv").drop(columns=timings),
                                  refit.drop(columns=timings))
    # the folds and the refit train without a hold-out, so the hold-out's settings play no
    # part and are not compared; a setting the folds were trained with is
    base = ["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
            "--pools", "mean,max", "--time-warps", "0,0.2", "--select", "cv", "--reuse",
            str(out / "cv_runs.csv"), "--seeds", "1", *TINY]
    assert main([*base, "--patience", "3", "--val-fraction", "0.5",
                 "--out", str(tmp_path / "holdout_options")]) == 0
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "holdout_options" / "selection.csv"),
                                  sel)
    capsys.readouterr()
    assert main([*base, "--lr", "0.01", "--out", str(tmp_path / "other_lr")]) == 2
    assert "lr: 0.001 there, 0.01 here" in capsys.readouterr().err


def test_tie_goes_to_the_first_candidate(tmp_path):
    rows = [{"dataset": "ItalyPowerDemand", "encoder": "resnet", "pool": "mean",
             "time_warp": w, "seed": 0, "fold": f, "cv_hits": 20, "cv_n": 33 + f}
            for w in (0.2, 0.0) for f in (0, 1)]
    path = tmp_path / "cv_runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "o"
    # the table lists 0.2 first, the options list 0 first: the options' order decides
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean", "--time-warps", "0,0.2", "--select", "cv", "--reuse",
                 str(path), "--seeds", "1", *TINY, "--out", str(out)]) == 0
    assert pd.read_csv(out / "benchmark.csv").iloc[0].time_warp == 0.0
    assert list(pd.read_csv(out / "selection.csv").time_warp) == [0.0, 0.2]
    out = tmp_path / "o2"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean", "--time-warps", "0.2,0", "--select", "cv", "--reuse",
                 str(path), "--seeds", "1", *TINY, "--out", str(out)]) == 0
    assert pd.read_csv(out / "benchmark.csv").iloc[0].time_warp == 0.2
    # only the configured candidates compete: without --time-warps, just --time-warp's value
    out = tmp_path / "o3"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean", "--select", "cv", "--reuse", str(path), "--seeds", "1",
                 "--time-warp", "0", *TINY, "--out", str(out)]) == 0
    assert list(pd.read_csv(out / "selection.csv").time_warp) == [0.0]
    # the default, "auto", is a candidate of its own: runs of it are recorded as "auto"
    pd.DataFrame([{**r, "time_warp": "auto"} for r in rows[:2]]).to_csv(path, index=False)
    out = tmp_path / "o4"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean", "--select", "cv", "--reuse", str(path), "--seeds", "1",
                 *TINY, "--out", str(out)]) == 0
    assert list(pd.read_csv(out / "selection.csv").time_warp) == ["auto"]
    assert list(pd.read_csv(out / "refit_runs.csv").time_warp) == ["auto"]


def test_reuse_without_the_configured_candidates_is_refused(tmp_path, capsys):
    rows = [{"dataset": "ItalyPowerDemand", "encoder": "resnet", "pool": "mean",
             "time_warp": 0.2, "seed": 0, "fold": f, "cv_hits": 20, "cv_n": 33 + f}
            for f in (0, 1)]
    path = tmp_path / "cv_runs.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "max", "--select", "cv", "--reuse", str(path), "--seeds", "1",
                 *TINY, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert ("no runs of the configured candidates (resnet + max, time warp auto) for "
            "ItalyPowerDemand") in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, fragment", [
    (["--select", "kfold"], "invalid choice: 'kfold'"),             # refused by argparse
    (["--folds", "1"], "folds must be ≥ 2, got 1"),
    (["--cv-repeats", "0"], "cv_repeats must be ≥ 1, got 0"),
    (["--time-warps", "0,-0.1"], "time_warps must be ≥ 0.0, got -0.1"),
    (["--time-warps", "0.2,0.2"], "lists a candidate twice"),
    (["--select", "cv", "--no-refit"], "select cv needs refit"),
    (["--select", "cv", "--datasets", "ArrowHead", "--time-warps", "0,0.2", "--folds", "13"],
     "dataset ArrowHead: folds: 13-fold cross-validation needs at least 13 training series of "
     "every class; the smallest class has 12"),
])
def test_bad_cv_options_get_a_clear_error(argv, fragment, tmp_path, capsys):
    try:
        rc = main(["tsc", "benchmark", *argv, "--out", str(tmp_path / "o")])
    except SystemExit as exc:              # a field's choices: argparse's own error
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert ("kairo: error:" in err or "kairo tsc benchmark" in err) and fragment in err, err
    assert not (tmp_path / "o").exists()


def test_reuse_of_a_holdout_table_with_select_cv_is_refused(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    pd.DataFrame([{"dataset": "ItalyPowerDemand", "encoder": "resnet", "pool": "mean",
                   "seed": 0, "test_accuracy": 0.9, "val_accuracy": 0.9}]).to_csv(path,
                                                                                 index=False)
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--select", "cv",
                 "--reuse", str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "expected a cv_runs.csv from kairo tsc benchmark --select cv" in err
    assert "'cv_hits'" in err
    assert not (tmp_path / "o").exists()


def test_reuse_checks_the_settings_the_runs_were_trained_with(tmp_path, capsys, recwarn):
    """A reused table's config.yaml must match this run's model and training settings; a
    setting it does not record is reported, not assumed; a table without config.yaml is used
    with a warning."""
    import yaml

    path = tmp_path / "runs.csv"
    pd.DataFrame([{"dataset": "ItalyPowerDemand", "encoder": "resnet", "pool": "mean",
                   "time_warp": "auto", "seed": s, "test_accuracy": 0.9, "val_accuracy": 0.8}
                  for s in (0, 1)]).to_csv(path, index=False)
    argv = ["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
            "--pools", "mean", "--no-refit", "--reuse", str(path), "--peers", ""]
    with pytest.warns(UserWarning, match="no config.yaml next to it.*cannot be checked"):
        assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    saved = yaml.safe_load((tmp_path / "a" / "config.yaml").read_text())
    assert (saved["head_norm"], saved["weight_init"]) == ("auto", "auto")

    def write(drop=(), **changes):
        values = {k: v for k, v in {**saved, **changes}.items() if k not in drop}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(values))

    def refused(out, *args):
        assert main([*argv, *args, "--out", str(tmp_path / out)]) == 2
        assert not (tmp_path / out).exists()
        return capsys.readouterr().err

    # the settings a run wrote pass, without a warning
    write()
    recwarn.clear()
    assert main([*argv, "--out", str(tmp_path / "same")]) == 0
    assert not [w for w in recwarn if "--reuse" in str(w.message)]
    # other settings are refused, each named
    write(d_model=32, bn_stats="running")
    err = refused("b")
    assert "d_model: 32 there, 64 here; " in err and \
        "bn_stats: 'running' there, 'recompute' here" in err, err
    # a setting the file does not record is not assumed to match
    write(drop=("head_norm", "epochs"))
    err = refused("c")
    assert "epochs: '(not recorded)' there, 0 here" in err, err
    assert "head_norm: '(not recorded)' there, 'auto' here" in err, err
    # "auto" is each encoder's default: the LayerNorm head and PyTorch's initialisation are
    # not the ResNet's (Keras's head and initialisation)
    write(head_norm="true", weight_init="torch")
    assert ("head_norm: 'true' there, 'auto' here (resnet: True there, False here); "
            "weight_init: 'torch' there, 'auto' here (resnet: 'torch' there, 'glorot' here)"
            in refused("e"))
    assert main([*argv, "--head-norm", "true", "--weight-init", "torch",
                 "--out", str(tmp_path / "e2")]) == 0
    keras = ["--head-norm", "false", "--weight-init", "glorot"]
    assert ("head_norm: 'true' there, 'false' here; weight_init: 'torch' there, 'glorot' here"
            in refused("e3", *keras))
    # but they are the Transformer's: a Transformer-only grid's runs had them under "auto"
    write(encoders=["transformer"], head_norm="true", weight_init="torch")
    assert main([*argv, "--out", str(tmp_path / "d")]) == 0
    write(head_norm="false", weight_init="glorot")
    assert main([*argv, *keras, "--out", str(tmp_path / "f")]) == 0
    assert main([*argv, "--out", str(tmp_path / "g")]) == 0       # auto is that for resnet


def test_grid_jobs_resolve_auto_head_options_per_encoder():
    """A grid over both encoders gives each its own "auto" head options (ResNet: Keras's head
    and initialisation; Transformer: LayerNorm head, PyTorch's), and explicit options reach
    both; a job's model config is built for its encoder, not copied from another's. The jobs
    carry "auto" (resolved when each model is built)."""
    from kairo.cli import make_config
    from kairo.tsc._grid import _jobs

    def heads(**flags):
        cfg = make_config("tsc compare-pooling", flag_values={"datasets": "GunPoint",
                                                              "seeds": "1", **flags})
        jobs = _jobs(cfg, [("resnet", "mean"), ("transformer", "mean")])
        for j in jobs:
            assert (j["model"]["head_norm"], j["model"]["weight_init"]) == \
                (flags.get("head_norm", "auto"), flags.get("weight_init", "auto"))
        return {j["model"]["encoder"]: tuple(ModelConfig(**j["model"]).resolved().values())
                for j in jobs}

    assert heads() == {"resnet": (False, "glorot"), "transformer": (True, "torch")}
    assert heads(head_norm="true", weight_init="torch") == {"resnet": (True, "torch"),
                                                            "transformer": (True, "torch")}
    assert heads(head_norm="false") == {"resnet": (False, "glorot"),
                                        "transformer": (False, "torch")}


@pytest.mark.parametrize("values, fragment", [
    ({"cv_folds": 1}, "cv_fold: 0 of cv_folds 1"),
    ({"cv_folds": 3, "cv_fold": 3}, "cv_fold: 3 of cv_folds 3"),
    ({"cv_folds": -1}, "cv_folds must be ≥ 0"),
])
def test_bad_fold_settings_of_tsc_train_are_refused(values, fragment):
    """cv_folds / cv_fold (a grid's fold run, set from a config file) are checked with the
    config, naming the field."""
    from kairo import ConfigError
    from kairo.cli import make_config

    with pytest.raises(ConfigError, match=fragment):
        make_config("tsc train", values, source="config file")
