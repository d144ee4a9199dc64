"""The three replaceable parts between the world and the legs: sensing, brain, motor map.

None of them imports flygym: they map NumPy arrays to NumPy arrays, so they are unit-tested
without a physics engine and reused by the trial runner, the video and the live viewer.

Conventions (all in the fly's own left/right):

- odor readings are flygym's ``obs["odor_intensity"]``, shape (odor dims, 4) ordered
  left palp, right palp, left antenna, right antenna;
- the *contrast* is c = (I_L − I_R) / ((I_L + I_R)/2), positive when the left side smells more;
- an *action* is flygym's 2-D descending signal (left, right CPG amplitude) in [−0.5, 1.5];
  the left legs stepping harder than the right turns the fly to the right (clockwise).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairo._errors import ConfigError, KairoError, SelectionError
from kairo.connectome import Connectome
from kairo.fly._config import SENSING_MODES, WIRINGS
from kairo.reservoir import Reservoir

__all__ = ["ACTION_RANGE", "WIRINGS", "SENSING_MODES", "OdorSensing", "ConnectomeBrain",
           "SpikingBrain", "MotorMap", "odor_contrast"]

ACTION_RANGE = (-0.5, 1.5)          # HybridTurningController's action space


def odor_contrast(lr: np.ndarray) -> float:
    """(I_L − I_R) / mean(I_L, I_R); 0 when nothing is smelled."""
    m = 0.5 * (lr[0] + lr[1])
    return float((lr[0] - lr[1]) / m) if m > 0 else 0.0


@dataclass
class OdorSensing:
    """Odor readings → drive of the left and right sensory neuron groups.

    ``relative`` (default): drive_side = offset + gain · (I_side / Ī − 1) — the drive carries
    the left–right contrast and a tonic offset, and does not grow as the fly nears the source
    (x⁻² diffusion would otherwise saturate the network within a few mm). ``absolute``:
    drive_side = offset + gain · I_side.
    """

    gain: float = 20.0
    offset: float = 1.0
    mode: str = "relative"
    palp_antenna_weights: tuple[float, float] = (1.0, 9.0)   # as flygym's odor-taxis example
    odor_dim: int = 0

    def __post_init__(self):
        if self.mode not in SENSING_MODES:
            raise ConfigError(f"sensing mode must be one of {', '.join(SENSING_MODES)}; "
                              f"got {self.mode!r}")
        w = np.asarray(self.palp_antenna_weights, dtype=float)
        if w.shape != (2,) or np.any(w < 0) or w.sum() <= 0:
            raise ConfigError("palp_antenna_weights must be two non-negative numbers, not both 0;"
                              f" got {self.palp_antenna_weights!r}")
        for name in ("gain", "offset"):
            if not np.isfinite(getattr(self, name)):
                raise ConfigError(f"sensing {name} must be finite")

    def intensities(self, odor: np.ndarray) -> np.ndarray:
        """(I_L, I_R): palp and antenna readings averaged per side."""
        odor = np.asarray(odor, dtype=float)
        if odor.ndim != 2 or odor.shape[1] != 4 or not 0 <= self.odor_dim < odor.shape[0]:
            raise KairoError(f"odor readings must have shape (odor dims > {self.odor_dim}, 4) "
                             f"ordered L palp, R palp, L antenna, R antenna; got {odor.shape}")
        palp_l, palp_r, ant_l, ant_r = odor[self.odor_dim]
        wp, wa = self.palp_antenna_weights
        s = wp + wa
        return np.array([(wp * palp_l + wa * ant_l) / s, (wp * palp_r + wa * ant_r) / s])

    def drive(self, lr: np.ndarray) -> np.ndarray:
        """Drive (left group, right group) for side intensities ``lr``."""
        lr = np.asarray(lr, dtype=float)
        if self.mode == "relative":
            m = lr.mean()
            rel = lr / m - 1.0 if m > 0 else np.zeros(2)
            return self.offset + self.gain * rel
        return self.offset + self.gain * lr


def _check_groups(sensory, descending) -> None:
    for name, pair in (("sensory", sensory), ("descending", descending)):
        for side, idx in zip("LR", pair):
            if np.asarray(idx).size == 0:
                raise SelectionError(f"the {name} group for side {side} selects no neurons")


class ConnectomeBrain:
    """A connectome reservoir stepped ``steps`` times per decision with the current drive.

    The left and right sensory groups receive drive channel 0 and 1 (a neuron in both groups
    receives both); the outputs are the mean activity of each group over the decision's steps.
    ``reset`` settles the network under the tonic drive (equal on both sides) so a trial starts
    from steady state, not from a transient; the settled DN activity is the motor map's
    reference ``baseline``.
    """

    def __init__(self, connectome: Connectome, *, sensory: tuple[np.ndarray, np.ndarray],
                 descending: tuple[np.ndarray, np.ndarray], steps: int = 10,
                 leak: float = 1.0, activation: str = "tanh", bias: float = 0.0,
                 settle_steps: int = 200, label: str = "connectome"):
        _check_groups(sensory, descending)
        if int(steps) < 1:
            raise ConfigError(f"brain steps per decision must be ≥ 1, got {steps}")
        self.steps = int(steps)
        self.settle_steps = int(settle_steps)
        self.label = label
        sl, sr = (np.asarray(x, dtype=np.int64) for x in sensory)
        dl, dr = (np.asarray(x, dtype=np.int64) for x in descending)
        inputs = np.union1d(sl, sr)
        win = np.stack([np.isin(inputs, sl), np.isin(inputs, sr)]).astype(float)
        groups = [sl, sr, dl, dr]
        readout = np.unique(np.concatenate(groups))
        self._cols = [np.searchsorted(readout, g) for g in groups]
        self.reservoir = Reservoir(connectome, input_neurons=inputs, readout_neurons=readout,
                                   n_inputs=2, activation=activation, leak=leak, bias=bias,
                                   input_weights=win, engine="scipy")
        self.n_neurons = connectome.n_neurons
        self.state = np.zeros(self.n_neurons)
        self.baseline = np.zeros(2)

    def reset(self, tonic: float) -> np.ndarray:
        """Settle under equal drive ``tonic`` on both sides; returns the DN baseline (L, R)."""
        self.state = np.zeros(self.n_neurons)
        if self.settle_steps:
            u = np.full((self.settle_steps, 2), float(tonic))
            self.reservoir.run(u, self.state, progress_bar=False)
            self.state = self.reservoir.last_state_[0]
        out = self.step(np.full(2, float(tonic)))
        self.baseline = out[2:]
        return self.baseline

    def step(self, drive: np.ndarray) -> np.ndarray:
        """Run one decision interval; returns mean activity (sensory L, R, DN L, R)."""
        u = np.broadcast_to(np.asarray(drive, dtype=float), (self.steps, 2))
        states = self.reservoir.run(u, self.state, progress_bar=False)
        self.state = self.reservoir.last_state_[0]
        m = states.mean(axis=0)
        return np.array([m[c].mean() for c in self._cols])


class SpikingBrain:
    """The connectome as spiking neurons (:class:`kairo.reservoir.LIFNetwork`), the
    :class:`ConnectomeBrain` interface: during each decision interval the left and right
    sensory groups fire Poisson spikes at ``rate_per_drive`` × drive Hz; the outputs are each
    group's mean firing rate (Hz) over the interval, the descending rates low-pass filtered
    over decisions (time constant ``filter_ms``: a 20-ms interval holds a few spikes per
    neuron at most). ``reset`` starts from rest and settles under the tonic drive."""

    def __init__(self, network, *, sensory: tuple[np.ndarray, np.ndarray],
                 descending: tuple[np.ndarray, np.ndarray], interval_ms: float,
                 rate_per_drive: float = 100.0, filter_ms: float = 100.0,
                 settle_ms: float = 300.0, seed=0, label: str = "connectome"):
        _check_groups(sensory, descending)
        for name, v in (("interval_ms", interval_ms), ("filter_ms", filter_ms),
                        ("rate_per_drive", rate_per_drive)):
            if not (np.isfinite(v) and v > 0):
                raise ConfigError(f"{name} must be > 0, got {v}")
        self.network, self.label = network, label
        self.interval_ms, self.rate_per_drive = float(interval_ms), float(rate_per_drive)
        self.settle_ms, self.seed = float(settle_ms), seed
        self.keep = float(np.exp(-self.interval_ms / float(filter_ms)))
        sl, sr = (np.asarray(x, dtype=np.int64) for x in sensory)
        self.inputs = np.union1d(sl, sr)
        self._in_side = np.stack([np.isin(self.inputs, sl), np.isin(self.inputs, sr)]
                                 ).astype(float)                    # (2, n_inputs)
        self.groups = [sl, sr, *(np.asarray(x, dtype=np.int64) for x in descending)]
        self.baseline = np.zeros(2)
        self.session = None

    def _interval(self, drive: np.ndarray, ms: float) -> np.ndarray:
        rate = self.rate_per_drive * (np.asarray(drive, dtype=float) @ self._in_side)
        _, neurons = self.session.advance(ms, rate)
        counts = np.bincount(neurons, minlength=self.network.n_neurons)
        return np.array([counts[g].mean() / (ms / 1000.0) for g in self.groups])

    def reset(self, tonic: float) -> np.ndarray:
        """Start from rest, settle under equal drive ``tonic``; returns the DN baseline."""
        from kairo.reservoir import LIFSession

        self.session = LIFSession(self.network, self.inputs, seed=self.seed)
        drive = np.full(2, float(tonic))
        if self.settle_ms > 0:
            self._dn = self._interval(drive, self.settle_ms)[2:]
        else:
            self._dn = None
        out = self.step(drive)
        self.baseline = out[2:]
        return self.baseline

    def step(self, drive: np.ndarray) -> np.ndarray:
        """Run one decision interval; returns rates (sensory L, R, filtered DN L, R) in Hz."""
        r = self._interval(drive, self.interval_ms)
        dn = r[2:] if self._dn is None else self.keep * self._dn + (1 - self.keep) * r[2:]
        self._dn = dn
        return np.concatenate([r[:2], dn])


@dataclass
class MotorMap:
    """Left/right signal d → descending action, an affine map clipped to the action range.

    action = clip(base + gain · W · (d − d₀) / scale, −0.5, 1.5) with
    W = ½[[1, −1], [−1, 1]] for ``ipsilateral`` wiring (the left signal speeds the left legs,
    so more left activity turns the fly right) and W = ½[[−1, 1], [1, −1]] for ``crossed``
    (more left activity speeds the right legs and turns it left). d₀ is the reference
    (the brain's settled DN activity; 0 for a direct sensor signal) and ``scale`` its mean
    magnitude unless given, so the gain is in action units per relative change of activity.
    """

    gain: float = 20.0
    base: float = 1.0
    wiring: str = "ipsilateral"
    reference: tuple[float, float] = (0.0, 0.0)
    scale: float = 1.0

    def __post_init__(self):
        if self.wiring not in WIRINGS:
            raise ConfigError(f"wiring must be one of {', '.join(WIRINGS)}; got {self.wiring!r}")
        if not np.isfinite(self.gain) or not np.isfinite(self.base):
            raise ConfigError("motor gain and base must be finite")
        if not (np.isfinite(self.scale) and self.scale > 0):
            raise ConfigError(f"motor scale must be a positive number, got {self.scale}")

    @property
    def matrix(self) -> np.ndarray:
        w = 0.5 * np.array([[1.0, -1.0], [-1.0, 1.0]])
        return w if self.wiring == "ipsilateral" else -w

    def __call__(self, d: np.ndarray) -> np.ndarray:
        z = (np.asarray(d, dtype=float) - np.asarray(self.reference)) / self.scale
        return np.clip(self.base + self.gain * (self.matrix @ z), *ACTION_RANGE)
