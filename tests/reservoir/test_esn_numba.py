"""The reservoir's numba engine: the same states as the SciPy engine, its blocks, its tanh,
and the arguments it refuses."""

import numpy as np
import pytest
import scipy.sparse as sp
from numba import njit

import kairo.reservoir._esn as esn
from kairo import KairoError
from kairo.connectome import normalize
from kairo.reservoir import Reservoir
from kairo.reservoir import _esn_kernels as kernels

TOL = {"float64": 1e-12, "float32": 1e-5}


def _pair(c, dtype, **kw):
    kw = {"input_neurons": np.arange(0, 20, 2), "n_inputs": 2, "seed": 3, "dtype": dtype, **kw}
    return Reservoir(c, engine="scipy", **kw), Reservoir(c, engine="numba", **kw)


def _assert_same(ref, new, dtype):
    assert new.dtype == np.dtype(dtype) and new.shape == ref.shape
    np.testing.assert_allclose(new, ref, rtol=0, atol=TOL[dtype])


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("streams", [1, 5, 37])
@pytest.mark.parametrize("act,leak,bias", [("tanh", 0.3, 0.0), ("tanh", 1.0, 0.2),
                                           ("linear", 0.5, -0.1), ("linear", 1.0, 0.0)])
def test_numba_equals_scipy(small, dtype, streams, act, leak, bias):
    c = normalize(small, "spectral", target=0.9)
    ref, new = _pair(c, dtype, activation=act, leak=leak, bias=bias,
                     readout_neurons=np.arange(40, 5, -3))
    u = np.random.default_rng(streams).uniform(-1, 1, (45, streams, 2))
    if streams == 1:
        u = u[:, 0, :]
    # chunks of 7 steps: the state is carried from chunk to chunk
    got = np.concatenate([x for _, x in new.stream(u, chunk=7)])
    _assert_same(ref.run(u), got, dtype)
    np.testing.assert_allclose(new.last_state_, ref.last_state_, rtol=0, atol=TOL[dtype])
    assert new.resolve_engine(streams) == "numba"


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_many_blocks_threads_and_x0(small, dtype, monkeypatch):
    monkeypatch.setattr(esn, "_NUMBA_SLICE_STEPS", 7)       # threads take turns on blocks
    c = normalize(small, "spectral", target=0.95)
    ref, new = _pair(c, dtype, leak=0.4, bias=0.05)
    rng = np.random.default_rng(7)
    u = rng.uniform(-1, 1, (30, 150, 2))              # several blocks, the last one partial
    x0 = rng.uniform(-1, 1, (150, c.n_neurons))
    want = ref.run(u, x0=x0)
    new.threads = 1
    one = new.run(u, x0=x0)
    _assert_same(want, one, dtype)
    new.threads = 3
    # blocks are independent: the thread count changes nothing, to the bit
    np.testing.assert_array_equal(new.run(u, x0=x0), one)
    # continuing from the last state equals one long run
    first = new.run(u[:12], x0=x0)
    rest = new.run(u[12:], x0=new.last_state_)
    np.testing.assert_array_equal(np.concatenate([first, rest]), one)


def test_float64_product_is_scipys_to_the_bit(small):
    """Linear, no leak: only the sparse product and the input, summed in SciPy's order."""
    c = normalize(small, "spectral", target=0.9)
    ref, new = _pair(c, "float64", activation="linear")
    for streams in (1, 20):
        u = np.random.default_rng(streams).uniform(-1, 1, (25, streams, 2))
        np.testing.assert_array_equal(new.run(u), ref.run(u))


def test_wide_index_graph():
    """More than 65,536 neurons: 32-bit column indices; empty rows and columns."""
    n = 70_000
    rng = np.random.default_rng(0)
    pre, post = rng.integers(0, n, 3000), rng.integers(0, n, 3000)
    w = sp.csr_matrix((rng.uniform(-0.5, 0.5, 3000), (pre, post)), shape=(n, n))
    kw = {"input_neurons": np.unique(pre)[:50], "readout_neurons": np.unique(post)[:30],
          "seed": 1, "leak": 0.5}
    ref, new = Reservoir(w, engine="scipy", **kw), Reservoir(w, engine="numba", **kw)
    for streams in (1, 3):
        u = rng.uniform(-1, 1, (6, streams, 1))
        np.testing.assert_allclose(new.run(u), ref.run(u), rtol=0, atol=1e-12)


