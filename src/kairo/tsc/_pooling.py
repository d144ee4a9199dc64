"""Pooling heads: tokens [B, T, D] → one vector [B, D] per sequence.

One interface: ``forward(tokens [B,T,D], mask [B,T] bool | None) → [B,D]`` where ``mask`` is True
at VALID tokens (padding is False; None means all valid). Padded tokens never change the
output. After each forward a head sets ``last_weights``: None, or [B, heads, T] attention
weights over the tokens (for attention-map figures), zero on padding.

None of the heads sees positions, so each is invariant to permuting the tokens (the CLS head
only through its own block, which has no positional encoding either).
"""

from __future__ import annotations

import torch
from torch import nn

from kairo._errors import ConfigError
from kairo.tsc._config import POOLS  # noqa: F401  (re-exported)
from kairo.tsc._attention import TransformerBlock, attention_reference

__all__ = ["MeanPool", "MaxPool", "ClsPool", "AttentionPool", "MultiHeadAttentionPool",
           "make_pool", "pool_concentration", "POOLS"]



class MeanPool(nn.Module):
    """Mean of the valid tokens (a sequence with none gives zeros)."""

    def __init__(self):
        super().__init__()
        self.last_weights = None

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        self.last_weights = None
        if mask is None:
            return tokens.mean(1)
        m = mask.to(tokens.dtype)[..., None]                                        # [B,T,1]
        return (tokens * m).sum(1) / m.sum(1).clamp_min(1.0)                        # [B,D]


class MaxPool(nn.Module):
    """Feature-wise maximum over the valid tokens (a sequence with none gives zeros)."""

    def __init__(self):
        super().__init__()
        self.last_weights = None

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        self.last_weights = None
        if mask is None:
            return tokens.amax(1)
        out = tokens.masked_fill(~mask[..., None], float("-inf")).amax(1)           # [B,D]
        return out.masked_fill(~mask.any(1, keepdim=True), 0.0)


class MultiHeadAttentionPool(nn.Module):
    """``n_queries`` learned queries attend over the tokens with ``n_heads`` heads.

    Keys and values are linear maps of the tokens; each query's head outputs are concatenated
    to D, the n_queries results are concatenated to n_queries·D and projected back to D.
    ``last_weights`` is [B, n_queries·n_heads, T] (query-major). Queries start small (N(0, 0.02²)),
    so the pool starts close to a mean over the valid tokens.
    """

    def __init__(self, d: int, n_heads: int = 4, n_queries: int = 1, *, device=None, dtype=None):
        super().__init__()
        if n_heads < 1 or n_queries < 1 or d < 1:
            raise ConfigError(f"attention pool needs d, n_heads, n_queries ≥ 1, got d={d}, "
                              f"n_heads={n_heads}, n_queries={n_queries}")
        if d % n_heads:
            raise ConfigError(f"pool dimension {d} is not divisible by pool n_heads {n_heads}")
        fk = {"device": device, "dtype": dtype}
        self.d, self.n_heads, self.n_queries = d, n_heads, n_queries
        self.query = nn.Parameter(torch.empty(n_queries, d, **fk))
        nn.init.normal_(self.query, std=0.02)
        self.kv = nn.Linear(d, 2 * d, **fk)
        self.out = nn.Linear(n_queries * d, d, **fk)
        self.last_weights = None

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t, d = tokens.shape
        h, nq, hd = self.n_heads, self.n_queries, d // self.n_heads
        q = self.query.view(1, nq, h, hd).transpose(1, 2).expand(b, h, nq, hd)     # [B,H,Q,hd]
        k, v = self.kv(tokens).view(b, t, 2, h, hd).permute(2, 0, 3, 1, 4).unbind(0)  # [B,H,T,hd]
        out, w = attention_reference(q, k, v, key_padding_mask=mask)                # [B,H,Q,hd]
        self.last_weights = w.transpose(1, 2).reshape(b, nq * h, t).detach()        # [B,Q·H,T]
        return self.out(out.permute(0, 2, 1, 3).reshape(b, nq * d))                 # [B,D]


class AttentionPool(MultiHeadAttentionPool):
    """One learned query, one head: softmax over the valid tokens of ⟨q, W_k x_t⟩/√D weights
    W_v x_t; the weighted sum is projected back to D. ``last_weights`` [B, 1, T]."""

    def __init__(self, d: int, *, device=None, dtype=None):
        super().__init__(d, 1, 1, device=device, dtype=dtype)


