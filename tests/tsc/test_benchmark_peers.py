"""``kairo tsc benchmark`` beside what a user would otherwise run: aeon's MiniRocket and
MultiRocket-Hydra on the same splits and seeds, the ConvTran anchors of the multivariate sets,
the paired test against an earlier run (``--reference``), and no selection runs when there is
one candidate."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from kairo import ConfigError, DataError
from kairo.tsc import load_dataset
from kairo.tsc._config import BenchmarkConfig
from kairo.tsc._peers import fit_peer, peer_input, peer_scaling
from kairo.tsc._reference import MIN_WILCOXON_PAIRS, read_reference, reference_test
from kairo.cli import main

TINY = ["--epochs", "1", "--d-model", "8", "--blocks", "1", "--workers", "1", "--threads", "1"]


# ---------------------------------------------------------------------------- peers
def test_minirocket_fits_a_small_set_and_records_its_fit_time():
    train, test = load_dataset("ItalyPowerDemand", "train"), load_dataset("ItalyPowerDemand",
                                                                          "test")
    a = fit_peer("minirocket", train, test, seed=0)
    # MiniRocket's published ItalyPowerDemand accuracy is about 0.96; a broken input (labels
    # shuffled, series cut) would score near 0.5
    assert 0.93 < a["accuracy"] <= 1 and a["scaling"] == "series"
    assert 0 < a["fit_seconds"] < 60
    assert a["accuracy"] * len(test) == pytest.approx(round(a["accuracy"] * len(test)))
    assert fit_peer("minirocket", train, test, seed=0)["accuracy"] == a["accuracy"]  # seeded


def test_peers_get_equal_length_series_scaled_as_kairo_scales_them():
    assert peer_input("GunPoint") == "GunPoint"
    assert peer_input("JapaneseVowels") == "JapaneseVowels_eq"
    assert peer_input("PickupGestureWiimoteZ") == "PickupGestureWiimoteZ_eq"
    padded = load_dataset("JapaneseVowels", "train")
    with pytest.raises(DataError, match="equal-length series only"):
        fit_peer("minirocket", padded, load_dataset("JapaneseVowels", "test"), seed=0)
    # univariate: each series z-normalized (Covid3Month_disc is not, in the archive)
    tr, te = load_dataset("Covid3Month_disc", "train"), load_dataset("Covid3Month_disc", "test")
    xtr, xte, mode = peer_scaling(tr, te)
    assert mode == "series" and xtr.dtype == np.float64
    assert np.allclose(xtr.mean(axis=2), 0, atol=1e-5)
    assert np.allclose(xte.std(axis=2)[te.x.std(axis=2) > 0], 1, atol=1e-4)
    # multivariate: each channel with the training split's statistics, the test split alike
    tr, te = load_dataset("BasicMotions", "train"), load_dataset("BasicMotions", "test")
    xtr, xte, mode = peer_scaling(tr, te)
    assert mode == "channel"
    assert np.allclose(xtr.mean(axis=(0, 2)), 0, atol=1e-5)
    assert np.allclose(xtr.std(axis=(0, 2)), 1, atol=1e-4)
    mean, sd = tr.x.astype(float).mean(axis=(0, 2)), tr.x.astype(float).std(axis=(0, 2))
    assert np.allclose(xte, (te.x - mean[:, None]) / sd[:, None], atol=1e-4)
    assert peer_scaling(tr, te, "none")[0] == pytest.approx(tr.x)


def test_an_unknown_or_repeated_peer_is_refused(tmp_path, capsys):
    with pytest.raises(ConfigError, match="peers: expected one of minirocket, "
                                          "multirocket-hydra; got 'rocket'"):
        BenchmarkConfig(peers=("minirocket", "rocket"))
    with pytest.raises(ConfigError, match="peers lists a classifier twice"):
        BenchmarkConfig(peers=("minirocket", "minirocket"))
    assert BenchmarkConfig().peers == ("minirocket", "multirocket-hydra")
    try:
        rc = main(["tsc", "benchmark", "--peers", "rocket", "--out", str(tmp_path / "o")])
    except SystemExit as exc:              # a field's choices: argparse's own error
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert "rocket" in err and "minirocket" in err and "multirocket-hydra" in err, err
    assert not (tmp_path / "o").exists()


def test_multivariate_sets_with_peers_and_convtran(tmp_path, capsys):
    """The Transformer on the two multivariate sets: MiniRocket beside it on the same seeds
    (JapaneseVowels as its equal-length copy, said in the table), ConvTran's figures."""
    out = tmp_path / "mv"
    assert main(["tsc", "benchmark", "--datasets", "japanesevowels,BasicMotions", "--encoders",
                 "transformer", "--pools", "mean", "--n-heads", "2", "--seeds", "2",
                 "--peers", "minirocket", *TINY, "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    table = pd.read_csv(out / "benchmark.csv").set_index("dataset")
    assert list(table.index) == ["JapaneseVowels", "BasicMotions"]
    assert table["ConvTran (Foumani 2024)"].to_dict() == {"JapaneseVowels": 0.989,
                                                          "BasicMotions": 1.0}
    assert table.peer_input.to_dict() == {"JapaneseVowels": "JapaneseVowels_eq",
                                          "BasicMotions": "BasicMotions"}
    each = pd.read_csv(out / "per_seed.csv")
    assert list(each.columns[:5]) == ["dataset", "method", "seed", "accuracy", "fit_seconds"]
    assert sorted(set(zip(each.method, each.seed))) == [("MiniRocket", 0), ("MiniRocket", 1),
                                                        ("kairo", 0), ("kairo", 1)]
    assert (each.fit_seconds > 0).all() and each.accuracy.between(0, 1).all()
    assert set(each.scaling) == {"channel"}                    # auto, for several channels
    resolved = json.loads((out / "run.json").read_text())["resolved"]     # the stem, per set
    for key, value in (("stem_blocks", 3), ("stem_dilations", [1, 1, 1]), ("stem_pool", 1)):
        assert resolved[key] == {"JapaneseVowels": value, "BasicMotions": value}
    mr = each[each.method == "MiniRocket"].groupby("dataset")
    assert table.MiniRocket.to_dict() == pytest.approx(mr.accuracy.mean().to_dict())
    assert table.MiniRocket_fit_seconds.to_dict() == pytest.approx(
        mr.fit_seconds.mean().to_dict())
    assert table.MiniRocket.min() > 0.9                        # aeon publishes ~0.98 and 1.0
    km = each[each.method == "kairo"].groupby("dataset")
    assert table.kairo.to_dict() == pytest.approx(km.accuracy.mean().to_dict())
    assert table.kairo_fit_seconds.to_dict() == pytest.approx(km.fit_seconds.mean().to_dict())
    assert (table.seeds == "0–1").all() and "MultiRocket-Hydra" not in table
    md = (out / "table.md").read_text()
    assert md.splitlines()[0].startswith("| dataset | kairo (mean ± sd) | seeds | fit s | "
                                         "MiniRocket | fit s | ResNet (Fawaz 2019) | "
                                         "InceptionTime | HC2 | ConvTran (Foumani 2024) |")
    assert "| BasicMotions |" in md and "| 0.989 |" in md
    assert "given the archive's equal-length copy JapaneseVowels_eq" in md
    assert md.split("\n- ")[0] in shown                        # the summary shows the table
    assert not (out / "runs.csv").exists()                     # one candidate


def test_empty_peers_run_none(tmp_path):
    out = tmp_path / "none"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean", "--seeds", "1", "--peers", "", *TINY,
                 "--out", str(out)]) == 0
    assert set(pd.read_csv(out / "per_seed.csv").method) == {"kairo"}
    table = pd.read_csv(out / "benchmark.csv")
    assert not {"MiniRocket", "MultiRocket-Hydra", "peer_input"} & set(table.columns)
    assert "MiniRocket" not in (out / "table.md").read_text()


