"""The classifiers a user would otherwise run, fitted beside kairo by ``kairo tsc benchmark``:
aeon's MiniRocket and MultiRocket-Hydra (``aeon.classification.convolution_based``), on the
same train split, scored once on the same test split, one fit per seed, one thread each.

Input: the series kairo loaded, scaled as kairo's network sees them (``znorm`` resolved per
dataset: each series z-normalized for univariate sets, each channel with the training split's
statistics for multivariate ones). Most UCR sets are z-normalized in the archive already, so
there this changes nothing; Covid3Month_disc and PickupGestureWiimoteZ are not, and giving the
peers raw values there while kairo gets scaled ones would compare the scaling, not the
classifiers. aeon's two classifiers take equal-length series only (their
``capability:unequal_length`` tag is False), so a variable-length set is given to them as the
archive's equal-length copy (``<name>_eq``: JapaneseVowels resampled to 25 steps,
PickupGestureWiimoteZ extended by low-amplitude noise), never as kairo's zero-padded arrays;
the table names the set each peer was given.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from kairo._errors import ConfigError, DataError
from kairo.tsc._config import PEERS

__all__ = ["PEERS", "PEER_NAMES", "peer_estimator", "peer_input", "peer_scaling", "fit_peer"]

log = logging.getLogger(__name__)

# the names the tables use, as the methods' papers and aeon spell them
PEER_NAMES = {"minirocket": "MiniRocket", "multirocket-hydra": "MultiRocket-Hydra"}


def peer_estimator(peer: str, seed: int):
    """A fresh aeon estimator for ``peer`` (one of :data:`PEERS`), seeded, one thread."""
    from aeon.classification.convolution_based import (MiniRocketClassifier,
                                                       MultiRocketHydraClassifier)

    classes = {"minirocket": MiniRocketClassifier,
               "multirocket-hydra": MultiRocketHydraClassifier}
    if peer not in classes:
        raise ConfigError(f"peers: expected one of {', '.join(PEERS)}; got {peer!r}")
    return classes[peer](n_jobs=1, random_state=seed)


def peer_input(dataset: str) -> str:
    """The set the peers are given for ``dataset`` (a canonical shipped name): the set itself,
    or for a variable-length one its equal-length copy ``<name>_eq``; DataError when there is
    none (aeon's classifiers would need the series padded, which would change the task)."""
    from kairo.tsc._data import list_datasets, load_dataset

    if load_dataset(dataset, "train").mask is None:
        return dataset
    eq = f"{dataset}_eq"
    if eq not in list_datasets():
        raise DataError(f"peers: {dataset} holds series of different lengths and aeon's "
                        f"{', '.join(PEER_NAMES.values())} take equal-length series only; "
                        f"there is no equal-length copy ({eq}) to give them, so leave them out "
                        f"for this set (--peers '')")
    return eq


def peer_scaling(train, test, znorm: str = "auto") -> tuple[np.ndarray, np.ndarray, str]:
    """(train x, test x, the scaling used): float64 arrays [N, C, T] scaled as kairo's trainer
    scales its input (``znorm`` "auto" resolved for the channel count; "channel" with the
    training split's statistics)."""
    from kairo.tsc._data import channel_stats
    from kairo.tsc._recipe import resolve_znorm
    from kairo.tsc._train import scale_input

    mode = resolve_znorm(znorm, train.n_channels)
    meta = {"znorm": mode}
    if mode == "channel":
        mean, std = channel_stats(train.x, train.mask)
        meta.update(znorm_mean=mean.tolist(), znorm_std=std.tolist())
    return (np.asarray(scale_input(train.x, train.mask, meta), dtype=np.float64),
            np.asarray(scale_input(test.x, test.mask, meta), dtype=np.float64), mode)


def fit_peer(peer: str, train, test, *, seed: int, znorm: str = "auto") -> dict:
    """Fit ``peer`` on ``train`` (a TSData of equal-length series), score ``test`` once.

    Returns ``accuracy`` (test), ``fit_seconds`` (wall clock of ``fit``, one thread:
    ``n_jobs=1``, BLAS and OpenMP pools limited to one, one torch thread) and ``scaling``.
    numba compiles aeon's kernels on their first call in a process (minutes for the
    multivariate MultiRocket without a cache); that is a one-off cost of the installation,
    not of fitting, so a fit on a few training series of each class comes first, untimed.
    """
    import torch
    from threadpoolctl import threadpool_limits

    for data, split in ((train, "train"), (test, "test")):
        if data.mask is not None:
            raise DataError(f"{data.name} ({split}): aeon's {PEER_NAMES.get(peer, peer)} takes "
                            f"equal-length series only; give the set's equal-length copy "
                            f"(see peer_input), not padded series")
    if train.n_steps != test.n_steps:
        raise DataError(f"{train.name}: the train series have {train.n_steps} steps, the test "
                        f"series {test.n_steps}; aeon's classifiers need one length")
    xtr, xte, mode = peer_scaling(train, test, znorm)
    torch.set_num_threads(1)
    warm = np.concatenate([np.flatnonzero(train.y == c)[:2] for c in np.unique(train.y)])
    with threadpool_limits(1):
        peer_estimator(peer, seed).fit(xtr[warm], train.y[warm])
        clf = peer_estimator(peer, seed)
        t0 = time.perf_counter()
        clf.fit(xtr, train.y)
        fit_seconds = time.perf_counter() - t0
        pred = np.asarray(clf.predict(xte))
    accuracy = float(np.mean(pred == test.y))
    log.info("%s on %s, seed %d: test accuracy %.4f, fit %.2f s", PEER_NAMES.get(peer, peer),
             train.name, seed, accuracy, fit_seconds)
    return {"accuracy": accuracy, "fit_seconds": fit_seconds, "scaling": mode}
