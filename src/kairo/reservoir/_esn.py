r"""The reservoir engine: a leaky echo-state network (or linear network) on a connectome.

Update rule, for one input stream, with the state as a row vector over neurons:

.. math::

    x(t) = (1 - a)\,x(t-1) + a\,f\big(x(t-1)\,W + u(t)\,W_{in} + b\big)

``W`` is the connectome (pre → post, so ``x @ W`` is what each neuron receives), ``W_in`` has
non-zero columns only for the input neurons, ``a`` is the leak rate, ``b`` the bias and ``f``
is ``tanh`` or the identity. Many independent streams run as one batch: the state matrix is
``(n_neurons, n_streams)`` and each step is one sparse × dense product.

Three engines compute it. ``scipy`` steps in Python with SciPy's CSR product; ``torch`` with
torch's (on the CPU or a GPU); ``numba`` runs whole chunks of steps in compiled kernels
(:mod:`kairo.reservoir._esn_kernels`) that do the product, the input, the bias, ``tanh`` and the
leak in one pass over the neurons, with the states of a block of streams stored
``[neuron, stream]`` in whole vectors, and for one stream a sliced (SELL) matrix that runs 8
or 16 rows at once. Independent blocks of streams run on threads of their own.

``engine="auto"`` was chosen by measurement (``benchmarks/reservoir_speed.py``, results in
``benchmarks/results/reservoir_speed.json``): on a CPU the numba engine is the fastest for one
stream and for batches, in float32 and float64, on the larval connectome and on an
adult-fly-sized graph, so auto takes it there if the configuration's vocabulary
(``ENGINES``) lists it (see :meth:`Reservoir.resolve_engine`); with CUDA available (and
``device`` not "cpu") auto takes torch.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from kairo._errors import KairoError
from kairo._progress import progress
from kairo.connectome import Connectome
from kairo.reservoir._config import ACTIVATIONS, DTYPES, ENGINES, INPUT_WEIGHTS

__all__ = ["Reservoir", "draw_input_weights", "ACTIVATIONS", "ENGINES", "INPUT_WEIGHTS"]

_TORCH_MIN_STREAMS = 8
_TORCH_MIN_NNZ = 5_000_000
_NUMBA_MAX_VECTORS = 4          # vectors of streams per block (the kernels' widest row)
_NUMBA_SLICE_STEPS = 50         # steps a thread runs of a block before it may take another


def _torch():
    import torch  # imported lazily: the SciPy path must not pay for it

    return torch


def _kernels():
    from kairo.reservoir import _esn_kernels  # imported lazily: compiling costs seconds

    return _esn_kernels


def _engines() -> tuple[str, ...]:
    """The engines a Reservoir can be asked for: the configuration's vocabulary (what the
    command line offers) and numba, which this module implements whether or not it lists it."""
    return tuple(dict.fromkeys((*ENGINES, "numba")))


# ------------------------------------------------------------------------------- threads
_POOL: list = []
_POOL_LOCK = threading.Lock()


def _all_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                        # not on Linux
        return os.cpu_count() or 1


def _executor(n_workers: int) -> ThreadPoolExecutor:
    with _POOL_LOCK:
        if not _POOL or _POOL[0][0] < n_workers:
            if _POOL:
                _POOL.pop()[1].shutdown(wait=False)
            _POOL.append((n_workers, ThreadPoolExecutor(n_workers,
                                                        thread_name_prefix="kairo-esn")))
        return _POOL[0][1]


def _run_blocks(run, n_blocks: int, n_steps: int, n_threads: int, slice_steps: int) -> None:
    """run(block, start, stop) for every block over steps start … stop − 1 of the chunk, on
    up to ``n_threads`` threads, the caller included.

    With one thread each block runs the whole chunk in one call. With more, the chunk is cut
    into slices of ``slice_steps``: a thread takes the next slice of any block that no thread
    is running, so a block's slices still run in order, and a thread the OS schedules late
    (the cores are shared) holds up at most the slice it runs while the others carry on
    with every other block; the caller returns once every slice is done.
    """
    n_threads = min(n_threads, n_blocks)
    if n_threads <= 1:
        for blk in range(n_blocks):
            run(blk, 0, n_steps)
        return
    n_slices = -(-n_steps // slice_steps)
    done_slices = [0] * n_blocks
    busy = [False] * n_blocks
    left = [n_blocks * n_slices]
    errors: list = []
    cond = threading.Condition()

    def work():
        while True:
            with cond:
                while True:
                    if errors or not left[0]:
                        return
                    blk = next((b for b in range(n_blocks)
                                if not busy[b] and done_slices[b] < n_slices), None)
                    if blk is not None:
                        break
                    cond.wait()
                busy[blk] = True
                start = done_slices[blk] * slice_steps
            try:
                run(blk, start, min(start + slice_steps, n_steps))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                with cond:
                    errors.append(exc)
                    cond.notify_all()
                return
            with cond:
                busy[blk] = False
                done_slices[blk] += 1
                left[0] -= 1
                cond.notify_all()

    ex = _executor(n_threads - 1)
    for _ in range(n_threads - 1):
        ex.submit(work)
    work()
    with cond:
        while left[0] and not errors:
            cond.wait()
    if errors:
        raise errors[0]


def _aligned_zeros(size: int, dtype) -> np.ndarray:
    """A zero vector whose data starts on a 64-byte boundary, so no vector load of the
    kernels straddles two cache lines."""
    dtype = np.dtype(dtype)
    buf = np.zeros(size * dtype.itemsize + 64, np.uint8)
    start = (-buf.ctypes.data) % 64
    return buf[start:start + size * dtype.itemsize].view(dtype)


def _pow2_at_least(k: int) -> int:
    return 1 << max(0, int(k) - 1).bit_length()


def _pow2_at_most(k: int) -> int:
    return 1 << (max(1, int(k)).bit_length() - 1)


def _numba_blocks(n_streams: int, lanes: int, n_threads: int) -> list[tuple[int, int, int]]:
    """How the numba engine cuts ``n_streams`` into blocks: ``(first, count, vectors)``.

    A block is 1, 2 or 4 vectors of ``lanes`` streams. On one thread, blocks as wide as 4
    vectors: a wider block reads the matrix once for more streams (2 vectors cost 0.8 of 2 ×
    1 vector on the larval connectome), and 4 is the widest whose states stay near a core's
    L2. With several threads, the widest blocks that still give every thread one.
    """
    n_vec = -(-n_streams // lanes)
    if n_threads > 1 and n_vec > 1:
        per = min(_NUMBA_MAX_VECTORS, _pow2_at_most(n_vec // min(n_threads, n_vec)))
    else:
        per = min(_NUMBA_MAX_VECTORS, _pow2_at_least(n_vec))
    blocks, first = [], 0
    while first < n_streams:
        left = -(-(n_streams - first) // lanes)
        v = min(per, _pow2_at_least(left))
        count = min(v * lanes, n_streams - first)
        blocks.append((first, count, v))
        first += count
    return blocks


class _NumbaState:
    """The numba engine's states between chunks: per block of streams two flat
    ``[neuron, lane]`` buffers (one is read, the other written, each step), or for one
    stream the SELL-ordered pair."""

    def __init__(self, res: "Reservoir", x: np.ndarray):
        n, b = x.shape
        k = _kernels()
        self.lanes = k.lanes(res.dtype)
        self.single = b == 1
        if self.single:
            *_, order, _, _, n_pad = res._numba_single()
            self.buf = [_aligned_zeros(n_pad, res.dtype), _aligned_zeros(n_pad, res.dtype)]
            self.buf[0][:n] = x[order, 0]
            self.dvec = _aligned_zeros(n_pad, res.dtype)
            self.order = order
            return
        self.blocks = []
        for first, count, nvec in _numba_blocks(b, self.lanes, res._n_threads()):
            w = nvec * self.lanes
            cur = _aligned_zeros(n * w, res.dtype)
            cur.reshape(n, w)[:, :count] = x[:, first:first + count]
            self.blocks.append([first, count, nvec, cur, _aligned_zeros(n * w, res.dtype)])
        last = self.blocks[-1]
        self.width = last[0] + last[2] * self.lanes        # streams incl. the last padding
        self.n = n

    def full(self) -> np.ndarray:
        """The states as (n_neurons, n_streams)."""
        if self.single:
            x = np.empty((self.order.size, 1), self.buf[0].dtype)
            x[self.order, 0] = self.buf[0][:self.order.size]
            return x
        parts = [blk[3].reshape(self.n, blk[2] * self.lanes)[:, :blk[1]] for blk in self.blocks]
        return np.concatenate(parts, axis=1)


def check_threads(value) -> int:
    """A CPU thread count as the engines take it: an integer ≥ 0, 0 meaning every core."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise KairoError(f"threads: expected an integer ≥ 0 (0: every core), got {value!r}")
    return int(value)


