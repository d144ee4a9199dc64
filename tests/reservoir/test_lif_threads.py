"""The LIF network's numba engine on several threads: one trial's blocks of neurons split
between threads, and trials side by side, fire exactly the spikes of one thread."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import scipy.sparse as sp

from kairo import KairoError
from kairo.reservoir import LIFNetwork, LIFParams


def _network(n=600, seed=5):
    rng = np.random.default_rng(seed)
    w = sp.random(n, n, density=0.04, random_state=rng,
                  data_rvs=lambda k: rng.integers(1, 12, k).astype(float))
    return sp.diags(np.where(rng.random(n) < 0.2, -1.0, 1.0)) @ w     # 20 % inhibitory rows


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("trial", "step", "neuron"))


@pytest.fixture
def small_blocks(monkeypatch):
    # blocks of 32 neurons (the last one partial) and no lower bound on blocks per thread, so
    # that a 600-neuron network runs in up to 19 parts
    import kairo.reservoir._spiking as m

    monkeypatch.setattr(m, "_ONE_BLOCK", 0)
    monkeypatch.setattr(m, "_BLOCK_SHIFT", 5)
    monkeypatch.setattr(m, "_MIN_BLOCKS", 1)
    return m


@pytest.mark.parametrize("delay", [0.1, 1.8, 5.0])
def test_threads_do_not_change_the_spikes_of_one_trial(small_blocks, monkeypatch, delay):
    w = _network()
    p = LIFParams(delay=delay)
    kw = dict(input_neurons=np.arange(0, 600, 9), rate_hz=150.0, seed=11)
    one = LIFNetwork(w, p, engine="numba", threads=1).run(120, **kw)
    assert one.step.size > 1000
    calls = []
    threaded = small_blocks._advance_threads

    def spy(team, *args):
        calls.append(args[-3].size - 1)                         # parts: bounds − 1
        return threaded(team, *args)

    monkeypatch.setattr(small_blocks, "_advance_threads", spy)
    for threads in (2, 3, 7, 19, 64):          # more threads than blocks: a part per block
        out = LIFNetwork(w, p, engine="numba", threads=threads).run(120, **kw)
        assert _same(out, one), threads
    assert sorted(set(calls)) == [2, 3, 7, 19]
    # the parts run on one thread when the parallel kernel is busy elsewhere
    with small_blocks._PARALLEL:
        busy = LIFNetwork(w, p, engine="numba", threads=2).run(120, **kw)
    assert _same(busy, one)
    # and as one block (the unsplit run of small graphs)
    small_blocks._ONE_BLOCK = 8192
    assert _same(LIFNetwork(w, p, engine="numba", threads=2).run(120, **kw), one)


@pytest.mark.parametrize("parallel", ["trials", "neurons", "auto"])
def test_threads_do_not_change_the_spikes_of_several_trials(small_blocks, monkeypatch,
                                                            parallel):
    monkeypatch.setattr(small_blocks, "_CHUNK", 37)       # windows cut by chunks
    w = _network(seed=6)
    kw = dict(input_neurons=np.arange(3, 600, 7), rate_hz=150.0, trials=4, seed=2)
    one = LIFNetwork(w, engine="numba", threads=1).run(100, **kw)
    assert one.step.size > 2000 and set(one.trial.tolist()) == {0, 1, 2, 3}
    for threads in (2, 3, 5):            # auto: side by side for 2 and 3, 5 on the neurons
        net = LIFNetwork(w, engine="numba", threads=threads, parallel=parallel)
        assert _same(net.run(100, **kw), one)


def test_runs_in_several_python_threads_at_once(small_blocks):
    # one parallel kernel at a time (numba's workqueue layer aborts on two); the others run
    # their parts on their own thread, with the same spikes
    w = _network(seed=7)
    kw = dict(input_neurons=np.arange(0, 600, 5), rate_hz=150.0, seed=4)
    net = LIFNetwork(w, engine="numba", threads=2)
    want = LIFNetwork(w, engine="numba", threads=1).run(80, **kw)
    got = [None] * 4

    def go(t):
        got[t] = net.run(80, **kw)

    workers = [threading.Thread(target=go, args=(t,)) for t in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    assert all(_same(g, want) for g in got)


def test_bad_thread_counts_and_modes_are_refused():
    w = sp.csr_matrix((5, 5))
    for bad in (-1, 1.5, "2", True, None):
        with pytest.raises(KairoError, match="threads"):
            LIFNetwork(w, engine="numba", threads=bad)
    net = LIFNetwork(w, engine="numba")
    assert net.threads == 0 and net._n_threads() >= 1
    with pytest.raises(KairoError, match="threads"):
        net.threads = -2
    net.threads = np.int64(3)
    assert net.threads == 3 and net._n_threads() == 3
    for bad in ("blocks", None, 1):
        with pytest.raises(KairoError, match="parallel"):
            LIFNetwork(w, engine="numba", parallel=bad)
    with pytest.raises(KairoError, match="parallel"):
        net.parallel = "threads"


def test_a_session_on_threads_fires_the_spikes_of_one_thread(small_blocks):
    from kairo.reservoir import LIFSession

    w = _network(seed=8)
    out = {}
    for threads in (1, 3):
        s = LIFSession(LIFNetwork(w, engine="numba", threads=threads), np.arange(0, 600, 6),
                       seed=1)
        out[threads] = [s.advance(7.3, rate) for rate in (200.0, 0.0, 400.0, 100.0)]
    assert sum(x[0].size for x in out[1]) > 300
    for (s1, n1), (s3, n3) in zip(out[1], out[3]):
        assert np.array_equal(s1, s3) and np.array_equal(n1, n3)


def test_the_row_search_finds_the_first_target_at_least_x():
    from kairo.reservoir._lif_kernels import _first_at_least, _first_target_at_least

    rng = np.random.default_rng(0)
    for trial in range(3000):
        n = int(rng.integers(1, 2000))
        m = int(rng.integers(0, 60))
        top = n if trial % 3 else max(1, n // 10)          # spread evenly, or bunched
        a = np.sort(rng.integers(0, top, m)).astype(np.int32)
        lo = int(rng.integers(0, m + 1))
        hi = int(rng.integers(lo, m + 1))
        x = int(rng.integers(0, n + 1))
        want = lo + int(np.searchsorted(a[lo:hi], x, side="left"))
        assert _first_target_at_least(a, lo, hi, x, n) == want
        assert _first_at_least(a, lo, hi, x) == want
