"""Grids of training runs: ``kairo tsc compare-pooling`` (every pooling head × encoder ×
dataset × seed, with paired tests against mean pooling) and ``kairo tsc benchmark`` (the best
configuration per dataset, chosen on the training split only — a validation hold-out or
stratified k-fold cross-validation — next to aeon's MiniRocket and MultiRocket-Hydra fitted on
the same splits, published results, and an earlier run paired seed by seed)."""

from __future__ import annotations

import dataclasses
import logging
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from kairo._errors import ConfigError, DataError, KairoError
from kairo._stats import sign_test_p, welch_p, wilcoxon_p
from kairo.attention._config import (ENCODERS, HEAD_NORMS, UNIVARIATE, WEIGHT_INITS,
                                     BenchmarkConfig, CompareConfig, ModelConfig, TrainConfig,
                                     model_config, train_config)
from kairo.attention._recipe import model_recipe


__all__ = ["CompareConfig", "BenchmarkConfig", "run_grid", "pooling_tests", "summarize",
           "cv_folds", "cv_summary", "comparison_figure", "run_compare", "run_benchmark",
           "resnet_test", "canonical_datasets", "read_reference", "reference_test",
           "benchmark_markdown", "ensemble_runs", "read_member_runs", "warp_key",
           "MIN_WILCOXON_PAIRS",
           "PER_SEED_COLUMNS", "UNIVARIATE"]


def canonical_datasets(names) -> tuple[str, ...]:
    """``names`` in their canonical spelling (names are case-insensitive; the canonical one
    keys the tables and the published figures); every unknown name is refused at once, before
    any worker starts."""
    from kairo._errors import ConfigError
    from kairo.attention._data import canonical_name, list_datasets

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


# ---------------------------------------------------------------------------- running
_CACHE: dict = {}


