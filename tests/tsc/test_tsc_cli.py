"""``kairo tsc …`` through the command line: train → evaluate → predict → maps, the pooling
comparison and the benchmark on tiny budgets, and the errors bad input gets."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from kairo.tsc._reference import resnet_test
from kairo.cli import main

SMALL = ["--epochs", "4", "--d-model", "16", "--n-heads", "2", "--blocks", "1",
         "--patience", "0", "--threads", "1"]
# one small model (tsc train's default is an ensemble of 2; the ensemble tests below say so)
FAST = [*SMALL, "--ensemble", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("tsc") / "train"
    rc = main(["tsc", "train", "--dataset", "ItalyPowerDemand", "--encoder", "transformer",
               "--pool", "attention", *FAST, "--out", str(out)])
    assert rc == 0
    return out


def test_train_writes_model_metrics_and_figures(trained):
    m = json.loads((trained / "metrics.json").read_text())
    assert m["n_samples"] == 1029 and m["split"] == "test"          # ItalyPowerDemand test
    cm = np.array(m["confusion"])
    assert cm.shape == (2, 2) and cm.sum() == 1029
    assert abs(m["accuracy"] - np.trace(cm) / cm.sum()) < 1e-12
    for f in ("model.pt", "history.csv", "per_class.csv", "confusion.csv", "confusion.png",
              "curves.png", "summary.json", "config.yaml", "run.json"):
        assert (trained / f).is_file(), f
    assert len(pd.read_csv(trained / "history.csv")) == 4
    assert not trained.with_name("train.checkpoint.pt").exists()
    # each test series: its label, the prediction, the probabilities (rows sum to 1)
    per = pd.read_csv(trained / "predictions.csv")
    assert list(per.columns[:3]) == ["series", "label", "predicted"] and len(per) == 1029
    proba = per.filter(like="p_").to_numpy()
    assert np.allclose(proba.sum(1), 1, atol=1e-5)
    assert (per.label == per.predicted).mean() == pytest.approx(m["accuracy"])
    assert (per.predicted.astype(str) ==
            per.filter(like="p_").idxmax(axis=1).str[2:]).all()
    # the run record names the data files it read, with their checksums
    import hashlib

    data = json.loads((trained / "run.json").read_text())["data"]
    assert sorted(data) == ["ItalyPowerDemand_test", "ItalyPowerDemand_train"]
    for rec in data.values():
        with open(rec["path"], "rb") as f:
            assert rec["sha256"] == hashlib.sha256(f.read()).hexdigest()


def test_train_on_a_bake_off_resample(tmp_path):
    """--resample R trains and scores on resample R of the bake-off protocol: the model is the
    one fitted on resample_split's training part, scored on its test part, and its file says
    so; evaluate without a dataset refuses it (the archive's test split shares its training
    series)."""
    from kairo.tsc import load_dataset, load_estimator, resample_split

    out = tmp_path / "r3"
    assert main(["tsc", "train", "--dataset", "GunPoint", "--resample", "3", *FAST,
                 "--epochs", "1", "--out", str(out)]) == 0
    train, test = resample_split(load_dataset("GunPoint", "train"),
                                 load_dataset("GunPoint", "test"), 3)
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_samples"] == len(test) == 150
    est = load_estimator(out / "model.pt")
    x = test.x.astype(np.float64)
    labels = np.asarray(train.classes)[test.y]
    assert est.score(x, labels) == pytest.approx(m["accuracy"])
    assert est.model_.fit_meta["resample"] == 3
    assert est.model_.fit_meta["dataset"] == "GunPoint"
    assert main(["tsc", "evaluate", "--model", str(out / "model.pt"), "--out",
                 str(tmp_path / "ev")]) == 2
    assert not (tmp_path / "ev").exists()


def test_evaluate_reproduces_the_training_run_metrics(trained, tmp_path):
    out = tmp_path / "eval"
    assert main(["tsc", "evaluate", "--model", str(trained / "model.pt"), "--dataset",
                 "ItalyPowerDemand", "--out", str(out)]) == 0
    a = json.loads((trained / "metrics.json").read_text())
    b = json.loads((out / "metrics.json").read_text())
    assert a["accuracy"] == b["accuracy"] and a["confusion"] == b["confusion"]
    pd.testing.assert_frame_equal(pd.read_csv(trained / "predictions.csv"),
                                  pd.read_csv(out / "predictions.csv"))


def test_predict_csv_matches_evaluate(trained, tmp_path):
    from kairo.tsc import load_classifier, load_dataset, predict

    test = load_dataset("ItalyPowerDemand", "test")
    np.savez(tmp_path / "x.npz", x=test.x[:20])
    out = tmp_path / "pred.csv"
    assert main(["tsc", "predict", "--model", str(trained / "model.pt"), "--input",
                 str(tmp_path / "x.npz"), "--output", str(out)]) == 0
    df = pd.read_csv(out)
    assert len(df) == 20
    probs = df.filter(like="p_").to_numpy()
    np.testing.assert_allclose(probs.sum(1), 1, atol=1e-5)
    model, _ = load_classifier(trained / "model.pt")
    pred, _ = predict(model, test.x[:20])
    assert [str(v) for v in df.predicted] == [test.classes[i] for i in pred]


def test_predict_reads_unlabelled_csv_and_ts_and_scores_labelled_files(trained, tmp_path,
                                                                        capsys, recwarn):
    """The input formats a user brings: a CSV of bare series (no label column), an unlabelled
    .ts file, and with --labelled a file in the training format, whose labels are written next
    to the predictions and scored. All give the predictions of the npz path."""
    from kairo.tsc import load_classifier, load_dataset, predict

    test = load_dataset("ItalyPowerDemand", "test")
    x = test.x[:12, 0]                                                       # [12, 24]
    model, _ = load_classifier(trained / "model.pt")
    want = [test.classes[i] for i in predict(model, test.x[:12])[0]]
    labels = [test.classes[i] for i in test.y[:12]]
    np.savetxt(tmp_path / "bare.csv", x, delimiter=",")
    with open(tmp_path / "lab.csv", "w") as f:
        for lab, row in zip(labels, x):
            f.write(",".join([lab, *map(repr, row.tolist())]) + "\n")
    with open(tmp_path / "bare.ts", "w") as f:
        f.write("@problemName bare\n@timeStamps false\n@univariate true\n"
                "@classLabel false\n@data\n")
        for row in x:
            f.write(",".join(map(repr, row.tolist())) + "\n")
    model_pt = str(trained / "model.pt")
    recwarn.clear()
    for name in ("bare.csv", "bare.ts"):
        out = tmp_path / f"{name}.pred.csv"
        assert main(["tsc", "predict", "--model", model_pt, "--input", str(tmp_path / name),
                     "--output", str(out)]) == 0
        df = pd.read_csv(out, dtype={"predicted": str})
        assert list(df.predicted) == want and "label" not in df
        assert [str(w.message) for w in recwarn] == []
    out = tmp_path / "lab.pred.csv"
    assert main(["tsc", "predict", "--model", model_pt, "--input", str(tmp_path / "lab.csv"),
                 "--output", str(out), "--labelled"]) == 0
    df = pd.read_csv(out, dtype={"predicted": str, "label": str})
    assert list(df.predicted) == want and list(df.label) == labels
    acc = np.mean([a == b for a, b in zip(want, labels)])
    assert f"accuracy {acc:.2%} on the 12 series" in capsys.readouterr().out
    # the training format without --labelled: the label column is read as a value; the user
    # is told why the length is off (this Transformer's rotary positions read the longer
    # series, so the answers are written)
    assert main(["tsc", "predict", "--model", model_pt, "--input", str(tmp_path / "lab.csv"),
                 "--output", str(tmp_path / "oops.csv")]) == 0
    err = capsys.readouterr().err + " ".join(str(w.message) for w in recwarn)
    assert "25 steps, the model was trained on 24-step series" in err
    assert "pass --labelled)" in err
    assert len(pd.read_csv(tmp_path / "oops.csv")) == 12
    # --labelled on a bare CSV: its first value is read as a label; the length says so
    assert main(["tsc", "predict", "--model", model_pt, "--input", str(tmp_path / "bare.csv"),
                 "--output", str(tmp_path / "bare_lab.csv"), "--labelled"]) == 0
    assert "23 steps, the model was trained on 24-step series (if the first CSV column holds " \
           "no labels, leave out --labelled)" in " ".join(str(w.message) for w in recwarn)
    assert "no label of the file is one of the model's classes" in capsys.readouterr().out
    # --labelled on a file without labels: a clear error, no output file
    assert main(["tsc", "predict", "--model", model_pt, "--input", str(tmp_path / "bare.ts"),
                 "--output", str(tmp_path / "none.csv"), "--labelled"]) != 0
    assert "no class labels" in capsys.readouterr().err
    assert not (tmp_path / "none.csv").exists()


def test_multivariate_train_saves_channel_scaling_that_evaluate_reuses(tmp_path):
    """--znorm auto on BasicMotions (6 channels) scales per channel with the training
    statistics; model.pt keeps them, so evaluate and maps reproduce the run."""
    from kairo.tsc import load_classifier, load_dataset

    out = tmp_path / "bm"
    assert main(["tsc", "train", "--dataset", "BasicMotions", "--encoder", "resnet", "--pool",
                 "mean", *FAST, "--out", str(out)]) == 0
    _, meta = load_classifier(out / "model.pt")
    tr = load_dataset("BasicMotions", "train")
    assert meta["znorm"] == "channel" and len(meta["znorm_mean"]) == tr.n_channels == 6
    assert main(["tsc", "evaluate", "--model", str(out / "model.pt"), "--dataset",
                 "BasicMotions", "--out", str(tmp_path / "ev")]) == 0
    a = json.loads((out / "metrics.json").read_text())
    b = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert a["accuracy"] == b["accuracy"] and a["confusion"] == b["confusion"]
    assert main(["tsc", "train", "--dataset", "BasicMotions", "--encoder", "resnet", "--pool",
                 "mean", *FAST, "--znorm", "none", "--out", str(tmp_path / "raw")]) == 0
    assert load_classifier(tmp_path / "raw" / "model.pt")[1]["znorm"] == "none"


def test_sam_auto_is_recorded_as_what_it_chose(tmp_path):
    """--sam auto stays "auto" in config.yaml; run.json and the model file say "on" for a
    Transformer on 24-step series and "off" beyond 64 steps; --sam off pins it."""
    import yaml

    from kairo.tsc import load_classifier

    def sam_of(out):
        assert yaml.safe_load((out / "config.yaml").read_text())["sam"] in ("auto", "off")
        meta = load_classifier(out / "model.pt")[1]
        assert meta["train_config"]["sam"] == meta["sam"]
        return json.loads((out / "run.json").read_text())["resolved"]["sam"]

    for dataset, extra, chosen in (("ItalyPowerDemand", [], "on"), ("GunPoint", [], "off"),
                                   ("ItalyPowerDemand", ["--sam", "off"], "off")):
        out = tmp_path / f"{dataset}{len(extra)}"
        assert main(["tsc", "train", "--dataset", dataset, *FAST, "--epochs", "1", *extra,
                     "--out", str(out)]) == 0
        assert sam_of(out) == chosen


def test_mixup_auto_is_recorded_as_what_it_chose(tmp_path):
    """--mixup auto stays "auto" in config.yaml; run.json and the model file say "on" for a
    Transformer on GunPoint's smooth outlines and "off" on Covid3Month_disc's rough counts,
    with the smoothness read from the training split; --mixup off pins it."""
    import yaml

    from kairo.tsc import load_classifier, load_dataset, smoothness

    for dataset, extra, chosen in (("GunPoint", [], "on"), ("Covid3Month_disc", [], "off"),
                                   ("GunPoint", ["--mixup", "off"], "off")):
        out = tmp_path / f"{dataset}{len(extra)}"
        assert main(["tsc", "train", "--dataset", dataset, *FAST, "--epochs", "1", *extra,
                     "--out", str(out)]) == 0
        assert yaml.safe_load((out / "config.yaml").read_text())["mixup"] == (
            "off" if extra else "auto")
        meta = load_classifier(out / "model.pt")[1]
        assert meta["train_config"]["mixup"] == meta["mixup"] == chosen
        resolved = json.loads((out / "run.json").read_text())["resolved"]
        assert resolved["mixup"] == chosen
        # --time-warp auto warps where mixup auto mixes
        assert resolved["time_warp"] == meta["time_warp"] == (0.2 if dataset == "GunPoint"
                                                              else 0.0)
        assert yaml.safe_load((out / "config.yaml").read_text())["time_warp"] == "auto"
        # --cutmix auto cuts where neither mixup nor SAM would act (84 rough steps, one length)
        assert resolved["cutmix"] == meta["cutmix"] == (
            "on" if dataset == "Covid3Month_disc" else "off")
        train = load_dataset(dataset)
        assert resolved["smoothness"] == pytest.approx(smoothness(train.x, train.mask))


def test_keras_style_resnet_from_the_cli(tmp_path):
    """head_norm false, weight_init glorot (set in a --config file: they are no flags of tsc
    train) reach the model file, and evaluate rebuilds it;
    with the defaults ("auto") config.yaml keeps "auto" and run.json records what it resolved
    to for the ResNet (Keras's head and initialisation), which the model was built with."""
    import yaml

    from kairo.tsc import load_classifier

    def check(out):
        model, meta = load_classifier(out / "model.pt")
        assert isinstance(model.head[0], torch.nn.Identity)
        resolved = json.loads((out / "run.json").read_text())["resolved"]
        assert (resolved["head_norm"], resolved["weight_init"]) == (False, "glorot")
        assert resolved["sam"] == "off"                   # the ResNet keeps plain AdamW
        return meta, yaml.safe_load((out / "config.yaml").read_text())

    out = tmp_path / "gp"
    keras = tmp_path / "keras.yaml"
    keras.write_text("head_norm: 'false'\nweight_init: glorot\n")
    with pytest.raises(SystemExit):
        main(["tsc", "train", "--head-norm", "false"])
    assert main(["tsc", "train", "--dataset", "GunPoint", "--encoder", "resnet", "--pool",
                 "mean", *FAST, "--epochs", "2", "--config", str(keras), "--out",
                 str(out)]) == 0
    meta, config = check(out)
    assert (meta["model_config"]["head_norm"], meta["model_config"]["weight_init"]) == \
        ("false", "glorot")
    assert (config["head_norm"], config["weight_init"]) == ("false", "glorot")
    assert main(["tsc", "evaluate", "--model", str(out / "model.pt"), "--dataset", "GunPoint",
                 "--out", str(tmp_path / "ev")]) == 0
    a = json.loads((out / "metrics.json").read_text())
    b = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert a["accuracy"] == b["accuracy"] and a["confusion"] == b["confusion"]
    # the defaults: "auto" stays in the config, the resolved values go to run.json
    auto = tmp_path / "auto"
    assert main(["tsc", "train", "--dataset", "GunPoint", "--encoder", "resnet", "--pool",
                 "mean", *FAST, "--epochs", "2", "--out", str(auto)]) == 0
    meta, config = check(auto)
    assert (config["head_norm"], config["weight_init"]) == ("auto", "auto")
    assert meta["model_config"]["head_norm"] == "auto"
    # the same resolved settings, the same seed: the same model
    c = json.loads((auto / "metrics.json").read_text())
    assert c["accuracy"] == a["accuracy"] and c["confusion"] == a["confusion"]


def test_maps_and_encodings_figures(trained, tmp_path, capsys):
    out = tmp_path / "maps"
    assert main(["tsc", "maps", "--model", str(trained / "model.pt"), "--dataset",
                 "ItalyPowerDemand", "--series", "0,3", "--out", str(out)]) == 0
    assert (out / "attention_0.png").is_file() and (out / "attention_3.png").is_file()
    # the pooling weights of every test series, a row per series and head, summarised
    table = pd.read_csv(out / "pooling.csv")
    assert len(table) == 1029 and sorted(table["series"]) == list(range(1029))  # one head
    assert table["effective_fraction"].between(1 / 24, 1 + 1e-9).all()
    assert table["peak_ratio"].between(1 - 1e-9, 24).all()
    assert "pooling weights over the 1029 test series: effective fraction" in \
        capsys.readouterr().out
    # series longer than at training: the rotary Transformer maps them too (a table of
    # positions would refuse them, as predict does: test_train.py)
    with open(tmp_path / "long.csv", "w") as f:
        f.write("\n".join(",".join(["1", *["0.5"] * 25]) for _ in range(3)) + "\n")
    assert main(["tsc", "maps", "--model", str(trained / "model.pt"), "--test-file",
                 str(tmp_path / "long.csv"), "--out", str(tmp_path / "long")]) == 0
    assert len(pd.read_csv(tmp_path / "long" / "pooling.csv")) == 3
    # --member names a member of an ensemble; this model is one model
    assert main(["tsc", "maps", "--model", str(trained / "model.pt"), "--member", "1",
                 "--out", str(tmp_path / "m1")]) == 2
    assert "is one model, not an ensemble" in capsys.readouterr().err
    assert not (tmp_path / "m1").exists()
    out = tmp_path / "enc"
    assert main(["tsc", "encodings", "--d", "32", "--positions", "64", "--out", str(out)]) == 0
    e = json.loads((out / "encodings.json").read_text())
    assert e["max_offset_rotation_error"] < 1e-5


def test_stem_dilation_auto_is_recorded_as_what_it_built(tmp_path):
    """--stem-dilation auto stays "auto" in config.yaml; run.json and the model file give the
    dilations built: ACSF1's windows of 23 steps dilate the stem (1, 2, 4) and add a second
    block on its output pooled over 8 steps, GunPoint's 3 do neither, and --stem-dilation off
    pins none (and one block)."""
    import yaml

    from kairo.tsc import load_classifier

    for dataset, extra, built, blocks, pool in (
            ("ACSF1", [], [1, 2, 4], 2, 8), ("GunPoint", [], [1, 1, 1], 3, 1),
            ("ACSF1", ["--stem-dilation", "off"], [1, 1, 1], 1, 1)):
        out = tmp_path / f"{dataset}{len(extra)}"
        assert main(["tsc", "train", "--dataset", dataset, *FAST, "--epochs", "1", *extra,
                     "--out", str(out)]) == 0
        assert yaml.safe_load((out / "config.yaml").read_text())["stem_dilation"] == (
            "off" if extra else "auto")
        model, meta = load_classifier(out / "model.pt")
        assert meta["stem_dilations"] == built
        assert [c.dilation[0] for c in model.encoder.stem.blocks[0].convs] == built
        resolved = json.loads((out / "run.json").read_text())["resolved"]
        assert (resolved["stem_dilations"], resolved["stem_blocks"], resolved["stem_pool"]) == (
            built, blocks, pool)
        assert (meta["stem_blocks"], meta["stem_pool"]) == (blocks, pool)
        assert (model.encoder.stem_pooled is not None) == (pool > 1)


def test_compare_pooling_and_benchmark_reuse(tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["tsc", "compare-pooling", "--datasets", "ItalyPowerDemand", "--encoders",
                 "resnet", "--pools", "mean,max,attention", "--seeds", "2", "--workers", "1",
                 "--epochs", "2", "--d-model", "8", "--blocks", "1", "--patience", "0",
                 "--val-fraction", "0.2", "--out", str(out)]) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 6 and set(runs["pool"]) == {"mean", "max", "attention"}
    assert runs.test_accuracy.between(0, 1).all()
    tests = pd.read_csv(out / "tests.csv")
    assert set(tests["pool"]) == {"max", "attention"} and (tests.pairs == 2).all()
    assert (tests.wins + tests.ties + tests.losses == 2).all()
    assert (out / "pooling.png").is_file()
    resolved = json.loads((out / "run.json").read_text())["resolved"]
    assert resolved["sam"] == {"ItalyPowerDemand": {"resnet": "off"}}
    assert resolved["mixup"] == {"ItalyPowerDemand": {"resnet": "off"}}
    assert resolved["cutmix"] == {"ItalyPowerDemand": {"resnet": "off"}}
    assert resolved["time_warp"] == {"ItalyPowerDemand": {"resnet": 0.0}}
    assert set(runs.time_warp) == {"auto"}
    assert resolved["smoothness"]["ItalyPowerDemand"] == pytest.approx(0.925, abs=1e-3)
    bench = tmp_path / "bench"
    # runs of other settings are not credited to this run's configuration
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--reuse",
                 str(out / "runs.csv"), "--no-refit", "--out", str(bench)]) == 2
    err = capsys.readouterr().err
    assert "its runs were trained with other settings than this run's (d_model: 8 there, 64 " \
           "here; blocks: 1 there, 2 here; epochs: 2 there, 0 here; patience: 0 there, 30 " \
           "here;" in err and f"--config {out / 'config.yaml'} sets them all" in err, err
    assert not bench.exists()
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--reuse",
                 str(out / "runs.csv"), "--no-refit", "--config",
                 str(out / "config.yaml"), "--peers", "", "--out", str(bench)]) == 0
    table = pd.read_csv(bench / "benchmark.csv")
    row = table.iloc[0]
    assert row.dataset == "ItalyPowerDemand" and row["pool"] in {"mean", "max", "attention"}
    assert 0.9 < row["HC2"] < 1                       # published, from the aeon wheel
    # chosen on validation accuracy, from the grid's own runs
    grid = runs.groupby("pool").agg(val=("val_accuracy", "mean"), test=("test_accuracy", "mean"))
    assert grid.val[row["pool"]] == grid.val.max()
    assert row.kairo == pytest.approx(grid.test[row["pool"]])
    assert not (bench / "refit_runs.csv").exists()

    # refit: the chosen configuration trained again on the whole training split, per seed
    refit = tmp_path / "refit"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--reuse",
                 str(out / "runs.csv"), "--seeds", "2", "--workers", "1", "--epochs", "2",
                 "--d-model", "8", "--blocks", "1", "--patience", "0", "--out", str(refit)]) == 0
    rr = pd.read_csv(refit / "refit_runs.csv")
    assert len(rr) == 2 and set(rr["pool"]) == {row["pool"]} and set(rr.seed) == {0, 1}
    assert rr.val_accuracy.isna().all() and (rr.epochs_run == 2).all()
    r2 = pd.read_csv(refit / "benchmark.csv").iloc[0]
    assert r2.kairo == pytest.approx(rr.test_accuracy.mean())
    assert r2["ResNet (Fawaz 2019)"] == pytest.approx(0.9615, abs=1e-4)
    assert r2["p vs ResNet"] == pytest.approx(resnet_test(rr.test_accuracy, "ItalyPowerDemand"))
    assert r2.selection_test == pytest.approx(row.kairo)

    # one configuration and refit: nothing to choose, so only the refit runs are trained
    # (here with augmentation and seeds from 3)
    one = tmp_path / "one"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "max", "--seeds", "1", "--seed", "3", "--workers", "1",
                 "--epochs", "2", "--d-model", "8", "--blocks", "1", "--time-warp", "0.2",
                 "--crop", "0.1", "--out", str(one)]) == 0
    assert not (one / "runs.csv").exists()
    assert set(pd.read_csv(one / "refit_runs.csv").seed) == {3}
    r3 = pd.read_csv(one / "benchmark.csv").iloc[0]
    assert r3["pool"] == "max" and r3.n == 1 and 0 <= r3.kairo <= 1
    # the peers (both by default) ran with kairo's seeds
    each = pd.read_csv(one / "per_seed.csv")
    assert set(zip(each.method, each.seed)) == {("kairo", 3), ("MiniRocket", 3),
                                                ("MultiRocket-Hydra", 3)}