# ---------------------------------------------------------------------------- anchors
def test_convtran_anchors_only_for_the_multivariate_sets():
    from kairo.tsc import published_table

    t = published_table(["JapaneseVowels", "BasicMotions", "JapaneseVowels_eq", "GunPoint"])
    c = t["ConvTran (Foumani 2024)"]
    assert (c["JapaneseVowels"], c["BasicMotions"]) == (0.989, 1.0)
    # ConvTran padded JapaneseVowels' series; the resampled copy is other data
    assert c[["JapaneseVowels_eq", "GunPoint"]].isna().all()
    assert t.loc["GunPoint", "HC2"] == pytest.approx(1.0)


# ---------------------------------------------------------------------------- reference
def test_reference_test_known_values():
    # three pairs: +0.1, 0, −0.05 → one win, one tie, one loss; the sign test
    r = reference_test({0: 0.9, 1: 0.8, 2: 0.7}, {0: 0.8, 1: 0.8, 2: 0.75, 5: 0.1})
    assert (r["pairs_vs_reference"], r["wins_vs_reference"], r["ties_vs_reference"],
            r["losses_vs_reference"]) == (3, 1, 1, 1)
    assert r["vs reference"] == pytest.approx(0.05 / 3)
    assert r["reference"] == pytest.approx((0.8 + 0.8 + 0.75) / 3)
    assert (r["test_vs_reference"], r["p vs reference"]) == ("sign", 1.0)
    assert r["note_vs_reference"] == ""
    # five wins of five: below MIN_WILCOXON_PAIRS, the exact sign test, 2 / 2^5
    r = reference_test({s: 0.9 for s in range(5)}, {s: 0.8 for s in range(5)})
    assert r["test_vs_reference"] == "sign" and r["p vs reference"] == pytest.approx(0.0625)
    # as many pairs, all tied: no difference, p 1
    r = reference_test({s: 0.9 for s in range(8)}, {s: 0.9 for s in range(8)})
    assert (r["ties_vs_reference"], r["p vs reference"]) == (8, 1.0)
    # nothing to pair: empty, with the reason
    r = reference_test({0: 0.9, 1: 0.8}, {7: 0.9, 8: 0.9, 9: 0.9})
    assert r["pairs_vs_reference"] == 0 and np.isnan(r["p vs reference"])
    assert r["note_vs_reference"] == "no seed in common (this run: 0–1; the reference: 7–9)"
    r = reference_test({0: 0.9}, None, "GunPoint")
    assert r["note_vs_reference"] == "the reference has no runs of GunPoint"


