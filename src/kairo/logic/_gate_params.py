"""How a gate layer's logits become gates: the 16-logit softmax (Petersen et al.) or the
light parametrization (4 logits per gate, one per truth-table entry; Light DLGN), their
initial values, and the relaxed one-hot each gives in training (see ``_layers``)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from kairo._errors import ConfigError
from kairo.logic._config import GATE_MODES
from kairo.logic._gates import N_GATES, PASS_A, TRUTH


def _check_mode(mode: str) -> str:
    if mode not in GATE_MODES:
        raise ConfigError(f"gate mode must be one of {', '.join(GATE_MODES)}; got {mode!r}")
    return mode


# TABLE_BITS[op, i]: entry i = 2a + b of gate op's truth table (the light parametrization)
TABLE_BITS = torch.tensor([[(int(t) >> i) & 1 for i in range(4)] for t in TRUTH],
                          dtype=torch.float32)
_OP_OF_TABLE = torch.zeros(16, dtype=torch.int64)
_OP_OF_TABLE[torch.from_numpy(TRUTH.astype(np.int64))] = torch.arange(N_GATES)


def _init_weight(shape: tuple, residual_init: float, rng: np.random.Generator,
                 param: str = "softmax") -> nn.Parameter:
    """Logits of ``shape`` gates: 16 per gate (softmax) or 4 (light: one per truth-table
    entry). ``residual_init`` > 0 starts every gate as the pass-through A by that margin."""
    g = torch.Generator().manual_seed(int(rng.integers(2**31)))
    width = 4 if param == "light" else N_GATES
    if residual_init > 0:
        w = torch.zeros(*shape, width)
        if param == "light":
            w[...] = (TABLE_BITS[PASS_A] * 2 - 1) * residual_init
        else:
            w[..., PASS_A] = residual_init
    else:
        w = torch.randn(*shape, width, generator=g)
    return nn.Parameter(w)


def _light_probs(w: torch.Tensor, temperature: float) -> torch.Tensor:
    """(..., 16) probabilities of the 16 gates, by op code, when entry i of the truth table is
    1 with probability sigmoid(w_i / temperature), independently (Light DLGN). Its mixture
    c = p @ COEFFS is the multilinear interpolation of the four entry probabilities."""
    t = w if temperature == 1.0 else w / temperature
    bits = TABLE_BITS.to(w.dtype)
    logp = nn.functional.logsigmoid(t) @ bits.T + nn.functional.logsigmoid(-t) @ (1 - bits).T
    return logp.exp()


def _relaxed(w: torch.Tensor, mode: str, temperature: float, tau: float) -> torch.Tensor:
    """A relaxed one-hot over the last axis of logits ``w``: softmax ("soft"), a
    straight-through Gumbel sample ("gumbel") or the straight-through argmax ("hard")."""
    t = w if temperature == 1.0 else w / temperature
    if mode == "gumbel":
        return nn.functional.gumbel_softmax(t, tau=tau, hard=True)
    soft = torch.softmax(t, dim=-1)
    if mode == "hard":                  # the discrete forward, softmax gradients back
        hard = nn.functional.one_hot(w.argmax(-1), w.shape[-1]).to(soft.dtype)
        return hard + soft - soft.detach()
    return soft
