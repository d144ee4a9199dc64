"""Batch-norm statistics of kairo's ResNet after training: the running averages PyTorch leaves
(momentum 0.1, the default ``--bn-stats running``) against statistics recomputed over the
whole training split (``--bn-stats recompute``), scored on the SAME trained weights.

Each run is exactly a refit run of ``kairo tsc benchmark --encoders resnet --pools mean
--blocks 3`` (no hold-out, weights of the lowest training loss); its model is scored on the
test split as trained, then again after ``recompute_bn_stats`` on its training series. The
pairing removes the seed-to-seed spread (5–7 test series on ArrowHead) from the comparison.
Fawaz et al.'s five ResNet runs per dataset (``_published.py``) are the reference.

Protocol, fixed before the first run (2026-12-01): the datasets, seeds, epochs and batch sizes
are those of docs/tsc.md's benchmark commands (ArrowHead seeds 0–19, GunPoint 0–9,
ItalyPowerDemand 0–2 at 600 epochs / batch 8; OSULeaf 0–5, ACSF1 0–1 at 300 / batch 16).
``recompute`` becomes the default only if (a) on no dataset its mean test accuracy is lower
than ``running``'s by more than one test series, and (b) the mean of the per-dataset paired
differences is above zero. Otherwise the default stays and the result is reported as it is.

Second protocol, fixed after the first three datasets of the first had run (ArrowHead,
GunPoint, ItalyPowerDemand: no difference at 600 epochs) and before any run of its own:
``--protocol train`` scores the same pairs under ``kairo tsc train --encoder resnet --pool
mean``'s defaults (2 blocks, 200 epochs, batch 32, a 20 % hold-out with early stopping,
patience 30), seeds 0–2 on all five datasets, statistics recomputed over the fit series only.
There training stops while the weights still move, which is where the running averages lag.
``recompute`` becomes the default if the first protocol's rule (a) holds and here its mean is
higher on at least four of the five datasets and lower on none by more than one test series.

    python benchmarks/studies/resnet_bn_stats.py --datasets ArrowHead,GunPoint,ItalyPowerDemand \\
        --out benchmarks/results/resnet_bn_stats_short.json            # ~45 min on 2 cores
    python benchmarks/studies/resnet_bn_stats.py --datasets OSULeaf,ACSF1 \\
        --out benchmarks/results/resnet_bn_stats_long.json             # ~45 min on 2 cores
    python benchmarks/studies/resnet_bn_stats.py --protocol train --workers 1 \
        --out benchmarks/results/resnet_bn_stats_train.json            # ~26 min
    python benchmarks/studies/resnet_bn_stats.py --quick   # GunPoint, 2 seeds × 5 epochs
"""

from __future__ import annotations

import argparse
import copy
import functools
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # benchmarks/: _common
from _common import atomic_write_json, loadavg  # noqa: E402

# dataset → (seeds, epochs, batch): the settings of docs/tsc.md's benchmark commands
PROTOCOL = {"ArrowHead": (20, 600, 8), "GunPoint": (10, 600, 8),
            "ItalyPowerDemand": (3, 600, 8), "OSULeaf": (6, 300, 16), "ACSF1": (2, 300, 16)}


@functools.lru_cache(maxsize=None)
def _splits(dataset: str, length: int):
    """The train and test splits, loaded once per worker process."""
    from kairo.tsc import load_dataset

    return (load_dataset(dataset, "train", mnist1d_length=length),
            load_dataset(dataset, "test", mnist1d_length=length))


def paired_run(job: dict) -> dict:
    """One refit run (in a worker): fit, test as trained, recompute the statistics, test."""
    import torch

    from kairo.tsc import ModelConfig, TrainConfig, evaluate, fit, recompute_bn_stats
    from kairo.tsc._train import scale_input

    torch.set_num_threads(job["threads"])
    train, test = _splits(job["dataset"], job["mnist1d_length"])
    t0 = time.perf_counter()
    # trained with the running averages whatever the default: the copy below is recomputed
    res = fit(ModelConfig(**job["model"]),
              TrainConfig(**{**job["train"], "bn_stats": "running"}), train,
              progress_bar=False)
    model = res["model"]
    running = evaluate(model, test)["accuracy"]
    recomputed = copy.deepcopy(model)
    fit_idx = res["fit_index"]                     # the series trained on, as fit recomputes
    x = torch.from_numpy(scale_input(train.x, train.mask, res["meta"])[fit_idx])
    mask = None if train.mask is None else torch.from_numpy(train.mask[fit_idx])
    n_bn = recompute_bn_stats(recomputed, x, mask)
    recompute = evaluate(recomputed, test)["accuracy"]
    return {"dataset": job["dataset"], "seed": job["train"]["seed"],
            "running": running, "recompute": recompute, "n_test": len(test),
            "n_bn_layers": n_bn, "best_epoch": res["best_epoch"],
            "seconds": round(time.perf_counter() - t0, 1)}


def summarize(rows, datasets) -> dict:
    import numpy as np
    from scipy import stats

    from kairo.tsc._published import RESNET_FAWAZ2019_RUNS
    from kairo.tsc._reference import resnet_test

    out = {}
    for ds in datasets:
        r = [row for row in rows if row["dataset"] == ds]
        a = np.array([row["running"] for row in r])
        b = np.array([row["recompute"] for row in r])
        d = b - a
        rec = {"seeds": [row["seed"] for row in r], "n_test": r[0]["n_test"],
               "running": a.tolist(), "recompute": b.tolist(),
               "running_mean": float(a.mean()), "recompute_mean": float(b.mean()),
               "running_sd": float(a.std(ddof=1)) if len(a) > 1 else 0.0,
               "recompute_sd": float(b.std(ddof=1)) if len(b) > 1 else 0.0,
               "paired_diff": float(d.mean()),
               "wins_ties_losses": [int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())],
               "paired_t_p": (float(stats.ttest_rel(b, a).pvalue)
                              if len(d) > 1 and d.std() > 0 else float("nan")),
               "resnet_fawaz_mean": (float(np.mean(RESNET_FAWAZ2019_RUNS[ds]))
                                     if ds in RESNET_FAWAZ2019_RUNS else None),
               "welch_p_vs_resnet_running": resnet_test(a, ds),
               "welch_p_vs_resnet_recompute": resnet_test(b, ds)}
        out[ds] = rec
    return out


