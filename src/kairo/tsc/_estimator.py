"""scikit-learn estimators over kairo's trainer: ``TransformerClassifier`` (the default recipe of
``kairo tsc train``) and ``ResNetClassifier``.

They follow scikit-learn's contract (parameters stored as given and validated in ``fit``,
fitted attributes ending in ``_``, ``clone``, ``get_params``/``set_params``, ``predict_proba``
columns in ``classes_`` order) and aeon's input conventions (``X`` as ``[n_cases, n_channels,
n_timepoints]``, ``[n_cases, n_timepoints]`` or a list of ``[n_channels, n_timepoints_i]``
arrays of unequal length, which are padded at the end and masked). A fitted estimator trains
exactly the model ``kairo tsc train`` trains with the same options and seed: both build the
same ModelConfig and TrainConfig and call the same trainer.
"""

from __future__ import annotations

import dataclasses
import numbers
from pathlib import Path

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_array, check_is_fitted, column_or_1d

from kairo._errors import ConfigError, DataError, KairoError
from kairo.tsc._config import ModelConfig, TrainConfig

__all__ = ["TransformerClassifier", "ResNetClassifier", "load_estimator", "estimator_for"]

_MODEL = ModelConfig()
_TRAIN = TrainConfig()
_MODEL_FIELDS = {f.name for f in dataclasses.fields(ModelConfig)}
_TRAIN_FIELDS = {f.name for f in dataclasses.fields(TrainConfig)}
# estimator parameters that are not config fields
_OWN = ("ensemble", "options", "n_jobs", "random_state", "verbose")


