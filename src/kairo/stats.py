"""The statistical tests kairo reports, public for benchmarks and scripts: paired and
one-sample Wilcoxon (:func:`wilcoxon_p`), Welch's t-test (:func:`welch_p`), the sign test
(:func:`sign_test_p`) and a real value against null replicates (:func:`null_stats`); NaN where
a test is undefined. These are the objects of :mod:`kairo._stats`, re-exported so code outside
the package has a public import path.
"""

from kairo._stats import null_stats, sign_test_p, welch_p, wilcoxon_p

__all__ = ["wilcoxon_p", "welch_p", "sign_test_p", "null_stats"]