def test_resnet_reference_runs_and_welch_test():
    from kairo.tsc._published import RESNET_FAWAZ2019, RESNET_FAWAZ2019_RUNS

    # the means of Fawaz et al.'s five runs are the figures the issue quotes
    quoted = {"OSULeaf": 0.980, "ACSF1": 0.916, "ArrowHead": 0.838, "GunPoint": 0.991}
    assert {ds: round(RESNET_FAWAZ2019[ds], 3) for ds in quoted} == quoted
    assert all(len(r) == 5 for r in RESNET_FAWAZ2019_RUNS.values())
    ref = np.array(RESNET_FAWAZ2019_RUNS["ArrowHead"])
    assert resnet_test(ref, "ArrowHead") == pytest.approx(1.0)
    # Welch's t and Welch-Satterthwaite degrees of freedom, by hand
    acc = np.array([0.85, 0.86, 0.87, 0.84])
    va, vb = acc.var(ddof=1) / 4, ref.var(ddof=1) / 5
    t = (acc.mean() - ref.mean()) / np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / 3 + vb ** 2 / 4)
    from scipy.stats import t as student
    assert resnet_test(acc, "ArrowHead") == pytest.approx(2 * student.sf(abs(t), dof))
    assert np.isnan(resnet_test(acc, "BasicMotions")) and np.isnan(resnet_test([0.9], "ACSF1"))
    assert np.isnan(resnet_test([0.9, np.nan], "ACSF1"))


