"""The default recipe: the table of rules that decides every "auto" (resolve_recipe) and the
parts it builds: convolutional tokens (shapes, window means, masks), the stem's depth and
dilation, the weight-decay groups and the step budget."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
import torch

from kairo import ConfigError
from kairo.tsc import (ClsPool, LearnedEncoding, ModelConfig, MultiHeadAttentionPool,
                             SeriesStats, TrainConfig, TransformerEncoder, build_classifier,
                             from_arrays, resolve_recipe, series_stats, smoothness)
from kairo.tsc._encoders import _window_mean
from kairo.tsc._recipe import (MIXUP_AUTO_SMOOTHNESS, SAM_AUTO_STEPS, TIME_WARP_AUTO,
                                     model_recipe, receptive_field, stem_pool, token_window)
from kairo.tsc._train import n_epochs, param_groups


def _mask(lengths, t):
    return torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]               # [B, T]


@pytest.mark.parametrize("max_len,max_tokens,window,n_tok", [(1460, 64, 23, 64),
                                                             (150, 64, 3, 50),
                                                             (24, 64, 1, 24),
                                                             (65, 64, 2, 33)])
def test_conv_tokens_shapes(max_len, max_tokens, window, n_tok):
    torch.manual_seed(0)
    enc = TransformerEncoder(2, d=16, n_heads=4, layers=1, tokens="conv",
                             positional="rope", max_len=max_len, max_tokens=max_tokens).eval()
    tok, m = enc(torch.randn(3, 2, max_len))
    assert enc.steps_per_token == window and m is None
    assert tok.shape == (3, n_tok, 16) and n_tok <= max_tokens
    assert math.ceil(max_len / window) == n_tok


def test_window_mean_known_values():
    x = torch.arange(1.0, 8.0).view(1, 7, 1).repeat(2, 1, 1)            # steps 1 … 7, twice
    mask = _mask([7, 4], 7)
    x[1, 4:] = 0.0                     # the stem hands over zeros at masked steps
    tok, m = _window_mean(x, mask, 3)
    # windows (1, 2, 3), (4, 5, 6), (7) and for the short series (1, 2, 3), (4), nothing
    assert tok[0, :, 0].tolist() == [2.0, 5.0, 7.0]
    assert tok[1, :, 0].tolist() == [2.0, 4.0, 0.0]
    assert m.tolist() == [[True, True, True], [True, True, False]]
    alone, none = _window_mean(x[:1], None, 3)
    assert none is None and torch.equal(alone, tok[:1])
    assert _window_mean(x, mask, 1) == (x, mask)


def test_conv_tokens_padding_equals_truncation_and_ignores_padding_values():
    torch.manual_seed(1)
    cfg = ModelConfig(tokens="conv", max_tokens=8, positional="rope", d_model=16, n_heads=4,
                      blocks=1, stem_blocks=2)
    model = build_classifier(cfg, 2, 3, max_len=40).eval()          # windows of 5 steps
    x = torch.randn(3, 2, 40)
    mask = _mask([40, 23, 6], 40)
    junk = x.clone()
    junk[~mask[:, None, :].expand_as(x)] = 1e3
    full = model(x, mask)
    torch.testing.assert_close(model(junk, mask), full, atol=1e-4, rtol=0)
    torch.testing.assert_close(model(x[1:2, :, :23]), full[1:2], atol=1e-4, rtol=0)
    torch.testing.assert_close(model(x[2:, :, :6]), full[2:], atol=1e-4, rtol=0)


def test_conv_tokens_train_and_every_parameter_gets_a_gradient():
    torch.manual_seed(2)
    cfg = ModelConfig(tokens="conv", max_tokens=6, d_model=16, n_heads=4, blocks=1,
                      pool="mha", pool_heads=2)
    model = build_classifier(cfg, 1, 2, max_len=30).train()
    loss = torch.nn.functional.cross_entropy(model(torch.randn(4, 1, 30), _mask([30, 30, 20, 9], 30)),
                                             torch.tensor([0, 1, 0, 1]))
    loss.backward()
    for name, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    assert model.attention_maps(torch.randn(1, 1, 30))["steps_per_token"] == 5


def _stem_blocks(encoder) -> int:
    pooled = encoder.stem_pooled
    return len(encoder.stem.blocks) + (len(pooled.blocks) if pooled is not None else 0)


@pytest.mark.parametrize("max_len,blocks", [(24, 3), (512, 3), (513, 1), (896, 1),
                                            (897, 2), (1460, 2)])
def test_stem_blocks_auto_follows_the_series_length(tmp_path, max_len, blocks):
    """stem_blocks 0 (the default) builds 3 full-resolution blocks up to 512 steps, 1 beyond,
    and 2 where the first is dilated (over 896 steps); the config keeps 0, the model records
    what it built, and a saved model is rebuilt with the same stem."""
    from kairo.tsc import load_classifier, save_classifier

    cfg = ModelConfig(d_model=8, n_heads=2, blocks=1)
    assert cfg.stem_blocks == 0
    assert model_recipe(cfg, max_len)["stem_blocks"] == blocks
    assert model_recipe(ModelConfig(stem_blocks=2), max_len)["stem_blocks"] == 2
    assert model_recipe(ModelConfig(stem_dilation="off"), 2000)["stem_blocks"] == 1
    model = build_classifier(cfg, 1, 2, max_len=max_len).eval()
    assert _stem_blocks(model.encoder) == blocks
    assert model.resolved["stem_blocks"] == blocks and model.arch["stem_blocks"] == 0
    path = tmp_path / "m.pt"
    save_classifier(path, model, cfg)
    back, _ = load_classifier(path)
    assert _stem_blocks(back.encoder) == blocks
    x = torch.randn(2, 1, max_len)
    torch.testing.assert_close(back(x), model(x))
    # the stem is a conv-token option: no resolved value for other tokens or the ResNet
    assert "stem_blocks" not in ModelConfig(tokens="step").resolved(max_len)
    assert "stem_blocks" not in ModelConfig(encoder="resnet").resolved(max_len)


@pytest.mark.parametrize("window,dilations", [(1, (1, 1, 1)), (14, (1, 1, 1)),
                                              (15, (1, 1, 2)), (23, (1, 2, 4)),
                                              (32, (1, 3, 6)), (100, (1, 12, 23))])
def test_stem_dilation_auto_known_values(window, dilations):
    """auto: undilated while the first block (kernels 8, 5, 3) sees 14 steps ≥ the window;
    beyond, d_last = ⌈(window − 8) / 4⌉ and the middle conv half of it, rounded up."""
    assert _dilations("auto", (8, 5, 3), window) == dilations
    assert _dilations("off", (8, 5, 3), window) == (1, 1, 1)
    assert _dilations("2,1,5", (8, 5, 3), window) == (2, 1, 5)


@pytest.mark.parametrize("kernels", [(8, 5, 3), (7,), (9, 9), (3, 3, 3, 3), (8, 1, 1)])
def test_stem_dilation_auto_covers_the_window_and_is_the_smallest_in_its_ratio(kernels):
    """Any kernels: the block then sees at least the window, and no smaller last dilation in
    the same ratio would."""
    for window in range(1, 300):
        d = _dilations("auto", kernels, window)
        ones = (1,) * len(kernels)
        rf = receptive_field(kernels, d)
        if all(k == 1 for k in kernels[1:]) and len(kernels) > 1:
            assert d == ones                          # nothing a dilation could widen
            continue
        assert rf >= window
        if d != ones:
            assert d[0] == 1 or len(kernels) == 1     # the first conv reads full detail
            assert list(d[1:]) == sorted(d[1:])       # growing towards the last
            assert receptive_field(kernels, ones) < window
            # smallest: with the last conv's dilation one less (the rest in the 1 : 2 … ratio,
            # unrounded) the block would no longer cover the window
            n = len(kernels) - 1 or 1
            later = kernels[1:] if len(kernels) > 1 else kernels
            base = 1 + (kernels[0] - 1 if len(kernels) > 1 else 0)
            assert base + sum((k - 1) * (d[-1] - 1) / 2 ** (n - 1 - i)
                              for i, k in enumerate(later)) < window


def test_stem_receptive_field_measured_by_the_gradient():
    """One output step of the dilated stem depends on exactly receptive_field input steps."""
    torch.manual_seed(3)
    enc = TransformerEncoder(1, d=8, n_heads=2, layers=1, tokens="conv", max_len=2000,
                             stem_dilations=(1, 3, 6)).eval()
    for layout in ("bct", "channels_last"):
        enc.stem.layout = layout
        x = torch.randn(1, 1, 400, requires_grad=True)
        feats, _ = enc.stem(x)                                            # [1, 400, 8]
        feats[0, 200].abs().sum().backward()
        seen = (x.grad[0, 0] != 0).nonzero().flatten()
        assert seen.max() - seen.min() + 1 == receptive_field((8, 5, 3), (1, 3, 6)) == 32


@pytest.mark.parametrize("max_len,dilations", [(150, [1, 1, 1]), (896, [1, 1, 1]),
                                               (897, [1, 1, 2]), (1460, [1, 2, 4]),
                                               (2000, [1, 3, 6])])
def test_stem_dilation_auto_follows_the_window_and_survives_saving(tmp_path, max_len,
                                                                  dilations):
    """The default dilates only series whose windows exceed 14 steps (over 896 steps with 64
    tokens); the model records and saves what it built, and loads it back even if the rule
    were to change."""
    from kairo.tsc import load_classifier, save_classifier

    cfg = ModelConfig(d_model=8, n_heads=2, blocks=1)
    assert cfg.stem_dilation == "auto"
    model = build_classifier(cfg, 1, 2, max_len=max_len).eval()
    assert model.resolved["stem_dilations"] == dilations
    assert [c.dilation[0] for c in model.encoder.stem.blocks[0].convs] == dilations
    path = tmp_path / "m.pt"
    save_classifier(path, model, cfg)
    back, _ = load_classifier(path)
    assert back.cfg.stem_dilation == ",".join(map(str, dilations))          # pinned
    x = torch.randn(2, 1, max_len)
    torch.testing.assert_close(back(x), model(x))
    off = build_classifier(ModelConfig(d_model=8, n_heads=2, blocks=1, stem_dilation="off"), 1,
                           2, max_len=max_len)
    assert off.resolved["stem_dilations"] == [1, 1, 1]
    assert "stem_dilations" not in ModelConfig(tokens="patch").resolved(max_len)
    assert "stem_dilations" not in ModelConfig(encoder="resnet").resolved(max_len)


@pytest.mark.parametrize("max_len,max_tokens,pool,window", [(1460, 64, 1, 23), (2000, 64, 12, 3),
                                                            (1460, 64, 8, 3), (64, 64, 1, 1),
                                                            (65, 64, 1, 2), (427, 64, 2, 4)])
def test_token_window_known_values(max_len, max_tokens, pool, window):
    """A token averages ceil(ceil(T / pool) / max_tokens) steps; the encoder builds exactly
    that window, so the stem's dilation rule and the tokens read one number."""
    assert token_window(max_len, max_tokens, pool) == window
    blocks = 2 if pool > 1 else 1
    enc = TransformerEncoder(1, tokens="conv", max_len=max_len, max_tokens=max_tokens,
                             stem_blocks=blocks, stem_pool=pool)
    assert enc.patch == window and enc.steps_per_token == window * pool