class _SeriesClassifier(ClassifierMixin, BaseEstimator):
    """What both estimators share; a subclass names its encoder and lists its parameters in
    its ``__init__`` (scikit-learn reads them from the signature)."""

    _encoder = ""

    # ------------------------------------------------------------------ configs
    def configs(self, seed: int = 0) -> tuple[ModelConfig, TrainConfig]:
        """The ModelConfig and TrainConfig this estimator trains with (``seed`` the first
        member's); ConfigError names a bad parameter or ``options`` key."""
        params = self.get_params(deep=False)
        options = params.pop("options") or {}
        if not isinstance(options, dict):
            raise ConfigError(f"options must be a dict of ModelConfig/TrainConfig fields, got "
                              f"{type(options).__name__}")
        unknown = sorted((set(options) - (_MODEL_FIELDS | _TRAIN_FIELDS))
                         | ({"encoder", "seed"} & set(options)))
        if unknown:
            raise ConfigError(f"options: unknown or reserved fields {unknown}; allowed are the "
                              f"fields of ModelConfig and TrainConfig other than encoder and "
                              f"seed (set random_state)")
        twice = sorted(set(options) & set(params))
        if twice:
            raise ConfigError(f"options repeats the parameters {twice}; set them as "
                              f"parameters")
        fields = {**{k: v for k, v in params.items() if k not in _OWN}, **options}
        if isinstance(fields.get("kernel_sizes"), list):
            fields["kernel_sizes"] = tuple(fields["kernel_sizes"])
        model = ModelConfig(encoder=self._encoder,
                            **{k: v for k, v in fields.items() if k in _MODEL_FIELDS})
        train = TrainConfig(seed=seed, **{k: v for k, v in fields.items() if k in _TRAIN_FIELDS})
        return model, train

    def _seed(self) -> int:
        rs = self.random_state
        if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
            if rs < 0:
                raise ConfigError(f"random_state must be ≥ 0, got {rs}")
            return int(rs)
        return int(check_random_state(rs).randint(0, 2**31 - 1))

    def _workers(self) -> tuple[str, int]:
        n = self.n_jobs
        if n is None or n == 1:
            return "serial", 1
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n == 0:
            raise ConfigError(f"n_jobs must be None, a positive integer or -1 (every core), "
                              f"got {n!r}")
        return "processes", 0 if n < 0 else int(n)

    # ------------------------------------------------------------------ input
    def _series(self, X, where: str):
        """``X`` → (float array [n, C, T], mask or None) with aeon's layouts accepted."""
        if isinstance(X, (list, tuple)) and X and all(hasattr(s, "shape") or
                                                      isinstance(s, (list, tuple)) for s in X):
            arrays = [np.asarray(s) for s in X]
            if len({a.shape for a in arrays}) > 1:          # unequal lengths: pad and mask
                from kairo.tsc._data import from_arrays

                for i, a in enumerate(arrays):
                    if a.dtype.kind not in "iuf" or not np.isfinite(a).all():
                        raise ValueError(f"{where}: series {i} must be finite real numbers "
                                         f"(no NaN or inf)")
                data = from_arrays(arrays, np.zeros(len(arrays)), pad=True, where=where)
                return data.x, data.mask
        # float32 input stays float32 (the networks compute in it); anything else is converted
        x = check_array(X, allow_nd=True, dtype=[np.float64, np.float32],
                        ensure_all_finite=True, input_name="X")
        if x.ndim == 2:
            x = x[:, None, :]
        if x.ndim != 3:
            raise ValueError(f"{where}: X must be [n_cases, n_channels, n_timepoints] or "
                             f"[n_cases, n_timepoints], got {x.ndim} dimensions "
                             f"(shape {x.shape})")
        return x, None

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Train on series ``X`` with labels ``y`` (any hashable labels; at least two
        classes). Returns self."""
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             f"is None")
        x, mask = self._series(X, "fit")
        y = np.asarray(y)
        check_classification_targets(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = column_or_1d(y, warn=True)
        if y.ndim != 1 or len(y) != len(x):
            raise ValueError(f"fit: y must hold one label per series ({len(x)}), got shape "
                             f"{y.shape}")
        classes, y_idx = np.unique(y, return_inverse=True)
        if len(classes) < 2:
            raise ValueError(f"fit: y holds one class ({classes[0]!r}); a classifier needs at "
                             f"least two classes")
        data = _tsdata(x, y_idx, mask, classes)
        self._fit_data(data)
        self.classes_ = classes
        self.n_classes_ = len(classes)
        self.n_channels_, self.n_timepoints_ = data.n_channels, data.n_steps
        # scikit-learn's name for a 2D X's columns: the series' length (× channels for 3D)
        self.n_features_in_ = data.n_channels * data.n_steps
        self.recipe_ = _recipe_of(self.model_.fit_meta)
        return self

    def _fit_data(self, data, checkpoint=None, progress_bar=None, executor=None,
                  workers=None) -> dict:
        """Train on a TSData (kairo tsc train calls this with its results folder's
        checkpoint and its --executor/--workers); sets ``model_`` and ``seed_`` and returns the
        trainer's result."""
        from kairo.tsc._train import fit, fit_ensemble

        if isinstance(self.ensemble, bool) or not isinstance(self.ensemble, numbers.Integral) \
                or self.ensemble < 1:
            raise ConfigError(f"ensemble must be an integer ≥ 1, got {self.ensemble!r}")
        seed = self._seed()
        model_cfg, train_cfg = self.configs(seed)
        bar = bool(self.verbose) if progress_bar is None else progress_bar
        if self.ensemble == 1:
            res = fit(model_cfg, train_cfg, data, checkpoint=checkpoint, progress_bar=bar)
        else:
            if executor is None:
                executor, workers = self._workers()
            res = fit_ensemble(model_cfg, train_cfg, data, int(self.ensemble),
                               workers=workers, executor=executor, checkpoint=checkpoint,
                               progress_bar=bar)
        self.model_ = res["model"]
        self.seed_ = seed
        # per epoch; an ensemble's: one list per member
        self.history_ = (res["history"] if "history" in res
                         else [m["history"] for m in res["members"]])
        return res

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities [n_cases, n_classes], columns in ``classes_`` order."""
        from kairo.tsc._inference import length_limit

        check_is_fitted(self, "model_")
        x, mask = self._series(X, "predict")
        if x.shape[1] != self.n_channels_:
            raise ValueError(f"predict: X has {x.shape[1]} channels, the classifier was "
                             f"fitted on {self.n_channels_}")
        if mask is None and x.shape[2] != self.n_timepoints_:
            # as aeon: series of the fitted length; unequal-length series come as a list
            raise ValueError(f"X has {x.shape[1] * x.shape[2]} features, but "
                             f"{type(self).__name__} is expecting {self.n_features_in_} "
                             f"features as input: series of {self.n_timepoints_} steps × "
                             f"{self.n_channels_} channels as at fit, got {x.shape[2]} steps "
                             f"(pass series of unequal length as a list)")
        if mask is not None and x.shape[2] < self.n_timepoints_:
            pad = self.n_timepoints_ - x.shape[2]
            x = np.pad(x, ((0, 0), (0, 0), (0, pad)))
            mask = np.pad(mask, ((0, 0), (0, pad)))
        limit = length_limit(self.model_)
        if mask is not None and limit is not None and x.shape[2] > limit:
            # unequal lengths: longer than at fit only where the model reads any length
            raise ValueError(f"predict: the longest series has {x.shape[2]} steps, more "
                             f"than the {limit} this classifier's positions cover (the "
                             f"longest at fit; rotary positions read any length)")
        try:
            proba = self._proba(x, mask)
        except DataError as exc:
            raise ValueError(str(exc)) from None
        return proba.astype(np.float64)

    def _proba(self, x, mask=None) -> np.ndarray:
        """float32 probabilities of series ``x`` [n, C, T] (mask [n, T] or None) of any
        length the model takes: the door ``kairo tsc evaluate`` and ``predict`` use, which warn
        about a length other than the fitted one where ``predict_proba`` refuses it, as aeon
        does. DataError names what the model cannot take."""
        from kairo.tsc._inference import predict

        check_is_fitted(self, "model_")
        return predict(self.model_, x, mask)[1]

    def predict(self, X) -> np.ndarray:
        """The most probable class of each series, as a label of ``y``."""
        proba = self.predict_proba(X)
        return self.classes_[proba.argmax(axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy on ``(X, y)``; ValueError when ``y`` holds labels unseen at fit."""
        check_is_fitted(self, "model_")
        unseen = np.setdiff1d(np.unique(np.asarray(y)), self.classes_)
        if unseen.size:
            raise ValueError(f"score: y holds labels {unseen.tolist()[:10]} that the "
                             f"classifier was not fitted on (classes_: "
                             f"{self.classes_.tolist()})")
        return super().score(X, y, sample_weight=sample_weight)

    # ------------------------------------------------------------------ files
    def save(self, path) -> None:
        """Write the fitted estimator to one model file (written atomically), which
        :func:`load_estimator`, ``kairo tsc evaluate`` and ``kairo tsc predict`` read."""
        import json

        from kairo.tsc._inference import save_classifier

        check_is_fitted(self, "model_")
        params = self.get_params(deep=False)
        params["random_state"] = self.seed_
        try:
            json.dumps(params)
            labels = self.classes_.tolist()
            json.dumps(labels)
        except (TypeError, ValueError) as exc:
            raise KairoError(f"save: parameters and class labels must be JSON values "
                             f"({exc})") from None
        model_cfg, _ = self.configs(self.seed_)
        save_classifier(path, self.model_, model_cfg, {
            "estimator": {"class": type(self).__name__, "params": params, "labels": labels,
                          "labels_dtype": self.classes_.dtype.str,
                          "n_features_in": int(self.n_features_in_)}})

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.three_d_array = True
        tags.non_deterministic = False
        return tags


