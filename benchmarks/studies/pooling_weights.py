"""Where do the trained attention pools look? The pooling weights of the compare-pooling models.

docs/tsc.md's pooling comparison found that neither attention pooling head beats mean
pooling. This study asks why: it trains the comparison's attention and multi-head attention
pools (both encoders, the four datasets, the comparison's exact options) and summarises each
model's pooling weights over its whole test split with ``kairo tsc maps`` (``pooling.csv``):

- effective fraction of tokens, exp(entropy) / tokens: 1 = uniform weights, i.e. mean pooling;
- peak ratio, the largest weight × tokens: 1 = uniform.

Every run is ``kairo tsc train`` then ``kairo tsc maps`` through the CLI, one process per run.

    python benchmarks/studies/pooling_weights.py --seeds 0,1,2 \
        --out benchmarks/results/pooling_weights.json            # 48 models, ~19 min on 2 cores
    python benchmarks/studies/pooling_weights.py --quick  # ItalyPowerDemand, 3 epochs: smoke run
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # benchmarks/: _common
from _common import atomic_write_json, loadavg  # noqa: E402

DATASETS = ("GunPoint", "ArrowHead", "ItalyPowerDemand", "JapaneseVowels")
# the options of docs/tsc.md's compare-pooling commands
OPTIONS = ["--blocks", "2", "--d-model", "64", "--tokens", "step", "--lr", "2e-3",
           "--epochs", "300", "--patience", "100"]
QUICK = ["--blocks", "1", "--d-model", "16", "--n-heads", "2", "--epochs", "3",
         "--patience", "0"]


def one_run(job: dict) -> dict:
    """Train one model and summarise its pooling weights over the test split (in a worker)."""
    import json

    import pandas as pd

    from kairo.cli import main

    out = Path(job["tmp"]) / f"{job['dataset']}_{job['encoder']}_{job['pool']}_{job['seed']}"
    extra = ["--znorm", "series"] if job["dataset"] == "JapaneseVowels" else []
    t0 = time.perf_counter()
    rc = main(["tsc", "train", "--dataset", job["dataset"], "--encoder", job["encoder"],
               "--pool", job["pool"], "--seed", str(job["seed"]), "--threads", "1",
               *job["options"], *extra, "--out", str(out / "train")])
    if rc != 0:
        raise RuntimeError(f"kairo tsc train failed for {job}")
    rc = main(["tsc", "maps", "--model", str(out / "train" / "model.pt"), "--series", "0",
               "--out", str(out / "maps")])
    if rc != 0:
        raise RuntimeError(f"kairo tsc maps failed for {job}")
    table = pd.read_csv(out / "maps" / "pooling.csv")
    metrics = json.loads((out / "train" / "metrics.json").read_text())
    per_head = table.groupby("head")[["effective_fraction", "peak_ratio"]].median()
    return {**{k: job[k] for k in ("dataset", "encoder", "pool", "seed")},
            "test_accuracy": metrics["accuracy"],
            "series": int(table["series"].nunique()), "heads": int(table["head"].nunique()),
            "effective_fraction_median": float(table["effective_fraction"].median()),
            "effective_fraction_min": float(table["effective_fraction"].min()),
            "peak_ratio_median": float(table["peak_ratio"].median()),
            "peak_ratio_max": float(table["peak_ratio"].max()),
            "per_head_effective_fraction": per_head["effective_fraction"].round(4).tolist(),
            "seconds": round(time.perf_counter() - t0, 1)}


def _seeds(text: str) -> list[int]:
    try:
        seeds = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}")
    if any(s < 0 for s in seeds):
        raise argparse.ArgumentTypeError(f"seeds must be ≥ 0, got {text!r}")
    return seeds


def main(argv=None) -> int:
    from kairo.results import environment

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=",".join(DATASETS))
    ap.add_argument("--encoders", default="resnet,transformer")
    ap.add_argument("--pools", default="attention,mha")
    ap.add_argument("--seeds", type=_seeds, default=[0], help="comma-separated seeds")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="ItalyPowerDemand, tiny models")
    ap.add_argument("--out", type=Path, default=None, help="JSON results file")
    args = ap.parse_args(argv)
    datasets = ["ItalyPowerDemand"] if args.quick else args.datasets.split(",")
    options = QUICK if args.quick else OPTIONS
    with tempfile.TemporaryDirectory(prefix="kairo-poolw-") as tmp:
        jobs = [{"dataset": d, "encoder": e, "pool": p, "seed": s, "options": options,
                 "tmp": tmp}
                for d in datasets for e in args.encoders.split(",")
                for p in args.pools.split(",") for s in args.seeds]
        load0 = loadavg()
        if args.workers <= 1:
            runs = [one_run(job) for job in jobs]
        else:
            with ProcessPoolExecutor(args.workers) as ex:
                runs = list(ex.map(one_run, jobs))
    print(f"{'dataset':18s} {'encoder':11s} {'pool':9s} seed  acc    eff.frac (min)    "
          f"peak (max)")
    for r in runs:
        print(f"{r['dataset']:18s} {r['encoder']:11s} {r['pool']:9s} {r['seed']:4d}  "
              f"{r['test_accuracy']:.3f}  {r['effective_fraction_median']:.4f} "
              f"({r['effective_fraction_min']:.4f})  {r['peak_ratio_median']:.2f} "
              f"({r['peak_ratio_max']:.2f})")
    result = {"benchmark": "pooling_weights",
              "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "python benchmarks/studies/pooling_weights.py "
                         + " ".join(sys.argv[1:] if argv is None else argv),
              "options": options, "quick": args.quick, "machine": environment(),
              "loadavg_before": load0, "loadavg_after": loadavg(), "runs": runs}
    if args.out:
        atomic_write_json(args.out, result)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
