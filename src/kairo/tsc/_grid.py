"""Running a grid of training runs, shared by ``kairo tsc compare-pooling`` and ``kairo tsc
benchmark``: the jobs (dataset × candidate × seed, × fold for cross-validation, × ensemble
member), the data they load (cached per process, a bake-off resample on request), the grid
itself — each job one ``kairo tsc train`` run, run and resumed as a sweep's points —, what the
grid's "auto" values resolved to, the mean ± sd of its runs, and ensembles averaged from their
members' probabilities."""

from __future__ import annotations

import dataclasses
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from kairo._errors import DataError, KairoError
from kairo.tsc._config import model_config, train_config


__all__ = ["run_grid", "summarize", "cv_folds", "canonical_datasets", "ensemble_runs",
           "read_member_runs", "warp_key", "MEMBER_PROBA"]


def canonical_datasets(names) -> tuple[str, ...]:
    """``names`` in their canonical spelling (names are case-insensitive; the canonical one
    keys the tables and the published figures); every unknown name is refused at once, before
    any worker starts."""
    from kairo._errors import ConfigError
    from kairo.tsc._data import canonical_name, list_datasets

    out, unknown = [], []
    for d in names:
        try:
            out.append(canonical_name(d))
        except DataError:
            unknown.append(d)
    if unknown:
        raise ConfigError(f"datasets: unknown {', '.join(map(repr, unknown))}; available "
                          f"offline: {', '.join(list_datasets())}")
    if len(set(out)) != len(out):
        raise ConfigError(f"datasets lists a set twice: {', '.join(names)}")
    return tuple(out)


_CACHE: dict = {}


def _data(name: str, length: int, resample: int = 0):
    """(train, test) of a dataset, or of its bake-off resample ``resample`` (0: the archive's
    split; kairo.tsc.resample_split)."""
    from kairo.tsc._data import load_dataset
    from kairo.tsc._resample import resample_split

    key = (name, length, resample)
    if key not in _CACHE:
        if resample:
            _CACHE[key] = resample_split(*_data(name, length), resample)
        else:
            _CACHE[key] = (load_dataset(name, "train", mnist1d_length=length),
                           load_dataset(name, "test", mnist1d_length=length))
    return _CACHE[key]