def _tsdata(x, y_idx, mask, classes):
    """The TSData the trainer takes (from_arrays: float32, its range and finiteness checked),
    classes named by their labels (by index where two labels print alike)."""
    from kairo.tsc._data import _label_str, from_arrays

    names = [_label_str(c) for c in classes.tolist()]
    if len(set(names)) != len(names):
        names = [str(i) for i in range(len(classes))]
    return from_arrays(x, np.asarray(names, dtype=object)[y_idx], mask, classes=names,
                       name="X", where="fit: X")


def _recipe_of(meta: dict) -> dict:
    keys = ("znorm", "sam", "mixup", "cutmix", "time_warp", "smoothness", "head_norm",
            "weight_init", "stem_blocks", "stem_dilations", "stem_pool")
    return {k: meta[k] for k in keys if k in meta}


class TransformerClassifier(_SeriesClassifier):
    """kairo's default time-series classifier: Transformers on convolutional tokens with the
    recipe :func:`~kairo.tsc.resolve_recipe` decides from the training series, an
    ensemble of ``ensemble`` models averaged (``kairo tsc train``'s defaults).

    Parameters
    ----------
    d_model, n_heads, n_kv_heads, blocks, pool, tokens, max_tokens, positional, dropout
        The architecture (ModelConfig's fields of those names).
    steps, epochs, batch, lr, weight_decay, val_fraction
        The training budget and optimizer (TrainConfig's fields).
    znorm, sam, mixup, cutmix, time_warp
        The recipe's choices; "auto" lets the training series decide.
    ensemble : int
        Models trained with seeds seed … seed + ensemble − 1, probabilities averaged.
    options : dict, optional
        Any other ModelConfig/TrainConfig field, e.g. ``{"label_smoothing": 0.1}``.
    device : "cpu", "cuda" or "auto"
    n_jobs : int, optional
        Members trained at once (None or 1: one after another; -1: one per core).
    random_state : int, RandomState or None
        The first member's seed (an int trains what ``kairo tsc train --seed`` trains).
    verbose : bool
        Show a progress bar.

    Attributes
    ----------
    classes_, n_classes_, n_channels_, n_timepoints_, n_features_in_, model_ (the torch
    module), recipe_ (what "auto" chose), seed_, history_.
    """

    _encoder = "transformer"

    def __init__(self, d_model=_MODEL.d_model, n_heads=_MODEL.n_heads,
                 n_kv_heads=_MODEL.n_kv_heads, blocks=_MODEL.blocks, pool=_MODEL.pool,
                 tokens=_MODEL.tokens, max_tokens=_MODEL.max_tokens,
                 positional=_MODEL.positional, dropout=_MODEL.dropout, steps=_TRAIN.steps,
                 epochs=_TRAIN.epochs, batch=_TRAIN.batch, lr=_TRAIN.lr,
                 weight_decay=_TRAIN.weight_decay, val_fraction=_TRAIN.val_fraction,
                 znorm=_TRAIN.znorm, sam=_TRAIN.sam, mixup=_TRAIN.mixup, cutmix=_TRAIN.cutmix,
                 time_warp=_TRAIN.time_warp, ensemble=2, options=None, device=_TRAIN.device,
                 n_jobs=None, random_state=None, verbose=False):
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.blocks = blocks
        self.pool = pool
        self.tokens = tokens
        self.max_tokens = max_tokens
        self.positional = positional
        self.dropout = dropout
        self.steps = steps
        self.epochs = epochs
        self.batch = batch
        self.lr = lr
        self.weight_decay = weight_decay
        self.val_fraction = val_fraction
        self.znorm = znorm
        self.sam = sam
        self.mixup = mixup
        self.cutmix = cutmix
        self.time_warp = time_warp
        self.ensemble = ensemble
        self.options = options
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose


