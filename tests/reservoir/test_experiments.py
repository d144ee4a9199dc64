"""The experiments behind the CLI, on the real connectome at small sizes."""

import numpy as np
import pandas as pd
import pytest

from kairo.reservoir import (CompareConfig, PropagateConfig, RunConfig, SweepConfig,
                             compare_experiment, null_stats, propagate_experiment,
                             run_experiment, sweep_experiment)

SMALL = dict(n_train=300, n_test=150, washout=50, max_delay=10, cv=3,
             readout_group="DN-VNC+DN-SEZ")


@pytest.mark.slow
def test_run_is_deterministic_and_finite(winding):
    cfg = RunConfig(task="narma10", norm="row", **SMALL)
    a, b = run_experiment(cfg, winding), run_experiment(cfg, winding)
    assert np.isfinite(a["nrmse"]) and 0 < a["nrmse"] < 1.5
    assert a["nrmse"] == b["nrmse"]
    np.testing.assert_array_equal(a["_y_hat"], b["_y_hat"])
    assert a["n_features"] == len(winding.group("DN-VNC+DN-SEZ"))


@pytest.mark.slow
def test_memory_capacity_reservoir_beats_chance(winding):
    m = run_experiment(RunConfig(task="memory-capacity", norm="row", **SMALL), winding)
    assert 1.0 < m["mc"] <= 10.0 and len(m["mc_curve"]) == 10
    assert m["mc_curve"][0] > 0.5  # the last input is remembered


def test_null_stats_known_values():
    s = null_stats(5.0, np.array([1.0, 2.0, 3.0, 6.0]), higher_is_better=True)
    assert s["null_mean"] == 3.0 and s["null_sd"] == pytest.approx(np.std([1, 2, 3, 6], ddof=1))
    assert s["z"] == pytest.approx(2.0 / s["null_sd"])
    assert s["p_better"] == pytest.approx(2 / 5)  # one null (6) at least as good, +1
    low = null_stats(5.0, np.array([1.0, 2.0, 3.0, 6.0]), higher_is_better=False)
    assert low["p_better"] == pytest.approx(4 / 5)


@pytest.mark.slow
def test_compare_and_sweep(winding):
    cfg = CompareConfig(task="memory-capacity", nulls=2, null_models=("rewire", "gaussian"),
                        workers=1, **SMALL)
    r = compare_experiment(cfg, winding)
    t = r["table"]
    assert list(t.model.value_counts().sort_index().items()) == [("gaussian", 2), ("real", 1),
                                                                  ("rewire", 2)]
    assert set(r["summary"]) == {"rewire", "gaussian"}
    assert np.isfinite(t.mc).all()
    again = compare_experiment(cfg, winding)
    np.testing.assert_array_equal(again["table"].mc, t.mc)
    s = sweep_experiment(SweepConfig(task="narma10", values=(0.5, 1.0), nulls=2,
                                     null_models=("weight-shuffle",), workers=1, **SMALL),
                         winding)
    assert len(s["table"]) == 2 * (1 + 2)
    assert set(s["curves"].model) == {"real", "weight-shuffle"}


@pytest.mark.slow
def test_parallel_conditions_give_the_serial_numbers(winding):
    """Worker processes score the conditions with exactly the numbers of one by one."""
    compare = dict(task="memory-capacity", nulls=2, null_models=("rewire", "gaussian"), **SMALL)
    serial = compare_experiment(CompareConfig(workers=1, **compare), winding)
    parallel = compare_experiment(CompareConfig(workers=2, executor="processes", **compare),
                                  winding)
    pd.testing.assert_frame_equal(serial["table"], parallel["table"], check_exact=True)
    assert serial["summary"] == parallel["summary"]
    sweep = dict(task="narma10", values=(0.5, 1.0), nulls=2, null_models=("weight-shuffle",),
                 **SMALL)
    serial = sweep_experiment(SweepConfig(workers=1, **sweep), winding)
    parallel = sweep_experiment(SweepConfig(workers=2, executor="processes", **sweep), winding)
    pd.testing.assert_frame_equal(serial["table"], parallel["table"], check_exact=True)


def test_propagate(winding):
    r = propagate_experiment(PropagateConfig(steps=8), winding)
    t = r["table"]
    first = t[t.step == 1]
    assert (first.mean_activity == 0).all()  # one step: only the sensory neurons are active
    last = t[(t.step == 8) & (t.group == "DN-VNC")]
    row = last[last.norm == "row"].mean_activity.mean()
    spec = last[last.norm == "spectral"].mean_activity.mean()
    assert row > spec > 0
    h = r["hypotheses"]
    assert set(h) == {"row_reaches_dn_better_than_spectral", "right_stim_drives_left_dn_more"}
    assert h["right_stim_drives_left_dn_more"]["results"]["row/stim-L"]["n_pairs"] > 80
    rev = propagate_experiment(PropagateConfig(steps=8, convention="reversed"), winding)
    assert "REVERSED" in rev["convention"]


def test_classification_readouts(winding):
    for readout in ("ridge", "logistic"):
        m = run_experiment(RunConfig(task="sine-square", norm="row", readout=readout,
                                     **SMALL), winding)
        assert 0.7 < m["accuracy"] <= 1.0, (readout, m["accuracy"])
