"""benchmarks/resnet_bn_stats.py's adoption rules (fixed before its runs) on made-up summaries."""

from __future__ import annotations


import pytest



@pytest.fixture(scope="module")
def bench(load_benchmark):
    return load_benchmark("resnet_bn_stats")


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
