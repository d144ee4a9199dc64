"""Attention models for time-series classification: scikit-learn estimators, the configs, a
trainer and its recipe (what ``auto`` chooses), data (aeon's shipped UCR/UEA sets, MNIST-1D,
user files), the 2023 bake-off's resamples and published results, and the building blocks —
positional encodings, multi-head attention (MHA/GQA/MQA with a key/value cache), pooling heads,
residual-CNN and Transformer encoders — with augmentation and metrics.

``__all__`` is the public API. The command configs (``kairo tsc …``) live in ``_config`` and are
found through the command registry; the grid, selection, reference and figure helpers the
commands and studies use stay in their private modules.

Names are imported on first use so ``import kairo.tsc`` stays cheap for the CLI.
"""

from __future__ import annotations

from kairo._lazy import lazy_exports

_EXPORTS = {
    # estimators
    "_estimator": ("TransformerClassifier", "ResNetClassifier", "load_estimator"),
    # configs
    "_config": ("ModelConfig", "TrainConfig", "ENCODERS", "POOLS"),
    # training and inference
    "_train": ("fit", "fit_ensemble", "recompute_bn_stats"),
    "_model": ("build_classifier", "TSClassifier", "TSEnsemble"),
    "_inference": ("evaluate", "predict", "save_classifier", "load_classifier", "length_limit"),
    # the recipe
    "_recipe": ("SeriesStats", "series_stats", "resolve_recipe"),
    # data
    "_data": ("TSData", "load_dataset", "list_datasets", "load_ts", "load_csv", "from_arrays",
              "znormalize", "stratified_split", "canonical_name", "smoothness"),
    "_inputs": ("load_file",),
    "_mnist1d": ("make_mnist1d",),
    # the 2023 bake-off's protocol and results
    "_resample": ("stratified_resample", "resample_split"),
    "_published": ("bakeoff_results", "published_table", "BAKEOFF_CLASSIFIERS"),
    # building blocks
    "_attention": ("attention_reference", "MultiHeadAttention", "KVCache", "TransformerBlock",
                   "TinyDecoder"),
    "_encodings": ("RotaryEmbedding", "SinusoidalEncoding", "LearnedEncoding",
                   "make_positional"),
    "_encoders": ("TransformerEncoder", "ResNet1D"),
    "_pooling": ("MeanPool", "MaxPool", "ClsPool", "AttentionPool", "MultiHeadAttentionPool",
                 "make_pool"),
    # augmentation and metrics
    "_augment": ("augment", "cut_mix"),
    "_metrics": ("classification_report",),
}
_WHERE = {name: f".{mod}" for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