def test_welch_p_with_a_side_without_spread():
    """Equal seeds on one side (93/100 twice) are an ordinary Welch test, computed without
    SciPy's warning on identical data; with no spread on either side no test is defined."""
    import warnings

    from scipy import stats

    from kairo.stats import welch_p

    a, b = [0.91, 0.92], [0.92, 0.92]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        want = stats.ttest_ind(a, b, equal_var=False).pvalue
    with warnings.catch_warnings():
        warnings.simplefilter("error")                  # no warning on this path
        assert welch_p(a, b) == pytest.approx(want) and welch_p(a, b) == pytest.approx(0.5)
        assert welch_p([0.9, 0.9], [0.9, 0.9]) == 1.0
        assert np.isnan(welch_p([0.9, 0.9], [0.8, 0.8]))
        assert not np.isnan(resnet_test([0.9, 0.9], "ACSF1"))      # ResNet's runs spread


def test_benchmark_default_covers_every_shipped_univariate_set():
    """The default of `kairo tsc benchmark` is every univariate set in the aeon wheel (from the
    .ts headers), with the variable-length one as its equal-length copy; each has a published
    figure."""
    from kairo.tsc._config import UNIVARIATE, BenchmarkConfig
    from kairo.tsc._data import _shipped
    from kairo.tsc import published_table

    def header(name):
        path = _shipped()[name][0]
        lines = [ln.strip().lower() for ln in path.read_text(errors="replace").splitlines()
                 if ln.startswith("@")]
        return "@univariate true" in lines, "@equallength false" not in lines  # tag optional

    univariate = {n for n in _shipped() if n != "UnitTest" and header(n)[0]}
    expected = {n for n in univariate if header(n)[1]}
    assert set(UNIVARIATE) == expected
    assert {"PickupGestureWiimoteZ_eq", "Covid3Month_disc", "ArrowHead"} <= expected
    assert BenchmarkConfig().datasets == UNIVARIATE
    t = published_table(UNIVARIATE)
    assert t[["ResNet (Fawaz 2019)", "WEASEL-2"]].notna().any(axis=1).all()


