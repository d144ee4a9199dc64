"""Scaled dot-product attention: a plain reference, multi-head attention with grouped key/value
heads (MHA, GQA, MQA) and a key/value cache, the Transformer block, and a tiny decoder-only
language model that exercises the cache.

Mask convention (the whole package): a boolean mask is True where attention is ALLOWED, so
``key_padding_mask`` [B, Tk] is True at VALID (real) tokens and False at padding. A query row that
can see no key at all returns a zero vector (and zero weights), never NaN.

Shapes: B batch, H query heads, H_kv key/value heads (H_kv divides H; each group of H / H_kv
query heads shares one key/value head), Tq / Tk query / key lengths, hd = d_model / H.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from kairo._errors import ConfigError, DataError
from kairo.tsc._config import NORM_POSITIONS as NORMS  # noqa: F401  (re-exported)
from kairo.tsc._encodings import DEFAULT_MAX_LEN, RotaryEmbedding, SinusoidalEncoding

__all__ = ["attention_reference", "MultiHeadAttention", "KVCache", "TransformerBlock",
           "TinyDecoder", "NORMS"]

# SDPA's enable_gqa arrived in torch 2.5; older versions get repeat_interleave'd kv heads
_SDPA_GQA = tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 5)


def _check_padding_mask(mask: torch.Tensor | None, b: int, t: int, name: str = "key_padding_mask"):
    if mask is None:
        return None
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
        raise DataError(f"{name} must be a bool tensor (True = valid token), got "
                        f"{getattr(mask, 'dtype', type(mask).__name__)}")
    if tuple(mask.shape) != (b, t):
        raise DataError(f"{name} must have shape [B, T] = [{b}, {t}], got {list(mask.shape)}")
    return mask


def _allowed(tq: int, tk: int, *, key_padding_mask=None, attn_mask=None, causal=False,
             device=None) -> torch.Tensor | None:
    """The combined boolean mask (True = may attend), broadcastable to [B, H, Tq, Tk], or None."""
    allowed = None
    if causal:
        # query i sits at absolute position i + (Tk − Tq): with a KV cache the keys run ahead
        q_pos = torch.arange(tq, device=device)[:, None] + (tk - tq)
        allowed = torch.arange(tk, device=device)[None, :] <= q_pos                # [Tq, Tk]
    if key_padding_mask is not None:
        kpm = key_padding_mask[:, None, None, :]                                     # [B,1,1,Tk]
        allowed = kpm if allowed is None else allowed & kpm
    if attn_mask is not None and attn_mask.dtype == torch.bool:
        allowed = attn_mask if allowed is None else allowed & attn_mask
    return allowed


def _expand_kv(k: torch.Tensor, h: int) -> torch.Tensor:
    """[B, H_kv, T, hd] → [B, H, T, hd]: query head j reads key/value head j // (H / H_kv)."""
    return k if k.shape[1] == h else k.repeat_interleave(h // k.shape[1], dim=1)


def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *,
                        attn_mask: torch.Tensor | None = None,
                        key_padding_mask: torch.Tensor | None = None, causal: bool = False,
                        dropout_p: float = 0.0) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(QKᵀ/√hd + mask) V, written out: returns (out [B,H,Tq,hd], weights [B,H,Tq,Tk]).

    q [B, H, Tq, hd]; k, v [B, H_kv, Tk, hd] with H_kv dividing H (GQA/MQA when H_kv < H).
    ``attn_mask`` broadcastable to [B, H, Tq, Tk]: bool (True = may attend) or float (added to
    the scores). ``key_padding_mask`` [B, Tk] bool, True = valid key. ``causal``: query i sees
    keys j ≤ i + (Tk − Tq), so the last query is aligned with the last key (KV-cache decoding).
    Rows with no allowed key get zero weights and a zero output. ``weights`` are before dropout.
    """
    h, tq, tk = q.shape[1], q.shape[2], k.shape[2]
    k, v = _expand_kv(k, h), _expand_kv(v, h)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])                      # [B,H,Tq,Tk]
    if attn_mask is not None and attn_mask.dtype != torch.bool:
        scores = scores + attn_mask
    allowed = _allowed(tq, tk, key_padding_mask=key_padding_mask, attn_mask=attn_mask,
                       causal=causal, device=q.device)
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    dead = torch.isneginf(scores).all(-1, keepdim=True)                            # [B,H,Tq,1]
    weights = torch.softmax(scores.masked_fill(dead, 0.0), dim=-1).masked_fill(dead, 0.0)
    w = F.dropout(weights, dropout_p) if dropout_p > 0 else weights
    return w @ v, weights                                                          # [B,H,Tq,hd]


class KVCache:
    """Keys and values of the positions seen so far, for ONE attention layer.

    ``k`` and ``v`` are [B, H_kv, T, hd] (None before the first step); a decoder keeps one cache
    per layer (see :meth:`TinyDecoder.new_cache`). RoPE and sinusoidal positions of new tokens
    continue from ``length``.
    """

    def __init__(self):
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return 0 if self.k is None else self.k.shape[2]

    def append(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Add k, v [B, H_kv, T_new, hd]; return all keys and values [B, H_kv, T_old+T_new, hd]."""
        if self.k is not None and (k.shape[:2], k.shape[3]) != (self.k.shape[:2], self.k.shape[3]):
            raise DataError(f"KV cache holds [B, H_kv, T, hd] = {list(self.k.shape)}; cannot "
                            f"append keys of shape {list(k.shape)}")
        self.k = k if self.k is None else torch.cat([self.k, k], dim=2)
        self.v = v if self.v is None else torch.cat([self.v, v], dim=2)
        return self.k, self.v


