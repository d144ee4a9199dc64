"""Pooling heads, encoders and the classifier: masks, hand computations, invariances, shapes,
gradients, a small overfit, config errors."""

from __future__ import annotations

import dataclasses
import itertools
import re

import numpy as np
import pytest
import torch

from kairo import ConfigError, DataError
from kairo.tsc import (ENCODERS, POOLS, AttentionPool, ClsPool, MaxPool, MeanPool,
                             ModelConfig, MultiHeadAttentionPool, ResNet1D, TransformerEncoder,
                             TSClassifier, build_classifier, make_pool)
from kairo.tsc._pooling import pool_concentration


def _mask(lengths, t):
    return torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]               # [B, T]


def _pools(d=16):
    torch.manual_seed(0)
    return {kind: make_pool(kind, d, n_heads=4, n_queries=2).eval() for kind in POOLS}


# ---------------------------------------------------------------------------- pooling heads
def test_pool_concentration_known_values_and_masks():
    """Uniform weights are mean pooling (fraction 1, peak 1); one token taking all the weight
    gives 1/n and n; two equal tokens of four give 1/2 and 2; padded tokens are not counted,
    and a CLS row (summing to less than 1) is renormalised first."""
    w = np.array([[[0.25, 0.25, 0.25, 0.25], [1.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]]])
    c = pool_concentration(w)
    np.testing.assert_allclose(c["effective_fraction"], [[1.0, 0.25, 0.5]], atol=1e-12)
    np.testing.assert_allclose(c["peak_ratio"], [[1.0, 4.0, 2.0]], atol=1e-12)
    # the same rows with the last two tokens padded: [0.5, 0.5] is uniform over two tokens
    masked = pool_concentration(torch.tensor(w), torch.tensor([[True, True, False, False]]))
    np.testing.assert_allclose(masked["effective_fraction"][0, 2], 1.0, atol=1e-12)
    np.testing.assert_allclose(masked["peak_ratio"][0], [1.0, 2.0, 1.0], atol=1e-12)
    cls_row = pool_concentration(0.6 * w[:, :1])                 # 0.4 on the CLS itself
    np.testing.assert_allclose(cls_row["effective_fraction"], [[1.0]], atol=1e-12)
    # a trained-from-scratch attention pool starts near uniform (queries N(0, 0.02²))
    torch.manual_seed(3)
    pool = make_pool("mha", 16, n_heads=4).eval()
    pool(torch.randn(2, 30, 16), None)
    c = pool_concentration(pool.last_weights)
    assert c["effective_fraction"].shape == (2, 4) and (c["effective_fraction"] > 0.99).all()


@pytest.mark.parametrize("weights, mask, expected", [
    (np.ones((2, 3)), None, "must be [batch, heads, tokens], got shape (2, 3)"),
    (np.full((1, 1, 3), np.nan), None, "finite and non-negative"),
    (-np.ones((1, 1, 3)), None, "finite and non-negative"),
    (np.ones((1, 1, 3)), np.ones((1, 2), bool), "mask must be a bool [batch, tokens] array"),
    (np.ones((1, 1, 3)), np.zeros((1, 3), bool), "series [0] have no valid token"),
    (np.array([[[0.0, 0.0, 1.0]]]), np.array([[True, True, False]]), "no weight on any valid"),
])
def test_pool_concentration_refuses_bad_input(weights, mask, expected):
    with pytest.raises(ConfigError, match=re.escape(expected)):
        pool_concentration(weights, mask)



@pytest.mark.parametrize("kind", POOLS)
def test_every_pool_respects_the_mask(kind):
    pool = _pools()[kind]
    torch.manual_seed(1)
    x = torch.randn(3, 7, 16)
    mask = _mask([7, 4, 1], 7)
    junk = x.clone()
    junk[~mask] = 50 * torch.randn(int((~mask).sum()), 16)
    out = pool(x, mask)
    assert out.shape == (3, 16)
    torch.testing.assert_close(pool(junk, mask), out, atol=1e-5, rtol=0)
    torch.testing.assert_close(pool(x, torch.ones(3, 7, dtype=torch.bool)), pool(x), atol=1e-6,
                               rtol=0)
    # a padded sequence pools like the same sequence alone
    torch.testing.assert_close(pool(x[1:2, :4]), out[1:2], atol=1e-5, rtol=0)