@pytest.mark.parametrize("blocks,dilations,pool", [(2, (1, 3, 6), 12), (3, (1, 2, 4), 8),
                                                   (1, (1, 3, 6), 1), (3, (1, 1, 1), 1),
                                                   (2, (2,), 4)])
def test_stem_pool_known_values(blocks, dilations, pool):
    """Blocks after a dilated first block read its output pooled over 2 × its last dilation;
    one block or an undilated first block pools nothing."""
    assert stem_pool(blocks, dilations) == pool


@pytest.mark.parametrize("max_len,dilations,pool,n_tok", [(2000, [1, 3, 6], 12, 56),
                                                          (1460, [1, 2, 4], 8, 61)])
def test_pooled_stem_block_spans_several_windows(max_len, dilations, pool, n_tok):
    """The default on a long series: a dilated first block at full resolution, a second
    block dilated 1, 2, 4 on its output averaged over 2d steps. One of its outputs depends
    on exactly 24 pooled steps of first-block features: 24 · q + rf − 1 input steps (319 on
    2,000 steps, a heartbeat or two of PigCVP), where the first block alone sees 32."""
    torch.manual_seed(5)
    model = build_classifier(ModelConfig(d_model=32, n_heads=2, blocks=1), 1, 2,
                             max_len=max_len).eval()          # wide: no edge tap all ReLU-dead
    enc = model.encoder
    assert model.resolved["stem_dilations"] == dilations and model.resolved["stem_pool"] == pool
    assert [c.dilation[0] for c in enc.stem_pooled.blocks[0].convs] == [1, 2, 4]
    assert enc.steps_per_token == pool * enc.patch
    tokens, _ = enc(torch.randn(2, 1, max_len))
    assert tokens.shape == (2, n_tok, 32)
    rf = receptive_field((8, 5, 3), dilations)
    for layout in ("bct", "channels_last"):
        enc.stem.layout = enc.stem_pooled.layout = layout
        x = torch.randn(1, 1, max_len, requires_grad=True)
        feats, _ = enc.stem(x)
        pooled, _ = _window_mean(feats, None, pool)
        out, _ = enc.stem_pooled(pooled.transpose(1, 2))
        out[0, 60].abs().sum().backward()
        seen = (x.grad[0, 0] != 0).nonzero().flatten()
        assert seen.max() - seen.min() + 1 == receptive_field((8, 5, 3), (1, 2, 4)) * pool \
            + rf - 1