def cv_folds(y, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Stratified ``folds``-fold split of labels ``y`` (shuffled with ``seed``): a list of
    (fit indices, held-out indices); every series is held out exactly once."""
    from sklearn.model_selection import StratifiedKFold

    y = np.asarray(y)
    counts = np.bincount(y)
    smallest = int(counts[counts > 0].min()) if len(y) else 0
    if folds > smallest:
        raise DataError(f"folds: {folds}-fold cross-validation needs at least {folds} training "
                        f"series of every class; the smallest class has {smallest}")
    skf = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    return [(a, b) for a, b in skf.split(np.zeros(len(y)), y)]


def _jobs(cfg, combos, datasets=None, *, folds: int = 0, seeds: int = 0, ensemble: int = 1,
          **train_overrides) -> list[dict]:
    """One job per dataset × candidate × seed (× fold when ``folds``); ``combos`` is a list of
    candidates, (encoder, pool) or (encoder, pool, time_warp), or a dict dataset → list of
    them. ``seeds`` (default ``cfg.seeds``) counts from ``cfg.seed``. With ``ensemble`` N > 1
    each seed is an ensemble of N members, seeds s … s+N−1 from s = seed + i·N for the i-th
    (the members ``kairo tsc train --ensemble N --seed s`` trains), one job per member. With
    ``cfg.resamples`` the i-th seed trains and scores on the dataset's resample i."""
    jobs = []
    resamples = getattr(cfg, "resamples", 0)
    for ds in datasets or canonical_datasets(cfg.datasets):
        for enc, pool, *tw in (combos[ds] if isinstance(combos, dict) else combos):
            warp = {"time_warp": warp_key(tw[0])} if tw else {}
            m = model_config(cfg, encoder=enc, pool=pool)
            for i in range(seeds or cfg.seeds):
                first = cfg.seed + i * ensemble
                for seed in range(first, first + ensemble):
                    t = train_config(cfg, seed=seed, threads=1, **warp, **train_overrides)
                    for index in range(folds) if folds else [None]:
                        job = {"dataset": ds, "model": dataclasses.asdict(m),
                               "train": dataclasses.asdict(t), "threads": 1,
                               "mnist1d_length": cfg.mnist1d_length}
                        if index is not None:
                            job["fold"] = {"folds": folds, "index": index, "split_seed": seed}
                        if ensemble > 1:
                            job["ensemble"] = first
                        if resamples:
                            job["resample"] = i
                        jobs.append(job)
    return jobs


def ensemble_runs(members: pd.DataFrame, mnist1d_length: int = 40) -> pd.DataFrame:
    """The rows of ensemble members (:func:`run_grid`'s, with ``ensemble_seed`` and ``proba``)
    → one row per ensemble: its test accuracy and macro-F1 from the members' mean class
    probabilities (as :class:`~kairo.tsc.TSEnsemble` predicts), ``seed`` its first member's
    seed, ``members``, ``member_accuracies`` and ``run`` (the members' run folders; all three
    space-separated), and ``seconds``, ``fit_seconds``,
    ``n_params`` summed over the members (one thread each: the ensemble's compute).
    ``mnist1d_length``: the generated MNIST-1D length the members were trained on."""
    from kairo.tsc._metrics import classification_report
    from kairo.tsc._inference import labels_as

    if not {"ensemble_seed", "proba"} <= set(members) or \
            members[["ensemble_seed", "proba"]].isna().any(axis=None):
        raise KairoError("ensemble_runs: every row must be an ensemble member's, with "
                         "ensemble_seed and proba (the refit runs of kairo tsc benchmark "
                         "--ensemble N, before they are written to member_runs.csv)")
    rows = []
    if "resample" not in members:
        members = members.assign(resample=0)
    groups = members.groupby(["dataset", "encoder", "pool", "time_warp", "ensemble_seed",
                              "resample"], sort=False)
    sizes = groups.size()
    if sizes.nunique() != 1:
        raise KairoError(f"ensemble_runs: ensembles of different sizes {sorted(set(sizes))}")
    for (ds, enc, pool, warp, first, resample), part in groups:
        train, test = _data(ds, mnist1d_length, int(resample))
        y = labels_as(test, train.classes)      # a member's classes are its training split's
        proba = np.mean(np.stack(part.proba.to_list()), axis=0)
        rep = classification_report(y, proba.argmax(1), list(train.classes))
        rows.append({"dataset": ds, "encoder": enc, "pool": pool, "time_warp": warp,
                     "seed": int(first), "resample": int(resample),
                     "members": " ".join(map(str, part.seed)),
                     "test_accuracy": rep["accuracy"], "test_macro_f1": rep["f1_macro"],
                     "val_accuracy": float("nan"),
                     "member_accuracies": " ".join(f"{a:.6f}" for a in part.test_accuracy),
                     "best_epoch": " ".join(map(str, part.best_epoch)),
                     "epochs_run": int(part.epochs_run.max()),
                     "seconds": float(part.seconds.sum()),
                     "fit_seconds": float(part.fit_seconds.sum()),
                     "n_params": int(part.n_params.sum()),
                     **({"run": " ".join(part.run)} if "run" in part else {})})
    return pd.DataFrame(rows)


# each member's test-split class probabilities, beside member_runs.csv (row i: key "row<i>"),
# so that a finished run's members can be averaged again in other groupings
MEMBER_PROBA = "member_proba.npz"


def read_member_runs(folder) -> pd.DataFrame:
    """The members of a finished ``kairo tsc benchmark --ensemble N`` results folder:
    ``member_runs.csv`` with each member's test-split class probabilities (from
    ``member_proba.npz``) as ``proba``, ready for :func:`ensemble_runs` — which averages them
    by ``ensemble_seed``, so setting that column regroups the members (e.g. ensembles of
    four from runs of two)."""
    folder = Path(folder)
    csv, npz = folder / "member_runs.csv", folder / MEMBER_PROBA
    for path in (csv, npz):
        if not path.is_file():
            raise KairoError(f"{path}: not found; read_member_runs reads a kairo tsc "
                             f"benchmark --ensemble N results folder (member_runs.csv and "
                             f"{MEMBER_PROBA})")
    members = pd.read_csv(csv)
    keys = [f"row{i}" for i in range(len(members))]
    try:
        saved = np.load(npz)
        if not hasattr(saved, "files"):                # one .npy array, not an archive
            raise ValueError("one array, not an archive of members")
        with saved:
            files = saved.files
            proba = [saved[k] for k in keys] if sorted(files) == sorted(keys) else None
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise KairoError(f"{npz}: not a member_proba.npz kairo wrote ({exc})") from None
    if proba is None:
        raise KairoError(f"{npz}: holds {len(files)} members' probabilities, {csv.name} lists "
                         f"{len(members)}; both must come from one run")
    return members.assign(proba=pd.Series(proba, index=members.index, dtype=object))


def _point(job: dict) -> tuple[str, dict]:
    """A job as one ``kairo tsc train`` run: its key (what it is, readable, and a hash of its
    whole config, so a job whose settings changed is another point) and its config."""
    from kairo.sweep import point_key

    config = {**job["model"], **job["train"], "dataset": job["dataset"],
              "mnist1d_length": job["mnist1d_length"], "resample": job.get("resample", 0),
              "ensemble": 1, "model_file": False}
    fold = job.get("fold")
    if fold is not None:
        config.update(cv_folds=fold["folds"], cv_fold=fold["index"])
    label = "-".join([job["dataset"], job["model"]["encoder"], job["model"]["pool"],
                      f"s{job['train']['seed']}"]
                     + ([f"r{job['resample']}"] if job.get("resample") else [])
                     + ([f"f{fold['index']}of{fold['folds']}"] if fold is not None else []))
    return point_key(label, config), config


def _row(job: dict, key: str, folder: Path) -> dict:
    """A grid row, read from the results folder of the job's ``kairo tsc train`` run: test
    accuracy and macro-F1 (a fold: the held-out series it got right, of how many), the
    validation accuracy of the best epoch, and with ``ensemble`` the class probabilities."""
    import json

    summary = json.loads((folder / "summary.json").read_text())
    run = json.loads((folder / "run.json").read_text())
    pred = pd.read_csv(folder / "predictions.csv", float_precision="round_trip")
    hist = pd.read_csv(folder / "history.csv")
    train = job["train"]
    row = {"dataset": job["dataset"], "encoder": job["model"]["encoder"],
           "pool": job["model"]["pool"], "time_warp": warp_key(train["time_warp"]),
           "seed": train["seed"]}
    if "resample" in job:
        row["resample"] = job["resample"]
    fold = job.get("fold")
    if fold is None:
        best = hist[hist.epoch == summary["best_epoch"]]
        val = best.val_acc.iloc[0] if "val_acc" in hist and len(best) else float("nan")
        row.update(test_accuracy=summary["test_accuracy"],
                   test_macro_f1=summary["test_macro_f1"], val_accuracy=float(val))
        if "ensemble" in job:          # its first seed, which may be 0
            # an ensemble member: its probabilities are averaged with the other members'
            proba = pred[[c for c in pred if c.startswith("p_")]].to_numpy()
            row.update(ensemble_seed=job["ensemble"], proba=proba)
    else:
        row.update(fold=fold["index"], cv_hits=int((pred.label == pred.predicted).sum()),
                   cv_n=len(pred))
    started, finished = (pd.Timestamp(run[k]) for k in ("started", "finished"))
    row.update(best_epoch=summary["best_epoch"], epochs_run=summary["epochs_run"],
               seconds=(finished - started).total_seconds(),
               fit_seconds=summary["train_seconds"], n_params=summary["n_params"], run=key)
    return row


def run_grid(jobs: list[dict], out, *, workers: int = 0, progress_bar=None,
             executor: str = "auto", sweep: str = "") -> pd.DataFrame:
    """Run ``jobs`` (from :func:`_jobs`) as ``kairo tsc train`` runs through the sweep's
    runner (:func:`kairo.sweep.run_points`): each in its own folder ``out/<key>`` (no model
    file), recorded in the results store under sweep id ``sweep``; a run whose folder is
    complete is not run again, so a stopped grid resumes where it was. Rows in job order, read
    back from the runs' folders; ``run`` names each row's folder."""
    from kairo.sweep import run_points

    for ds in {j["dataset"] for j in jobs}:          # fail fast on a bad name, in this process
        _data(ds, jobs[0]["mnist1d_length"])
    out = Path(out).absolute()
    points = [_point(j) for j in jobs]
    run_points("tsc train", points, out, sweep=sweep, spec={"runs": len(points)},
               workers=workers, executor=executor, progress_bar=progress_bar, fail_fast=True)
    return pd.DataFrame([_row(j, k, out / k) for j, (k, _) in zip(jobs, points)])


def warp_key(warp) -> float | str:
    """A time-warp candidate as the runs tables record it: the number, or "auto"."""
    return "auto" if warp == "auto" else float(warp)


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    """Mean ± sd of test (and validation) accuracy per dataset, encoder, pooling head (and
    time-warp candidate, where the runs record one)."""
    keys = ["dataset", "encoder", "pool"] + (["time_warp"] if "time_warp" in df else [])
    g = df.groupby(keys, sort=False)
    out = g.agg(n=("test_accuracy", "size"), test_mean=("test_accuracy", "mean"),
                test_sd=("test_accuracy", "std"), val_mean=("val_accuracy", "mean"),
                f1_mean=("test_macro_f1", "mean"), seconds=("seconds", "mean"),
                n_params=("n_params", "first"))
    return out.reset_index()


def _record_resolved(cfg, rd, datasets) -> None:
    """What the grid's "auto" values stand for, per encoder (and for the training recipe, per
    dataset), in run.json: :func:`resolve_recipe` on each whole training split (a
    cross-validation fold resolves on its own series)."""
    from kairo.tsc._encoders import resnet_layout
    from kairo.tsc._recipe import model_recipe, resolve_recipe, series_stats

    models = {enc: model_config(cfg, encoder=enc, pool=cfg.pools[0]) for enc in cfg.encoders}
    for enc, m in models.items():
        rd.resolve(enc, model_recipe(m))
    if "resnet" in cfg.encoders:
        rd.resolve("resnet_layout", resnet_layout("auto", "cpu"))
    train_cfg = train_config(cfg)
    stats = {ds: series_stats(_data(ds, cfg.mnist1d_length)[0]) for ds in datasets}
    recipes = {ds: {enc: resolve_recipe(st, m, train_cfg) for enc, m in models.items()}
               for ds, st in stats.items()}
    rd.resolve("smoothness", {ds: None if np.isnan(st.smoothness) else st.smoothness
                              for ds, st in stats.items()})
    keys = ["sam", "cutmix", "mixup"] + ([] if getattr(cfg, "time_warps", ()) else ["time_warp"])
    for key in keys:          # with time-warp candidates each run's warp is its candidate's
        rd.resolve(key, {ds: {enc: ("on" if r[key] else "off") if key != "time_warp"
                              else r[key] for enc, r in per.items()}
                         for ds, per in recipes.items()})
    if "transformer" in cfg.encoders and cfg.tokens == "conv":
        for key in ("stem_blocks", "stem_dilations", "stem_pool"):
            rd.resolve(key, {ds: per["transformer"][key] for ds, per in recipes.items()})
