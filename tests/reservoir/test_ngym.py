"""NeuroGym tasks as reservoir tasks: whole trials, decision-period training, per-trial
accuracy, options and errors."""

from __future__ import annotations

import numpy as np
import pytest

from kairo import ConfigError, KairoError

pytest.importorskip("neurogym")

from kairo.reservoir import RunConfig, make_task, run_experiment  # noqa: E402


def test_trials_are_whole_and_the_decision_period_is_marked():
    d = make_task("ngym:PerceptualDecisionMaking", n_train=300, n_test=200, washout=50,
                  seed=np.random.default_rng(0))
    trial, mask = d.meta["trial"], d.meta["mask"]
    n = d.washout + d.n_train + d.n_test
    assert d.u.shape == (n, 3) and d.y.shape == (n, 3) and trial.shape == mask.shape == (n,)
    assert d.washout >= 50 and d.n_train >= 300 and d.n_test >= 200
    # every span starts with a new trial
    for start in (d.washout, d.washout + d.n_train):
        assert trial[start] == trial[start - 1] + 1
    # the decision period is the end of each trial, where the target is the correct action
    for t in np.unique(trial):
        sel = trial == t
        assert mask[sel][-1] and d.meta["labels"][sel][mask[sel]].tolist() == [
            d.meta["trial_labels"][t]] * int(mask[sel].sum())
        assert (d.meta["labels"][sel][~mask[sel]] == 0).all()           # fixate before
    assert np.array_equal(d.y.argmax(1), d.meta["labels"])
    again = make_task("ngym:PerceptualDecisionMaking", n_train=300, n_test=200, washout=50,
                      seed=np.random.default_rng(0))
    assert np.array_equal(again.u, d.u)


def test_options_reach_the_environment():
    d = make_task("ngym:PerceptualDecisionMaking", n_train=100, n_test=100, washout=0,
                  dt=50.0, timing=("fixation=100", "stimulus=500", "decision=150"),
                  sigma=0.0, cohs=(51.2,), seed=np.random.default_rng(1))
    lengths = np.bincount(d.meta["trial"])
    assert set(lengths) == {(100 + 500 + 150) // 50}      # no delay period in this task
    assert np.bincount(d.meta["trial"][d.meta["mask"]]).max() == 3
    stim = d.u[d.meta["trial"] == 0][2:12, 1:]
    assert np.allclose(stim, stim[0])                     # sigma 0: no noise


@pytest.mark.slow
def test_rate_reservoir_learns_go_nogo_and_decisions():
    common = dict(norm="row", n_train=1500, n_test=800, washout=100, cv=3)
    m = run_experiment(RunConfig(task="ngym:GoNogo", **common))
    assert m["trial_accuracy"] >= 0.95 and m["n_test_trials"] >= 40
    m = run_experiment(RunConfig(task="ngym:PerceptualDecisionMaking", **common))
    assert 0.6 <= m["trial_accuracy"] <= 1.0
    assert m["decision_step_accuracy"] > 0.55


def test_spiking_reservoir_on_a_decision_task():
    m = run_experiment(RunConfig(task="ngym:GoNogo", dynamics="lif", n_train=900, n_test=500,
                                 washout=60, cv=3, readout_group="PN"))
    assert m["trial_accuracy"] >= 0.8


def test_errors_name_the_task_or_option(monkeypatch):
    with pytest.raises(KairoError, match="PerceptualDecisionMaking"):
        make_task("ngym:NoSuchTask", n_train=10, n_test=10, washout=0)
    with pytest.raises(ConfigError, match="ngym_cohs"):
        make_task("ngym:GoNogo", n_train=10, n_test=10, washout=0, cohs=(1.0,))
    with pytest.raises(ConfigError, match="ngym_timing"):
        make_task("ngym:GoNogo", n_train=10, n_test=10, washout=0, timing=("stimulus",))
    with pytest.raises(ConfigError, match="task"):
        RunConfig(task="not-a-task")
    with pytest.raises(ConfigError, match="task"):
        RunConfig(task="ngym:")
    import builtins

    real_import = builtins.__import__

    def no_neurogym(name, *a, **k):
        if name == "neurogym":
            raise ImportError("no neurogym")
        return real_import(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_neurogym)
    with pytest.raises(KairoError, match="pip install"):
        make_task("ngym:GoNogo", n_train=10, n_test=10, washout=0)
