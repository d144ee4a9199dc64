"""Re-deciding the default recipe's rules on training data only: each rule of
``kairo.tsc.resolve_recipe`` against its opposite, by stratified k-fold cross-validation
inside each training split of the development collection (the sets the rules were first
chosen on by test accuracy; docs/tsc.md, "The recipe"). The test splits are never read.

For every dataset the script trains the recipe as ``auto`` resolves it, and once per rule the
recipe with that rule's choice flipped on this set (on → off, off → on; the stem's depth 3 ↔ 1
blocks); each variant is k-fold CV of ``TransformerClassifier(ensemble=1)`` (fold f of seed s
trains with random_state 1000·s + f, one torch thread), folds run two at a time. Rows append to
a JSON-lines file; a row already there is not trained again, so a stopped study resumes.

The decision (written before any row existed): for rule R and dataset d let Δ_d = CV accuracy of
the recipe − CV accuracy with R flipped, and m_d one training series of d as accuracy (1 / the
training split's size). R is **kept** when mean_d Δ_d ≥ 0 and the sets with Δ_d > m_d are at
least as many as those with Δ_d < −m_d; otherwise it is **not supported** by the training data,
and the flipped choice is the candidate to test next on sets never used to choose.

    python benchmarks/studies/tsc_rules_cv.py run --datasets ItalyPowerDemand,GunPoint \\
        --folds 5 --out benchmarks/results/tsc_attention/rules_cv/rows.jsonl
    python benchmarks/studies/tsc_rules_cv.py decide \\
        --rows benchmarks/results/tsc_attention/rules_cv/rows.jsonl \\
        --out benchmarks/results/tsc_attention/rules_cv/decision.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

# the development collection that ships with aeon (the other sets of the collection, PigCVP,
# Coffee, PLAID and MNIST-1D, can be added with --datasets)
DEVELOPMENT = ("ItalyPowerDemand", "GunPoint", "ArrowHead", "Covid3Month_disc", "OSULeaf",
               "PickupGestureWiimoteZ_eq", "ACSF1", "JapaneseVowels", "BasicMotions")
RULES = ("sam", "mixup", "time_warp", "cutmix", "stem_blocks", "stem_dilation")


def flipped(rule: str, recipe: dict) -> dict:
    """The estimator parameters/options that flip ``rule``'s choice in ``recipe``."""
    if rule in ("sam", "mixup", "cutmix"):
        return {rule: "off" if recipe[rule] else "on"}
    if rule == "time_warp":
        return {"time_warp": 0.0 if recipe["time_warp"] else 0.2}
    if rule == "stem_blocks":
        return {"options": {"stem_blocks": 1 if recipe.get("stem_blocks", 1) > 1 else 3}}
    if rule == "stem_dilation":
        dilated = max(recipe.get("stem_dilations", [1])) > 1
        return {"options": {"stem_dilation": "off" if dilated else "auto"}} if dilated else {}
    raise ValueError(f"unknown rule {rule!r}")


def _variants(data):
    """(name, estimator parameters) for the recipe and each rule flipped; a flip the recipe
    cannot express on this set (the stem's dilation on short series) is left out."""
    from kairo.tsc import ModelConfig, TrainConfig, resolve_recipe, series_stats

    recipe = resolve_recipe(series_stats(data), ModelConfig(), TrainConfig())
    out = [("recipe", {})]
    for rule in RULES:
        change = flipped(rule, recipe)
        if rule == "mixup" and change.get("mixup") == "on" and recipe["cutmix"]:
            change["cutmix"] = "off"          # a batch is either blended or cut
        if change:
            out.append((f"{rule} flipped", change))
    return recipe, out