def _data(name: str, length: int, resample: int = 0):
    """(train, test) of a dataset, or of its bake-off resample ``resample`` (0: the archive's
    split; kairo.attention.resample_split)."""
    from kairo.attention._data import load_dataset
    from kairo.attention._resample import resample_split

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

    from kairo.attention import _train

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
        rep = _train.evaluate(res["model"], test)
        row.update(test_accuracy=rep["accuracy"], test_macro_f1=rep["f1_macro"],
                   val_accuracy=best.get("val_acc", float("nan")))
        if "ensemble" in job:          # its first seed, which may be 0
            # an ensemble member: its probabilities are averaged with the other members'
            row.update(ensemble_seed=job["ensemble"], proba=rep["proba"])
    else:
        pred = _train.evaluate(res["model"], scored)["pred"]
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
    :class:`~kairo.attention.TSEnsemble` predicts), ``seed`` its first member's seed,
    ``members`` and ``member_accuracies`` (space-separated), and ``seconds``, ``fit_seconds``,
    ``n_params`` summed over the members (one thread each: the ensemble's compute).
    ``mnist1d_length``: the generated MNIST-1D length the members were trained on."""
    from kairo.attention._metrics import classification_report
    from kairo.attention._train import labels_as

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
    """What a journal row answers: kairo's version, the function and the whole job (JSON; a
    job that is not plain JSON is refused rather than keyed loosely)."""
    import json

    from kairo import __version__

    return json.dumps([__version__, f"{fn.__module__}.{fn.__qualname__}", job],
                      sort_keys=True)


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


# ---------------------------------------------------------------------------- statistics
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


def pooling_tests(df: pd.DataFrame, baseline: str = "mean") -> pd.DataFrame:
    """Each pooling head against ``baseline``, paired by (dataset, seed) within an encoder and
    over both encoders: mean difference in test accuracy, wins/ties/losses and a two-sided
    Wilcoxon signed-rank p (zero differences split between ranks, "zsplit")."""
    rows = []
    scopes = [(enc, df[df.encoder == enc]) for enc in df.encoder.unique()]
    if df.encoder.nunique() > 1:
        scopes.append(("all", df))
    for scope, part in scopes:
        keys = ["dataset", "seed"] + (["encoder"] if scope == "all" else [])
        wide = part.pivot_table(index=keys, columns="pool", values="test_accuracy")
        if baseline not in wide:
            continue
        for pool in wide.columns:
            if pool == baseline:
                continue
            pair = wide[[pool, baseline]].dropna()
            d = (pair[pool] - pair[baseline]).to_numpy()
            p = wilcoxon_p(d, zero_method="zsplit", min_n=2)
            rows.append({"encoder": scope, "pool": pool, "baseline": baseline, "pairs": len(d),
                         "mean_diff": float(d.mean()) if len(d) else float("nan"),
                         "wins": int((d > 0).sum()), "ties": int((d == 0).sum()),
                         "losses": int((d < 0).sum()), "wilcoxon_p": p})
    return pd.DataFrame(rows)


def comparison_figure(summary: pd.DataFrame):
    """Test accuracy (mean ± sd over seeds) per pooling head, one panel per dataset."""
    from matplotlib.figure import Figure

    datasets = list(summary.dataset.unique())
    pools = list(summary["pool"].unique())
    encoders = list(summary.encoder.unique())
    fig = Figure(figsize=(3.2 * len(datasets), 3.2), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(datasets), sharey=False))
    for ax, ds in zip(axes, datasets):
        for k, enc in enumerate(encoders):
            part = summary[(summary.dataset == ds) & (summary.encoder == enc)]
            part = part.set_index("pool").reindex(pools)
            x = np.arange(len(pools)) + (k - (len(encoders) - 1) / 2) * 0.18
            ax.errorbar(x, part.test_mean, yerr=part.test_sd.fillna(0), fmt="o", ms=4,
                        capsize=2, label=enc)
        ax.set_xticks(np.arange(len(pools)), pools, rotation=30)
        ax.set(title=ds, ylabel="test accuracy" if ax is axes[0] else None)
    axes[0].legend(frameon=False, fontsize=8)
    return fig


# ---------------------------------------------------------------------------- commands
def _record_resolved(cfg, rd, datasets) -> None:
    """What the grid's "auto" values stand for, per encoder (and for the training recipe, per
    dataset), in run.json: :func:`resolve_recipe` on each whole training split (a
    cross-validation fold resolves on its own series)."""
    from kairo.attention._encoders import resnet_layout
    from kairo.attention._recipe import model_recipe, resolve_recipe, series_stats

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


def run_compare(cfg: CompareConfig, rd, progress_bar=None) -> str:
    combos = [(e, p) for e in cfg.encoders for p in cfg.pools]
    datasets = canonical_datasets(cfg.datasets)
    _record_resolved(cfg, rd, datasets)
    df = run_grid(_jobs(cfg, combos, datasets), cfg.workers, progress_bar,
                  executor=cfg.executor, journal=rd.checkpoint)
    summary, tests = summarize(df), pooling_tests(df)
    rd.add("runs.csv", df)
    rd.add("summary.csv", summary)
    rd.add("tests.csv", tests)
    rd.add("pooling.png", comparison_figure(summary))
    lines = [f"{len(df)} runs: {len(datasets)} datasets × {len(cfg.encoders)} encoders × "
             f"{len(cfg.pools)} pooling heads × {cfg.seeds} seeds"]
    w = max([18] + [len(d) for d in datasets])
    for r in summary.itertuples():
        lines.append(f"  {r.dataset:{w}s} {r.encoder:11s} {r.pool:9s} {r.test_mean:.3f} ± "
                     f"{0 if np.isnan(r.test_sd) else r.test_sd:.3f}")
    if len(tests):
        lines.append("paired against mean pooling (test accuracy):")
        for r in tests.itertuples():
            lines.append(f"  {r.encoder:11s} {r.pool:9s} Δ {r.mean_diff:+.3f}  "
                         f"{r.wins}/{r.ties}/{r.losses} (win/tie/loss)  p {r.wilcoxon_p:.3g}")
    return "\n".join(lines)


def resnet_test(accuracies, dataset: str) -> float:
    """Two-sided Welch t-test p-value of kairo's per-seed test accuracies against Fawaz et
    al.'s five ResNet runs on ``dataset``; NaN without ResNet runs, with fewer than two
    kairo runs, or when neither side has any spread and the means differ (no test is
    defined). Both sides' seed-to-seed spread counts (their runs differ by up to 0.05 on
    ArrowHead), which a one-sample test against their mean would ignore."""
    from kairo.attention._published import RESNET_FAWAZ2019_RUNS

    acc = np.asarray(accuracies, dtype=float)
    acc = acc[np.isfinite(acc)]
    if dataset not in RESNET_FAWAZ2019_RUNS or len(acc) < 2:
        return float("nan")
    return welch_p(acc, RESNET_FAWAZ2019_RUNS[dataset])


def warp_key(warp) -> float | str:
    """A time-warp candidate as the runs tables record it: the number, or "auto"."""
    return "auto" if warp == "auto" else float(warp)


def _candidates(cfg) -> list[tuple[str, str, float | str]]:
    """The benchmark's candidates in order (ties in selection go to the earlier one)."""
    warps = cfg.time_warps or (cfg.time_warp,)
    return [(e, p, warp_key(w)) for e in cfg.encoders for p in cfg.pools for w in warps]


