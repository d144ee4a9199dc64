"""``kairo.tsc.__all__`` is the field's public API and nothing else (issue 65): the
estimators, the configs, training and inference, the recipe, data, the bake-off's protocol and
results, the building blocks, augmentation and metrics. Command configs, the grid and selection
machinery, reference tables and figures stay in their private modules."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import kairo.tsc

PUBLIC = {
    # estimators
    "TransformerClassifier", "ResNetClassifier", "load_estimator",
    # configs
    "ModelConfig", "TrainConfig", "ENCODERS", "POOLS",
    # training and inference
    "fit", "fit_ensemble", "build_classifier", "evaluate", "predict", "save_classifier",
    "load_classifier", "recompute_bn_stats", "length_limit",
    # the recipe
    "SeriesStats", "series_stats", "resolve_recipe", "smoothness",
    # data
    "TSData", "load_dataset", "list_datasets", "load_ts", "load_csv", "load_file", "from_arrays",
    "make_mnist1d", "znormalize", "stratified_split", "canonical_name",
    # the 2023 bake-off's protocol and results
    "stratified_resample", "resample_split", "bakeoff_results", "published_table",
    "BAKEOFF_CLASSIFIERS",
    # building blocks
    "MultiHeadAttention", "KVCache", "RotaryEmbedding", "SinusoidalEncoding", "LearnedEncoding",
    "make_positional", "TransformerBlock", "TransformerEncoder", "ResNet1D", "TSClassifier",
    "TSEnsemble", "TinyDecoder", "MeanPool", "MaxPool", "ClsPool", "AttentionPool",
    "MultiHeadAttentionPool", "make_pool", "attention_reference",
    # augmentation and metrics
    "augment", "cut_mix", "classification_report",
}


def test_all_is_the_public_api():
    assert len(kairo.tsc.__all__) == len(set(kairo.tsc.__all__))
    assert set(kairo.tsc.__all__) == PUBLIC
    assert kairo.tsc.__all__ == sorted(kairo.tsc.__all__)


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_every_public_name_resolves(name):
    value = getattr(kairo.tsc, name)
    assert value is not None
    assert name in dir(kairo.tsc)


@pytest.mark.parametrize("name", ["TscTrainConfig", "BenchmarkConfig", "EncodingsConfig",
                                  "run_grid", "summarize", "cv_folds", "resnet_layout",
                                  "scale_input", "model_recipe", "RESNET_FAWAZ2019",
                                  "pool_concentration", "sinusoidal_table", "fit_peer"])
def test_internals_are_not_exported(name):
    assert name not in kairo.tsc.__all__
    with pytest.raises(AttributeError, match=name):
        getattr(kairo.tsc, name)


def test_internals_still_live_in_their_private_modules():
    # the commands and studies import them from there
    assert importlib.import_module("kairo.tsc._grid").run_grid
    assert importlib.import_module("kairo.tsc._config").TscTrainConfig
    assert importlib.import_module("kairo.tsc._encoders").resnet_layout


def test_import_stays_cheap():
    """Importing the package (and reading ``__all__``) loads neither torch nor the modules."""
    code = ("import sys, kairo.tsc as a; a.__all__; "
            "print('torch' in sys.modules, any(m.startswith('kairo.tsc._') "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "False"]
