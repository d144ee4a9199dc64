"""Choosing ``kairo tsc benchmark``'s configuration of each dataset on the training split only:
the candidates (encoder × pooling head × time warp), chosen on a validation hold-out or by
stratified k-fold cross-validation, or from the runs of an earlier grid (``--reuse``, checked
against this run's settings first)."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from kairo._errors import ConfigError, DataError
from kairo.tsc._config import (ENCODERS, HEAD_NORMS, WEIGHT_INITS, ModelConfig,
                                     TrainConfig)
from kairo.tsc._grid import _data, _jobs, cv_folds, run_grid, summarize, warp_key
from kairo.tsc._recipe import model_recipe


__all__ = ["cv_summary"]


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
                            val_fraction=0.0), rd.points, workers=cfg.workers,
                      progress_bar=progress_bar, executor=cfg.executor)
    else:
        df = run_grid(_jobs(cfg, cands, datasets), rd.points, workers=cfg.workers,
                      progress_bar=progress_bar, executor=cfg.executor)
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
