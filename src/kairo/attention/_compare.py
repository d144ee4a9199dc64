"""Grids of training runs: ``kairo tsc compare-pooling`` (every pooling head × encoder ×
dataset × seed, with paired tests against mean pooling) and ``kairo tsc benchmark`` (the best
configuration per dataset, chosen on the training split only — a validation hold-out or
stratified k-fold cross-validation — next to published results)."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd

from kairo._errors import DataError
from kairo._stats import welch_p, wilcoxon_p
from kairo.attention._config import (ENCODERS, HEAD_NORMS, UNIVARIATE, WEIGHT_INITS,
                                     BenchmarkConfig, CompareConfig, ModelConfig, TrainConfig,
                                     model_config, resolve_head, train_config)

__all__ = ["CompareConfig", "BenchmarkConfig", "run_grid", "pooling_tests", "summarize",
           "cv_folds", "cv_summary", "comparison_figure", "run_compare", "run_benchmark",
           "resnet_test", "canonical_datasets", "UNIVARIATE"]


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


def _data(name: str, length: int):
    from kairo.attention._data import load_dataset

    key = (name, length)
    if key not in _CACHE:
        _CACHE[key] = (load_dataset(name, "train", mnist1d_length=length),
                       load_dataset(name, "test", mnist1d_length=length))
    return _CACHE[key]


def _one(job: dict) -> dict:
    """One training run (in a worker process): fit, then score the test split."""
    import time

    import torch

    from kairo.attention import _train

    torch.set_num_threads(job["threads"])
    train, test = _data(job["dataset"], job["mnist1d_length"])
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
    hist = res["history"]
    best = next((h for h in hist if h["epoch"] == res["best_epoch"]), hist[-1])
    row = {"dataset": job["dataset"], "encoder": mcfg.encoder, "pool": mcfg.pool,
           "time_warp": tcfg.time_warp, "seed": tcfg.seed}
    if fold is None:
        rep = _train.evaluate(res["model"], test)
        row.update(test_accuracy=rep["accuracy"], test_macro_f1=rep["f1_macro"],
                   val_accuracy=best.get("val_acc", float("nan")))
    else:
        pred = _train.evaluate(res["model"], scored)["pred"]
        row.update(fold=fold["index"], cv_hits=int((pred == scored.y).sum()),
                   cv_n=len(scored))
    row.update(best_epoch=res["best_epoch"], epochs_run=len(hist),
               seconds=time.perf_counter() - t0,
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


def _jobs(cfg, combos, datasets=None, *, folds: int = 0, seeds: int = 0,
          **train_overrides) -> list[dict]:
    """One job per dataset × candidate × seed (× fold when ``folds``); ``combos`` is a list of
    candidates, (encoder, pool) or (encoder, pool, time_warp), or a dict dataset → list of
    them. ``seeds`` (default ``cfg.seeds``) counts from ``cfg.seed``."""
    jobs = []
    for ds in datasets or canonical_datasets(cfg.datasets):
        for enc, pool, *tw in (combos[ds] if isinstance(combos, dict) else combos):
            warp = {"time_warp": float(tw[0])} if tw else {}
            m = model_config(cfg, encoder=enc, pool=pool)
            for seed in range(cfg.seed, cfg.seed + (seeds or cfg.seeds)):
                t = train_config(cfg, seed=seed, threads=1, **warp, **train_overrides)
                for index in range(folds) if folds else [None]:
                    job = {"dataset": ds, "model": dataclasses.asdict(m),
                           "train": dataclasses.asdict(t), "threads": 1,
                           "mnist1d_length": cfg.mnist1d_length}
                    if index is not None:
                        job["fold"] = {"folds": folds, "index": index, "split_seed": seed}
                    jobs.append(job)
    return jobs


def run_grid(jobs: list[dict], workers: int = 0, progress_bar=None, run=None, *,
             executor: str = "auto") -> pd.DataFrame:
    """Run ``jobs`` with :func:`kairo._jobs.map_jobs` (spawned worker processes or Ray, one
    torch thread each); rows in job order. ``run`` (a picklable top-level function of one job
    → a row dict) replaces the default fit-then-test (benchmarks use it to score variants of
    the same trained weights)."""
    from kairo._jobs import map_jobs

    for ds in {j["dataset"] for j in jobs}:          # fail fast on a bad name, in this process
        _data(ds, jobs[0]["mnist1d_length"])
    rows = map_jobs(run or _one, jobs, workers=workers, executor=executor, desc="runs",
                    progress_bar=progress_bar)
    return pd.DataFrame(rows)


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
def _record_resolved(cfg, rd) -> None:
    """What the grid's "auto" values stand for, per encoder, in run.json."""
    from kairo.attention._encoders import resnet_layout

    for enc in cfg.encoders:
        rd.resolve(enc, resolve_head(enc, cfg.head_norm, cfg.weight_init))
    if "resnet" in cfg.encoders:
        rd.resolve("resnet_layout", resnet_layout("auto", "cpu"))


