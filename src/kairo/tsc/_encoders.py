"""Encoders: a series x [B, C, T] (mask [B, T] bool, True = valid step) → tokens [B, T', D] and
their mask [B, T'] (or None).

- :class:`ResNet1D`: the residual CNN of Wang et al. 2017 as benchmarked by Fawaz et al. 2019
  (blocks of conv 8 → 5 → 3 with batch norm, widths 64, 128, 128 for d = 64), computed in the
  memory layout that trains faster on the machine at hand (see :func:`resnet_layout`; a run
  records the one it used).
- :class:`TransformerEncoder`: per-step or patch tokens, a positional encoding, Transformer
  blocks built on :class:`~kairo.tsc._attention.MultiHeadAttention`.

Padding never leaks into valid outputs: masked steps are zeroed before every convolution, which
is exactly the zero 'same' padding a shorter series gets at its end, and attention ignores
masked keys; in training, batch-norm statistics count valid steps only, so
a series' output does not depend on how much padding its batch carries.
"""

from __future__ import annotations

from functools import lru_cache

import torch
import torch.nn.functional as F
from torch import nn

from kairo._errors import ConfigError, DataError
from kairo.tsc._config import ENCODERS, TOKENS  # noqa: F401  (re-exported)
from kairo.tsc._recipe import token_window
from kairo.tsc._attention import NORMS, TransformerBlock
from kairo.tsc._encodings import DEFAULT_MAX_LEN, POSITIONALS, make_positional

__all__ = ["ResNet1D", "TransformerEncoder", "ENCODERS", "TOKENS", "LAYOUTS",
           "check_series", "resnet_layout"]

#: memory layouts the ResNet computes in; "auto" picks one per machine (see resnet_layout)
LAYOUTS = ("auto", "channels_last", "bct")


@lru_cache(maxsize=1)
def _cpu_capability() -> str:
    return torch.backends.cpu.get_cpu_capability()


def resnet_layout(layout: str = "auto", device: torch.device | str = "cpu") -> str:
    """The layout a ResNet1D with ``layout`` computes in on ``device``: "channels_last"
    ([B, C, 1, T], channels innermost) or "bct" (PyTorch's plain [B, C, T]).

    "auto" picks by CPU: channels-last where PyTorch runs AVX-512 kernels, where it trains
    faster, [B, C, T] elsewhere, where channels-last is slower
    (benchmarks/studies/resnet_layout.py, docs/benchmarks.md). Off the CPU "auto" keeps channels-last. The two layouts compute the
    same function up to float rounding; the choice is deterministic per machine, so seeded
    runs repeat on it, and a training run records it in run.json.
    """
    if layout not in LAYOUTS:
        raise ConfigError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    if layout != "auto":
        return layout
    if torch.device(device).type != "cpu":
        return "channels_last"
    return "channels_last" if _cpu_capability().startswith("AVX512") else "bct"



def check_series(x, mask, in_channels: int) -> None:
    """Raise DataError unless x is a float tensor [B, in_channels, T] and mask None or [B, T]
    bool."""
    if not isinstance(x, torch.Tensor) or x.ndim != 3 or not x.is_floating_point():
        raise DataError(f"series must be a float tensor [B, C, T], got "
                        f"{getattr(x, 'dtype', type(x).__name__)} of shape "
                        f"{list(getattr(x, 'shape', []))}")
    if x.shape[1] != in_channels:
        raise DataError(f"series have {x.shape[1]} channels, the encoder was built for "
                        f"{in_channels}: x must be [B, C, T] (channels before time)")
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise DataError(f"mask must be a bool tensor [B, T] (True = valid step), got "
                            f"{getattr(mask, 'dtype', type(mask).__name__)}")
        if tuple(mask.shape) != (x.shape[0], x.shape[2]):
            raise DataError(f"mask must have shape [B, T] = [{x.shape[0]}, {x.shape[2]}], got "
                            f"{list(mask.shape)}")


def _downsample_mask(mask: torch.Tensor | None, s: int) -> torch.Tensor | None:
    """[B, T] → [B, ceil(T/s)]: a window of s steps is valid if any of its steps is."""
    if mask is None or s == 1:
        return mask
    pad = -mask.shape[1] % s
    return F.pad(mask, (0, pad), value=False).view(mask.shape[0], -1, s).any(-1)


def _step_mask(mask: torch.Tensor | None, x: torch.Tensor) -> torch.Tensor | None:
    """[B, T] bool → x's dtype, broadcastable to x [B, C, T] or [B, C, 1, T]."""
    if mask is None:
        return None
    return mask.view(mask.shape[0], *([1] * (x.dim() - 2)), mask.shape[1]).to(x.dtype)


