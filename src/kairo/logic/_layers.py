"""Differentiable logic-gate layers (Petersen et al., NeurIPS 2022) in PyTorch.

A neuron reads two fixed inputs a, b ∈ [0, 1] and holds 16 logits, one per Boolean function.
Training mixes the 16 relaxed gates with softmax weights p; because every relaxed gate is
affine in {1, a, b, ab} (see ``_gates``), the mixture is c₀ + c_a·a + c_b·b + c_ab·ab with
c = p @ COEFFS — four fused multiply-adds per neuron and sample instead of sixteen gates, and
autograd's backward is just as small. After training each neuron is fixed to its most likely
gate and the network is a Boolean circuit (``to_circuit``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from kairo._errors import ConfigError
from kairo.logic._commands import GATE_MODES, PAIRINGS
from kairo.logic._gates import COEFFS, N_GATES, PASS_A

__all__ = ["LogicDense", "GroupSum", "Binarize", "pairings", "PAIRINGS", "GATE_MODES"]




def pairings(n_in: int, n_out: int, kind: str, rng: np.random.Generator
             ) -> tuple[np.ndarray, np.ndarray]:
    """Input indices (a, b) for ``n_out`` neurons over ``n_in`` inputs, a ≠ b when n_in > 1.

    ``random``: independent uniform draws. ``unique``: inputs are dealt from shuffled decks
    so every input is used before any is used twice (all of them when 2·n_out ≥ n_in; a random
    subset when n_in > 2·n_out — allowed, unlike implementations that refuse it).
    """
    if n_in < 1 or n_out < 1:
        raise ConfigError(f"layer sizes must be ≥ 1, got in={n_in}, out={n_out}")
    if kind not in PAIRINGS:
        raise ConfigError(f"pairing must be one of {', '.join(PAIRINGS)}; got {kind!r}")
    if kind == "random":
        a = rng.integers(0, n_in, n_out)
        b = rng.integers(0, n_in, n_out)
    else:
        reps = -(-2 * n_out // n_in)
        deck = np.concatenate([rng.permutation(n_in) for _ in range(reps)])[:2 * n_out]
        a, b = deck[:n_out].copy(), deck[n_out:].copy()
    if n_in > 1:                                   # a gate reading one input twice is wasted
        same = np.flatnonzero(a == b)
        while same.size:
            b[same] = rng.integers(0, n_in, same.size)
            same = same[a[same] == b[same]]
    return a.astype(np.int64), b.astype(np.int64)


class LogicDense(nn.Module):
    """``n_out`` logic neurons, each reading two of ``n_in`` inputs (fixed at construction).

    Parameters
    ----------
    pairing : "random" or "unique" (see :func:`pairings`)
    residual_init : float
        If > 0, the logit of the pass-through gate A starts at this value and the others at 0
        (the convolutional paper's residual initialization: deep stacks start as identity).
        0 draws all logits from N(0, 1) as in the original paper.
    mode : "soft" (softmax mixture) or "gumbel" (Gumbel-softmax with a straight-through
        hard gate in the forward pass, so training sees the discrete circuit it will become).
    """

    def __init__(self, n_in: int, n_out: int, *, pairing: str = "unique",
                 residual_init: float = 0.0, mode: str = "soft", tau: float = 1.0,
                 seed: int | np.random.Generator = 0):
        super().__init__()
        if mode not in GATE_MODES:
            raise ConfigError(f"gate mode must be one of {', '.join(GATE_MODES)}; got {mode!r}")
        if tau <= 0:
            raise ConfigError(f"gumbel temperature must be > 0, got {tau}")
        rng = np.random.default_rng(seed)
        a, b = pairings(n_in, n_out, pairing, rng)
        self.n_in, self.n_out, self.mode, self.tau = n_in, n_out, mode, float(tau)
        self.register_buffer("ia", torch.from_numpy(a))
        self.register_buffer("ib", torch.from_numpy(b))
        self.register_buffer("coeffs", torch.tensor(COEFFS, dtype=torch.float32))
        g = torch.Generator().manual_seed(int(rng.integers(2**31)))
        if residual_init > 0:
            w = torch.zeros(n_out, N_GATES)
            w[:, PASS_A] = residual_init
        else:
            w = torch.randn(n_out, N_GATES, generator=g)
        self.weight = nn.Parameter(w)

    def extra_repr(self) -> str:
        return f"{self.n_in} → {self.n_out}, mode={self.mode}"

    def gate_probs(self) -> torch.Tensor:
        """(n_out, 16): the mixture used in training mode, one-hot in eval mode."""
        if not self.training:
            return nn.functional.one_hot(self.weight.argmax(1), N_GATES).to(self.weight.dtype)
        if self.mode == "gumbel":
            return nn.functional.gumbel_softmax(self.weight, tau=self.tau, hard=True)
        return torch.softmax(self.weight, dim=1)

    def ops(self) -> np.ndarray:
        """The discrete gate of every neuron (argmax of its logits)."""
        return self.weight.detach().argmax(1).cpu().numpy().astype(np.uint8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.gate_probs() @ self.coeffs.to(x.dtype)          # (n_out, 4)
        a, b = x[:, self.ia], x[:, self.ib]
        return c[:, 0] + c[:, 1] * a + c[:, 2] * b + c[:, 3] * (a * b)


class GroupSum(nn.Module):
    """Split the outputs into ``k`` equal groups; class score = group sum / τ."""

    def __init__(self, k: int, tau: float = 1.0):
        super().__init__()
        if k < 1 or tau <= 0:
            raise ConfigError(f"GroupSum needs k ≥ 1 and τ > 0, got k={k}, τ={tau}")
        self.k, self.tau = int(k), float(tau)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % self.k:
            raise ConfigError(f"class groups do not divide the outputs: {x.shape[-1]} outputs "
                              f"into {self.k} classes")
        return x.reshape(*x.shape[:-1], self.k, -1).sum(-1) / self.tau


class Binarize(nn.Module):
    """uint8 images → bits: one bit per pixel and threshold (``thresholds`` in 0…255).

    ``thresholds=(127,)`` is a fixed binarization; several thresholds are a thermometer code
    (bit t is pixel > thresholds[t]). Bits are ordered threshold-major: [t][pixel].
    """

    def __init__(self, thresholds=(127,)):
        super().__init__()
        t = np.asarray(thresholds, dtype=float).ravel()
        if t.size == 0 or np.any((t < 0) | (t > 255)) or np.any(np.diff(t) <= 0):
            raise ConfigError(f"thresholds must be increasing values in 0…255, got "
                              f"{list(thresholds)}")
        self.register_buffer("t", torch.tensor(t, dtype=torch.float32))

    @property
    def n_levels(self) -> int:
        return int(self.t.numel())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1).to(torch.float32)
        return (x[:, None, :] > self.t[None, :, None]).reshape(x.shape[0], -1).to(torch.float32)
