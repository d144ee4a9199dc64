"""The user's copy of the UCR/UEA archive (or any folder laid out like it), beside the sets
the aeon wheel ships: ``$KAIRO_TSC_ARCHIVE`` names one or more folders (separated by
``os.pathsep``), and every set found there loads by name like a shipped one — ``kairo tsc
train --dataset Beef``, ``kairo tsc benchmark --datasets Beef,Car``, ``load_dataset("Beef")``.

A set is a pair ``<Name>_TRAIN.<ext>`` / ``<Name>_TEST.<ext>``, either in ``<folder>/<Name>/``
(the archive's own layout) or directly in ``<folder>``, in one of the archive's formats:
``.ts`` (aeon's reader), ``.tsv`` (the 2018 archive: tab-separated, label first, series of
unequal length ended by NaN) or ``.csv``/``.txt`` (label first, comma-separated; the 2015
archive's ``.txt`` may be whitespace-separated). A set the aeon wheel ships keeps the wheel's
copy.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np

from kairo._errors import DataError, DataNotFoundError

__all__ = ["archive_sets", "read_split", "ARCHIVE_ENV"]

ARCHIVE_ENV = "KAIRO_TSC_ARCHIVE"
_FORMATS = (".ts", ".tsv", ".csv", ".txt")


def archive_sets(env: str | None = None) -> dict[str, tuple[Path, Path]]:
    """Set name → (train file, test file) for every set in the folders of
    ``$KAIRO_TSC_ARCHIVE`` (or ``env``); a folder that does not exist is an error naming it."""
    value = os.environ.get(ARCHIVE_ENV, "") if env is None else env
    found: dict[str, tuple[Path, Path]] = {}
    for root in filter(None, value.split(os.pathsep)):
        root = Path(root).expanduser()
        if not root.is_dir():
            raise DataError(f"${ARCHIVE_ENV}: {root} is not a folder (expected the UCR/UEA "
                            f"archive's layout: <folder>/<Name>/<Name>_TRAIN.ts)")
        for train in sorted(root.glob("*_TRAIN.*")) + sorted(root.glob("*/*_TRAIN.*")):
            if train.suffix.lower() not in _FORMATS:
                continue
            name = train.name[:-len("_TRAIN" + train.suffix)]
            test = train.with_name(f"{name}_TEST{train.suffix}")
            if test.is_file() and name not in found:
                found[name] = (train, test)
    return found


def read_split(path: Path) -> tuple[list | np.ndarray, np.ndarray]:
    """(series, label strings) of one archive file: an array [n, C, T] when every series has
    one length, else a list of [C, T_i] arrays."""
    if path.suffix.lower() == ".ts":
        return _read_ts(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable text file ({exc})") from None
    sep = "\t" if path.suffix.lower() == ".tsv" else ","
    labels, series = [], []
    for line_no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = line.split(sep) if sep in line else re.split(r"\s+", line.strip())
        try:
            values = np.array([float(c) if c.strip() else np.nan for c in cells[1:]])
        except ValueError:
            raise DataError(f"{path}: line {line_no} holds a value that is not a number") \
                from None
        n = len(values)
        while n and np.isnan(values[n - 1]):           # the end of a shorter series
            n -= 1
        if n == 0 or not np.isfinite(values[:n]).all():
            what = "no values" if n == 0 else "a gap (NaN or inf inside the series)"
            raise DataError(f"{path}: line {line_no} has {what}; kairo reads complete series "
                            f"(fill the gaps first)")
        labels.append(cells[0].strip())
        series.append(values[:n][None, :])
    if not series:
        raise DataError(f"{path}: no series")
    if len({s.shape[1] for s in series}) == 1:
        return np.stack(series), np.asarray(labels)
    return series, np.asarray(labels)


def _read_ts(path: Path, labelled: bool = True) -> tuple[list | np.ndarray, np.ndarray | None]:
    """aeon's reader (local file only); its errors become DataError naming the file. With
    ``labelled=False`` the labels may be absent (then None)."""
    from aeon.datasets import load_from_ts_file

    if not Path(path).is_file():
        raise DataNotFoundError(f"{path} does not exist")
    try:
        x, y, meta = load_from_ts_file(str(path), return_meta_data=True)
    except Exception as exc:  # noqa: BLE001 - aeon raises IOError/ValueError/IndexError
        raise DataError(f"{path}: not a readable .ts file ({type(exc).__name__}: "
                        f"{str(exc)[:200]})") from None
    if not meta.get("classlabel") or y is None or len(y) == 0:
        if not labelled:
            return x, None
        raise DataError(f"{path}: has no class labels (@classLabel false or missing); kairo "
                        f"reads classification files only")
    return x, np.asarray(y).astype(str)
