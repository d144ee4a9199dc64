"""Attention: the reference against NumPy, the SDPA path against the reference (masks, causal,
cross-attention, GQA/MQA, RoPE), masking invariants, the KV cache, parameter counts, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from kairo import ConfigError, DataError
from kairo.tsc import KVCache, MultiHeadAttention, TinyDecoder, attention_reference


def _numpy_attention(q, k, v, valid):
    """Loops over batch, head and query; ``valid`` [B, H, Tq, Tk] bool."""
    b, h, tq, d = q.shape
    out = np.zeros((b, h, tq, v.shape[-1]))
    w = np.zeros((b, h, tq, k.shape[2]))
    for i, j, t in itertools.product(range(b), range(h), range(tq)):
        keep = valid[i, j, t]
        if not keep.any():
            continue
        s = k[i, j][keep] @ q[i, j, t] / np.sqrt(d)
        p = np.exp(s - s.max())
        w[i, j, t, keep] = p / p.sum()
        out[i, j, t] = w[i, j, t] @ v[i, j]
    return out, w


def _padding(b, t, lengths):
    return torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]              # [B, T]


def test_reference_matches_numpy_with_padding_causal_and_cache_offset():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 2, 4, 5, generator=g, dtype=torch.float64)
    k = torch.randn(3, 2, 7, 5, generator=g, dtype=torch.float64)
    v = torch.randn(3, 2, 7, 5, generator=g, dtype=torch.float64)
    kpm = _padding(3, 7, [7, 4, 0])                      # the last row has no valid key
    out, w = attention_reference(q, k, v, key_padding_mask=kpm, causal=True)
    # causal with Tq=4 < Tk=7: query i sits at position i + 3 and sees keys 0 … i + 3
    causal = np.arange(7)[None, :] <= np.arange(4)[:, None] + 3
    valid = causal[None, None] & kpm.numpy()[:, None, None, :]
    ref_out, ref_w = _numpy_attention(q.numpy(), k.numpy(), v.numpy(),
                                      np.broadcast_to(valid, (3, 2, 4, 7)))
    np.testing.assert_allclose(out.numpy(), ref_out, atol=1e-12)
    np.testing.assert_allclose(w.numpy(), ref_w, atol=1e-12)
    assert torch.all(out[2] == 0) and torch.all(w[2] == 0)      # zero, not NaN


def test_reference_float_mask_and_gqa_expansion():
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, 3, 8, generator=g)
    k, v = torch.randn(2, 2, 5, 8, generator=g), torch.randn(2, 2, 5, 8, generator=g)
    bias = torch.randn(3, 5, generator=g)
    out, w = attention_reference(q, k, v, attn_mask=bias)
    kk, vv = k.repeat_interleave(2, 1), v.repeat_interleave(2, 1)
    expected = torch.nn.functional.scaled_dot_product_attention(q, kk, vv, attn_mask=bias)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=0)
    # query heads 0, 1 share kv head 0; heads 2, 3 share kv head 1
    o0, _ = attention_reference(q[:, 2:3], k[:, 1:2], v[:, 1:2], attn_mask=bias)
    torch.testing.assert_close(out[:, 2:3], o0)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("rope", [False, True])
def test_sdpa_path_equals_reference_self_attention(n_kv, causal, rope):
    torch.manual_seed(0)
    mha = MultiHeadAttention(32, 4, n_kv, rope=rope, max_len=64).eval()
    x = torch.randn(3, 11, 32)
    for kpm in (None, _padding(3, 11, [11, 6, 1])):
        fast, none = mha(x, key_padding_mask=kpm, causal=causal)
        ref, w = mha(x, key_padding_mask=kpm, causal=causal, need_weights=True)
        assert none is None and w.shape == (3, 4, 11, 11)
        torch.testing.assert_close(fast, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
def test_sdpa_path_equals_reference_cross_attention(n_kv):
    torch.manual_seed(1)
    mha = MultiHeadAttention(24, 4, n_kv).eval()
    x, ctx = torch.randn(2, 5, 24), torch.randn(2, 9, 24)
    kpm = _padding(2, 9, [9, 3])
    fast, _ = mha(x, ctx, key_padding_mask=kpm)
    ref, w = mha(x, ctx, key_padding_mask=kpm, need_weights=True)
    torch.testing.assert_close(fast, ref, atol=1e-5, rtol=0)
    assert w.shape == (2, 4, 5, 9)
    assert torch.all(w[1, :, :, 3:] == 0)                      # padded context keys unused


def test_weights_rows_sum_to_one_and_padding_gets_zero_weight():
    torch.manual_seed(2)
    mha = MultiHeadAttention(16, 2, 1)
    x = torch.randn(4, 8, 16)
    kpm = _padding(4, 8, [8, 5, 2, 1])
    _, w = mha(x, key_padding_mask=kpm, causal=True, need_weights=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(4, 2, 8))
    assert torch.all(w.masked_select(~kpm[:, None, None, :].expand_as(w)) == 0)
    assert torch.all(w.triu(1) == 0)                           # causal: no future keys


@pytest.mark.parametrize("need_weights", [False, True])
def test_valid_outputs_ignore_padded_junk(need_weights):
    torch.manual_seed(3)
    mha = MultiHeadAttention(16, 4, 2, rope=True).eval()
    kpm = _padding(2, 10, [10, 6])
    x = torch.randn(2, 10, 16)
    junk = x.clone()
    junk[1, 6:] = 1e3 * torch.randn(4, 16)
    a, _ = mha(x, key_padding_mask=kpm, need_weights=need_weights)
    b, _ = mha(junk, key_padding_mask=kpm, need_weights=need_weights)
    torch.testing.assert_close(a[kpm], b[kpm], atol=1e-5, rtol=0)
    # and the valid part equals running the unpadded sequence alone
    alone, _ = mha(x[1:, :6], need_weights=need_weights)
    torch.testing.assert_close(a[1, :6], alone[0], atol=1e-5, rtol=0)


def test_rows_without_keys_give_zero_and_finite_gradients():
    torch.manual_seed(4)
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8, requires_grad=True)
    kpm = _padding(2, 5, [5, 0])
    for need_weights in (False, True):
        out, _ = mha(x, key_padding_mask=kpm, need_weights=need_weights)
        torch.testing.assert_close(out[1], mha.out_proj.bias.expand(5, 8))  # zero before proj
        out.sum().backward()
        assert torch.isfinite(x.grad).all()
        assert all(torch.isfinite(p.grad).all() for p in mha.parameters())
        x.grad = None


def test_attention_dropout_only_in_training():
    torch.manual_seed(5)
    mha = MultiHeadAttention(16, 4, dropout=0.5)
    x = torch.randn(2, 6, 16)
    mha.eval()
    torch.testing.assert_close(mha(x)[0], mha(x, need_weights=True)[0], atol=1e-5, rtol=0)
    mha.train()
    a, b = mha(x, need_weights=True)[0], mha(x, need_weights=True)[0]
    assert not torch.allclose(a, b)


def test_parameter_counts_mha_gqa_mqa():
    d, h = 64, 8
    counts = {kv: sum(p.numel() for p in MultiHeadAttention(d, h, kv).parameters())
              for kv in (8, 4, 2, 1)}
    hd = d // h
    for kv, n in counts.items():
        assert n == 2 * (d * d + d) + d * 2 * kv * hd + 2 * kv * hd
    assert counts[8] > counts[4] > counts[2] > counts[1]
    assert MultiHeadAttention(d, h).n_kv_heads == h                   # default: MHA


def test_bad_head_counts_and_inputs():
    with pytest.raises(ConfigError, match="d_model 30 is not divisible by n_heads 4"):
        MultiHeadAttention(30, 4)
    with pytest.raises(ConfigError, match="n_heads 8 is not divisible by n_kv_heads 3"):
        MultiHeadAttention(32, 8, 3)
    with pytest.raises(ConfigError, match=r"n_kv_heads must be ≥ 1 \(None = n_heads, MHA\), got 0"):
        MultiHeadAttention(32, 8, 0)
    with pytest.raises(ConfigError, match="head_dim"):
        MultiHeadAttention(12, 4, rope=True)                       # odd head size 3
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 4, 8)
    with pytest.raises(DataError, match=r"key_padding_mask must have shape \[B, T\] = \[2, 4\]"):
        mha(x, key_padding_mask=torch.ones(2, 5, dtype=torch.bool))
    with pytest.raises(DataError, match="must be a bool tensor"):
        mha(x, key_padding_mask=torch.ones(2, 4))
    with pytest.raises(ConfigError, match="KV cache is for self-attention"):
        mha(x, torch.randn(2, 3, 8), cache=KVCache())


def test_kv_cache_single_layer_matches_causal_full():
    torch.manual_seed(6)
    mha = MultiHeadAttention(16, 4, 2, rope=True).eval()
    x = torch.randn(2, 9, 16)
    full, _ = mha(x, causal=True)
    cache = KVCache()
    parts = [mha(x[:, :4], causal=True, cache=cache)[0]]              # a prompt, then steps
    for t in range(4, 9):
        parts.append(mha(x[:, t:t + 1], causal=True, cache=cache)[0])
    assert cache.length == 9 and cache.k.shape == (2, 2, 9, 4)
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("n_kv", [4, 2, 1])
@pytest.mark.parametrize("positional", ["rope", "sinusoidal"])
def test_decoder_cache_equals_recomputation(n_kv, positional):
    torch.manual_seed(7)
    dec = TinyDecoder(vocab=23, d_model=32, n_heads=4, n_kv_heads=n_kv, n_layers=2, max_len=40,
                      positional=positional).eval()
    tokens = torch.randint(0, 23, (3, 12))
    with torch.no_grad():
        full = dec(tokens)
        cache = dec.new_cache()
        steps = [dec(tokens[:, :5], cache)] + [dec(tokens[:, t:t + 1], cache)
                                               for t in range(5, 12)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=0)
    assert [c.length for c in cache] == [12, 12]
    prompt = tokens[:, :4]
    with_cache = dec.generate(prompt, 15, use_cache=True)
    assert with_cache.shape == (3, 19) and torch.equal(with_cache[:, :4], prompt)
    assert torch.equal(with_cache, dec.generate(prompt, 15, use_cache=False))


def test_decoder_errors():
    dec = TinyDecoder(10, 8, 2, 1, 1, max_len=6)
    with pytest.raises(ConfigError, match="max_len=6"):
        dec(torch.zeros(1, 7, dtype=torch.long))
    cache = dec.new_cache()
    dec(torch.zeros(1, 4, dtype=torch.long), cache)
    with pytest.raises(ConfigError, match="max_len=6"):
        dec(torch.zeros(1, 3, dtype=torch.long), cache)
    with pytest.raises(ConfigError, match="one KVCache per layer"):
        dec(torch.zeros(1, 2, dtype=torch.long), [KVCache(), KVCache()])
    with pytest.raises(ConfigError, match="'rope' or 'sinusoidal'"):
        TinyDecoder(10, 8, 2, 1, 1, max_len=6, positional="learned")
