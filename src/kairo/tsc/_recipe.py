"""The default recipe: the one place where every "auto" option of a classifier is decided.

:func:`resolve_recipe` maps what can be measured on the training split before training
(:class:`SeriesStats`: size, channels, length, whether the series share one length, their
smoothness) and the user's options to the recipe a run trains with. Configs keep "auto" as
the user wrote it; the trainer and the model builder call this module, and a run records what
it returned once (run.json's ``resolved``, the model file's ``meta``).

Each rule's evidence is in docs/notes/tsc.md under the heading its comment names;
docs/tsc.md tabulates statistic → choice. Free of torch, so the CLI's help can quote the
thresholds.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from kairo._errors import ConfigError

__all__ = ["SeriesStats", "series_stats", "resolve_recipe", "model_recipe", "resolve_znorm", "receptive_field",
           "token_window", "stem_pool", "SAM_AUTO_STEPS", "MIXUP_AUTO_SMOOTHNESS",
           "TIME_WARP_AUTO", "STEM_AUTO", "STEM_DILATIONS"]

STEM_DILATIONS = ("auto", "off")             # or the integers themselves, e.g. "1,3,6"

# head_norm and weight_init "auto": each encoder's default. ResNet takes Keras's head (none)
# and Glorot initialisation (docs/tsc.md, "Keras's defaults";
# benchmarks/studies/keras_defaults.py); the Transformer keeps the LayerNorm head and
# PyTorch's initialisation, on which it was measured.
_ENCODER_DEFAULTS = {"resnet": {"head_norm": False, "weight_init": "glorot"},
                     "transformer": {"head_norm": True, "weight_init": "torch"}}

# stem_blocks 0 ("auto"): three full-resolution blocks close most of the gap to the ResNet on
# shape series (ArrowHead, OSULeaf), one on long series, where the convolutions' cost grows
# with the length and three were less accurate (ACSF1, 1,460 steps); two where the first is
# dilated, the second on its pooled output, whose features span several tokens (a heartbeat
# on PigCVP; notes, "A dilated stem for long series")
STEM_AUTO = (3, 512, 1, 2)   # (blocks up to the length, the length, beyond it, beyond, dilated)

# sam "auto": sharpness-aware steps on series of at most 64 steps, where the default's 64
# tokens are one step each and the stem's window mean never acts (fixed at 64, not tied to
# max_tokens: only the default's token count was measured). There they lifted
# ItalyPowerDemand's ensembles of two above the ResNet on fresh seeds and left JapaneseVowels
# and MNIST-1D level; on longer series they lost ArrowHead (notes, "SAM for series of at most
# 64 steps"). The ResNet keeps plain AdamW, the protocol of its published figures.
SAM_AUTO_STEPS = 64

# mixup "auto": mixup where the training series are smooth curves (median lag-1
# autocorrelation at least this), whose blends are curves between two shapes; not where they
# oscillate or are rough, whose blends belong to neither class (ACSF1 lost 0.046; notes,
# "Mixup where the series are smooth").
MIXUP_AUTO_SMOOTHNESS = 0.95

# cutmix "auto": cut where neither the sharpness-aware steps nor mixup act (a Transformer on
# conv tokens, series longer than SAM_AUTO_STEPS, not smooth) and the series are all of one
# length. Series of one length are mostly windows of a continuous recording, each stretch
# carrying the class (ACSF1: members 0.900 -> 0.922); series of many lengths are mostly events
# that begin at their onset, where a stretch of steady cycles does not (PLAID: -0.043; notes,
# "CutMix where the series are long, rough and of one length").

# time_warp "auto": warp where mixup's rule holds (the same smoothness): a warped outline is
# still an outline of its class, a warped oscillation has another period (the ResNet on
# ACSF1: 0.620). OSULeaf +0.004 over mixup alone, 4 of 5 ensembles (notes, "Time warping on
# top of mixup for smooth series")
TIME_WARP_AUTO = 0.2


@dataclass(frozen=True)
class SeriesStats:
    """What the recipe reads off a training split before training.

    ``length`` is the padded length (the model's ``max_len``); ``smoothness`` the median
    lag-1 autocorrelation of the series (:func:`kairo.tsc.smoothness`; NaN when no series
    has two valid steps); ``one_length`` whether no series is padded; ``end_padded`` whether
    every series' padding follows its valid steps (time warping, crops and CutMix need it)."""

    n_series: int
    n_channels: int
    length: int
    smoothness: float
    one_length: bool = True
    end_padded: bool = True


def series_stats(data, index=None) -> SeriesStats:
    """The :class:`SeriesStats` of a :class:`~kairo.tsc.TSData`, over the series at
    ``index`` (those trained on: a validation hold-out is not measured) or all of them."""
    from kairo.tsc._augment import check_mask
    from kairo.tsc._data import smoothness

    sub = data if index is None else data.subset(np.asarray(index))
    return SeriesStats(n_series=len(sub), n_channels=sub.n_channels, length=data.n_steps,
                       smoothness=float(smoothness(sub.x, sub.mask)),
                       one_length=data.one_length, end_padded=check_mask(data.mask) is None)


# ---------------------------------------------------------------------------- the model
def receptive_field(kernel_sizes, dilations) -> int:
    """Steps one output of a stack of stride-1 convolutions sees: 1 + Σ (k − 1) · d."""
    return 1 + sum((int(k) - 1) * int(d) for k, d in zip(kernel_sizes, dilations))


def token_window(max_len: int, max_tokens: int, pool: int = 1) -> int:
    """Steps one conv token averages: ceil(ceil(max_len / pool) / max_tokens), in the steps
    the tokens are taken from (full-resolution steps for ``pool`` 1, pooled ones else)."""
    return -(-(-(-max_len // pool)) // max_tokens)


def stem_pool(stem_blocks: int, dilations) -> int:
    """Steps the blocks after a dilated first block read its output averaged over: 2 × its
    last dilation (their dilations 1, 2, 4 … are then 2d, 4d, 8d … full-resolution steps); 1
    (no pooling) for one block or an undilated first block."""
    dilations = tuple(int(q) for q in dilations)
    return 2 * dilations[-1] if stem_blocks > 1 and max(dilations) > 1 else 1


def parse_dilations(text: str, n: int) -> tuple[int, ...]:
    """"1,3,6" → (1, 3, 6), one integer ≥ 1 per kernel of the block (``n``); ConfigError
    otherwise."""
    try:
        out = tuple(int(v) for v in str(text).split(","))
    except ValueError:
        out = ()
    if len(out) != n or min(out, default=0) < 1:
        raise ConfigError(f"stem_dilation must be auto, off or {n} comma-separated integers "
                          f"≥ 1 (one per kernel of --kernel-sizes), got {text!r}")
    return out


def _stem_dilations(stem_dilation: str, kernel_sizes, window: int) -> tuple[int, ...]:
    """stem_dilation "auto": on a long series a token averages a window of more steps than
    the stem's first block sees (14 with kernels 8, 5, 3), so each feature inside it describes
    a piece of the token, never its whole shape; dilating the block's later convolutions
    widens what one feature sees to the window at no cost (PigCVP, 2,000 steps; notes, "A
    dilated stem for long series"). All 1 where the block already sees a whole window, else
    the first convolution at 1 and the later ones in the ratio 1 : 2 : 4 … towards the last,
    d_last the smallest integer whose receptive field covers the window, each rounded up
    (kernels 8, 5, 3: d_last = ⌈(window − 8) / 4⌉, a window of 32 gives 1, 3, 6)."""
    ks = tuple(int(k) for k in kernel_sizes)
    if stem_dilation not in STEM_DILATIONS:
        return parse_dilations(stem_dilation, len(ks))
    ones = (1,) * len(ks)
    if stem_dilation == "off" or receptive_field(ks, ones) >= window:
        return ones
    first, later = (ks[:1], ks[1:]) if len(ks) > 1 else ((), ks)
    # receptive field = 1 + Σ first (k − 1) + d_last · Σ later (k − 1) / 2^(steps from last)
    per = sum(Fraction(k - 1, 2 ** (len(later) - 1 - i)) for i, k in enumerate(later))
    if per == 0:                             # 1-step kernels see one step however dilated
        return ones
    need = window - 1 - sum(k - 1 for k in first)
    last = math.ceil(Fraction(need) / per)
    grown = tuple(math.ceil(Fraction(last, 2 ** (len(later) - 1 - i)))
                  for i in range(len(later)))
    return (1,) * len(first) + grown


def model_recipe(model, length: int | None = None) -> dict:
    """The model's part of the recipe: ``head_norm`` (bool) and ``weight_init``
    ("torch"/"glorot") with "auto" read as the encoder's default; given the series ``length``,
    a Transformer on conv tokens adds ``stem_dilations`` (the first block's, for a window of
    ceil(length / max_tokens) steps), ``stem_blocks`` (0 read by the length rule) and
    ``stem_pool``. ``model`` is any object with ModelConfig's fields."""
    d = _ENCODER_DEFAULTS[model.encoder]
    out = {"head_norm": d["head_norm"] if model.head_norm == "auto"
           else model.head_norm == "true",
           "weight_init": d["weight_init"] if model.weight_init == "auto"
           else model.weight_init}
    if length is not None and model.encoder == "transformer" and model.tokens == "conv":
        dil = _stem_dilations(model.stem_dilation, model.kernel_sizes,
                              token_window(length, model.max_tokens))
        blocks = model.stem_blocks
        if not blocks:
            blocks = (STEM_AUTO[0] if length <= STEM_AUTO[1]
                      else STEM_AUTO[3] if max(dil) > 1 else STEM_AUTO[2])
        out.update(stem_blocks=blocks, stem_dilations=list(dil),
                   stem_pool=stem_pool(blocks, dil))
    return out


# ---------------------------------------------------------------------------- the recipe
def resolve_znorm(znorm: str, n_channels: int) -> str:
    """The input scaling "auto" stands for: "series" for univariate data (the UCR archive's
    convention), "channel" for multivariate data, where z-normalizing each series' channels on
    their own erases the levels that separate classes (docs/tsc.md). Other modes are
    returned as they are."""
    if znorm != "auto":
        return znorm
    return "series" if n_channels == 1 else "channel"


def resolve_recipe(stats: SeriesStats, model, train) -> dict:
    """The recipe a classifier trains with: every "auto" of ``model`` (ModelConfig fields)
    and ``train`` (TrainConfig fields) decided from ``stats``; an explicit option is kept.

    Returns ``znorm`` ("series" for one channel, the UCR convention; "channel" for several,
    whose levels tell classes apart), ``sam``, ``mixup``, ``cutmix`` (bools), ``time_warp``
    (the sd) and :func:`model_recipe`'s fields. The rules (a Transformer on conv tokens; the
    ResNet and other tokens train without them):

    ======================================  ===========================================
    statistic                               auto chooses
    ======================================  ===========================================
    length ≤ SAM_AUTO_STEPS (64)            sharpness-aware steps
    smoothness ≥ MIXUP_AUTO_SMOOTHNESS      mixup, and time warp TIME_WARP_AUTO where
                                            every series is end-padded
    longer, not smooth, one length          CutMix (mixup on by hand rules it out)
    length ≤ 512 / longer / longer and      3 / 1 / 2 stem blocks
    dilated
    token window > the stem's reach         the stem's first block dilated
    ======================================  ===========================================
    """
    if not isinstance(stats, SeriesStats):
        raise ConfigError(f"stats must be a SeriesStats (see series_stats), got "
                          f"{type(stats).__name__}")
    conv_tf = model.encoder == "transformer" and model.tokens == "conv"
    short = stats.length <= SAM_AUTO_STEPS
    smooth = bool(stats.smoothness >= MIXUP_AUTO_SMOOTHNESS)        # NaN: not smooth
    sam = train.sam == "on" if train.sam != "auto" else conv_tf and short
    cutmix = (train.cutmix == "on" if train.cutmix != "auto"
              else conv_tf and stats.one_length and train.mixup != "on" and not short
              and not smooth)
    # a batch is either blended or cut
    mixup = train.mixup == "on" if train.mixup != "auto" else conv_tf and smooth and not cutmix
    time_warp = (float(train.time_warp) if train.time_warp != "auto"
                 else TIME_WARP_AUTO if conv_tf and smooth and stats.end_padded else 0.0)
    return {"znorm": resolve_znorm(train.znorm, stats.n_channels), "sam": sam, "mixup": mixup, "cutmix": cutmix,
            "time_warp": time_warp, **model_recipe(model, stats.length)}


def resolved_train(train, recipe: dict):
    """``train`` (a TrainConfig) with its "auto" fields replaced by ``recipe``'s choices."""
    onoff = {True: "on", False: "off"}
    return dataclasses.replace(train, znorm=recipe["znorm"], sam=onoff[recipe["sam"]],
                               mixup=onoff[recipe["mixup"]], cutmix=onoff[recipe["cutmix"]],
                               time_warp=recipe["time_warp"])
