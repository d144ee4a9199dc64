"""StreamingRidgeCV passes scikit-learn's estimator contract (STYLE.md convention 3)."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from kairo.reservoir import StreamingRidgeCV


@parametrize_with_checks([StreamingRidgeCV(), StreamingRidgeCV(alphas=(1e-3,), cv=1),
                          StreamingRidgeCV(alpha_per_target=True, fit_intercept=False)])
def test_sklearn_contract(estimator, check):
    check(estimator)
