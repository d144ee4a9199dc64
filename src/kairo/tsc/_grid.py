"""Running a grid of training runs, shared by ``kairo tsc compare-pooling`` and ``kairo tsc
benchmark``: the jobs (dataset × candidate × seed, × fold for cross-validation, × ensemble
member), the data they load (cached per process, a bake-off resample on request), one run in a
worker process, the grid itself with a journal from which a stopped grid resumes, what the
grid's "auto" values resolved to, the mean ± sd of its runs, and ensembles averaged from their
members' probabilities."""

from __future__ import annotations

import dataclasses
import logging
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from kairo._errors import DataError, KairoError
from kairo.tsc._config import ModelConfig, TrainConfig, model_config, train_config


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


def _one(job: dict) -> dict:
    """One training run (in a worker process): fit, then score the test split."""
    import time

    import torch

    from kairo.tsc import _inference, _train

    torch.set_num_threads(job["threads"])
    train, test = _data(job["dataset"], job["mnist1d_length"], job.get("resample", 0))
    mcfg = ModelConfig(**job["model"])
    tcfg = TrainConfig(**job["train"])
    fold = job.get("fold")
    if fold is not None:
        # a cross-validation fold: train on the other folds, score the held-out one; the
        # test split is not touched
        fit_idx, score_idx = cv_folds(train.y, fold["folds"], fold["split_seed"])[fold["index"]]
        train, scored = train.subset(fit_idx), train.subset(score_idx)
    t0 = time.perf_counter()
    res = _train.fit(mcfg, tcfg, train, progress_bar=False)
    # the fit alone, timed as the benchmark's peers are (scoring the test split excluded)
    fit_seconds = time.perf_counter() - t0
    hist = res["history"]
    best = next((h for h in hist if h["epoch"] == res["best_epoch"]), hist[-1])
    row = {"dataset": job["dataset"], "encoder": mcfg.encoder, "pool": mcfg.pool,
           "time_warp": warp_key(tcfg.time_warp), "seed": tcfg.seed}
    if "resample" in job:
        row["resample"] = job["resample"]
    if fold is None:
        rep = _inference.evaluate(res["model"], test)
        row.update(test_accuracy=rep["accuracy"], test_macro_f1=rep["f1_macro"],
                   val_accuracy=best.get("val_acc", float("nan")))
        if "ensemble" in job:          # its first seed, which may be 0
            # an ensemble member: its probabilities are averaged with the other members'
            row.update(ensemble_seed=job["ensemble"], proba=rep["proba"])
    else:
        pred = _inference.evaluate(res["model"], scored)["pred"]
        row.update(fold=fold["index"], cv_hits=int((pred == scored.y).sum()),
                   cv_n=len(scored))
    row.update(best_epoch=res["best_epoch"], epochs_run=len(hist),
               seconds=time.perf_counter() - t0, fit_seconds=fit_seconds,
               n_params=int(sum(p.numel() for p in res["model"].parameters())))
    return row


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
    """The rows of ensemble members (`_one`'s, with ``ensemble_seed`` and ``proba``) → one row
    per ensemble: its test accuracy and macro-F1 from the members' mean class probabilities (as
    :class:`~kairo.tsc.TSEnsemble` predicts), ``seed`` its first member's seed,
    ``members`` and ``member_accuracies`` (space-separated), and ``seconds``, ``fit_seconds``,
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
                     "n_params": int(part.n_params.sum())})
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


def run_grid(jobs: list[dict], workers: int = 0, progress_bar=None, run=None, *,
             executor: str = "auto", journal=None) -> pd.DataFrame:
    """Run ``jobs`` with :func:`kairo._jobs.map_jobs` (spawned worker processes or Ray, one
    torch thread each); rows in job order. ``run`` (a picklable top-level function of one job
    → a row dict) replaces the default fit-then-test (benchmarks use it to score variants of
    the same trained weights). ``journal``: a file that keeps each finished job's row as it
    finishes; a job it already holds (the same function and job: dataset, settings, seed,
    fold) is not run again, so a stopped grid resumes where it was."""
    from kairo._jobs import map_jobs

    fn = run or _one
    for ds in {j["dataset"] for j in jobs}:          # fail fast on a bad name, in this process
        _data(ds, jobs[0]["mnist1d_length"])
    if journal is None:
        return pd.DataFrame(map_jobs(fn, jobs, workers=workers, executor=executor,
                                     desc="runs", progress_bar=progress_bar))
    done = _read_journal(journal)
    keys = [_job_key(fn, j) for j in jobs]
    todo = [i for i, k in enumerate(keys) if k not in done]
    if len(todo) < len(jobs):
        # on the progress logger: the command line shows it without -v, so a resumed run says so
        logging.getLogger("kairo.progress").info(
            "resuming from %s: %d of %d runs already done, %d to run", journal,
            len(jobs) - len(todo), len(jobs), len(todo))

    def keep(i, row):
        done[keys[todo[i]]] = row
        _write_journal(journal, done)

    if todo:
        map_jobs(fn, [jobs[i] for i in todo], workers=workers, executor=executor,
                 desc="runs", progress_bar=progress_bar, on_result=keep)
    return pd.DataFrame([done[k] for k in keys])


_JOURNAL = "kairo-run-journal"


def _job_key(fn, job: dict) -> str:
    """What a journal row answers: kairo's version, the function's name and the whole job
    (JSON; a job that is not plain JSON is refused rather than keyed loosely). The name
    without its module: moving a function between modules does not change what it computes,
    and one grid's functions have distinct names."""
    import json

    from kairo import __version__

    return json.dumps([__version__, fn.__qualname__, job], sort_keys=True)


def _read_journal(path) -> dict:
    """The rows a :func:`run_grid` journal holds, by job key ({} when there is no file); the
    checkpoint loader's errors name the file. Arrays were stored as tensors (a checkpoint
    never runs code on load) and come back as arrays."""
    import torch

    from kairo._checkpoint import load_checkpoint

    if not Path(path).is_file():
        return {}
    state = load_checkpoint(path, kind=_JOURNAL, what="journal of finished runs")
    return {k: {c: v.numpy() if isinstance(v, torch.Tensor) else v for c, v in row.items()}
            for k, row in state["rows"].items()}


def _write_journal(path, rows: dict) -> None:
    """Replace the journal atomically: a stop mid-write leaves the previous one."""
    import torch

    from kairo._checkpoint import save_checkpoint

    def plain(v):
        if isinstance(v, np.ndarray):
            return torch.from_numpy(np.ascontiguousarray(v))
        return v.item() if isinstance(v, np.generic) else v

    save_checkpoint(path, {"rows": {k: {c: plain(v) for c, v in row.items()}
                                    for k, row in rows.items()}}, kind=_JOURNAL)


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
