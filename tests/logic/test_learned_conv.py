"""Learned wiring in convolutional logic layers: each kernel learns which two channels of its
group its tree reads, each leaf input which position of the window. The training mixture
against an independent reference (unfold + einsum) and a numerical gradient check, the
straight-through forward equal to the discrete layer, the discrete layer equal to its
circuit, a toy task whose right wiring training must find, and a killed conv run that
resumes exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo.logic import (LogicConv2d, LogicTrainConfig, build_model, load_data,
                         model_from_checkpoint)
from resume import assert_circuit_is_model, train_killed_and_resumed

ENGINES = ["torch", "fused"]
SHAPES = [  # c_in, k, receptive, depth, stride, padding, groups, (H, W)
    (3, 4, 3, 3, 1, 1, 1, (9, 8)),
    (4, 6, 3, 2, 2, 0, 2, (11, 9)),
    (1, 2, 2, 1, 1, 1, 1, (5, 6)),
]


def _randomized(layer: LogicConv2d, seed: int) -> LogicConv2d:
    with torch.no_grad():
        g = torch.Generator().manual_seed(seed)
        for p in (layer.weight, layer.wire_chan, layer.wire_pos):
            p.copy_(torch.randn(p.shape, generator=g) * 2)
    return layer


def _reference_leaves(layer: LogicConv2d, x: torch.Tensor):
    """Each leaf input's mixture written out: unfold the windows, weight channel × position."""
    pc, pp = layer.wire_probs()
    n, c_in, h, w = x.shape
    ho, wo = layer.out_size(h, w)
    r, g = layer.receptive, layer.groups
    n_ch, n_k, n_slots = c_in // g, layer.out_channels // g, 2 ** layer.depth
    win = torch.nn.functional.unfold(x, r, padding=layer.padding, stride=layer.stride)
    win = win.reshape(n, g, n_ch, r * r, ho * wo)                   # (n, G, C/G, r², P)
    group = torch.arange(layer.out_channels) // n_k
    side = torch.arange(n_slots) % 2
    weight = pc[:, side, :, None] * pp[:, :, None, :]                # (K, S, C/G, r²)
    out = torch.einsum("kscq,nkcqp->nksp", weight, win[:, group])
    return out[:, :, 0::2], out[:, :, 1::2]