def test_a_model_file_whose_stem_this_kairo_would_build_otherwise_is_refused(tmp_path):
    """The pooling of the second stem block has no config field to pin it: a file whose
    saved stem differs from what it rebuilds into is an error naming the field, never a
    model silently built another way."""
    from kairo import DataError
    from kairo.tsc import load_classifier, save_classifier

    cfg = ModelConfig(d_model=8, n_heads=2, blocks=1)
    model = build_classifier(cfg, 1, 2, max_len=1460).eval()
    path = tmp_path / "m.pt"
    save_classifier(path, model, cfg)
    back, _ = load_classifier(path)
    assert back.encoder.stem_pool == 8
    state = torch.load(path, weights_only=True)
    torch.save({**state, "resolved": {**state["resolved"], "stem_pool": 4}}, tmp_path / "x.pt")
    with pytest.raises(DataError, match=r"x\.pt: the rebuilt model differs .*'stem_pool': "
                                        r"\(4, 8\)"):
        load_classifier(tmp_path / "x.pt")


def test_dilated_stem_ignores_padding_and_equals_truncation():
    torch.manual_seed(4)
    cfg = ModelConfig(tokens="conv", max_tokens=8, d_model=16, n_heads=4, blocks=1,
                      stem_blocks=2)
    model = build_classifier(cfg, 2, 3, max_len=400).eval()        # windows of 50 steps
    assert model.resolved["stem_dilations"] == [1, 6, 11]
    x = torch.randn(3, 2, 400)
    mask = _mask([400, 230, 61], 400)
    junk = x.clone()
    junk[~mask[:, None, :].expand_as(x)] = 1e3
    assert model.resolved["stem_pool"] == 22                      # the second block pooled
    for layout in ("bct", "channels_last"):
        model.encoder.stem.layout = model.encoder.stem_pooled.layout = layout
        full = model(x, mask)
        torch.testing.assert_close(model(junk, mask), full, atol=1e-4, rtol=0)
        torch.testing.assert_close(model(x[1:2, :, :230]), full[1:2], atol=1e-4, rtol=0)
    model.train()                                  # the masked batch-norm path, too
    model(junk, mask).sum().backward()


