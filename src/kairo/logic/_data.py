"""The labelled images a circuit is checked and timed on (torch-free: verify and bench)."""

from __future__ import annotations

import numpy as np

from kairo._errors import DataError, KairoError
from kairo.logic._circuit import Circuit

__all__ = ["circuit_images", "validation_split"]


def circuit_images(circuit: Circuit, dataset: str = "", data_dir=None, split: str = "test"
                   ) -> tuple[np.ndarray, np.ndarray, str]:
    """(uint8 images (n, n_pixels), labels renumbered 0…k−1 as the circuit's classes, the
    dataset's name) of ``split`` of ``dataset`` — by default the one the circuit was trained
    on (``meta["dataset"]``, MNIST when the circuit names none)."""
    from kairo.data import load_images

    spec = circuit.image_input
    if spec is None:
        raise KairoError("this circuit has no pixel thresholds (meta['thresholds'], set by "
                         "`kairo logic train`, dividing its inputs), so it cannot read images")
    name = dataset or circuit.meta.get("dataset") or "mnist"
    try:
        images = load_images(name, data_dir)
    except DataError as exc:
        hint = "" if dataset else " (the dataset the circuit records; name another with --dataset)"
        raise DataError(f"{exc}{hint}") from None
    if images.n_pixels != spec.n_pixels:
        raise DataError(f"dataset {name}: its images have {images.n_pixels} values "
                        f"({'×'.join(map(str, images.shape))}) but the circuit reads "
                        f"{spec.n_pixels} per image")
    x, y = getattr(images, f"x_{split}"), getattr(images, f"y_{split}")
    classes = circuit.meta.get("classes")
    if classes is not None:
        classes = [int(c) for c in classes]
        if max(classes) >= images.n_classes:
            raise DataError(f"dataset {name}: the circuit's classes {classes} are not all "
                            f"among its labels 0…{images.n_classes - 1}")
        lut = np.full(images.n_classes, -1)
        lut[classes] = np.arange(len(classes))
        keep = lut[y] >= 0
        x, y = x[keep], lut[y[keep]]
    return np.ascontiguousarray(x.reshape(len(x), -1)), y, images.name


def validation_split(n: int, seed: int, fraction: float) -> tuple[np.ndarray, np.ndarray]:
    """(held-out, kept) indices of ``n`` training images: the split ``kairo logic train``
    validates on, a permutation seeded by ``seed`` whose first round(fraction·n) are held out.
    Runs given the same seed and fraction hold out the same images."""
    perm = np.random.default_rng(np.random.SeedSequence([int(seed), 12])).permutation(n)
    n_val = int(round(fraction * n))
    return perm[:n_val], perm[n_val:]