class ResNetClassifier(_SeriesClassifier):
    """The residual 1-D CNN of Wang et al. (2017) as Fawaz et al. (2019) ran it (three blocks
    of 64, 128, 128 channels, kernels 8, 5, 3, global mean pooling; Keras's Glorot
    initialisation and no head norm), trained by kairo's trainer.

    Parameters as :class:`TransformerClassifier` (``d_model`` is the first block's width);
    ``schedule`` "plateau" with ``epochs=1500`` is the published protocol, the default the
    step budget of ``kairo tsc train``.
    """

    _encoder = "resnet"

    def __init__(self, d_model=_MODEL.d_model, blocks=3, kernel_sizes=_MODEL.kernel_sizes,
                 pool=_MODEL.pool, steps=_TRAIN.steps, epochs=_TRAIN.epochs,
                 batch=_TRAIN.batch, lr=_TRAIN.lr, weight_decay=_TRAIN.weight_decay,
                 schedule=_TRAIN.schedule, val_fraction=_TRAIN.val_fraction,
                 znorm=_TRAIN.znorm, ensemble=1, options=None, device=_TRAIN.device,
                 n_jobs=None, random_state=None, verbose=False):
        self.d_model = d_model
        self.blocks = blocks
        self.kernel_sizes = kernel_sizes
        self.pool = pool
        self.steps = steps
        self.epochs = epochs
        self.batch = batch
        self.lr = lr
        self.weight_decay = weight_decay
        self.schedule = schedule
        self.val_fraction = val_fraction
        self.znorm = znorm
        self.ensemble = ensemble
        self.options = options
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose


