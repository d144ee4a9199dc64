"""Pool several `kairo tsc compare-pooling` runs (e.g. one per dataset or per encoder, run on
different days) into one comparison: their runs.csv tables are joined, checked for overlap,
and summarized and tested with compare-pooling's own functions (mean ± sd per head, each head
against mean pooling paired by (dataset, seed), Wilcoxon signed-rank), as if one run had
trained them all.

Usage::

    python benchmarks/studies/pooling_combine.py RUN_DIR[:DATASET,...] [...] --out OUT_DIR

``RUN_DIR:GunPoint,ArrowHead`` takes only those datasets' runs from a folder (e.g. the sets
whose default changed since it was run are taken from a newer folder instead).

Writes OUT_DIR/runs.csv, summary.csv, tests.csv, pooling.png and sources.json (the folders and
each one's config.yaml, so differing settings stay visible).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

NEED = {"dataset", "encoder", "pool", "seed", "test_accuracy", "val_accuracy", "test_macro_f1",
        "seconds", "n_params"}
KEY = ["dataset", "encoder", "pool", "seed"]


def parse_source(arg: str) -> tuple[Path, list[str] | None]:
    """``DIR`` or ``DIR:DATASET,...`` → (folder, the datasets to take or None for all)."""
    head, sep, tail = arg.rpartition(":")
    if not sep or "/" in tail or not head:
        return Path(arg), None
    names = [n.strip() for n in tail.split(",") if n.strip()]
    if not names:
        raise ValueError(f"{arg}: expected DIR or DIR:DATASET[,DATASET...], got no dataset "
                         f"after ':'")
    return Path(head), names


def read_runs(dirs) -> pd.DataFrame:
    """The runs.csv of every folder (``DIR`` or ``DIR:DATASET,...``), joined; ValueError naming
    the folder when one is missing or malformed, lacks a dataset asked of it, or when two
    folders hold the same (dataset, encoder, pool, seed)."""
    parts = []
    for arg in dirs:
        d, only = parse_source(str(arg))
        path = d / "runs.csv"
        try:
            df = pd.read_csv(path)
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise ValueError(f"{path}: cannot read a compare-pooling runs table ({exc})") from None
        if not NEED <= set(df.columns):
            raise ValueError(f"{path}: expected a runs.csv of kairo tsc compare-pooling with "
                             f"columns {sorted(NEED)}; it has {sorted(df.columns)}")
        if only is not None:
            missing = sorted(set(only) - set(df.dataset))
            if missing:
                raise ValueError(f"{path}: has no runs of {', '.join(missing)} (it has "
                                 f"{', '.join(sorted(set(df.dataset)))})")
            df = df[df.dataset.isin(only)]
        parts.append(df.assign(source=str(arg)))
    df = pd.concat(parts, ignore_index=True)
    dup = df[df.duplicated(KEY, keep=False)]
    if len(dup):
        first = dup.iloc[0]
        raise ValueError(f"runs of {dict(first[KEY])} appear in "
                         f"{sorted(set(dup[(dup[KEY] == first[KEY]).all(axis=1)].source))}: "
                         f"each (dataset, encoder, pool, seed) may come from one folder only")
    return df


def main(argv=None) -> int:
    from kairo.tsc._compare import comparison_figure, pooling_tests
    from kairo.tsc._grid import summarize
    from kairo.results import atomic_folder

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dirs", nargs="+",
                        help="compare-pooling result folders, each DIR or DIR:DATASET,... "
                             "(only those datasets' runs)")
    parser.add_argument("--out", type=Path, required=True, help="folder to write (new)")
    args = parser.parse_args(argv)
    if args.out.exists():
        parser.error(f"--out {args.out} exists; choose a new folder")
    try:
        df = read_runs(args.dirs)
    except ValueError as exc:
        parser.error(str(exc))
    summary, tests = summarize(df.drop(columns="source")), pooling_tests(df)
    sources = {}
    for arg in args.dirs:
        d = parse_source(arg)[0]
        cfg = d / "config.yaml"
        sources[arg] = cfg.read_text() if cfg.is_file() else None
    # written into a temporary sibling and renamed: no half-written result folder
    with atomic_folder(args.out) as tmp:
        df.to_csv(tmp / "runs.csv", index=False)
        summary.to_csv(tmp / "summary.csv", index=False)
        tests.to_csv(tmp / "tests.csv", index=False)
        comparison_figure(summary).savefig(tmp / "pooling.png", dpi=120)
        (tmp / "sources.json").write_text(json.dumps(sources, indent=1))
    print(f"{len(df)} runs from {len(args.dirs)} folders; wrote {args.out}")
    for r in tests.itertuples():
        print(f"  {r.encoder:11s} {r.pool:9s} Δ {r.mean_diff:+.3f}  "
              f"{r.wins}/{r.ties}/{r.losses}  p {r.wilcoxon_p:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