class _BatchNormCL(nn.BatchNorm1d):
    """BatchNorm1d (same parameters, buffers and state dict) that also takes the [B, C, 1, T]
    channels-last activations of the ResNet; on [B, C] / [B, C, T] it is BatchNorm1d."""

    def _check_input_dim(self, input):
        if input.dim() not in (2, 3, 4):
            raise ValueError(f"expected 2D, 3D or 4D input (got {input.dim()}D input)")

    def forward(self, input: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """``mask`` (broadcastable to ``input``, 1 = valid step): in training, the batch
        statistics (and the running averages they update) cover valid steps only. PyTorch's
        batch norm has no mask, so this path is written out; without padding it is not taken.
        """
        if mask is None or not self.training:
            return super().forward(input)
        dims = [d for d in range(input.dim()) if d != 1]
        n = mask.expand_as(input[:, :1]).sum()
        mean = (input * mask).sum(dims) / n
        shape = [1, -1] + [1] * (input.dim() - 2)
        centred = input - mean.view(shape)
        var = (centred.square() * mask).sum(dims) / n
        if self.track_running_stats:
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                f = (1.0 / float(self.num_batches_tracked) if self.momentum is None
                     else self.momentum)
                unbiased = var * (n / (n - 1).clamp(min=1))
                self.running_mean.mul_(1 - f).add_(mean, alpha=f)
                self.running_var.mul_(1 - f).add_(unbiased, alpha=f)
        y = centred * torch.rsqrt(var + self.eps).view(shape)
        if self.affine:
            y = y * self.weight.view(shape) + self.bias.view(shape)
        return y


def _conv(conv: nn.Conv1d, x: torch.Tensor, weight=None, bias=None) -> torch.Tensor:
    """A Conv1d (optionally with other weight and bias) on x [B, C, T], or on channels-last
    x [B, C, 1, T] as the conv2d it is inside PyTorch (stride, padding and dilation carried
    over; the ResNet's convs use one group)."""
    w = conv.weight if weight is None else weight
    b = conv.bias if weight is None else bias
    if x.dim() == 3:
        return F.conv1d(x, w, b, conv.stride, conv.padding, conv.dilation)
    w = w.unsqueeze(2).contiguous(memory_format=torch.channels_last)
    return F.conv2d(x, w, b, (1, conv.stride[0]), (0, conv.padding[0]),
                    (1, conv.dilation[0]))


class _ResBlock(nn.Module):
    """conv→BN→ReLU, conv→BN→ReLU, conv→BN, + shortcut, ReLU ('same' padding, zeroed mask).

    The shortcut is a 1×1 conv + BN when the width or length changes; otherwise BN (as in
    Fawaz et al.'s code and tsai). ``dilations`` (one per kernel, default all 1) spread each
    convolution's taps.

    forward takes either layout of :func:`resnet_layout`: [B, C, T], or [B, C, 1, T] in
    channels-last memory (time-major, channels innermost); the modules stay Conv1d and
    BatchNorm1d, so state dicts do not depend on the layout."""

    def __init__(self, c_in: int, c_out: int, kernel_sizes, stride: int, fk: dict,
                 dilations=None):
        super().__init__()
        self.kernel_sizes, self.stride = tuple(kernel_sizes), stride
        self.dilations = tuple(dilations or (1,) * len(self.kernel_sizes))
        chans = [c_in] + [c_out] * len(self.kernel_sizes)
        # no conv bias: batch norm's shift follows immediately
        # an even span (k − 1)·d pads symmetrically inside the conv; an odd one (k = 8, d = 1)
        # needs one more zero on the right, added by F.pad in forward (one copy of the input
        # per such conv)
        self.convs = nn.ModuleList(
            nn.Conv1d(a, c_out, k, stride=stride if i == 0 else 1, padding=(k - 1) * q // 2,
                      dilation=q, bias=False, **fk)
            for i, (a, k, q) in enumerate(zip(chans[:-1], self.kernel_sizes, self.dilations)))
        self.norms = nn.ModuleList(_BatchNormCL(c_out, **fk) for _ in self.kernel_sizes)
        if c_in != c_out or stride != 1:
            self.shortcut = nn.Sequential(
                nn.Conv1d(c_in, c_out, 1, stride=stride, bias=False, **fk),
                _BatchNormCL(c_out, **fk))
        else:
            self.shortcut = _BatchNormCL(c_out, **fk)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None):
        """x [B, C_in, (1,) T], mask [B, T] → [B, C_out, (1,) T'] in x's layout, mask [B, T']."""
        m_in = _step_mask(mask, x)
        mask = _downsample_mask(mask, self.stride)
        m_out = _step_mask(mask, x)
        if m_in is not None:
            x = x * m_in
        y = x
        last = len(self.convs) - 1
        fuse = not self.training      # inference: batch norm folded into the conv, one pass less
        for i, (conv, bn, k, q) in enumerate(zip(self.convs, self.norms, self.kernel_sizes,
                                                 self.dilations)):
            if i and m_out is not None:
                y = y * m_out
            # 'same' padding for any k (PyTorch's padding="same" refuses stride > 1)
            if (k - 1) * q % 2:
                y = F.pad(y, (0, 1))
            y = _conv_bn_eval(conv, bn, y) if fuse else bn(_conv(conv, y), m_out)
            # in place (batch norm's backward needs its input, not its output): one [B, C, T]
            # buffer less per activation; training speed measured unchanged
            if i < last:
                y = F.relu_(y)
        if isinstance(self.shortcut, nn.Sequential):
            sc_conv, sc_bn = self.shortcut
            short = (_conv_bn_eval(sc_conv, sc_bn, x) if fuse
                     else sc_bn(_conv(sc_conv, x), m_out))
        else:
            short = self.shortcut(x, m_in)
        return F.relu_(y.add_(short)), mask