def test_dataset_names_are_case_insensitive_and_canonical_in_the_grid(tmp_path):
    """`--datasets arrowhead` keys the tables as ArrowHead, so its published row is found; the
    config keeps the name as typed."""
    import yaml

    from kairo.tsc._inputs import inputs
    from kairo.tsc._config import BenchmarkConfig, CompareConfig
    from kairo.tsc._grid import _jobs, canonical_datasets

    cfg = BenchmarkConfig(datasets=("arrowhead", "PICKUPGESTUREWIIMOTEZ_EQ"))
    assert cfg.datasets == ("arrowhead", "PICKUPGESTUREWIIMOTEZ_EQ")     # as the user typed
    assert canonical_datasets(cfg.datasets) == ("ArrowHead", "PickupGestureWiimoteZ_eq")
    cfg = CompareConfig(datasets=("gunpoint",), seeds=1)
    assert {j["dataset"] for j in _jobs(cfg, [("resnet", "mean")])} == {"GunPoint"}
    assert sorted(inputs(cfg)) == ["GunPoint_test", "GunPoint_train"]
    # a benchmark run keys its table and the published figures by the canonical name
    runs = tmp_path / "runs.csv"
    pd.DataFrame([{"dataset": "ArrowHead", "encoder": "resnet", "pool": "mean",
                   "time_warp": "auto", "seed": s, "test_accuracy": 0.8, "val_accuracy": 0.7}
                  for s in (0, 1)]).to_csv(runs, index=False)
    with pytest.warns(UserWarning, match="no config.yaml next to it"):
        assert main(["tsc", "benchmark", "--datasets", "arrowhead", "--encoders", "resnet",
                     "--pools", "mean", "--no-refit", "--reuse", str(runs), "--peers", "",
                     "--out", str(tmp_path / "b")]) == 0
    row = pd.read_csv(tmp_path / "b" / "benchmark.csv").iloc[0]
    assert row.dataset == "ArrowHead" and row.kairo == pytest.approx(0.8)
    assert row["ResNet (Fawaz 2019)"] == pytest.approx(0.838, abs=1e-3)
    assert yaml.safe_load((tmp_path / "b" / "config.yaml").read_text())["datasets"] == \
        ["arrowhead"]


