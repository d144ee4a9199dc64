"""Task generators and metrics against their definitions."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from kairo.reservoir import (accuracy, lorenz, mackey_glass, make_task, memory_capacity,
                             narma, nrmse)


def test_narma10_recurrence():
    u = np.random.default_rng(0).uniform(0, 0.5, 40)
    y = narma(u, 10)
    assert (y[:10] == 0).all()
    t = 25
    expect = 0.3 * y[t] + 0.05 * y[t] * y[t - 9:t + 1].sum() + 1.5 * u[t - 9] * u[t] + 0.1
    assert y[t + 1] == pytest.approx(expect, rel=1e-15)
    assert y[10] == pytest.approx(1.5 * u[0] * u[9] + 0.1)


def test_narma10_task_alignment():
    d = make_task("narma10", n_train=100, n_test=50, washout=20, seed=1)
    y = narma(np.concatenate([d.u[:, 0], [0.0]]), 10)  # the last input only affects y(n+1)
    np.testing.assert_allclose(d.y[:, 0], y[1:], rtol=1e-12)


def test_memory_capacity_definition():
    d = make_task("memory-capacity", n_train=200, n_test=500, washout=30, max_delay=30, seed=0)
    u = d.u[:, 0]
    np.testing.assert_array_equal(d.y[50:, 4], u[45:-5])  # target k=5 is u(t−5)
    mc, curve = memory_capacity(d.y, d.y)
    assert mc == pytest.approx(30) and curve.shape == (30,)
    shuffled = np.random.default_rng(1).permutation(d.y)
    assert memory_capacity(d.y, shuffled)[0] < 0.5


def test_mackey_glass_against_ode_solver():
    # at the fixed point x*=1 (β/γ = 2, n = 10) the series stays put
    x = mackey_glass(50, x0=1.0, discard=0)
    np.testing.assert_allclose(x, 1.0, atol=1e-12)
    # while t < τ the delayed term is the constant history: an ODE, checkable with solve_ivp
    x = mackey_glass(17, x0=0.5, discard=0)  # samples at t = 0..16 < 17
    hist = 0.2 * 0.5 / (1 + 0.5 ** 10)
    sol = solve_ivp(lambda t, s: hist - 0.1 * s, (0, 16), [0.5], t_eval=np.arange(0, 17),
                    rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x, sol.y[0], rtol=1e-8)
    chaos = mackey_glass(2000, rng=np.random.default_rng(0))
    assert 0.2 < chaos.min() < 0.6 and 1.1 < chaos.max() < 1.5


def test_lorenz_and_horizons():
    s = lorenz(1000, rng=np.random.default_rng(0))
    assert s.shape == (1000, 3) and np.abs(s[:, 0]).max() < 25 and (s[:, 2] > 0).all()
    d = make_task("lorenz", n_train=100, n_test=100, washout=10, horizon=7, seed=0)
    np.testing.assert_array_equal(d.u[7:, :], d.y[:-7, :])
    m = make_task("mackey-glass", n_train=100, n_test=100, washout=10, seed=0)
    assert m.meta["horizon"] == 84
    np.testing.assert_array_equal(m.u[84:], m.y[:-84])


def test_sine_square_and_metrics():
    d = make_task("sine-square", n_train=80, n_test=80, washout=0, seed=0)
    labels = d.meta["labels"]
    sq = d.u[labels == 1, 0]
    assert set(np.unique(sq)) == {-1.0, 1.0}
    assert accuracy(labels, d.y) == 1.0
    y = np.random.default_rng(0).normal(size=(500, 2))
    assert nrmse(y, np.zeros_like(y) + y.mean(0)) == pytest.approx(1.0)
    assert nrmse(y, y) == 0.0


def test_tasks_are_seeded():
    a = make_task("narma10", n_train=50, n_test=50, seed=np.random.default_rng(3))
    b = make_task("narma10", n_train=50, n_test=50, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a.u, b.u)