def test_stem_dilation_errors():
    with pytest.raises(ConfigError, match="stem_dilation must be auto, off or 3 comma-separated"):
        ModelConfig(stem_dilation="1,2")
    with pytest.raises(ConfigError, match="got '1,0,2'"):
        ModelConfig(stem_dilation="1,0,2")
    with pytest.raises(ConfigError, match="got 'wide'"):
        ModelConfig(stem_dilation="wide")
    ModelConfig(encoder="resnet", stem_dilation="wide")   # a Transformer option: not read
    with pytest.raises(ConfigError, match="dilations must be one integer ≥ 1 per kernel"):
        TransformerEncoder(1, tokens="conv", stem_dilations=(1, 2))
    with pytest.raises(ConfigError, match="stem_pool=4 needs stem_blocks ≥ 2"):
        TransformerEncoder(1, tokens="conv", stem_pool=4)
    with pytest.raises(ConfigError, match="stem_pool=0"):
        TransformerEncoder(1, tokens="conv", stem_blocks=2, stem_pool=0)


def test_conv_tokens_config_errors():
    with pytest.raises(ConfigError, match="stem_blocks"):
        ModelConfig(tokens="conv", stem_blocks=-1)
    with pytest.raises(ConfigError, match="max_tokens"):
        ModelConfig(tokens="conv", max_tokens=0)
    with pytest.raises(ConfigError, match="tokens: expected one of step, patch, conv"):
        ModelConfig(tokens="frames")