def _conv_bn_eval(conv: nn.Conv1d, bn: nn.BatchNorm1d, x: torch.Tensor) -> torch.Tensor:
    """bn(conv(x)) on x [B, C, T] or channels-last [B, C, 1, T] with eval-mode batch norm
    folded into the conv's weights and bias (equal up to float rounding; the folded weights are
    recomputed per call, so nothing goes stale after training or loading)."""
    # by hand: torch.nn.utils.fusion returns detached Parameters; this stays differentiable
    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)
    bias = bn.bias - bn.running_mean * scale
    if conv.bias is not None:
        bias = bias + conv.bias * scale
    return _conv(conv, x, conv.weight * scale[:, None, None], bias)


class ResNet1D(nn.Module):
    """Residual 1-D CNN: ``blocks`` residual blocks of widths d, 2d, 2d, … (64, 128, 128 for
    d = 64, as in Fawaz et al. 2019; all d with ``widen=False``). ``stride`` > 1 shortens the
    series by that factor in every block.
    ``forward(x [B,C,T], mask [B,T] | None) → (tokens [B,T',d_out], mask [B,T'] | None)``
    with masked tokens set to 0; ``steps_per_token`` = stride ** blocks.
    ``layout`` ("auto", "channels_last" or "bct"; an attribute that may be changed later) is the
    memory layout the blocks compute in, resolved per call by :func:`resnet_layout`; it changes
    speed, not the function or the state dict. ``dilations`` (one per kernel) dilate every
    block's convolutions (the Transformer's conv stem on long series).
    """

    def __init__(self, in_channels: int, d: int = 64, blocks: int = 3,
                 kernel_sizes: tuple[int, ...] = (8, 5, 3), stride: int = 1,
                 *, widen: bool = True, layout: str = "auto", device=None, dtype=None,
                 dilations: tuple[int, ...] | None = None):
        super().__init__()
        resnet_layout(layout)                                   # validates
        self.layout = layout
        if in_channels < 1 or d < 1 or blocks < 1 or stride < 1:
            raise ConfigError(f"ResNet1D needs in_channels, d, blocks, stride ≥ 1, got "
                              f"in_channels={in_channels}, d={d}, blocks={blocks}, "
                              f"stride={stride}")
        if not kernel_sizes or any(int(k) < 1 for k in kernel_sizes):
            raise ConfigError(f"kernel_sizes must be a non-empty list of sizes ≥ 1, got "
                              f"{kernel_sizes}")
        if dilations is not None and (len(dilations) != len(kernel_sizes)
                                      or any(int(q) < 1 for q in dilations)):
            raise ConfigError(f"dilations must be one integer ≥ 1 per kernel size "
                              f"{tuple(kernel_sizes)}, got {tuple(dilations)}")
        fk = {"device": device, "dtype": dtype}
        widths = [d] + [2 * d if widen else d] * (blocks - 1)
        self.in_channels, self.d_out = in_channels, widths[-1]
        self.steps_per_token = stride ** blocks
        self.blocks = nn.ModuleList(
            _ResBlock(a, b, kernel_sizes, stride, fk, dilations)
            for a, b in zip([in_channels] + widths[:-1], widths))
        self.last_weights = None          # no attention; kept for a uniform encoder interface

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, *,
                need_weights: bool = False):
        check_series(x, mask, self.in_channels)
        if resnet_layout(self.layout, x.device) == "channels_last":
            x = x.unsqueeze(2).contiguous(memory_format=torch.channels_last)       # [B,C,1,T]
        for block in self.blocks:
            x, mask = block(x, mask)
        if x.dim() == 4:
            tokens = x.squeeze(2).transpose(1, 2)        # [B,T',D], contiguous: channels last
        else:
            # one copy (~1 % of a training step at [64, 128, 700]) so that every layout hands
            # the pool the same contiguous tokens
            tokens = x.transpose(1, 2).contiguous()
        if mask is not None:
            tokens = tokens * mask[..., None].to(tokens.dtype)
        return tokens, mask