def cv_summary(cv: pd.DataFrame, candidates=None, datasets=None) -> pd.DataFrame:
    """Cross-validated accuracy per dataset and candidate from fold rows (``cv_hits`` of
    ``cv_n`` held-out series): each repeat's accuracy over all its folds, then the mean (and
    sd) over repeats; ``cv_series`` counts every held-out prediction. With ``candidates``
    ((encoder, pool, time warp) in the configured order) and ``datasets``, rows come in that
    order, so that a tie in selection goes to the candidate listed first."""
    keys = ["dataset", "encoder", "pool", "time_warp"]
    rep = cv.groupby(keys + ["seed"], sort=False)[["cv_hits", "cv_n"]].sum().reset_index()
    rep["acc"] = rep.cv_hits / rep.cv_n
    out = rep.groupby(keys, sort=False).agg(
        cv_accuracy=("acc", "mean"), cv_sd=("acc", "std"), repeats=("acc", "size"),
        cv_series=("cv_n", "sum")).reset_index()
    if candidates is not None:
        rank = {(e, p, warp_key(w)): i for i, (e, p, w) in enumerate(candidates)}
        order = {ds: i for i, ds in enumerate(datasets if datasets is not None
                                               else out.dataset.unique())}
        out = out.assign(_d=out.dataset.map(order),
                         _r=[rank[(e, p, warp_key(w))] for e, p, w in
                             zip(out.encoder, out["pool"], out.time_warp)])
        out = out.sort_values(["_d", "_r"], kind="stable").drop(columns=["_d", "_r"])
        out = out.reset_index(drop=True)
    return out


def _read_reuse(cfg, datasets) -> pd.DataFrame:
    try:
        df = pd.read_csv(cfg.reuse)
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"--reuse {cfg.reuse}: cannot read the runs table ({exc})") from None
    if cfg.select == "cv":
        need = {"dataset", "encoder", "pool", "time_warp", "seed", "fold", "cv_hits", "cv_n"}
        what = "a cv_runs.csv from kairo tsc benchmark --select cv"
    else:
        need = {"dataset", "encoder", "pool", "time_warp", "seed", "test_accuracy",
                "val_accuracy"}
        what = "a runs.csv from kairo tsc compare-pooling/benchmark"
    if not need <= set(df.columns):
        raise DataError(f"--reuse {cfg.reuse}: expected {what} with columns {sorted(need)}; "
                        f"it has {sorted(df.columns)}")
    _check_reused_settings(cfg)
    # only summarised, and absent from tables written before they were recorded
    for col in ("test_macro_f1", "seconds", "fit_seconds", "n_params"):
        if cfg.select != "cv" and col not in df:
            df[col] = np.nan
    # only the configured candidates compete (encoders × pools × time warps)
    cands = _candidates(cfg)
    df = df.assign(time_warp=df.time_warp.map(warp_key))
    df = df[df.dataset.isin(datasets) &
            pd.MultiIndex.from_frame(df[["encoder", "pool", "time_warp"]]).isin(
                pd.MultiIndex.from_tuples(cands))]
    missing = sorted(set(datasets) - set(df.dataset))
    if missing:
        raise DataError(f"--reuse {cfg.reuse} has no runs of the configured candidates "
                        f"({', '.join(_describe_candidate(*c, said=True) for c in cands)}) "
                        f"for {', '.join(missing)}")
    return df


# settings that do not change what a run computes; time_warp is a candidate column of the
# table itself, checked when the candidates are matched
_RUN_ONLY = {"threads", "device", "checkpoint_every", "time_warp"}


def _check_reused_settings(cfg) -> None:
    """The reused runs must have been trained with this run's model and training settings:
    otherwise the table would credit them to a configuration they were not trained with.
    The settings come from the config.yaml kairo writes next to every runs table."""
    from kairo._config import load_config_file

    path = Path(cfg.reuse).with_name("config.yaml")
    if not path.is_file():
        warnings.warn(f"--reuse {cfg.reuse}: no config.yaml next to it, so its runs' model and "
                      f"training settings cannot be checked against this run's", stacklevel=2)
        return
    saved = load_config_file(path)
    # --select cv reuses folds trained, like its refit, without a hold-out: the hold-out's
    # settings played no part there
    skip = {"encoder", "pool", "seed", *_RUN_ONLY,
            *(("val_fraction", "patience") if cfg.select == "cv" else ())}
    fields = [f.name for cls in (ModelConfig, TrainConfig) for f in dataclasses.fields(cls)
              if f.name not in skip]
    fields.append("mnist1d_length")
    diff = []
    saved_encoders = saved.get("encoders", ENCODERS)
    both = [e for e in cfg.encoders if e in saved_encoders] or list(saved_encoders)
    for name in fields:
        now = getattr(cfg, name)
        was = saved.get(name, "(not recorded)")
        was = tuple(was) if isinstance(was, list) else was
        if name in ("head_norm", "weight_init"):
            # "auto" is each encoder's default: compare what the runs of each encoder had
            # a value that is none of the field's choices ("(not recorded)") is compared as
            # it is: the recipe would read it as false
            def value(v, e):
                if name == "head_norm":
                    v = str(v).lower()
                    return (model_recipe(ModelConfig(encoder=e, head_norm=v))["head_norm"]
                            if v in HEAD_NORMS else v)
                return (model_recipe(ModelConfig(encoder=e, weight_init=v))["weight_init"]
                        if v in WEIGHT_INITS else v)

            pairs = [(e, value(was, e), value(now, e)) for e in both]
            if any(a != b for _, a, b in pairs):
                detail = "" if "auto" not in (was, now) else " (" + ", ".join(
                    f"{e}: {a!r} there, {b!r} here" for e, a, b in pairs if a != b) + ")"
                diff.append(f"{name}: {was!r} there, {now!r} here{detail}")
            continue
        if was != now:
            diff.append(f"{name}: {was!r} there, {now!r} here")
    if diff:
        raise DataError(f"--reuse {cfg.reuse}: its runs were trained with other settings than "
                        f"this run's ({'; '.join(diff)}; from {path}); give the same options "
                        f"(--config {path} sets them all), or train the grid again without "
                        f"--reuse")