@pytest.mark.parametrize("pool,positional", [("mha", "learned"), ("cls", "sinusoidal"),
                                             ("attention", "rope")])
def test_weight_decay_groups(pool, positional):
    cfg = ModelConfig(tokens="conv", pool=pool, positional=positional, d_model=16, n_heads=4,
                      blocks=1, pool_heads=2)
    model = build_classifier(cfg, 2, 3, max_len=32)
    decay, free = param_groups(model, 0.05)
    assert decay["weight_decay"] == 0.05 and free["weight_decay"] == 0.0
    ids = [id(p) for p in decay["params"] + free["params"]]
    assert sorted(ids) == sorted(id(p) for p in model.parameters())    # each exactly once
    names = {id(p): n for n, p in model.named_parameters()}
    free_names = {names[id(p)] for p in free["params"]}
    decay_names = {names[id(p)] for p in decay["params"]}
    # every weight matrix and kernel decays: attention projections, MLP, stem convs, the head
    assert all(p.ndim >= 2 for p in decay["params"])
    assert any(".attn.q_proj.weight" in n for n in decay_names)
    assert any("stem.blocks.0.convs.0.weight" in n for n in decay_names)
    assert "head.1.weight" in decay_names
    # never: biases, norms, pooling queries, CLS tokens, learned position tables
    # (a stem block's shortcut is a batch norm alone, or a conv then one: shortcut.1)
    exempt = re.compile(r"bias$|\.ln\d?\.|\.norms\.|shortcut\.1\.|shortcut\.weight$|^head\.0\.|"
                        r"query$|\.cls$|pos\.weight$")
    assert all(exempt.search(n) for n in free_names), free_names
    assert not any(exempt.search(n) for n in decay_names), decay_names
    for m in model.modules():
        for special in ("query", "cls"):
            if isinstance(m, (MultiHeadAttentionPool, ClsPool)) and hasattr(m, special):
                assert id(getattr(m, special)) in {id(p) for p in free["params"]}
        if isinstance(m, LearnedEncoding):
            assert id(m.weight) in {id(p) for p in free["params"]}


