r"""Spiking dynamics: leaky integrate-and-fire (LIF) neurons on any connectome.

The model is Shiu et al.'s whole-brain fly model (Nature 634, 210–219, 2024; parameters from
their public repository philshiu/Drosophila_brain_model, ``model.py``), for every neuron:

.. math::

    \tau_m \dot v = v_{rest} - v + g, \qquad \tau_{syn} \dot g = -g

both frozen while the neuron is refractory. When ``v > v_th`` (and the neuron is not
refractory) it spikes: ``v ← v_reset``, ``g ← 0``, and after the transmission delay every
postsynaptic neuron ``j`` gets ``g_j += w_syn · n_ij`` (``n_ij`` the signed synapse count).
A refractory neuron ignores arriving events, as Brian2's ``(unless refractory)`` flag makes
every write to ``v`` and ``g`` but the reset conditional on ``not_refractory``.
An input spike adds ``input_weight`` to ``v`` directly (Shiu's Poisson input, 250 · w_syn,
enough to make a resting neuron spike on the next step).

Integration is exact over each step (the linear system's solution, Brian2's ``linear`` method),
and a step runs in the order of Brian2's default schedule: state update, threshold, delivery of
delayed synaptic events and input spikes, reset. So given the same input spikes the network
fires the same spikes as Brian2 (tests/reservoir/test_spiking.py runs both).

Two engines compute the same thing: ``numba`` is event-driven on the CPU (only a spiking
neuron's out-synapses are touched, delayed through a history of the last spikes; one trial
on several threads, or several trials side by side; kernels in ``_lif_kernels``), ``torch``
steps a batch of trials as dense tensors with a sparse product per step and runs on CUDA.

The network's uses as one trial that goes on (:class:`LIFSession`, :class:`SpikingReservoir`)
are in ``_spiking_online``, the same network in Brian2 (:func:`brian2_run`) in
``_spiking_brian2``.
"""

from __future__ import annotations

import os
import threading
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from kairo._errors import KairoError
from kairo.reservoir._config import SPIKING_ENGINES, LIFParams
from kairo.reservoir._esn import check_threads
from kairo.reservoir._lif_kernels import _advance, _advance_threads, _by_step, _team

__all__ = ["LIFParams", "LIFNetwork", "SpikeTrains", "SPIKING_ENGINES"]

_CHUNK = 1000          # steps per call into the kernel: bounds the input and spike buffers
_BLOCK_SHIFT = 9       # 2**9 neurons per block of the kernel's windows, so that a block's
                       # state (12 kB) stays in the L1 cache through a window ...
_ONE_BLOCK = 8192      # ... and up to this many neurons, one block (and one thread)
_MIN_BLOCKS = 4        # blocks per part at least, or fewer parts: a part's share of a
                       # window must outweigh its start
_PARTS_PER_THREAD = 1  # parts per window and thread (threads take them as they come free):
                       # each boundary between parts costs a search in every spiking
                       # neuron's synapses, more than smaller parts win back on idle cores
# one trial on several threads at a time, with the team of threads of _lif_kernels; others
# meanwhile run on their own thread (the same spikes)
_PARALLEL = threading.Lock()
_PARALLEL_MODES = ("auto", "trials", "neurons")