def draw_input_weights(kind, shape: tuple[int, int], gain: float,
                       rng: np.random.Generator) -> np.ndarray:
    """Input weights of shape (n_inputs, n_input_neurons): U(−1, 1), U(0, 1) or ones times
    ``gain`` for ``kind`` "uniform", "positive" or "constant"; an explicit array is checked
    and used as given."""
    if not isinstance(kind, str):
        win = np.asarray(kind, dtype=float)
        if win.shape != tuple(shape) or not np.all(np.isfinite(win)):
            raise KairoError(f"explicit input_weights must be a finite array of shape "
                             f"{tuple(shape)} (n_inputs, n_input_neurons), got {win.shape}")
        return win
    if kind not in INPUT_WEIGHTS:
        raise KairoError(f"unknown input_weights {kind!r}; expected one of "
                         f"{', '.join(INPUT_WEIGHTS)} or an array")
    win = {"uniform": lambda: rng.uniform(-1.0, 1.0, size=shape),
           "positive": lambda: rng.uniform(0.0, 1.0, size=shape),
           "constant": lambda: np.ones(shape)}[kind]()
    return gain * win


class Reservoir:
    """A fixed recurrent network whose weights are a connectome; only a readout is trained.

    Parameters
    ----------
    connectome : Connectome or sparse matrix, shape (n_neurons, n_neurons)
        Recurrent weights, pre → post (already normalized; see ``kairo.connectome.prepare``).
    input_neurons : int array
        Positions of the neurons that receive the input.
    readout_neurons : int array, optional
        Positions whose states are returned (default: all neurons).
    n_inputs : int
        Input channels.
    activation : {"tanh", "linear"}
    leak : float in (0, 1]
        Leak rate ``a``; 1 means no leak.
    input_gain : float
        Scale of the input weights.
    bias : float
        Constant added to every neuron's pre-activation.
    input_weights : {"uniform", "positive", "constant"} or array
        How ``W_in`` is initialised: U(−1, 1), U(0, 1) or all ones, times ``input_gain``; or
        an explicit array of shape (n_inputs, n_input_neurons), used as given.
    seed : int or numpy Generator
        Seeds the input weights.
    engine : {"auto", "scipy", "torch", "numba"}
        How each step is computed: SciPy's sparse product on the CPU, torch's (CPU or GPU),
        kairo's compiled CPU kernels (numba), or "auto" (see :meth:`resolve_engine`).
    dtype : {"float64", "float32"}
    device : str
        torch device of the torch engine: "auto" ("cuda" when available, else "cpu"), "cpu",
        "cuda" or any torch device name.
    threads : int
        CPU threads of the numba engine (0: every core this process may use). It runs
        independent blocks of streams on them, so the states do not depend on it.

    Attributes
    ----------
    input_weights_ : ndarray, shape (n_inputs, n_input_neurons)
        The drawn input weights (the initializer is the ``input_weights`` argument).
    """

    def __init__(self, connectome, *, input_neurons, readout_neurons=None, n_inputs: int = 1,
                 activation: str = "tanh", leak: float = 1.0, input_gain: float = 1.0,
                 bias: float = 0.0, input_weights: str = "uniform", seed=None,
                 engine: str = "auto", dtype: str = "float64", device: str = "auto",
                 threads: int = 0):
        w = connectome.weights if isinstance(connectome, Connectome) else connectome
        if not sp.issparse(w):
            w = sp.csr_matrix(np.asarray(w))
        if w.ndim != 2 or w.shape[0] != w.shape[1]:
            raise KairoError(f"reservoir weights must be square, got shape {w.shape}")
        n = w.shape[0]
        if not np.all(np.isfinite(w.data if sp.issparse(w) else w)):
            raise KairoError("reservoir weights contain NaN or infinite values")
        try:
            leak, input_gain, bias = float(leak), float(input_gain), float(bias)
        except (TypeError, ValueError) as exc:
            raise KairoError(f"leak, input_gain and bias must be numbers ({exc})") from exc
        if activation not in ACTIVATIONS:
            raise KairoError(f"unknown activation {activation!r}; expected one of "
                             f"{', '.join(ACTIVATIONS)}")
        if not (0.0 < leak <= 1.0):
            raise KairoError(f"leak must be in (0, 1], got {leak}")
        accepted = _engines()
        if engine not in accepted:
            raise KairoError(f"unknown engine {engine!r}; expected one of {', '.join(accepted)}")
        if dtype not in DTYPES:
            raise KairoError(f"dtype must be 'float64' or 'float32', got {dtype!r}")
        if int(n_inputs) < 1:
            raise KairoError(f"n_inputs must be ≥ 1, got {n_inputs}")
        self.input_neurons = self._positions(input_neurons, n, "input_neurons")
        self.readout_neurons = (np.arange(n) if readout_neurons is None else
                                self._positions(readout_neurons, n, "readout_neurons"))
        self.n_neurons = n
        self.n_inputs = int(n_inputs)
        self.activation = activation
        self.leak = float(leak)
        self.input_gain = float(input_gain)
        self.bias = float(bias)
        self.engine = engine
        self.dtype = np.dtype(dtype)
        self.device = device
        self.threads = threads
        self.input_weights_ = draw_input_weights(
            input_weights, (self.n_inputs, self.input_neurons.size), self.input_gain,
            np.random.default_rng(seed)).astype(self.dtype)
        # x @ W  ==  (Wᵀ @ xᵀ)ᵀ: keep Wᵀ in CSR so each step is one CSR × dense (n, B) product.
        self._wt = sp.csr_matrix(w.T, dtype=self.dtype)
        self._torch_cache: dict = {}
        self._numba_cache: dict = {}

    @staticmethod
    def _positions(idx, n: int, name: str) -> np.ndarray:
        idx = np.asarray(idx)
        if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
            raise KairoError(f"{name} must be a non-empty 1-D array of neuron positions")
        if idx.min() < 0 or idx.max() >= n:
            raise KairoError(f"{name} has positions outside 0..{n - 1}")
        if np.unique(idx).size != idx.size:
            raise KairoError(f"{name} lists a neuron more than once")
        return idx.astype(np.int64)

    @property
    def threads(self) -> int:
        """CPU threads of the numba engine as set (0: every core this process may use)."""
        return self._threads

    @threads.setter
    def threads(self, value) -> None:
        self._threads = check_threads(value)

    def _n_threads(self) -> int:
        return self._threads or _all_cores()

    @property
    def n_readout(self) -> int:
        return self.readout_neurons.size

    def resolve_engine(self, n_streams: int) -> str:
        """The engine a run with ``n_streams`` streams uses.

        "auto" takes torch when the run goes to a GPU (``device`` "cuda", or "auto" with CUDA
        available). On the CPU it takes numba if the configuration's vocabulary (``ENGINES``)
        lists it, so that a run records only an engine the command line can be asked for:
        measured (``benchmarks/reservoir_speed.py``, 2 cores) it is the fastest engine for one
        stream and for batches, in float32 and float64 — on the larval connectome 2.3×
        reservoirpy for one float64 stream (SciPy 1.05×, torch 0.7×) and 23× for 32 float32
        streams (torch 4.3×, SciPy 3.6×), and on a 50 M-synapse graph 1.2× SciPy for one
        stream and 1.1-1.3× torch for 8. Without it, torch for batches (≥ 8 streams) in
        float32 or on matrices of ≥ 5 M synapses, SciPy for the rest.
        """
        if self.engine != "auto":
            return self.engine
        if self.device == "cuda":            # asked for the GPU: refused there if none
            return "torch"
        try:
            if self.device == "auto" and _torch().cuda.is_available():
                return "torch"
        except ImportError:  # pragma: no cover - torch is a dependency
            pass
        if "numba" in ENGINES:
            return "numba"
        big = self._wt.nnz >= _TORCH_MIN_NNZ
        batched = n_streams >= _TORCH_MIN_STREAMS
        return "torch" if batched and (self.dtype == np.float32 or big) else "scipy"

    # ------------------------------------------------------------------ running
    def _check_inputs(self, u) -> tuple[np.ndarray, bool]:
        given = np.shape(u)
        try:
            u = np.asarray(u, dtype=float)
        except (TypeError, ValueError) as exc:
            raise KairoError(f"inputs must be a numeric array, got {type(u).__name__}") from exc
        single = u.ndim == 2
        if u.ndim == 1 and self.n_inputs == 1:
            u, single = u[:, None], True
        if single:
            u = u[:, None, :]
        if u.ndim != 3 or u.shape[2] != self.n_inputs:
            raise KairoError(f"inputs must have shape (n_steps, n_inputs={self.n_inputs}) or "
                             f"(n_steps, n_streams, n_inputs={self.n_inputs}); got {given}")
        if u.shape[0] == 0 or u.shape[1] == 0:
            raise KairoError(f"inputs must have at least one time step and one stream; got "
                             f"shape {given}")
        if not np.all(np.isfinite(u)):
            raise KairoError("inputs contain NaN or infinite values")
        return u.astype(self.dtype, copy=False), single

    def stream(self, u, x0=None, *, chunk: int = 1000, progress_bar: bool | None = None
               ) -> Iterator[tuple[int, np.ndarray]]:
        """Run on inputs ``u`` and yield ``(start, states)`` chunks without holding all states.

        ``u`` has shape (n_steps, n_inputs) or (n_steps, n_streams, n_inputs); each yielded
        ``states`` has shape (chunk_len, n_readout) or (chunk_len, n_streams, n_readout),
        the states *after* each input step. The final full state is in ``self.last_state_``,
        shape (n_streams, n_neurons).
        """
        u, single = self._check_inputs(u)
        n_steps, n_streams, _ = u.shape
        engine = self.resolve_engine(n_streams)
        if x0 is None:
            x = np.zeros((self.n_neurons, n_streams), dtype=self.dtype)
        else:
            x0 = np.asarray(x0, dtype=self.dtype)
            x0 = x0[None, :] if x0.ndim == 1 else x0
            if x0.shape != (n_streams, self.n_neurons):
                raise KairoError(f"x0 must have shape ({n_streams}, {self.n_neurons}), "
                                 f"got {x0.shape}")
            x = np.ascontiguousarray(x0.T)
        step = {"scipy": self._scipy_steps, "torch": self._torch_steps,
                "numba": self._numba_steps}[engine]
        starts = range(0, n_steps, chunk)
        bar = progress(starts, total=len(starts), desc="reservoir",
                       enabled=progress_bar if progress_bar is not None else
                       (None if n_steps * self.n_neurons * n_streams > 5e7 else False))
        state = x
        for s in bar:
            block = u[s:s + chunk]
            out, state = step(block, state)
            yield s, (out[:, 0, :] if single else out)
        if engine == "numba":
            state = state.full()
        self.last_state_ = np.asarray(state).T.copy() if engine != "torch" else \
            state.T.cpu().numpy().copy()

    def run(self, u, x0=None, *, washout: int = 0, progress_bar: bool | None = None
            ) -> np.ndarray:
        """All states for inputs ``u`` (see :meth:`stream`), dropping the first ``washout``."""
        parts = [s for _, s in self.stream(u, x0, progress_bar=progress_bar)]
        return np.concatenate(parts, axis=0)[washout:]

    def _drive(self, block: np.ndarray) -> np.ndarray:
        # (T, B, n_in) @ (n_in, n_inp_neurons) -> (T, n_inp_neurons, B)
        return np.ascontiguousarray(np.einsum("tbi,ij->tjb", block, self.input_weights_))

    def _scipy_steps(self, block: np.ndarray, x: np.ndarray):
        wt, a, inp, rd = self._wt, self.leak, self.input_neurons, self.readout_neurons
        drive = self._drive(block)
        out = np.empty((block.shape[0], block.shape[1], rd.size), dtype=self.dtype)
        tanh = self.activation == "tanh"
        read_all = rd.size == self.n_neurons
        for t in range(block.shape[0]):
            pre = wt @ x                                  # (n, B)
            pre[inp] += drive[t]
            if self.bias:
                pre += self.bias
            if tanh:
                np.tanh(pre, out=pre)
            if a != 1.0:                                  # x ← (1−a)x + a·f(·), in place
                pre *= a
                pre += (1.0 - a) * x
            x = pre
            out[t] = x.T if read_all else x[rd].T
        return out, x

    # ------------------------------------------------------------------ numba engine
    def _numba_batch(self):
        """Wᵀ as CSR with 16-bit column indices where they fit, and per neuron its column of
        the input weights (or −1)."""
        if "batch" not in self._numba_cache:
            wt = self._wt
            idx_t = np.uint16 if wt.shape[1] <= 2 ** 16 else np.uint32
            in_row = np.full(self.n_neurons, -1, np.int64)
            in_row[self.input_neurons] = np.arange(self.input_neurons.size)
            self._numba_cache["batch"] = (wt.indptr.astype(np.int64), wt.indices.astype(idx_t),
                                          np.ascontiguousarray(wt.data), in_row)
        return self._numba_cache["batch"]

    def _numba_single(self):
        """Wᵀ in SELL form with the neurons in its sorted order, the sorted positions of
        the input and readout neurons, and the state buffers' length."""
        if "single" not in self._numba_cache:
            k = _kernels()
            sl_ptr, sidx, sdata, order = k.sell(self._wt)
            pos = np.empty(self.n_neurons, np.int64)
            pos[order] = np.arange(self.n_neurons)
            n_pad = (sl_ptr.size - 1) * k.lanes(self.dtype) + k.lanes(self.dtype)
            self._numba_cache["single"] = (sl_ptr, sidx, sdata, order,
                                           pos[self.input_neurons], pos[self.readout_neurons],
                                           n_pad)
        return self._numba_cache["single"]

    def _numba_steps(self, block: np.ndarray, state):
        k = _kernels()
        if not isinstance(state, _NumbaState):
            state = _NumbaState(self, state)
        dt = self.dtype.type
        a = self.leak
        args = (dt(self.bias), dt(a), dt(1.0 - a), self.activation == "tanh", a != 1.0)
        n_t, n_streams = block.shape[0], block.shape[1]
        out = np.empty((n_t, n_streams, self.readout_neurons.size), dtype=self.dtype)
        win = np.ascontiguousarray(self.input_weights_, dtype=self.dtype)
        if state.single:
            sl_ptr, sidx, sdata, _, in_pos, rd_pos, _ = self._numba_single()
            x, xn = state.buf
            if k.single_steps(sl_ptr, sidx, sdata, in_pos, win,
                              np.ascontiguousarray(block[:, 0, :]), rd_pos, x, xn,
                              state.dvec, out, *args):
                state.buf.reverse()
            return out, state
        indptr, indices, data, in_row = self._numba_batch()
        # (T, n_inputs, streams) with zero streams up to the last block's padding
        u = np.zeros((n_t, self.n_inputs, state.width), dtype=self.dtype)
        u[:, :, :n_streams] = block.transpose(0, 2, 1)

        def run(p, start, stop):
            blk = state.blocks[p]
            first, count, nvec, x, xn = blk
            if k.batch_steps(indptr, indices, data, in_row, win, u[start:stop],
                             self.readout_neurons, x, xn, out[start:stop], first, count, nvec,
                             *args):
                blk[3], blk[4] = xn, x

        _run_blocks(run, len(state.blocks), n_t, self._n_threads(), _NUMBA_SLICE_STEPS)
        return out, state

    def resolve_device(self) -> str:
        """The torch device the torch engine runs on."""
        from kairo._device import resolve_device

        return resolve_device(self.device)

    def _torch_weights(self, device):
        torch = _torch()
        key = str(device)
        if key not in self._torch_cache:
            dt = torch.float64 if self.dtype == np.float64 else torch.float32
            wt = self._wt
            with warnings.catch_warnings():  # "sparse CSR support is in beta" is noise here
                warnings.simplefilter("ignore", UserWarning)
                wt_t = torch.sparse_csr_tensor(torch.from_numpy(wt.indptr.astype(np.int64)),
                                               torch.from_numpy(wt.indices.astype(np.int64)),
                                               torch.from_numpy(wt.data), size=wt.shape,
                                               dtype=dt, device=device)
            self._torch_cache[key] = (
                wt_t, torch.from_numpy(self.input_neurons).to(device),
                torch.from_numpy(self.readout_neurons).to(device), dt)
        return self._torch_cache[key]

    def _torch_steps(self, block: np.ndarray, x):
        torch = _torch()
        device = self.resolve_device()
        wt, inp, rd, dt = self._torch_weights(device)
        if isinstance(x, np.ndarray):
            x = torch.from_numpy(x).to(device=device, dtype=dt)
        drive = torch.from_numpy(self._drive(block)).to(device)
        out = torch.empty((block.shape[0], block.shape[1], rd.numel()), dtype=dt,
                          device=device)
        a = self.leak
        read_all = rd.numel() == self.n_neurons
        with torch.no_grad():
            for t in range(block.shape[0]):
                pre = torch.sparse.mm(wt, x)
                pre[inp] += drive[t]
                if self.bias:
                    pre += self.bias
                if self.activation == "tanh":
                    pre = torch.tanh_(pre)
                if a != 1.0:
                    pre.mul_(a).add_(x, alpha=1.0 - a)
                x = pre
                out[t] = x.T if read_all else x[rd].T
        return out.cpu().numpy(), x
