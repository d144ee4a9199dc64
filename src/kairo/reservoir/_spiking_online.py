"""Spiking networks driven while they run: one trial of a :class:`LIFNetwork` that goes on
(numba engine), its input chosen step by step.

:class:`LIFSession` advances the trial by calls, each with its own Poisson rates (closed
loops: the embodied fly); :class:`SpikingReservoir` is a liquid state machine that reads a
reservoir task's input as rates and its readout neurons' spikes as states.
"""

from __future__ import annotations

import numpy as np

from kairo._errors import KairoError
from kairo.reservoir._config import STATES
from kairo.reservoir._esn import draw_input_weights
from kairo.reservoir._spiking import _CHUNK, LIFNetwork, _Poisson, _Varying

__all__ = ["LIFSession", "SpikingReservoir"]


# ---------------------------------------------------------------------------- sessions
class LIFSession:
    """One trial that goes on: the state persists between :meth:`advance` calls, each with
    its own Poisson rates for the input neurons (numba engine). For closed loops, where the
    next input depends on what the network just did (the embodied fly).
    """

    def __init__(self, network: LIFNetwork, input_neurons, *, seed=None):
        if not isinstance(network, LIFNetwork):
            raise KairoError(f"network must be a LIFNetwork, got {type(network).__name__}")
        p = network.params
        self.network = network
        self.input_neurons = network._positions(np.asarray(input_neurons), "input_neurons")
        self.ref = np.full(network.n_neurons, p.steps(p.refractory), np.int64)
        self.ref[self.input_neurons] = p.steps(p.input_refractory)
        self.state = network._numba_state()
        self.step = 0
        self._rng = np.random.default_rng(seed)

    def advance(self, duration_ms: float, rate_hz) -> tuple[np.ndarray, np.ndarray]:
        """Simulate ``duration_ms`` more with input rates ``rate_hz`` (a number or one per
        input neuron, clipped to [0, 1000 / dt]); the spikes as (steps, neurons)."""
        p = self.network.params
        m = p.steps(duration_ms)
        if m < 1:
            raise KairoError(f"duration_ms {duration_ms} is shorter than one step "
                             f"(dt = {p.dt} ms)")
        rate = np.broadcast_to(np.asarray(rate_hz, dtype=np.float64), self.input_neurons.shape)
        if not np.all(np.isfinite(rate)):
            raise KairoError("rate_hz must be finite")
        prob = np.clip(rate, 0.0, 1000.0 / p.dt) * (p.dt / 1000.0)
        src = _Poisson(self.input_neurons, prob, self._rng, start=self.step)
        steps, neurons = [], []
        for k0 in range(self.step, self.step + m, _CHUNK):
            n = min(_CHUNK, self.step + m - k0)
            ev_ptr, ev_idx = self.network._events(k0, n, [src])
            st, ne = self.network._numba_advance(self.state, self.ref, k0, n, ev_ptr, ev_idx)
            steps.append(st)
            neurons.append(ne)
        self.step += m
        return np.concatenate(steps), np.concatenate(neurons)


