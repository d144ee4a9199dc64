"""The bake-off's resampling protocol: stratified train/test resamples drawn as tsml-eval and
aeon draw them, so that a mean over kairo's resamples compares with the published 30-resample
means (``kairo.tsc.bakeoff_results``).

Resample 0 is the archive's own split, untouched. Resample r > 0 pools the two splits (train
first), then for each class in the sorted order of its label strings shuffles that class's
pooled positions with NumPy's legacy ``RandomState(r)`` and gives the first as many as the
original training split held of that class to training, the rest to test; both come out
grouped by class. Written from that description (tsml-eval's ``stratified_resample_data``,
aeon's ``aeon.benchmarking.resampling``); the tests check the indices against aeon's.
"""

from __future__ import annotations

import numpy as np

from kairo._errors import DataError

__all__ = ["stratified_resample", "resample_split"]


def stratified_resample(y_train, y_test, resample: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, test) positions into the pooled labels ``concatenate([y_train, y_test])`` for
    resample ``resample`` (0: the original split).

    Labels are compared as given: pass the archive's label strings, since the class order (and
    so which class draws first from the random stream) is their sorted order — "10" before
    "2" for strings."""
    if isinstance(resample, bool) or not isinstance(resample, (int, np.integer)) \
            or resample < 0:
        raise DataError(f"resample must be an integer ≥ 0 (0 = the archive's split), got "
                        f"{resample!r}")
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    n_train = len(y_train)
    if resample == 0:
        return np.arange(n_train), n_train + np.arange(len(y_test))
    classes, counts = np.unique(y_train, return_counts=True)
    missing = sorted(set(np.unique(y_test).tolist()) - set(classes.tolist()))
    if missing:
        raise DataError(f"the test split holds classes {missing[:10]} the training split lacks; "
                        f"a stratified resample keeps each class's training count")
    pooled = np.concatenate([y_train, y_test])
    rng = np.random.RandomState(int(resample))
    train, test = [], []
    for label, n in zip(classes, counts):
        idx = np.flatnonzero(pooled == label)
        rng.shuffle(idx)
        train.append(idx[:n])
        test.append(idx[n:])
    return np.concatenate(train), np.concatenate(test)


def resample_split(train, test, resample: int):
    """(train, test) :class:`~kairo.tsc.TSData` of resample ``resample`` of a dataset's
    two splits (same classes, channels; lengths padded to the longer with a mask)."""
    from kairo.tsc._data import TSData, pad_to

    if resample == 0:
        return train, test
    if train.n_channels != test.n_channels:
        raise DataError(f"train and test have different channel counts ({train.n_channels} vs "
                        f"{test.n_channels})")
    t = max(train.n_steps, test.n_steps)
    train, test = pad_to(train, t), pad_to(test, t)
    names_train = np.asarray(train.classes, dtype=object)[train.y].astype(str)
    names_test = np.asarray(test.classes, dtype=object)[test.y].astype(str)
    tr, te = stratified_resample(names_train, names_test, resample)
    x = np.concatenate([train.x, test.x])
    masks = [d.mask if d.mask is not None else np.ones((len(d), t), dtype=bool)
             for d in (train, test)]
    mask = None if train.mask is None and test.mask is None else np.concatenate(masks)
    lut = {c: i for i, c in enumerate(train.classes)}
    y = np.array([lut[c] for c in np.concatenate([names_train, names_test])], dtype=np.int64)

    def part(idx, split):
        return TSData(x[idx], y[idx], None if mask is None else mask[idx], train.classes,
                      f"{train.name} resample {resample} {split}")

    return part(tr, "train"), part(te, "test")