def test_mean_and_max_equal_hand_computation():
    torch.manual_seed(2)
    x = torch.randn(2, 6, 3)
    lengths = [6, 2]
    mask = _mask(lengths, 6)
    xn = x.numpy()
    mean = np.stack([xn[i, :n].mean(0) for i, n in enumerate(lengths)])
    mx = np.stack([xn[i, :n].max(0) for i, n in enumerate(lengths)])
    np.testing.assert_allclose(MeanPool()(x, mask).numpy(), mean, atol=1e-6)
    np.testing.assert_allclose(MaxPool()(x, mask).numpy(), mx, atol=1e-6)
    # a sequence with no valid token pools to zeros, not NaN or −inf
    none = torch.zeros(2, 6, dtype=torch.bool)
    assert torch.all(MeanPool()(x, none) == 0) and torch.all(MaxPool()(x, none) == 0)


@pytest.mark.parametrize("pool,heads", [(AttentionPool(16), 1),
                                        (MultiHeadAttentionPool(16, 4, 3), 12)])
def test_attention_pool_weights(pool, heads):
    torch.manual_seed(3)
    x = torch.randn(3, 9, 16)
    mask = _mask([9, 5, 2], 9)
    pool(x, mask)
    w = pool.last_weights
    assert w.shape == (3, heads, 9)
    torch.testing.assert_close(w.sum(-1), torch.ones(3, heads))
    assert torch.all(w.masked_select(~mask[:, None, :].expand_as(w)) == 0)
    assert torch.all(w[mask[:, None, :].expand_as(w)] > 0)


def test_attention_pool_is_an_explicit_weighted_sum():
    torch.manual_seed(4)
    pool = AttentionPool(8)
    x = torch.randn(2, 5, 8)
    mask = _mask([5, 3], 5)
    k, v = pool.kv(x).chunk(2, dim=-1)                                              # [B,T,D]
    s = (k @ pool.query[0]) / np.sqrt(8)
    w = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)                 # [B,T]
    expected = pool.out((w[..., None] * v).sum(1))
    torch.testing.assert_close(pool(x, mask), expected, atol=1e-6, rtol=0)


@pytest.mark.parametrize("kind", POOLS)
def test_pools_are_permutation_invariant(kind):
    pool = _pools()[kind]
    torch.manual_seed(5)
    x = torch.randn(2, 8, 16)
    perm = torch.randperm(8)
    torch.testing.assert_close(pool(x[:, perm]), pool(x), atol=1e-5, rtol=0)
    # with a mask, permuting tokens and mask together changes nothing either
    mask = _mask([8, 5], 8)
    torch.testing.assert_close(pool(x[:, perm], mask[:, perm]), pool(x, mask), atol=1e-5,
                               rtol=0)


def test_cls_pool_prepend_and_read():
    torch.manual_seed(6)
    pool = ClsPool(8, mix=False)
    assert pool.block is None
    x, mask = torch.randn(2, 4, 8), _mask([4, 2], 4)
    t, m = pool.prepend(x, mask)
    assert t.shape == (2, 5, 8) and torch.equal(t[:, 1:], x)
    torch.testing.assert_close(t[:, 0], pool.cls[0].expand(2, 8))
    assert m.tolist() == [[True] * 5, [True, True, True, False, False]]
    assert pool.prepend(x)[1] is None
    torch.testing.assert_close(pool(t, m), t[:, 0])
    mixing = ClsPool(8, n_heads=2)
    mixing(x, mask)
    assert mixing.last_weights.shape == (2, 2, 4)       # the CLS row over the tokens
    total = mixing.last_weights.sum(-1)                  # the rest is the CLS on itself
    assert torch.all((total > 0) & (total < 1))
    assert torch.all(mixing.last_weights[1, :, 2:] == 0)


