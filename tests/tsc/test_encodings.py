"""Positional encodings: the table against the formula, the offset rotation M_φ, RoPE's relative
property, learned encodings, errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo import ConfigError
from kairo.tsc import LearnedEncoding, RotaryEmbedding, SinusoidalEncoding, make_positional
from kairo.tsc._encodings import encoding_figure, offset_rotation, sinusoidal_table


@pytest.mark.parametrize("d,base", [(8, 10000.0), (64, 10000.0), (6, 100.0)])
def test_table_matches_the_issue_formula(d, base):
    pe = sinusoidal_table(50, d, base, dtype=torch.float64).numpy()
    assert pe.shape == (50, d)
    for pos in (0, 1, 7, 49):
        for i in range(1, d // 2 + 1):                 # the issue's 1-based i
            angle = pos / base ** (2 * (i - 1) / d)
            assert pe[pos, 2 * i - 2] == pytest.approx(np.sin(angle), abs=1e-12)
            assert pe[pos, 2 * i - 1] == pytest.approx(np.cos(angle), abs=1e-12)
    assert pe[0].tolist() == [0.0, 1.0] * (d // 2)


@pytest.mark.parametrize("phi", [1, 5, -3, 17, 0.5, -40])
def test_offset_rotation_shifts_every_position(phi):
    d, n = 32, 200
    pe = sinusoidal_table(n + 100, d, dtype=torch.float64)
    m = offset_rotation(phi, d)
    pos = torch.arange(50, n)
    if float(phi).is_integer():
        shifted = pe[pos + int(phi)]
    else:                                              # fractional shift: formula directly
        w = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        a = (pos[:, None] + phi) * w
        shifted = torch.stack([a.sin(), a.cos()], -1).reshape(len(pos), d)
    torch.testing.assert_close(pe[pos] @ m.T, shifted, atol=1e-5, rtol=0)


def test_offset_rotation_is_orthogonal_and_composes():
    d = 16
    for phi in (0.0, 3.0, -11.0, 250.0):
        m = offset_rotation(phi, d)
        torch.testing.assert_close(m @ m.T, torch.eye(d, dtype=torch.float64), atol=1e-12, rtol=0)
    torch.testing.assert_close(offset_rotation(3, d) @ offset_rotation(-7, d),
                               offset_rotation(-4, d), atol=1e-12, rtol=0)
    torch.testing.assert_close(offset_rotation(0, d), torch.eye(d, dtype=torch.float64))


def test_dot_product_of_encodings_depends_on_offset_only():
    pe = sinusoidal_table(300, 64, dtype=torch.float64)
    for k in (1, 10, 33):
        dots = (pe[:-k] * pe[k:]).sum(1)
        torch.testing.assert_close(dots, dots[:1].expand_as(dots), atol=1e-9, rtol=0)


def test_rope_scores_depend_on_relative_position_only():
    torch.manual_seed(0)
    rope = RotaryEmbedding(16, max_len=256)
    q, k = torch.randn(1, 1, 1, 16, dtype=torch.float64), torch.randn(1, 1, 1, 16,
                                                                      dtype=torch.float64)

    def score(m, n):
        return float((rope.rotate(q.float(), m) * rope.rotate(k.float(), n)).sum())

    for delta in (0, 3, -5, 40):
        ref = score(100, 100 - delta)
        for m in (50, 77, 120, 200):
            assert score(m, m - delta) == pytest.approx(ref, abs=1e-4)
    assert score(10, 0) != pytest.approx(score(10, 5), abs=1e-3)   # and it does depend on it


def test_rope_preserves_norm_start_offset_and_position_zero():
    torch.manual_seed(1)
    rope = RotaryEmbedding(8, max_len=64)
    x = torch.randn(2, 3, 10, 8)
    y = rope.rotate(x)
    torch.testing.assert_close(y.norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(y[:, :, 0], x[:, :, 0])          # position 0: identity
    # rotating the tail with start=4 equals the tail of the full rotation (KV-cache decoding)
    torch.testing.assert_close(rope.rotate(x[:, :, 4:], start=4), y[:, :, 4:])


def test_sinusoidal_module_adds_the_buffer():
    enc = SinusoidalEncoding(8, max_len=20)
    assert not list(enc.parameters()) and "table" not in enc.state_dict()
    x = torch.zeros(2, 5, 8)
    torch.testing.assert_close(enc(x), sinusoidal_table(20, 8)[:5].expand(2, 5, 8))
    torch.testing.assert_close(enc(x, start=3)[0], sinusoidal_table(20, 8)[3:8])


def test_learned_encoding_is_trainable():
    torch.manual_seed(0)
    enc = LearnedEncoding(4, max_len=10)
    assert enc.weight.requires_grad and abs(float(enc.weight.detach().std()) - 0.02) < 0.01
    target = torch.randn(1, 6, 4)
    opt = torch.optim.SGD(enc.parameters(), lr=0.1)
    before = float(((enc(torch.zeros(1, 6, 4)) - target) ** 2).sum().detach())
    for _ in range(50):
        loss = ((enc(torch.zeros(1, 6, 4)) - target) ** 2).sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(loss.detach()) < 1e-3 * before
    assert torch.all(enc.weight[6:] == enc.weight.detach()[6:])     # unused rows untouched


def test_make_positional():
    assert isinstance(make_positional("sinusoidal", 8, 16), SinusoidalEncoding)
    assert isinstance(make_positional("learned", 8, 16), LearnedEncoding)
    assert make_positional("rope", 8, 16) is None and make_positional("none", 8, 16) is None
    with pytest.raises(ConfigError, match="positional must be one of sinusoidal, learned"):
        make_positional("alibi", 8, 16)


def test_bad_arguments_raise_config_errors():
    with pytest.raises(ConfigError, match="d must be even for sinusoidal encoding, got 7"):
        sinusoidal_table(10, 7)
    with pytest.raises(ConfigError, match="d must be an even integer ≥ 2"):
        sinusoidal_table(10, 0)
    with pytest.raises(ConfigError, match="n_pos must be an integer ≥ 1"):
        sinusoidal_table(0, 8)
    with pytest.raises(ConfigError, match="base must be > 1"):
        offset_rotation(1, 8, base=1.0)
    with pytest.raises(ConfigError, match="head_dim"):
        RotaryEmbedding(5)
    for enc in (SinusoidalEncoding(4, max_len=8), LearnedEncoding(4, max_len=8)):
        with pytest.raises(ConfigError, match="max_len=8"):
            enc(torch.zeros(1, 9, 4))
        with pytest.raises(ConfigError, match="max_len=8"):
            enc(torch.zeros(1, 3, 4), start=6)
    with pytest.raises(ConfigError, match="positions start at -1"):
        RotaryEmbedding(4, max_len=8).rotate(torch.zeros(1, 1, 3, 4), start=-1)


def test_rotary_positions_past_the_table_are_the_same_rotations():
    """A rotary embedding reads sequences longer than its table: positions past it are
    computed on the fly, equal to a larger table's rows, and scores still depend on the
    offset only."""
    small, big = RotaryEmbedding(8, max_len=4), RotaryEmbedding(8, max_len=40)
    x = torch.randn(2, 3, 30, 8)
    assert torch.equal(small.rotate(x), big.rotate(x))
    assert torch.equal(small.rotate(x[..., :5, :], start=20), big.rotate(x[..., :5, :], start=20))
    q, k = torch.randn(8), torch.randn(8)
    s1 = small.rotate(q.expand(1, 8), 25) @ small.rotate(k.expand(1, 8), 21).T
    s2 = small.rotate(q.expand(1, 8), 4) @ small.rotate(k.expand(1, 8), 0).T
    torch.testing.assert_close(s1, s2)


def test_encoding_figure():
    fig = encoding_figure(d=16, n_pos=32)
    assert len(fig.axes) == 3                                          # two panels + colorbar
    img = fig.axes[0].images[0].get_array()
    assert img.shape == (32, 16)
    np.testing.assert_allclose(fig.axes[1].lines[0].get_ydata()[0], 8.0)   # pe(0)·pe(0) = d/2
