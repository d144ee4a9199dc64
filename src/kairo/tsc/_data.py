"""Time-series classification data: the UCR/UEA sets shipped inside the aeon wheel (read
offline), MNIST-1D, and the user's own arrays, CSV and ``.ts`` files, all as one `TSData`.

Layout everywhere: ``x`` float32 [n_series, n_channels, n_steps]; series shorter than
``n_steps`` are padded at the end with zeros and flagged in ``mask`` [n_series, n_steps]
(True = a real step). Labels are renumbered 0…k−1 in the order of ``classes``.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from kairo._errors import ConfigError, DataError, DataNotFoundError
from kairo.tsc._archive import _read_ts, archive_sets, read_split

__all__ = ["TSData", "list_datasets", "load_dataset", "from_arrays", "load_csv", "load_ts",
           "znormalize", "channel_stats", "standardize", "stratified_split", "smoothness",
           "STD_FLOOR"]

STD_FLOOR = 1e-8          # znormalize: a constant series becomes zeros, not NaN
MNIST1D = "MNIST1D"


# ---------------------------------------------------------------------------- the container
@dataclass(frozen=True, eq=False)
class TSData:
    """A labelled set of (possibly padded) multichannel series.

    Attributes
    ----------
    x : float32 array [n_series, n_channels, n_steps]
    y : int64 array [n_series], values in 0…len(classes)−1
    mask : bool array [n_series, n_steps] or None
        True marks a real step; None means every series has all ``n_steps`` steps.
    classes : tuple of str
        The original label of each class index.
    name : str
    """

    x: np.ndarray
    y: np.ndarray
    mask: np.ndarray | None
    classes: tuple
    name: str = "data"

    def __post_init__(self):
        x, y, mask = self.x, self.y, self.mask
        where = f"TSData {self.name!r}"
        if not isinstance(x, np.ndarray) or x.dtype != np.float32 or x.ndim != 3:
            raise DataError(f"{where}: x must be a float32 array [n_series, n_channels, "
                            f"n_steps], got {_describe(x)}")
        if not isinstance(y, np.ndarray) or y.dtype != np.int64 or y.shape != (x.shape[0],):
            raise DataError(f"{where}: y must be an int64 array of {x.shape[0]} labels (one per "
                            f"series), got {_describe(y)}")
        if x.shape[0] == 0 or x.shape[1] == 0 or x.shape[2] == 0:
            raise DataError(f"{where}: x holds no data (shape {x.shape})")
        if not isinstance(self.classes, tuple) or len(self.classes) < 1 or \
                not all(isinstance(c, str) for c in self.classes) or \
                len(set(self.classes)) != len(self.classes):
            raise DataError(f"{where}: classes must be a tuple of distinct strings, got "
                            f"{self.classes!r}")
        if y.min() < 0 or y.max() >= len(self.classes):
            raise DataError(f"{where}: labels must lie in 0…{len(self.classes) - 1} (one per "
                            f"class), got {y.min()}…{y.max()}")
        if mask is not None:
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or \
                    mask.shape != (x.shape[0], x.shape[2]):
                raise DataError(f"{where}: mask must be a bool array [{x.shape[0]}, "
                                f"{x.shape[2]}] (n_series, n_steps), got {_describe(mask)}")
            empty = np.flatnonzero(~mask.any(axis=1))
            if empty.size:
                raise DataError(f"{where}: series {_some(empty)} have no valid step in mask")
        _check_finite(x, mask, where)

    def __len__(self) -> int:
        return int(self.x.shape[0])

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.int64, np.ndarray]:
        """(x [C, T], label, mask [T]) of series ``i``, as a torch ``Dataset`` item (the mask
        is all True when the set has none)."""
        m = np.ones(self.n_steps, dtype=bool) if self.mask is None else self.mask[i]
        return self.x[i], self.y[i], m

    @property
    def n_channels(self) -> int:
        return int(self.x.shape[1])

    @property
    def n_steps(self) -> int:
        return int(self.x.shape[2])

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def lengths(self) -> np.ndarray:
        """Valid steps per series, int64 [n_series]."""
        if self.mask is None:
            return np.full(len(self), self.n_steps, dtype=np.int64)
        return self.mask.sum(axis=1).astype(np.int64)

    @property
    def one_length(self) -> bool:
        """Whether every series fills all ``n_steps`` (no padding anywhere)."""
        return self.mask is None or bool(np.all(self.mask))

    def subset(self, index) -> TSData:
        """The series at ``index`` (integer array or boolean mask), same classes."""
        m = None if self.mask is None else self.mask[index]
        return TSData(self.x[index], self.y[index], m, self.classes, self.name)


def _describe(a) -> str:
    if isinstance(a, np.ndarray):
        return f"{a.dtype} array of shape {a.shape}"
    return type(a).__name__


def _some(idx, limit: int = 8) -> str:
    """'3, 7, 9' or '3, 7, 9, … (12 in all)'."""
    idx = [int(i) for i in idx]
    head = ", ".join(str(i) for i in idx[:limit])
    return head if len(idx) <= limit else f"{head}, … ({len(idx)} in all)"


def _check_finite(x: np.ndarray, mask, where: str) -> None:
    """NaN/inf at valid steps → DataError naming how many and in which series."""
    bad_nan, bad_inf = np.isnan(x), np.isinf(x)
    if mask is not None:
        bad_nan &= mask[:, None, :]
        bad_inf &= mask[:, None, :]
    for bad, what in ((bad_nan, "NaN"), (bad_inf, "infinite")):
        n = int(bad.sum())
        if n:
            rows = np.flatnonzero(bad.any(axis=(1, 2)))
            raise DataError(f"{where}: x contains {n} {what} value{'s' * (n != 1)} in series "
                            f"{_some(rows)}; fill or drop them")


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _beyond_float32(x: np.ndarray) -> np.ndarray:
    """Finite values float32 cannot hold (the cast would make them ±inf), as a bool array."""
    if x.dtype.kind != "f" or x.dtype.itemsize <= 4:
        return np.zeros(x.shape, dtype=bool)          # float16/32 and integers all fit
    with np.errstate(invalid="ignore"):
        return np.isfinite(x) & (np.abs(x) > _FLOAT32_MAX)


def _check_float32_range(series, mask, where: str) -> None:
    """DataError for values beyond float32's range, so they are not reported as infinite
    after the cast. ``series`` [N, C, T] array or a list of [C, T_i] arrays."""
    if isinstance(series, np.ndarray):                # one vectorised pass
        big = _beyond_float32(series)
        if mask is not None:
            big &= mask[:, None, :]
        rows = np.flatnonzero(big.any(axis=(1, 2))).tolist() if big.any() else []
    else:
        big = [_beyond_float32(s) for s in series]
        rows = [i for i, b in enumerate(big) if b.any()]
    if rows:
        n = sum(int(big[i].sum()) for i in rows)
        first = series[rows[0]][big[rows[0]]][0]
        raise DataError(f"{where}: x contains {n} value{'s' * (n != 1)} beyond float32's range "
                        f"(|x| > {_FLOAT32_MAX:.3g}), e.g. {first:.3g}, in series "
                        f"{_some(rows)}; kairo computes in float32: rescale them")


# ---------------------------------------------------------------------------- building
def _label_order(labels) -> list[str]:
    """Sorted label strings; numeric labels in numeric order ('2' before '10')."""
    labels = sorted(set(labels))
    try:
        return sorted(labels, key=lambda s: (float(s), s))
    except ValueError:
        return labels


def _stack(series: list, where: str, pad: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """A list of [C, T_i] float64 arrays → x [N, C, T_max] float32 and a mask (or None)."""
    chans = {s.shape[0] for s in series}
    if len(chans) > 1:
        raise DataError(f"{where}: series have different numbers of channels {sorted(chans)}")
    lengths = np.array([s.shape[1] for s in series])
    if (lengths == 0).any():
        raise DataError(f"{where}: series {_some(np.flatnonzero(lengths == 0))} are empty")
    t = int(lengths.max())
    _check_float32_range(series, None, where)
    if (lengths == t).all():
        return np.stack(series).astype(np.float32), None
    if not pad:
        short = np.flatnonzero(lengths < t)
        raise DataError(f"{where}: series have different lengths ({lengths.min()} to {t} "
                        f"steps; shorter than {t}: series {_some(short)}, counted from 0); "
                        f"pass pad=True (--pad on the command line) to pad them at the "
                        f"end to {t} steps with a mask, or make them equal length yourself")
    x = np.zeros((len(series), chans.pop(), t), dtype=np.float32)
    for i, s in enumerate(series):
        x[i, :, :s.shape[1]] = s
    mask = np.arange(t)[None, :] < lengths[:, None]
    return x, mask


def _as_series(x, where: str) -> list | np.ndarray:
    """An array [N, T] / [N, C, T], or a list of [T] / [C, T] series."""
    if isinstance(x, np.ndarray) and x.dtype != object:
        if x.ndim not in (2, 3):
            raise DataError(f"{where}: x must have shape (n_series, n_steps) or (n_series, "
                            f"n_channels, n_steps), got shape {x.shape}")
        return x if x.ndim == 3 else x[:, None, :]
    if not isinstance(x, (list, tuple, np.ndarray)):
        raise DataError(f"{where}: x must be an array or a list of series, got "
                        f"{type(x).__name__}")
    out = []
    for i, s in enumerate(x):
        try:
            s = np.asarray(s, dtype=np.float64)
        except (TypeError, ValueError):
            raise DataError(f"{where}: series {i} is not numeric") from None
        if s.ndim not in (1, 2):
            raise DataError(f"{where}: series {i} must have shape (n_steps,) or (n_channels, "
                            f"n_steps), got shape {s.shape}")
        out.append(s[None, :] if s.ndim == 1 else s)
    return out


def from_arrays(x, y, mask=None, *, pad: bool = False, classes=None,
                name: str = "arrays", where: str | None = None) -> TSData:
    """Build a `TSData` from NumPy data.

    Parameters
    ----------
    x : array [n_series, n_steps] or [n_series, n_channels, n_steps], or a list of series
        each [n_steps] or [n_channels, n_steps] (lengths may differ when ``pad=True``).
    y : array-like [n_series]
        Labels of any type; they become strings and are numbered in sorted order (numeric
        labels numerically) unless ``classes`` fixes the order.
    mask : bool array [n_series, n_steps], optional
        For an array ``x`` already padded: True = a real step. Padded steps are zeroed.
    pad : bool, default False
        Pad a list of unequal-length series at the end and return a mask.
    classes : sequence of str, optional
        The class order (e.g. a training set's ``classes``); every label must be in it.
    where : str, optional
        What error messages call the data (e.g. the file it came from); default ``name``.
    """
    return _build(x, y, mask, pad=pad, classes=classes, name=name, where=where or name)


def _build(x, y, mask, *, pad: bool, classes, name: str, where: str) -> TSData:
    series = _as_series(x, where)
    if isinstance(series, np.ndarray):
        if not np.issubdtype(series.dtype, np.number) or np.issubdtype(series.dtype,
                                                                       np.complexfloating):
            raise DataError(f"{where}: x must be real numbers, got dtype {series.dtype}")
        if mask is not None:
            mask = np.asarray(mask)
            if mask.dtype != np.bool_ or mask.shape != (series.shape[0], series.shape[2]):
                raise DataError(f"{where}: mask must be a bool array of shape "
                                f"({series.shape[0]}, {series.shape[2]}) (n_series, n_steps), "
                                f"got {_describe(mask)}")
            mask = mask.copy()
        _check_float32_range(series, mask, where)
        with np.errstate(over="ignore"):              # beyond float32 now only at padding
            xs = series.astype(np.float32)            # always a copy, never the caller's array
        if mask is not None:
            xs = np.where(mask[:, None, :], xs, np.float32(0))
    else:
        if mask is not None:
            raise DataError(f"{where}: mask is for an array x; a list of series gets its mask "
                            f"from pad=True")
        if not series:
            raise DataError(f"{where}: x holds no series")
        xs, mask = _stack(series, where, pad)
    labels = np.asarray(y)
    if labels.ndim != 1 or labels.shape[0] != xs.shape[0]:
        raise DataError(f"{where}: {labels.size} labels (shape {labels.shape}) for "
                        f"{xs.shape[0]} series; give exactly one label per series")
    if labels.dtype.kind == "f" and not np.isfinite(labels).all():
        raise DataError(f"{where}: labels contain NaN or inf")
    labels = np.array([_label_str(v) for v in labels.tolist()], dtype=object)
    order = _label_order(labels) if classes is None else [str(c) for c in classes]
    lut = {c: i for i, c in enumerate(order)}
    unknown = sorted(set(labels) - set(lut))
    if unknown:
        raise DataError(f"{where}: labels {unknown[:10]} are not among the classes {order}")
    y_idx = np.array([lut[v] for v in labels], dtype=np.int64)
    try:
        return TSData(xs, y_idx, mask, tuple(order), name)
    except DataError as exc:                       # name the file, not the container
        raise DataError(str(exc).replace(f"TSData {name!r}", where, 1)) from None


def _label_str(v) -> str:
    # 1.0 and 1 are the same class when labels arrive as floats
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


# ---------------------------------------------------------------------------- aeon's sets
def _aeon_data_dir() -> Path:
    import aeon

    return Path(aeon.__file__).parent / "datasets" / "data"


def _is_classification(ts_file: Path) -> bool:
    """True when the .ts header declares class labels (``@classLabel true …``)."""
    with open(ts_file, encoding="utf-8", errors="replace") as f:
        for line in f:
            low = line.strip().lower()
            if low.startswith("@classlabel"):
                return low.split()[1:2] == ["true"]
            if low.startswith("@data"):
                return False
    return False


@lru_cache(maxsize=1)
def _shipped() -> dict[str, tuple[Path, Path]]:
    """Set name -> (train file, test file) of the sets the aeon wheel ships. A variable-length
    set's equal-length version (``<name>_eq``, the UCR archive's copy with each short series
    extended by low-amplitude noise to the longest length) sits in the same folder and is a set
    of its own: it is the data the published tables score."""
    root = _aeon_data_dir()
    found = {}
    if root.is_dir():
        for d in sorted(root.iterdir()):
            for name in (d.name, f"{d.name}_eq"):
                train, test = d / f"{name}_TRAIN.ts", d / f"{name}_TEST.ts"
                if train.is_file() and test.is_file() and _is_classification(train):
                    found[name] = (train, test)
    return found


def dataset_files(name: str) -> dict[str, Path]:
    """``{"train": path, "test": path}`` of a set by name: shipped in the aeon wheel, or in a
    folder of ``$KAIRO_TSC_ARCHIVE`` (kairo.tsc._archive); {} for MNIST-1D."""
    canon = canonical_name(name)
    pair = _shipped().get(canon) or archive_sets().get(canon)
    return {} if pair is None else dict(zip(("train", "test"), pair))


def list_datasets() -> list[str]:
    """Classification sets shipped inside the aeon wheel and those of ``$KAIRO_TSC_ARCHIVE``
    (kairo.tsc._archive), then ``"MNIST1D"``."""
    return sorted(set(_shipped()) | set(archive_sets()), key=str.lower) + [MNIST1D]


def _to_list(x) -> list:
    return [np.asarray(s, dtype=np.float64) for s in x]


def canonical_name(name: str) -> str:
    """The shipped set's own spelling of ``name`` (names are case-insensitive); DataError
    listing the available sets when there is none."""
    known = list_datasets()
    canon = {n.lower(): n for n in known}.get(str(name).lower())
    if canon is None:
        raise DataError(f"unknown dataset {name!r}; available offline: {', '.join(known)}")
    return canon


def load_dataset(name: str, split: str = "train", *, mnist1d_length: int = 40,
                 seed: int = 0) -> TSData:
    """A dataset by name, offline.

    UCR/UEA sets come from the ``.ts`` files inside the aeon wheel (no network), or from the
    folders of ``$KAIRO_TSC_ARCHIVE`` (your copy of the archive). Labels map to
    0…k−1 by the sorted union of the train and test labels, so both splits agree. Unequal-
    length sets (JapaneseVowels, PickupGestureWiimoteZ) are padded at the end, never
    truncated, to the longest series of either split, with a mask. Their equal-length
    versions shipped beside them load as ``"<name>_eq"`` (no mask).

    ``"MNIST1D"`` is generated (`make_mnist1d`): 4000 train / 1000 test series of
    ``mnist1d_length`` steps from ``seed``. Names are case-insensitive.
    """
    if split not in ("train", "test"):
        raise ConfigError(f"split must be 'train' or 'test', got {split!r}")
    canon = canonical_name(name)
    if canon == MNIST1D:
        from kairo.tsc._mnist1d import N_TEST, N_TRAIN, make_mnist1d

        x, y = make_mnist1d(N_TRAIN + N_TEST, mnist1d_length, seed)
        part = slice(0, N_TRAIN) if split == "train" else slice(N_TRAIN, None)
        return TSData(x[part], y[part], None, tuple(str(d) for d in range(10)), MNIST1D)
    parts = {s: read_split(p) for s, p in dataset_files(canon).items()}
    classes = _label_order(np.concatenate([parts["train"][1], parts["test"][1]]))
    x, y = parts[split]
    if isinstance(x, np.ndarray) and all(isinstance(p[0], np.ndarray) and
                                         p[0].shape[2] == x.shape[2] for p in parts.values()):
        return from_arrays(x, y, classes=classes, name=canon)
    # unequal lengths: pad to the longest series of both splits so the shapes agree
    t_max = max(s.shape[-1] for p in parts.values() for s in p[0])
    return pad_to(from_arrays(_to_list(x), y, pad=True, classes=classes, name=canon), t_max)


def pad_to(data: TSData, n_steps: int) -> TSData:
    """``data`` padded at the end with masked zeros to ``n_steps`` (≥ its own); unchanged if
    it has them already. Used to give two splits one length."""
    if n_steps < data.n_steps:
        raise DataError(f"pad_to: {data.name!r} has {data.n_steps} steps, more than {n_steps}")
    if n_steps == data.n_steps:
        return data
    xs = np.pad(data.x, ((0, 0), (0, 0), (0, n_steps - data.n_steps)))
    mask = data.lengths[:, None] > np.arange(n_steps)[None, :]
    return TSData(xs, data.y, mask, data.classes, data.name)


# ---------------------------------------------------------------------------- user files
def load_ts(path, *, pad: bool = False, classes=None, labelled: bool = True) -> TSData:
    """A classification ``.ts`` file (aeon's reader). Unequal lengths need ``pad=True``.
    ``labelled=False`` (series to predict) ignores the labels, which may then be absent: every
    series gets class index 0."""
    path = Path(path)
    x, y = _read_ts(path, labelled)
    if not isinstance(x, np.ndarray):
        x = _to_list(x)
    if not labelled:
        y = np.zeros(len(x), dtype=np.int64)
    return _build(x, y, None, pad=pad, classes=classes, name=path.stem, where=str(path))


def load_csv(path, label_column: int | str = 0, *, header: bool | None = None,
             delimiter: str = ",", pad: bool = False, classes=None) -> TSData:
    """Univariate series from a CSV file, one series per row.

    Parameters
    ----------
    label_column : int, str or None, default 0
        The column holding the label: a 0-based index (negative counts from the end) or a
        header name. None: no label column (series to predict); every cell is a value and
        every series gets class index 0.
    header : bool, optional
        Whether the first row names the columns; None guesses (a header is a first row whose
        value cells are all non-numeric).
    pad : bool, default False
        Rows may end early (trailing empty cells or shorter rows); pad them with a mask.
    """
    path = Path(path)
    if label_column is not None and (isinstance(label_column, bool)
                                     or not isinstance(label_column, (int, str))):
        raise ConfigError(f"label_column must be a column index, a header name or None, got "
                          f"{label_column!r}")
    if not path.is_file():
        raise DataNotFoundError(f"{path} does not exist")
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = [(i + 1, r) for i, r in enumerate(csv.reader(f, delimiter=delimiter))]
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: not a readable CSV text file ({exc})") from None
    rows = [(n, r) for n, r in rows if any(c.strip() for c in r)]
    if not rows:
        raise DataError(f"{path}: no rows")
    first = rows[0][1]
    if isinstance(label_column, str) or header:
        has_header = True if header is None else header
    elif header is None:
        skip = None if label_column is None else label_column % max(1, len(first))
        cells = [c for j, c in enumerate(first) if j != skip]
        has_header = bool(cells) and not any(_is_number(c) for c in cells)
    else:
        has_header = False
    names = [c.strip() for c in first] if has_header else None
    if has_header:
        rows = rows[1:]
    if isinstance(label_column, str):
        if names is None or label_column not in names:
            raise ConfigError(f"label_column {label_column!r} is not a column of {path} "
                              f"(header: {names if names else 'none'})")
        label_column = names.index(label_column)
    if not rows:
        raise DataError(f"{path}: a header but no data rows")
    labels, series, bad_rows, n_bad = [], [], [], 0
    for line, r in rows:
        if label_column is None:
            lab, col = "0", None
        else:
            try:
                lab = r[label_column]
            except IndexError:
                raise DataError(f"{path}: row {line} has {len(r)} columns, no label column "
                                f"{label_column}") from None
            col = label_column % len(r)
        values = [(j + 1, c.strip()) for j, c in enumerate(r) if j != col]
        while values and values[-1][1] == "":          # a short row padded with empty cells
            values.pop()
        out = np.empty(len(values))
        for k, (j, c) in enumerate(values):
            try:
                out[k] = float(c)
            except ValueError:
                what = "is empty" if c == "" else f"holds {c[:30]!r}"
                raise DataError(f"{path}: row {line}, column {j} {what}, not a number") \
                    from None
        if not lab.strip():
            raise DataError(f"{path}: row {line} has an empty label (column {col + 1})")
        if not len(out):
            raise DataError(f"{path}: row {line} holds no values")
        if not np.isfinite(out).all():
            bad_rows.append(line)
            n_bad += int((~np.isfinite(out)).sum())
        labels.append(lab.strip())
        series.append(out)
    if n_bad:
        raise DataError(f"{path}: x contains {n_bad} NaN or infinite value{'s' * (n_bad != 1)} "
                        f"in rows {_some(bad_rows)}; fill or drop them")
    return _build(series, labels, None, pad=pad, classes=classes, name=path.stem,
                  where=str(path))


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------- transforms
def znormalize(x: np.ndarray, mask: np.ndarray | None = None) -> np.ndarray:
    """Per series and channel: ``(x − mean) / max(std, STD_FLOOR)`` over the valid steps.

    ``x`` float [n_series, n_channels, n_steps]; ``mask`` bool [n_series, n_steps] or None.
    Returns a new float32 array; padded steps are 0. ``STD_FLOOR = 1e-8`` keeps a constant
    series finite (it becomes all zeros).
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise DataError(f"znormalize: x must be [n_series, n_channels, n_steps], got shape "
                        f"{x.shape}")
    if mask is None:
        mean = x.mean(axis=2, keepdims=True)
        std = x.std(axis=2, keepdims=True)
        return ((x - mean) / np.maximum(std, STD_FLOOR)).astype(np.float32)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (x.shape[0], x.shape[2]):
        raise DataError(f"znormalize: mask must have shape {(x.shape[0], x.shape[2])}, got "
                        f"{mask.shape}")
    w = mask[:, None, :]                                           # [N, 1, T]
    mean, std = _masked_mean_std(x, w, axis=2)
    out = np.where(w, (x - mean) / np.maximum(std, STD_FLOOR), 0.0)
    return out.astype(np.float32)


def smoothness(x: np.ndarray, mask: np.ndarray | None = None) -> float:
    """The median, over series and channels, of the lag-1 autocorrelation of each series:
    the mean of ``(x_t − m)(x_{t+1} − m)`` over neighbouring real steps divided by the
    series' variance (m and the variance over its real steps).

    Near 1 for smooth curves sampled finely (outlines, trajectories), near 0 for noise,
    negative for series that flip sign from step to step. ``x`` float [n_series, n_channels,
    n_steps]; ``mask`` bool [n_series, n_steps] or None. Constant series and series of fewer
    than three real steps are left out; NaN when none is left.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise DataError(f"smoothness: x must be [n_series, n_channels, n_steps], got shape "
                        f"{x.shape}")
    w = (np.ones((x.shape[0], x.shape[2]), dtype=bool) if mask is None
         else np.asarray(mask, dtype=bool))
    if w.shape != (x.shape[0], x.shape[2]):
        raise DataError(f"smoothness: mask must have shape {(x.shape[0], x.shape[2])}, got "
                        f"{w.shape}")
    mean, std = _masked_mean_std(x, w[:, None, :], axis=2)                     # [N, C, 1]
    z = np.where(w[:, None, :], x - mean, 0.0)
    pairs = (w[:, 1:] & w[:, :-1])[:, None, :]                                 # [N, 1, T-1]
    n_pairs = pairs.sum(axis=2)                                                # [N, 1]
    lagged = (z[..., 1:] * z[..., :-1] * pairs).sum(axis=2)                    # [N, C]
    var = std[..., 0] ** 2
    ok = (n_pairs >= 2) & (var > STD_FLOOR ** 2)
    r = lagged[ok] / (np.broadcast_to(n_pairs, var.shape)[ok] * var[ok])
    return float(np.median(r)) if r.size else float("nan")


def _masked_mean_std(x: np.ndarray, w: np.ndarray, axis) -> tuple[np.ndarray, np.ndarray]:
    """Mean and (population) std of ``x`` over ``axis`` counting only where ``w`` is True
    (``w`` broadcasts against ``x``); kept dims. No valid entry gives mean 0, std 0."""
    w = np.broadcast_to(w, x.shape)
    n = np.maximum(w.sum(axis=axis, keepdims=True), 1)
    mean = np.where(w, x, 0.0).sum(axis=axis, keepdims=True) / n
    var = (np.where(w, x - mean, 0.0) ** 2).sum(axis=axis, keepdims=True) / n
    return mean, np.sqrt(var)


def channel_stats(x: np.ndarray, mask: np.ndarray | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std of each channel over all series and their valid steps.

    ``x`` float [n_series, n_channels, n_steps]; ``mask`` bool [n_series, n_steps] or None.
    Returns (mean, std), float64 [n_channels] each; std is at least ``STD_FLOOR``.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3 or x.shape[0] == 0:
        raise DataError(f"channel_stats: x must be [n_series, n_channels, n_steps] with at least "
                        f"one series, got shape {x.shape}")
    w = np.ones((x.shape[0], 1, x.shape[2]), bool) if mask is None else \
        np.asarray(mask, dtype=bool)[:, None, :]                          # [N, 1, T]
    if w.shape[0] != x.shape[0] or w.shape[2] != x.shape[2]:
        raise DataError(f"channel_stats: mask must have shape {(x.shape[0], x.shape[2])}, got "
                        f"{np.shape(mask)}")
    mean, std = _masked_mean_std(x, w, axis=(0, 2))
    return mean.reshape(-1), np.maximum(std, STD_FLOOR).reshape(-1)


def standardize(x: np.ndarray, mean, std, mask: np.ndarray | None = None) -> np.ndarray:
    """``(x − mean[c]) / std[c]`` per channel with given statistics (see `channel_stats`).

    Returns a new float32 array [n_series, n_channels, n_steps]; padded steps are 0.
    """
    x = np.asarray(x, dtype=np.float64)
    mean, std = np.asarray(mean, dtype=np.float64), np.asarray(std, dtype=np.float64)
    if x.ndim != 3 or mean.shape != (x.shape[1],) or std.shape != (x.shape[1],):
        raise DataError(f"standardize: x [n_series, n_channels, n_steps] needs one mean and std "
                        f"per channel; got x {x.shape}, mean {mean.shape}, std {std.shape}")
    if not (np.isfinite(mean).all() and np.isfinite(std).all() and (std > 0).all()):
        raise DataError("standardize: channel means must be finite and stds finite and > 0")
    out = (x - mean[None, :, None]) / std[None, :, None]
    if mask is not None:
        out = np.where(np.asarray(mask, dtype=bool)[:, None, :], out, 0.0)
    return out.astype(np.float32)


def stratified_split(y, fraction: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train indices, validation indices), sorted, holding out ``fraction`` of each class
    (scikit-learn's stratified shuffle split)."""
    from sklearn.model_selection import train_test_split

    if isinstance(fraction, bool) or not 0 < fraction < 1:
        raise ConfigError(f"validation fraction must be in (0, 1), got {fraction!r}")
    y = np.asarray(y)
    if y.ndim != 1:
        raise DataError(f"stratified_split: y must be 1-D labels, got shape {y.shape}")
    idx = np.arange(len(y))
    try:
        tr, va = train_test_split(idx, test_size=fraction, stratify=y, random_state=seed)
    except ValueError as exc:
        counts = ", ".join(f"{k}: {int(n)}" for k, n in zip(*np.unique(y, return_counts=True)))
        raise DataError(f"cannot hold out a stratified validation set of {fraction:g} from "
                        f"{len(y)} series with class counts {{{counts}}} ({exc}); use more "
                        f"data, another fraction, or no validation set (val_fraction=0, "
                        f"--val-fraction 0 on the command line)") from None
    return np.sort(tr), np.sort(va)