def test_pool_errors():
    with pytest.raises(ConfigError, match="pool must be one of mean, max, cls, attention, mha"):
        make_pool("sum", 8)
    with pytest.raises(ConfigError, match="pool dimension 10 is not divisible by pool n_heads 4"):
        MultiHeadAttentionPool(10, 4)
    with pytest.raises(ConfigError, match="n_queries"):
        MultiHeadAttentionPool(8, 2, 0)


# ---------------------------------------------------------------------------- encoders

def test_resnet_shapes_widths_and_stride():
    torch.manual_seed(7)
    net = ResNet1D(3, d=8, blocks=3)
    assert net.d_out == 16
    assert [b.convs[0].out_channels for b in net.blocks] == [8, 16, 16]    # 64,128,128 × d/64
    assert [c.kernel_size[0] for c in net.blocks[0].convs] == [8, 5, 3]
    # same width: batch norm on the input as in Fawaz et al.'s ResNet
    assert isinstance(net.blocks[2].shortcut, torch.nn.BatchNorm1d)
    assert all(isinstance(b.shortcut, torch.nn.Sequential) for b in net.blocks[:2])
    tok, m = net(torch.randn(2, 3, 21), _mask([21, 10], 21))
    assert tok.shape == (2, 21, 16) and m.shape == (2, 21)
    strided = ResNet1D(1, d=4, blocks=2, stride=2)
    tok, m = strided(torch.randn(2, 1, 21), _mask([21, 5], 21))
    assert tok.shape == (2, 6, 8) and strided.steps_per_token == 4
    # steps 0–4 valid → windows of 2: [0-1] [2-3] [4-5] valid, then [0-2] [3-5] after block 2
    assert m.tolist() == [[True] * 6, [True, True, False, False, False, False]]
    assert torch.all(tok[1, 2:] == 0)


def _encoders():
    torch.manual_seed(8)
    return {
        "resnet": ResNet1D(2, d=8, blocks=2),
        "resnet-stride": ResNet1D(2, d=8, blocks=2, stride=2),
        "resnet-odd-even-stride": ResNet1D(2, d=8, blocks=2, kernel_sizes=(7, 4, 3), stride=2),
        "step-sin": TransformerEncoder(2, d=16, n_heads=4, layers=2, max_len=64),
        "step-rope-gqa": TransformerEncoder(2, d=16, n_heads=4, n_kv_heads=2, layers=2,
                                            positional="rope", max_len=64),
        "patch-learned-post": TransformerEncoder(2, d=16, n_heads=2, n_kv_heads=1, norm="post",
                                                 tokens="patch", patch=4, positional="learned",
                                                 max_len=64),
        "patch-none": TransformerEncoder(2, d=16, tokens="patch", patch=5, positional="none",
                                         max_len=64),
    }


@pytest.mark.parametrize("name", list(_encoders()))
def test_padding_equals_truncation(name):
    enc = _encoders()[name].eval()
    torch.manual_seed(9)
    x = torch.randn(2, 2, 30)
    mask = _mask([30, 17], 30)
    junk = x.clone()
    junk[1, :, 17:] = 100.0
    tok, m = enc(junk, mask)
    alone, m_alone = enc(x[1:, :, :17])
    assert m_alone is None
    n = alone.shape[1]
    assert m[1].sum() == n and torch.all(m[0])
    torch.testing.assert_close(tok[1, :n], alone[0], atol=1e-4, rtol=0)
    torch.testing.assert_close(enc(x, mask)[0][m], tok[m], atol=1e-4, rtol=0)


def test_transformer_tokens_weights_and_prefix():
    torch.manual_seed(10)
    enc = TransformerEncoder(3, d=16, n_heads=4, layers=3, tokens="patch", patch=4, max_len=40)
    x = torch.randn(2, 3, 18)                       # 18 steps → 5 patches (last one padded)
    tok, m = enc(x, _mask([18, 9], 18), need_weights=True)
    assert tok.shape == (2, 5, 16) and enc.steps_per_token == 4
    assert m.tolist() == [[True] * 5, [True, True, True, False, False]]   # step 8 in patch 2
    assert len(enc.last_weights) == 3 and enc.last_weights[0].shape == (2, 4, 5, 5)
    enc(x)
    assert enc.last_weights is None
    cls = ClsPool(16, mix=False)
    tok, m = enc(x, _mask([18, 9], 18), prefix=cls.prepend, need_weights=True)
    assert tok.shape == (2, 6, 16) and m[:, 0].all()
    assert enc.last_weights[-1].shape == (2, 4, 6, 6)


