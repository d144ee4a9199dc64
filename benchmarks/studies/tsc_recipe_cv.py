"""Cross-validation on a training split, for choosing the Transformer's default recipe without
looking at the test split (docs/notes/tsc.md, "The default recipe").

Each call scores one variant of the default on one dataset: stratified k-fold CV of the
training split (fold f trains with seed 100·seed + f), through ``kairo.tsc.fit``, and
appends one JSON line (the variant, per-fold and mean accuracy, the load average) to --out.

    python benchmarks/studies/tsc_recipe_cv.py --dataset ArrowHead --folds 3 --tag stem2 \
        --model '{"stem_blocks": 2}' --out results/recipe_cv.jsonl
    python benchmarks/studies/tsc_recipe_cv.py --dataset OSULeaf --folds 3 --tag tok256 \
        --model '{"max_tokens": 256}' --out results/recipe_cv.jsonl

--model / --train are JSON objects of ModelConfig / TrainConfig fields changed from the
defaults; every run is on one torch thread.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", required=True)
    p.add_argument("--folds", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tag", required=True, help="the variant's name in the output")
    p.add_argument("--model", default="{}", help="ModelConfig fields (JSON)")
    p.add_argument("--train", default="{}", help="TrainConfig fields (JSON)")
    p.add_argument("--out", type=Path, required=True, help="JSON-lines file to append to")
    a = p.parse_args(argv)

    from kairo.tsc import ModelConfig, TrainConfig, evaluate, fit, load_dataset
    from kairo.tsc._grid import cv_folds

    model = ModelConfig(**json.loads(a.model))
    train = TrainConfig(**{"threads": 1, "seed": a.seed, **json.loads(a.train)})
    data = load_dataset(a.dataset, "train")
    accs = []
    for f, (fit_idx, val_idx) in enumerate(cv_folds(data.y, a.folds, a.seed)):
        res = fit(model, dataclasses.replace(train, seed=a.seed * 100 + f),
                  data.subset(fit_idx), progress_bar=False)
        accs.append(evaluate(res["model"], data.subset(val_idx))["accuracy"])
    row = {"dataset": a.dataset, "tag": a.tag, "model": json.loads(a.model),
           "train": json.loads(a.train), "folds": accs, "cv": float(np.mean(accs)),
           "loadavg": os.getloadavg()}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "a") as fh:
        fh.write(json.dumps(row) + "\n")
    print(json.dumps(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