def _in_series(summary: dict) -> dict:
    """Mean paired difference per dataset in test series, rounded so that exactly one series
    is −1 (0.92 − 0.93 of 100 is −1.0000000000000009 in floats)."""
    return {ds: round(s["paired_diff"] * s["n_test"], 9) for ds, s in summary.items()}


def decide(summary: dict, train_summary: dict | None = None) -> dict:
    """The rules fixed before the runs (module docstring); each needs all five datasets."""
    for name, summ in (("benchmark", summary), ("train", train_summary)):
        missing = [] if summ is None else sorted(set(PROTOCOL) - set(summ))
        if missing:
            return {"decided": False, "why": f"the {name} protocol needs all five datasets; "
                                             f"missing {missing}"}
    worst = _in_series(summary)
    a = all(v >= -1 for v in worst.values())
    mean_diff = sum(s["paired_diff"] for s in summary.values()) / len(summary)
    out = {"decided": True, "no_dataset_loses_more_than_one_series": a,
           "mean_paired_diff": mean_diff, "adopt_recompute": bool(a and mean_diff > 0),
           "diff_in_test_series": worst}
    if train_summary is not None:
        series = _in_series(train_summary)
        higher = sum(v > 0 for v in series.values())
        ok = higher >= 4 and all(v >= -1 for v in series.values())
        out.update({"train_diff_in_test_series": series, "train_datasets_higher": higher,
                    "train_rule": ok, "adopt_recompute": bool(out["adopt_recompute"] or
                                                              (a and ok))})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--datasets", default=",".join(PROTOCOL))
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="GunPoint, 2 seeds × 5 epochs")
    ap.add_argument("--protocol", choices=("benchmark", "train"), default="benchmark",
                    help="benchmark: refit runs of kairo tsc benchmark (PROTOCOL); train: kairo "
                         "tsc train's defaults, seeds 0-2")
    ap.add_argument("--decide", nargs="*", default=None, metavar="JSON",
                    help="apply the rules to the summaries of these result files (each file's "
                         "protocol is read from it) and print the decision")
    ap.add_argument("--out", default="benchmarks/results/resnet_bn_stats.json")
    args = ap.parse_args(argv)

    if args.decide is not None:
        import json

        merged = {"benchmark": {}, "train": {}}
        for p in args.decide:
            d = json.loads(Path(p).read_text())
            merged[d.get("protocol_name", "benchmark")].update(d["summary"])
        print(json.dumps(decide(merged["benchmark"], merged["train"] or None), indent=2))
        return 0

    from kairo.tsc import ModelConfig, TrainConfig
    from kairo._jobs import map_jobs

    datasets = [d.strip() for d in args.datasets.split(",") if d.strip()]
    bad = [d for d in datasets if d not in PROTOCOL]
    if bad or not datasets:
        ap.error(f"--datasets: choose from {', '.join(PROTOCOL)}; got {bad or 'nothing'}")
    if args.protocol == "train":      # kairo tsc train's defaults: hold-out, early stopping
        t = TrainConfig()
        protocol = {d: (3, t.epochs, t.batch) for d in datasets}
        model = ModelConfig(encoder="resnet", pool="mean").__dict__
        val = t.val_fraction
    else:
        protocol = {d: PROTOCOL[d] for d in datasets}
        model = ModelConfig(encoder="resnet", pool="mean", blocks=3).__dict__
        val = 0.0
    if args.quick:
        protocol = {"GunPoint": (2, 5, 8)}
    jobs = []
    for ds, (seeds, epochs, batch) in protocol.items():
        for seed in range(seeds):
            train = TrainConfig(epochs=epochs, batch=batch, val_fraction=val, seed=seed,
                                threads=1).__dict__
            jobs.append({"dataset": ds, "model": dict(model), "train": dict(train),
                         "threads": 1, "mnist1d_length": 40})
    import torch

    t0, load0 = time.perf_counter(), loadavg()
    rows = map_jobs(paired_run, jobs, workers=args.workers, desc="runs", progress_bar=False)
    summary = summarize(rows, list(protocol))
    result = {"benchmark": "resnet_bn_stats", "protocol_name": args.protocol,
              "model": model, "val_fraction": val, "protocol": {k: dict(zip(
                  ("seeds", "epochs", "batch"), v)) for k, v in protocol.items()},
              "torch": torch.__version__, "python": platform.python_version(),
              "workers": args.workers, "wall_s": round(time.perf_counter() - t0, 1),
              "loadavg_before": load0, "loadavg_after": loadavg(),
              "runs": rows, "summary": summary,
              "decision": decide(summary) if args.protocol == "benchmark" else None}
    atomic_write_json(Path(args.out), result)
    for ds, s in summary.items():
        print(f"{ds:17s} running {s['running_mean']:.3f} ± {s['running_sd']:.3f}  recompute "
              f"{s['recompute_mean']:.3f} ± {s['recompute_sd']:.3f}  diff "
              f"{s['paired_diff']:+.3f} (w/t/l {s['wins_ties_losses']}, p "
              f"{s['paired_t_p']:.2f})  ResNet {s['resnet_fawaz_mean']}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
