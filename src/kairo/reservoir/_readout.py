r"""Linear readouts: a streaming ridge regression with cross-validated regularization.

The ridge is solved from accumulated sufficient statistics, never from the stored states:
for each cross-validation fold ``k`` it keeps :math:`G_k = X_k^\top X_k`, :math:`B_k =
X_k^\top Y_k`, :math:`\sum Y_k^2` and the row count (``X`` with a column of ones appended for
the intercept). Training on all folds but ``k`` uses :math:`G - G_k`; the validation error on
fold ``k`` is then exact without revisiting any state:

.. math::

    \lVert Y_k - X_k W\rVert^2 = \textstyle\sum Y_k^2 - 2\,\mathrm{tr}(W^\top B_k)
                                 + \mathrm{tr}(W^\top G_k W).

Rows are assigned to folds in contiguous blocks (``block`` rows each, folds taken in turn),
the blocked cross-validation suited to time series. ``alphas`` are relative: the penalty is
``alpha × mean(diag(G))`` so the same grid works whatever the scale of the states.

scikit-learn's ``RidgeCV`` needs every state in memory and uses leave-one-out (wrong for
autocorrelated series), and reservoirpy's ``Ridge`` has no CV; hence this estimator, which
follows scikit-learn's contract (``fit`` returns self, ``coef_`` is (n_targets, n_features)).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_array, check_X_y

from kairo._errors import KairoError

__all__ = ["StreamingRidgeCV", "DEFAULT_ALPHAS"]

# Factor-100 steps: each alpha costs one Cholesky per fold (≈0.15 s at 2,953 features), and
# validation error is flat enough in log(alpha) that a coarser grid loses little.
DEFAULT_ALPHAS = tuple(10.0 ** np.arange(-10, 3, 2))


def _check_xy(X, y):
    """scikit-learn's input checks (its standard messages), raised as kairo errors."""
    try:
        return check_X_y(X, y, dtype=np.float64, multi_output=True, y_numeric=True)
    except ValueError as exc:
        raise KairoError(f"StreamingRidgeCV: {exc}") from exc


def _solve(g: np.ndarray, b: np.ndarray, lam: float, intercept: bool) -> np.ndarray | None:
    a = g.copy()
    p = a.shape[0] - (1 if intercept else 0)
    a[np.arange(p), np.arange(p)] += lam
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, check_finite=False), b,
                                      check_finite=False)
    except np.linalg.LinAlgError:
        return None


