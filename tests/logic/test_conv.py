"""Convolutional logic layers, the conv model, and the circuit it becomes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import torch

from kairo import ConfigError, DataError, KairoError
from kairo.logic import (COEFFS, GATE_NAMES, LogicConv2d, LogicTrainConfig, OrPooling2d,
                         build_model, load_data, predict, simplify, to_circuit, train)
from kairo.logic._config import CONV_FIELDS
from kairo.logic._layers import conv_out_size
from kairo.logic._train import load_checkpoint

ENGINES = ("torch", "fused")
XOR = GATE_NAMES.index("XOR")


def _set_ops(layer, ops) -> None:
    """Make ``layer`` compute exactly the gates ``ops`` in eval mode."""
    with torch.no_grad():
        layer.weight.zero_()
        layer.weight.view(-1, 16)[torch.arange(len(ops)), torch.as_tensor(ops)] = 5.0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("c_in, k, r, depth, stride, pad, groups, hw", [
    (1, 4, 3, 3, 1, 1, 1, (28, 28)),
    (2, 6, 3, 2, 2, 0, 2, (11, 9)),
    (4, 4, 2, 1, 1, 1, 4, (5, 7)),
    (3, 3, 5, 3, 3, 2, 1, (12, 12)),
])
def test_output_shape_follows_the_conv_formula(engine, c_in, k, r, depth, stride, pad, groups,
                                               hw):
    layer = LogicConv2d(c_in, k, receptive=r, depth=depth, stride=stride, padding=pad,
                        groups=groups, seed=0, engine=engine)
    y = layer(torch.rand(3, c_in, *hw))
    ho, wo = ((s + 2 * pad - r) // stride + 1 for s in hw)
    assert y.shape == (3, k, ho, wo) == (3, k, *layer.out_size(*hw))
    assert layer.weight.shape == (k, 2 ** depth - 1, 16)
    pool = OrPooling2d(2, 2, engine=engine)
    assert pool(y).shape == (3, k, (ho - 2) // 2 + 1, (wo - 2) // 2 + 1)


def test_wiring_stays_in_the_window_and_group_with_at_most_two_channels():
    layer = LogicConv2d(6, 9, receptive=3, depth=3, groups=3, seed=4)
    dy, dx, ch = layer.dy.numpy(), layer.dx.numpy(), layer.channels.numpy()
    assert dy.shape == dx.shape == (9, 8) and ch.shape == (9, 2)
    assert dy.min() >= 0 and dx.min() >= 0 and dy.max() < 3 and dx.max() < 3
    group_of_kernel = np.arange(9) // 3
    np.testing.assert_array_equal(ch // 2, np.stack([group_of_kernel] * 2, 1))
    assert np.all(ch[:, 0] != ch[:, 1])                 # two channels in every group: a pair
    # one channel, unique pairing: 8 leaf inputs on 8 distinct positions of the 3×3 window
    one = LogicConv2d(1, 5, receptive=3, depth=3, seed=2)
    pos = one.dy.numpy() * 3 + one.dx.numpy()
    assert all(len(set(p)) == 8 for p in pos)
    # the flat gather index of the torch path points inside each leaf's padded window
    ia, ib = layer.gather_index(7, 7)
    hp = wp = 7 + 2
    for side, idx in ((0, ia), (1, ib)):
        c, rem = np.divmod(idx.numpy(), hp * wp)
        y, x = np.divmod(rem, wp)
        oy, ox = np.divmod(np.arange(49), 7)
        np.testing.assert_array_equal(c, np.broadcast_to(ch[:, side, None, None], c.shape))
        np.testing.assert_array_equal(y - oy, np.broadcast_to(dy[:, side::2, None], c.shape))
        np.testing.assert_array_equal(x - ox, np.broadcast_to(dx[:, side::2, None], c.shape))


def test_wiring_is_seeded():
    a, b = LogicConv2d(2, 4, seed=7), LogicConv2d(2, 4, seed=7)
    for name in ("channels", "dy", "dx", "weight"):
        torch.testing.assert_close(getattr(a, name), getattr(b, name))
    assert not torch.equal(LogicConv2d(2, 4, seed=8).dy, a.dy)


@pytest.mark.parametrize("engine", ENGINES)
def test_one_gate_kernel_by_hand(engine):
    """receptive 2, depth 1: one gate reading two pixels of each 2×2 window, no padding."""
    layer = LogicConv2d(1, 1, receptive=2, depth=1, padding=0, seed=3, engine=engine)
    (ya, yb), (xa, xb) = layer.dy[0].tolist(), layer.dx[0].tolist()
    assert (ya, xa) != (yb, xb)
    rng = np.random.default_rng(0)
    img = rng.random((4, 1, 6, 5)).astype(np.float32)
    a = img[:, 0, ya:ya + 5, xa:xa + 4]
    b = img[:, 0, yb:yb + 5, xb:xb + 4]
    # soft: the softmax mixture of the 16 gates, c = p @ COEFFS
    p = torch.softmax(layer.weight[0, 0].detach().double(), 0).numpy()
    c0, ca, cb, cab = p @ COEFFS
    want = c0 + ca * a + cb * b + cab * a * b
    np.testing.assert_allclose(layer(torch.from_numpy(img)).detach().numpy()[:, 0], want,
                               rtol=1e-5, atol=1e-6)
    # eval: exactly XOR of the two pixels, on bits
    _set_ops(layer, [XOR])
    layer.eval()
    bits = (img > 0.5).astype(np.float32)
    out = layer(torch.from_numpy(bits)).detach().numpy()[:, 0]
    np.testing.assert_array_equal(out, np.logical_xor(bits[:, 0, ya:ya + 5, xa:xa + 4],
                                                      bits[:, 0, yb:yb + 5, xb:xb + 4]))


@pytest.mark.parametrize("engine", ENGINES)
def test_padding_reads_zeros_and_residual_init_passes_input_a(engine):
    layer = LogicConv2d(1, 2, receptive=3, depth=2, padding=1, residual_init=5.0, seed=0,
                        engine=engine).eval()
    x = torch.ones(1, 1, 4, 4)
    y = layer(x)[0].numpy()
    # every gate is "A": the root passes leaf 0's input a, pixel (oy + dy − 1, ox + dx − 1)
    for k in range(2):
        dy, dx = int(layer.dy[k, 0]), int(layer.dx[k, 0])
        for oy in range(4):
            for ox in range(4):
                inside = 0 <= oy + dy - 1 < 4 and 0 <= ox + dx - 1 < 4
                assert y[k, oy, ox] == float(inside)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kernel, stride", [(2, 2), (3, 2), (2, 1)])
def test_or_pooling_is_the_or_of_bits_and_the_max_of_reals(engine, kernel, stride):
    rng = np.random.default_rng(1)
    bits = rng.random((3, 2, 7, 8)) < 0.3
    pool = OrPooling2d(kernel, stride, engine=engine)
    y = pool(torch.from_numpy(bits.astype(np.float32))).numpy()
    ho, wo = conv_out_size(7, kernel, stride, 0), conv_out_size(8, kernel, stride, 0)
    want = np.zeros((3, 2, ho, wo), dtype=bool)
    for dy in range(kernel):
        for dx in range(kernel):
            want |= bits[:, :, dy:dy + stride * (ho - 1) + 1:stride,
                         dx:dx + stride * (wo - 1) + 1:stride]
    np.testing.assert_array_equal(y, want)
    x = torch.rand(3, 2, 7, 8)
    torch.testing.assert_close(pool(x), torch.nn.functional.max_pool2d(x, kernel, stride))


def _conv_cfg(**kw) -> LogicTrainConfig:
    base = dict(classes=(0, 1), kernels=4, hidden=20, layers=2)
    return LogicTrainConfig(**{**base, **kw})


@pytest.fixture(scope="module")
def mnist_images(data_dir):
    from kairo.data import load_mnist

    x, _ = load_mnist("test", data_dir)
    return x[:160].copy()


@pytest.mark.parametrize("kw", [
    {},
    {"conv_stride": 2, "conv_blocks": 1, "kernels": 3},
    {"padding": 0, "conv_depth": 2},
    {"thresholds": (60, 180), "conv_groups": 2, "kernels": 4},
    {"receptive": 2, "conv_depth": 1, "wiring": "random", "classes": (3, 5, 8), "hidden": 30},
])
@pytest.mark.parametrize("engine", ENGINES)
def test_circuit_equals_the_discrete_model_on_mnist(mnist_images, kw, engine):
    cfg = _conv_cfg(engine=engine, seed=5, **kw)
    model = build_model(cfg).eval()
    circ = to_circuit(model)
    bits = circ.image_bits(mnist_images)
    with torch.no_grad():
        x = model.bits(torch.from_numpy(mnist_images))
        feats = model.features(x.reshape(len(x), -1, 28, 28)).flatten(1)
        out = model.logic(feats).numpy()
    assert set(np.unique(out)) <= {0.0, 1.0}
    np.testing.assert_array_equal(circ.evaluate(bits), out.astype(bool))
    np.testing.assert_array_equal(circ.predict(bits), predict(model, mnist_images))
    small, report = simplify(circ)
    assert small.n_gates < circ.n_gates
    np.testing.assert_array_equal(small.evaluate(bits), out.astype(bool))
    # gate count: every position of every tree, OR trees of 3 gates per 2×2 window, padding
    n = 0
    side = 28
    for c, s_after, _ in cfg.feature_sizes():
        s_conv = (side + 2 * cfg.padding - cfg.receptive) // cfg.conv_stride + 1
        n += c * (2 ** cfg.conv_depth - 1) * s_conv ** 2 + c * s_after ** 2 * 3
        side = s_after
    n += cfg.hidden * cfg.layers + (1 if cfg.padding else 0)
    assert circ.n_gates == n
    assert circ.n_inputs == 784 * len(cfg.thresholds)


def test_circuit_padding_node_is_a_constant_that_simplify_folds():
    cfg = _conv_cfg(conv_blocks=1, kernels=2)
    circ = to_circuit(build_model(cfg).eval())
    zero = circ.n_inputs                               # gate 0: FALSE on input 0
    assert (circ.ops[0], circ.a[0], circ.b[0]) == (0, 0, 0)
    assert np.any(circ.a == zero) or np.any(circ.b == zero)
    small, _ = simplify(circ)
    # constants are folded into their readers: no gate reads a FALSE or TRUE gate any more
    const = small.n_inputs + np.flatnonzero(np.isin(small.ops, (0, 15)))
    assert not np.isin(small.a, const).any() and not np.isin(small.b, const).any()


def test_bad_layer_configs():
    with pytest.raises(ConfigError, match="groups=2 must divide in_channels=3"):
        LogicConv2d(3, 4, groups=2)
    with pytest.raises(ConfigError, match="padding must be < receptive"):
        LogicConv2d(1, 4, receptive=3, padding=3)
    with pytest.raises(ConfigError, match="depth must be an integer ≥ 1"):
        LogicConv2d(1, 4, depth=0)
    with pytest.raises(ConfigError, match="wiring must be one of random, unique"):
        LogicConv2d(1, 4, wiring="zigzag")
    with pytest.raises(ConfigError, match="smaller than its receptive field"):
        LogicConv2d(1, 4, receptive=5, padding=0)(torch.rand(2, 1, 4, 4))
    with pytest.raises(KairoError, match=r"expects input \(n_samples, 2, H, W\)"):
        LogicConv2d(2, 4)(torch.rand(2, 3, 8, 8))
    with pytest.raises(ConfigError, match="kernel must be an integer ≥ 1"):
        OrPooling2d(0)
    with pytest.raises(ConfigError, match="smaller than its window"):
        OrPooling2d(3)(torch.rand(1, 1, 2, 2))
    with pytest.raises(ConfigError, match="engine must be one of auto, torch, fused"):
        LogicConv2d(1, 4, engine="cuda")


def test_bad_model_configs_name_the_fields():
    with pytest.raises(ConfigError, match="conv block 5 of conv_blocks=5"):
        _conv_cfg(conv_blocks=5)
    with pytest.raises(ConfigError, match="conv block 3 of conv_blocks=3 gets a 2×2 feature map, "
                                          "smaller than receptive=7"):
        _conv_cfg(conv_blocks=3, receptive=7, padding=0)
    with pytest.raises(ConfigError, match=r"conv_groups=2 must divide .*\(1 thresholds"):
        _conv_cfg(conv_groups=2)
    with pytest.raises(ConfigError, match="padding must be in 0…receptive−1"):
        _conv_cfg(padding=3)
    with pytest.raises(ConfigError, match="conv_depth must be ≤ 8"):
        _conv_cfg(conv_depth=9)
    with pytest.raises(ConfigError, match="kernels must be ≥ 0"):
        _conv_cfg(kernels=-1)
    with pytest.raises(ConfigError, match="engine: expected one of"):
        _conv_cfg(engine="gpu")


def test_arch_holds_the_architecture_and_not_the_engine():
    dense = LogicTrainConfig()
    assert set(dense.arch()) == {"n_classes", "thresholds", "hidden", "layers", "wiring",
                                 "seed", "kernels", *CONV_FIELDS}
    conv = _conv_cfg(receptive=5, padding=2)
    assert conv.arch()["receptive"] == 5 and conv.arch()["kernels"] == 4
    assert dataclasses.replace(conv, engine="torch").arch() == conv.arch()


@pytest.fixture(scope="module")
def zero_one_conv(data_dir):
    # residual init and a higher rate: a conv net past its plateau in few iterations
    cfg = LogicTrainConfig(classes=(0, 1), kernels=2, hidden=20, residual_init=2.0, lr=0.03,
                           iters=120, eval_every=60, checkpoint_every=60,
                           data_dir=str(data_dir))
    return cfg, load_data(cfg)


@pytest.mark.slow
def test_conv_training_learns_and_its_circuit_agrees(zero_one_conv):
    cfg, data = zero_one_conv
    res = train(cfg, data=data, progress_bar=False)
    assert res["history"][-1]["val_discrete"] > 0.9
    model = res["model"]
    xt, yt = data["test"]
    pm = predict(model, xt)
    circ = to_circuit(model)
    np.testing.assert_array_equal(circ.predict(circ.image_bits(xt)), pm)
    assert (pm == yt).mean() > 0.9


def test_dense_checkpoint_refuses_a_conv_config(zero_one_conv, tmp_path):
    cfg, data = zero_one_conv
    dense = dataclasses.replace(cfg, kernels=0, iters=10)
    train(dense, checkpoint=tmp_path / "d.pt", data=data, progress_bar=False)
    with pytest.raises(DataError, match=r"other settings .*'kernels': \(0, 2\)"):
        load_checkpoint(tmp_path / "d.pt", cfg)
    with pytest.raises(DataError, match="other settings"):
        train(cfg, checkpoint=tmp_path / "d.pt", data=data, progress_bar=False)