def test_published_table_covers_the_variable_length_set():
    """PickupGestureWiimoteZ: Fawaz et al.'s five runs (36, 33, 35, 37, 35 of 50) and aeon's
    rows, which name the set's equal-length version; a set nobody published gets NaN."""
    from kairo.tsc import published_table
    from kairo.tsc._published import RESNET_FAWAZ2019

    assert RESNET_FAWAZ2019["PickupGestureWiimoteZ"] == pytest.approx(176 / 250)
    t = published_table(["PickupGestureWiimoteZ", "Covid3Month_disc", "BasicMotions"])
    # the bake-off's 142-set tables list these two sets, its 112-set tables do not
    assert t.loc["PickupGestureWiimoteZ", "WEASEL-2"] == pytest.approx(40 / 50)
    assert t.loc["Covid3Month_disc", "WEASEL-2"] == pytest.approx(41 / 61)
    assert np.isnan(t.loc["Covid3Month_disc", "ResNet (Fawaz 2019)"])
    assert t.loc["PickupGestureWiimoteZ", "HC2"] > 0.5
    assert np.isnan(t.loc["PickupGestureWiimoteZ", "InceptionTime"])
    # the equal-length copy is the data those figures were scored on: same row either way
    eq = published_table(["PickupGestureWiimoteZ_eq"]).iloc[0]
    pd.testing.assert_series_equal(eq, t.loc["PickupGestureWiimoteZ"], check_names=False)


def test_pooling_tests_known_values():
    from kairo.tsc._compare import pooling_tests

    rows = []
    for ds in ("a", "b"):
        for seed in range(4):
            rows.append({"dataset": ds, "seed": seed, "encoder": "resnet", "pool": "mean",
                         "test_accuracy": 0.5})
            rows.append({"dataset": ds, "seed": seed, "encoder": "resnet", "pool": "mha",
                         "test_accuracy": 0.5 + 0.01 * (seed + 1)})
    t = pooling_tests(pd.DataFrame(rows))
    r = t.iloc[0]
    assert (r.pool, r.pairs, r.wins, r.ties, r.losses) == ("mha", 8, 8, 0, 0)
    assert abs(r.mean_diff - 0.025) < 1e-12
    assert r.wilcoxon_p < 0.01                          # 8 of 8 positive differences


@pytest.mark.parametrize("argv, fragment", [
    (["tsc", "train", "--dataset", "NoSuchSet"], "available offline: ACSF1"),
    (["tsc", "train", "--d-model", "30", "--n-heads", "4"], "not divisible"),
    (["tsc", "train", "--n-heads", "4", "--n-kv-heads", "3"], "must divide"),
    (["tsc", "train", "--pool", "median"], "invalid choice: 'median'"),
    (["tsc", "encodings", "--d", "7"], "even"),
    (["tsc", "train", "--train-file", "x.npz"], "train_file needs test_file"),
    (["tsc", "compare-pooling", "--pools", "mean,median"], "pools: expected one of mean"),
    (["tsc", "benchmark", "--seed", "-1"], "seed must be ≥ 0, got -1"),
    (["tsc", "benchmark", "--seeds", "0"], "seeds must be ≥ 1, got 0"),
    (["tsc", "compare-pooling", "--workers", "-2"], "workers must be ≥ 0, got -2"),
    (["tsc", "benchmark", "--datasets", "ArrowHead,NoSuchSet"],
     "datasets: unknown 'NoSuchSet'; available offline: ACSF1"),
    (["tsc", "compare-pooling", "--datasets", "GunPoint,gunpoint"], "lists a value twice"),
    (["tsc", "train", "--crop", "1.0"], "crop must be < 1"),
    (["tsc", "train", "--time-warp", "strong"], "time_warp: expected auto or a number"),
    (["tsc", "benchmark", "--time-warp", "-0.2"], "time_warp must be auto or a number in [0, "),
    (["tsc", "train", "--znorm", "robust"], "invalid choice: 'robust'"),
    (["tsc", "benchmark", "--bn-stats", "precise"], "invalid choice: 'precise'"),
    (["tsc", "evaluate", "--model", "/no/such/model.pt"], "model.pt"),
    (["tsc", "compare-pooling", "--head-norm", "off"], "invalid choice: 'off'"),
    (["tsc", "train", "--bn-stats", "running"], "set bn_stats in a --config file"),
    (["tsc", "benchmark", "--weight-init", "keras"], "invalid choice: 'keras'"),
    (["tsc", "train", "--ensemble", "0"], "ensemble must be ≥ 1, got 0"),
    (["tsc", "train", "--ensemble", "2", "--executor", "cloud"], "invalid choice: 'cloud'"),
])
def test_bad_input_gets_a_clear_error(argv, fragment, tmp_path, capsys):
    try:
        rc = main([*argv, "--out", str(tmp_path / "o")])
    except SystemExit as exc:              # refused by argparse (a field's choices)
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert ("kairo: error:" in err or "kairo tsc" in err) and fragment in err, err
    assert not (tmp_path / "o").exists()