def _write(path, rows):
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_benchmark_pairs_its_seeds_with_the_reference(tmp_path, capsys):
    """With --reuse and --no-refit kairo's accuracies are the table's, so the paired figures
    are known: six pairs (Wilcoxon), a seed the reference lacks, a set it lacks."""
    ours = [0.95, 0.96, 0.94, 0.97, 0.95, 0.93, 0.96]          # seeds 0-6
    theirs = [0.94, 0.96, 0.95, 0.95, 0.93, 0.92]              # seeds 0-5
    runs = _write(tmp_path / "runs.csv", [
        {"dataset": ds, "encoder": "resnet", "pool": "mean", "time_warp": "auto", "seed": s,
         "test_accuracy": a, "val_accuracy": 0.9}
        for ds in ("ItalyPowerDemand", "GunPoint") for s, a in enumerate(ours)])
    ref = _write(tmp_path / "refit_runs.csv",
                 [{"dataset": "ItalyPowerDemand", "encoder": "resnet", "pool": "mean",
                   "seed": s, "test_accuracy": a} for s, a in enumerate(theirs)] +
                 [{"dataset": "ItalyPowerDemand", "encoder": "resnet", "pool": "mean",
                   "seed": 9, "test_accuracy": 0.5}])
    out = tmp_path / "paired"
    with pytest.warns(UserWarning, match="no config.yaml next to it"):
        assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand,GunPoint",
                     "--encoders", "resnet", "--pools", "mean", "--no-refit", "--reuse",
                     str(runs), "--reference", str(ref), "--peers", "",
                     "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    t = pd.read_csv(out / "benchmark.csv").set_index("dataset")
    ipd = t.loc["ItalyPowerDemand"]
    d = np.array([1, 0, -1, 2, 2, 1]) / 100                    # by hand, seeds 0-5
    assert len(d) >= MIN_WILCOXON_PAIRS
    assert ipd.pairs_vs_reference == 6 and ipd["vs reference"] == pytest.approx(d.mean())
    assert (ipd.wins_vs_reference, ipd.ties_vs_reference, ipd.losses_vs_reference) == (4, 1, 1)
    assert ipd.test_vs_reference == "wilcoxon"
    assert ipd["p vs reference"] == pytest.approx(
        stats.wilcoxon(d, zero_method="zsplit").pvalue)
    assert ipd.reference == pytest.approx(np.mean(theirs))
    assert ipd.note_vs_reference == "seed 6 not in the reference"
    assert ipd.kairo == pytest.approx(np.mean(ours))
    gp = t.loc["GunPoint"]
    assert gp.pairs_vs_reference == 0 and np.isnan(gp["p vs reference"])
    assert gp.note_vs_reference == "the reference has no runs of GunPoint"
    assert gp["p vs ResNet"] == pytest.approx(
        stats.ttest_ind(ours, [149 / 150, 149 / 150, 147 / 150, 148 / 150, 1.0],
                        equal_var=False).pvalue)                # Welch against Fawaz's runs
    md = (out / "table.md").read_text()
    assert "| +0.008 | 4/1/1 |" in md and "(wilcoxon) |" in md
    assert "GunPoint vs reference: the reference has no runs of GunPoint" in md
    assert "GunPoint vs reference: the reference has no runs of GunPoint" in shown
    import json

    assert "reference" in json.loads((out / "run.json").read_text())["data"]   # its SHA-256


