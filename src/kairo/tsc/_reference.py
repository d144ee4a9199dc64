"""Comparing a benchmark's runs with runs made elsewhere: a Welch test against Fawaz et al.'s
published ResNet runs, and an earlier ``kairo tsc benchmark``'s runs (``--reference``), read,
checked and paired with this run's seed by seed (Wilcoxon signed-rank, or the exact sign test
with few pairs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from kairo._stats import sign_test_p, welch_p, wilcoxon_p


__all__ = ["resnet_test", "read_reference", "reference_test", "MIN_WILCOXON_PAIRS"]


def resnet_test(accuracies, dataset: str) -> float:
    """Two-sided Welch t-test p-value of kairo's per-seed test accuracies against Fawaz et
    al.'s five ResNet runs on ``dataset``; NaN without ResNet runs, with fewer than two
    kairo runs, or when neither side has any spread and the means differ (no test is
    defined). Both sides' seed-to-seed spread counts (their runs differ by up to 0.05 on
    ArrowHead), which a one-sample test against their mean would ignore."""
    from kairo.tsc._published import RESNET_FAWAZ2019_RUNS

    acc = np.asarray(accuracies, dtype=float)
    acc = acc[np.isfinite(acc)]
    if dataset not in RESNET_FAWAZ2019_RUNS or len(acc) < 2:
        return float("nan")
    return welch_p(acc, RESNET_FAWAZ2019_RUNS[dataset])


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
