r"""The reservoir engine: a leaky echo-state network (or linear network) on a connectome.

Update rule, for one input stream, with the state as a row vector over neurons:

.. math::

    x(t) = (1 - a)\,x(t-1) + a\,f\big(x(t-1)\,W + u(t)\,W_{in} + b\big)

``W`` is the connectome (pre → post, so ``x @ W`` is what each neuron receives), ``W_in`` has
non-zero columns only for the input neurons, ``a`` is the leak rate, ``b`` the bias and ``f``
is ``tanh`` or the identity. Many independent streams run as one batch: the state matrix is
``(n_neurons, n_streams)`` and each step is one sparse × dense product.

Kernels were chosen by measurement (``benchmarks/reservoir_speed.py``, figures in
docs/benchmarks.md): on a CPU SciPy's sparse product wins for one stream and in float64, torch's
for batches in float32 and on adult-fly-sized graphs. So ``engine="auto"`` takes torch for
batches (≥ 8 streams) in float32 or on matrices of ≥ 5 M synapses, SciPy otherwise; with CUDA
available (and ``device`` not "cpu") it takes torch.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from kairo._errors import KairoError
from kairo._progress import progress
from kairo.connectome import Connectome
from kairo.reservoir._config import ACTIVATIONS, DTYPES, ENGINES, INPUT_WEIGHTS

__all__ = ["Reservoir", "draw_input_weights", "ACTIVATIONS", "ENGINES", "INPUT_WEIGHTS"]

_TORCH_MIN_STREAMS = 8
_TORCH_MIN_NNZ = 5_000_000


def _torch():
    import torch  # imported lazily: the SciPy path must not pay for it

    return torch


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
    engine : {"auto", "scipy", "torch"}
        How each step is computed: SciPy's sparse product on the CPU, torch's (CPU or GPU),
        or "auto" (see :meth:`resolve_engine`).
    dtype : {"float64", "float32"}
    device : str
        torch device of the torch engine: "auto" ("cuda" when available, else "cpu"), "cpu",
        "cuda" or any torch device name.

    Attributes
    ----------
    input_weights_ : ndarray, shape (n_inputs, n_input_neurons)
        The drawn input weights (the initializer is the ``input_weights`` argument).
    """

    def __init__(self, connectome, *, input_neurons, readout_neurons=None, n_inputs: int = 1,
                 activation: str = "tanh", leak: float = 1.0, input_gain: float = 1.0,
                 bias: float = 0.0, input_weights: str = "uniform", seed=None,
                 engine: str = "auto", dtype: str = "float64", device: str = "auto"):
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
        if engine not in ENGINES:
            raise KairoError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
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
        self.input_weights_ = draw_input_weights(
            input_weights, (self.n_inputs, self.input_neurons.size), self.input_gain,
            np.random.default_rng(seed)).astype(self.dtype)
        # x @ W  ==  (Wᵀ @ xᵀ)ᵀ: keep Wᵀ in CSR so each step is one CSR × dense (n, B) product.
        self._wt = sp.csr_matrix(w.T, dtype=self.dtype)
        self._torch_cache: dict = {}

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
    def n_readout(self) -> int:
        return self.readout_neurons.size

    def resolve_engine(self, n_streams: int) -> str:
        """The engine a run with ``n_streams`` streams uses."""
        if self.engine != "auto":
            return self.engine
        if self.device == "cuda":            # asked for the GPU: refused there if none
            return "torch"
        try:
            if self.device == "auto" and _torch().cuda.is_available():
                return "torch"
        except ImportError:  # pragma: no cover - torch is a dependency
            return "scipy"
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
        step = self._scipy_steps if engine == "scipy" else self._torch_steps
        starts = range(0, n_steps, chunk)
        bar = progress(starts, total=len(starts), desc="reservoir",
                       enabled=progress_bar if progress_bar is not None else
                       (None if n_steps * self.n_neurons * n_streams > 5e7 else False))
        state = x
        for s in bar:
            block = u[s:s + chunk]
            out, state = step(block, state)
            yield s, (out[:, 0, :] if single else out)
        self.last_state_ = np.asarray(state).T.copy() if engine == "scipy" else \
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
