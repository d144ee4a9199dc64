"""benchmarks/studies/keras_defaults.py: the pre-registered rule for making Keras's head and
initialisation the ResNet default, on made-up runs and on the committed tables."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("studies/keras_defaults")


def _runs(hits, n):
    return {seed: h / n for seed, h in enumerate(hits)}


def test_paired_comparison_counts_series_and_pairs_by_seed(bench):
    v, d = _runs([148, 150, 150, 147], 175), _runs([145, 147, 138, 139], 175)
    d[7] = 0.5                                     # a seed the options lack: not paired
    r = bench.compare(v, d, True, 175, "ArrowHead")
    assert r["seeds"] == [0, 1, 2, 3] and r["up_same_down"] == [4, 0, 0]
    assert r["diff_series"] == pytest.approx(np.mean([3, 3, 12, 8]))
    assert r["p"] == pytest.approx(stats.ttest_rel([148, 150, 150, 147],
                                                   [145, 147, 138, 139]).pvalue)
    assert r["variant_hits"] == [148, 150, 150, 147] and not r["significantly_below"]
    shifted = bench.compare({s: a - 2 / 175 for s, a in v.items()}, v, True, 175, "ArrowHead")
    assert np.isnan(shifted["p"]) and shifted["more_than_one_series_below"]
    assert shifted["below_by_more_than_the_margin"]            # 2 series > 1.75
    same = bench.compare(v, v, True, 175, "ArrowHead")
    assert same["p"] == 1.0 and same["diff_series"] == 0 and same["up_same_down"] == [0, 4, 0]
    with pytest.raises(ValueError, match="fewer than two seeds"):
        bench.compare({0: 0.8}, {0: 0.8, 1: 0.9}, True, 175, "ArrowHead")


def test_unpaired_comparison_is_welch(bench):
    v, d = _runs([991, 985, 995], 1029), _runs([984, 997, 995], 1029)
    r = bench.compare(v, d, False, 1029, "ItalyPowerDemand")
    assert r["p"] == pytest.approx(stats.ttest_ind([991, 985, 995], [984, 997, 995],
                                                   equal_var=False).pvalue)
    assert r["diff_series"] == pytest.approx(-5 / 3)
    # −1.7 series of 1,029 is inside the margin (10.29 series), outside the first wording's
    assert r["margin_series"] == pytest.approx(10.29)
    assert not r["below_by_more_than_the_margin"] and r["more_than_one_series_below"]
    # two seeds each with identical hits (ACSF1: 92 of 100 twice): no spread, no test; the
    # margin alone judges the gap
    r = bench.compare(_runs([91, 91], 100), _runs([92, 92], 100), False, 100, "ACSF1")
    assert np.isnan(r["p"]) and not r["significantly_below"]
    assert r["diff_series"] == pytest.approx(-1) and not r["below_by_more_than_the_margin"]
    r = bench.compare(_runs([90, 90], 100), _runs([92, 92], 100), False, 100, "ACSF1")
    assert r["below_by_more_than_the_margin"]


def test_the_rule(bench):
    ok = {"significantly_below": False, "below_by_more_than_the_margin": False,
          "more_than_one_series_below": False}
    per = {ds: dict(ok) for ds in bench.PROTOCOL}
    assert bench.decide(per)["verdict"] == "adopt"
    per["OSULeaf"] = None
    assert bench.decide(per) == {"verdict": "pending", "breaks_the_rule": [],
                                 "not_run_yet": ["OSULeaf"]}
    per["GunPoint"] = {**ok, "significantly_below": True}      # one set decides already
    assert bench.decide(per)["verdict"] == "keep"
    per["GunPoint"] = {**ok, "more_than_one_series_below": True}
    assert bench.decide(per)["verdict"] == "pending"
    assert bench.decide(per, "more_than_one_series_below")["breaks_the_rule"] == ["GunPoint"]
    # the margin: one series or one point of accuracy, whichever is more
    assert bench.margin(50) == 1.0 and bench.margin(175) == pytest.approx(1.75)
    assert bench.margin(1029) == pytest.approx(10.29)


def test_reads_tables_and_bn_stats_json(bench, tmp_path):
    pd.DataFrame([{"dataset": "GunPoint", "seed": s, "time_warp": w, "test_accuracy": a}
                  for s, w, a in ((0, 0.0, 0.98), (1, 0.0, 0.99), (0, 0.2, 1.0))]
                 ).to_csv(tmp_path / "runs.csv", index=False)
    assert bench.read_runs([tmp_path / "runs.csv"], "GunPoint") == {0: 0.98, 1: 0.99}
    assert bench.read_runs([tmp_path / "runs.csv"], "ArrowHead") is None
    assert bench.read_runs([tmp_path / "nothing.csv"], "GunPoint") is None    # not run yet
    (tmp_path / "bn.json").write_text(json.dumps({"runs": [
        {"dataset": "GunPoint", "seed": 3, "running": 0.9, "recompute": 0.95}]}))
    assert bench.read_runs([tmp_path / "bn.json"], "GunPoint") == {3: 0.95}
    # resnet_bn_stats.py's JSON: written before the head fields (LayerNorm, torch), or with
    # today's ResNet defaults in its "model" entry
    assert bench.read_runs([tmp_path / "bn.json"], "GunPoint", keras=False) == {3: 0.95}
    with pytest.raises(ValueError, match="bn.json: trained with .*'head_norm': True"):
        bench.read_runs([tmp_path / "bn.json"], "GunPoint", keras=True)
    (tmp_path / "bn.json").write_text(json.dumps({"model": {"head_norm": False,
                                                            "weight_init": "glorot"}, "runs": [
        {"dataset": "GunPoint", "seed": 3, "running": 0.9, "recompute": 0.95}]}))
    with pytest.raises(ValueError, match="bn.json: trained with .*'head_norm': False"):
        bench.read_runs([tmp_path / "bn.json"], "GunPoint", keras=False)
    with pytest.raises(ValueError, match="seed 0 of GunPoint appears twice"):
        bench.read_runs([tmp_path / "runs.csv", tmp_path / "runs.csv"], "GunPoint")
    # a table is read as what its config.yaml says it was trained with
    with pytest.raises(ValueError, match="no config.yaml beside it"):
        bench.read_runs([tmp_path / "runs.csv"], "GunPoint", keras=True)
    (tmp_path / "config.yaml").write_text("head_norm: false\nweight_init: glorot\n"
                                          "bn_stats: recompute\n")
    assert bench.read_runs([tmp_path / "runs.csv"], "GunPoint", keras=True) == {0: 0.98, 1: 0.99}
    with pytest.raises(ValueError, match="trained with .*'head_norm': False"):
        bench.read_runs([tmp_path / "runs.csv"], "GunPoint", keras=False)
    # today's defaults ("auto") are the pair for a ResNet
    (tmp_path / "config.yaml").write_text("head_norm: auto\nweight_init: auto\n"
                                          "bn_stats: recompute\n")
    assert bench.read_runs([tmp_path / "runs.csv"], "GunPoint", keras=True) == {0: 0.98, 1: 0.99}
    (tmp_path / "config.yaml").write_text("epochs: 600\n")       # older: LayerNorm, torch, running
    with pytest.raises(ValueError, match="'bn_stats': 'running'"):
        bench.read_runs([tmp_path / "runs.csv"], "GunPoint", keras=False)


def test_committed_tables_give_the_documented_figures(bench, tmp_path):
    """The rows already in docs/tsc.md, recomputed from the committed tables."""
    out = tmp_path / "k.json"
    assert bench.main(["--out", str(out)]) == 0
    res = json.loads(out.read_text())
    ah, pg = res["datasets"]["ArrowHead"], res["datasets"]["PickupGestureWiimoteZ_eq"]
    assert ah["variant_hits"] == [148, 150, 150, 147, 145, 152, 149, 152, 146, 144]
    assert ah["diff_series"] == pytest.approx(3.3) and round(ah["p"], 2) == 0.13
    assert pg["up_same_down"] == [6, 0, 0] and round(pg["p"], 3) == 0.025
    osu = res["datasets"]["OSULeaf"]
    assert osu["variant_hits"] == [236, 237, 238, 238, 238, 238] and not osu["paired"]
    assert osu["diff_series"] == pytest.approx(0.0, abs=1e-9)
    # the decision that made the pair the ResNet default (docs/tsc.md)
    assert res["verdict"] == "adopt" and res["not_run_yet"] == []
    assert res["first_wording"]["verdict"] == "keep"
    assert res["first_wording"]["breaks_the_rule"] == ["ItalyPowerDemand"]
