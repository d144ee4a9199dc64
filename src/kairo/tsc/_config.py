"""The configs of ``kairo.tsc``, free of torch so the command line starts fast.

``ModelConfig`` is the architecture of a classifier, ``TrainConfig`` how it is trained; each
``kairo tsc`` command has one flat config holding the data options and the fields of those two
it needs, so a flag, a key of ``--config`` and a key of a results folder's ``config.yaml`` are
the same name. The flat configs are built from field groups (``ModelOptions``,
``TrainOptions``, ``DataOptions``, ``GridOptions``) by inheritance; :func:`model_config` and
:func:`train_config` cut a ``ModelConfig`` / ``TrainConfig`` out of any of them.

"auto" values stay "auto" in every config: :func:`kairo.tsc.resolve_recipe` decides them
from the training split's statistics (the trainer and the model builder call it), and a run
records what they resolved to in run.json.
"""

from __future__ import annotations

import dataclasses
import types
from dataclasses import dataclass

from kairo._config import check_fields, option
from kairo._errors import ConfigError
from kairo._jobs import EXECUTORS
from kairo.tsc._recipe import (MIXUP_AUTO_SMOOTHNESS, SAM_AUTO_STEPS, STEM_AUTO,
                                     STEM_DILATIONS, TIME_WARP_AUTO, model_recipe,
                                     parse_dilations)

__all__ = ["ModelConfig", "TrainConfig", "ModelOptions", "TrainOptions", "DataOptions",
           "GridOptions", "TscTrainConfig", "EvaluateConfig", "PredictConfig", "MapsConfig",
           "EncodingsConfig", "CompareConfig", "BenchmarkConfig", "ListConfig",
           "model_config", "train_config", "split_config",
           "ENCODERS", "POOLS", "NORM_POSITIONS", "TOKENS", "POSITIONALS", "SCHEDULES", "DEVICES",
           "HEAD_NORMS", "WEIGHT_INITS", "ZNORMS", "BN_STATS", "SAMS", "MIXUPS", "CUTMIXES",
           "SELECTS",
           "SPLITS", "UNIVARIATE", "PEERS"]

ENCODERS = ("resnet", "transformer")
POOLS = ("mean", "max", "cls", "attention", "mha")
NORM_POSITIONS = ("pre", "post")             # LayerNorm before or after each residual branch
TOKENS = ("step", "patch", "conv")
HEAD_NORMS = ("auto", "true", "false")
WEIGHT_INITS = ("auto", "torch", "glorot")   # the encoder's, PyTorch's per-module, or Keras's
POSITIONALS = ("sinusoidal", "learned", "rope", "none")
# positions held as a table of max_len rows: series longer than at fit are refused
TABLE_POSITIONALS = ("sinusoidal", "learned")
SCHEDULES = ("cosine", "onecycle", "constant", "plateau")
DEVICES = ("cpu", "cuda", "auto")
# input scaling: each series and channel on its own (the UCR convention), each channel with the
# training split's statistics (keeps the levels that tell multivariate classes apart), none, or
# auto = series for one channel, channel for several (resolved by the trainer, see fit)
ZNORMS = ("auto", "series", "channel", "none")
# the batch-norm statistics an eval-mode model uses: the running averages left by training
# (PyTorch's momentum 0.1), or recomputed over the whole training split after training
# (benchmarks/studies/resnet_bn_stats.py, docs/tsc.md)
BN_STATS = ("running", "recompute")
SELECTS = ("holdout", "cv")
SAMS = ("auto", "on", "off")
MIXUPS = ("auto", "on", "off")
CUTMIXES = ("auto", "on", "off")
# the classifiers a user would otherwise run, fitted beside kairo in `kairo tsc benchmark`
# (aeon's convolution-based classifiers, kairo.tsc._peers)
PEERS = ("minirocket", "multirocket-hydra")
SPLITS = ("train", "test")

# every univariate classification set the aeon wheel ships (UnitTest aside), each with
# published figures; the variable-length one as its equal-length copy, the input the
# published figures were measured on
UNIVARIATE = ("ACSF1", "ArrowHead", "Covid3Month_disc", "GunPoint", "ItalyPowerDemand",
              "OSULeaf", "PickupGestureWiimoteZ_eq")