@pytest.mark.parametrize("content, fragment", [
    (None, "no such file"),
    ("dataset,seed,accuracy\nGunPoint,0,0.9\n", "lacks the column test_accuracy"),
    ("dataset\nGunPoint\n", "lacks the columns seed, test_accuracy"),
    ("", "cannot read it as a CSV table"),
    ("dataset,seed,test_accuracy\nGunPoint,0,0.9\nGunPoint,0,0.8\n",
     "lists GunPoint seed 0 twice"),
    ("dataset,seed,test_accuracy\nGunPoint,zero,0.9\n", "row 2 has seed 'zero'"),
])
def test_a_bad_reference_is_refused_naming_the_file(content, fragment, tmp_path, capsys):
    path = tmp_path / "ref.csv"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as info:
        read_reference(path)
    assert str(path) in str(info.value) and fragment in str(info.value), info.value
    # through the command line: refused before anything trains, no results folder
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--reference",
                 str(path), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert fragment in err and str(path) in err, err
    assert not (tmp_path / "o").exists()


# ---------------------------------------------------------------------------- selection
def _count_grids(monkeypatch) -> list:
    from kairo.tsc import _benchmark, _selection

    # the benchmark runs the refit's grid, _select the selection's
    calls, real = [], _benchmark.run_grid

    def counting(jobs, *args, **kwargs):
        calls.append(["fold" if "fold" in j else
                      f"val {j['train']['val_fraction']:g}" for j in jobs])
        return real(jobs, *args, **kwargs)

    monkeypatch.setattr(_benchmark, "run_grid", counting)
    monkeypatch.setattr(_selection, "run_grid", counting)
    return calls


def test_one_candidate_trains_no_selection_runs(tmp_path, monkeypatch):
    calls = _count_grids(monkeypatch)
    out = tmp_path / "one"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
                 "--pools", "mean", "--select", "cv", "--seeds", "2", "--peers", "minirocket",
                 *TINY, "--out", str(out)]) == 0
    # the refit (no hold-out): no CV folds, no hold-out grid (the peers run beside it)
    assert calls == [["val 0"] * 2]
    assert (pd.read_csv(out / "per_seed.csv").method == "MiniRocket").sum() == 2
    for name in ("runs.csv", "cv_runs.csv", "selection.csv"):
        assert not (out / name).exists(), name
    assert len(pd.read_csv(out / "refit_runs.csv")) == 2


def test_several_candidates_keep_the_selection_runs(tmp_path, monkeypatch, capsys):
    calls = _count_grids(monkeypatch)
    out = tmp_path / "two"
    args = ["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders", "resnet",
            "--pools", "mean,max", "--seeds", "2", "--peers", "", *TINY, "--out", str(out)]
    # no hold-out to choose on: refused before anything trains
    assert main([*args, "--val-fraction", "0"]) == 2
    assert "val_fraction: --select holdout chooses among 2 candidates" in capsys.readouterr().err
    assert calls == [] and not out.exists()
    assert main(args) == 0
    # 2 candidates × 2 seeds on the 20 % hold-out, then the chosen one refit per seed
    assert calls == [["val 0.2"] * 4, ["val 0"] * 2]
    assert len(pd.read_csv(out / "runs.csv")) == 4


