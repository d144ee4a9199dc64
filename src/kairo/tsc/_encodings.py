"""Positional encodings: sinusoidal (Vaswani et al. 2017), learned, and rotary (RoPE, Su et al.).

With 0-based columns and frequencies ω_k = base^(−2k/d), k = 0 … d/2 − 1, the sinusoidal table is

    pe(pos)[2k] = sin(pos·ω_k),    pe(pos)[2k+1] = cos(pos·ω_k)

(the issue's 1-based pe(pos)[2i−1] = sin(pos/base^(2(i−1)/d)), pe(pos)[2i] = cos(…)). Each pair
is a point on a circle turning at speed ω_k, so shifting by φ positions is the rotation
pe(pos+φ) = M_φ pe(pos) with the block-diagonal M_φ of :func:`offset_rotation` — the same for every
pos, which is why a linear map of the encoding can attend by relative offset. RoPE applies that
rotation to queries and keys instead of adding a vector to the tokens.
"""

from __future__ import annotations

import torch
from torch import nn

from kairo._errors import ConfigError
from kairo.tsc._config import POSITIONALS  # noqa: F401  (re-exported)

__all__ = ["sinusoidal_table", "offset_rotation", "SinusoidalEncoding", "LearnedEncoding",
           "RotaryEmbedding", "make_positional", "encoding_figure", "POSITIONALS"]

DEFAULT_MAX_LEN = 4096


def _check_sinusoid(d: int, base: float, what: str = "sinusoidal encoding") -> None:
    if isinstance(d, bool) or not isinstance(d, int) or d < 2:
        raise ConfigError(f"d must be an even integer ≥ 2 for {what}, got {d!r}")
    if d % 2:
        raise ConfigError(f"d must be even for {what}, got {d}")
    if not base > 1:
        raise ConfigError(f"base must be > 1 for {what}, got {base}")


def _frequencies(d: int, base: float) -> torch.Tensor:
    """ω_k = base^(−2k/d), k = 0 … d/2 − 1, in float64: [d/2]."""
    return base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)


