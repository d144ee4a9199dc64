"""The configs of ``kairo.attention``, free of torch so the command line starts fast.

``ModelConfig`` is the architecture of a classifier, ``TrainConfig`` how it is trained. The
option names listed here are the only ones the modules accept.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields

import numpy as np

from kairo._errors import ConfigError

__all__ = ["ModelConfig", "TrainConfig", "ENCODERS", "POOLS", "NORMS", "TOKENS",
           "POSITIONALS", "SCHEDULES", "DEVICES", "SHORTCUTS", "WEIGHT_INITS", "ZNORMS",
           "BN_STATS", "znorm_mode", "head_norm_value", "encoder_default"]

ENCODERS = ("resnet", "transformer")
POOLS = ("mean", "max", "cls", "attention", "mha")
NORMS = ("pre", "post")                      # LayerNorm before or after each residual branch
TOKENS = ("step", "patch")
SHORTCUTS = ("bn", "identity")               # ResNet shortcut of a same-width block
WEIGHT_INITS = ("auto", "torch", "glorot")   # the encoder's, PyTorch's per-module, or Keras's
POSITIONALS = ("sinusoidal", "learned", "rope", "none")
SCHEDULES = ("cosine", "onecycle", "constant", "plateau")
DEVICES = ("cpu", "cuda", "auto")
# input scaling: each series and channel on its own (the UCR convention), each channel with the
# training split's statistics (keeps the levels that tell multivariate classes apart), none, or
# auto = series for one channel, channel for several (resolved by the trainer, see fit)
ZNORMS = ("auto", "series", "channel", "none")
# the batch-norm statistics an eval-mode model uses: the running averages left by training
# (PyTorch's momentum 0.1), or recomputed over the whole training split after training (the
# default since 2026-12-01: benchmarks/resnet_bn_stats.py, docs/attention.md)
BN_STATS = ("running", "recompute")


# head_norm and weight_init "auto": each encoder's default. ResNet takes Keras's head (none)
# and Glorot initialisation since 2026-12-02 (the pre-registered rule of docs/attention.md,
# "Keras's defaults", applied by benchmarks/keras_defaults.py); the Transformer keeps the
# LayerNorm head and PyTorch's initialisation, on which it was measured.
_ENCODER_DEFAULTS = {"resnet": {"head_norm": False, "weight_init": "glorot"},
                     "transformer": {"head_norm": True, "weight_init": "torch"}}


def encoder_default(name: str, value, encoder: str):
    """``value`` of model field ``name`` (head_norm in any spelling) with "auto" read as
    ``encoder``'s default."""
    if name == "head_norm":
        value = head_norm_value(value)
    return _ENCODER_DEFAULTS[encoder][name] if value == "auto" else value


def head_norm_value(value):
    """``head_norm`` as true, false or "auto", from a bool or its spelling in a config file
    or on the command line (the spellings every true/false option takes); anything else is
    returned as it is (and refused by the check)."""
    spelled = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False,
               "auto": "auto"}
    if isinstance(value, str) and value.lower() in spelled:
        return spelled[value.lower()]
    return value


def znorm_mode(value):
    """``value`` with the old switch read as a mode: true → "series", false → "none" (configs,
    checkpoints and saved models written before "channel" existed); anything else as it is."""
    legacy = {True: "series", False: "none", "true": "series", "false": "none"}
    return legacy[value] if isinstance(value, (bool, str)) and value in legacy else value


