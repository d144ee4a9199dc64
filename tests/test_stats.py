"""kairo._stats: the statistics every family reports, on known values."""

from __future__ import annotations

import math

import pytest

from kairo.stats import null_stats, sign_test_p, welch_p, wilcoxon_p


@pytest.mark.parametrize("wins, n, p", [(8, 8, 2 / 256), (0, 8, 2 / 256), (4, 8, 1.0),
                                        (7, 8, 2 * 9 / 256), (0, 0, 1.0)])
def test_sign_test_known_values(wins, n, p):
    assert sign_test_p(wins, n - wins) == pytest.approx(p)


def test_welch_without_spread():
    assert welch_p([0.9, 0.9], [0.9, 0.9]) == 1.0
    assert math.isnan(welch_p([0.9, 0.9], [0.8, 0.8]))


def test_wilcoxon_needs_three_nonzero_values():
    assert math.isnan(wilcoxon_p([1.0, 2.0]))
    assert math.isnan(wilcoxon_p([0.0, 0.0, 0.0]))
    assert wilcoxon_p([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]) == pytest.approx(2 / 64)


def test_null_stats_counts_the_real_value_as_a_draw():
    s = null_stats(3.0, [1.0, 2.0, 4.0], higher_is_better=True)
    assert s["p_better"] == pytest.approx(2 / 4) and s["null_mean"] == pytest.approx(7 / 3)
