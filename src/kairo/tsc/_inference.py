"""Saved classifiers and inference: the model file (weights, architecture, what "auto"
resolved to, the run's metadata) and the predictions of a trained model, scaled as it was
trained."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kairo._checkpoint import load_checkpoint, save_checkpoint, settings_diff
from kairo._errors import ConfigError, DataError, KairoError
from kairo.tsc._data import TSData, _check_finite, _check_float32_range
from kairo.tsc._train import (_MODEL_FORMAT, _build, _cpu_state, _model_config,
                                    scale_input)

__all__ = ["save_classifier", "load_classifier", "length_limit", "check_max_len", "predict",
           "labels_as", "evaluate"]


# ---------------------------------------------------------------------------- saved models
def save_classifier(path, model: nn.Module, model_cfg, meta: dict | None = None) -> None:
    """Save weights, architecture and ``meta`` (JSON-like: classes, znorm, …) atomically; a
    TSEnsemble is saved as one file (its members' weights, its arch with the member count).

    ``meta`` is merged over ``model.fit_meta`` (set by `fit`)."""
    path = Path(path)
    meta = {**getattr(model, "fit_meta", {}), **(meta or {})}
    try:
        json.dumps(meta)
    except (TypeError, ValueError) as exc:
        raise KairoError(f"meta must hold only JSON values (str, numbers, bools, lists, "
                         f"dicts): {exc}") from None
    cfg = dataclasses.asdict(model_cfg)
    arch = dict(model.arch)
    wrong = {k: (v, arch[k]) for k, v in cfg.items() if k in arch and arch[k] != v}
    if wrong:
        raise KairoError(f"model_cfg does not describe this model (config vs model: {wrong})")
    # what "auto" resolved to is saved too: the file rebuilds this model even if an
    # encoder's defaults change later
    save_checkpoint(path, {"version": 1, "arch": arch, "config": cfg,
                           "resolved": dict(model.resolved), "meta": meta,
                           "model": _cpu_state(model)}, kind=_MODEL_FORMAT)


def _ensemble(members):
    from kairo.tsc._model import TSEnsemble

    return TSEnsemble(members)


def load_classifier(path, expect_arch: dict | None = None) -> tuple[nn.Module, dict]:
    """(model in eval mode, meta) from `save_classifier`'s file, read with
    ``weights_only=True``: a TSClassifier, or a TSEnsemble where the saved ``arch`` counts
    members (``"ensemble"``). ``expect_arch`` (e.g. another model's ``arch``) must match the
    saved one; differing fields are named."""
    path = Path(path)
    state = load_checkpoint(path, kind=_MODEL_FORMAT, what="model file")
    try:
        arch, cfg_fields, meta = dict(state["arch"]), dict(state["config"]), dict(state["meta"])
        resolved, weights = dict(state["resolved"]), state["model"]
        pinned = {"head_norm": "true" if resolved["head_norm"] else "false",
                  "weight_init": resolved["weight_init"]}
        if "stem_blocks" in resolved:
            pinned["stem_blocks"] = int(resolved["stem_blocks"])
        if "stem_dilations" in resolved:
            pinned["stem_dilation"] = ",".join(str(int(q)) for q in resolved["stem_dilations"])
    except (KeyError, TypeError, ValueError):
        raise DataError(f"model file {path}: incomplete (needs arch, config, resolved, meta "
                        f"and model)") from None
    if expect_arch is not None:
        diff = settings_diff(arch, dict(expect_arch))
        if diff:
            raise DataError(f"model file {path} was saved for a different architecture "
                            f"(saved vs expected: {diff})")
    n = arch.get("ensemble")            # a TSEnsemble of n members; absent: one classifier
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise DataError(f"model file {path}: its ensemble size must be an integer ≥ 1, got "
                        f"{n!r}")
    try:
        members = [_build(_model_config({**cfg_fields, **pinned}), arch["n_channels"],
                          arch["n_classes"], arch["max_len"]) for _ in range(n or 1)]
        model = members[0] if n is None else _ensemble(members)
    except (KeyError, TypeError, ConfigError) as exc:
        raise DataError(f"model file {path}: its architecture cannot be rebuilt by this "
                        f"version of kairo ({exc})") from None
    diff = settings_diff({**arch, **{k: v for k, v in pinned.items() if k in arch}}, model.arch)
    # what "auto" built and no config field pins (the stem's pooling) must come out the same
    rebuilt = members[0].resolved
    diff = diff or settings_diff({k: v for k, v in resolved.items() if k in rebuilt},
                                 {k: rebuilt[k] for k in resolved if k in rebuilt})
    if diff:
        raise DataError(f"model file {path}: the rebuilt model differs from the saved "
                        f"architecture (saved vs rebuilt: {diff})")
    try:
        model.load_state_dict(weights)
    except (RuntimeError, TypeError, AttributeError) as exc:
        raise DataError(f"model file {path}: weights do not fit the architecture "
                        f"({str(exc)[:300]})") from None
    model.eval()
    model.fit_meta = meta
    if n is not None:           # each member as `fit` left it: the shared meta, its own fields
        shared = {k: v for k, v in meta.items() if k != "members"}
        for m, own in zip(model.members, meta.get("members", [])):
            m.fit_meta = {**shared, **own}
            if "train_config" in shared and own.get("seed") is not None:
                m.fit_meta["train_config"] = {**shared["train_config"], "seed": own["seed"]}
    return model, {**meta, "model_config": cfg_fields}


# ---------------------------------------------------------------------------- inference
def length_limit(model: nn.Module) -> int | None:
    """The longest series ``model`` reads: a Transformer's ``max_len`` where its positions are
    a table (sinusoidal, learned); None (any length) for rotary or no positions and the
    ResNet."""
    enc = getattr(model, "encoder", None)
    if enc is None and hasattr(model, "members"):          # a TSEnsemble: one architecture
        enc = getattr(model.members[0], "encoder", None)
    return getattr(enc, "length_limit", None)


def check_max_len(model: nn.Module, n_steps: int, where: str) -> None:
    """DataError when series are longer than the model reads (:func:`length_limit`). One
    wording for every command."""
    t = length_limit(model)
    if t is not None and n_steps > t:
        raise DataError(f"{where}: series have {n_steps} steps, more than the model's "
                        f"max_len {t}; crop them or train on longer series")


def predict(model: nn.Module, x, mask=None, batch: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Class indices and probabilities for NumPy series.

    ``x`` [n, C, T] (or [n, T] for one channel), T ≤ :func:`length_limit` where the model has
    one (a Transformer's table of positions); ``mask`` bool
    [n, T] or None. Applies the input scaling the model was trained with
    (``model.fit_meta["znorm"]``, see `scale_input`). Returns (pred int64 [n], proba float32
    [n, K]).
    """
    x = np.asarray(x)
    if x.dtype == object or not (np.issubdtype(x.dtype, np.number) and
                                 not np.issubdtype(x.dtype, np.complexfloating)):
        raise DataError(f"predict: x must be a real numeric array, got dtype {x.dtype}")
    if x.ndim == 2:
        x = x[:, None, :]
    if x.ndim != 3 or x.shape[0] == 0 or x.shape[2] == 0:
        raise DataError(f"predict: x must be [n_series, n_channels, n_steps] (or [n_series, "
                        f"n_steps] for one channel), got shape {x.shape}")
    c = getattr(model, "n_channels", x.shape[1])
    if x.shape[1] != c:
        raise DataError(f"predict: x has {x.shape[1]} channels, the model was trained on {c}")
    check_max_len(model, x.shape[2], "predict")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ConfigError(f"predict: batch must be an integer ≥ 1, got {batch!r}")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != np.bool_ or mask.shape != (x.shape[0], x.shape[2]):
            raise DataError(f"predict: mask must be a bool array of shape "
                            f"{(x.shape[0], x.shape[2])}, got {mask.dtype} {mask.shape}")
        if not mask.any(axis=1).all():
            raise DataError("predict: some series have no valid step in mask")
    _check_float32_range(x, mask, "predict")
    with np.errstate(over="ignore"):                  # beyond float32 now only at padding
        x = x.astype(np.float32)
    _check_finite(x, mask, "predict")
    if mask is not None:
        x = np.where(mask[:, None, :], x, np.float32(0))
    x = scale_input(x, mask, getattr(model, "fit_meta", {}))
    device = next(model.parameters()).device
    was = model.training
    model.eval()
    out = []
    try:
        with torch.no_grad():
            for s in range(0, x.shape[0], batch):
                xb = torch.from_numpy(x[s:s + batch]).to(device)
                mb = None if mask is None else torch.from_numpy(mask[s:s + batch]).to(device)
                out.append(torch.softmax(model(xb, mb).float(), dim=1).cpu().numpy())
    finally:
        model.train(was)
    proba = np.concatenate(out).astype(np.float32)                              # [n, K]
    return proba.argmax(1).astype(np.int64), proba


def labels_as(data: TSData, names) -> np.ndarray:
    """``data``'s labels as indices into ``names`` (a model's classes, in its output order),
    matched by class name; a class of ``data`` missing from ``names`` is an error."""
    names = list(names)
    if list(data.classes) == names:
        return data.y
    missing = sorted(set(data.classes) - set(names))
    if missing:
        raise DataError(f"data {data.name!r} has classes {missing} the model was not "
                        f"trained on (model classes: {names})")
    return np.array([names.index(c) for c in data.classes])[data.y]


def evaluate(model: nn.Module, data: TSData, batch: int = 256) -> dict:
    """`classification_report` of the model on ``data`` plus ``log_loss``, ``pred`` and
    ``proba``. Labels are matched to the model's classes by name when they differ in order."""
    names = list(getattr(model, "fit_meta", {}).get("classes", data.classes))
    y = labels_as(data, names)
    _, proba = predict(model, data.x, data.mask, batch)
    return scores(y, proba, names)


def scores(y: np.ndarray, proba: np.ndarray, names) -> dict:
    """`classification_report` of class probabilities ``proba`` [n, K] (columns in ``names``
    order) against class indices ``y``, plus ``log_loss`` and, per series, ``y``, ``pred`` and
    ``proba``."""
    from kairo.tsc._metrics import classification_report

    names = list(names)
    pred = proba.argmax(1).astype(np.int64)
    if proba.shape[1] != len(names):
        raise DataError(f"evaluate: the model outputs {proba.shape[1]} classes but names "
                        f"{len(names)}")
    report = classification_report(y, pred, names)
    p_true = proba[np.arange(len(y)), y]
    report["log_loss"] = float(-np.log(np.clip(p_true, 1e-12, None)).mean())
    report["y"], report["pred"], report["proba"] = np.asarray(y), pred, proba
    return report
