"""The default Transformer (`kairo tsc train`'s model and training, one member) with each
channel's first difference as an extra input channel: [x, Δx], Δx_t = x_t − x_{t−1}, Δx_0 = 0,
zero where either step is padding. Scaled as the default scales its input (each series and
channel z-normalised for one channel, per-channel standardisation for several), so Δx gets
its own scale. Each seed is scored once on the test split; its test probabilities are kept,
so ensembles are scored from them: of k members, consecutive seeds (0…k−1, k…2k−1, …; for
k = 2 the pairs `--ensemble 2` makes). With `--no-diff` it trains the default itself (its
members equal `tsc_attention/ensemble2/member_runs.csv`'s), which measures how far averaging
more members goes. docs/notes/tsc.md, "The first difference as a second channel".

Usage::

    python benchmarks/studies/tsc_first_difference.py --datasets ItalyPowerDemand \\
        --seeds 0-9 --out runs.csv [--no-diff] [--ensembles ensembles.csv --sizes 2,5]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from kairo.tsc import (ModelConfig, TrainConfig, TSData, fit, load_dataset,
                             predict)


def with_difference(d: TSData) -> TSData:
    """``d`` with the first difference of every channel appended (mask-aware)."""
    dx = np.zeros_like(d.x)
    dx[:, :, 1:] = d.x[:, :, 1:] - d.x[:, :, :-1]
    if d.mask is not None:
        dx[:, :, 1:] *= d.mask[:, None, 1:] & d.mask[:, None, :-1]
    return TSData(np.concatenate([d.x, dx], 1), d.y, d.mask, d.classes, d.name)


def _seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(s) for s in text.split(",")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="ItalyPowerDemand,GunPoint,ArrowHead")
    ap.add_argument("--seeds", default="0-4", help="e.g. 0-9 or 0,2,4")
    ap.add_argument("--no-diff", action="store_true", help="the default's input (the baseline)")
    ap.add_argument("--out", type=Path, required=True, help="one row per run (CSV)")
    ap.add_argument("--ensembles", type=Path, help="ensembles of the runs (CSV)")
    ap.add_argument("--sizes", default="2", help="members per ensemble, e.g. 2,3,5,10")
    args = ap.parse_args()
    rows, ensembles = [], []
    for name in args.datasets.split(","):
        train, test = load_dataset(name, "train"), load_dataset(name, "test")
        znorm = "series" if train.n_channels == 1 else "channel"
        if not args.no_diff:
            train, test = with_difference(train), with_difference(test)
        probs = {}
        for seed in _seeds(args.seeds):
            t = time.perf_counter()
            res = fit(ModelConfig(), TrainConfig(threads=1, seed=seed, znorm=znorm), train,
                      progress_bar=False)
            probs[seed] = predict(res["model"], test.x, test.mask)[1]
            rows.append({"input": "x" if args.no_diff else "x,diff", "dataset": name,
                         "seed": seed,
                         "test_accuracy": float((probs[seed].argmax(1) == test.y).mean()),
                         "seconds": round(time.perf_counter() - t, 1),
                         "load_1min": round(os.getloadavg()[0], 2)})
            print(rows[-1], flush=True)
        seeds = sorted(probs)
        for k in (int(v) for v in args.sizes.split(",")):
            for i in range(0, len(seeds) - k + 1, k):
                members = seeds[i:i + k]
                p = sum(probs[s] for s in members) / k
                ensembles.append({"input": rows[-1]["input"], "dataset": name, "size": k,
                                  "members": " ".join(map(str, members)),
                                  "test_accuracy": float((p.argmax(1) == test.y).mean())})
    pd.DataFrame(rows).to_csv(args.out, index=False)
    if args.ensembles:
        pd.DataFrame(ensembles).to_csv(args.ensembles, index=False)


if __name__ == "__main__":
    main()
