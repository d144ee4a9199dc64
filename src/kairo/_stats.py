"""The statistics every family reports, in one place: paired and one-sample Wilcoxon tests,
Welch's t-test from summary numbers, the sign test, and a real value against null replicates.

NaN, not an exception, is the answer where a test is undefined (too few values, no spread), so
a table with a degenerate cell still writes.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["wilcoxon_p", "welch_p", "sign_test_p", "null_stats"]


def wilcoxon_p(x, *, zero_method: str = "wilcox", min_n: int = 3) -> float:
    """Two-sided one-sample Wilcoxon signed-rank p of ``x`` (or of paired differences)
    against 0; NaN with fewer than ``min_n`` finite values or all zero. ``zero_method`` is
    SciPy's: "wilcox" drops zero differences, "zsplit" splits their ranks between the signs
    (paired accuracies, where ties are common)."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if x.size < min_n or np.all(x == 0):
        return float("nan")
    return float(stats.wilcoxon(x, zero_method=zero_method).pvalue)


def welch_p(a, b) -> float:
    """Two-sided Welch t-test p of samples ``a`` and ``b`` (each ≥ 2 values), computed from
    the means and sample variances, so one side with no spread is an ordinary case, not
    SciPy's precision warning on identical data. With no spread on either side no test is
    defined: 1 when the means are equal, else NaN (a constant gap is judged by its size)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    sa, sb = a.std(ddof=1), b.std(ddof=1)
    if sa == 0 and sb == 0:
        return 1.0 if a.mean() == b.mean() else float("nan")
    return float(stats.ttest_ind_from_stats(a.mean(), sa, len(a), b.mean(), sb, len(b),
                                            equal_var=False).pvalue)


def sign_test_p(wins: int, losses: int) -> float:
    """Two-sided exact sign test of ``wins`` against ``losses`` (ties dropped); 1 without a
    decided pair."""
    n = int(wins) + int(losses)
    if n == 0:
        return 1.0
    return float(stats.binomtest(int(wins), n, 0.5).pvalue)


def null_stats(real: float, nulls, higher_is_better: bool) -> dict:
    """Mean ± sd of the nulls, z-score of the real value, empirical p-values.

    ``p_better`` is the one-sided empirical p for "the real wiring is better than this null":
    (1 + #nulls at least as good as real) / (n + 1) (Phipson & Smyth 2010). ``p_two_sided``
    counts nulls at least as far from the null mean as the real value.
    """
    nulls = np.asarray(nulls, dtype=float)
    mean, sd = float(nulls.mean()), float(nulls.std(ddof=1)) if nulls.size > 1 else float("nan")
    z = (real - mean) / sd if sd > 0 else float("nan")
    as_good = (nulls >= real) if higher_is_better else (nulls <= real)
    far = np.abs(nulls - mean) >= abs(real - mean)
    return {"real": float(real), "null_mean": mean, "null_sd": sd, "z": z,
            "p_better": (1 + int(as_good.sum())) / (nulls.size + 1),
            "p_two_sided": (1 + int(far.sum())) / (nulls.size + 1), "n_nulls": int(nulls.size),
            "real_better_than_null_mean": bool(real > mean if higher_is_better else real < mean)}
