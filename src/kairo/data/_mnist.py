"""MNIST from the data directory (``mnist/`` with the four standard IDX ``.gz`` files)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kairo._errors import DataError
from kairo.data._idx import read_idx
from kairo.data._files import fetch

__all__ = ["load_mnist", "mnist_files"]

_FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
          "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _idx(path, ndim: int) -> np.ndarray:
    """An IDX file (:func:`kairo.data._idx.read_idx`) that must hold ``ndim``-D uint8 data."""
    data = read_idx(Path(path))
    if data.ndim != ndim or data.dtype != np.uint8:
        raise DataError(f"{path}: not an IDX file of {ndim}-D uint8 data")
    return data


def mnist_files(split: str = "train", data_dir=None, *, download: bool | None = None
                ) -> dict[str, Path]:
    """{"mnist/<split>-images": path, "mnist/<split>-labels": path}: the two files
    :func:`load_mnist` reads (checksum-verified, fetched when missing), e.g. for run.json."""
    if split not in _FILES:
        raise DataError(f"MNIST split must be 'train' or 'test', got {split!r}")
    return {f"mnist/{split}-{kind}": fetch(f"mnist/{name}", data_dir, download=download)
            for kind, name in zip(("images", "labels"), _FILES[split])}


def load_mnist(split: str = "train", data_dir=None, *, download: bool | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (n, 28, 28), labels uint8 (n,)) of ``split`` ("train" or "test").

    Files are checksum-verified (MD5 of the decompressed bytes) and fetched from a public
    mirror when missing and online."""
    img_path, lab_path = mnist_files(split, data_dir, download=download).values()
    images = _idx(img_path, 3)
    labels = _idx(lab_path, 1)
    if images.shape[0] != labels.shape[0]:
        raise DataError(f"MNIST {split}: {images.shape[0]} images but {labels.shape[0]} labels")
    return images, labels