def _describe_candidate(enc: str, pool: str, warp: float | str, said: bool = False) -> str:
    """"transformer + mean, time warp 0.2"; the time warp only where it is a number other than
    0 (the default "auto" is said in run.json's resolved values, as mixup's is), unless
    ``said``."""
    text = warp if warp == "auto" else f"{float(warp):g}"
    return f"{enc} + {pool}" + (f", time warp {text}" if said or warp not in ("auto", 0)
                                else "")


# ---------------------------------------------------------------------------- reference runs
# with fewer pairs no two-sided signed-rank p can fall below 0.05 (2 / 2^5 = 0.0625), and
# SciPy's normal approximation, taken where differences tie or are zero (common with
# accuracies), is poor for so few: the exact sign test answers there
MIN_WILCOXON_PAIRS = 6
# differences are rounded to this many decimals before they are counted and ranked: the same
# count of test series must tie (0.95 − 0.94 and 0.93 − 0.92 differ in the 17th digit), while
# counts of one test series apart stay apart up to a million test series
_DECIMALS = 9
_REFERENCE_COLUMNS = ("dataset", "seed", "test_accuracy")


def read_reference(path) -> pd.DataFrame:
    """The runs of an earlier ``kairo tsc benchmark`` to pair with: its ``refit_runs.csv``
    (or any table with ``dataset``, ``seed`` and ``test_accuracy``, one row per dataset and
    seed). ConfigError naming the file when it is missing, unreadable, lacks a column, or
    lists a dataset's seed twice (a table of several configurations). Rows without a test
    accuracy are left out."""
    from kairo._errors import ConfigError

    p = Path(path)
    what = ("the refit_runs.csv of an earlier kairo tsc benchmark (columns dataset, seed, "
            "test_accuracy)")
    if not p.is_file():
        raise ConfigError(f"reference {p}: no such file; expected {what}")
    try:
        df = pd.read_csv(p)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError,
            pd.errors.EmptyDataError) as exc:
        raise ConfigError(f"reference {p}: cannot read it as a CSV table ({exc}); expected "
                          f"{what}") from None
    missing = [c for c in _REFERENCE_COLUMNS if c not in df.columns]
    if missing:
        raise ConfigError(f"reference {p}: lacks the column{'s' * (len(missing) > 1)} "
                          f"{', '.join(missing)}; expected {what}, it has "
                          f"{', '.join(map(str, df.columns)) or 'none'}")
    seed = pd.to_numeric(df.seed, errors="coerce")
    acc = pd.to_numeric(df.test_accuracy, errors="coerce")
    bad = df.index[seed.isna() | (seed % 1 != 0) | (acc.isna() & df.test_accuracy.notna()) |
                   ~(acc.between(0, 1) | acc.isna())]
    if len(bad):
        i = bad[0]
        raise ConfigError(f"reference {p}: row {i + 2} has seed {df.seed[i]!r} and "
                          f"test_accuracy {df.test_accuracy[i]!r}; expected an integer seed "
                          f"and an accuracy in [0, 1]")
    out = df.assign(seed=seed.astype(int), test_accuracy=acc, dataset=df.dataset.astype(str))
    out = out[out.test_accuracy.notna()]
    twice = out[out.duplicated(["dataset", "seed"])]
    if len(twice):
        r = twice.iloc[0]
        raise ConfigError(f"reference {p}: lists {r.dataset} seed {r.seed} twice; pair with a "
                          f"table of one configuration per dataset (a refit_runs.csv)")
    return out.reset_index(drop=True)


def _seed_text(seeds) -> str:
    """'0–4', or '0, 2, 5' when the seeds are not consecutive; '' for none."""
    seeds = sorted(int(s) for s in seeds)
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}–{seeds[-1]}"
    return ", ".join(map(str, seeds))