def test_bad_user_files(trained, tmp_path, capsys):
    x = np.random.default_rng(0).normal(size=(10, 1, 24)).astype(np.float32)
    x[3, 0, 5] = np.nan
    np.savez(tmp_path / "nan.npz", x=x, y=np.zeros(10, dtype=np.int64))
    np.savez(tmp_path / "long.npz", x=np.nan_to_num(np.concatenate([x, x], 2)),
             y=np.zeros(10, dtype=np.int64))
    np.savez(tmp_path / "labels.npz", x=np.nan_to_num(x), y=np.zeros(7, dtype=np.int64))
    (tmp_path / "corrupt.pt").write_bytes((trained / "model.pt").read_bytes()[:500])
    model = str(trained / "model.pt")
    cases = [
        (["tsc", "predict", "--model", model, "--input", str(tmp_path / "nan.npz"), "--output",
          str(tmp_path / "p.csv")], "NaN"),
        (["tsc", "train", "--train-file", str(tmp_path / "labels.npz"), "--test-file",
          str(tmp_path / "labels.npz"), "--out", str(tmp_path / "o")], "label"),
        (["tsc", "predict", "--model", str(tmp_path / "corrupt.pt"), "--input",
          str(tmp_path / "long.npz"), "--output", str(tmp_path / "p.csv")], "corrupt.pt"),
    ]
    for argv, fragment in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert fragment in err, (argv, err)
    assert not (tmp_path / "p.csv").exists() and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_a_failed_job_stops_the_other_workers_at_once(tmp_path):
    """run_grid with workers: when one job fails, the error comes back without waiting for
    the other, hours-long job, and no worker process is left behind."""
    import multiprocessing
    import time

    from kairo import ConfigError
    from kairo.tsc._grid import run_grid

    base = {"dataset": "ItalyPowerDemand", "mnist1d_length": 40, "threads": 1}
    long_job = {**base, "model": {"encoder": "resnet", "pool": "mean", "d_model": 8,
                                  "blocks": 1},
                "train": {"epochs": 1_000_000, "patience": 0, "threads": 1, "seed": 0,
                          "time_warp": "auto"}}
    bad_job = {**base, "model": {"encoder": "transformer", "pool": "mean", "d_model": 7,
                                 "n_heads": 2},
               "train": {"epochs": 1, "seed": 0, "time_warp": "auto"}}
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match="d_model"):
        run_grid([long_job, bad_job], tmp_path / "runs", workers=2)
    assert time.perf_counter() - t0 < 300                # the long job alone takes hours
    deadline = time.time() + 10
    while multiprocessing.active_children() and time.time() < deadline:
        time.sleep(0.1)
    assert multiprocessing.active_children() == []


def _write_csv(path, data, rows=None, steps=None):
    rows = range(len(data)) if rows is None else rows
    with open(path, "w") as f:
        for i in rows:
            vals = data.x[i, 0] if steps is None else data.x[i, 0, :steps]
            f.write(",".join([data.classes[data.y[i]], *map(repr, vals.tolist())]) + "\n")
    return path


@pytest.mark.slow
def test_own_files_of_different_lengths_and_class_subsets(tmp_path, capsys):
    """Your own train/test files: a test split longer than the training one is padded with
    --pad (a Transformer with a table of positions is refused before training without it;
    rotary positions and the ResNet take any length); a test file holding a subset of the classes is scored against the model's
    classes by train, evaluate and maps (it crashed, or mislabelled the figure)."""
    from kairo.tsc import load_dataset

    tr, te = load_dataset("ItalyPowerDemand", "train"), load_dataset("ItalyPowerDemand", "test")
    short = _write_csv(tmp_path / "short.csv", tr, steps=20)
    full = _write_csv(tmp_path / "full.csv", te, rows=range(60))
    tiny = ["--epochs", "1", "--d-model", "16", "--n-heads", "2", "--blocks", "1",
            "--threads", "1"]
    base = ["tsc", "train", "--train-file", str(short), "--test-file", str(full), *tiny]
    out = tmp_path / "tf"
    table = [*base, "--encoder", "transformer", "--positional", "sinusoidal"]
    assert main([*table, "--out", str(out)]) != 0
    err = capsys.readouterr().err
    assert "test series have 24 steps, the training series 20: sinusoidal positions" in err
    assert "--pad to" in err
    assert not out.exists() and not tmp_path.joinpath("tf.checkpoint.pt").exists()
    assert main([*table, "--pad", "--out", str(out)]) == 0
    assert main([*base, "--encoder", "transformer", "--out", str(tmp_path / "rope")]) == 0
    assert main([*base, "--encoder", "resnet", "--out", str(tmp_path / "rn")]) == 0
    # the ResNet also predicts on series longer than it was trained on
    assert main(["tsc", "predict", "--model", str(tmp_path / "rn" / "model.pt"), "--input",
                 str(full), "--labelled", "--output", str(tmp_path / "p.csv")]) == 0
    capsys.readouterr()
    # a test file with one of the two classes
    only = [i for i in range(len(te)) if te.classes[te.y[i]] == te.classes[1]][:30]
    one = _write_csv(tmp_path / "one.csv", te, rows=only)
    sub = tmp_path / "sub"
    assert main(["tsc", "train", "--train-file", str(_write_csv(tmp_path / "tr.csv", tr)),
                 "--test-file", str(one), "--encoder", "resnet", *tiny, "--out", str(sub)]) == 0
    m = json.loads((sub / "metrics.json").read_text())
    assert np.array(m["confusion"]).shape == (2, 2) and np.array(m["confusion"]).sum() == 30
    assert pd.read_csv(sub / "confusion.csv")["true"].tolist() == [f"true {c}"
                                                                   for c in tr.classes]
    ev = tmp_path / "ev"
    assert main(["tsc", "evaluate", "--model", str(sub / "model.pt"), "--test-file", str(one),
                 "--out", str(ev)]) == 0
    assert json.loads((ev / "metrics.json").read_text())["confusion"] == m["confusion"]
    # --split would label the file as a split of a dataset: refused
    assert main(["tsc", "evaluate", "--model", str(sub / "model.pt"), "--test-file", str(one),
                 "--split", "train", "--out", str(tmp_path / "ev2")]) != 0
    assert "leave split at test" in capsys.readouterr().err
    # maps names the predicted class among the model's classes, not the file's
    mp = tmp_path / "maps"
    assert main(["tsc", "maps", "--model", str(sub / "model.pt"), "--test-file", str(one),
                 "--series", "0,1,2,3,1", "--out", str(mp)]) == 0
    assert sorted(p.name for p in mp.glob("*.png")) == [f"attention_{i}.png" for i in range(4)]


def test_predict_and_output_folders_refuse_to_clobber(trained, tmp_path, capsys):
    model = str(trained / "model.pt")
    from kairo.tsc import load_dataset

    np.savetxt(tmp_path / "x.csv", load_dataset("ItalyPowerDemand", "test").x[:3, 0],
               delimiter=",")
    x = str(tmp_path / "x.csv")
    before = (tmp_path / "x.csv").read_text()
    (tmp_path / "old.csv").write_text("keep")
    (tmp_path / "afile").write_text("a file")
    for args, msg in [
            (["--output", x, "--overwrite"], "is the input file"),
            (["--output", str(tmp_path / "old.csv")], "already exists"),
            (["--output", str(tmp_path)], "is a folder")]:
        assert main(["tsc", "predict", "--model", model, "--input", x, *args]) != 0
        assert msg in capsys.readouterr().err
    assert (tmp_path / "x.csv").read_text() == before
    assert (tmp_path / "old.csv").read_text() == "keep"
    assert main(["tsc", "predict", "--model", model, "--input", x, "--output",
                 str(tmp_path / "old.csv"), "--overwrite"]) == 0
    assert (tmp_path / "old.csv").read_text().startswith("series,predicted")
    assert main(["tsc", "encodings", "--out", str(tmp_path / "afile" / "enc")]) != 0
    assert f"{tmp_path / 'afile'} is a file, not a folder" in capsys.readouterr().err
    # tiny position counts: the offsets that fit are checked, none fails
    for n in (2, 4):
        assert main(["tsc", "encodings", "--positions", str(n), "--out",
                     str(tmp_path / f"enc{n}")]) == 0
    assert main(["tsc", "encodings", "--positions", "1", "--out", str(tmp_path / "e1")]) != 0
    assert "positions must be ≥ 2" in capsys.readouterr().err