@dataclass(frozen=True)
class ModelConfig:
    """Architecture of a :class:`TSClassifier` (training options live elsewhere).

    ``layers`` counts Transformer blocks or ResNet blocks. ``norm``, ``tokens``, ``patch``,
    ``positional``, ``n_heads`` and ``n_kv_heads`` only matter for the Transformer encoder.
    ``pool_heads`` is used by the "mha" pool and by the "cls" pool's own block (ResNet only);
    ``pool_queries`` by "mha"; ``kernel_sizes`` (the convolutions of each block) and
    ``shortcut`` (of a block that keeps its width: batch norm as in Fawaz et al., or the input
    itself as in kairo's files saved before the field existed) by ResNet.
    ``length_feature`` appends each series' valid length as a fraction of ``max_len`` (the
    longest training series) to the pooled features before the linear layer: masked pooling
    hides how long a padded series was. Off by default; on PickupGestureWiimoteZ it did not
    help (docs/attention.md).
    ``head_norm`` puts a LayerNorm between the pooled vector and the linear layer; off, the
    pooled vector goes straight to the linear layer, as in Fawaz et al.'s ResNet.
    ``weight_init`` "glorot" draws every Conv1d and Linear weight Glorot-uniform with zero
    biases (Keras's defaults, which the published ResNet figures were trained with); "torch"
    keeps PyTorch's per-module defaults. "auto" (the default of both) is resolved when the
    config is built: no head norm and Glorot for ResNet, the LayerNorm head and PyTorch's
    initialisation for the Transformer, so a built config always holds the concrete value
    (``dataclasses.replace(cfg, encoder=…)`` keeps it: build a new config for another
    encoder).
    """

    encoder: str = "transformer"      # resnet, transformer
    pool: str = "attention"           # mean, max, cls, attention, mha
    d_model: int = 64
    n_heads: int = 4
    n_kv_heads: int = 0               # 0 = same as n_heads (MHA); 1 = MQA; else GQA
    layers: int = 2                   # transformer blocks / resnet blocks
    norm: str = "pre"
    tokens: str = "step"              # step, patch
    patch: int = 16
    positional: str = "sinusoidal"
    dropout: float = 0.1
    pool_heads: int = 4
    pool_queries: int = 1
    kernel_sizes: tuple[int, ...] = (8, 5, 3)   # ResNet convs of a block (Fawaz: 8, 5, 3)
    shortcut: str = "bn"                        # ResNet same-width shortcut: bn, identity
    length_feature: bool = False                # valid length / max_len joins the pooled vector
    head_norm: str | bool = "auto"              # LayerNorm before the linear head; auto
    weight_init: str = "auto"                   # auto, torch, glorot

    def __post_init__(self):
        for name, allowed in (("encoder", ENCODERS), ("pool", POOLS), ("norm", NORMS),
                              ("tokens", TOKENS), ("positional", POSITIONALS),
                              ("shortcut", SHORTCUTS), ("weight_init", WEIGHT_INITS)):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"model field {name!r} must be one of {', '.join(allowed)}; "
                                  f"got {getattr(self, name)!r}")
        for name in ("d_model", "n_heads", "layers", "patch", "pool_heads", "pool_queries"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f"model field {name!r} must be an integer ≥ 1, got {v!r}")
        ks = self.kernel_sizes
        if not isinstance(ks, tuple) or not ks or any(
                isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in ks):
            raise ConfigError(f"model field 'kernel_sizes' must be a non-empty list of integers "
                              f"≥ 1 (e.g. 8,5,3), got {ks!r}")
        if isinstance(self.n_kv_heads, bool) or not isinstance(self.n_kv_heads, int) or \
                self.n_kv_heads < 0:
            raise ConfigError(f"model field 'n_kv_heads' must be an integer ≥ 0 (0 = n_heads), "
                              f"got {self.n_kv_heads!r}")
        if not isinstance(self.length_feature, bool):
            raise ConfigError(f"model field 'length_feature' must be true or false, got "
                              f"{self.length_feature!r}")
        head_norm = head_norm_value(self.head_norm)
        if not isinstance(head_norm, bool) and head_norm != "auto":
            raise ConfigError(f"model field 'head_norm' must be true, false or auto, got "
                              f"{self.head_norm!r}")
        for name, value in (("head_norm", head_norm), ("weight_init", self.weight_init)):
            object.__setattr__(self, name, encoder_default(name, value, self.encoder))
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError(f"model field 'dropout' must be in [0, 1), got {self.dropout}")
        if self.pool in ("mha", "cls") and self.d_model % self.pool_heads:
            raise ConfigError(f"model field 'pool_heads' ({self.pool_heads}) must divide "
                              f"d_model ({self.d_model})")
        if self.encoder != "transformer":
            return
        if self.d_model % self.n_heads:
            raise ConfigError(f"model field 'd_model': d_model {self.d_model} is not divisible "
                              f"by n_heads {self.n_heads}")
        if self.n_kv_heads and self.n_heads % self.n_kv_heads:
            raise ConfigError(f"model field 'n_kv_heads' ({self.n_kv_heads}) must divide "
                              f"n_heads ({self.n_heads}); 1 = MQA, 0 = MHA")
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ConfigError(f"model field 'd_model' must be even for sinusoidal positions, "
                              f"got {self.d_model}")
        if self.positional == "rope" and (self.d_model // self.n_heads) % 2:
            raise ConfigError(f"rope needs an even head size d_model / n_heads, got "
                              f"{self.d_model} / {self.n_heads} = {self.d_model // self.n_heads}")


@dataclass(frozen=True)
class TrainConfig:
    """How a classifier is trained (the architecture is a `ModelConfig`)."""

    epochs: int = 200
    batch: int = 32
    lr: float = 1e-3                  # peak learning rate
    weight_decay: float = 1e-2        # AdamW's decoupled decay
    schedule: str = "cosine"          # cosine (after a linear warm-up), onecycle, constant, plateau
    warmup: float = 0.05              # fraction of all steps spent rising to lr (cosine/onecycle)
    plateau_patience: int = 50        # plateau: epochs without a lower loss before lr × factor
    plateau_factor: float = 0.5       # plateau: the multiplier (Fawaz et al. 2019: 50, 0.5, 1e-4)
    min_lr: float = 1e-4              # plateau: the floor
    val_fraction: float = 0.2         # stratified hold-out of the training split; 0 = none
    patience: int = 30                # epochs without a lower val loss before stopping; 0 = never
    seed: int = 0
    znorm: str | bool = "auto"        # auto, series, channel, none (true = series)
    label_smoothing: float = 0.0
    max_grad_norm: float = 1.0        # clip the gradient norm; 0 = no clipping
    jitter: float = 0.0               # augmentation: added Gaussian noise sd (z units); 0 = off
    scaling: float = 0.0              # augmentation: per-series amplitude factor 1 + N(0, sd²)
    time_warp: float = 0.0            # augmentation: log-speed sd of a random smooth time map
    crop: float = 0.0                 # augmentation: window slicing, fraction cut off (< 1)
    bn_stats: str = "recompute"       # running, recompute (batch-norm statistics after training)
    checkpoint_every: int = 10        # epochs between checkpoints (when a path is given)
    threads: int = 0                  # torch CPU threads; 0 = torch's default
    device: str = "cpu"               # cpu, cuda, auto (cuda when available)

    def __post_init__(self):
        def need(name, ok, what):
            v = getattr(self, name)
            if not ok(v):
                raise ConfigError(f"train field {name!r} must be {what}, got {v!r}")

        def is_int(v):
            return isinstance(v, (int, np.integer)) and not isinstance(v, bool)

        def is_num(v):
            return isinstance(v, (int, float, np.integer, np.floating)) and \
                not isinstance(v, bool) and math.isfinite(v)

        need("epochs", lambda v: is_int(v) and v >= 1, "an integer ≥ 1")
        need("batch", lambda v: is_int(v) and v >= 1, "an integer ≥ 1")
        need("lr", lambda v: is_num(v) and v > 0, "a number > 0")
        need("weight_decay", lambda v: is_num(v) and v >= 0, "a number ≥ 0")
        need("schedule", lambda v: v in SCHEDULES, f"one of {', '.join(SCHEDULES)}")
        need("warmup", lambda v: is_num(v) and 0 <= v < 1, "a fraction in [0, 1)")
        if self.schedule == "onecycle" and not self.warmup > 0:
            raise ConfigError("train field 'warmup' must be > 0 for the onecycle schedule (it is "
                              "the fraction of steps rising to lr)")
        need("plateau_patience", lambda v: is_int(v) and v >= 0, "an integer ≥ 0")
        need("plateau_factor", lambda v: is_num(v) and 0 < v < 1, "a number in (0, 1)")
        need("min_lr", lambda v: is_num(v) and v >= 0, "a number ≥ 0")
        if self.schedule == "plateau" and self.min_lr > self.lr:
            raise ConfigError(f"train field 'min_lr' ({self.min_lr}) must not exceed 'lr' "
                              f"({self.lr}) for the plateau schedule")
        need("val_fraction", lambda v: is_num(v) and 0 <= v < 1, "a fraction in [0, 1)")
        need("patience", lambda v: is_int(v) and v >= 0, "an integer ≥ 0 (0 = no early stop)")
        need("seed", lambda v: is_int(v) and v >= 0, "an integer ≥ 0")
        object.__setattr__(self, "znorm", znorm_mode(self.znorm))
        need("znorm", lambda v: v in ZNORMS, f"one of {', '.join(ZNORMS)} (true = series, "
             "false = none)")
        need("label_smoothing", lambda v: is_num(v) and 0 <= v < 1, "a number in [0, 1)")
        need("max_grad_norm", lambda v: is_num(v) and v >= 0, "a number ≥ 0 (0 = no clipping)")
        for name in ("jitter", "scaling", "time_warp"):
            need(name, lambda v: is_num(v) and 0 <= v <= 10, "a number in [0, 10] (0 = off)")
        need("crop", lambda v: is_num(v) and 0 <= v < 1, "a fraction in [0, 1) (0 = off)")
        need("bn_stats", lambda v: v in BN_STATS, f"one of {', '.join(BN_STATS)}")
        need("checkpoint_every", lambda v: is_int(v) and v >= 1, "an integer ≥ 1")
        need("threads", lambda v: is_int(v) and v >= 0, "an integer ≥ 0 (0 = torch default)")
        need("device", lambda v: v in DEVICES, f"one of {', '.join(DEVICES)}")


# Fields added to the model after files were already written: a saved model, a checkpoint or
# a runs table's config.yaml that lacks one of them was made with the behaviour before the
# field existed.
ADDED_MODEL_FIELDS = ("shortcut", "length_feature", "head_norm", "weight_init")
# where that behaviour is not today's default; everything else took the field's default
_BEFORE_DEFAULT_CHANGED = {"shortcut": "identity", "bn_stats": "running", "head_norm": True,
                           "weight_init": "torch"}


def value_before_field(name: str, encoder: str | None):
    """The value of ModelConfig/TrainConfig field ``name`` for a file written before the field
    existed, for a model with ``encoder``. A ResNet's same-width shortcut was the input itself
    (a Transformer has no shortcut, so the field takes today's default there); every model had
    the LayerNorm head and PyTorch's initialisation."""
    if name in _BEFORE_DEFAULT_CHANGED and not (name == "shortcut" and encoder != "resnet"):
        return _BEFORE_DEFAULT_CHANGED[name]
    for cls in (ModelConfig, TrainConfig):
        for f in fields(cls):
            if f.name == name:
                return f.default if f.default is not MISSING else f.default_factory()
    raise KeyError(f"{name!r} is not a ModelConfig or TrainConfig field")