def test_weight_decay_groups_drive_the_optimizer():
    """One AdamW step with zero gradients: decayed weights shrink by lr · wd, exempt ones do
    not move."""
    torch.manual_seed(3)
    model = build_classifier(ModelConfig(tokens="conv", d_model=8, n_heads=2, blocks=1), 1, 2,
                             max_len=16)
    groups = param_groups(model, 0.5)
    before = [[p.detach().clone() for p in g["params"]] for g in groups]
    opt = torch.optim.AdamW(groups, lr=0.1)
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    opt.step()
    for p, old in zip(groups[0]["params"], before[0]):
        torch.testing.assert_close(p.detach(), old * (1 - 0.1 * 0.5))
    for p, old in zip(groups[1]["params"], before[1]):
        assert torch.equal(p.detach(), old)


@pytest.mark.parametrize("epochs,steps,n,batch,expected", [(7, 1500, 50, 16, 7),
                                                           (0, 1500, 50, 16, 375),
                                                           (0, 1500, 200, 16, 116),
                                                           (0, 10, 17, 16, 10),
                                                           (0, 1, 1000, 8, 1)])
def test_step_budget(epochs, steps, n, batch, expected):
    # 17 series in batches of 16 are one batch (a last batch of one joins the one before)
    cfg = TrainConfig(epochs=epochs, steps=steps, batch=batch)
    assert n_epochs(cfg, n) == expected


def _dilations(stem_dilation, kernels, window):
    """The stem's first-block dilations for a token window of ``window`` steps."""
    cfg = ModelConfig(kernel_sizes=tuple(kernels), max_tokens=1, stem_dilation=stem_dilation)
    return tuple(model_recipe(cfg, window)["stem_dilations"])


def _recipe(length=150, smooth=0.5, one_length=True, end_padded=True, channels=1,
            encoder="transformer", tokens="conv", **train):
    stats = SeriesStats(n_series=40, n_channels=channels, length=length, smoothness=smooth,
                        one_length=one_length, end_padded=end_padded)
    return resolve_recipe(stats, ModelConfig(encoder=encoder, tokens=tokens),
                          TrainConfig(**train))


# The recipe table: representative training splits (statistics as the shipped and unseen sets
# have them) → what the default trains with. A change of a rule changes a row here, in
# docs/tsc.md's recipe table and in the evidence of docs/notes/tsc.md.
_TABLE = [
    # name, (length, channels, smoothness, one length), sam, mixup, cutmix, warp, znorm,
    # stem blocks, stem dilations
    ("ItalyPowerDemand", (24, 1, 0.80, True), True, False, False, 0.0, "series", 3, [1, 1, 1]),
    ("JapaneseVowels", (29, 12, 0.90, False), True, False, False, 0.0, "channel", 3, [1, 1, 1]),
    ("GunPoint", (150, 1, 0.99, True), False, True, False, TIME_WARP_AUTO, "series", 3,
     [1, 1, 1]),
    ("ArrowHead", (251, 1, 0.99, True), False, True, False, TIME_WARP_AUTO, "series", 3,
     [1, 1, 1]),
    ("Covid3Month_disc", (84, 1, 0.70, True), False, False, True, 0.0, "series", 3, [1, 1, 1]),
    ("BasicMotions", (100, 6, 0.60, True), False, False, True, 0.0, "channel", 3, [1, 1, 1]),
    ("PLAID", (1344, 1, 0.90, False), False, False, False, 0.0, "series", 2, [1, 2, 4]),
    ("ACSF1", (1460, 1, -0.20, True), False, False, True, 0.0, "series", 2, [1, 2, 4]),
    ("PigCVP", (2000, 1, 0.99, True), False, True, False, TIME_WARP_AUTO, "series", 2,
     [1, 3, 6]),
    ("a 600-step set", (600, 1, 0.50, True), False, False, True, 0.0, "series", 1, [1, 1, 1]),
]