class ClsPool(nn.Module):
    """A learned CLS token that joins the sequence and is read out at position 0.

    The token must be seen by self-attention, so there are two ways to use it:

    - ``mix=False`` (Transformer encoders): the classifier calls :meth:`prepend` after the
      encoder's embedding and before its blocks; the encoder's own attention mixes
      [cls; tokens], and ``forward`` just reads position 0 (``last_weights`` stays None — the
      encoder's last attention layer holds the CLS row).
    - ``mix=True`` (encoders without attention, e.g. ResNet1D): the pool owns one pre-LN
      Transformer block; ``forward`` prepends the token itself, runs the block and reads
      position 0. ``last_weights`` is that block's CLS row over the tokens, [B, n_heads, T]
      (without the CLS column, so rows sum to 1 minus the CLS token's weight on itself).
    """

    def __init__(self, d: int, n_heads: int = 4, *, mix: bool = True, mlp_ratio: float = 4,
                 dropout: float = 0.0, device=None, dtype=None):
        super().__init__()
        if d < 1:
            raise ConfigError(f"CLS pool needs d ≥ 1, got {d}")
        self.cls = nn.Parameter(torch.empty(1, 1, d, device=device, dtype=dtype))
        nn.init.normal_(self.cls, std=0.02)
        self.mix = mix
        self.block = TransformerBlock(d, n_heads, mlp_ratio=mlp_ratio, dropout=dropout,
                                      norm="pre", device=device, dtype=dtype) if mix else None
        self.last_weights = None

    def prepend(self, tokens: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """[B,T,D], [B,T] → [B,T+1,D] with the CLS token first, and the mask with a True first."""
        b = tokens.shape[0]
        tokens = torch.cat([self.cls.expand(b, -1, -1).to(tokens.dtype), tokens], dim=1)
        if mask is not None:
            mask = torch.cat([mask.new_ones(b, 1), mask], dim=1)
        return tokens, mask

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        self.last_weights = None
        if self.block is None:
            return tokens[:, 0]                                                     # [B,D]
        x, mask = self.prepend(tokens, mask)
        x, w = self.block(x, key_padding_mask=mask, need_weights=True)
        self.last_weights = w[:, :, 0, 1:].detach()                                 # [B,H,T]
        return x[:, 0]


def make_pool(kind: str, d: int, n_heads: int = 4, n_queries: int = 1, *,
              cls_mix: bool = True) -> nn.Module:
    """The pooling head ``kind`` (one of POOLS) for tokens of width d.

    ``n_heads`` is used by "mha" and "cls" (its block), ``n_queries`` by "mha"; ``cls_mix`` is
    :class:`ClsPool`'s ``mix`` (False when the encoder's attention sees the prepended token).
    """
    if kind == "mean":
        return MeanPool()
    if kind == "max":
        return MaxPool()
    if kind == "cls":
        return ClsPool(d, n_heads, mix=cls_mix)
    if kind == "attention":
        return AttentionPool(d)
    if kind == "mha":
        return MultiHeadAttentionPool(d, n_heads, n_queries)
    raise ConfigError(f"pool must be one of {', '.join(POOLS)}; got {kind!r}")


def pool_concentration(weights, mask=None) -> dict:
    """How far a pooling head's weights are from mean pooling, per series and head.

    ``weights``: [B, heads, T] non-negative (``TSClassifier.attention_maps()["pool"]``);
    ``mask``: [B, T] True at valid tokens, or None. Each row is renormalised over its valid
    tokens (a CLS row sums to 1 minus the token's weight on itself). Returns NumPy [B, heads]:

    - ``"effective_fraction"``: exp(entropy) / valid tokens — 1 for uniform weights (what mean
      pooling does), 1/n when one token takes all the weight;
    - ``"peak_ratio"``: the largest weight × valid tokens — 1 for uniform, n for one token.
    """
    import numpy as np

    w = np.asarray(weights.detach().cpu() if isinstance(weights, torch.Tensor) else weights,
                   dtype=np.float64)
    if w.ndim != 3 or w.shape[2] < 1:
        raise ConfigError(f"pooling weights must be [batch, heads, tokens], got shape {w.shape}")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ConfigError("pooling weights must be finite and non-negative")
    if mask is None:
        valid = np.ones((w.shape[0], w.shape[2]), dtype=bool)
    else:
        valid = np.asarray(mask.cpu() if isinstance(mask, torch.Tensor) else mask)
        if valid.dtype != bool or valid.shape != (w.shape[0], w.shape[2]):
            raise ConfigError(f"mask must be a bool [batch, tokens] array of shape "
                              f"{(w.shape[0], w.shape[2])}, got {valid.dtype} {valid.shape}")
    n = valid.sum(1)
    if (n == 0).any():
        raise ConfigError(f"series {np.flatnonzero(n == 0).tolist()} have no valid token")
    w = np.where(valid[:, None, :], w, 0.0)
    total = w.sum(-1, keepdims=True)
    if (total <= 0).any():
        raise ConfigError("a pooling row puts no weight on any valid token")
    p = w / total
    logp = np.log(np.where(p > 0, p, 1.0))                  # 0·log 0 = 0
    entropy = -(p * logp).sum(-1)
    return {"effective_fraction": np.exp(entropy) / n[:, None],
            "peak_ratio": p.max(-1) * n[:, None]}