_CLASSES = {c.__name__: c for c in (TransformerClassifier, ResNetClassifier)}


def estimator_for(cfg) -> _SeriesClassifier:
    """The estimator a flat config (``kairo tsc train``'s) describes: every ModelConfig and
    TrainConfig field it holds, as a parameter or in ``options``; its seed as
    ``random_state``."""
    cls = ResNetClassifier if cfg.encoder == "resnet" else TransformerClassifier
    names = set(cls().get_params()) - set(_OWN)
    fields = {f: getattr(cfg, f) for f in (_MODEL_FIELDS | _TRAIN_FIELDS) - {"encoder", "seed"}
              if hasattr(cfg, f)}
    return cls(**{k: v for k, v in fields.items() if k in names},
               options={k: v for k, v in fields.items() if k not in names},
               ensemble=getattr(cfg, "ensemble", 1), random_state=cfg.seed)


def load_estimator(path) -> _SeriesClassifier:
    """A fitted estimator from a model file written by ``save`` or by ``kairo tsc train``
    (whose string labels become ``classes_``)."""
    from kairo.tsc._inference import load_classifier

    path = Path(path)
    model, meta = load_classifier(path)
    est_meta = meta.get("estimator")
    cfg = meta["model_config"]
    if est_meta is None:                      # a kairo tsc train model: its configs
        cls = ResNetClassifier if cfg.get("encoder") == "resnet" else TransformerClassifier
        train = meta.get("train_config", {})
        names = set(cls().get_params()) - set(_OWN)
        params = {k: v for k, v in {**train, **cfg}.items() if k in names}
        options = {k: v for k, v in {**train, **cfg}.items()
                   if k in (_MODEL_FIELDS | _TRAIN_FIELDS) - names - {"encoder", "seed"}}
        members = getattr(model, "members", [model])
        est = cls(**params, ensemble=len(members), options=options,
                  random_state=train.get("seed", 0))
        labels = np.asarray(meta["classes"])
        n_features = meta.get("n_steps", meta.get("max_len"))
    else:
        cls = _CLASSES.get(est_meta.get("class"))
        if cls is None:
            raise DataError(f"model file {path}: unknown estimator class "
                            f"{est_meta.get('class')!r}; expected one of {sorted(_CLASSES)}")
        est = cls(**est_meta["params"])
        labels = np.asarray(est_meta["labels"], dtype=np.dtype(est_meta["labels_dtype"]))
        n_features = est_meta["n_features_in"]
    est.model_, est.classes_, est.n_classes_ = model, labels, len(labels)
    est.n_channels_, est.n_timepoints_ = int(meta["n_channels"]), int(meta["max_len"])
    est.n_features_in_ = int(n_features)
    est.seed_ = int(est.random_state) if est.random_state is not None else 0
    est.recipe_ = _recipe_of(meta)
    est.history_ = []
    return est
