"""MNIST-1D, generated locally: ten 1-D digit glyphs made hard to tell apart.

Follows the procedure of Greydanus (2020), "Scaling *down* deep learning" (arXiv:2011.14439):
each class has a hand-designed template of 12 points; a sample is its template padded at the end
with zeros, scaled at random, sheared (a random linear ramp added), shifted circularly,
corrupted by correlated (Gaussian-smoothed) noise and by i.i.d. noise, then linearly
interpolated to the final length. The templates and constants here are kairo's own, chosen so
that a linear model reaches well above chance (10 %) yet far below 100 %.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter1d

from kairo._errors import ConfigError

__all__ = ["make_mnist1d", "TEMPLATES", "N_TRAIN", "N_TEST"]

N_TRAIN, N_TEST = 4000, 1000          # the standard split sizes

# One 12-point glyph per digit (rows: digits 0-9).
TEMPLATES = np.array([
    [0.0, 0.6, 1.0, 1.0, 0.6, 0.0, -0.6, -1.0, -1.0, -0.6, 0.0, 0.0],      # 0: one full wave
    [0.0, 0.0, 0.0, 0.0, 0.0, 1.5, 1.5, 0.0, 0.0, 0.0, 0.0, 0.0],          # 1: a narrow spike
    [1.0, 0.8, 0.6, 0.4, 0.2, 0.0, -0.2, -0.4, -0.6, -0.8, -1.0, -1.0],    # 2: a falling ramp
    [0.3, 1.3, 1.3, 0.3, 0.3, 1.3, 1.3, 0.3, -0.2, -0.2, 0.3, 0.3],        # 3: two bumps
    [-1.0, -1.0, -1.0, -1.0, -1.0, -1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0],    # 4: a step up
    [-0.3, -1.3, -1.8, -1.3, -0.3, 0.2, 0.2, 0.2, -0.3, -0.3, -0.3, -0.3], # 5: a dip, a shelf
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0, -1.0, -0.8, -0.6, -0.4, -0.2, 0.0],     # 6: a sawtooth
    [1.2, 1.2, 1.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, -0.8, -0.8, -0.8],       # 7: high … low
    [0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, -1.0, 0.0, 1.0, 0.0, -1.0],       # 8: fast wiggle
    [-1.2, -0.8, -0.4, 0.0, 0.4, 0.8, 0.4, 0.0, -0.4, -0.8, -1.2, -1.2],   # 9: a triangle
])

# Augmentation strengths (amplitudes relative to a glyph's ±1 range).
_PAD = (36, 60)           # zeros appended after the glyph (inclusive range)
_SCALE = 0.4              # amplitude × (1 + U(−_SCALE, _SCALE))
_SHEAR = 0.75             # ramp from −s to +s over the padded series, s ~ U(−_SHEAR, _SHEAR)
_MAX_SHIFT = 48           # circular shift, uniform in 0…_MAX_SHIFT steps
_CORR_NOISE = 0.45        # white noise × this, then smoothed (σ = _CORR_SIGMA steps)
_CORR_SIGMA = 2.0
_IID_NOISE = 0.02


def _one(template: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    """One sample of ``length`` steps from a 12-point ``template``."""
    s = np.concatenate([template, np.zeros(rng.integers(_PAD[0], _PAD[1] + 1))])   # [L]
    n = s.size
    s = s * (1.0 + rng.uniform(-_SCALE, _SCALE))
    s = s + rng.uniform(-_SHEAR, _SHEAR) * np.linspace(-1.0, 1.0, n)
    s = np.roll(s, rng.integers(0, _MAX_SHIFT + 1))
    s = s + gaussian_filter1d(_CORR_NOISE * rng.standard_normal(n), _CORR_SIGMA, mode="wrap")
    s = s + _IID_NOISE * rng.standard_normal(n)
    return np.interp(np.linspace(0.0, n - 1.0, length), np.arange(n), s)            # [length]


def make_mnist1d(n: int, length: int = 40, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Generate ``n`` MNIST-1D series.

    Parameters
    ----------
    n : int
        Number of series (≥ 1). Classes are balanced (``n // 10`` or one more each), in a
        random order.
    length : int, default 40
        Steps per series after interpolation (≥ 12); e.g. 700 for a long-sequence variant.
    seed : int, default 0
        The same ``(n, length, seed)`` always gives the same arrays.

    Returns
    -------
    x : float32 array [n, 1, length]
    y : int64 array [n], digits 0-9
    """
    for name, value, low in (("n", n, 1), ("length", length, 12)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise ConfigError(f"make_mnist1d: {name} must be an integer ≥ {low}, got {value!r}")
    labels_seed, samples_seed = np.random.SeedSequence([int(seed), 1_000_001]).spawn(2)
    y = np.random.default_rng(labels_seed).permutation(np.arange(n) % 10).astype(np.int64)
    streams = samples_seed.spawn(n)                       # one independent stream per series
    x = np.empty((n, 1, length), dtype=np.float32)
    for i, (label, ss) in enumerate(zip(y, streams)):
        x[i, 0] = _one(TEMPLATES[label], length, np.random.default_rng(ss))
    return x, y