def run_compare(cfg: CompareConfig, rd, progress_bar=None) -> str:
    combos = [(e, p) for e in cfg.encoders for p in cfg.pools]
    datasets = canonical_datasets(cfg.datasets)
    _record_resolved(cfg, rd)
    df = run_grid(_jobs(cfg, combos, datasets), cfg.workers, progress_bar,
                  executor=cfg.executor)
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


def _candidates(cfg) -> list[tuple[str, str, float]]:
    """The benchmark's candidates in order (ties in selection go to the earlier one)."""
    warps = cfg.time_warps or (cfg.time_warp,)
    return [(e, p, float(w)) for e in cfg.encoders for p in cfg.pools for w in warps]


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
        rank = {(e, p, float(w)): i for i, (e, p, w) in enumerate(candidates)}
        order = {ds: i for i, ds in enumerate(datasets if datasets is not None
                                               else out.dataset.unique())}
        out = out.assign(_d=out.dataset.map(order),
                         _r=[rank[(e, p, float(w))] for e, p, w in
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
    for col in ("test_macro_f1", "seconds", "n_params"):     # summaries only: may be absent
        if cfg.select != "cv" and col not in df:
            df[col] = np.nan
    # only the configured candidates compete (encoders × pools × time warps)
    cands = _candidates(cfg)
    df = df[df.dataset.isin(datasets) &
            pd.MultiIndex.from_frame(df[["encoder", "pool", "time_warp"]]).isin(
                pd.MultiIndex.from_tuples(cands))]
    missing = sorted(set(datasets) - set(df.dataset))
    if missing:
        raise DataError(f"--reuse {cfg.reuse} has no runs of the configured candidates "
                        f"({', '.join(_describe_candidate(*c) for c in cands)}) "
                        f"for {', '.join(missing)}")
    return df


# settings that do not change what a run computes; time_warp is a candidate column of the
# table itself, checked when the candidates are matched
_RUN_ONLY = {"threads", "device", "checkpoint_every", "time_warp"}


def _check_reused_settings(cfg) -> None:
    """The reused runs must have been trained with this run's model and training settings:
    otherwise the table would credit them to a configuration they were not trained with.
    The settings come from the config.yaml kairo writes next to every runs table."""
    from pathlib import Path

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
            # it is: resolve_head would read it as false
            def value(v, e):
                if name == "head_norm":
                    v = str(v).lower()
                    return resolve_head(e, v, "auto")["head_norm"] if v in HEAD_NORMS else v
                return resolve_head(e, "auto", v)["weight_init"] if v in WEIGHT_INITS else v

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


def _describe_candidate(enc: str, pool: str, warp: float) -> str:
    return f"{enc} + {pool}" + (f", time warp {warp:g}" if warp else "")


def run_benchmark(cfg: BenchmarkConfig, rd, progress_bar=None) -> str:
    from kairo.attention._published import published_table

    cands = _candidates(cfg)
    datasets = canonical_datasets(cfg.datasets)
    _record_resolved(cfg, rd)
    if cfg.reuse:
        df = _read_reuse(cfg, datasets)
    elif len(cands) == 1 and cfg.refit:
        # nothing to choose: only the refit runs are trained
        enc, pool, warp = cands[0]
        df = pd.DataFrame([{"dataset": ds, "encoder": enc, "pool": pool, "time_warp": warp,
                            "seed": 0, "test_accuracy": np.nan, "val_accuracy": np.nan,
                            "test_macro_f1": np.nan, "seconds": np.nan, "n_params": 0}
                           for ds in datasets])
    elif cfg.select == "cv":
        for ds in datasets:                       # fail fast, in this process
            try:
                cv_folds(_data(ds, cfg.mnist1d_length)[0].y, cfg.folds, 0)
            except DataError as exc:
                raise DataError(f"dataset {ds}: {exc}") from None
        # each fold is trained like the refit (no hold-out, the full epochs), so the CV
        # accuracy estimates the protocol whose test accuracy is reported
        df = run_grid(_jobs(cfg, cands, datasets, folds=cfg.folds, seeds=cfg.cv_repeats,
                            val_fraction=0.0), cfg.workers, progress_bar,
                      executor=cfg.executor)
    else:
        df = run_grid(_jobs(cfg, cands, datasets), cfg.workers, progress_bar,
                      executor=cfg.executor)
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
        score = summary.val_mean.fillna(-np.inf)   # NaN: no validation hold-out (one combo)
        if df.test_accuracy.notna().any():
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
    if cfg.refit:
        # the chosen configuration is trained again on the whole training split for the full
        # epochs (no hold-out, weights of the lowest training loss): a few held-out series are
        # a noisy early-stopping signal on small sets and cost the model a fifth of its data
        chosen = {ds: [(r.encoder, r["pool"], r.time_warp)] for ds, r in table.iterrows()}
        refit = run_grid(_jobs(cfg, chosen, list(chosen), val_fraction=0.0), cfg.workers,
                         progress_bar, executor=cfg.executor)
        rd.add("refit_runs.csv", refit)
        g = refit.groupby("dataset", sort=False).test_accuracy
        if not cv:
            table["selection_test"] = table["kairo"]
        table["kairo"], table["kairo_sd"], table["n"] = g.mean(), g.std(), g.size()
        per_seed = {ds: refit.test_accuracy[refit.dataset == ds].to_numpy() for ds in table.index}
    else:
        per_seed = {ds: df.test_accuracy[(df.dataset == ds) & (df.encoder == r.encoder) &
                                         (df["pool"] == r["pool"]) &
                                         (df.time_warp == r.time_warp)].to_numpy()
                    for ds, r in table.iterrows()}
    table = table.join(published_table(list(table.index)))
    table["vs ResNet"] = table["kairo"] - table["ResNet (Fawaz 2019)"]
    table["p vs ResNet"] = [resnet_test(per_seed[ds], ds) for ds in table.index]
    rd.add("benchmark.csv", table.reset_index())
    # a reused table's fold count, not --folds
    how = (f" (chosen by {int(df.fold.max()) + 1}-fold CV × {int(summary.repeats.max())})"
           if cv else
           " (chosen on validation)" if summary.val_mean.notna().any() else "")
    w = max([18] + [len(d) for d in table.index])     # PickupGestureWiimoteZ is 21
    lines = [f"{'dataset':{w}s} {'kairo':>13s} {'ResNet':>7s} {'HC2':>6s} {'Incep.':>6s} "
             f"{'WEASEL2':>7s} {'FreshP.':>7s}  configuration{how}"]
    for ds, r in table.iterrows():
        sd = r.kairo_sd if r.n > 1 else 0.0
        lines.append(f"{ds:{w}s} {r.kairo:.3f} ± {sd:.3f} {r['ResNet (Fawaz 2019)']:7.3f} "
                     f"{r['HC2']:6.3f} {r['InceptionTime']:6.3f} {r['WEASEL-2.0']:7.3f} "
                     f"{r['FreshPRINCE']:7.3f}  "
                     f"{_describe_candidate(r.encoder, r['pool'], r.time_warp)}")
    if cv:
        lines.append("cross-validated accuracy of each candidate (training split only):")
        for r in summary.itertuples():
            what = _describe_candidate(r.encoder, r.pool, r.time_warp)
            lines.append(f"  {r.dataset:{w}s} {what:32s} {r.cv_accuracy:.3f} "
                         f"({r.cv_series} held-out predictions)")
    lines.append(("kairo: the chosen configuration refit on the whole training split (test "
                  "accuracy over seeds)" if cfg.refit else
                  "kairo: the chosen configuration's runs with a validation hold-out"))
    lines.append("published: default train/test split (aeon's resample 0); ResNet: Fawaz et al. "
                 "2019, mean of their 5 runs, where bundled")
    tested = table["p vs ResNet"].dropna()
    if len(tested):
        lines.append("kairo vs ResNet's runs (Welch t-test): " + "; ".join(
            f"{ds} {table.loc[ds, 'vs ResNet']:+.3f} (p {p:.2f})" for ds, p in tested.items()))
    return "\n".join(lines)
