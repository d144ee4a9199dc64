"""The Inception stem of the Transformer's conv tokens and the "mixed" stem of an ensemble:
shapes, masks, the max-pool branch, the member rule, and ensembles that fit, save and load."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from kairo._errors import ConfigError
from kairo.attention import (ModelConfig, TrainConfig, TSEnsemble, build_classifier, fit,
                             fit_ensemble, load_classifier, predict, save_classifier)
from kairo.attention._config import member_stem
from kairo.attention._data import from_arrays
from kairo.attention._encoders import InceptionStem, ResNet1D, TransformerEncoder
from kairo.attention._train import recompute_bn_stats

QUIET = {"progress_bar": False}
SMALL = ModelConfig(d_model=16, n_heads=2, blocks=1, stem_blocks=2, pool="mean")


def _mask(lengths, t):
    return torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]


def test_shapes_and_parameter_count():
    """Hand count, C=1, d=16 (f=4), two modules: module 0 has no bottleneck, convs 1→4 of
    39+19+9 taps, pool conv 1→4, BN 16; module 1 a bottleneck 16→4, convs 4→4, pool conv 16→4,
    BN 16; the shortcut conv 1→16 and its BN."""
    stem = InceptionStem(1, d=16, blocks=2)
    m0 = 4 * 67 + 4 + 2 * 16
    m1 = 16 * 4 + 4 * 4 * 67 + 16 * 4 + 2 * 16
    assert sum(p.numel() for p in stem.parameters()) == m0 + m1 + 16 + 2 * 16
    assert stem.blocks[0].bottleneck is None and stem.blocks[1].bottleneck is not None
    tok, m = stem(torch.randn(3, 1, 50))
    assert tok.shape == (3, 50, 16) and m is None and stem.steps_per_token == 1
    assert (tok >= 0).all()                                   # ReLU after the shortcut
    multi = InceptionStem(3, d=8, blocks=1)
    assert multi.blocks[0].bottleneck.weight.shape == (2, 3, 1)
    assert multi(torch.randn(2, 3, 5))[0].shape == (2, 5, 8)     # shorter than the kernels


def test_max_pool_branch_is_the_three_step_max():
    """The pool branch's input is each step's max over itself and its neighbours (the series'
    own ends only: a masked neighbour never wins, however large)."""
    torch.manual_seed(0)
    module = InceptionStem(1, d=8, blocks=1).blocks[0].eval()
    captured = {}
    module.pool_conv.register_forward_hook(lambda m, i, o: captured.update(x=i[0]))
    x = torch.tensor([[[1.0, -2.0, 5.0, 0.5, 100.0, 100.0]]])
    m = _mask([4], 6)[:, None, :].float()
    module(x * m, m)
    assert captured["x"].tolist() == [[[1.0, 5.0, 5.0, 5.0, 0.0, 0.0]]]
    module(x, None)
    assert captured["x"].tolist() == [[[1.0, 5.0, 5.0, 100.0, 100.0, 100.0]]]
    # every step of a series masked to nothing stays finite (no -inf · 0)
    module(x * 0, torch.zeros_like(m))
    assert torch.isfinite(captured["x"]).all()


def test_padding_equals_truncation_in_eval_and_training():
    torch.manual_seed(1)
    stem = InceptionStem(2, d=8, blocks=3).eval()
    x = torch.randn(2, 2, 40)
    mask = _mask([40, 23], 40)
    junk = x.clone()
    junk[1, :, 23:] = 1e3
    tok, m = stem(junk, mask)
    alone, _ = stem(x[1:, :, :23])
    torch.testing.assert_close(tok[1, :23], alone[0], atol=1e-5, rtol=0)
    assert torch.all(tok[1, 23:] == 0) and torch.equal(m, mask)
    # training mode: the batch statistics count valid steps only, so junk beyond the end of
    # the batch changes no valid token and no recomputed statistic
    stem.train()
    tok, _ = stem(x, mask)
    longer = torch.cat([x, torch.randn(2, 2, 11) * 50], dim=2)
    longer_mask = torch.cat([mask, torch.zeros(2, 11, dtype=torch.bool)], dim=1)
    tok2, _ = stem(longer, longer_mask)
    torch.testing.assert_close(tok2[:, :40][mask], tok[mask], atol=1e-4, rtol=1e-4)
    a, b = InceptionStem(2, d=8, blocks=3), InceptionStem(2, d=8, blocks=3)
    b.load_state_dict(a.state_dict())
    assert recompute_bn_stats(a, x, mask) == recompute_bn_stats(b, longer, longer_mask) == 4
    for (name, u), v in zip(a.state_dict().items(), b.state_dict().values()):
        if "running" in name:
            torch.testing.assert_close(u, v, atol=1e-4, rtol=1e-4, msg=name)


def test_transformer_on_inception_tokens_trains_every_parameter():
    torch.manual_seed(2)
    enc = TransformerEncoder(2, d=16, n_heads=2, tokens="conv", stem="inception",
                             stem_blocks=2, max_len=30, max_tokens=10)
    assert isinstance(enc.stem, InceptionStem) and enc.steps_per_token == 3
    x, mask = torch.randn(3, 2, 30), _mask([30, 14, 5], 30)
    tok, m = enc(x, mask)
    assert tok.shape == (3, 10, 16) and m.sum(1).tolist() == [10, 5, 2]
    tok.sum().backward()
    for name, p in enc.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
    resnet = TransformerEncoder(2, d=16, n_heads=2, tokens="conv", max_len=30)
    assert isinstance(resnet.stem, ResNet1D)
    with pytest.raises(ConfigError, match="mixed is resolved per ensemble member"):
        TransformerEncoder(2, d=16, tokens="conv", stem="mixed")
    with pytest.raises(ConfigError, match="d a multiple of 4"):
        InceptionStem(1, d=10)


def test_member_rule_and_config_checks():
    assert [member_stem("mixed", i) for i in range(4)] == ["resnet", "inception"] * 2
    assert member_stem("inception", 0) == member_stem("inception", 3) == "inception"
    assert member_stem("resnet", 1) == "resnet"
    for bad, msg in ((("tcn", 0), "stem: expected one of resnet, inception, mixed"),
                     (("mixed", -1), "member must be an integer ≥ 0"),
                     (("mixed", True), "member must be an integer ≥ 0")):
        with pytest.raises(ConfigError, match=msg):
            member_stem(*bad)
    cfg = ModelConfig(stem="mixed")
    assert cfg.resolved(100)["stem"] == "resnet" and cfg.resolved(100, 1)["stem"] == "inception"
    assert "stem" not in ModelConfig(tokens="patch").resolved(100)
    assert "stem" not in ModelConfig(encoder="resnet", stem="mixed").resolved(100)
    with pytest.raises(ConfigError, match="d_model must be a multiple of 4 for the mixed stem"):
        ModelConfig(stem="mixed", d_model=18, n_heads=1)
    ModelConfig(d_model=18, n_heads=1)              # the ResNet stem takes any width
    with pytest.raises(ConfigError, match="member must be an integer ≥ 0"):
        build_classifier(cfg, 1, 2, 20, member=-1)
    with pytest.raises(ConfigError, match="stem: expected one of"):
        ModelConfig(stem="tcn")


def test_mixed_ensemble_members_alternate_and_refuse_the_wrong_stem():
    torch.manual_seed(3)
    cfg = dataclasses.replace(SMALL, stem="mixed")
    members = [build_classifier(cfg, 1, 2, 20, member=i) for i in range(3)]
    assert [type(m.encoder.stem).__name__ for m in members] == \
        ["ResNet1D", "InceptionStem", "ResNet1D"]
    ens = TSEnsemble(members)
    assert ens.arch == {**members[0].arch, "ensemble": 3} and ens.resolved["stem"] == "resnet"
    with pytest.raises(ConfigError, match="member 1 of an ensemble with stem='mixed' must have "
                                          "the inception stem, got resnet"):
        TSEnsemble([members[0], members[2]])
    plain = build_classifier(dataclasses.replace(SMALL, stem="inception"), 1, 2, 20)
    with pytest.raises(ConfigError, match="member 1 differs from member 0.*'stem'"):
        TSEnsemble([members[0], plain])


def _toy(n=24, steps=20):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(n, 1, steps))
    y = np.arange(n) % 2
    x[y == 1, :, 5:9] += 2.0
    return from_arrays(x, y, name="toy")


def test_mixed_ensemble_fits_saves_and_loads(tmp_path):
    """Member 1 of a mixed ensemble is `fit` with member=1 (an Inception stem), weight for
    weight; the saved ensemble rebuilds each member's stem and predicts as before."""
    data = _toy()
    cfg = dataclasses.replace(SMALL, stem="mixed")
    train = TrainConfig(epochs=2, batch=8, threads=1, seed=5)
    r = fit_ensemble(cfg, train, data, 2, executor="serial", **QUIET)
    ens = r["model"]
    alone = fit(cfg, dataclasses.replace(train, seed=6), data, member=1, **QUIET)["model"]
    assert isinstance(alone.encoder.stem, InceptionStem)
    for (name, u), v in zip(alone.state_dict().items(), ens.members[1].state_dict().values()):
        assert torch.equal(u, v), name
    path = tmp_path / "mixed.pt"
    save_classifier(path, ens, cfg)
    model, meta = load_classifier(path, expect_arch=ens.arch)
    assert meta["model_config"]["stem"] == "mixed"
    assert [m.resolved["stem"] for m in model.members] == ["resnet", "inception"]
    np.testing.assert_array_equal(predict(model, data.x)[1], predict(ens, data.x)[1])
    # a one-model run of a mixed config is member 0: the ResNet stem
    one = fit(cfg, train, data, **QUIET)["model"]
    assert isinstance(one.encoder.stem, ResNet1D)
    assert F.mse_loss(torch.from_numpy(predict(one, data.x)[1]),
                      torch.from_numpy(predict(ens.members[0], data.x)[1])) < 1e-12
