"""What a ``kairo tsc`` command reads: a shipped set or the user's files, the files to
checksum in the run record, and the set a trained model is scored on (the one it was
trained on, unless told otherwise). Torch-free."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np

from kairo._errors import ConfigError, DataError
from kairo.tsc._config import EvaluateConfig

__all__ = ["load_data", "load_file", "inputs", "model_dataset"]


def load_data(cfg, split: str):
    """The ``split`` ("train"/"test") of the dataset or the user's files named by ``cfg``."""
    from kairo.tsc import _data

    path = cfg.train_file if split == "train" else cfg.test_file
    if not path:
        return _data.load_dataset(cfg.dataset, split, mnist1d_length=cfg.mnist1d_length)
    return load_file(path, pad=cfg.pad)


def load_file(path, *, pad: bool = False, labelled: bool = True):
    """A user's file: ``.ts`` (aeon format), ``.csv`` (one series per row, label first) or
    ``.npz`` (arrays ``x`` [N, C, T] or [N, T], ``y``, optional ``mask``). ``labelled=False``
    reads series to predict: a CSV row is all values (no label column), and labels in a
    ``.ts`` or ``.npz`` file are ignored (every series gets class index 0)."""
    from kairo.tsc import _data

    p = Path(path)
    if not p.is_file():
        raise DataError(f"data file {p} does not exist")
    suffix = p.suffix.lower()
    if suffix == ".ts":
        return _data.load_ts(p, pad=pad, labelled=labelled)
    if suffix == ".csv":
        return _data.load_csv(p, label_column=0 if labelled else None, pad=pad)
    if suffix in (".npz", ".npy"):
        try:
            arrays = np.load(p, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"data file {p}: not a readable NumPy file ({exc})") from None
        if suffix == ".npy":
            x, y, mask = arrays, None, None
        else:
            if "x" not in arrays:
                raise DataError(f"data file {p}: expected an array named 'x' (and 'y' with "
                                f"labels), found {', '.join(arrays.files) or 'nothing'}")
            x, y = arrays["x"], arrays["y"] if "y" in arrays and labelled else None
            mask = arrays["mask"] if "mask" in arrays else None
        if y is None:
            if labelled:
                raise DataError(f"data file {p}: needs labels in an array named 'y'" + (
                    "; a .npy file holds one array (the series), so use an .npz with x and y"
                    if suffix == ".npy" else ""))
            y = np.zeros(len(x), dtype=np.int64)
        return _data.from_arrays(x, y, mask, pad=pad, name=p.stem, where=str(p))
    raise DataError(f"data file {p}: unknown extension {suffix!r}; use .ts, .csv, .npz or .npy")


def inputs(cfg) -> dict[str, Path]:
    """The files a tsc command reads, by label, for the run record's checksums: the user's
    files, or else the shipped sets' ``.ts`` files (MNIST-1D is generated from the recorded
    seed, so it has none), and the model or runs table a command loads. ``evaluate`` and
    ``maps`` without a dataset read the set the model was trained on."""
    from kairo.tsc import _data

    if isinstance(cfg, EvaluateConfig):
        cfg = model_dataset(cfg)
    files = {key: Path(getattr(cfg, key))
             for key in ("train_file", "test_file", "model", "reuse", "reference", "input")
             if getattr(cfg, key, "")}
    if getattr(cfg, "train_file", "") or getattr(cfg, "test_file", ""):
        sets = []                                        # the user's files replace --dataset
    elif getattr(cfg, "datasets", ()):
        sets = [(name, ("train", "test")) for name in cfg.datasets]
    elif getattr(cfg, "dataset", ""):
        # evaluate and maps (they load a model) read one split; train reads both
        sets = [(cfg.dataset, (cfg.split,) if getattr(cfg, "model", "") else ("train", "test"))]
    else:
        sets = []
    for name, splits in sets:
        canon = _data.canonical_name(name)
        paths = _data.dataset_files(canon)
        for split in splits if paths else ():
            files[f"{canon}_{split}"] = paths[split]
    return {k: v for k, v in files.items() if v.is_file()}