def _cv(params: dict, x, y, folds: int, seed: int, steps: int = 0) -> list[float]:
    """Accuracy on each held-out fold; ``x`` an array or a list of series (unequal lengths)."""
    from joblib import Parallel, delayed
    from sklearn.model_selection import StratifiedKFold

    from kairo.tsc import TransformerClassifier

    options = {"threads": 1, **params.pop("options", {})}
    if steps:
        params["steps"] = steps

    def take(idx):
        return x[idx] if isinstance(x, np.ndarray) else [x[i] for i in idx]

    def one(f, fit, held):
        est = TransformerClassifier(ensemble=1, random_state=1000 * seed + f, options=options,
                                    **params)
        return float(est.fit(take(fit), y[fit]).score(take(held), y[held]))

    splits = StratifiedKFold(folds, shuffle=True, random_state=seed).split(np.zeros(len(y)), y)
    # two folds at a time, one torch thread each
    return Parallel(n_jobs=2)(delayed(one)(f, a, b) for f, (a, b) in enumerate(splits))


def run(args) -> None:
    from kairo.tsc import load_dataset

    done = set()
    if args.out.is_file():
        done = {(r["dataset"], r["variant"], r["folds"], r["seed"], r["steps"])
                for r in map(json.loads, args.out.read_text().splitlines())}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for name in args.datasets.split(","):
        data = load_dataset(name, "train")              # the training split only
        x = data.x if data.mask is None else [s[:, :n] for s, n in zip(data.x, data.lengths)]
        y = np.asarray(data.classes)[data.y]
        recipe, variants = _variants(data)
        for variant, params in variants:
            if (name, variant, args.folds, args.seed, args.steps or "default") in done:
                continue
            t0, load = time.time(), os.getloadavg()
            accs = _cv(dict(params), x, y, args.folds, args.seed, args.steps)
            row = {"dataset": name, "variant": variant, "params": params, "folds": args.folds,
                   "seed": args.seed, "steps": args.steps or "default", "fold_accuracy": accs, "cv": float(np.mean(accs)),
                   "n_train": len(data), "recipe": recipe, "seconds": time.time() - t0,
                   "loadavg_start": load, "loadavg_end": os.getloadavg()}
            with open(args.out, "a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(f"{name:26s} {variant:22s} cv {row['cv']:.4f} ({row['seconds']:.0f} s)",
                  flush=True)


def decide(rows: list[dict]) -> dict:
    """The decision of the module docstring, per rule, from the rows of ``run``."""
    base = {(r["dataset"], r["seed"]): r["cv"] for r in rows if r["variant"] == "recipe"}
    out = {}
    for rule in RULES:
        per_seed: dict[str, list] = {}          # a set split with several seeds: their mean
        for r in rows:
            if r["variant"] == f"{rule} flipped" and (r["dataset"], r["seed"]) in base:
                per_seed.setdefault(r["dataset"], []).append(
                    (base[(r["dataset"], r["seed"])] - r["cv"], 1.0 / r["n_train"]))
        deltas = {k: (float(np.mean([d for d, _ in v])), v[0][1]) for k, v in per_seed.items()}
        if not deltas:
            continue
        # a difference of exactly one series is within the margin: fold accuracies are
        # ratios, so their mean carries rounding that must not tip it over
        up = sum(d > m + 1e-9 for d, m in deltas.values())
        down = sum(d < -m - 1e-9 for d, m in deltas.values())
        mean = float(np.mean([d for d, _ in deltas.values()]))
        out[rule] = {"delta": {k: d for k, (d, _) in deltas.items()}, "mean_delta": mean,
                     "recipe_better": up, "flip_better": down,
                     "verdict": "kept" if mean >= 0 and up >= down else "not supported"}
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--datasets", default=",".join(DEVELOPMENT))
    r.add_argument("--folds", type=int, default=5)
    r.add_argument("--seed", type=int, default=0)
    r.add_argument("--steps", type=int, default=0,
                   help="optimizer steps per model; 0 = the recipe's (a smaller budget is a "
                        "smoke test, not evidence)")
    r.add_argument("--out", type=Path, required=True)
    d = sub.add_parser("decide")
    d.add_argument("--rows", type=Path, required=True)
    d.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    if a.cmd == "run":
        run(a)
        return 0
    rows = [json.loads(line) for line in a.rows.read_text().splitlines() if line.strip()]
    result = {"rows": str(a.rows), "decision": decide(rows)}
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from _common import atomic_write_json

    atomic_write_json(a.out, result)
    print(json.dumps(result["decision"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
