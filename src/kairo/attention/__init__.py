"""Attention models for time-series classification: positional encodings, multi-head attention
(MHA/GQA/MQA with a key/value cache), pooling heads, residual-CNN and Transformer encoders, data
(aeon's shipped UCR/UEA sets, MNIST-1D, user files), a trainer and metrics.

Names are imported on first use so ``import kairo.attention`` stays cheap for the CLI.
"""

from __future__ import annotations

from kairo._lazy import lazy_exports

_EXPORTS = {
    "_config": ("ModelConfig", "TrainConfig", "TscTrainConfig", "EvaluateConfig",
                "PredictConfig", "MapsConfig", "EncodingsConfig", "CompareConfig",
                "BenchmarkConfig", "ListConfig", "model_config", "train_config", "split_config",
                "ENCODERS", "POOLS", "UNIVARIATE"),
    "_recipe": ("SeriesStats", "series_stats", "resolve_recipe", "model_recipe",
                "resolve_znorm", "receptive_field", "stem_pool", "token_window"),
    "_encodings": ("sinusoidal_table", "offset_rotation", "SinusoidalEncoding", "LearnedEncoding",
                   "RotaryEmbedding", "make_positional", "encoding_figure"),
    "_attention": ("attention_reference", "MultiHeadAttention", "KVCache", "TransformerBlock",
                   "TinyDecoder"),
    "_pooling": ("MeanPool", "MaxPool", "ClsPool", "AttentionPool", "MultiHeadAttentionPool",
                 "make_pool", "pool_concentration"),
    "_encoders": ("ResNet1D", "TransformerEncoder", "resnet_layout"),
    "_estimator": ("TransformerClassifier", "ResNetClassifier", "load_estimator"),
    "_model": ("TSClassifier", "TSEnsemble", "build_classifier"),
    "_data": ("TSData", "list_datasets", "load_dataset", "from_arrays", "load_csv", "load_ts",
              "pad_to", "znormalize", "stratified_split", "canonical_name", "smoothness"),
    "_mnist1d": ("make_mnist1d",),
    "_augment": ("augment", "cut_mix"),
    "_train": ("fit", "fit_ensemble", "recompute_bn_stats", "scale_input", "param_groups",
               "n_epochs"),
    "_inference": ("save_classifier", "load_classifier", "predict", "evaluate", "check_max_len",
                   "labels_as"),
    "_metrics": ("classification_report", "per_class_table", "confusion_figure"),
    "_grid": ("run_grid", "summarize", "cv_folds", "canonical_datasets", "ensemble_runs",
              "read_member_runs"),
    "_selection": ("cv_summary",),
    "_reference": ("resnet_test", "read_reference", "reference_test"),
    "_benchmark": ("benchmark_markdown",),
    "_compare": ("pooling_tests", "comparison_figure"),
    "_resample": ("stratified_resample", "resample_split"),
    "_published": ("published_table", "bakeoff_results", "BAKEOFF_CLASSIFIERS", "RESNET_FAWAZ2019", "RESNET_FAWAZ2019_RUNS",
                   "CONVTRAN_FOUMANI2024"),
    "_peers": ("fit_peer", "peer_input", "peer_estimator", "PEERS"),
    "_commands": ("load_file", "maps_figure"),
}
_WHERE = {name: f".{mod}" for mod, names in _EXPORTS.items() for name in names}
__all__ = sorted(_WHERE)
__getattr__, __dir__ = lazy_exports(__name__, _WHERE)