@pytest.mark.parametrize("name,stats,sam,mixup,cutmix,warp,znorm,blocks,dilations", _TABLE,
                         ids=[row[0] for row in _TABLE])
def test_the_recipe_table(name, stats, sam, mixup, cutmix, warp, znorm, blocks, dilations):
    length, channels, smooth, one = stats
    got = _recipe(length=length, channels=channels, smooth=smooth, one_length=one)
    assert got == {"znorm": znorm, "sam": sam, "mixup": mixup, "cutmix": cutmix,
                   "time_warp": warp, "head_norm": True, "weight_init": "torch",
                   "stem_blocks": blocks, "stem_dilations": dilations,
                   "stem_pool": stem_pool(blocks, dilations)}
    # the ResNet trains every set the same way: none of the Transformer's rules act
    resnet = _recipe(length=length, channels=channels, smooth=smooth, one_length=one,
                     encoder="resnet")
    assert resnet == {"znorm": znorm, "sam": False, "mixup": False, "cutmix": False,
                      "time_warp": 0.0, "head_norm": False, "weight_init": "glorot"}


def test_the_recipe_is_pure_and_keeps_explicit_options():
    """Same statistics, same recipe; every explicit option comes back as given whatever the
    statistics; a config keeps its "auto"."""
    train = TrainConfig()
    for length, smooth in [(24, 0.99), (150, 0.99), (1460, -0.2), (1460, float("nan"))]:
        a = _recipe(length=length, smooth=smooth)
        assert a == _recipe(length=length, smooth=smooth)
        pinned = _recipe(length=length, smooth=smooth, sam="off", mixup="on", cutmix="off",
                         time_warp=0.1, znorm="none")
        assert (pinned["sam"], pinned["mixup"], pinned["cutmix"], pinned["time_warp"],
                pinned["znorm"]) == (False, True, False, 0.1, "none")
    assert train.sam == train.mixup == train.cutmix == train.time_warp == "auto"
    with pytest.raises(ConfigError, match="SeriesStats"):
        resolve_recipe({"length": 150}, ModelConfig(), train)


def test_series_stats_measure_the_series_trained_on():
    rng = np.random.default_rng(0)
    smooth_x = np.cumsum(rng.normal(size=(20, 1, 80)), axis=2)
    rough_x = rng.normal(size=(20, 1, 80))
    data = from_arrays(np.concatenate([smooth_x, rough_x]), np.arange(40) % 2)
    st = series_stats(data)
    assert (st.n_series, st.n_channels, st.length, st.one_length, st.end_padded) == \
        (40, 1, 80, True, True)
    assert st.smoothness == pytest.approx(smoothness(data.x))
    first = series_stats(data, np.arange(20))
    assert first.n_series == 20 and first.smoothness > 0.9 > st.smoothness
    ragged = from_arrays([rng.normal(size=n) for n in (30, 50, 80)], [0, 1, 0], pad=True)
    st = series_stats(ragged)
    assert (st.length, st.one_length, st.end_padded) == (80, False, True)


