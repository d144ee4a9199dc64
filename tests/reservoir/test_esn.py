"""The reservoir engine: update rule, batching, engine equivalence, determinism."""

import numpy as np
import pytest
import scipy.sparse as sp

from kairo.connectome import normalize
from kairo.reservoir import ENGINES, Reservoir


def _reference(w, win, inp, u, leak, bias, act):
    """Plain dense NumPy loop of x(t) = (1-a) x + a f(x W + u W_in + b)."""
    n = w.shape[0]
    win_full = np.zeros((win.shape[0], n))
    win_full[:, inp] = win
    x = np.zeros(n)
    out = []
    for t in range(u.shape[0]):
        pre = x @ w + u[t] @ win_full + bias
        x = (1 - leak) * x + leak * (np.tanh(pre) if act == "tanh" else pre)
        out.append(x.copy())
    return np.array(out)


@pytest.mark.parametrize("engine", ["scipy", "torch"])
@pytest.mark.parametrize("act,leak,bias", [("tanh", 1.0, 0.0), ("tanh", 0.3, 0.1),
                                           ("linear", 0.5, 0.0)])
def test_matches_reference(small, engine, act, leak, bias):
    c = normalize(small, "spectral", target=0.9)
    inp = c.select(celltype="sensory")
    res = Reservoir(c, input_neurons=inp, n_inputs=2, activation=act, leak=leak, bias=bias,
                    seed=0, engine=engine)
    u = np.random.default_rng(1).uniform(-1, 1, (50, 2))
    ref = _reference(c.weights.toarray(), res.input_weights_, inp, u, leak, bias, act)
    np.testing.assert_allclose(res.run(u), ref, rtol=1e-10, atol=1e-12)


def test_pre_to_post_orientation():
    """A chain 0 → 1 → 2 (rows pre): input into 0 reaches 1 after one step, 2 after two."""
    w = sp.csr_matrix(([1.0, 1.0], ([0, 1], [1, 2])), shape=(3, 3))
    res = Reservoir(w, input_neurons=np.array([0]), activation="linear",
                    input_weights="constant")
    x = res.run(np.array([1.0, 0.0, 0.0]))
    np.testing.assert_array_equal(x, [[1, 0, 0], [0, 1, 0], [0, 0, 1]])


def test_batched_streams_equal_single_runs_and_engines_agree(small):
    c = normalize(small, "row")
    res = Reservoir(c, input_neurons=c.select(celltype="sensory"),
                    readout_neurons=c.select(celltype="DN-VNC"), seed=5)
    u = np.random.default_rng(2).normal(size=(40, 16, 1))
    batched = {b: Reservoir(c, input_neurons=res.input_neurons,
                            readout_neurons=res.readout_neurons, seed=5, engine=b).run(u)
               for b in ("scipy", "torch")}
    np.testing.assert_allclose(batched["scipy"], batched["torch"], rtol=1e-12, atol=1e-13)
    assert batched["scipy"].shape == (40, 16, res.n_readout)
    for s in (0, 7, 15):
        np.testing.assert_allclose(res.run(u[:, s, :]), batched["scipy"][:, s, :], atol=1e-13)
    assert res.resolve_engine(1) in ("scipy", "torch", "numba")
    on_cpu = Reservoir(c, input_neurons=res.input_neurons, device="cpu")
    cpu_auto = "numba" if "numba" in ENGINES else "scipy"
    assert on_cpu.resolve_engine(1) == cpu_auto and on_cpu.resolve_device() == "cpu"


def test_float32_close_to_float64(small):
    c = normalize(small, "spectral")
    u = np.random.default_rng(3).uniform(-1, 1, (100, 1))
    a = Reservoir(c, input_neurons=np.arange(10), seed=0).run(u)
    b = Reservoir(c, input_neurons=np.arange(10), seed=0, dtype="float32").run(u)
    assert b.dtype == np.float32
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_stream_chunks_and_state(small):
    c = normalize(small, "spectral")
    res = Reservoir(c, input_neurons=np.arange(5), seed=0)
    u = np.random.default_rng(4).uniform(-1, 1, (2500, 1))
    chunks = list(res.stream(u, chunk=700))
    assert [s for s, _ in chunks] == [0, 700, 1400, 2100]
    full = np.concatenate([x for _, x in chunks])
    np.testing.assert_array_equal(full, res.run(u))
    # continuing from the last state equals running the concatenated input
    first = res.run(u[:1000])
    rest = res.run(u[1000:], x0=res.last_state_[0])
    np.testing.assert_allclose(np.concatenate([first, rest]), full, atol=1e-14)


def test_input_weights_seeded_and_echo_state_property(small):
    c = normalize(small, "spectral", target=0.8)
    a = Reservoir(c, input_neurons=np.arange(8), seed=11)
    b = Reservoir(c, input_neurons=np.arange(8), seed=11)
    np.testing.assert_array_equal(a.input_weights_, b.input_weights_)
    u = np.random.default_rng(0).uniform(-1, 1, (300, 1))
    x1 = a.run(u)
    x2 = a.run(u, x0=np.random.default_rng(1).uniform(-1, 1, c.n_neurons))
    assert np.abs(x1[0] - x2[0]).max() > 0.1
    assert np.abs(x1[-1] - x2[-1]).max() < 1e-8  # initial conditions are forgotten