def test_run_records_name_the_files_each_command_reads(tmp_path):
    from kairo.tsc import _commands as tc
    from kairo.tsc import _inputs as ti
    from kairo.tsc import _config as tm

    for name in ("m.pt", "tr.csv", "te.csv"):
        (tmp_path / name).write_text("x")
    m, tr, te = (str(tmp_path / n) for n in ("m.pt", "tr.csv", "te.csv"))
    cases = [
        (tc.TscTrainConfig(dataset="GunPoint"), ["GunPoint_test", "GunPoint_train"]),
        (tc.TscTrainConfig(train_file=tr, test_file=te), ["test_file", "train_file"]),
        (tc.EvaluateConfig(model=m, test_file=te), ["model", "test_file"]),   # not GunPoint
        (tc.EvaluateConfig(model=m, dataset="ArrowHead", split="train"),
         ["ArrowHead_train", "model"]),
        (tc.MapsConfig(model=m, dataset="GunPoint"), ["GunPoint_test", "model"]),
        (tc.MapsConfig(model=m, test_file=te), ["model", "test_file"]),
        (tm.CompareConfig(datasets=("GunPoint", "MNIST1D")), ["GunPoint_test", "GunPoint_train"]),
    ]
    for cfg, want in cases:
        assert sorted(ti.inputs(cfg)) == want, cfg


def test_every_tsc_flag_has_help():
    import dataclasses

    from kairo._app import commands

    for name, cmd in commands().items():
        if name.startswith("tsc "):
            bare = [f.name for f in dataclasses.fields(cmd.config) if not f.metadata.get("help")]
            assert bare == [], f"{name}: no --help text for {bare}"


def test_one_class_and_npy_training_files_get_clear_errors(tmp_path, capsys):
    (tmp_path / "one.csv").write_text("a,1,2,3\na,2,3,4\na,3,4,5\n")
    np.save(tmp_path / "x.npy", np.zeros((3, 5)))
    for train, msg in [("one.csv", "one.csv: the training series hold one class ('a')"),
                       ("x.npy", "a .npy file holds one array (the series), so use an .npz")]:
        assert main(["tsc", "train", "--train-file", str(tmp_path / train), "--test-file",
                     str(tmp_path / train), "--epochs", "1", "--out", str(tmp_path / "r")]) != 0
        assert msg in capsys.readouterr().err
        assert not (tmp_path / "r").exists()


def test_a_train_run_that_fails_after_training_names_the_kept_checkpoint(tmp_path, capsys,
                                                                         monkeypatch, caplog):
    """The checkpoint next to --out survives a failed run on purpose (the rerun resumes); the
    user is told where it is. A run refused before training does not repeat it."""
    from kairo import KairoError
    from kairo.tsc import _inference

    out = tmp_path / "run"
    args = ["tsc", "train", "--dataset", "ItalyPowerDemand", "--encoder", "resnet", "--pool",
            "mean", *FAST, "--out", str(out)]
    real = _inference.evaluate

    def broken(*a, **k):
        raise KairoError("scoring failed")

    monkeypatch.setattr(_inference, "evaluate", broken)
    assert main(args) != 0
    err = capsys.readouterr().err
    ckpt = tmp_path / "run.checkpoint.pt"
    assert ckpt.is_file() and not out.exists()
    assert f"its checkpoint {ckpt} is kept: the same command resumes from it" in caplog.text
    monkeypatch.setattr(_inference, "evaluate", real)
    # another run's settings: refused before training, with the error's own advice only
    caplog.clear()
    assert main([*args, "--seed", "1"]) != 0
    err = capsys.readouterr().err
    assert "other settings" in err and "is kept" not in caplog.text
    with caplog.at_level("INFO", logger="kairo.tsc._train"):
        assert main(args) == 0
    assert "resumed from" in caplog.text and not ckpt.exists()


def test_evaluate_and_maps_score_the_models_own_set_by_default(trained, tmp_path, capsys,
                                                               recwarn):
    """Without --dataset, evaluate and maps score the set the model was trained on (they
    defaulted to GunPoint for every model); naming another set warns; a model trained on the
    user's files names no set, so it needs --test-file."""
    import yaml

    from kairo.tsc import _commands as tc
    from kairo.tsc import _inputs as ti
    from kairo.tsc import load_dataset

    m = str(trained / "model.pt")                                  # ItalyPowerDemand
    recwarn.clear()
    assert main(["tsc", "evaluate", "--model", m, "--out", str(tmp_path / "ev")]) == 0
    # the config keeps "" (a rerun resolves it again); run.json records the set scored
    assert yaml.safe_load((tmp_path / "ev" / "config.yaml").read_text())["dataset"] == ""
    assert json.loads((tmp_path / "ev" / "run.json").read_text())["resolved"]["dataset"] == \
        "ItalyPowerDemand"
    assert json.loads((tmp_path / "ev" / "metrics.json").read_text()) == \
        json.loads((trained / "metrics.json").read_text())
    assert "ItalyPowerDemand_test" in json.loads((tmp_path / "ev" / "run.json").read_text())[
        "data"]
    assert main(["tsc", "maps", "--model", m, "--series", "2", "--out",
                 str(tmp_path / "mp")]) == 0
    assert [str(w.message) for w in recwarn] == []             # evaluate and maps: no warning
    assert (tmp_path / "mp" / "attention_2.png").is_file()
    assert "ItalyPowerDemand_test" in json.loads((tmp_path / "mp" / "run.json").read_text())[
        "data"]
    with pytest.warns(UserWarning, match="the model was trained on ItalyPowerDemand; "
                      "scoring it on GunPoint"):
        assert main(["tsc", "evaluate", "--model", m, "--dataset", "gunpoint", "--out",
                     str(tmp_path / "gp")]) == 0      # 150 steps: rotary positions read them
    # a model of the user's files: no set to fall back on
    tr = _write_csv(tmp_path / "tr.csv", load_dataset("ItalyPowerDemand", "train"))
    own = tmp_path / "own"
    assert main(["tsc", "train", "--train-file", str(tr), "--test-file", str(tr), "--encoder",
                 "resnet", *FAST, "--out", str(own)]) == 0
    capsys.readouterr()
    assert main(["tsc", "evaluate", "--model", str(own / "model.pt"), "--out",
                 str(tmp_path / "ev2")]) != 0
    assert f"was trained on {tr}, not a shipped set: give --test-file" in capsys.readouterr().err
    cfg = ti.model_dataset(tc.EvaluateConfig(model=str(own / "model.pt"), test_file=str(tr)))
    assert cfg.dataset == ""                                      # the file is scored


