"""benchmarks/studies/tsc_first_difference.py: the input it trains on is [x, Δx], with Δx
zero at the first step and next to padding, so padding never leaks into a valid step."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.study


def test_first_difference_channels_and_padding(load_benchmark):
    from kairo.tsc import TSData

    study = load_benchmark("studies/tsc_first_difference")
    x = np.array([[[1, 3, 6, 10, 99], [0, 1, 0, 1, 99]],
                  [[2, 2, 5, 7, 7], [1, 1, 1, 1, 1]]], dtype=np.float32)
    mask = np.array([[True, True, True, True, False], [True] * 5])
    d = TSData(x, np.array([0, 1]), mask, ("a", "b"), "t")
    out = study.with_difference(d)
    assert out.x.shape == (2, 4, 5) and out.x.dtype == np.float32
    np.testing.assert_array_equal(out.x[:, :2], x)
    np.testing.assert_array_equal(out.x[0, 2], [0, 2, 3, 4, 0])      # 99 − 10 is padding
    np.testing.assert_array_equal(out.x[0, 3], [0, 1, -1, 1, 0])
    np.testing.assert_array_equal(out.x[1, 2], [0, 0, 3, 2, 0])
    assert out.mask is mask and (out.y == d.y).all()
