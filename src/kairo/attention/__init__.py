"""Attention models for time-series classification: positional encodings, multi-head attention
(MHA/GQA/MQA with a key/value cache), pooling heads, residual-CNN and Transformer encoders, data
(aeon's shipped UCR/UEA sets, MNIST-1D, user files), a trainer and metrics.

Names are imported on first use so ``import kairo.attention`` stays cheap for the CLI.
"""

from __future__ import annotations

import importlib

from kairo._runs import register_environment

_EXPORTS = {
    "_encodings": ("sinusoidal_table", "offset_rotation", "SinusoidalEncoding", "LearnedEncoding",
                   "RotaryEmbedding", "make_positional", "encoding_figure"),
    "_attention": ("attention_reference", "MultiHeadAttention", "KVCache", "TinyDecoder"),
    "_pooling": ("MeanPool", "MaxPool", "ClsPool", "AttentionPool", "MultiHeadAttentionPool",
                 "make_pool", "pool_concentration", "POOLS"),
    "_encoders": ("ResNet1D", "TransformerEncoder", "ENCODERS", "resnet_layout"),
    "_model": ("ModelConfig", "TSClassifier", "build_classifier"),
    "_data": ("TSData", "list_datasets", "load_dataset", "from_arrays", "load_csv", "load_ts",
              "znormalize", "stratified_split"),
    "_mnist1d": ("make_mnist1d",),
    "_train": ("TrainConfig", "fit", "save_classifier", "load_classifier", "predict", "evaluate",
               "recompute_bn_stats"),
    "_metrics": ("classification_report", "per_class_table", "confusion_figure"),
}
_WHERE = {name: mod for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)


def _environment() -> dict:
    """For run records: the ResNet's auto layout, which sets the float order (hence the exact
    digits) of a seeded run. Importing the encoders imports torch, so the record's generic
    torch fields are there too when only the workers ran the models."""
    from kairo.attention._encoders import resnet_layout

    try:
        return {"resnet_auto_layout": resnet_layout("auto")}
    except Exception as e:           # a bad KAIRO_RESNET_LAYOUT fails the run elsewhere
        return {"resnet_auto_layout": f"invalid: {e}"}


register_environment("attention", _environment)


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'kairo.attention' has no attribute {name!r}")
    return getattr(importlib.import_module(f"kairo.attention.{_WHERE[name]}"), name)