# ---------------------------------------------------------------------------- field groups
@dataclass(frozen=True)
class ModelOptions:
    """The architecture fields every encoder and pooling head shares (ModelConfig without
    ``encoder`` and ``pool``, which a grid lists several of)."""

    _group = "model"

    d_model: int = option(64, "width: Transformer token size; ResNet first-block channels "
                          "(then 2×)", low=1)
    n_heads: int = option(4, "Transformer attention heads", low=1)
    n_kv_heads: int = option(0, "key/value heads: 0 = n_heads (MHA), 1 = MQA, else GQA", low=0)
    blocks: int = option(2, "Transformer blocks or ResNet blocks", low=1)
    norm_position: str = option("pre", "Transformer LayerNorm placement: pre (before each "
                                "residual branch) or post (after)", choices=NORM_POSITIONS)
    tokens: str = option("conv", "Transformer tokens: step (one per time step), patch (one "
                         "per --patch steps) or conv (a convolutional stem, then the mean of "
                         "each window of steps, at most --max-tokens tokens)", choices=TOKENS)
    patch: int = option(16, "steps per token with --tokens patch", low=1)
    stem_blocks: int = option(0, "--tokens conv: residual convolution blocks of width d_model "
                              "(kernels --kernel-sizes) before attention; 0 = auto: "
                              f"{STEM_AUTO[0]} for series of up to {STEM_AUTO[1]} steps, "
                              f"{STEM_AUTO[3]} where the first block is dilated (see "
                              f"--stem-dilation), else {STEM_AUTO[2]}", low=0)
    max_tokens: int = option(64, "--tokens conv: the most tokens attention sees; the stem's "
                             "output is averaged over windows of ceil(length / max_tokens) "
                             "steps", low=1)
    stem_dilation: str = option("auto", "--tokens conv: dilations of the stem's first block, "
                                "one per kernel (e.g. 1,3,6); auto: where a token's window is "
                                "longer than the block sees (14 steps for 8,5,3: series over "
                                "14 × max_tokens steps), the later convolutions are dilated "
                                "until it sees a whole window; off: none. Where the first "
                                "block is dilated (last dilation d), the later blocks read "
                                "its output averaged over 2d steps, dilated 1, 2, 4 there")
    positional: str = option("rope", "positional encoding: sinusoidal, learned, rope, "
                             "none", choices=POSITIONALS)
    dropout: float = option(0.1, "dropout on the Transformer's residual and MLP paths (never "
                            "inside attention), in [0, 1)", low=0.0)
    pool_heads: int = option(4, "heads of the mha pooling head (and of the cls pool's own "
                             "block on a ResNet)", low=1)
    pool_queries: int = option(1, "learned queries per head of the mha pooling head", low=1)
    kernel_sizes: tuple[int, ...] = option((8, 5, 3), "ResNet and the conv stem: "
                                           "comma-separated kernel sizes of each block's "
                                           "convolutions", low=1)
    head_norm: str = option("auto", "LayerNorm between the pooled features and the linear "
                            "layer: true, false (none, as in Fawaz et al.'s ResNet) or auto "
                            "(false for resnet, true for transformer)", choices=HEAD_NORMS)
    weight_init: str = option("auto", "torch (PyTorch's per-module defaults), glorot "
                              "(Glorot-uniform weights and zero biases for every convolution "
                              "and linear layer: Keras's defaults, those of the published "
                              "ResNet runs) or auto (glorot for resnet, torch for transformer)",
                              choices=WEIGHT_INITS)