def test_an_mnist1d_model_is_scored_at_its_own_length(tmp_path):
    from kairo.tsc import ModelConfig, build_classifier, save_classifier
    from kairo.tsc import _commands as tc
    from kairo.tsc import _inputs as ti

    mcfg = ModelConfig(encoder="resnet", d_model=8, blocks=1, pool="mean")
    save_classifier(tmp_path / "m.pt", build_classifier(mcfg, 1, 10, 60), mcfg,
                    {"dataset": "MNIST1D", "classes": [str(i) for i in range(10)],
                     "n_steps": 60})
    cfg = ti.model_dataset(tc.EvaluateConfig(model=str(tmp_path / "m.pt")))
    assert (cfg.dataset, cfg.mnist1d_length) == ("MNIST1D", 60)
    cfg = ti.model_dataset(tc.MapsConfig(model=str(tmp_path / "m.pt"), mnist1d_length=80))
    assert (cfg.dataset, cfg.mnist1d_length) == ("MNIST1D", 80)      # the user's choice stays


# ---------------------------------------------------------------------------- ensembles
# channel scaling: each member's own hold-out gives it other channel statistics than
# member 0's, with which the ensemble scales its input; attention pooling: maps has weights
# to write down
ENSEMBLE = ["tsc", "train", "--dataset", "ItalyPowerDemand", "--encoder", "resnet", "--pool",
            "attention", "--znorm", "channel", *SMALL, "--workers", "1"]   # the default: 2


def test_an_ensemble_trains_into_one_model_that_evaluate_and_predict_use(tmp_path, capsys):
    import dataclasses

    from kairo.cli import load_config_file, make_config
    from kairo.tsc import TSEnsemble, fit, load_classifier, load_dataset, predict
    from kairo.tsc._config import split_config

    out = tmp_path / "ens"
    assert main([*ENSEMBLE, "--out", str(out)]) == 0
    assert "ensemble of 2 (seeds 0…1)" in capsys.readouterr().out
    assert not (tmp_path / "ens.checkpoint.pt").exists()
    assert not (tmp_path / "ens.checkpoint-member1.pt").exists()
    # every member's seed and test accuracy beside the ensemble's
    metrics = json.loads((out / "metrics.json").read_text())
    assert [m["seed"] for m in metrics["members"]] == [0, 1]
    assert all(0 <= m["test_accuracy"] <= 1 for m in metrics["members"])
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["ensemble"] == 2 and run["resolved"]["seeds"] == [0, 1]
    assert run["resolved"]["sam"] == "off"
    assert run["resolved"]["mixup"] == "off"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ensemble"] == 2 and summary["test_accuracy"] == metrics["accuracy"]
    hist = pd.read_csv(out / "history.csv")
    assert list(hist.columns[:2]) == ["member", "seed"] and len(hist) == 8
    # one model.pt: the ensemble, whose member 1 is the one-model run of seed 1
    model, meta = load_classifier(out / "model.pt")
    assert isinstance(model, TSEnsemble) and model.n_members == 2
    train = load_dataset("ItalyPowerDemand")
    cfg = make_config("tsc train", load_config_file(out / "config.yaml"))
    mcfg, tcfg = split_config(dataclasses.replace(cfg, seed=1))
    alone = fit(mcfg, tcfg, train, progress_bar=False)["model"]
    assert all(torch.equal(v, model.members[1].state_dict()[k])
               for k, v in alone.state_dict().items())
    # evaluate reproduces the training run's score
    assert main(["tsc", "evaluate", "--model", str(out / "model.pt"), "--out",
                 str(tmp_path / "ev")]) == 0
    ev = json.loads((tmp_path / "ev" / "metrics.json").read_text())
    assert ev["accuracy"] == metrics["accuracy"] and ev["confusion"] == metrics["confusion"]
    # predict writes the members' mean probabilities
    test = load_dataset("ItalyPowerDemand", "test")
    np.savez(tmp_path / "x.npz", x=test.x[:20])
    assert main(["tsc", "predict", "--model", str(out / "model.pt"), "--input",
                 str(tmp_path / "x.npz"), "--output", str(tmp_path / "p.csv")]) == 0
    df = pd.read_csv(tmp_path / "p.csv", dtype={"predicted": str})
    pred, proba = predict(model, test.x[:20])
    assert list(df.predicted) == [test.classes[i] for i in pred]
    members = [predict(m, test.x[:20])[1] for m in model.members]    # each its own scaling
    np.testing.assert_allclose(df.filter(like="p_").to_numpy(), np.mean(members, 0),
                               atol=1e-5)
    # maps draws one member's attention, on the input as that member sees it: its
    # predictions are the member's own
    assert main(["tsc", "maps", "--model", str(out / "model.pt"), "--member", "1",
                 "--out", str(tmp_path / "mp")]) == 0
    assert "(member 1 of the ensemble of 2)" in capsys.readouterr().out
    table = pd.read_csv(tmp_path / "mp" / "pooling.csv", dtype={"predicted": str})
    test = load_dataset("ItalyPowerDemand", "test")
    own = predict(model.members[1], test.x)[0]
    assert list(table.predicted) == [test.classes[i] for i in own]
    assert main(["tsc", "maps", "--model", str(out / "model.pt"), "--member", "2",
                 "--out", str(tmp_path / "mp2")]) == 2
    assert "is an ensemble of 2 models, members 0…1" in capsys.readouterr().err
    assert not (tmp_path / "mp2").exists()


def test_a_failed_ensemble_keeps_every_members_checkpoint_and_resumes(tmp_path, capsys,
                                                                      monkeypatch, caplog):
    """Member 0 checkpoints where a one-model run does, member i beside it; a run that fails
    after training names them, and the rerun resumes every member, then deletes them."""
    from kairo import KairoError
    from kairo.tsc import _inference

    out = tmp_path / "run"
    args = [*ENSEMBLE, "--out", str(out)]
    real = _inference.evaluate

    def broken(*a, **k):
        raise KairoError("scoring failed")

    monkeypatch.setattr(_inference, "evaluate", broken)
    assert main(args) != 0
    kept = [tmp_path / "run.checkpoint.pt", tmp_path / "run.checkpoint-member1.pt"]
    assert all(p.is_file() for p in kept) and not out.exists()
    assert f"its checkpoint {kept[0]} is kept" in caplog.text
    assert f"checkpoints {kept[1]} are kept too" in caplog.text
    monkeypatch.setattr(_inference, "evaluate", real)
    caplog.clear()
    with caplog.at_level("INFO", logger="kairo.tsc._train"):
        assert main(args) == 0
    assert caplog.text.count("resumed from") == 2
    assert not any(p.exists() for p in kept)
