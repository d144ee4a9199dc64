"""IDX files (MNIST's format; gzipped or not): one reader for every image set."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from kairo._errors import DataError

__all__ = ["read_idx"]

_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.dtype(">i2"), 0x0C: np.dtype(">i4"),
               0x0D: np.dtype(">f4"), 0x0E: np.dtype(">f8")}


def read_idx(path: Path) -> np.ndarray:
    """Any IDX file (gzipped or not): magic 0x0000, type byte, ndim, big-endian uint32 dims."""
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as f:
            raw = f.read()
    except (OSError, EOFError) as e:
        raise DataError(f"{path}: cannot be read ({e})") from None
    if len(raw) < 4 or raw[:2] != b"\0\0" or raw[2] not in _IDX_DTYPES or raw[3] < 1:
        raise DataError(f"{path}: not an IDX file (its first bytes must be 00 00, a type code "
                        f"and the number of dimensions)")
    ndim, dtype = raw[3], np.dtype(_IDX_DTYPES[raw[2]])
    if len(raw) < 4 + 4 * ndim:
        raise DataError(f"{path}: IDX header cut short ({len(raw)} bytes for {ndim} dims)")
    dims = tuple(int(d) for d in np.frombuffer(raw, ">u4", count=ndim, offset=4))
    body = len(raw) - 4 - 4 * ndim
    if body != int(np.prod(dims)) * dtype.itemsize:
        raise DataError(f"{path}: the header says {dims} values of {dtype.name} "
                        f"({int(np.prod(dims)) * dtype.itemsize} bytes) but the file holds "
                        f"{body}")
    return np.frombuffer(raw, dtype, offset=4 + 4 * ndim).reshape(dims)
