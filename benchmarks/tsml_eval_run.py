"""tsml-eval's evaluation runs kairo's scikit-learn estimator: ``run_classification_experiment``
fits and tests :class:`kairo.tsc.TransformerClassifier` on aeon's shipped GunPoint, one
experiment per resample, and writes its result files; the script then reads tsml-eval's accuracy
back and checks it against the same estimator fitted directly on the same split.

What tsml-eval does with a scikit-learn estimator (tsml-eval 0.6.0,
``tsml_eval/experiments/experiments.py``): ``run_classification_experiment`` label-encodes ``y``
(sorted labels → 0, 1, …), wraps the estimator in ``SklearnToTsmlClassifier(pad_unequal=True,
concatenate_channels=True, clone_estimator=False, random_state=estimator.random_state)``, which
reshapes ``X`` to [n_cases, n_channels × n_timepoints] and fits the estimator object as given
(no clone, no ``set_params``), in a thread that records memory. It never sets ``random_state``
itself: its command line (``classification_experiments.py``) builds every estimator with
``random_state=resample_id`` (unless ``--random_seed``), and this script does the same. Resample
0 is the archive's split; resample r > 0 is drawn by tsml-eval's ``stratified_resample_data(…,
random_state=r)``, as its ``load_and_run_classification_experiment`` draws it.

Per resample the script records: tsml-eval's test accuracy (line 3 of its
``<out>/<name>/Predictions/GunPoint/testResample<r>.csv``), the accuracy of a
``TransformerClassifier`` with the same parameters and ``random_state=r`` fitted directly on the
same split (the original string labels, ``X`` as [n, 1, 150]), whether the two agree (accuracy,
every prediction, probabilities to the digits tsml-eval writes), and whether kairo's own
``kairo.tsc.stratified_resample`` gives the indices of tsml-eval's
``stratified_resample_data_indices`` (and so the arrays ``stratified_resample_data`` drew).
``<out>/summary.json`` adds the versions, load averages, CPU model and wall times.

Setup (tsml-eval 0.6.0 pins aeon < 1.2 and scikit-learn < 1.7, below kairo's own environment, so
it gets a venv of its own; torch first and pinned, so pip never resolves a CUDA build; kairo
without its dependencies, since its ``aeon>=1.3`` floor would replace tsml-eval's aeon)::

    python3.11 -m venv /tmp/tsml_probe/venv
    /tmp/tsml_probe/venv/bin/pip install tsml-eval==0.6.0
    /tmp/tsml_probe/venv/bin/pip install torch==2.13.0
    /tmp/tsml_probe/venv/bin/pip install --no-deps -e /work/main
    /tmp/tsml_probe/venv/bin/pip install tqdm==4.70.1 pyyaml==6.0.4 platformdirs==4.14.9

(tsml-eval 0.6.0 brings aeon 1.1.0, scikit-learn 1.6.1, numpy 2.2.6, scipy 1.15.3, pandas
2.2.3, numba 0.61.2; the estimator needs none of kairo's other dependencies.)

Usage (from the repository root; ``--out`` relative paths are taken from there)::

    /tmp/tsml_probe/venv/bin/python benchmarks/tsml_eval_run.py \\
        --steps 100 --ensemble 1 --d-model 16 --out benchmarks/results/tsc_estimator/tsml_eval_small
    /tmp/tsml_probe/venv/bin/python benchmarks/tsml_eval_run.py --resamples 0

Options left out keep the estimator's defaults (``kairo tsc train``'s recipe: 1500 steps,
an ensemble of 2). ``--threads`` (default 1) sets torch's CPU threads for training through
``options={"threads": …}``: tsml-eval fits in a thread of its own, and one thread makes that fit
and the direct one compute the same sums in the same order.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from importlib.metadata import version
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atomic_write_json, loadavg  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--resamples", default="0,1",
                   help="comma-separated resample ids (0: the archive's split); default 0,1")
    p.add_argument("--out", default="benchmarks/results/tsc_estimator/tsml_eval",
                   help="tsml-eval's results folder and summary.json's (relative: from the "
                        "repository root)")
    p.add_argument("--dataset", default="GunPoint",
                   help="a dataset aeon ships (aeon.datasets.load_classification); default "
                        "GunPoint")
    p.add_argument("--name", default="kairo-TransformerClassifier",
                   help="the estimator's name in tsml-eval's results")
    p.add_argument("--steps", type=int, help="training steps (default: the estimator's)")
    p.add_argument("--d-model", type=int, help="model width (default: the estimator's)")
    p.add_argument("--ensemble", type=int, help="models averaged (default: the estimator's)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads while training (0: torch's default); default 1")
    return p.parse_args(argv)


def estimator_params(args) -> dict:
    params = {}
    if args.steps is not None:
        params["steps"] = args.steps
    if args.d_model is not None:
        params["d_model"] = args.d_model
    if args.ensemble is not None:
        params["ensemble"] = args.ensemble
    if args.threads:
        params["options"] = {"threads": args.threads}
    return params


def read_tsml_file(path: Path):
    """(accuracy on line 3, actual labels, predicted labels, probabilities) of a tsml-eval
    results file (lines 4 on: ``actual,predicted,,p_0,…,p_k-1,,time,,…``)."""
    lines = path.read_text().splitlines()
    acc = float(lines[2].split(",")[0])
    actual, pred, proba = [], [], []
    for line in lines[3:]:
        if not line.strip():
            continue
        fields = line.split(",")
        actual.append(int(fields[0]))
        pred.append(int(fields[1]))
        probs = []
        for f in fields[3:]:
            if f == "":
                break
            probs.append(float(f))
        proba.append(probs)
    return acc, np.array(actual), np.array(pred), np.array(proba)


def main(argv=None) -> dict:
    args = parse_args(argv)
    t_start = time.perf_counter()
    load_start = loadavg()

    from aeon.datasets import load_classification
    from tsml_eval.experiments import run_classification_experiment
    from tsml_eval.utils.resampling import (stratified_resample_data,
                                            stratified_resample_data_indices)

    from kairo.tsc import TransformerClassifier, stratified_resample
    from kairo.results import cpu_model

    resamples = [int(r) for r in args.resamples.split(",") if r.strip()]
    out = Path(args.out)
    if not out.is_absolute():
        out = ROOT / out
    out.mkdir(parents=True, exist_ok=True)
    params = estimator_params(args)

    X_tr0, y_tr0 = load_classification(args.dataset, split="train")
    X_te0, y_te0 = load_classification(args.dataset, split="test")
    X_all = np.concatenate([X_tr0, X_te0])

    runs = []
    for r in resamples:
        print(f"== resample {r} (loadavg {loadavg()})", flush=True)
        rec: dict = {"resample": r, "random_state": r, "loadavg_before": loadavg()}

        # the split: tsml-eval's draw, and kairo's indices checked against it
        if r == 0:
            X_train, y_train, X_test, y_test = X_tr0, y_tr0, X_te0, y_te0
            tsml_tr, tsml_te = (np.arange(len(y_tr0)),
                                len(y_tr0) + np.arange(len(y_te0)))
        else:
            X_train, y_train, X_test, y_test = stratified_resample_data(
                X_tr0, y_tr0, X_te0, y_te0, random_state=r)
            tsml_tr, tsml_te = stratified_resample_data_indices(y_tr0, y_te0, random_state=r)
        k_tr, k_te = stratified_resample(y_tr0, y_te0, r)
        rec["split"] = {
            "n_train": len(y_train), "n_test": len(y_test),
            "tsml_eval_drawn_by": ("the archive's split" if r == 0 else
                                   f"stratified_resample_data(random_state={r})"),
            "kairo_indices_equal_tsml_eval_indices": bool(
                np.array_equal(k_tr, tsml_tr) and np.array_equal(k_te, tsml_te)),
            "kairo_arrays_equal_tsml_eval_arrays": bool(
                np.array_equal(X_all[k_tr], X_train) and np.array_equal(X_all[k_te], X_test)
                and np.array_equal(np.concatenate([y_tr0, y_te0])[k_tr].astype(str),
                                   np.asarray(y_train).astype(str))
                and np.array_equal(np.concatenate([y_tr0, y_te0])[k_te].astype(str),
                                   np.asarray(y_test).astype(str))),
        }

        # tsml-eval's experiment
        est = TransformerClassifier(**params, random_state=r)
        t0 = time.perf_counter()
        run_classification_experiment(X_train, y_train, X_test, y_test, est, str(out),
                                      classifier_name=args.name, dataset_name=args.dataset,
                                      resample_id=r)
        rec["tsml_eval_wall_s"] = round(time.perf_counter() - t0, 2)
        path = out / args.name / "Predictions" / args.dataset / f"testResample{r}.csv"
        acc_file, actual, pred_file, proba_file = read_tsml_file(path)
        rec["tsml_eval_file"] = str(path.relative_to(ROOT) if path.is_relative_to(ROOT)
                                    else path)
        rec["tsml_eval_accuracy"] = acc_file

        # the same estimator fitted directly
        direct = TransformerClassifier(**params, random_state=r)
        t0 = time.perf_counter()
        direct.fit(X_train, y_train)
        proba = direct.predict_proba(X_test)
        rec["direct_wall_s"] = round(time.perf_counter() - t0, 2)
        pred = direct.classes_[proba.argmax(axis=1)]
        acc_direct = float(np.mean(pred == np.asarray(y_test)))
        rec["direct_accuracy"] = acc_direct
        rec["direct_recipe"] = direct.recipe_
        # tsml-eval's labels are the indices of the sorted labels, as classes_ is sorted
        codes = {c: i for i, c in enumerate(direct.classes_.tolist())}
        pred_codes = np.array([codes[c] for c in pred.tolist()])
        actual_codes = np.array([codes[c] for c in np.asarray(y_test).tolist()])
        rec["agree"] = {
            "accuracy": acc_file == acc_direct,
            "actual_labels": bool(np.array_equal(actual, actual_codes)),
            "predictions": bool(np.array_equal(pred_file, pred_codes)),
            "max_abs_probability_diff": float(np.abs(proba_file - proba).max()),
        }
        rec["loadavg_after"] = loadavg()
        print(f"   tsml-eval accuracy {acc_file:.4f}, direct {acc_direct:.4f}, "
              f"agree {rec['agree']}", flush=True)
        runs.append(rec)

    import aeon
    import sklearn
    import torch

    summary = {
        "script": "benchmarks/tsml_eval_run.py",
        "argv": sys.argv[1:] if argv is None else list(argv),
        "dataset": args.dataset,
        "estimator": "kairo.tsc.TransformerClassifier",
        "estimator_params": {k: v for k, v in TransformerClassifier(**params).get_params()
                             .items() if k != "random_state"},
        "random_state": "resample id (tsml-eval's classification_experiments convention)",
        "resamples": runs,
        "all_agree": all(r["agree"]["accuracy"] and r["agree"]["predictions"] for r in runs),
        "kairo_resampler_matches_tsml_eval": all(
            r["split"]["kairo_indices_equal_tsml_eval_indices"]
            and r["split"]["kairo_arrays_equal_tsml_eval_arrays"] for r in runs),
        "versions": {"tsml-eval": version("tsml-eval"), "tsml": version("tsml"),
                     "aeon": aeon.__version__, "scikit-learn": sklearn.__version__,
                     "torch": torch.__version__, "numpy": np.__version__,
                     "kairo-circuits": version("kairo-circuits"),
                     "python": sys.version.split()[0]},
        "loadavg_start": load_start,
        "loadavg_end": loadavg(),
        "os_getloadavg_end": list(os.getloadavg()),
        "cpu_model": cpu_model(),
        "cpus": os.cpu_count(),
        "wall_s": round(time.perf_counter() - t_start, 2),
    }
    atomic_write_json(out / "summary.json", summary)
    print(f"wrote {out / 'summary.json'}", flush=True)
    return summary


if __name__ == "__main__":
    main()