# ---------------------------------------------------------------------------- ensembles
def test_benchmark_ensembles_are_those_tsc_train_ensemble_trains(tmp_path, capsys):
    """--ensemble 2 with --seeds 2: ensembles of seeds 0, 1 and 2, 3, each scored as the
    TSEnsemble that fit_ensemble builds from the same members scores, with every member kept
    in member_runs.csv."""
    from kairo import KairoError
    from kairo.tsc import ModelConfig, TrainConfig, evaluate, fit_ensemble
    from kairo.tsc._grid import ensemble_runs, read_member_runs

    out = tmp_path / "ens"
    assert main(["tsc", "benchmark", "--datasets", "ItalyPowerDemand", "--encoders",
                 "transformer", "--pools", "mean", "--ensemble", "2", "--seeds", "2",
                 "--peers", "", "--steps", "20", "--d-model", "8",
                 "--blocks", "1", "--stem-blocks", "1", "--workers", "1",
                 "--out", str(out)]) == 0
    shown = capsys.readouterr().out
    runs = pd.read_csv(out / "refit_runs.csv")
    members = pd.read_csv(out / "member_runs.csv")
    assert list(runs.seed) == [0, 2] and list(runs.members) == ["0 1", "2 3"]
    assert list(members.seed) == [0, 1, 2, 3] and list(members.ensemble_seed) == [0, 0, 2, 2]
    assert runs.fit_seconds[0] == pytest.approx(members.fit_seconds[:2].sum())
    train, test = (load_dataset("ItalyPowerDemand", s) for s in ("train", "test"))
    m = ModelConfig(d_model=8, blocks=1, stem_blocks=1)
    t = TrainConfig(steps=20, seed=2, threads=1)
    res = fit_ensemble(m, t, train, 2, workers=1, executor="serial", progress_bar=False)
    rep = evaluate(res["model"], test)
    assert runs.test_accuracy[1] == pytest.approx(rep["accuracy"], abs=1e-12)
    assert runs.test_macro_f1[1] == pytest.approx(rep["f1_macro"], abs=1e-12)
    assert [f"{evaluate(r['model'], test)['accuracy']:.6f}" for r in res["members"]] == \
        runs.member_accuracies[1].split()
    table = pd.read_csv(out / "benchmark.csv").set_index("dataset")
    assert table.kairo["ItalyPowerDemand"] == pytest.approx(runs.test_accuracy.mean())
    assert table.seeds["ItalyPowerDemand"] == "0, 2"
    assert "ensemble of 2 models" in shown and "ensemble of 2 models" in \
        (out / "table.md").read_text()
    with pytest.raises(ConfigError, match="ensemble needs refit"):
        BenchmarkConfig(ensemble=2, refit=False)
    with pytest.raises(KairoError, match="ensemble_seed and proba"):
        ensemble_runs(members)                    # the CSV's rows: no probabilities
    # the members' probabilities are kept: averaged again they give the run's ensembles,
    # and regrouped, an ensemble of all four
    again = ensemble_runs(read_member_runs(out))
    pd.testing.assert_series_equal(again.test_accuracy, runs.test_accuracy)
    assert list(again.members) == list(runs.members)
    four = ensemble_runs(read_member_runs(out).assign(ensemble_seed=0))
    assert list(four.members) == ["0 1 2 3"] and 0 <= four.test_accuracy[0] <= 1
    np.savez(out / "member_proba.npz", row0=np.zeros((2, 2)))         # another run's file
    with pytest.raises(KairoError, match="holds 1 members' probabilities, member_runs.csv "
                                         "lists 4"):
        read_member_runs(out)
    (out / "member_proba.npz").write_text("not an archive")
    with pytest.raises(KairoError, match="member_proba.npz: not a member_proba.npz kairo"):
        read_member_runs(out)
    (out / "member_proba.npz").unlink()
    with pytest.raises(KairoError, match="member_proba.npz: not found"):
        read_member_runs(out)