def _window_mean(tokens: torch.Tensor, mask: torch.Tensor | None, s: int):
    """tokens [B, T, D] (zero at masked steps) → [B, ceil(T/s), D]: the mean of the valid steps
    of each window of s, and the windows' mask (valid if any step is). A window cut short by
    the series' end averages the steps it has, as one cut short by padding does."""
    if s == 1:
        return tokens, mask
    b, t, d = tokens.shape
    valid = tokens.new_ones(b, t) if mask is None else mask.to(tokens.dtype)
    pad = -t % s
    total = F.pad(tokens, (0, 0, 0, pad)).view(b, -1, s, d).sum(2)                 # [B,T',D]
    count = F.pad(valid, (0, pad)).view(b, -1, s).sum(2)                            # [B,T']
    return total / count.clamp(min=1)[..., None], None if mask is None else count > 0


class TransformerEncoder(nn.Module):
    """Tokens → positional encoding → [prefix] → ``layers`` Transformer blocks → LayerNorm (pre-LN).

    ``tokens="step"``: one token per time step, Linear(C → d). ``"patch"``: one token per
    ``patch`` steps, Conv1d(C, d, patch, stride=patch), T zero-padded up to a multiple of patch;
    a patch is valid if any of its steps is. ``"conv"``: a convolutional stem, ``stem_blocks``
    residual blocks of width d (:class:`ResNet1D`, ``kernel_sizes``) at full resolution, whose
    outputs are averaged over windows of ceil(max_len / max_tokens) steps (valid steps only),
    so attention sees at most ``max_tokens`` tokens that already carry local shape;
    ``stem_dilations`` (one per kernel, None = none) dilate the stem's first block. With
    ``stem_pool`` q > 1 the blocks after the first read its output averaged over q steps
    (valid steps only) and are dilated 1, 2, 4 … there, and the tokens average windows of
    ceil(ceil(max_len / q) / max_tokens) pooled steps; with q = 1 every block has
    ``stem_dilations``.
    ``positional="rope"`` rotates q/k inside attention; "sinusoidal"/"learned" are added to the
    tokens; "none" uses no positions. ``max_len`` is the
    longest series (in steps) the encoder accepts.

    ``forward(x [B,C,T], mask [B,T] | None, *, prefix=None, need_weights=False) →
    (tokens [B,T',d], mask [B,T'] | None)``. ``prefix`` (e.g. :meth:`ClsPool.prepend`) maps
    (tokens, mask) → (tokens, mask) after the embedding and positions, before the blocks (RoPE
    leaves room for one prefix token). With ``need_weights`` the per-layer attention weights
    [B,H,T',T'] are kept in ``last_weights`` (else it is None). ``steps_per_token`` is the
    patch or window size (1 for step tokens).
    """

    def __init__(self, in_channels: int, d: int = 64, n_heads: int = 4,
                 n_kv_heads: int | None = None, layers: int = 2, mlp_ratio: float = 4,
                 dropout: float = 0.1, norm: str = "pre", tokens: str = "step", patch: int = 16,
                 positional: str = "sinusoidal", max_len: int = DEFAULT_MAX_LEN, *,
                 stem_blocks: int = 1, kernel_sizes: tuple[int, ...] = (8, 5, 3),
                 max_tokens: int = 64, stem_dilations: tuple[int, ...] | None = None,
                 stem_pool: int = 1, device=None, dtype=None):
        super().__init__()
        if tokens not in TOKENS:
            raise ConfigError(f"tokens must be one of {', '.join(TOKENS)}; got {tokens!r}")
        if norm not in NORMS:
            raise ConfigError(f"norm must be one of {', '.join(NORMS)}; got {norm!r}")
        if positional not in POSITIONALS:
            raise ConfigError(f"positional must be one of {', '.join(POSITIONALS)}; got "
                              f"{positional!r}")
        if min(in_channels, layers, patch, max_len, stem_blocks, max_tokens, stem_pool) < 1:
            raise ConfigError(f"TransformerEncoder needs in_channels, layers, patch, max_len, "
                              f"stem_blocks, max_tokens, stem_pool ≥ 1, got "
                              f"in_channels={in_channels}, layers={layers}, patch={patch}, "
                              f"max_len={max_len}, stem_blocks={stem_blocks}, "
                              f"max_tokens={max_tokens}, stem_pool={stem_pool}")
        if stem_pool > 1 and stem_blocks < 2:
            raise ConfigError(f"stem_pool={stem_pool} needs stem_blocks ≥ 2 (it pools the "
                              f"first block's output for the later ones), got {stem_blocks}")
        fk = {"device": device, "dtype": dtype}
        self.in_channels, self.d_out, self.max_len = in_channels, d, max_len
        self.tokens = tokens
        if tokens == "conv":
            # a fixed window per model (set by the training length), so a series' tokens do
            # not depend on how long the other series of its batch are
            self.stem_pool = stem_pool
            self.patch = token_window(max_len, max_tokens, stem_pool)
            self.stem = ResNet1D(in_channels, d, 1 if stem_pool > 1 else stem_blocks,
                                 kernel_sizes, widen=False, dilations=stem_dilations, **fk)
            # 1, 2, 4 … on steps q apart: 2d, 4d, 8d full-resolution steps for q = 2d, at
            # 1/q of their cost at full resolution
            self.stem_pooled = ResNet1D(
                d, d, stem_blocks - 1, kernel_sizes, widen=False,
                dilations=tuple(2 ** i for i in range(len(kernel_sizes))),
                **fk) if stem_pool > 1 else None
            self.embed = None
        else:
            self.patch = patch if tokens == "patch" else 1
            self.stem = self.stem_pooled = None
            self.embed = nn.Linear(in_channels, d, **fk) if tokens == "step" else \
                nn.Conv1d(in_channels, d, patch, stride=patch, **fk)
        self.steps_per_token = self.patch * (self.stem_pool if tokens == "conv" else 1)
        n_tok = -(-max_len // self.steps_per_token)
        self.pos = make_positional(positional, d, n_tok)
        self.blocks = nn.ModuleList(
            TransformerBlock(d, n_heads, n_kv_heads, mlp_ratio=mlp_ratio, dropout=dropout,
                             norm=norm, rope=positional == "rope", max_len=n_tok + 1, **fk)
            for _ in range(layers))
        self.ln = nn.LayerNorm(d, **fk) if norm == "pre" else nn.Identity()
        self.last_weights = None

    @property
    def length_limit(self) -> int | None:
        """The longest series the encoder reads: ``max_len`` with a table of positions
        (sinusoidal, learned); None with rotary or no positions, whose tokens keep the window
        ``max_len`` set and whose attention reads any offset."""
        return self.max_len if self.pos is not None else None

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, *, prefix=None,
                need_weights: bool = False):
        check_series(x, mask, self.in_channels)
        b, _, t = x.shape
        if self.length_limit is not None and t > self.length_limit:
            raise ConfigError(f"series of length {t} exceed the encoder's max_len={self.max_len}; "
                              f"build the model with a larger max_len")
        if mask is not None:
            x = x * mask[:, None, :].to(x.dtype)     # padding values never reach a token
        if self.stem is not None:
            tok, mask = self.stem(x, mask)                                          # [B,T,d]
            if self.stem_pooled is not None:
                tok, mask = _window_mean(tok, mask, self.stem_pool)                 # [B,T/q,d]
                tok, mask = self.stem_pooled(tok.transpose(1, 2), mask)
            tok, mask = _window_mean(tok, mask, self.patch)                         # [B,T/p,d]
        elif self.patch == 1:
            tok = self.embed(x.transpose(1, 2))                                     # [B,T,d]
        else:
            x = F.pad(x, (0, -t % self.patch))
            tok = self.embed(x).transpose(1, 2)                                     # [B,T/p,d]
            mask = _downsample_mask(mask, self.patch)
        if self.pos is not None:
            tok = self.pos(tok)
        if prefix is not None:
            tok, mask = prefix(tok, mask)
        weights = []
        for block in self.blocks:
            tok, w = block(tok, key_padding_mask=mask, need_weights=need_weights)
            weights.append(None if w is None else w.detach())
        self.last_weights = weights if need_weights else None
        return self.ln(tok), mask