@pytest.mark.parametrize("c_in, k, r, depth, stride, pad, groups, hw", SHAPES)
def test_the_training_mixture_is_the_windows_weighted_by_both_choices(c_in, k, r, depth,
                                                                      stride, pad, groups, hw):
    layer = _randomized(LogicConv2d(c_in, k, receptive=r, depth=depth, stride=stride,
                                    padding=pad, groups=groups, wiring="learned", seed=1,
                                    engine="torch"), 0).double()
    x = torch.rand(3, c_in, *hw, dtype=torch.float64)
    leaves = layer._mixed_leaves(x, 1.0, None)
    a, b = leaves[:, :, 0::2], leaves[:, :, 1::2]
    ra, rb = _reference_leaves(layer, x)
    torch.testing.assert_close(a, ra)
    torch.testing.assert_close(b, rb)
    pc, pp = layer.wire_probs()
    assert pc.shape == (k, 2, c_in // groups) and pp.shape == (k, 2 ** depth, r * r)


def test_learned_conv_gradcheck():
    layer = _randomized(LogicConv2d(2, 2, receptive=2, depth=2, padding=1, wiring="learned",
                                    seed=3, engine="torch"), 1).double()
    x = torch.rand(2, 2, 3, 4, dtype=torch.float64, requires_grad=True)
    params = [layer.weight, layer.wire_chan, layer.wire_pos]

    def g(x, w, wc, wp):                     # gradcheck perturbs copies: route them in
        return torch.func.functional_call(layer, {"weight": w, "wire_chan": wc,
                                                  "wire_pos": wp}, (x,))

    args = [x] + [p.detach().clone().requires_grad_() for p in params]
    assert torch.autograd.gradcheck(g, args)


@pytest.mark.parametrize("mode", ["soft", "hard", "gumbel"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("c_in, k, r, depth, stride, pad, groups, hw", SHAPES)
def test_the_fused_tree_equals_torch_in_training(mode, dtype, c_in, k, r, depth, stride, pad,
                                                 groups, hw):
    """The fused engine runs the trees over the mixed leaves in numba: its values and every
    gradient (input, gates, channel and position logits) equal the torch reference."""
    out = []
    for engine in ("torch", "fused"):
        layer = _randomized(LogicConv2d(c_in, k, receptive=r, depth=depth, stride=stride,
                                        padding=pad, groups=groups, wiring="learned", seed=4,
                                        mode=mode, engine=engine), 2).to(dtype)
        x = torch.rand(5, c_in, *hw, generator=torch.Generator().manual_seed(1),
                       dtype=dtype).requires_grad_()
        torch.manual_seed(7)                                  # the same Gumbel noise
        y = layer(x)
        (y * torch.linspace(-1, 1, y.numel(), dtype=dtype).view_as(y)).sum().backward()
        out.append((y, x.grad, layer.weight.grad, layer.wire_chan.grad, layer.wire_pos.grad))
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else {}
    for a, b in zip(*out):
        torch.testing.assert_close(a, b, **tol)


def test_fused_tree_gradcheck():
    from kairo.logic import _kernels

    g = torch.Generator().manual_seed(0)
    leaves = torch.rand(2, 3, 8, 13, dtype=torch.float64, generator=g).requires_grad_()
    c = torch.randn(3, 7, 4, dtype=torch.float64, generator=g).requires_grad_()
    assert torch.autograd.gradcheck(_kernels.tree, (leaves, c))


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("c_in, k, r, depth, stride, pad, groups, hw", SHAPES)
def test_the_straight_through_forward_is_the_discrete_layer(engine, c_in, k, r, depth, stride,
                                                            pad, groups, hw):
    layer = _randomized(LogicConv2d(c_in, k, receptive=r, depth=depth, stride=stride,
                                    padding=pad, groups=groups, wiring="learned", seed=2,
                                    engine=engine), 5)
    x = torch.randint(0, 2, (4, c_in, *hw)).float()
    hard = layer(x, mode="hard")                 # training: argmax forward, softmax gradients
    fixed = layer(x, fixed=True)
    layer.eval()
    y = layer(x)
    torch.testing.assert_close(hard, y)
    torch.testing.assert_close(fixed, y)
    assert set(y.unique().tolist()) <= {0.0, 1.0}
    # the argmax wiring keeps the paper's shape: two channels of the kernel's group
    channels, dy, dx = layer.sources()
    n_k, n_ch = k // groups, c_in // groups
    np.testing.assert_array_equal((channels // n_ch).numpy(),
                                  (torch.arange(k) // n_k)[:, None].expand(-1, 2).numpy())
    assert channels.shape == (k, 2) and dy.shape == dx.shape == (k, 2 ** depth)
    assert int(dy.max()) < r and int(dx.max()) < r


@pytest.mark.parametrize("engine", ENGINES)
def test_the_discrete_layer_follows_every_optimizer_step(engine):
    """sources() and the gather index are cached per wiring version: after each step that
    moves a choice, eval must equal a fresh layer given the same weights."""
    layer = LogicConv2d(2, 3, depth=2, wiring="learned", seed=0, engine=engine)
    opt = torch.optim.Adam(layer.parameters(), lr=0.5)
    x = torch.randint(0, 2, (8, 2, 6, 6)).float()
    seen = set()
    for _ in range(4):
        layer.train()
        opt.zero_grad()
        (layer(x) * torch.arange(36.0).reshape(6, 6)).sum().backward()
        opt.step()
        layer.eval()
        fresh = LogicConv2d(2, 3, depth=2, wiring="learned", seed=0, engine=engine)
        fresh.load_state_dict(layer.state_dict())
        fresh.eval()
        torch.testing.assert_close(layer(x), fresh(x))
        seen.add(tuple(layer.sources()[1].ravel().tolist()))
    assert len(seen) > 1                                    # the wiring did move


def test_training_finds_the_channel_and_the_position():
    """One gate per position over two channels: y = x[1] one row up and one column left,
    which the drawn wiring does not read; gradient descent on the wiring finds it."""
    torch.manual_seed(0)
    layer = LogicConv2d(2, 1, receptive=3, depth=1, padding=1, wiring="learned", seed=0,
                        engine="torch")
    channels, dy, dx = layer.sources()
    assert (1, 0, 0) not in {(int(channels[0, s]), int(dy[0, s]), int(dx[0, s]))
                             for s in (0, 1)}
    target = lambda x: torch.nn.functional.pad(x[:, 1], (1, 0, 1, 0))[:, :-1, :-1]  # noqa: E731
    opt = torch.optim.Adam(layer.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(1)
    for _ in range(300):
        x = torch.randint(0, 2, (32, 2, 6, 6), generator=g).float()
        loss = torch.nn.functional.binary_cross_entropy(layer(x)[:, 0].clamp(1e-6, 1 - 1e-6),
                                                        target(x))
        opt.zero_grad()
        loss.backward()
        opt.step()
    layer.eval()
    x = torch.randint(0, 2, (64, 2, 6, 6), generator=g).float()
    torch.testing.assert_close(layer(x)[:, 0], target(x))


@pytest.fixture(scope="module")
def learned_conv(data_dir):
    cfg = LogicTrainConfig(classes=(0, 1), kernels=4, conv_blocks=1, hidden=40, layers=1,
                           iters=120, eval_every=60, checkpoint_every=40, wiring="learned",
                           candidates=4, data_dir=str(data_dir))
    return cfg, load_data(cfg)


def test_a_learned_conv_network_trains_resumes_exactly_and_is_its_circuit(learned_conv,
                                                                          tmp_path):
    cfg, data = learned_conv
    net = build_model(cfg)
    assert net.features[0].wiring == "learned" and net.logic[0].wiring == "learned"
    full = train_killed_and_resumed(cfg, data, tmp_path, stop=40)
    assert full["history"][-1]["val_discrete"] > 0.9
    model, _ = model_from_checkpoint(tmp_path / "full.pt")
    conv = model.features[0]
    start = LogicConv2d(conv.in_channels, conv.out_channels, wiring="learned", seed=0)
    assert not torch.equal(conv.wire_pos, start.wire_pos)        # the positions trained
    assert_circuit_is_model(model, data)