@dataclass(frozen=True)
class OptimOptions:
    """How a model is optimized: the budget, AdamW, the schedule, early stopping, the input
    scaling, sharpness-aware steps and the batch-norm statistics."""

    _group = "training"

    epochs: int = option(0, "training epochs (the most, with early stopping); 0 = as many as "
                         "--steps optimizer steps take", low=0)
    steps: int = option(1500, "with --epochs 0, the training budget in optimizer steps, so "
                        "that small and large training sets train alike", low=1)
    batch: int = option(16, "series per training batch", low=1)
    lr: float = option(1e-3, "peak learning rate (AdamW)", above=0.0)
    weight_decay: float = option(0.05, "AdamW's decoupled weight decay, on weight matrices "
                                 "and kernels only (not on biases, norms, pooling queries, CLS "
                                 "tokens or position tables)", low=0.0)
    schedule: str = option("cosine", "learning rate: cosine (after warm-up), onecycle, "
                           "constant, or plateau (× plateau_factor after plateau_patience "
                           "epochs without a lower loss: validation loss, or training loss "
                           "when there is no hold-out; floor min_lr)", choices=SCHEDULES)
    warmup: float = option(0.05, "fraction of all steps spent rising to --lr (cosine, "
                           "onecycle), in [0, 1)", low=0.0)
    plateau_patience: int = option(50, "plateau schedule: epochs without a lower loss before "
                                   "lr × factor", low=0)
    plateau_factor: float = option(0.5, "plateau schedule: the learning-rate multiplier, in "
                                   "(0, 1)", above=0.0)
    min_lr: float = option(1e-4, "plateau schedule: the learning-rate floor", low=0.0)
    val_fraction: float = option(0.0, "stratified validation hold-out of the training split "
                                 "for early stopping; 0 = none (then the weights of the lowest "
                                 "training loss are kept)", low=0.0)
    patience: int = option(30, "epochs without a lower validation loss before stopping; 0 = "
                           "never stop early", low=0)
    znorm: str = option("auto", "input scaling: series (each series and channel z-normalized "
                        "on its own, the UCR convention), channel (each channel with the "
                        "training split's mean and sd, kept with the model; keeps levels that "
                        "differ between classes), none, or auto (series for one channel, "
                        "channel for several)", choices=ZNORMS)
    label_smoothing: float = option(0.0, "label smoothing of the cross-entropy loss, in "
                                    "[0, 1)", low=0.0)
    max_grad_norm: float = option(1.0, "clip the gradient norm to this; 0 = no clipping",
                                  low=0.0)
    sam: str = option("auto", "sharpness-aware minimization (Foret et al. 2021): each step "
                      "takes the gradient at the weights moved --sam-rho along the batch's "
                      "gradient (twice the compute per step): on, off, or auto (on for a "
                      f"Transformer on conv tokens whose series have at most {SAM_AUTO_STEPS} "
                      "steps, off otherwise)", choices=SAMS)
    sam_rho: float = option(0.2, "the radius of the sharpness-aware step (--sam on or auto)",
                            above=0.0, high=10.0)
    bn_stats: str = option("recompute", "batch-norm statistics of the trained model (ResNet, "
                           "conv tokens): "
                           "running (the averages left by training) or recompute (over the "
                           "whole training split after training, one pass, no augmentation)",
                           choices=BN_STATS)


@dataclass(frozen=True)
class AugmentOptions:
    """Training-time augmentation of the batches."""

    _group = "augmentation"

    jitter: float = option(0.0, "augmentation: sd of Gaussian noise added to each training "
                           "batch (z units); 0 = off", low=0.0, high=10.0)
    scaling: float = option(0.0, "augmentation: sd of a per-series, per-channel amplitude "
                            "factor around 1; 0 = off", low=0.0, high=10.0)
    time_warp: str | float = option("auto", "augmentation: sd of the log speed of a random "
                                    "smooth time map per series (Um et al. 2017); 0 = off; "
                                    f"auto = {TIME_WARP_AUTO} where --mixup auto mixes (a "
                                    "Transformer on conv tokens, smooth series), else off",
                                    low=0.0, high=10.0)
    crop: float = option(0.0, "augmentation: window slicing, the fraction of each series cut "
                         "off before it is stretched back to full length (Le Guennec et al. "
                         "2016), in [0, 1); 0 = off", low=0.0)
    mixup: str = option("auto", "mixup (Zhang et al. 2018): each training batch mixed with a "
                        "shuffled copy of itself, labels alike, by a weight drawn from "
                        "Beta(--mixup-alpha, --mixup-alpha): on, off, or auto (on for a "
                        "Transformer on conv tokens whose training series are smooth: median "
                        f"lag-1 autocorrelation ≥ {MIXUP_AUTO_SMOOTHNESS}, as outlines are; off "
                        "for rough or oscillating series)", choices=MIXUPS)
    mixup_alpha: float = option(0.2, "mixup's Beta parameter (--mixup on or auto)", above=0.0,
                                high=10.0)
    cutmix: str = option("auto", "CutMix (Yun et al. 2019): in each training batch a "
                         "stretch of every series is replaced by the same stretch of a "
                         "shuffled partner's, and the label shared by the steps each gave: on, "
                         "off, or auto (on for a Transformer on conv tokens whose series have "
                         f"more than {SAM_AUTO_STEPS} steps, are not smooth and are all of one "
                         "length, where neither --sam auto nor --mixup auto acts; off under "
                         "--mixup on; the evidence: docs/tsc.md, \"The recipe\")",
                         choices=CUTMIXES)
    cutmix_alpha: float = option(1.0, "CutMix's Beta parameter: the fraction of each series "
                                 "kept is drawn from Beta(a, a) (--cutmix on or auto)",
                                 above=0.0, high=10.0)