def reference_test(accuracy: dict, reference: dict | None, dataset: str = "") -> dict:
    """This run's test accuracy per seed (``{seed: accuracy}``) against the reference's, paired
    by seed: the reference's mean over the paired seeds, the mean difference (this run minus
    the reference), wins/ties/losses of this run, and a two-sided p — Wilcoxon signed-rank
    (zero differences split between the ranks) with at least ``MIN_WILCOXON_PAIRS`` pairs and
    a decided one, else the exact sign test. Without a pair the test is empty (NaN) and
    ``note`` says why; seeds on one side only are named in it."""
    nan = float("nan")
    out = {"reference": nan, "pairs_vs_reference": 0, "vs reference": nan,
           "wins_vs_reference": nan, "ties_vs_reference": nan, "losses_vs_reference": nan,
           "test_vs_reference": "", "p vs reference": nan, "note_vs_reference": ""}
    ours = {int(s): float(a) for s, a in accuracy.items() if np.isfinite(a)}
    if not reference:
        out["note_vs_reference"] = f"the reference has no runs of {dataset or 'this set'}"
        return out
    seeds = sorted(set(ours) & set(reference))
    if not seeds:
        out["note_vs_reference"] = (f"no seed in common (this run: {_seed_text(ours) or 'none'}"
                                    f"; the reference: {_seed_text(reference)})")
        return out
    only = sorted(set(ours) - set(reference))
    if only:
        out["note_vs_reference"] = (f"seed{'s' * (len(only) > 1)} {_seed_text(only)} not in "
                                    f"the reference")
    d = np.round(np.array([ours[s] - reference[s] for s in seeds]), _DECIMALS)
    wins, ties, losses = int((d > 0).sum()), int((d == 0).sum()), int((d < 0).sum())
    if len(d) >= MIN_WILCOXON_PAIRS and wins + losses:
        test, p = "wilcoxon", wilcoxon_p(d, zero_method="zsplit", min_n=MIN_WILCOXON_PAIRS)
    else:
        test, p = "sign", sign_test_p(wins, losses)
    out.update({"reference": float(np.mean([reference[s] for s in seeds])),
                "pairs_vs_reference": len(d), "vs reference": float(d.mean()),
                "wins_vs_reference": wins, "ties_vs_reference": ties,
                "losses_vs_reference": losses, "test_vs_reference": test, "p vs reference": p})
    return out


# ---------------------------------------------------------------------------- peers
def _peer_jobs(cfg, datasets) -> list[dict]:
    """One job per dataset × peer × seed (the seeds kairo's runs use); the set each peer is
    given is resolved here, so a set no peer can take is refused before anything trains."""
    from kairo.attention._peers import peer_input

    if not cfg.peers:
        return []
    jobs = []
    for ds in datasets:
        given = peer_input(ds)
        for peer in cfg.peers:
            for i, seed in enumerate(range(cfg.seed, cfg.seed + cfg.seeds)):
                job = {"dataset": ds, "input": given, "peer": peer, "seed": seed,
                       "znorm": cfg.znorm, "mnist1d_length": cfg.mnist1d_length}
                if cfg.resamples:
                    job["resample"] = i
                jobs.append(job)
    return jobs


def _one_peer(job: dict) -> dict:
    """One peer fit (in a worker process): fit on the train split, score the test split."""
    from kairo.attention._peers import PEER_NAMES, fit_peer

    train, test = _data(job["input"], job["mnist1d_length"], job.get("resample", 0))
    res = fit_peer(job["peer"], train, test, seed=job["seed"], znorm=job["znorm"])
    return {"dataset": job["dataset"], "method": PEER_NAMES[job["peer"]], "seed": job["seed"],
            "accuracy": res["accuracy"], "fit_seconds": res["fit_seconds"],
            "input": job["input"], "scaling": res["scaling"]}


# ---------------------------------------------------------------------------- benchmark
PER_SEED_COLUMNS = ("dataset", "method", "seed", "accuracy", "fit_seconds", "input", "scaling")


def _check_selection(cfg, cands, datasets) -> pd.DataFrame | None:
    """What the selection needs, checked before anything trains: the reused table (returned),
    or with --select cv enough series of every class for the folds."""
    if cfg.reuse:
        return _read_reuse(cfg, datasets)
    if cfg.select == "holdout" and not cfg.val_fraction and not (len(cands) == 1 and cfg.refit):
        raise ConfigError(f"val_fraction: --select holdout chooses among {len(cands)} "
                          f"candidates on a validation hold-out of the training split, and "
                          f"val_fraction is 0; give --val-fraction (e.g. 0.2) or --select cv")
    if cfg.select == "cv" and not (len(cands) == 1 and cfg.refit):
        for ds in datasets:
            try:
                cv_folds(_data(ds, cfg.mnist1d_length)[0].y, cfg.folds, 0)
            except DataError as exc:
                raise DataError(f"dataset {ds}: {exc}") from None
    return None