def test_transformer_uses_positions_unless_none():
    torch.manual_seed(11)
    x = torch.randn(1, 1, 12)
    perm = torch.randperm(12)
    for positional, invariant in (("sinusoidal", False), ("rope", False), ("none", True)):
        enc = TransformerEncoder(1, d=8, n_heads=2, positional=positional, max_len=12).eval()
        a = enc(x)[0].mean(1)
        b = enc(x[..., perm])[0].mean(1)
        assert torch.allclose(a, b, atol=1e-5) == invariant, positional


def test_encoder_errors():
    enc = TransformerEncoder(2, d=8, n_heads=2, max_len=10)
    with pytest.raises(ConfigError, match="max_len=10"):
        enc(torch.randn(1, 2, 11))
    with pytest.raises(DataError, match="series have 3 channels, the encoder was built for 2"):
        enc(torch.randn(1, 3, 5))
    with pytest.raises(DataError, match=r"float tensor \[B, C, T\]"):
        enc(torch.randn(2, 5))
    with pytest.raises(DataError, match=r"mask must have shape \[B, T\] = \[1, 5\]"):
        enc(torch.randn(1, 2, 5), torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(ConfigError, match="tokens must be one of step, patch"):
        TransformerEncoder(2, tokens="frame")
    with pytest.raises(ConfigError, match="norm must be one of pre, post"):
        TransformerEncoder(2, norm="sandwich")
    with pytest.raises(ConfigError, match="kernel_sizes"):
        ResNet1D(2, kernel_sizes=())


# ---------------------------------------------------------------------------- classifier

def _batch(c=2, t=24, lengths=(24, 13, 6), seed=12):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(len(lengths), c, t, generator=g), _mask(list(lengths), t)


@pytest.mark.parametrize("encoder,pool", list(itertools.product(ENCODERS, POOLS)))
def test_every_encoder_and_pool(encoder, pool):
    torch.manual_seed(13)
    cfg = ModelConfig(encoder=encoder, pool=pool, d_model=16, n_heads=4, blocks=2, dropout=0.1,
                      pool_heads=2, pool_queries=2)
    model = build_classifier(cfg, n_channels=2, n_classes=3, max_len=32)
    x, mask = _batch()
    model.train()
    logits = model(x, mask)
    assert logits.shape == (3, 3)
    loss = torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1, 2]))
    loss.backward()
    for name, p in model.named_parameters():                  # every parameter is used
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    model.eval()
    junk = x.clone()
    junk[~mask[:, None, :].expand_as(x)] = 1e3
    torch.testing.assert_close(model(junk, mask), model(x, mask), atol=1e-4, rtol=0)
    maps = model.attention_maps(x, mask)
    # the logits of the reference-attention pass are the forward pass's
    torch.testing.assert_close(maps["logits"], model(x, mask), atol=1e-5, rtol=0)
    if pool in ("mean", "max"):
        assert maps["pool"] is None
    else:
        w = maps["pool"]
        assert w.shape[0] == 3 and w.shape[2] == 24
        total = w.sum(-1)
        if pool == "cls":                                     # the rest is the CLS on itself
            assert torch.all((total > 0) & (total < 1))
        else:
            torch.testing.assert_close(total, torch.ones(w.shape[:2]), atol=1e-5, rtol=0)
        assert torch.all(w.masked_select(~maps["mask"][:, None, :].expand_as(w)) == 0)
    if encoder == "resnet":
        assert maps["self"] is None
    else:
        extra = maps["n_prefix"]
        assert extra == (pool == "cls")
        assert [m.shape for m in maps["self"]] == [(3, 4, 24 + extra, 24 + extra)] * 2