@dataclass(frozen=True)
class ExecutionOptions:
    """Where and how a run computes; none of it changes what is learned (given the thread
    count) but the device."""

    _group = "execution"

    checkpoint_every: int = option(10, "epochs between checkpoints (<out>.checkpoint.pt; a "
                                   "rerun resumes)", low=1)
    threads: int = option(0, "torch CPU threads; 0 = torch's default", low=0)
    device: str = option("cpu", "cpu, cuda or auto (cuda when available)", choices=DEVICES)


@dataclass(frozen=True)
class TrainOptions(ExecutionOptions, AugmentOptions, OptimOptions):
    """The training fields (TrainConfig without ``seed``, which a grid counts from), by
    concern: optimization, augmentation, execution."""


@dataclass(frozen=True)
class DataOptions:
    """Which series a command reads: a shipped set, or the user's files."""

    _group = "data"

    dataset: str = option("GunPoint", "an aeon-shipped UCR/UEA set or MNIST1D (kairo tsc "
                          "list)")
    train_file: str = option("", "your training series: .ts, .csv (label first) or .npz (x, "
                             "y, mask)")
    test_file: str = option("", "your test series (same formats)")
    pad: bool = option(False, "allow series of different lengths (padded at the end and "
                       "masked)")
    mnist1d_length: int = option(40, "length of the generated MNIST-1D series", low=12)


@dataclass(frozen=True)
class GridOptions:
    """A grid of training runs: datasets × encoders × pooling heads × seeds."""

    _group = "grid"

    datasets: tuple[str, ...] = option(("GunPoint", "ArrowHead", "ItalyPowerDemand"),
                                       "comma-separated dataset names (kairo tsc list)")
    encoders: tuple[str, ...] = option(ENCODERS, "comma-separated encoders", choices=ENCODERS)
    pools: tuple[str, ...] = option(POOLS, "comma-separated pooling heads", choices=POOLS)
    seeds: int = option(5, "training seeds per configuration (seed, seed+1, …)", low=1)
    seed: int = option(0, "the first training seed", low=0)
    workers: int = option(0, "parallel training runs (one torch thread each); 0 = one per "
                          "core", low=0)
    executor: str = option("auto", "where the runs go: processes (local), ray (a Ray "
                           "cluster), serial, or auto (ray when $RAY_ADDRESS is set, else "
                           "processes)", choices=EXECUTORS)
    mnist1d_length: int = option(40, "length of the generated MNIST-1D series", low=12)


# ---------------------------------------------------------------------------- checks
def _check(cfg) -> None:
    """check_fields, and the types of the fields (a config built in Python is not coerced as
    one read from flags or a file is)."""
    import typing

    check_fields(cfg)
    hints = typing.get_type_hints(type(cfg))
    for f in dataclasses.fields(cfg):
        v, t = getattr(cfg, f.name), hints[f.name]
        if typing.get_origin(t) is tuple:
            if not isinstance(v, tuple):
                raise ConfigError(f"{f.name} must be a list, got {v!r}")
            t, values = typing.get_args(t)[0], v
        else:
            values = (v,)
        kinds = typing.get_args(t) if typing.get_origin(t) is types.UnionType else (t,)
        for one in values:
            ok = any(_IS_KIND[k](one) for k in kinds)
            if not ok:
                raise ConfigError(f"{f.name} must be "
                                  f"{' or '.join(_KIND[k] for k in kinds)}, got {one!r}")


_KIND = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}
_IS_KIND = {bool: lambda x: isinstance(x, bool),
            int: lambda x: isinstance(x, int) and not isinstance(x, bool),
            float: lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
            str: lambda x: isinstance(x, str)}