def test_tanh_kernel_accuracy():
    for dtype, ulps in ((np.float64, 3), (np.float32, 3)):
        x = np.concatenate([np.linspace(-25, 25, 20_001), np.geomspace(1e-30, 2, 2001),
                            -np.geomspace(1e-30, 2, 2001), [0.0, -0.0, 1e30, -1e30]])
        x = x.astype(dtype)
        got = np.empty_like(x)
        _apply_tanh(x, got)
        ref = np.tanh(x.astype(np.float64))
        err = np.abs(got.astype(np.float64) - ref) / np.spacing(np.abs(ref).astype(dtype))
        assert err.max() <= ulps, (dtype, err.max())
        assert np.array_equal(np.signbit(got), np.signbit(ref))


@njit(cache=True)
def _apply_tanh(x, out):
    for i in range(x.shape[0]):
        out[i] = kernels.tanh(x[i])


def test_auto_takes_numba_on_the_cpu_once_the_vocabulary_offers_it(small, monkeypatch):
    c = normalize(small, "spectral")
    res = Reservoir(c, input_neurons=np.arange(5), device="cpu")
    without = tuple(e for e in esn.ENGINES if e != "numba")
    monkeypatch.setattr(esn, "ENGINES", without)
    assert res.resolve_engine(1) == "scipy"
    assert Reservoir(c, input_neurons=np.arange(5), engine="numba").resolve_engine(1) == "numba"
    monkeypatch.setattr(esn, "ENGINES", (*without, "numba"))
    assert res.resolve_engine(1) == res.resolve_engine(64) == "numba"
    assert Reservoir(c, input_neurons=np.arange(5), device="cuda").resolve_engine(1) == "torch"


def test_blocks_plan():
    plan = esn._numba_blocks
    assert plan(32, 16, 1) == [(0, 32, 2)]
    assert plan(32, 16, 2) == [(0, 16, 1), (16, 16, 1)]
    assert plan(5, 16, 4) == [(0, 5, 1)]
    assert plan(150, 16, 1) == [(0, 64, 4), (64, 64, 4), (128, 22, 2)]
    assert plan(128, 16, 2) == [(0, 64, 4), (64, 64, 4)]
    assert plan(128, 16, 4) == [(0, 32, 2), (32, 32, 2), (64, 32, 2), (96, 32, 2)]
    for b, lanes, threads in ((1, 8, 1), (77, 8, 2), (300, 16, 3)):
        blocks = plan(b, lanes, threads)
        assert sum(n for _, n, _ in blocks) == b
        assert all(v in (1, 2, 4) and n <= v * lanes for _, n, v in blocks)


def test_bad_arguments_refused(small):
    c = normalize(small, "spectral")
    with pytest.raises(KairoError, match="unknown engine 'numbaa'"):
        Reservoir(c, input_neurons=np.arange(5), engine="numbaa")
    for bad in (-1, 1.5, True, "2"):
        with pytest.raises(KairoError, match="threads: expected an integer ≥ 0"):
            Reservoir(c, input_neurons=np.arange(5), engine="numba", threads=bad)
    res = Reservoir(c, input_neurons=np.arange(5), engine="numba", n_inputs=2)
    with pytest.raises(KairoError, match="inputs must have shape"):
        res.run(np.zeros((10, 3, 1)))
    with pytest.raises(KairoError, match="NaN or infinite"):
        res.run(np.full((4, 2), np.nan))
    with pytest.raises(KairoError, match="x0 must have shape"):
        res.run(np.zeros((4, 3, 2)), x0=np.zeros((2, c.n_neurons)))