@dataclass
class SpikeTrains:
    """Spikes of a run: one row per spike (``trial``, ``step``, ``neuron``), time-ordered
    within each trial, plus what is needed to read them."""

    trial: np.ndarray
    step: np.ndarray
    neuron: np.ndarray
    n_neurons: int
    n_trials: int
    n_steps: int
    dt: float

    @property
    def times_ms(self) -> np.ndarray:
        return self.step * self.dt

    @property
    def duration_ms(self) -> float:
        return self.n_steps * self.dt

    def counts(self) -> np.ndarray:
        """Spike counts, shape (n_trials, n_neurons)."""
        out = np.zeros((self.n_trials, self.n_neurons), dtype=np.int64)
        np.add.at(out, (self.trial, self.neuron), 1)
        return out

    def rates_hz(self) -> np.ndarray:
        """Firing rates in Hz, shape (n_trials, n_neurons)."""
        return self.counts() / (self.duration_ms / 1000.0)

    def binned(self, bin_steps: int) -> np.ndarray:
        """Spike counts per bin of ``bin_steps`` steps, shape (n_trials, n_bins, n_neurons)."""
        if bin_steps < 1:
            raise KairoError(f"bin_steps must be ≥ 1, got {bin_steps}")
        n_bins = -(-self.n_steps // bin_steps)
        out = np.zeros((self.n_trials, n_bins, self.n_neurons), dtype=np.int32)
        np.add.at(out, (self.trial, self.step // bin_steps, self.neuron), 1)
        return out


# ---------------------------------------------------------------------------- input
class _Poisson:
    """Constant-rate Poisson input: a spike in a step with probability p (Brian2's
    PoissonInput), drawn as geometric gaps between spikes — one draw per spike, not one per
    step and neuron."""

    def __init__(self, idx: np.ndarray, prob: np.ndarray, rng: np.random.Generator,
                 start: int = 0):
        self.idx, self.p, self.rng = idx, prob, rng
        # one rate for all: a scalar p draws the same numbers as the array, and NumPy checks
        # a scalar once instead of every element on every call
        self.p1 = float(prob[0]) if prob.size and np.all(prob == prob[0]) else None
        self.next = np.full(idx.size, np.iinfo(np.int64).max)
        live = prob > 0
        self.next[live] = start + rng.geometric(prob[live]) - 1  # step of the first spike

    def chunk(self, k0: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        end = k0 + n
        steps, who = [], []
        todo = np.flatnonzero(self.next < end)
        while todo.size:
            steps.append(self.next[todo] - k0)
            who.append(todo)
            self.next[todo] += (self.rng.geometric(self.p[todo]) if self.p1 is None else
                                self.rng.geometric(self.p1, size=todo.size))
            todo = todo[self.next[todo] < end]
        if not steps:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        return np.concatenate(steps), self.idx[np.concatenate(who)]


class _Varying:
    """Poisson input whose rate changes every step: one Bernoulli draw per step and neuron
    (``prob`` of shape (steps, neurons), consumed chunk by chunk)."""

    def __init__(self, idx: np.ndarray, prob: np.ndarray, rng: np.random.Generator):
        self.idx, self.prob, self.rng = idx, prob, rng

    def chunk(self, k0: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        ks, js = np.nonzero(self.rng.random((n, self.idx.size)) < self.prob[:n])
        self.prob = self.prob[n:]
        return ks, self.idx[js]


class _Given:
    """A given spike train (steps, neurons), the same in every trial."""

    def __init__(self, steps: np.ndarray, neurons: np.ndarray):
        order = np.argsort(steps, kind="stable")
        self.steps, self.neurons = steps[order], neurons[order]

    def chunk(self, k0: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = np.searchsorted(self.steps, [k0, k0 + n])
        return self.steps[a:b] - k0, self.neurons[a:b]


# ---------------------------------------------------------------------------- the network
class LIFNetwork:
    """A network of LIF neurons wired by a connectome.

    Parameters
    ----------
    connectome : Connectome or sparse matrix, shape (n_neurons, n_neurons)
        Signed synapse counts, pre → post (``kairo.connectome.prepare(..., norm="none",
        signs=...)``); each entry is multiplied by ``params.w_syn``.
    params : LIFParams
    engine : {"auto", "numba", "torch"}
        ``numba``: event-driven on the CPU; ``torch``: dense steps of all trials at once on
        ``device``; ``auto``: torch when CUDA is available (and ``device`` is not "cpu"),
        else numba.
    device : str
        torch device for the torch engine ("auto", "cpu", "cuda", …).
    threads : int
        CPU threads of the numba engine (0: every core this process may use). One trial
        runs its blocks of neurons on all of them (graphs of more than 8,192 neurons);
        several trials run side by side, one thread each. The spikes do not depend on it.
        Settable later as the attribute ``threads``.
    parallel : {"auto", "trials", "neurons"}
        How a run of several trials uses the threads (numba engine): ``"trials"`` side by
        side, one thread each; ``"neurons"`` one after another, each on all threads;
        ``"auto"``: side by side when there are at least as many trials as threads (no
        synchronisation within a trial, the faster way for Shiu's 30 trials:
        benchmarks/lif_adult.py measures both) or when the graph is too small to split,
        else one after another. The spikes do not depend on it. Settable later.
    """

    def __init__(self, connectome, params: LIFParams | None = None, *, engine: str = "auto",
                 device: str = "auto", threads: int = 0, parallel: str = "auto"):
        from kairo.connectome import Connectome

        w = connectome.weights if isinstance(connectome, Connectome) else connectome
        if not sp.issparse(w):
            w = np.asarray(w)
            if w.ndim != 2:
                raise KairoError(f"LIF weights must be a square matrix, got shape {w.shape}")
        if w.shape[0] != w.shape[1]:
            raise KairoError(f"LIF weights must be square, got shape {w.shape}")
        w = sp.csr_matrix(w, dtype=np.float64)
        if not np.all(np.isfinite(w.data)):
            raise KairoError("LIF weights contain NaN or infinite values")
        if engine not in SPIKING_ENGINES:
            raise KairoError(f"unknown engine {engine!r}; expected one of "
                             f"{', '.join(SPIKING_ENGINES)}")
        self.params = params if params is not None else LIFParams()
        if not isinstance(self.params, LIFParams):
            raise KairoError(f"params must be a LIFParams, got {type(params).__name__}")
        w.sort_indices()
        self.weights = w * self.params.w_syn          # mV added to g per presynaptic spike
        self.n_neurons = w.shape[0]
        self.engine, self.device = _resolve(engine, device)
        self.threads = threads
        self.parallel = parallel
        self._csr = None                              # the kernel's arrays, made on first use

    @property
    def threads(self) -> int:
        """CPU threads of the numba engine as set (0: every core this process may use)."""
        return self._threads

    @threads.setter
    def threads(self, value) -> None:
        self._threads = check_threads(value)

    @property
    def parallel(self) -> str:
        """How several trials use the threads: "auto", "trials" or "neurons"."""
        return self._parallel

    @parallel.setter
    def parallel(self, value) -> None:
        if value not in _PARALLEL_MODES:
            raise KairoError(f"parallel: expected one of {', '.join(_PARALLEL_MODES)}, got "
                             f"{value!r}")
        self._parallel = value

    def _n_threads(self) -> int:
        if self._threads:
            return self._threads
        try:
            return len(os.sched_getaffinity(0))
        except AttributeError:                        # not on Linux
            return os.cpu_count() or 1

    # ----------------------------------------------------------------- inputs
    def _positions(self, idx, name: str) -> np.ndarray:
        idx = np.asarray(idx)
        if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
            raise KairoError(f"{name}: expected a 1-D array of neuron positions, got "
                             f"shape {idx.shape} and dtype {idx.dtype}")
        if idx.size and (idx.min() < 0 or idx.max() >= self.n_neurons):
            raise KairoError(f"{name}: positions must be in [0, {self.n_neurons}), got "
                             f"{int(idx.min())}…{int(idx.max())}")
        return idx.astype(np.int64)

    @staticmethod
    def _events(k0: int, n: int, sources) -> tuple[np.ndarray, np.ndarray]:
        """One trial's input spikes in steps k0 … k0+n−1 from its sources, as CSR over
        steps (ptr, neurons), the neurons of each step in ascending order."""
        parts = [src.chunk(k0, n) for src in sources]
        ks = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        js = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
        return _by_step(ks.astype(np.int64), js.astype(np.int64), n)

    # ----------------------------------------------------------------- run
    def run(self, duration_ms: float, *, input_neurons=None, rate_hz=0.0, input_spikes=None,
            trials: int = 1, seed=None, progress: bool = False) -> SpikeTrains:
        """Simulate ``duration_ms`` from rest, ``trials`` independent trials.

        Parameters
        ----------
        input_neurons : int array, optional
            Positions driven by Poisson spike trains of ``rate_hz`` (a number, or one per
            input neuron); each trial draws its own trains from ``seed``.
        input_spikes : (times_ms, neurons), optional
            A given input spike train (the same in every trial), e.g. to compare with another
            simulator.
        """
        p = self.params
        try:
            duration_ms = float(duration_ms)
        except (TypeError, ValueError) as exc:
            raise KairoError(f"duration_ms must be a number, got {duration_ms!r}") from exc
        if not duration_ms > 0:
            raise KairoError(f"duration_ms must be > 0, got {duration_ms}")
        if int(trials) < 1:
            raise KairoError(f"trials must be ≥ 1, got {trials}")
        trials = int(trials)
        n_steps = p.steps(duration_ms)
        if n_steps < 1:
            raise KairoError(f"duration_ms {duration_ms} is shorter than one step "
                             f"(dt = {p.dt} ms)")
        ref = np.full(self.n_neurons, p.steps(p.refractory), np.int64)
        poisson = None
        if input_neurons is not None:
            idx = self._positions(input_neurons, "input_neurons")
            rate = np.broadcast_to(np.asarray(rate_hz, dtype=np.float64), idx.shape) \
                if np.ndim(rate_hz) == 0 or np.shape(rate_hz) == idx.shape else None
            if rate is None:
                raise KairoError(f"rate_hz: expected a number or one rate per input neuron "
                                 f"({idx.size}), got shape {np.shape(rate_hz)}")
            if not np.all(np.isfinite(rate)) or (rate < 0).any():
                raise KairoError(f"rate_hz: rates must be finite and ≥ 0 Hz, got "
                                 f"{rate.min() if rate.size else rate}")
            prob = rate * p.dt / 1000.0
            if (prob > 1).any():
                raise KairoError(f"rate_hz: {rate.max()} Hz exceeds one spike per step "
                                 f"(dt = {p.dt} ms allows at most {1000 / p.dt:g} Hz)")
            poisson = (idx, prob)
            ref[idx] = p.steps(p.input_refractory)
        given = None
        if input_spikes is not None:
            try:
                times, neurons = input_spikes
            except (TypeError, ValueError) as exc:
                raise KairoError("input_spikes: expected a pair (times_ms, neurons)") from exc
            times = np.asarray(times, dtype=np.float64)
            neurons = self._positions(neurons, "input_spikes neurons")
            if times.shape != neurons.shape:
                raise KairoError(f"input_spikes: {times.size} times but {neurons.size} "
                                 f"neurons")
            if times.size and (not np.all(np.isfinite(times)) or times.min() < 0
                               or times.max() >= duration_ms):
                raise KairoError(f"input_spikes: times must lie in [0, {duration_ms}) ms")
            steps = ((times + 1e-3 * p.dt) / p.dt).astype(np.int64)
            if steps.size and steps.max() >= n_steps:    # within 10⁻³ dt of the end
                raise KairoError(f"input_spikes: times must lie in [0, {duration_ms}) ms; "
                                 f"{times.max()} ms falls on step {steps.max()} of {n_steps}")
            given = (steps, neurons)
            ref[np.unique(neurons)] = p.steps(p.input_refractory)
        rng = [np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(trials)]
        sources = [([_Poisson(*poisson, r)] if poisson is not None else [])
                   + ([_Given(*given)] if given is not None else []) for r in rng]
        run = self._run_numba if self.engine == "numba" else self._run_torch
        trial, step, neuron = run(n_steps, trials, ref, sources, progress)
        return SpikeTrains(trial, step, neuron, self.n_neurons, trials, n_steps, p.dt)

    def _chunks(self, n_steps: int, progress: bool):
        from kairo._progress import progress as bar

        starts = range(0, n_steps, _CHUNK)
        return bar(starts, desc="LIF", unit="chunk") if progress else starts

    def _numba_state(self) -> tuple:
        """One trial's state at rest: v, g, first free step, the spikes of the last
        ``delay`` steps (their events not yet delivered) and their counts."""
        p, n = self.params, self.n_neurons
        d = p.delay_steps
        return (np.full(n, p.v_rest), np.zeros(n), np.zeros(n, np.int64),
                np.zeros((d, n), np.int32), np.zeros(d, np.int64))

    def _blocks(self) -> tuple[int, int]:
        """The kernel's blocks: log2 of their size, and how many."""
        n = self.n_neurons
        shift = _BLOCK_SHIFT if n > _ONE_BLOCK else max(n - 1, 1).bit_length()
        return shift, (n + (1 << shift) - 1) >> shift

    def _numba_advance(self, state, ref, k0: int, m: int, ev_ptr, ev_idx, threads=None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Steps k0 … k0+m−1 of one trial (state updated in place) on ``threads`` threads
        (default: the network's); its spikes."""
        p = self.params
        if self._csr is None:
            w = self.weights
            # 32-bit targets (the history holds 32-bit neurons anyway): half the bytes that
            # delivering an event reads, and no 64-bit copy of a big graph's indices
            self._csr = (w.indptr.astype(np.int64), w.indices.astype(np.int32, copy=False),
                         w.data, *p.propagator())
        indptr, indices, data, a_m, a_s, c = self._csr
        v, g, until, hist, hcount = state
        n = self.n_neurons
        # room for two windows of spikes of every neuron, so that windows stay full length
        cap = max(2 * p.delay_steps * n, 1 << 16)
        shift, n_blocks = self._blocks()
        threads = max(1, min(self._n_threads() if threads is None else threads,
                             n_blocks // _MIN_BLOCKS))
        team = threads > 1 and _PARALLEL.acquire(blocking=False)
        parts = min(threads * _PARTS_PER_THREAD, n_blocks // _MIN_BLOCKS) if team else 1
        bounds = (np.arange(parts + 1) * n_blocks) // parts
        out_step, out_neuron = np.empty(cap, np.int64), np.empty(cap, np.int64)
        steps, neurons = [], []
        try:
            kernel = partial(_advance_threads, _team(threads)) if team else _advance
            k = 0
            while k < m:                      # the kernel stops when its buffer may fill
                done, n_out = kernel(k0 + k, m - k, v, g, until, hist, hcount, ref, indptr,
                                     indices, data, ev_ptr[k:], ev_idx, p.v_rest, p.v_reset,
                                     p.v_threshold, a_m, a_s, c, p.input_weight, shift,
                                     bounds, out_step, out_neuron)
                steps.append(out_step[:n_out].copy())
                neurons.append(out_neuron[:n_out].copy())
                k += done
        finally:
            if team:
                _PARALLEL.release()
        return np.concatenate(steps), np.concatenate(neurons)

    def _run_numba(self, n_steps, trials, ref, sources, progress):
        from concurrent.futures import ThreadPoolExecutor

        state = [self._numba_state() for _ in range(trials)]
        parts: list[list] = [[] for _ in range(trials)]
        threads = self._n_threads()
        splits = self._blocks()[1] >= 2 * _MIN_BLOCKS      # one trial can use two threads
        side_by_side = trials > 1 and threads > 1 and (
            self.parallel == "trials" if self.parallel != "auto" else
            _trials_side_by_side(trials, threads, splits))

        def trial_chunk(t: int, k0: int, m: int) -> None:
            ev_ptr, ev_idx = self._events(k0, m, sources[t])
            parts[t].append(self._numba_advance(state[t], ref, k0, m, ev_ptr, ev_idx,
                                                threads=1 if side_by_side else threads))

        if not side_by_side:                          # one trial after another, all threads
            for k0 in self._chunks(n_steps, progress):
                m = min(_CHUNK, n_steps - k0)
                for t in range(trials):
                    trial_chunk(t, k0, m)
            return _concat(parts)
        with ThreadPoolExecutor(min(trials, threads)) as ex:    # the kernel releases the GIL
            for k0 in self._chunks(n_steps, progress):
                m = min(_CHUNK, n_steps - k0)
                list(ex.map(lambda t: trial_chunk(t, k0, m), range(trials)))
        return _concat(parts)

    def _run_torch(self, n_steps, trials, ref, sources, progress):
        import torch

        p = self.params
        n = self.n_neurons
        dev = torch.device(self.device)
        f64 = torch.float64
        a_m, a_s, c = p.propagator()
        wt = self.weights.T.tocsr()                        # post × pre: input = W_postpre @ spk
        with warnings.catch_warnings():   # "sparse CSR support is in beta" is noise here
            warnings.simplefilter("ignore", UserWarning)
            w = torch.sparse_csr_tensor(torch.from_numpy(wt.indptr.astype(np.int64)),
                                        torch.from_numpy(wt.indices.astype(np.int64)),
                                        torch.from_numpy(wt.data), size=wt.shape, dtype=f64,
                                        device=dev)
        v = torch.full((trials, n), p.v_rest, dtype=f64, device=dev)
        g = torch.zeros((trials, n), dtype=f64, device=dev)
        last = torch.full((trials, n), -(1 << 40), dtype=torch.int64, device=dev)
        refs = torch.from_numpy(ref).to(dev)
        d = p.delay_steps
        ring = torch.zeros((d, trials, n), dtype=f64, device=dev)
        w_in = torch.tensor(p.input_weight, dtype=f64, device=dev)
        zero = torch.zeros((), dtype=f64, device=dev)
        out = []
        for k0 in self._chunks(n_steps, progress):
            m = min(_CHUNK, n_steps - k0)
            # the chunk's input spikes as (trial, neuron) lists per step, not a dense
            # (steps, trials, neurons) array (GBs on an adult-size graph)
            ks, ts, ns = [], [], []
            for t in range(trials):
                ev_ptr, ev_idx = self._events(k0, m, sources[t])
                ks.append(np.repeat(np.arange(m), np.diff(ev_ptr)))
                ts.append(np.full(ev_idx.size, t))
                ns.append(ev_idx)
            ks = np.concatenate(ks)
            order = np.argsort(ks, kind="stable")
            ptr = np.searchsorted(ks[order], np.arange(m + 1))
            ev_t = torch.from_numpy(np.concatenate(ts)[order]).to(dev)
            ev_n = torch.from_numpy(np.concatenate(ns)[order]).to(dev)
            for k in range(m):
                s = k0 + k
                free = (s - last) >= refs
                v = torch.where(free, p.v_rest + a_m * (v - p.v_rest) + c * g, v)
                g = torch.where(free, a_s * g, g)
                spk = free & (v > p.v_threshold)
                last = torch.where(spk, s, last)
                slot = s % d
                free = free & ~spk
                g = torch.where(free, g + ring[slot], g)
                if ptr[k + 1] > ptr[k]:
                    ti, ni = ev_t[ptr[k]:ptr[k + 1]], ev_n[ptr[k]:ptr[k + 1]]
                    add = torch.where(free[ti, ni], w_in, zero)
                    v = v.index_put((ti, ni), add, accumulate=True)
                v = torch.where(spk, p.v_reset, v)
                g = torch.where(spk, 0.0, g)
                ring[slot] = (w @ spk.T.to(f64)).T
                hit = spk.nonzero()
                if hit.numel():
                    out.append(torch.cat([hit[:, :1], torch.full_like(hit[:, :1], s),
                                          hit[:, 1:]], 1).cpu())
        if not out:
            z = np.zeros(0, np.int64)
            return z, z.copy(), z.copy()
        a = torch.cat(out).numpy()
        order = np.lexsort((a[:, 2], a[:, 1], a[:, 0]))
        a = a[order]
        return a[:, 0].copy(), a[:, 1].copy(), a[:, 2].copy()


def _concat(parts) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    trial, step, neuron = [], [], []
    for t, chunks in enumerate(parts):
        for s, i in chunks:
            trial.append(np.full(s.size, t, np.int64))
            step.append(s)
            neuron.append(i)
    if not step:
        z = np.zeros(0, np.int64)
        return z, z.copy(), z.copy()
    return np.concatenate(trial), np.concatenate(step), np.concatenate(neuron)


def _trials_side_by_side(trials: int, threads: int, splits: bool) -> bool:
    """``parallel="auto"``: several trials side by side, one thread each (no synchronisation
    between threads), rather than one after another on all threads (benchmarks/lif_adult.py
    measures both), which only a graph of several blocks (``splits``) can use."""
    return trials >= threads or not splits


def _resolve(engine: str, device: str) -> tuple[str, str]:
    if engine == "numba" and device not in ("auto", "cpu"):
        raise KairoError(f"device {device!r} needs engine torch (numba runs on the CPU)")
    if engine == "numba":
        return "numba", "cpu"
    import torch

    cuda = torch.cuda.is_available()
    if engine == "auto":
        if device == "cpu" or not cuda:
            return "numba", "cpu"
        return "torch", "cuda" if device == "auto" else device
    dev = ("cuda" if cuda else "cpu") if device == "auto" else device
    if dev.startswith("cuda") and not cuda:
        raise KairoError("device cuda requested but CUDA is not available")
    return "torch", dev