def _below_one(cfg, *names) -> None:
    for name in names:
        v = getattr(cfg, name)
        if not v < 1:
            raise ConfigError(f"{name} must be < 1, got {v}")


def _check_model(cfg, encoder: str, pool: str) -> None:
    """The ModelOptions checks no single field can make, for ``encoder`` and ``pool``."""
    if not cfg.kernel_sizes:
        raise ConfigError("kernel_sizes must list at least one kernel size (e.g. 8,5,3)")
    _below_one(cfg, "dropout")
    if pool in ("mha", "cls") and cfg.d_model % cfg.pool_heads:
        raise ConfigError(f"pool_heads ({cfg.pool_heads}) must divide d_model ({cfg.d_model})")
    if encoder != "transformer":
        return
    if cfg.stem_dilation not in STEM_DILATIONS:
        parse_dilations(cfg.stem_dilation, len(cfg.kernel_sizes))
    if cfg.d_model % cfg.n_heads:
        raise ConfigError(f"d_model: d_model {cfg.d_model} is not divisible by n_heads "
                          f"{cfg.n_heads}")
    if cfg.n_kv_heads and cfg.n_heads % cfg.n_kv_heads:
        raise ConfigError(f"n_kv_heads ({cfg.n_kv_heads}) must divide n_heads "
                          f"({cfg.n_heads}); 1 = MQA, 0 = MHA")
    if cfg.positional == "sinusoidal" and cfg.d_model % 2:
        raise ConfigError(f"d_model must be even for sinusoidal positions, got {cfg.d_model}")
    if cfg.positional == "rope" and (cfg.d_model // cfg.n_heads) % 2:
        raise ConfigError(f"positional: rope needs an even head size d_model / n_heads, got "
                          f"{cfg.d_model} / {cfg.n_heads} = {cfg.d_model // cfg.n_heads}")


def _check_train(cfg) -> None:
    """The TrainOptions checks no single field can make; ``time_warp`` given as text
    ("0.2", from a flag or a file) becomes the number."""
    tw = cfg.time_warp
    if isinstance(tw, str) and tw != "auto":
        try:
            tw = float(tw)
        except ValueError:
            raise ConfigError(f"time_warp: expected auto or a number (the sd of the log "
                              f"speed; 0 = off), got {tw!r}") from None
        if not 0.0 <= tw <= 10.0:               # NaN too
            raise ConfigError(f"time_warp must be auto or a number in [0, 10], got {tw}")
        object.__setattr__(cfg, "time_warp", tw)
    if cfg.mixup == "on" and cfg.cutmix == "on":
        raise ConfigError("mixup and cutmix are both on; a batch is either blended (mixup) or "
                          "cut (cutmix): turn one off (mixup auto steps aside for cutmix)")
    _below_one(cfg, "warmup", "plateau_factor", "val_fraction", "label_smoothing", "crop")
    if cfg.schedule == "onecycle" and not cfg.warmup > 0:
        raise ConfigError("warmup must be > 0 for the onecycle schedule (it is the fraction "
                          "of steps rising to lr)")
    if cfg.schedule == "plateau" and cfg.min_lr > cfg.lr:
        raise ConfigError(f"min_lr ({cfg.min_lr}) must not exceed lr ({cfg.lr}) for the "
                          f"plateau schedule")


def _check_data(cfg) -> None:
    if cfg.train_file and not cfg.test_file:
        raise ConfigError("train_file needs test_file too (kairo reports test metrics)")
    if cfg.test_file and not cfg.train_file:
        raise ConfigError("test_file without train_file: give both (or score a trained model "
                          "on test_file with kairo tsc evaluate)")


def _check_grid(cfg) -> None:
    for name in ("datasets", "encoders", "pools"):
        values = getattr(cfg, name)
        if not values:
            raise ConfigError(f"{name}: name at least one" +
                              (" (see `kairo tsc list`)" if name == "datasets" else ""))
        if len({v.lower() for v in values}) != len(values):
            raise ConfigError(f"{name} lists a value twice: {', '.join(values)}")


# ---------------------------------------------------------------------------- the two halves
@dataclass(frozen=True)
class EncoderPool:
    """The encoder and the pooling head of one model."""

    _group = "model"

    encoder: str = option("transformer", "resnet (residual 1D-CNN) or transformer",
                          choices=ENCODERS)
    pool: str = option("mean", "pooling head: mean, max, cls, attention, mha",
                       choices=POOLS)


@dataclass(frozen=True)
class Seed:
    _group = "training"

    seed: int = option(0, "seed of the weights, the hold-out and the batch order", low=0)


@dataclass(frozen=True)
class ModelConfig(ModelOptions, EncoderPool):
    """Architecture of a :class:`TSClassifier` (training options live in TrainConfig).

    ``blocks`` counts Transformer blocks or ResNet blocks. ``norm_position``, ``tokens``,
    ``patch``, ``stem_blocks``, ``stem_dilation``, ``max_tokens``, ``positional``, ``n_heads``
    and ``n_kv_heads`` only matter for the Transformer encoder; ``kernel_sizes`` for the
    ResNet and the Transformer's conv tokens. ``pool_heads`` is used by the "mha" pool and
    by the "cls" pool's own block (ResNet only); ``pool_queries`` by "mha".
    ``head_norm`` ("true") puts a LayerNorm between the pooled vector and the linear layer;
    "false" feeds the pooled vector straight to it, as in Fawaz et al.'s ResNet.
    ``weight_init`` "glorot" draws every Conv1d and Linear weight Glorot-uniform with zero
    biases (Keras's defaults); "torch" keeps PyTorch's per-module defaults. "auto" (the default
    of both) stays in the config and is resolved when the model is built
    (:meth:`resolved`): no head norm and Glorot for ResNet, the LayerNorm head and PyTorch's
    initialisation for the Transformer, so ``dataclasses.replace(cfg, encoder=…)`` gets the
    other encoder's defaults.
    """

    def __post_init__(self):
        _check(self)
        _check_model(self, self.encoder, self.pool)

    def resolved(self, max_len: int | None = None) -> dict:
        """The model's part of the recipe ("auto" decided; given the series length
        ``max_len``, the conv stem's too): :func:`kairo.tsc._recipe.model_recipe`."""
        return model_recipe(self, max_len)


@dataclass(frozen=True)
class TrainConfig(Seed, TrainOptions):
    """How a classifier is trained (the architecture is a :class:`ModelConfig`)."""

    def __post_init__(self):
        _check(self)
        _check_train(self)


def _pick(cls, cfg, **values):
    return cls(**{f.name: values[f.name] if f.name in values else getattr(cfg, f.name)
                  for f in dataclasses.fields(cls)})


def model_config(cfg, **values) -> ModelConfig:
    """The ModelConfig inside a flat config; ``values`` set fields it lacks or replaces
    (``encoder``, ``pool`` for a grid)."""
    return _pick(ModelConfig, cfg, **values)


def train_config(cfg, **values) -> TrainConfig:
    """The TrainConfig inside a flat config; ``values`` set fields it lacks or replaces."""
    return _pick(TrainConfig, cfg, **values)


def split_config(cfg) -> tuple[ModelConfig, TrainConfig]:
    """The ModelConfig and TrainConfig inside a ``tsc train`` config."""
    return model_config(cfg), train_config(cfg)


# ---------------------------------------------------------------------------- commands
@dataclass(frozen=True)
class ListConfig:
    """``kairo tsc list``: no options."""

    def __post_init__(self):
        _check(self)


@dataclass(frozen=True)
class TscTrainConfig(DataOptions, Seed, TrainOptions, ModelOptions, EncoderPool):
    """``kairo tsc train``: the data options, every ModelConfig field and every TrainConfig
    field, and how many models make up the result (``ensemble``, trained by
    :func:`~kairo.tsc.fit_ensemble`).

    Fields only the benchmark and its studies set are no flags of ``tsc train``: a
    ``--config`` file or Python sets them. Four compare a published protocol's choices that
    ``auto`` already makes for each encoder (``kairo tsc benchmark`` has them as flags); three
    make one run of the benchmark's grid: a cross-validation fold (``cv_folds``, ``cv_fold``)
    and no model file (``model_file``)."""

    _file_only = ("norm_position", "head_norm", "weight_init", "bn_stats", "cv_folds",
                  "cv_fold", "model_file")

    resample: int = option(0, "train and score on resample R of the bake-off protocol "
                           "(Middlehurst, Schäfer and Bagnall 2023): both splits pooled and "
                           "split again, stratified, at the original sizes, as tsml-eval draws "
                           "them; 0 = the splits as given", low=0, group="data")
    ensemble: int = option(2, "members of an ensemble: N models with seeds seed … seed+N-1, "
                           "trained in parallel (one core each), their class probabilities "
                           "averaged; 1 = one model", low=1, group="model")
    workers: int = option(0, "--ensemble: members trained at once; 0 = one per core (each "
                          "member on one torch thread unless --threads says otherwise)", low=0,
                          group="execution")
    executor: str = option("auto", "--ensemble: where the members train: processes (local), "
                           "ray (a Ray cluster), serial, or auto (ray when $RAY_ADDRESS is "
                           "set, else processes)", choices=EXECUTORS, group="execution")
    cv_folds: int = option(0, "cross-validation inside the training split: train on all but "
                           "one of k stratified folds (shuffled with the seed) and score the "
                           "held-out fold, not the test split; 0 = no folds", low=0,
                           group="data")
    cv_fold: int = option(0, "the held-out fold (0 … cv_folds−1)", low=0, group="data")
    model_file: bool = option(True, "write model.pt (a benchmark's grid runs leave it out: "
                              "hundreds of models it never reads again)", group="execution")

    def __post_init__(self):
        _check(self)
        _check_model(self, self.encoder, self.pool)
        _check_train(self)
        _check_data(self)
        if self.cv_folds == 1 or (self.cv_folds and self.cv_fold >= self.cv_folds):
            raise ConfigError(f"cv_fold: {self.cv_fold} of cv_folds {self.cv_folds}: expected "
                              f"cv_folds 0 (none) or ≥ 2 and a fold 0 … cv_folds−1")


@dataclass(frozen=True)
class EvaluateConfig:
    """``kairo tsc evaluate``: a trained model scored on a split of a dataset or on a file."""

    model: str = option("", "a model.pt written by kairo tsc train", required=True)
    dataset: str = option("", "an aeon-shipped UCR/UEA set or MNIST1D (kairo tsc list); "
                          "empty: the set the model was trained on")
    split: str = option("test", "the dataset split to score: train or test", choices=SPLITS)
    test_file: str = option("", "your series to score instead: .ts, .csv (label first) or "
                            ".npz (x, y, mask)")
    pad: bool = option(False, "allow series of different lengths (padded at the end and "
                       "masked)")
    mnist1d_length: int = option(40, "length of the generated MNIST-1D series (the model's "
                                 "own length when dataset is empty)", low=12)

    def __post_init__(self):
        _check(self)
        if self.test_file and self.split != "test":
            raise ConfigError(f"split {self.split} picks a split of the dataset; with "
                              f"test_file that file is scored: leave split at test")


@dataclass(frozen=True)
class MapsConfig(EvaluateConfig):
    """``kairo tsc maps``: pooling weights and self-attention of a model for chosen series."""

    series: tuple[int, ...] = option((0,), "comma-separated indices of the series to draw",
                                     low=0)
    member: int = option(0, "an ensemble's member whose attention is drawn (0 … N-1; each "
                         "member attends on its own, and the figures show its prediction)",
                         low=0)

    def __post_init__(self):
        super().__post_init__()
        if not self.series:
            raise ConfigError("series needs at least one series index, e.g. --series 0,1")


@dataclass(frozen=True)
class PredictConfig:
    """``kairo tsc predict``: predicted class and probabilities of every series of a file."""

    model: str = option("", "a model.pt written by kairo tsc train", required=True)
    input: str = option("", "series to classify: .ts, .csv (one series per row, no label "
                        "column unless --labelled) or .npz (array x)/.npy", required=True)
    output: str = option("", "the CSV file to write (its folder must exist)", required=True)
    pad: bool = option(False, "allow series of different lengths (padded at the end and "
                       "masked)")
    labelled: bool = option(False, "the input carries labels as a training file does (.csv: "
                            "first column; .ts: class labels; .npz: array y): they are "
                            "checked, written next to the predictions and scored")
    overwrite: bool = option(False, "replace an existing --output file")

    def __post_init__(self):
        _check(self)


@dataclass(frozen=True)
class EncodingsConfig:
    """``kairo tsc encodings``: the sinusoidal positional encoding drawn and checked."""

    d: int = option(64, "encoding width (even)", low=2)
    positions: int = option(128, "positions drawn (≥ 2; the offset check needs two)", low=2)
    base: float = option(10000.0, "the sinusoid base C in pos / C^(2i/d)", above=1.0)

    def __post_init__(self):
        _check(self)
        if self.d % 2:
            raise ConfigError(f"d must be even (sine and cosine pairs), got {self.d}")


@dataclass(frozen=True)
class CompareConfig(GridOptions, TrainOptions, ModelOptions):
    """``kairo tsc compare-pooling``: every pooling head × encoder × dataset × seed, with
    paired tests against mean pooling."""

    def __post_init__(self):
        _check(self)
        _check_grid(self)
        for enc in self.encoders:
            for pool in self.pools:
                _check_model(self, enc, pool)
        _check_train(self)


@dataclass(frozen=True)
class BenchmarkConfig(CompareConfig):
    """``kairo tsc benchmark``: the best configuration per dataset (encoder × pooling head ×
    time-warp candidate, chosen on a validation hold-out or by k-fold cross-validation of the
    training split), refit on the whole training split, against published results."""

    _group = "benchmark"

    datasets: tuple[str, ...] = option(UNIVARIATE, "comma-separated dataset names (kairo tsc "
                                       "list)")
    val_fraction: float = option(0.2, "--select holdout: the stratified validation hold-out of "
                                 "the training split the candidates are chosen on (with early "
                                 "stopping); the refit runs train on the whole split", low=0.0)
    reuse: str = option("", "runs.csv of an earlier compare-pooling/benchmark run, or with "
                        "--select cv the cv_runs.csv of an earlier benchmark (the grid is not "
                        "retrained)")
    refit: bool = option(True, "train the chosen configuration again on the whole training "
                         "split (no hold-out, all epochs) and report those runs")
    select: str = option("holdout", "how a configuration is chosen on the training split: "
                         "holdout (the best validation accuracy) or cv (stratified k-fold "
                         "cross-validation, each fold trained like the refit)",
                         choices=SELECTS)
    folds: int = option(5, "--select cv: number of stratified folds", low=2)
    cv_repeats: int = option(1, "--select cv: repeats of the k-fold split (split seeds seed, "
                             "seed+1, …)", low=1)
    time_warps: tuple[float, ...] = option((), "comma-separated time-warp candidates to "
                                           "choose from (e.g. 0,0.2); empty = just "
                                           "--time-warp", low=0.0, high=10.0)
    peers: tuple[str, ...] = option(PEERS, "comma-separated aeon classifiers fitted on the "
                                    "same splits and seeds, one thread each, for accuracy and "
                                    "fit time: minirocket, multirocket-hydra; empty (--peers "
                                    "'') = none", choices=PEERS)
    reference: str = option("", "refit_runs.csv of an earlier kairo tsc benchmark (e.g. "
                            "--encoders resnet): this run's seeds are paired with its same "
                            "seeds per dataset (mean difference, wins/ties/losses, Wilcoxon "
                            "or sign test)")
    resamples: int = option(0, "evaluate on the 2023 bake-off's resamples 0…R-1 of each "
                            "dataset (stratified, drawn as tsml-eval draws them; 0 is the "
                            "archive's split), run i on resample i, instead of --seeds runs on "
                            "the archive's split; the table then shows the published means "
                            "over the same resamples; 0 = off", low=0, high=30)
    ensemble: int = option(1, "refit runs: each seed an ensemble of N models (seeds s … "
                           "s+N-1 from s = seed + i·N, as kairo tsc train --ensemble N --seed s "
                           "trains them), their class probabilities averaged; 1 = one model",
                           low=1)

    def __post_init__(self):
        super().__post_init__()
        if len(set(self.time_warps)) != len(self.time_warps):
            raise ConfigError(f"time_warps lists a candidate twice: {self.time_warps}")
        if len(set(self.peers)) != len(self.peers):
            raise ConfigError(f"peers lists a classifier twice: {', '.join(self.peers)}")
        if self.ensemble > 1 and not self.refit:
            raise ConfigError("ensemble needs refit: the ensembles are the refit runs (the "
                              "selection runs are single models)")
        if self.select == "cv" and not self.refit:
            raise ConfigError("select cv needs refit: cross-validation never touches the test "
                              "split, so only the refit runs give test accuracy")