def _select(cfg, cands, datasets, rd, progress_bar, reused=None):
    """The configuration of each dataset, chosen on the training split only: (table indexed
    by dataset with encoder, pool, time_warp and what the choice saw; the runs it was chosen
    from, or None; the per-candidate summary, or None; whether by CV; how, for the summary).
    ``reused``: the runs of --reuse (see _check_selection)."""
    if len(cands) == 1 and cfg.refit and not cfg.reuse:
        # nothing to choose: no selection runs, the refit runs are the only ones trained
        enc, pool, warp = cands[0]
        table = pd.DataFrame({"dataset": list(datasets), "encoder": enc, "pool": pool,
                              "time_warp": warp, "val_mean": np.nan, "kairo": np.nan,
                              "kairo_sd": np.nan, "n": 0}).set_index("dataset")
        rd.resolve("selection", "none (one candidate)")
        return table, None, None, False, " (the only candidate: no selection runs)"
    if cfg.reuse:
        df = reused if reused is not None else _read_reuse(cfg, datasets)
    elif cfg.select == "cv":
        # each fold is trained like the refit (no hold-out, the full epochs), so the CV
        # accuracy estimates the protocol whose test accuracy is reported
        df = run_grid(_jobs(cfg, cands, datasets, folds=cfg.folds, seeds=cfg.cv_repeats,
                            val_fraction=0.0), cfg.workers, progress_bar,
                      executor=cfg.executor, journal=rd.checkpoint)
    else:
        df = run_grid(_jobs(cfg, cands, datasets), cfg.workers, progress_bar,
                      executor=cfg.executor, journal=rd.checkpoint)
    cv = "cv_hits" in df
    keys = ["encoder", "pool", "time_warp"]
    if cv:
        # candidates in the configured order, so a tie goes to the one listed first
        summary = cv_summary(df, cands, datasets)
        score = summary.cv_accuracy
        rd.add("cv_runs.csv", df)
        rd.add("selection.csv", summary)
    else:
        summary = summarize(df)
        score = summary.val_mean.fillna(-np.inf)   # NaN: no validation hold-out
        rd.add("runs.csv", df)
    # the configuration is chosen on the training split only (validation accuracy or CV
    # accuracy; the first candidate wins a tie); test accuracy is reported, never used
    best = summary.loc[score.groupby(summary.dataset, sort=False).idxmax()]
    if cv:
        table = best.set_index("dataset")[keys + ["cv_accuracy", "cv_sd", "repeats"]]
        table["kairo"], table["kairo_sd"], table["n"] = np.nan, np.nan, 0
    else:
        table = best.set_index("dataset")[keys + ["val_mean", "test_mean", "test_sd", "n"]]
        table = table.rename(columns={"test_mean": "kairo", "test_sd": "kairo_sd"})
    # a reused table's fold count, not --folds
    how = (f" (chosen by {int(df.fold.max()) + 1}-fold CV × {int(summary.repeats.max())})"
           if cv else
           " (chosen on validation)" if summary.val_mean.notna().any() else "")
    return table, df, summary, cv, how