@pytest.mark.parametrize("kw", [dict(tokens="patch", patch=5, positional="rope", n_kv_heads=1),
                                dict(norm_position="post", positional="learned", n_kv_heads=2),
                                dict(pool="cls", tokens="patch", patch=4, positional="none")])
def test_transformer_variants_mask_invariance(kw):
    torch.manual_seed(14)
    cfg = ModelConfig(**{"d_model": 16, "n_heads": 4, "blocks": 1, **kw})
    model = build_classifier(cfg, 2, 2, max_len=30).eval()
    x, mask = _batch()
    junk = x.clone()
    junk[~mask[:, None, :].expand_as(x)] = -7.0
    torch.testing.assert_close(model(junk, mask), model(x, mask), atol=1e-4, rtol=0)
    torch.testing.assert_close(model(x[2:, :, :6]), model(x, mask)[2:], atol=1e-4, rtol=0)


@pytest.mark.parametrize("encoder", ["resnet", "transformer"])
def test_glorot_init_and_no_head_norm(encoder):
    """weight_init="glorot": every Conv1d/Linear weight is U(±√(6/(fan_in+fan_out))) with fan
    counting kernel taps (Keras's glorot_uniform), biases 0, everything else as "torch" draws
    it; head_norm=False: logits = Linear(pool(tokens)), no LayerNorm parameters."""
    kw = dict(encoder=encoder, pool="attention", d_model=16, n_heads=4, blocks=2)
    torch.manual_seed(20)
    base = build_classifier(ModelConfig(**kw, weight_init="torch", head_norm="true"), 2, 3, 40)
    torch.manual_seed(20)
    model = build_classifier(ModelConfig(**kw, weight_init="glorot", head_norm="false"), 2, 3, 40)
    assert isinstance(model.head[0], torch.nn.Identity)
    assert not any(n.startswith("head.0") for n, _ in model.named_parameters())
    layers = [m for m in model.modules() if isinstance(m, (torch.nn.Conv1d, torch.nn.Linear))]
    assert layers

    def bound(w):                          # [out, in(, taps)]
        taps = w[0, 0].numel() if w.dim() > 2 else 1
        return (6.0 / ((w.shape[0] + w.shape[1]) * taps)) ** 0.5

    for m in layers:
        w = m.weight.detach()
        assert w.abs().max() <= bound(w) and w.abs().max() > 0.7 * bound(w), m
        if m.bias is not None:
            assert not m.bias.any()
    # the wide layers' spread is the uniform's, bound / √3 (PyTorch's default is narrower)
    w = max(layers, key=lambda m: m.weight.numel()).weight.detach()
    assert abs(w.std().item() / (bound(w) / 3 ** 0.5) - 1) < 0.05
    # parameters of other modules (norms, CLS token, pooling query) are drawn as before
    others = [(n, p) for name, m in model.named_modules()
              if not isinstance(m, (torch.nn.Conv1d, torch.nn.Linear))
              for n, p in m.named_parameters(prefix=name, recurse=False)]
    assert len(others) > 4
    for n, p in others:
        assert torch.equal(p, base.get_parameter(n)), n
    x, mask = _batch()
    model.eval()
    with torch.no_grad():
        tokens, tmask = model._encode(x, mask, need_weights=False)
        torch.testing.assert_close(model(x, mask), model.head[1](model.pool(tokens, tmask)))