class StreamingRidgeCV(RegressorMixin, BaseEstimator):
    """Ridge regression fitted from streamed chunks, ``alpha`` chosen by blocked K-fold CV.

    Parameters
    ----------
    alphas : sequence of float
        Relative penalties to try (multiplied by the mean diagonal of XᵀX).
    cv : int
        Number of folds (≥ 2). With a single alpha no CV is done.
    block : int or None
        Rows per contiguous CV block in :meth:`partial_fit`; ``fit`` uses ``ceil(n / cv)``.
    fit_intercept : bool
    alpha_per_target : bool
        Choose alpha separately for each target column.

    Attributes
    ----------
    coef_ : ndarray, shape (n_targets, n_features) or (n_features,)
    intercept_ : ndarray, shape (n_targets,) or float
    alpha_ : float or ndarray — the chosen relative alpha(s)
    cv_errors_ : ndarray, shape (n_alphas, n_targets) — summed validation squared error
    n_samples_seen_ : int
    """

    def __init__(self, alphas=DEFAULT_ALPHAS, cv: int = 5, block: int | None = 256,
                 fit_intercept: bool = True, alpha_per_target: bool = False):
        self.alphas = alphas
        self.cv = cv
        self.block = block
        self.fit_intercept = fit_intercept
        self.alpha_per_target = alpha_per_target

    # ---------------------------------------------------------------- accumulation
    def _validate(self, X, y, first: bool):
        # scikit-learn's own checks give its standard messages for empty, complex, sparse,
        # non-finite and 1-D input; all are ValueErrors.
        X, y = _check_xy(X, y)
        y2 = y[:, None] if y.ndim == 1 else y
        if not first:
            if X.shape[1] != self.n_features_in_ or y2.shape[1] != self._gram_b.shape[2]:
                raise KairoError(f"X has {X.shape[1]} features, but StreamingRidgeCV is "
                                 f"expecting {self.n_features_in_} features as input (and "
                                 f"{self._gram_b.shape[2]} targets; got {y2.shape[1]})")
        return X, y2, y.ndim == 1

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def _reset(self, n_features: int, n_targets: int, y1d: bool) -> None:
        if int(self.cv) < 1:
            raise KairoError(f"cv must be ≥ 1, got {self.cv}")
        if len(self.alphas) == 0 or any(not (a > 0) for a in self.alphas):
            raise KairoError(f"alphas must be a non-empty list of positive numbers, got "
                             f"{self.alphas}")
        p = n_features + (1 if self.fit_intercept else 0)
        k = int(self.cv)
        self.n_features_in_ = n_features
        self._y1d = y1d
        self._gram_g = np.zeros((k, p, p))
        self._gram_b = np.zeros((k, p, n_targets))
        self._yy = np.zeros((k, n_targets))
        self._count = np.zeros(k, dtype=np.int64)
        self.n_samples_seen_ = 0

    def partial_fit(self, X, y, block: int | None = None):
        """Add a chunk of rows (in time order) to the accumulated statistics; returns self."""
        first = not hasattr(self, "_gram_g")
        X, y, y1d = self._validate(X, y, first)
        if first:
            self._reset(X.shape[1], y.shape[1], y1d)
        return self._accumulate(X, y, int(block or self.block or 256))

    def _accumulate(self, X: np.ndarray, y: np.ndarray, block: int):
        """Add validated rows ``X`` (n, p) and targets ``y`` (n, n_targets)."""
        p = X.shape[1]
        n_folds = self._gram_g.shape[0]
        # one Gram update per fold present in the chunk (large GEMMs are the efficient ones);
        # a fold's rows are sliced without a copy when contiguous. The intercept's row and
        # column come from column sums instead of a stacked column of ones.
        fold = ((self.n_samples_seen_ + np.arange(X.shape[0])) // block) % n_folds
        for k in np.unique(fold):
            rows = np.flatnonzero(fold == k)
            if rows[-1] - rows[0] + 1 == rows.size:
                xs, ys = X[rows[0]:rows[-1] + 1], y[rows[0]:rows[-1] + 1]
            else:
                xs, ys = X[rows], y[rows]
            g, b = self._gram_g[k], self._gram_b[k]
            g[:p, :p] += xs.T @ xs
            b[:p] += xs.T @ ys
            if self.fit_intercept:
                colsum = xs.sum(axis=0)
                g[:p, p] += colsum
                g[p, :p] += colsum
                g[p, p] += xs.shape[0]
                b[p] += ys.sum(axis=0)
            self._yy[k] += np.einsum("ij,ij->j", ys, ys)
            self._count[k] += xs.shape[0]
        self.n_samples_seen_ += X.shape[0]
        return self

    def fit(self, X, y):
        """Fit on all of ``X, y`` at once (contiguous K-fold CV); returns self."""
        for attr in ("_gram_g", "_gram_b", "_yy", "_count"):
            if hasattr(self, attr):
                delattr(self, attr)
        X, y, y1d = self._validate(X, y, first=True)
        self._reset(X.shape[1], y.shape[1], y1d)
        self._accumulate(X, y, block=max(1, -(-X.shape[0] // max(int(self.cv), 1))))
        return self.finalize()

    # ---------------------------------------------------------------- solving
    def finalize(self):
        """Choose alpha(s) by CV on the accumulated statistics and solve; returns self."""
        if not hasattr(self, "_gram_g") or self.n_samples_seen_ == 0:
            raise KairoError("no data: call partial_fit with at least one chunk first")
        g_all, b_all = self._gram_g.sum(0), self._gram_b.sum(0)
        p = self.n_features_in_
        alphas = np.asarray(self.alphas, dtype=float)
        n_t = b_all.shape[1]
        folds = [k for k in range(self._gram_g.shape[0]) if self._count[k] > 0]
        errors = np.zeros((alphas.size, n_t))
        if alphas.size > 1 and len(folds) >= 2:
            for k in folds:
                g_tr, b_tr = g_all - self._gram_g[k], b_all - self._gram_b[k]
                scale = max(np.trace(g_tr[:p, :p]) / max(p, 1), np.finfo(float).tiny)
                for i, a in enumerate(alphas):
                    w = _solve(g_tr, b_tr, a * scale, self.fit_intercept)
                    if w is None:
                        errors[i] = np.inf
                        continue
                    errors[i] += (self._yy[k] - 2 * np.einsum("ij,ij->j", w, self._gram_b[k])
                                  + np.einsum("ij,ij->j", w, self._gram_g[k] @ w))
        elif alphas.size > 1:
            raise KairoError(f"cross-validation needs data in ≥ 2 folds; got n_samples = "
                             f"{self.n_samples_seen_} with block size {self.block}. "
                             f"Give more rows, a smaller block, or a single alpha")
        self.cv_errors_ = errors
        scale = max(np.trace(g_all[:p, :p]) / max(p, 1), np.finfo(float).tiny)
        if self.alpha_per_target:
            best = np.argmin(errors, axis=0)
            coef = np.empty((g_all.shape[0], n_t))
            for i in np.unique(best):
                cols = best == i
                w = _solve(g_all, b_all[:, cols], alphas[i] * scale, self.fit_intercept)
                if w is None:
                    raise KairoError("ridge system is singular; use larger alphas")
                coef[:, cols] = w
            self.alpha_ = alphas[best]
        else:
            i = int(np.argmin(errors.sum(axis=1)))
            coef = _solve(g_all, b_all, alphas[i] * scale, self.fit_intercept)
            if coef is None:
                raise KairoError("ridge system is singular; use larger alphas")
            self.alpha_ = float(alphas[i])
        self.alpha_scale_ = float(scale)
        if self.fit_intercept:
            coef, intercept = coef[:-1], coef[-1]
        else:
            intercept = np.zeros(n_t)
        self.coef_ = coef.T[0] if self._y1d else coef.T
        self.intercept_ = float(intercept[0]) if self._y1d else intercept
        return self

    def predict(self, X) -> np.ndarray:
        if not hasattr(self, "coef_"):
            raise NotFittedYet("StreamingRidgeCV is not fitted: call fit, or partial_fit then "
                               "finalize, before predict")
        try:
            X = check_array(X, dtype=np.float64)
        except ValueError as exc:
            raise KairoError(f"StreamingRidgeCV.predict: {exc}") from exc
        if X.shape[1] != self.n_features_in_:
            raise KairoError(f"X has {X.shape[1]} features, but StreamingRidgeCV is expecting "
                             f"{self.n_features_in_} features as input")
        return X @ self.coef_.T + self.intercept_


class NotFittedYet(KairoError, NotFittedError):
    """``predict`` before ``fit`` (a kairo error and scikit-learn's NotFittedError)."""
