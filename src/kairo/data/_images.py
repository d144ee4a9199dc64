"""Labelled image sets for the logic-gate networks: MNIST from the data directory, an ``.npz``
file or a folder of IDX files, checked once here so every consumer gets uint8
``[N, H, W, C]`` images and int64 labels 0…K−1, or a :class:`DataError` naming the file and
the field."""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kairo._errors import DataError
from kairo.data._idx import read_idx

__all__ = ["ImageSet", "load_images", "image_files"]

_NPZ_KEYS = ("x_train", "y_train", "x_test", "y_test")
# IDX names as MNIST, Fashion-MNIST, KMNIST and EMNIST ship them (optionally gzipped)
_IDX_ROLES = {"x_train": r"^(emnist-\w+-)?train-images[-.]idx[34]-ubyte(\.gz)?$",
              "y_train": r"^(emnist-\w+-)?train-labels[-.]idx1-ubyte(\.gz)?$",
              "x_test": r"^(emnist-\w+-)?(t10k|test)-images[-.]idx[34]-ubyte(\.gz)?$",
              "y_test": r"^(emnist-\w+-)?(t10k|test)-labels[-.]idx1-ubyte(\.gz)?$"}
_SOURCES = ("'mnist', an .npz file (x_train, y_train, x_test, y_test) or a folder of IDX files "
            "(train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], t10k-… or test-…)")


@dataclass(frozen=True, eq=False)
class ImageSet:
    """Train and test images (uint8 ``[N, H, W, C]``) with labels (int64, 0…K−1).

    ``files`` maps a label (e.g. ``"x_train"`` or ``"mnist/train-images"``) to each file read,
    for a run's record of its inputs.
    """

    name: str
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    files: dict = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int, int]:
        """One image's (height, width, channels)."""
        return tuple(int(s) for s in self.x_train.shape[1:])

    @property
    def n_pixels(self) -> int:
        """Values per image, H·W·C: the circuit reads them row-major ([H, W, C])."""
        return int(np.prod(self.shape))

    @property
    def n_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1


def _is_mnist(source) -> bool:
    return isinstance(source, str) and source.lower() == "mnist"


def image_files(source, data_dir=None) -> dict[str, Path]:
    """The files :func:`load_images` reads for ``source`` (for a run's record of its inputs)."""
    if _is_mnist(source):
        from kairo.data._mnist import mnist_files

        return {**mnist_files("train", data_dir), **mnist_files("test", data_dir)}
    path = _existing(source)
    return {"images": path} if path.is_file() else _idx_files(path)


def load_images(source, data_dir=None) -> ImageSet:
    """Read and check a labelled image set.

    ``source``: ``"mnist"`` (from the data directory ``data_dir``), an ``.npz`` file with
    ``x_train``, ``y_train``, ``x_test``, ``y_test`` (images uint8 ``[N, H, W]`` or
    ``[N, H, W, C]``, labels integers 0…K−1), or a folder holding the four IDX files.
    """
    if _is_mnist(source):
        from kairo.data._mnist import load_mnist

        parts = {}
        for split in ("train", "test"):
            x, y = load_mnist(split, data_dir)
            parts[f"x_{split}"], parts[f"y_{split}"] = x, y
        return _checked("MNIST", parts, image_files(source, data_dir), "MNIST")
    path = _existing(source)
    if path.is_file():
        parts = _read_npz(path)
        return _checked(path.stem, parts, {"images": path}, str(path))
    files = _idx_files(path)
    parts = {role: read_idx(p) for role, p in files.items()}
    return _checked(path.name, parts, files, str(path), where=files)


def _existing(source) -> Path:
    if not isinstance(source, (str, Path)) or not str(source):
        raise DataError(f"dataset: expected {_SOURCES}; got {source!r}")
    path = Path(source)
    if not path.exists():
        raise DataError(f"dataset {path}: no such file or folder; expected {_SOURCES}")
    if path.is_file() and path.suffix.lower() != ".npz":
        raise DataError(f"dataset {path}: expected {_SOURCES}; a single file must be .npz")
    return path


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    if not zipfile.is_zipfile(path):
        raise DataError(f"{path}: not a readable .npz file (an .npz is a zip archive of "
                        f".npy arrays, as numpy.savez writes)")
    try:
        with np.load(path, allow_pickle=False) as z:
            keys = set(z.files)
            missing = [k for k in _NPZ_KEYS if k not in keys]
            if missing:
                raise DataError(f"{path}: missing {', '.join(missing)} (it holds "
                                f"{', '.join(sorted(keys)) or 'no arrays'}); an image set "
                                f".npz needs {', '.join(_NPZ_KEYS)}")
            return {k: z[k] for k in _NPZ_KEYS}
    except DataError:
        raise
    except ValueError as e:          # object arrays need pickle, which is never enabled
        raise DataError(f"{path}: an array could not be read without pickle ({e}); store "
                        f"plain numeric arrays") from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise DataError(f"{path}: not a readable .npz file ({e})") from None