@pytest.mark.parametrize("value, encoder, tokens, smooth, end_padded, sd", [
    ("auto", "transformer", "conv", 0.99, True, TIME_WARP_AUTO),     # an outline
    ("auto", "transformer", "conv", MIXUP_AUTO_SMOOTHNESS, True, TIME_WARP_AUTO),
    ("auto", "transformer", "conv", 0.94, True, 0.0),                # rough: no warping
    ("auto", "transformer", "conv", -0.2, True, 0.0),                # ACSF1's oscillation
    ("auto", "transformer", "conv", float("nan"), True, 0.0),        # nothing to measure
    ("auto", "transformer", "step", 0.99, True, 0.0),
    ("auto", "resnet", "conv", 0.99, True, 0.0),
    ("auto", "transformer", "conv", 0.99, False, 0.0),               # padding inside series
    (0.3, "resnet", "conv", -0.2, True, 0.3),                        # a number is kept
    (0.0, "transformer", "conv", 0.99, True, 0.0),
])
def test_time_warp_auto_warps_where_mixup_auto_mixes(value, encoder, tokens, smooth,
                                                      end_padded, sd):
    assert _recipe(smooth=smooth, end_padded=end_padded, encoder=encoder, tokens=tokens,
                   time_warp=value)["time_warp"] == sd


@pytest.mark.parametrize("cutmix, mixup, encoder, tokens, max_len, smooth, one_length, on", [
    ("auto", "auto", "transformer", "conv", SAM_AUTO_STEPS + 1, 0.5, True, True),
    ("auto", "auto", "transformer", "conv", 1460, -0.2, True, True),             # ACSF1
    ("auto", "off", "transformer", "conv", 1460, np.nan, True, True),
    ("auto", "auto", "transformer", "conv", 1460, -0.2, False, False),  # many lengths (PLAID)
    ("auto", "auto", "transformer", "conv", SAM_AUTO_STEPS, 0.5, True, False),   # SAM's reach
    ("auto", "auto", "transformer", "conv", 1460, MIXUP_AUTO_SMOOTHNESS, True, False),
    ("auto", "off", "transformer", "conv", 1460, 0.99, True, False),  # smooth, mixup pinned off
    ("auto", "on", "transformer", "conv", 1460, 0.5, True, False),    # a batch is blended
    ("auto", "auto", "transformer", "patch", 1460, 0.5, True, False),
    ("auto", "auto", "resnet", "conv", 1460, 0.5, True, False),
    ("on", "auto", "resnet", "patch", 24, 0.99, False, True),
    ("off", "auto", "transformer", "conv", 1460, 0.5, True, False)])
def test_resolve_cutmix(cutmix, mixup, encoder, tokens, max_len, smooth, one_length, on):
    assert _recipe(length=max_len, smooth=smooth, one_length=one_length, encoder=encoder,
                   tokens=tokens, cutmix=cutmix, mixup=mixup)["cutmix"] is on


@pytest.mark.parametrize("mixup, encoder, tokens, smooth, on", [
    ("auto", "transformer", "conv", 0.95, True), ("auto", "transformer", "conv", 0.949, False),
    ("auto", "transformer", "conv", -0.2, False), ("auto", "transformer", "conv", np.nan, False),
    ("auto", "transformer", "patch", 0.99, False), ("auto", "resnet", "conv", 0.99, False),
    ("on", "resnet", "conv", -0.2, True), ("off", "transformer", "conv", 0.99, False)])
def test_resolve_mixup(mixup, encoder, tokens, smooth, on):
    assert _recipe(smooth=smooth, encoder=encoder, tokens=tokens, mixup=mixup,
                   cutmix="off")["mixup"] is on
    # mixup "auto" steps aside for cutmix, wherever it would mix
    assert _recipe(smooth=0.99, cutmix="on")["mixup"] is False


@pytest.mark.parametrize("sam, encoder, tokens, steps, on", [
    ("auto", "transformer", "conv", 64, True), ("auto", "transformer", "conv", 65, False),
    ("auto", "transformer", "conv", 1, True), ("auto", "transformer", "patch", 24, False),
    ("auto", "transformer", "step", 24, False), ("auto", "resnet", "conv", 24, False),
    ("on", "resnet", "conv", 1000, True), ("off", "transformer", "conv", 24, False)])
def test_resolve_sam(sam, encoder, tokens, steps, on):
    assert _recipe(length=steps, encoder=encoder, tokens=tokens, sam=sam)["sam"] is on