class MultiHeadAttention(nn.Module):
    """Multi-head attention with ``n_kv_heads`` key/value heads: MHA (= n_heads, the default),
    GQA (a divisor of n_heads) or MQA (1).

    Projections: q d_model → d_model, kv d_model → 2·n_kv_heads·hd, out d_model → d_model, so
    GQA/MQA shrink the kv projection and the cache by n_heads / n_kv_heads. ``rope=True`` rotates
    q and k (self-attention only) by their positions, continuing from the cache length.

    ``forward(x [B,Tq,D], context [B,Tk,D] | None, *, key_padding_mask [B,Tk] bool (True = valid;
    refers to the context in cross-attention and to all cached + new keys with a cache),
    causal, cache, need_weights) → (out [B,Tq,D], weights [B,H,Tq,Tk] | None)``.
    Without weights it calls ``F.scaled_dot_product_attention``; with them, the reference.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, *,
                 dropout: float = 0.0, bias: bool = True, rope: bool = False,
                 rope_base: float = 10000.0, max_len: int = DEFAULT_MAX_LEN,
                 device=None, dtype=None):
        super().__init__()
        n_kv_heads = n_heads if n_kv_heads is None else n_kv_heads
        if n_heads < 1 or d_model < 1:
            raise ConfigError(f"d_model and n_heads must be ≥ 1, got d_model={d_model}, "
                              f"n_heads={n_heads}")
        if d_model % n_heads:
            raise ConfigError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        if n_kv_heads < 1:
            raise ConfigError(f"n_kv_heads must be ≥ 1 (None = n_heads, MHA), got {n_kv_heads}")
        if n_heads % n_kv_heads:
            raise ConfigError(f"n_heads {n_heads} is not divisible by n_kv_heads {n_kv_heads}; "
                              f"use a divisor of n_heads (1 = MQA, n_heads = MHA)")
        if not 0.0 <= dropout < 1.0:
            raise ConfigError(f"attention dropout must be in [0, 1), got {dropout}")
        fk = dict(device=device, dtype=dtype)
        self.d_model, self.n_heads, self.n_kv_heads = d_model, n_heads, n_kv_heads
        self.head_dim = d_model // n_heads
        # default 0: on CPU any attention dropout sends SDPA to its slow math kernel
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias, **fk)
        self.kv_proj = nn.Linear(d_model, 2 * n_kv_heads * self.head_dim, bias=bias, **fk)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias, **fk)
        self.rope = RotaryEmbedding(self.head_dim, rope_base, max_len, device=device) \
            if rope else None

    def extra_repr(self) -> str:
        kind = "MHA" if self.n_kv_heads == self.n_heads else \
            "MQA" if self.n_kv_heads == 1 else "GQA"
        return f"{kind}: d_model={self.d_model}, n_heads={self.n_heads}, " \
               f"n_kv_heads={self.n_kv_heads}"

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None, *,
                key_padding_mask: torch.Tensor | None = None, causal: bool = False,
                cache: KVCache | None = None, need_weights: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        b, tq, _ = x.shape
        h, hkv, hd = self.n_heads, self.n_kv_heads, self.head_dim
        if context is not None and cache is not None:
            raise ConfigError("a KV cache is for self-attention; cross-attention (context) "
                              "recomputes its keys, pass cache=None")
        src = x if context is None else context
        q = self.q_proj(x).view(b, tq, h, hd).transpose(1, 2)                      # [B,H,Tq,hd]
        kv = self.kv_proj(src).view(b, src.shape[1], 2, hkv, hd)
        k, v = kv.permute(2, 0, 3, 1, 4).unbind(0)                                  # [B,Hkv,T,hd]
        if self.rope is not None and context is None:
            start = cache.length if cache is not None else 0
            q, k = self.rope.rotate(q, start), self.rope.rotate(k, start)
        if cache is not None:
            k, v = cache.append(k, v)
        tk = k.shape[2]
        _check_padding_mask(key_padding_mask, b, tk)
        p = self.dropout if self.training else 0.0
        if need_weights:
            out, weights = attention_reference(q, k, v, key_padding_mask=key_padding_mask,
                                               causal=causal, dropout_p=p)
        else:
            out, weights = self._sdpa(q, k, v, key_padding_mask, causal, p), None
        out = out.transpose(1, 2).reshape(b, tq, self.d_model)                     # [B,Tq,D]
        return self.out_proj(out), weights

    def _sdpa(self, q, k, v, key_padding_mask, causal, p):
        tq, tk = q.shape[2], k.shape[2]
        kw = {}
        if self.n_kv_heads != self.n_heads:
            if _SDPA_GQA:      # shares kv heads without materialising the repeats
                kw["enable_gqa"] = True
            else:
                k, v = _expand_kv(k, self.n_heads), _expand_kv(v, self.n_heads)
        if key_padding_mask is None and (not causal or tq == tk):
            # SDPA's own is_causal aligns top-left, which is right only when Tq == Tk
            return F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=causal, **kw)
        allowed = _allowed(tq, tk, key_padding_mask=key_padding_mask, causal=causal,
                           device=q.device)
        dead = ~allowed.any(-1, keepdim=True)                                      # no key
        # give dead rows every key (finite softmax, no NaN gradients), then zero their output
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed | dead, dropout_p=p,
                                             **kw)
        return out.masked_fill(dead, 0.0)


class TransformerBlock(nn.Module):
    """Self-attention + MLP with residuals; ``norm="pre"`` (x + f(LN x)) or ``"post"``
    (LN(x + f(x))). Dropout sits on the two residual branches and inside the MLP.

    ``forward(x [B,T,D], *, key_padding_mask, causal, cache, need_weights) → (x, weights)``.
    """

    def __init__(self, d_model: int, n_heads: int, n_kv_heads: int | None = None, *,
                 mlp_ratio: float = 4, dropout: float = 0.0, attn_dropout: float = 0.0,
                 norm: str = "pre", rope: bool = False, max_len: int = DEFAULT_MAX_LEN,
                 device=None, dtype=None):
        super().__init__()
        if norm not in NORMS:
            raise ConfigError(f"norm must be one of {', '.join(NORMS)}; got {norm!r}")
        if not 0.0 <= dropout < 1.0:
            raise ConfigError(f"dropout must be in [0, 1), got {dropout}")
        fk = dict(device=device, dtype=dtype)
        hidden = int(round(mlp_ratio * d_model))
        self.pre = norm == "pre"
        self.attn = MultiHeadAttention(d_model, n_heads, n_kv_heads, dropout=attn_dropout,
                                       rope=rope, max_len=max_len, **fk)
        self.ln1 = nn.LayerNorm(d_model, **fk)
        self.ln2 = nn.LayerNorm(d_model, **fk)
        self.mlp = nn.Sequential(nn.Linear(d_model, hidden, **fk), nn.GELU(), nn.Dropout(dropout),
                                 nn.Linear(hidden, d_model, **fk))
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, *, key_padding_mask: torch.Tensor | None = None,
                causal: bool = False, cache: KVCache | None = None, need_weights: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        kw = dict(key_padding_mask=key_padding_mask, causal=causal, cache=cache,
                  need_weights=need_weights)
        if self.pre:
            a, w = self.attn(self.ln1(x), **kw)
            x = x + self.drop(a)
            return x + self.drop(self.mlp(self.ln2(x))), w
        a, w = self.attn(x, **kw)
        x = self.ln1(x + self.drop(a))
        return self.ln2(x + self.drop(self.mlp(x))), w


class TinyDecoder(nn.Module):
    """A decoder-only language model: token embedding → pre-LN causal blocks → LN → logits.

    ``positional="rope"`` rotates q/k inside attention; ``"sinusoidal"`` adds the table to the
    embeddings. ``forward(tokens [B,T] int, cache=None) → logits [B,T,vocab]``; with a cache
    (a list of per-layer :class:`KVCache` from :meth:`new_cache`) ``tokens`` are the NEW tokens
    and their positions continue after the cached ones.
    """

    def __init__(self, vocab: int, d_model: int, n_heads: int, n_kv_heads: int | None,
                 n_layers: int, max_len: int, *, positional: str = "rope",
                 mlp_ratio: float = 4, dropout: float = 0.0):
        super().__init__()
        if positional not in ("rope", "sinusoidal"):
            raise ConfigError(f"TinyDecoder positional must be 'rope' or 'sinusoidal', got "
                              f"{positional!r}")
        if vocab < 1 or n_layers < 1 or max_len < 1:
            raise ConfigError(f"vocab, n_layers and max_len must be ≥ 1, got vocab={vocab}, "
                              f"n_layers={n_layers}, max_len={max_len}")
        self.max_len = max_len
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = SinusoidalEncoding(d_model, max_len) if positional == "sinusoidal" else None
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, n_kv_heads, mlp_ratio=mlp_ratio, dropout=dropout,
                             rope=positional == "rope", max_len=max_len)
            for _ in range(n_layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def new_cache(self) -> list[KVCache]:
        return [KVCache() for _ in self.blocks]

    def forward(self, tokens: torch.Tensor, cache: list[KVCache] | None = None) -> torch.Tensor:
        if cache is not None and len(cache) != len(self.blocks):
            raise ConfigError(f"cache must hold one KVCache per layer ({len(self.blocks)}), got "
                              f"{len(cache)}")
        start = cache[0].length if cache is not None else 0
        if start + tokens.shape[1] > self.max_len:
            raise ConfigError(f"sequence of {start + tokens.shape[1]} tokens exceeds "
                              f"max_len={self.max_len}")
        x = self.embed(tokens)                                                     # [B,T,D]
        if self.pos is not None:
            x = self.pos(x, start)
        for i, block in enumerate(self.blocks):
            x, _ = block(x, causal=True, cache=None if cache is None else cache[i])
        return self.head(self.ln(x))                                               # [B,T,V]

    @torch.no_grad()
    def generate(self, prompt: torch.Tensor, n_new: int, use_cache: bool = True) -> torch.Tensor:
        """Greedy continuation: prompt [B,T0] → [B, T0 + n_new]. Without the cache every step
        recomputes the whole sequence (the check that the cache changes nothing)."""
        out = prompt
        cache = self.new_cache() if use_cache else None
        step_in = prompt
        for _ in range(n_new):
            logits = self(step_in if use_cache else out, cache)
            nxt = logits[:, -1].argmax(-1, keepdim=True)                           # [B,1]
            out = torch.cat([out, nxt], dim=1)
            step_in = nxt
        return out
