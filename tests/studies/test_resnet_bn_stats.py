"""benchmarks/studies/resnet_bn_stats.py's adoption rules (fixed before its runs) on made-up
summaries."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.study


@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("studies/resnet_bn_stats")


def _summary(bench, series: dict, n_test: int = 100) -> dict:
    """Paired differences given in test series per dataset (0 for the ones not named)."""
    return {ds: {"paired_diff": series.get(ds, 0) / n_test, "n_test": n_test}
            for ds in bench.PROTOCOL}


def test_the_benchmark_rule(bench):
    assert not bench.decide(_summary(bench, {}))["adopt_recompute"]           # no gain
    assert bench.decide(_summary(bench, {"ArrowHead": 2}))["adopt_recompute"]
    # a gain on average, but one dataset loses more than one test series: rule (a) fails
    d = bench.decide(_summary(bench, {"ArrowHead": 5, "ACSF1": -1.5}))
    assert not d["no_dataset_loses_more_than_one_series"] and not d["adopt_recompute"]
    d = bench.decide(_summary(bench, {"ArrowHead": 5, "ACSF1": -1}))
    assert d["adopt_recompute"] and d["diff_in_test_series"]["ACSF1"] == pytest.approx(-1)
    # exactly one series lost, as floats compute it (0.92 − 0.93 of 100 is −1.0000000000000009)
    summ = _summary(bench, {"ArrowHead": 5})
    summ["ACSF1"]["paired_diff"] = 0.92 - 0.93
    assert bench.decide(summ)["no_dataset_loses_more_than_one_series"]


def test_the_train_rule_needs_four_gains_and_no_loss(bench):
    flat = _summary(bench, {})
    four = _summary(bench, {"ArrowHead": 1, "GunPoint": 2, "OSULeaf": 3, "ACSF1": 1})
    assert bench.decide(flat, four)["adopt_recompute"]
    three = _summary(bench, {"ArrowHead": 1, "GunPoint": 2, "OSULeaf": 3})
    assert not bench.decide(flat, three)["adopt_recompute"]
    loses = _summary(bench, {"ArrowHead": 1, "GunPoint": 2, "OSULeaf": 3, "ACSF1": 1,
                             "ItalyPowerDemand": -2})
    assert not bench.decide(flat, loses)["train_rule"]
    # the benchmark protocol's rule (a) still has to hold
    assert not bench.decide(_summary(bench, {"ACSF1": -3}), four)["adopt_recompute"]


def test_an_incomplete_protocol_decides_nothing(bench):
    part = {k: v for k, v in _summary(bench, {}).items() if k != "OSULeaf"}
    d = bench.decide(part)
    assert not d["decided"] and "OSULeaf" in d["why"]
    d = bench.decide(_summary(bench, {}), part)
    assert not d["decided"] and "train protocol" in d["why"]


def test_paired_run_scores_the_running_averages_whatever_the_default(bench):
    import dataclasses

    from kairo.tsc import ModelConfig, TrainConfig, evaluate, fit, load_dataset

    model = ModelConfig(encoder="resnet", pool="mean", d_model=8, blocks=1)
    train = TrainConfig(epochs=2, batch=16, val_fraction=0.0, seed=0, threads=1)
    assert train.bn_stats == "recompute"                       # the default
    row = bench.paired_run({"dataset": "GunPoint", "model": dataclasses.asdict(model),
                            "train": dataclasses.asdict(train), "threads": 1,
                            "mnist1d_length": 40})
    tr, te = (load_dataset("GunPoint", split) for split in ("train", "test"))
    quiet = dict(progress_bar=False)
    as_trained = fit(model, dataclasses.replace(train, bn_stats="running"), tr, **quiet)
    recomputed = fit(model, train, tr, **quiet)
    assert row["running"] == evaluate(as_trained["model"], te)["accuracy"]
    assert row["recompute"] == evaluate(recomputed["model"], te)["accuracy"]
    assert row["running"] != row["recompute"] and row["n_bn_layers"] == 4
