"""Classification metrics (scikit-learn, ``zero_division=0``) and a confusion-matrix figure."""

from __future__ import annotations

import warnings

import numpy as np

from kairo._errors import DataError

__all__ = ["classification_report", "per_class_table", "confusion_figure"]


def _labels(y, name: str, k: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0 or not np.issubdtype(y.dtype, np.integer):
        raise DataError(f"{name} must be a non-empty 1-D array of integer class indices, got "
                        f"{y.dtype} array of shape {y.shape}")
    if y.min() < 0 or y.max() >= k:
        raise DataError(f"{name} holds class indices {y.min()}…{y.max()}, outside 0…{k - 1} "
                        f"({k} class names)")
    return y.astype(np.int64)


def classification_report(y_true, y_pred, class_names) -> dict:
    """Scores of predictions against the truth.

    Parameters
    ----------
    y_true, y_pred : int arrays [n_samples], class indices 0…k−1
    class_names : sequence of k str

    Returns
    -------
    dict with ``accuracy``, ``balanced_accuracy`` (mean recall over the classes present in
    ``y_true``), ``precision_macro``, ``recall_macro``, ``f1_macro`` (unweighted means over the
    classes present in ``y_true`` or ``y_pred``), ``per_class`` (dict of lists over all k
    classes: ``class``, ``precision``, ``recall``, ``f1``, ``support``), ``confusion`` (int64
    [k, k], rows = true class, columns = predicted) and ``class_names``. A class never
    predicted has precision 0; a class never present has recall 0.
    """
    from sklearn.metrics import (accuracy_score, balanced_accuracy_score, confusion_matrix,
                                 precision_recall_fscore_support)

    names = [str(c) for c in class_names]
    k = len(names)
    if k < 1:
        raise DataError("class_names is empty")
    yt, yp = _labels(y_true, "y_true", k), _labels(y_pred, "y_pred", k)
    if yt.shape != yp.shape:
        raise DataError(f"y_true has {yt.size} labels but y_pred has {yp.size}")
    every = np.arange(k)
    p, r, f, s = precision_recall_fscore_support(yt, yp, labels=every, zero_division=0)
    pm, rm, fm, _ = precision_recall_fscore_support(yt, yp, average="macro", zero_division=0)
    with warnings.catch_warnings():          # "y_pred contains classes not in y_true"
        warnings.simplefilter("ignore", UserWarning)
        bal = balanced_accuracy_score(yt, yp)
    return {
        "accuracy": float(accuracy_score(yt, yp)),
        "balanced_accuracy": float(bal),
        "precision_macro": float(pm), "recall_macro": float(rm), "f1_macro": float(fm),
        "per_class": {"class": names, "precision": p.tolist(), "recall": r.tolist(),
                      "f1": f.tolist(), "support": s.astype(int).tolist()},
        "confusion": confusion_matrix(yt, yp, labels=every).astype(np.int64),
        "class_names": names,
        "n_samples": int(yt.size),
    }


def per_class_table(report: dict):
    """The report's per-class scores as a pandas DataFrame indexed by class name."""
    import pandas as pd

    if "per_class" not in report:
        raise DataError("per_class_table expects a dict from classification_report")
    pc = report["per_class"]
    return pd.DataFrame({k: pc[k] for k in ("precision", "recall", "f1", "support")},
                        index=pd.Index(pc["class"], name="class"))


def confusion_figure(cm, class_names, normalize: bool = True, *, title: str = ""):
    """A `matplotlib.figure.Figure` of the confusion matrix ``cm`` [k, k] (rows = true).

    ``normalize=True`` shows each row as fractions of its true class (an empty row stays 0).
    Cells are annotated when k ≤ 20.
    """
    from matplotlib.figure import Figure

    cm = np.asarray(cm)
    names = [str(c) for c in class_names]
    k = len(names)
    if cm.ndim != 2 or cm.shape != (k, k):
        raise DataError(f"confusion matrix must be [{k}, {k}] for {k} class names, got shape "
                        f"{cm.shape}")
    if not np.issubdtype(cm.dtype, np.number) or (cm < 0).any():
        raise DataError("confusion matrix must hold non-negative counts")
    shown = cm.astype(np.float64)
    if normalize:
        rows = shown.sum(axis=1, keepdims=True)
        shown = np.divide(shown, rows, out=np.zeros_like(shown), where=rows > 0)
    size = min(12.0, 2.5 + 0.45 * k)
    fig = Figure(figsize=(size + 1.2, size))
    ax = fig.add_subplot()
    im = ax.imshow(shown, cmap="Blues", vmin=0, vmax=1 if normalize else None)
    fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04,
                 label="fraction of true class" if normalize else "count")
    ax.set_xticks(range(k), names, rotation=45 if k > 6 else 0, ha="right" if k > 6 else "center")
    ax.set_yticks(range(k), names)
    ax.set_xlabel("predicted class")
    ax.set_ylabel("true class")
    if title:
        ax.set_title(title)
    if k <= 20:
        top = shown.max() if shown.size else 0
        for i in range(k):
            for j in range(k):
                v = shown[i, j]
                ax.text(j, i, f"{v:.2f}" if normalize else f"{int(cm[i, j])}", ha="center",
                        va="center", fontsize=8, color="white" if v > 0.5 * top else "black")
    fig.tight_layout()
    return fig
