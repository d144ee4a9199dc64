"""``kairo tsc compare-pooling``: every pooling head × encoder × dataset × seed (a grid of
:mod:`kairo.tsc._grid`), each head paired against mean pooling, and a figure of test
accuracy per head."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kairo._stats import wilcoxon_p
from kairo.tsc._config import CompareConfig
from kairo.tsc._grid import _jobs, _record_resolved, canonical_datasets, run_grid, summarize


__all__ = ["pooling_tests", "comparison_figure", "run_compare"]


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


def run_compare(cfg: CompareConfig, rd, progress_bar=None) -> str:
    combos = [(e, p) for e in cfg.encoders for p in cfg.pools]
    datasets = canonical_datasets(cfg.datasets)
    _record_resolved(cfg, rd, datasets)
    df = run_grid(_jobs(cfg, combos, datasets), rd.points, workers=cfg.workers,
                  progress_bar=progress_bar, executor=cfg.executor)
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
