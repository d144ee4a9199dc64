"""StreamingRidgeCV: exactness of the streamed solution and of the CV errors."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import Ridge

from kairo.reservoir import StreamingRidgeCV


def _data(n=600, p=12, t=3, noise=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p)) + 2.0
    W = rng.normal(size=(p, t))
    Y = X @ W + 1.5 + noise * rng.normal(size=(n, t))
    return X, Y


def test_single_alpha_equals_sklearn_ridge():
    X, Y = _data()
    m = StreamingRidgeCV(alphas=(1e-2,)).fit(X, Y)
    # kairo's alpha is relative to mean(diag(XᵀX)) of the uncentred features
    lam = 1e-2 * np.trace(X.T @ X) / X.shape[1]
    ref = Ridge(alpha=lam).fit(X, Y)  # sklearn centres, i.e. leaves the intercept unpenalized
    np.testing.assert_allclose(m.coef_, ref.coef_, rtol=1e-8)
    np.testing.assert_allclose(m.intercept_, ref.intercept_, rtol=1e-8)
    np.testing.assert_allclose(m.predict(X), ref.predict(X), rtol=1e-8)
    assert m.alpha_scale_ == pytest.approx(np.trace(X.T @ X) / X.shape[1])


def test_chunked_partial_fit_equals_fit():
    X, Y = _data()
    a = StreamingRidgeCV(cv=4, block=150).fit(X, Y)   # fit: block = ceil(600/4) = 150
    b = StreamingRidgeCV(cv=4, block=150)
    for s in range(0, 600, 97):
        b.partial_fit(X[s:s + 97], Y[s:s + 97])
    b.finalize()
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-10)
    np.testing.assert_allclose(a.cv_errors_, b.cv_errors_, rtol=1e-10)
    assert a.alpha_ == b.alpha_


def test_cv_errors_equal_explicit_validation():
    X, Y = _data(n=400, noise=2.0)
    alphas = (1e-4, 1e-1, 10.0)
    m = StreamingRidgeCV(alphas=alphas, cv=4).fit(X, Y)
    folds = np.arange(400) // 100
    expected = np.zeros((3, Y.shape[1]))
    for k in range(4):
        tr, va = folds != k, folds == k
        scale = np.trace(X[tr].T @ X[tr]) / X.shape[1]
        for i, a in enumerate(alphas):
            r = Ridge(alpha=a * scale).fit(X[tr], Y[tr])
            expected[i] += ((Y[va] - r.predict(X[va])) ** 2).sum(0)
    np.testing.assert_allclose(m.cv_errors_, expected, rtol=1e-7)
    assert m.alpha_ == alphas[int(np.argmin(expected.sum(1)))]


def test_alpha_per_target_and_1d_targets():
    X, Y = _data(noise=1.0)
    Y[:, 2] = np.random.default_rng(9).normal(size=600)  # pure noise → wants a big penalty
    m = StreamingRidgeCV(alphas=(1e-6, 1e-2, 1e2), alpha_per_target=True).fit(X, Y)
    assert m.alpha_.shape == (3,) and m.alpha_[2] == 1e2 and m.alpha_[0] < 1e2
    one = StreamingRidgeCV().fit(X, Y[:, 0])
    assert one.coef_.shape == (12,) and np.isscalar(one.intercept_)
    assert one.predict(X).shape == (600,)
    assert clone(one).get_params() == one.get_params()