def run_benchmark(cfg: BenchmarkConfig, rd, progress_bar=None) -> str:
    """``kairo tsc benchmark``: per dataset, the configuration chosen on the training split
    (none to choose with one candidate), refit once per seed, next to aeon's MiniRocket and
    MultiRocket-Hydra fitted on the same splits with the same seeds, the published figures,
    a Welch test against Fawaz et al.'s ResNet runs and, with ``reference``, a paired test
    against an earlier run's seeds. Writes benchmark.csv (one row per dataset), per_seed.csv,
    table.md and the runs it trained; returns the table as text."""
    from kairo.attention._published import published_table
    from kairo.attention._recipe import resolve_znorm

    if cfg.resamples:             # run i on resample i: the bake-off pairs them one to one
        cfg = dataclasses.replace(cfg, seeds=cfg.resamples)
        rd.resolve("seeds", cfg.resamples)
    cands = _candidates(cfg)
    datasets = canonical_datasets(cfg.datasets)
    # the reused runs, the folds, the reference and the peers' inputs are checked before
    # anything trains
    reused = _check_selection(cfg, cands, datasets)
    reference = read_reference(cfg.reference) if cfg.reference else None
    peer_jobs = _peer_jobs(cfg, datasets)
    _record_resolved(cfg, rd, datasets)
    # the peers first: they take seconds to minutes where kairo takes hours, and a peer
    # failing after those hours would take the whole results folder with it
    peers = (run_grid(peer_jobs, cfg.workers, progress_bar, _one_peer, executor=cfg.executor,
                      journal=rd.checkpoint)
             if peer_jobs else pd.DataFrame(columns=list(PER_SEED_COLUMNS)))
    table, df, summary, cv, how = _select(cfg, cands, datasets, rd, progress_bar, reused)
    if cfg.refit:
        # the chosen configuration is trained again on the whole training split for the full
        # epochs (no hold-out, weights of the lowest training loss): a few held-out series are
        # a noisy early-stopping signal on small sets and cost the model a fifth of its data
        chosen = {ds: [(r.encoder, r["pool"], r.time_warp)] for ds, r in table.iterrows()}
        runs = run_grid(_jobs(cfg, chosen, list(chosen), ensemble=cfg.ensemble,
                              val_fraction=0.0), cfg.workers, progress_bar,
                        executor=cfg.executor, journal=rd.checkpoint)
        if cfg.ensemble > 1:
            rd.add("member_runs.csv", runs.drop(columns="proba"))
            np.savez_compressed(rd.path / MEMBER_PROBA,
                                **{f"row{i}": np.asarray(p) for i, p in enumerate(runs.proba)})
            rd.add(MEMBER_PROBA)
            runs = ensemble_runs(runs, cfg.mnist1d_length)
        rd.add("refit_runs.csv", runs)
        if not cv:
            table["selection_test"] = table["kairo"]
    else:
        runs = pd.concat([df[(df.dataset == ds) & (df.encoder == r.encoder) &
                             (df["pool"] == r["pool"]) & (df.time_warp == r.time_warp)]
                          for ds, r in table.iterrows()])
    g = runs.groupby("dataset", sort=False)
    table["kairo"], table["kairo_sd"], table["n"] = (g.test_accuracy.mean(),
                                                     g.test_accuracy.std(), g.size())
    table["seeds"] = [_seed_text(runs.seed[runs.dataset == ds]) for ds in table.index]
    table["kairo_fit_seconds"] = g.fit_seconds.mean()
    per_seed = {ds: runs[runs.dataset == ds].set_index("seed").test_accuracy.to_dict()
                for ds in table.index}

    for name in dict.fromkeys(peers.method):
        part = peers[peers.method == name].groupby("dataset", sort=False)
        table[name], table[f"{name}_sd"] = part.accuracy.mean(), part.accuracy.std()
        table[f"{name}_fit_seconds"] = part.fit_seconds.mean()
    if len(peers):
        table["peer_input"] = peers.groupby("dataset", sort=False).input.first()

    table = table.join(published_table(list(table.index), resamples=cfg.resamples or 30))
    table["vs ResNet"] = table["kairo"] - table["ResNet (Fawaz 2019)"]
    table["p vs ResNet"] = [resnet_test(list(per_seed[ds].values()), ds) for ds in table.index]
    if reference is not None:
        ref = {ds.lower(): part.set_index("seed").test_accuracy.to_dict()
               for ds, part in reference.groupby("dataset")}
        tests = pd.DataFrame([reference_test(per_seed[ds], ref.get(ds.lower()), ds)
                              for ds in table.index], index=table.index)
        # counts stay integers beside the empty rows (blank in the CSV, not 2.0)
        tests = tests.astype({f"{k}_vs_reference": "Int64" for k in ("wins", "ties", "losses")})
        table = table.join(tests)
    rd.add("benchmark.csv", table.reset_index())

    scaling = {ds: resolve_znorm(cfg.znorm, _data(ds, cfg.mnist1d_length)[0].n_channels)
               for ds in table.index}
    ours = runs.assign(method="kairo", accuracy=runs.test_accuracy, input=runs.dataset,
                       scaling=runs.dataset.map(scaling))
    ours = ours[list(PER_SEED_COLUMNS)]
    rd.add("per_seed.csv", pd.concat([ours, peers], ignore_index=True) if len(peers) else ours)
    md = benchmark_markdown(table, reference=reference is not None, resamples=cfg.resamples)
    notes = _notes(cfg, table, peers, reference, cv)
    rd.add("table.md", md + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")

    lines = [f"kairo tsc benchmark{how}:", md]
    if cv:
        w = max([18] + [len(d) for d in table.index])     # PickupGestureWiimoteZ is 21
        lines.append("cross-validated accuracy of each candidate (training split only):")
        for r in summary.itertuples():
            what = _describe_candidate(r.encoder, r.pool, r.time_warp)
            lines.append(f"  {r.dataset:{w}s} {what:32s} {r.cv_accuracy:.3f} "
                         f"({r.cv_series} held-out predictions)")
    lines += notes
    tested = table["p vs ResNet"].dropna()
    if len(tested):
        lines.append("kairo vs ResNet's runs (Welch t-test): " + "; ".join(
            f"{ds} {table.loc[ds, 'vs ResNet']:+.3f} (p {p:.2f})" for ds, p in tested.items()))
    return "\n".join(lines)


def _cell(v, fmt: str = ".3f") -> str:
    return "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, fmt)


def _seconds(v) -> str:
    return "—" if not np.isfinite(v) else f"{v:.2f}" if v < 10 else f"{v:.0f}"


def _p(v) -> str:
    return "—" if not np.isfinite(v) else f"{v:.2g}" if v < 0.01 else f"{v:.2f}"


def benchmark_markdown(table: pd.DataFrame, *, reference: bool = False,
                       resamples: int = 0) -> str:
    """The benchmark table (``benchmark.csv`` indexed by dataset) as markdown: kairo's mean ±
    sd over its seeds and mean fit time, each peer's mean accuracy and fit time, the published
    figures, the Welch p against Fawaz et al.'s runs and, with ``reference``, the paired
    comparison with the reference (mean difference, wins/ties/losses, p and its test)."""
    from kairo.attention._peers import PEER_NAMES

    peers = [n for n in PEER_NAMES.values() if n in table]
    published = ["ResNet (Fawaz 2019)", "InceptionTime", "HC2", "ConvTran (Foumani 2024)"]
    if resamples:             # the bake-off's means over the resamples kairo ran
        published = [f"{n} ({resamples} resamples)" for n in ("H-InceptionTime", "HC2",
                                                              "MR-Hydra", "MiniROCKET",
                                                              "ResNet")]
    head = ["dataset", "kairo (mean ± sd)", "seeds", "fit s"]
    for name in peers:
        head += [name, "fit s"]
    head += published + ["p vs ResNet (Welch)"]
    if reference:
        head += ["Δ vs reference", "win/tie/loss", "p vs reference"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ds, r in table.iterrows():
        sd = r.kairo_sd if r.n > 1 else float("nan")
        cells = [ds, f"{_cell(r.kairo)} ± {_cell(sd)}" if np.isfinite(sd) else _cell(r.kairo),
                 r.seeds, _seconds(r.kairo_fit_seconds)]
        for name in peers:
            cells += [_cell(r[name]), _seconds(r[f"{name}_fit_seconds"])]
        cells += [_cell(r[c]) for c in published] + [_p(r["p vs ResNet"])]
        if reference:
            if r.pairs_vs_reference:
                cells += [f"{r['vs reference']:+.3f}",
                          f"{int(r.wins_vs_reference)}/{int(r.ties_vs_reference)}/"
                          f"{int(r.losses_vs_reference)}",
                          f"{_p(r['p vs reference'])} ({r.test_vs_reference})"]
            else:
                cells += ["—", "—", "—"]
        rows.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(rows)


def _notes(cfg, table, peers, reference, cv) -> list[str]:
    """What the table's columns are, and what a reader could not tell from them."""
    notes = []
    configs = {ds: _describe_candidate(r.encoder, r["pool"], r.time_warp)
               for ds, r in table.iterrows()}
    if len(set(configs.values())) == 1:
        notes.append(f"kairo: {next(iter(configs.values()))}")
    else:
        notes.append("kairo: " + "; ".join(f"{ds} {c}" for ds, c in configs.items()))
    notes.append("kairo: the chosen configuration refit on the whole training split (test "
                 "accuracy over seeds)" if cfg.refit else
                 "kairo: the chosen configuration's runs with a validation hold-out")
    if cfg.ensemble > 1:
        notes.append(f"kairo: each seed is an ensemble of {cfg.ensemble} models (members' "
                     f"seeds from the one shown: `kairo tsc train --ensemble {cfg.ensemble} "
                     f"--seed S`), their class probabilities averaged; fit s: the members' "
                     f"total, one thread each (member_runs.csv has every member)")
    if len(peers):
        names = ", ".join(dict.fromkeys(peers.method))
        notes.append(f"{names}: aeon, fitted on the same train split and scored once on the "
                     f"same test split per seed (random_state = seed), one thread, input "
                     f"scaled as kairo's (znorm {', '.join(sorted(set(peers.scaling)))}); fit s: "
                     f"wall-clock seconds of one fit, mean over seeds")
        for ds, given in peers.groupby("dataset", sort=False).input.first().items():
            if given != ds:
                notes.append(f"{ds}: the peers take equal-length series only and were given "
                             f"the archive's equal-length copy {given}; kairo the original "
                             f"series, padded and masked")
    if cfg.resamples:
        notes.append(f"resamples: run i (seed --seed + i) on the bake-off's resample i, i = "
                     f"0…{cfg.resamples - 1} (0 = the archive's split; stratified resamples "
                     f"drawn as tsml-eval draws them; on the 112 UCR sets the bake-off's own "
                     f"resamples 1-29 came from Java tsml: the same protocol, other draws); "
                     f"published: the bake-off's means over resamples 0…{cfg.resamples - 1}")
    else:
        notes.append("published: default train/test split (the bake-off's resample 0); "
                     "ResNet: Fawaz et al. 2019, mean of their 5 runs, where bundled; "
                     "ConvTran: Foumani et al. 2024 (multivariate sets)")
    if reference is not None:
        notes.append(f"reference: {cfg.reference}, paired by seed (Wilcoxon signed-rank from "
                     f"{MIN_WILCOXON_PAIRS} pairs, else the sign test; Δ = this run − the "
                     f"reference)")
        for ds, why in table.note_vs_reference.items():
            if why:
                notes.append(f"{ds} vs reference: {why}")
    return notes
