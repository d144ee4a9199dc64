"""Do the folds of a UCR training split pose the same problem as its test split? For each
dataset: aeon's MiniRocket (seed 0, one thread, raw series) scored on the test split and by
stratified 5-fold CV of the training split (kairo's `cv_folds`, split seed 0, as `kairo tsc
benchmark --select cv` makes them), and 1-NN (Euclidean, z-normalised series) from the
training split to the test split against leave-one-out inside the training split. Where the
two disagree, a choice made by cross-validation inside the training split answers another
question than the test split (docs/notes/tsc.md, "Mixup chosen per dataset by
cross-validation").

Usage::

    python benchmarks/studies/tsc_split_shift.py [--datasets ACSF1,ArrowHead,...] --out F.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

DEFAULT = "ACSF1,ArrowHead,PickupGestureWiimoteZ_eq,GunPoint,ItalyPowerDemand,OSULeaf"


def _z(x: np.ndarray) -> np.ndarray:
    x = x.reshape(len(x), -1).astype(np.float64)
    return (x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-8)


def one_nn(train, test) -> dict:
    a, b = _z(train.x), _z(test.x)
    d = ((b[:, None, :] - a[None, :, :]) ** 2).sum(-1)
    within = ((a[:, None, :] - a[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(within, np.inf)
    return {"test": float((train.y[d.argmin(1)] == test.y).mean()),
            "leave_one_out": float((train.y[within.argmin(1)] == train.y).mean())}


def minirocket(train, test, folds: int = 5) -> dict:
    from aeon.classification.convolution_based import MiniRocketClassifier

    from kairo.tsc._grid import cv_folds

    def fit(x, y):
        return MiniRocketClassifier(random_state=0, n_jobs=1).fit(x, y)

    x, xt = train.x.astype(np.float64), test.x.astype(np.float64)
    test_acc = float((fit(x, train.y).predict(xt) == test.y).mean())
    hits = sum(int((fit(x[a], train.y[a]).predict(x[b]) == train.y[b]).sum())
               for a, b in cv_folds(train.y, folds, 0))
    return {"test": test_acc, "cv_hits": hits, "cv_n": len(train.y), "cv": hits / len(train.y)}


def main(argv=None) -> int:
    from kairo.tsc import load_dataset

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=DEFAULT)
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    rows = {}
    for name in args.datasets.split(","):
        train, test = load_dataset(name, "train"), load_dataset(name, "test")
        rows[name] = {"minirocket": minirocket(train, test), "one_nn": one_nn(train, test)}
        r = rows[name]
        print(f"{name:26s} MiniRocket test {r['minirocket']['test']:.3f}, 5-fold CV "
              f"{r['minirocket']['cv_hits']}/{r['minirocket']['cv_n']}; 1-NN test "
              f"{r['one_nn']['test']:.3f}, leave-one-out {r['one_nn']['leave_one_out']:.3f}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps({"datasets": rows, "load": os.getloadavg()}, indent=2) + "\n")
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