# ---------------------------------------------------------------------------- LSM
class SpikingReservoir:
    """A liquid state machine on a LIF network: the reservoir tasks and readouts of the rate
    units, unchanged, on spikes.

    Each task step lasts ``step_ms``. During it input neuron ``k`` fires Poisson spikes at
    ``clip(rate_hz + rate_gain · (u(t) W_in)_k, 0, 1000 / dt)`` Hz, ``W_in`` drawn like the
    rate reservoir's (U(−1, 1), U(0, 1) or 1, times ``input_gain``; an array is used as
    given). The state of a readout neuron at step t is its spike count during the step
    (``states="counts"``) or its spike train filtered by exp(−t / ``trace_tau_ms``) read at the step's end (``"trace"``).
    ``stream`` yields ``(start, states)`` chunks as :class:`Reservoir.stream` does, so
    :func:`kairo.reservoir.evaluate` trains and scores a readout on it as on rate units.
    One stream, on the numba engine (event-driven; the task is one long trial).
    """

    def __init__(self, network: LIFNetwork, *, input_neurons, readout_neurons=None,
                 n_inputs: int = 1, input_weights="uniform", input_gain: float = 1.0,
                 rate_hz: float = 100.0, rate_gain: float = 100.0, step_ms: float = 10.0,
                 states: str = "counts", trace_tau_ms: float = 20.0, seed=None):
        if not isinstance(network, LIFNetwork):
            raise KairoError(f"network must be a LIFNetwork, got {type(network).__name__}")
        self.network = network
        p = network.params
        self.input_neurons = network._positions(np.asarray(input_neurons), "input_neurons")
        self.readout_neurons = (np.arange(network.n_neurons) if readout_neurons is None else
                                network._positions(np.asarray(readout_neurons),
                                                   "readout_neurons"))
        if self.input_neurons.size == 0:
            raise KairoError("input_neurons: the input group selects no neuron")
        for name, v, ok, text in (("rate_hz", rate_hz, rate_hz >= 0, "≥ 0"),
                                  ("step_ms", step_ms, step_ms >= p.dt, f"≥ dt ({p.dt} ms)"),
                                  ("trace_tau_ms", trace_tau_ms, trace_tau_ms > 0, "> 0"),
                                  ("n_inputs", n_inputs, int(n_inputs) >= 1, "≥ 1")):
            if not ok or not np.isfinite(v):
                raise KairoError(f"{name} must be {text}, got {v}")
        if states not in STATES:
            raise KairoError(f"states must be one of {', '.join(STATES)}, got {states!r}")
        self.n_inputs = int(n_inputs)
        self.rate_hz, self.rate_gain = float(rate_hz), float(rate_gain)
        self.bin = p.steps(step_ms)
        self.step_ms = self.bin * p.dt
        self.states, self.trace_tau_ms = states, float(trace_tau_ms)
        self._rng = np.random.default_rng(seed)
        self.input_weights_ = draw_input_weights(
            input_weights, (self.n_inputs, self.input_neurons.size), float(input_gain),
            self._rng)
        self._poisson_rng = np.random.default_rng(self._rng.integers(2**63))

    @property
    def n_readout(self) -> int:
        return int(self.readout_neurons.size)

    def resolve_engine(self, n_streams: int = 1) -> str:
        return "numba"

    def rates(self, u) -> np.ndarray:
        """Input rates (Hz) per task step and input neuron, shape (T, n_input_neurons)."""
        u = np.asarray(u, dtype=np.float64)
        u = u[:, None] if u.ndim == 1 else u
        if u.ndim != 2 or u.shape[1] != self.n_inputs:
            raise KairoError(f"u must have shape (steps, {self.n_inputs}) (one stream), got "
                             f"{np.shape(u)}")
        if not np.all(np.isfinite(u)):
            raise KairoError("u contains NaN or infinite values")
        hi = 1000.0 / self.network.params.dt
        return np.clip(self.rate_hz + self.rate_gain * (u @ self.input_weights_), 0.0, hi)

    def stream(self, u, *, chunk: int = 50, progress_bar: bool | None = None):
        """Yield ``(start, states)`` for consecutive chunks of ``chunk`` task steps, from
        rest; states have shape (steps, n_readout)."""
        net, p = self.network, self.network.params
        rates = self.rates(u)
        ref = np.full(net.n_neurons, p.steps(p.refractory), np.int64)
        ref[self.input_neurons] = p.steps(p.input_refractory)
        state = net._numba_state()
        pos = np.full(net.n_neurons, -1, np.int64)
        pos[self.readout_neurons] = np.arange(self.n_readout)
        decay_bin = np.exp(-self.step_ms / self.trace_tau_ms)
        trace = np.zeros(self.n_readout)
        idx = self.input_neurons
        for s in range(0, rates.shape[0], chunk):
            r = rates[s:s + chunk]
            n_task = r.shape[0]
            m = n_task * self.bin
            k0 = s * self.bin
            prob = np.repeat(r, self.bin, axis=0) * (p.dt / 1000.0)
            ev_ptr, ev_idx = net._events(k0, m, [_Varying(idx, prob, self._poisson_rng)])
            steps, neurons = net._numba_advance(state, ref, k0, m, ev_ptr, ev_idx)
            keep = pos[neurons] >= 0
            col, local = pos[neurons[keep]], steps[keep] - k0
            b = local // self.bin
            out = np.zeros((n_task, self.n_readout))
            if self.states == "counts":
                np.add.at(out, (b, col), 1.0)
            else:
                # each spike's contribution at the end of its bin, then bins chained by decay
                age = ((b + 1) * self.bin - local) * p.dt
                np.add.at(out, (b, col), np.exp(-age / self.trace_tau_ms))
                for t in range(n_task):
                    trace = trace * decay_bin + out[t]
                    out[t] = trace
            yield s, out

    def run(self, u) -> np.ndarray:
        """All states at once, shape (T, n_readout)."""
        return np.concatenate([x for _, x in self.stream(u)])