@pytest.mark.parametrize("tokens", ["step", "conv"])
def test_tiny_model_overfits_16_samples(tokens):
    from kairo.tsc import recompute_bn_stats

    torch.manual_seed(15)
    t = torch.linspace(0, 1, 32)
    y = torch.arange(16) % 2
    x = torch.sin(2 * torch.pi * (1 + 2 * y[:, None]) * t + torch.rand(16, 1) * 6.28)
    x = (x + 0.3 * torch.randn(16, 32))[:, None, :]                    # [16, 1, 32]
    lengths = torch.randint(20, 33, (16,))
    mask = torch.arange(32)[None, :] < lengths[:, None]
    cfg = ModelConfig(d_model=16, n_heads=2, blocks=1, dropout=0.0, pool="attention",
                      tokens=tokens, max_tokens=8)
    model = build_classifier(cfg, 1, 2, max_len=32)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    for step in range(300):
        loss = torch.nn.functional.cross_entropy(model(x, mask), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 25 == 0 and (model(x, mask).argmax(1) == y).all():
            break
    recompute_bn_stats(model, x, mask)        # the conv stem's batch norms (no-op for steps)
    model.eval()
    assert (model(x, mask).argmax(1) == y).all()


def test_arch_and_config_errors():
    cfg = ModelConfig(encoder="resnet", pool="max", d_model=8)
    model = build_classifier(cfg, 3, 4, 50)
    assert isinstance(model, TSClassifier)
    assert model.arch == {**dataclasses.asdict(cfg), "n_channels": 3, "n_classes": 4,
                          "max_len": 50}
    bad = [({"encoder": "lstm"}, "encoder: expected one of resnet, transformer"),
           ({"pool": "sum"}, "pool: expected one of mean, max, cls, attention, mha"),
           ({"norm_position": "mid"}, "norm_position: expected one of pre, post"),
           ({"tokens": "word"}, "tokens: expected one of step, patch"),
           ({"positional": "alibi"}, "positional: expected one of sinusoidal, learned"),
           ({"d_model": 30}, "d_model 30 is not divisible by n_heads 4"),
           ({"n_kv_heads": 3}, r"n_kv_heads \(3\) must divide n_heads \(4\)"),
           ({"n_kv_heads": -1}, "n_kv_heads must be ≥ 0"),
           ({"blocks": 0}, "blocks must be ≥ 1"),
           ({"blocks": True}, "blocks must be an integer"),
           ({"dropout": 1.0}, r"dropout must be < 1"),
           ({"pool": "mha", "pool_heads": 3}, r"pool_heads \(3\) must divide d_model \(64\)"),
           ({"positional": "rope", "d_model": 12, "n_heads": 4}, "rope needs an even head size"),
           ({"kernel_sizes": (8, 0)}, "kernel_sizes must be ≥ 1"),
           ({"kernel_sizes": ()}, "kernel_sizes must list at least one"),
           ({"kernel_sizes": [8]}, "kernel_sizes must be a list"),
           ({"head_norm": "off"}, "head_norm: expected one of auto, true, false"),
           ({"head_norm": True}, "head_norm: expected one of auto, true, false"),
           ({"weight_init": "keras"}, "weight_init: expected one of auto, torch, glorot")]
    for kw, match in bad:
        with pytest.raises(ConfigError, match=match):
            ModelConfig(**kw)
    with pytest.raises(ConfigError, match="n_classes must be an integer ≥ 2"):
        build_classifier(ModelConfig(), 1, 1, 10)
    with pytest.raises(ConfigError, match="cfg must be a ModelConfig"):
        build_classifier({"encoder": "resnet"}, 1, 2, 10)
    with pytest.raises(DataError, match="series have 2 channels"):
        model(torch.randn(1, 2, 10))


@pytest.mark.parametrize("layout", ["channels_last", "bct"])
def test_resnet_runs_in_its_layout_and_keeps_conv1d_state_dict(layout):
    """The blocks compute on [B, C, 1, T] channels-last or [B, C, T] activations, as asked, in
    training and eval, with and without a mask; the modules and state dict stay those of
    Conv1d / BatchNorm1d, so the tokens equal a plain Conv1d forward with the same weights."""
    import torch.nn.functional as F

    torch.manual_seed(3)
    enc = ResNet1D(2, d=4, blocks=2, layout=layout)
    seen = []
    for b in enc.blocks:
        b.register_forward_hook(lambda m, i, o: seen.append(
            o[0].dim() == 4 and o[0].is_contiguous(memory_format=torch.channels_last)
            if layout == "channels_last" else o[0].dim() == 3 and o[0].is_contiguous()))
    x, mask = torch.randn(3, 2, 17), _mask([17, 9, 4], 17)
    for train in (True, False):
        enc.train(train)
        for m in (None, mask):
            tok, _ = enc(x, m)
            assert tok.is_contiguous()
    assert len(seen) == 8 and all(seen)
    sd = enc.state_dict()
    assert sd["blocks.0.convs.0.weight"].shape == (4, 2, 8)
    assert all(isinstance(n, torch.nn.BatchNorm1d) for b in enc.blocks for n in b.norms)
    enc.eval()
    y = x
    for blk in enc.blocks:                      # the same block, on [B, C, T] with F.conv1d
        z = y
        for i, (conv, bn, k) in enumerate(zip(blk.convs, blk.norms, blk.kernel_sizes)):
            z = bn(F.conv1d(F.pad(z, ((k - 1) // 2, k // 2)), conv.weight))
            z = F.relu(z) if i < 2 else z
        y = F.relu(z + blk.shortcut(y))
    torch.testing.assert_close(enc(x)[0], y.transpose(1, 2), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("stride", [1, 2])
def test_resnet_layouts_compute_the_same_function_gradients_and_statistics(stride):
    """Two copies, one per layout, one training step each on masked series: equal tokens,
    input and weight gradients, running statistics, and equal eval outputs after the step
    (batch norm folded into the convs)."""
    import copy

    torch.manual_seed(5)
    cl = ResNet1D(3, d=6, blocks=2, stride=stride, layout="channels_last")
    bct = copy.deepcopy(cl)
    bct.layout = "bct"
    x, mask = torch.randn(4, 3, 29), _mask([29, 20, 7, 29], 29)
    out = {}
    for name, enc in (("cl", cl), ("bct", bct)):
        xi = x.clone().requires_grad_()
        tok, m = enc.train()(xi, mask)
        (tok * torch.linspace(-1, 1, tok.shape[-1])).square().sum().backward()
        out[name] = tok.detach(), m, xi.grad, [p.grad for p in enc.parameters()]
    (ta, ma, ga, pa), (tb, mb, gb, pb) = out["cl"], out["bct"]
    assert torch.equal(ma, mb)
    torch.testing.assert_close(ta, tb, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ga, gb, atol=1e-4, rtol=1e-4)
    for a, b in zip(pa, pb):
        torch.testing.assert_close(a, b, atol=1e-4 * b.abs().max().item(), rtol=1e-4)
    for a, b in zip(cl.buffers(), bct.buffers()):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert cl.state_dict().keys() == bct.state_dict().keys()
    with torch.no_grad():
        torch.testing.assert_close(cl.eval()(x, mask)[0], bct.eval()(x, mask)[0], atol=1e-5,
                                   rtol=1e-5)


def test_resnet_auto_layout_rule(monkeypatch):
    """auto: channels-last on AVX-512 CPUs and off the CPU, [B, C, T] on other CPUs; an
    explicit layout is kept; bad values are named."""
    from kairo.tsc import _encoders as E

    for cap, want in (("AVX512", "channels_last"), ("AVX2", "bct"), ("DEFAULT", "bct")):
        monkeypatch.setattr(E, "_cpu_capability", lambda cap=cap: cap)
        assert E.resnet_layout("auto") == want
        assert E.resnet_layout("auto", "meta") == "channels_last"
        assert E.resnet_layout("bct") == "bct"
        assert E.resnet_layout("channels_last") == "channels_last"
    with pytest.raises(ConfigError, match="layout must be one of auto, channels_last, bct"):
        ResNet1D(1, layout="NCW")


@pytest.mark.parametrize("kernels,stride", [((8, 5, 3), 1), ((7, 4, 3), 1), ((8, 5, 3), 3)])
def test_resnet_block_is_same_padded_convolution(kernels, stride):
    """Each conv sees (k-1)//2 zeros on the left and k//2 on the right, for odd and even k;
    in eval mode the batch norms folded into the convs give what conv → batch norm gives."""
    import torch.nn.functional as F

    torch.manual_seed(12)
    enc = ResNet1D(3, d=4, blocks=1, kernel_sizes=kernels, stride=stride)
    block = enc.blocks[0]
    with torch.no_grad():           # batch norms that are not the identity at eval time
        for bn in [m for m in enc.modules() if isinstance(m, torch.nn.BatchNorm1d)]:
            bn.running_mean.normal_()
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.normal_()
    x = torch.randn(2, 3, 23)
    for train in (False, True):
        enc.train(train)
        y = x
        for i, (conv, bn, k) in enumerate(zip(block.convs, block.norms, kernels)):
            y = bn(F.conv1d(F.pad(y, ((k - 1) // 2, k // 2)), conv.weight,
                            stride=stride if i == 0 else 1))
            y = F.relu(y) if i < len(kernels) - 1 else y
        ref = F.relu(y + block.shortcut(x))
        out, _ = enc(x)
        assert out.shape == (2, -(-23 // stride), 4)            # one block: width d
        torch.testing.assert_close(out, ref.transpose(1, 2), atol=1e-5, rtol=1e-5)
    enc.eval()              # the folded path stays differentiable (e.g. for saliency)
    enc(x.requires_grad_())[0].sum().backward()
    assert x.grad.abs().sum() > 0 and block.convs[0].weight.grad.abs().sum() > 0


def test_masked_batch_norm_counts_valid_steps_only():
    """In training, a batch norm given a mask normalizes with the statistics of the valid steps
    (= BatchNorm1d over those steps alone) and updates its running averages from them; with
    every step valid it is BatchNorm1d."""
    from kairo.tsc._encoders import _BatchNormCL

    torch.manual_seed(12)
    x = torch.randn(3, 4, 1, 10) * 2 + 1
    lengths = [10, 6, 3]
    m = _mask(lengths, 10)[:, None, None, :].float()
    bn, ref = _BatchNormCL(4), torch.nn.BatchNorm1d(4)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 2)
        bn.bias.uniform_(-1, 1)
    ref.load_state_dict(bn.state_dict())
    y = bn(x, m)
    # reference: the valid steps laid side by side, one long series
    valid = torch.cat([x[i, :, 0, :n] for i, n in enumerate(lengths)], dim=1)[None]
    want = ref(valid)[0]
    got = torch.cat([y[i, :, 0, :n] for i, n in enumerate(lengths)], dim=1)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(bn.running_mean, ref.running_mean)
    torch.testing.assert_close(bn.running_var, ref.running_var)
    assert int(bn.num_batches_tracked) == 1
    # all valid: the plain batch norm path, same result
    full = torch.ones_like(m)
    bn2, ref2 = _BatchNormCL(4), _BatchNormCL(4)
    torch.testing.assert_close(bn2(x, full), ref2(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(bn2.running_var, ref2.running_var)
    # eval mode ignores the mask (running statistics)
    bn.eval()
    torch.testing.assert_close(bn(x, m), ref.eval()(x[:, :, 0])[:, :, None])


def test_resnet_training_output_does_not_depend_on_the_batch_padding():
    """A training-mode forward (batch statistics): adding padding to the batch leaves every
    valid token unchanged, and so does what recompute_bn_stats stores."""
    from kairo.tsc import recompute_bn_stats

    torch.manual_seed(13)
    enc = ResNet1D(2, d=16).train()
    x = torch.randn(3, 2, 20)
    mask = _mask([20, 12, 7], 20)
    tok, m = enc(x, mask)
    longer = torch.cat([x, torch.randn(3, 2, 25) * 50], dim=2)     # junk beyond the end
    longer_mask = torch.cat([mask, torch.zeros(3, 25, dtype=torch.bool)], dim=1)
    tok2, m2 = enc(longer, longer_mask)
    torch.testing.assert_close(tok2[:, :20][m], tok[m], atol=1e-4, rtol=1e-4)
    assert not m2[:, 20:].any()
    a, b = ResNet1D(2, d=16), ResNet1D(2, d=16)
    b.load_state_dict(a.state_dict())
    recompute_bn_stats(a, x, mask)
    recompute_bn_stats(b, longer, longer_mask)
    for (name, u), v in zip(a.state_dict().items(), b.state_dict().values()):
        if "running" in name:
            torch.testing.assert_close(u, v, atol=1e-4, rtol=1e-4, msg=name)