def _length_warning(data, meta: dict, hint: str = "") -> str:
    """Series of another length than the model was trained on are allowed (the pooling heads
    take any length) but said on stderr: an off-by-one is more often a label column read as a
    value, or the wrong file, than a real change of length. Returns the note ("" if none)."""
    trained = meta.get("n_steps", meta.get("max_len"))
    if data.mask is not None or not trained or data.n_steps == trained:
        return ""
    note = (f"these series have {data.n_steps} steps, the model was trained on {trained}-step "
            f"series{hint}")
    warnings.warn(note, stacklevel=2)
    return note


def model_dataset(cfg, meta: dict | None = None):
    """``cfg`` with an empty ``dataset`` filled in from the model (``evaluate`` / ``maps``
    without --dataset or --test-file score the set the model was trained on; an MNIST-1D
    model at its own length). A model trained on the user's files names no shipped set, so
    the user gives --test-file or --dataset. ``meta``: the loaded model's, if at hand. The
    config keeps "" (a re-run resolves it again); the run records the set in run.json."""
    if cfg.dataset or cfg.test_file or not cfg.model:
        return cfg
    from kairo.tsc import _data, _inference

    if meta is None:
        _, meta = _inference.load_classifier(cfg.model)
    m = meta.get("meta", meta)
    trained = str(m.get("dataset", ""))
    if m.get("resample"):
        # the archive's test split holds series that resample's training split was fitted on
        raise ConfigError(f"model {cfg.model} was trained on resample {m['resample']} of "
                          f"{trained}, whose training series the archive's test split shares: "
                          f"give --test-file (or --dataset to score an archive split "
                          f"anyway)")
    try:
        canon = _data.canonical_name(trained)
    except DataError:
        raise ConfigError(f"model {cfg.model} was trained on {trained or 'unnamed data'}, not "
                          f"a shipped set: give --test-file (or --dataset)") from None
    # the model's own MNIST-1D length, unless --mnist1d-length chose one
    default_len = type(cfg).__dataclass_fields__["mnist1d_length"].default
    extra = ({"mnist1d_length": int(m["n_steps"])} if canon == "MNIST1D" and m.get("n_steps")
             and cfg.mnist1d_length == default_len else {})
    return dataclasses.replace(cfg, dataset=canon, **extra)


def _dataset_warning(cfg, meta: dict) -> None:
    """--dataset naming another set than the model's: said on stderr (scoring a model on data
    of another task is allowed, and more often a wrong --model)."""
    if cfg.test_file or not cfg.dataset:
        return
    from kairo.tsc import _data

    trained = str(meta.get("meta", meta).get("dataset", ""))
    scored = _data.canonical_name(cfg.dataset)
    if trained and trained != scored:
        warnings.warn(f"the model was trained on {trained}; scoring it on {scored}",
                      stacklevel=2)


def _scored_data(cfg):
    """The series ``evaluate`` / ``maps`` score: ``--test-file`` if given, else the
    ``--split`` of the dataset (a split of a file would be mislabelled: the config refuses
    it)."""
    from kairo.tsc import load_dataset

    if cfg.test_file:
        return load_file(cfg.test_file, pad=cfg.pad)
    return load_dataset(cfg.dataset, cfg.split, mnist1d_length=cfg.mnist1d_length)


def _resolve_dataset(cfg, meta, rd):
    """``cfg`` with the set the model was trained on where it names none, recorded in
    run.json (config.yaml keeps "", so ``--config`` of this run resolves it again)."""
    scored = model_dataset(cfg, meta)
    if scored.dataset != cfg.dataset:
        rd.resolve("dataset", scored.dataset)
    if scored.mnist1d_length != cfg.mnist1d_length:
        rd.resolve("mnist1d_length", scored.mnist1d_length)
    return scored


def _model_classes(meta: dict, data) -> list[str]:
    """The trained model's class names; the data may hold a subset of them, no others."""
    names = [str(c) for c in meta.get("meta", meta).get("classes", data.classes)]
    extra = sorted(set(map(str, data.classes)) - set(names))
    if extra:
        raise DataError(f"the data has classes {extra} the model was not trained on (model "
                        f"classes: {names})")
    return names
