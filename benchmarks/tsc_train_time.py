"""Issue 64's Target 3: how long the default model (``kairo tsc train``, an ensemble of two
trained side by side on two cores) takes on GunPoint- to ArrowHead-sized sets, what bounds
that time, and aeon's MiniRocket fitted on the same split in the same run.

Per dataset:

- ``default``: ``kairo tsc train --dataset D`` as a user runs it (the command's own wall
  time, test accuracy, and what the recipe resolved to);
- ``one member``: one member of that ensemble on one thread, once as the recipe resolves
  it and once with sharpness-aware minimization flipped (SAM takes two gradient evaluations
  per optimizer step), each with its optimizer steps and seconds per step: the budget
  (``steps``) times the cost of a step is what bounds the time;
- ``minirocket``: aeon's MiniRocketClassifier (its defaults, one thread) fitted on the same
  z-normalized split, scored on the test split.

Run on a quiet machine (the load average is recorded beside each section; compare ratios,
not absolute seconds)::

    python benchmarks/tsc_train_time.py --out benchmarks/results/tsc_train_time.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atomic_write_json, loadavg, section  # noqa: E402

DATASETS = ("GunPoint", "ArrowHead")


def _default(name: str, rec: dict) -> None:
    from kairo.cli import execute, make_config

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "run"
        t0 = time.perf_counter()
        execute("tsc train", make_config("tsc train", {"dataset": name}), out=out,
                store="none")
        rec["command_s"] = round(time.perf_counter() - t0, 2)
        metrics = json.loads((out / "metrics.json").read_text())
        summary = json.loads((out / "summary.json").read_text())
        run = json.loads((out / "run.json").read_text())
    rec.update(test_accuracy=metrics["accuracy"], train_s=round(summary["train_seconds"], 2),
               members=[{k: m[k] for k in ("seed", "test_accuracy", "train_seconds")}
                        for m in metrics["members"]],
               resolved={k: run["resolved"][k] for k in ("sam", "mixup", "cutmix", "time_warp",
                                                         "stem_blocks") if k in run["resolved"]})


def _member(name: str, sam: str | None, rec: dict) -> None:
    from kairo.tsc import TransformerClassifier, load_dataset

    train, test = load_dataset(name, "train"), load_dataset(name, "test")
    labels = np.asarray(train.classes)
    params = {} if sam is None else {"sam": sam}
    est = TransformerClassifier(ensemble=1, random_state=0, options={"threads": 1}, **params)
    t0 = time.perf_counter()
    est.fit(train.x, labels[train.y])
    fit_s = time.perf_counter() - t0
    steps = est.configs()[1].steps
    rec.update(fit_s=round(fit_s, 2), sam=est.recipe_["sam"] in (True, "on"), steps=steps,
               ms_per_step=round(1000 * fit_s / steps, 2),
               test_accuracy=float(est.score(test.x, labels[test.y])))


def _minirocket(name: str, rec: dict) -> None:
    import torch
    from aeon.classification.convolution_based import MiniRocketClassifier

    from kairo.tsc import load_dataset, znormalize

    torch.set_num_threads(1)
    train, test = load_dataset(name, "train"), load_dataset(name, "test")
    clf = MiniRocketClassifier(random_state=0, n_jobs=1)
    t0 = time.perf_counter()
    clf.fit(znormalize(train.x).astype(np.float64), train.y)
    rec["fit_s"] = round(time.perf_counter() - t0, 2)
    rec["test_accuracy"] = float(np.mean(clf.predict(znormalize(test.x).astype(np.float64))
                                         == test.y))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--datasets", default=",".join(DATASETS))
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    from kairo.results import environment

    results: dict = {"environment": environment(), "loadavg_start": loadavg(), "sections": {}}
    for name in a.datasets.split(","):
        with section(results, f"{name} default") as rec:
            _default(name, rec)
        for sam in (None, "flipped"):
            label = "recipe" if sam is None else "sam flipped"
            with section(results, f"{name} one member, {label}") as rec:
                if sam is None:
                    _member(name, None, rec)
                else:
                    was = results["sections"][f"{name} one member, recipe"]["sam"]
                    _member(name, "off" if was else "on", rec)
        with section(results, f"{name} minirocket") as rec:
            _minirocket(name, rec)
    results["loadavg_end"] = loadavg()
    atomic_write_json(a.out, results)
    print(json.dumps({k: {kk: v.get(kk) for kk in ("command_s", "fit_s", "test_accuracy",
                                                   "ms_per_step", "sam")}
                      for k, v in results["sections"].items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