def sinusoidal_table(n_pos: int, d: int, base: float = 10000.0, *,
                     dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """The sinusoidal encodings of positions 0 … n_pos − 1: [n_pos, d].

    Column 2k is sin(pos·ω_k) and column 2k+1 is cos(pos·ω_k), ω_k = base^(−2k/d). Computed in
    float64 and cast to ``dtype``.
    """
    _check_sinusoid(d, base)
    if isinstance(n_pos, bool) or not isinstance(n_pos, int) or n_pos < 1:
        raise ConfigError(f"n_pos must be an integer ≥ 1, got {n_pos!r}")
    angle = torch.arange(n_pos, dtype=torch.float64)[:, None] * _frequencies(d, base)  # [P, d/2]
    table = torch.stack([angle.sin(), angle.cos()], dim=-1)                           # [P, d/2, 2]
    return table.reshape(n_pos, d).to(dtype)


def offset_rotation(phi: float, d: int, base: float = 10000.0, *,
                    dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """M_φ [d, d] with pe(pos + φ) = M_φ pe(pos) for every pos (φ may be negative or fractional).

    Block k (rows and columns 2k, 2k+1) is [[cos φω_k, sin φω_k], [−sin φω_k, cos φω_k]]: from
    sin(a+b) = sin a cos b + cos a sin b and cos(a+b) = cos a cos b − sin a sin b. M_φ is
    orthogonal and M_φ M_ψ = M_{φ+ψ}.
    """
    _check_sinusoid(d, base)
    a = float(phi) * _frequencies(d, base)                                            # [d/2]
    c, s = a.cos(), a.sin()
    blocks = torch.stack([torch.stack([c, s], -1), torch.stack([-s, c], -1)], -2)     # [d/2,2,2]
    return torch.block_diag(*blocks).to(dtype)


def _check_length(t: int, start: int, max_len: int, what: str) -> None:
    if start < 0 or start + t > max_len:
        raise ConfigError(f"{what}: positions {start}…{start + t - 1} exceed max_len={max_len}; "
                          f"build the model with a larger max_len (or use shorter sequences)")


class SinusoidalEncoding(nn.Module):
    """Adds the fixed sinusoidal table to tokens [B, T, D] (a buffer, not a parameter).

    ``forward(x, start=0)`` encodes positions start … start+T−1 (``start`` > 0 continues a
    sequence whose earlier tokens are held in a KV cache).
    """

    def __init__(self, d: int, max_len: int = DEFAULT_MAX_LEN, base: float = 10000.0,
                 dropout: float = 0.0, *, device=None, dtype=None):
        super().__init__()
        table = sinusoidal_table(max_len, d, base, dtype=dtype or torch.get_default_dtype())
        # not persistent: it is a function of (d, max_len, base), so checkpoints need not hold it
        self.register_buffer("table", table.to(device), persistent=False)
        self.d, self.max_len, self.base = d, max_len, base
        self.dropout = nn.Dropout(dropout)

    def extra_repr(self) -> str:
        return f"d={self.d}, max_len={self.max_len}, base={self.base:g}"

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        _check_length(x.shape[1], start, self.max_len, "sinusoidal encoding")
        return self.dropout(x + self.table[start:start + x.shape[1]].to(x.dtype))  # [B, T, D]


class LearnedEncoding(nn.Module):
    """Adds a learned vector per position to tokens [B, T, D]; initialised from N(0, 0.02²)."""

    def __init__(self, d: int, max_len: int = DEFAULT_MAX_LEN, *, device=None, dtype=None):
        super().__init__()
        if d < 1 or max_len < 1:
            raise ConfigError(f"learned encoding needs d ≥ 1 and max_len ≥ 1, got d={d}, "
                              f"max_len={max_len}")
        self.max_len = max_len
        self.weight = nn.Parameter(torch.empty(max_len, d, device=device, dtype=dtype))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        _check_length(x.shape[1], start, self.max_len, "learned encoding")
        return x + self.weight[start:start + x.shape[1]]                          # [B, T, D]


class RotaryEmbedding(nn.Module):
    """RoPE for queries and keys [B, H, T, head_dim] ("rotate-half" layout).

    Dimension j and j + head_dim/2 form pair j, turned by the angle pos·ω_j, ω_j =
    base^(−2j/head_dim). Because both q (at m) and k (at n) are rotated, ⟨rope(q, m), rope(k, n)⟩
    depends on m − n only. Pairing j with j + hd/2 rather than (2j, 2j+1) is the same function
    up to a fixed permutation of the projection weights, and avoids strided indexing.
    """

    def __init__(self, head_dim: int, base: float = 10000.0, max_len: int = DEFAULT_MAX_LEN,
                 *, device=None):
        super().__init__()
        _check_sinusoid(head_dim, base, "rotary embedding (head_dim)")
        if max_len < 1:
            raise ConfigError(f"max_len must be ≥ 1, got {max_len}")
        self.head_dim, self.base, self.max_len = head_dim, base, max_len
        cos, sin = self._table(0, max_len)
        self.register_buffer("cos", cos.to(device), persistent=False)
        self.register_buffer("sin", sin.to(device), persistent=False)

    def _table(self, start: int, stop: int) -> tuple[torch.Tensor, torch.Tensor]:
        """cos and sin [stop − start, head_dim] of positions start … stop − 1; a position's
        row is the same whichever range it is computed in."""
        pos = torch.arange(start, stop, dtype=torch.float64)[:, None]
        angle = pos * _frequencies(self.head_dim, self.base)
        angle = torch.cat([angle, angle], dim=-1)
        return angle.cos().float(), angle.sin().float()

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, base={self.base:g}, max_len={self.max_len}"

    def rotate(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:
        """x [..., T, head_dim] at positions start … start+T−1 → the rotated x, same shape.
        Positions past the table (``max_len``) are computed on the fly: rotations depend
        only on the offset, so a model can read sequences longer than it was built for."""
        t = x.shape[-2]
        if start < 0:
            raise ConfigError(f"rotary embedding: positions start at {start}, not ≥ 0")
        if start + t <= self.max_len:
            cos, sin = self.cos[start:start + t], self.sin[start:start + t]   # [T, hd]
        else:
            cos, sin = (v.to(x.device) for v in self._table(start, start + t))
        cos, sin = cos.to(x.dtype), sin.to(x.dtype)
        x1, x2 = x.chunk(2, dim=-1)
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    forward = rotate


def make_positional(kind: str, d: int, max_len: int = DEFAULT_MAX_LEN, *,
                    base: float = 10000.0, dropout: float = 0.0) -> nn.Module | None:
    """The additive encoding module for ``kind`` in POSITIONALS.

    ``"rope"`` and ``"none"`` return None: there is nothing to add to the tokens (the attention
    layers apply RoPE themselves).
    """
    if kind == "sinusoidal":
        return SinusoidalEncoding(d, max_len, base, dropout)
    if kind == "learned":
        return LearnedEncoding(d, max_len)
    if kind in ("rope", "none"):
        return None
    raise ConfigError(f"positional must be one of {', '.join(POSITIONALS)}; got {kind!r}")


def encoding_figure(d: int = 64, n_pos: int = 128, base: float = 10000.0):
    """A figure of the sinusoidal table (heatmap) and of pe(0)·pe(pos) against pos."""
    from matplotlib.figure import Figure   # no pyplot: no global state, no GUI backend

    pe = sinusoidal_table(n_pos, d, base, dtype=torch.float64)
    fig = Figure(figsize=(10, 4), layout="constrained")
    ax0, ax1 = fig.subplots(1, 2, width_ratios=[1.3, 1])
    im = ax0.imshow(pe.numpy(), aspect="auto", cmap="RdBu_r", vmin=-1, vmax=1,
                    interpolation="nearest")
    ax0.set(xlabel="dimension", ylabel="position",
            title=f"sinusoidal encoding (d={d}, base={base:g})")
    fig.colorbar(im, ax=ax0, shrink=0.8)
    # pe(p)·pe(p+k) = Σ_k cos(k·ω) for every p: a function of the offset alone
    ax1.plot(torch.arange(n_pos).numpy(), (pe @ pe[0]).numpy(), "k-", lw=1.2)
    ax1.axhline(0, color="0.7", lw=0.8)
    ax1.set(xlabel="position", ylabel="pe(0)·pe(position)", title="similarity to position 0",
            ylim=(min(0.0, float((pe @ pe[0]).min())) - 1, d / 2 + 1))
    return fig