def _idx_files(folder: Path) -> dict[str, Path]:
    names = sorted(p.name for p in folder.iterdir() if p.is_file())
    out = {}
    for role, pattern in _IDX_ROLES.items():
        hits = [n for n in names if re.match(pattern, n, re.IGNORECASE)]
        if not hits:
            raise DataError(f"dataset {folder}: no {role} IDX file (a name like "
                            f"{_IDX_EXAMPLE[role]}[.gz]); expected {_SOURCES}")
        if len(hits) > 1:
            raise DataError(f"dataset {folder}: several {role} IDX files ({', '.join(hits)}); "
                            f"keep one")
        out[role] = folder / hits[0]
    return out


_IDX_EXAMPLE = {"x_train": "train-images-idx3-ubyte", "y_train": "train-labels-idx1-ubyte",
                "x_test": "t10k-images-idx3-ubyte", "y_test": "t10k-labels-idx1-ubyte"}


def _checked(name: str, parts: dict, files: dict, label: str, where: dict | None = None
             ) -> ImageSet:
    def at(key):                     # where a field came from, for the messages
        return f"{where[key]}" if where else f"{label}: {key}"

    out = {}
    for split in ("train", "test"):
        x, y = np.asarray(parts[f"x_{split}"]), np.asarray(parts[f"y_{split}"])
        if x.dtype != np.uint8:
            raise DataError(f"{at(f'x_{split}')}: images must be uint8 pixels (0–255), got "
                            f"dtype {x.dtype}")
        if x.ndim == 3:
            x = x[..., None]
        if x.ndim != 4 or min(x.shape[1:], default=0) < 1:
            raise DataError(f"{at(f'x_{split}')}: images must have shape [N, H, W] or "
                            f"[N, H, W, C], got {list(x.shape)}")
        if x.shape[0] == 0:
            raise DataError(f"{at(f'x_{split}')}: no images")
        if y.ndim != 1:
            raise DataError(f"{at(f'y_{split}')}: labels must be one integer per image "
                            f"(shape [N]), got shape {list(y.shape)}")
        if not (np.issubdtype(y.dtype, np.integer) or np.issubdtype(y.dtype, np.bool_)):
            raise DataError(f"{at(f'y_{split}')}: labels must be integers 0…K−1, got dtype "
                            f"{y.dtype}")
        if y.shape[0] != x.shape[0]:
            raise DataError(f"{label}: {x.shape[0]} {split} images but {y.shape[0]} {split} "
                            f"labels")
        if y.min() < 0:
            raise DataError(f"{at(f'y_{split}')}: labels must be integers 0…K−1, found "
                            f"{int(y.min())}")
        out[f"x_{split}"], out[f"y_{split}"] = np.ascontiguousarray(x), y.astype(np.int64)
    if out["x_train"].shape[1:] != out["x_test"].shape[1:]:
        raise DataError(f"{label}: train images are {list(out['x_train'].shape[1:])} "
                        f"([H, W, C]) but test images {list(out['x_test'].shape[1:])}")
    k = int(out["y_train"].max()) + 1
    if int(out["y_test"].max()) >= k:
        raise DataError(f"{at('y_test')}: label {int(out['y_test'].max())} has no training "
                        f"image (training labels are 0…{k - 1})")
    absent = np.setdiff1d(np.arange(k), out["y_train"])
    if absent.size:
        raise DataError(f"{at('y_train')}: labels must be 0…K−1 with every class present; "
                        f"class {int(absent[0])} has no training image")
    return ImageSet(name, out["x_train"], out["y_train"], out["x_test"], out["y_test"],
                    dict(files))
