"""kairo.tsc metrics: hand-computed scores, absent classes, the confusion figure."""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
from matplotlib.figure import Figure

from kairo import DataError
from kairo.tsc import classification_report
from kairo.tsc._metrics import confusion_figure, per_class_table

NAMES = ("cat", "dog", "eel")
# truth 0 0 0 1 1 2, prediction 0 0 1 1 1 1 — worked by hand:
#   cat: TP 2, FP 0, FN 1 → P 1,   R 2/3, F1 0.8
#   dog: TP 2, FP 2, FN 0 → P 1/2, R 1,   F1 2/3
#   eel: TP 0, FP 0, FN 1 → P 0 (never predicted), R 0, F1 0
Y_TRUE = np.array([0, 0, 0, 1, 1, 2])
Y_PRED = np.array([0, 0, 1, 1, 1, 1])


def test_known_values_on_a_hand_made_example():
    with warnings.catch_warnings():
        warnings.simplefilter("error")            # zero_division=0: no UndefinedMetricWarning
        r = classification_report(Y_TRUE, Y_PRED, NAMES)
    assert r["accuracy"] == pytest.approx(4 / 6)
    assert r["balanced_accuracy"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert r["precision_macro"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert r["recall_macro"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    assert r["f1_macro"] == pytest.approx((0.8 + 2 / 3 + 0) / 3)
    np.testing.assert_allclose(r["per_class"]["precision"], [1, 0.5, 0])
    np.testing.assert_allclose(r["per_class"]["recall"], [2 / 3, 1, 0])
    np.testing.assert_allclose(r["per_class"]["f1"], [0.8, 2 / 3, 0])
    assert r["per_class"]["support"] == [3, 2, 1]
    np.testing.assert_array_equal(r["confusion"], [[2, 1, 0], [0, 2, 0], [0, 1, 0]])
    assert r["confusion"].sum(axis=1).tolist() == [3, 2, 1]        # rows = true class
    assert r["n_samples"] == 6 and r["class_names"] == list(NAMES)


def test_per_class_table():
    t = per_class_table(classification_report(Y_TRUE, Y_PRED, NAMES))
    assert list(t.index) == list(NAMES) and t.index.name == "class"
    assert list(t.columns) == ["precision", "recall", "f1", "support"]
    assert t.loc["dog", "precision"] == pytest.approx(0.5)
    assert t["support"].sum() == 6
    with pytest.raises(DataError, match="expects a dict from classification_report"):
        per_class_table({"accuracy": 1.0})


def test_classes_absent_from_truth_or_predictions():
    # class 2 predicted but never true; class 3 neither: both stay in the per-class table
    yt, yp = np.array([0, 0, 1]), np.array([0, 2, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        r = classification_report(yt, yp, ["a", "b", "c", "d"])
    assert r["balanced_accuracy"] == pytest.approx((0.5 + 1) / 2)   # over classes in y_true
    assert r["per_class"]["support"] == [2, 1, 0, 0]
    assert r["per_class"]["precision"] == [1.0, 1.0, 0.0, 0.0]
    assert r["confusion"].shape == (4, 4)
    # macro means run over the classes seen (a, b, c), not the unseen d
    assert r["recall_macro"] == pytest.approx((0.5 + 1 + 0) / 3)


def test_bad_inputs():
    with pytest.raises(DataError, match="y_true has 3 labels but y_pred has 2"):
        classification_report([0, 1, 1], [0, 1], ["a", "b"])
    with pytest.raises(DataError, match=r"y_pred holds class indices 0…5, outside 0…1"):
        classification_report([0, 1], [0, 5], ["a", "b"])
    with pytest.raises(DataError, match="y_true must be a non-empty 1-D array of integer"):
        classification_report([0.5, 1.0], [0, 1], ["a", "b"])


def test_confusion_figure_normalizes_rows():
    cm = np.array([[2, 1, 0], [0, 2, 0], [0, 0, 0]])
    fig = confusion_figure(cm, NAMES)
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    shown = ax.images[0].get_array()
    np.testing.assert_allclose(shown, [[2 / 3, 1 / 3, 0], [0, 1, 0], [0, 0, 0]])  # empty row: 0
    assert [t.get_text() for t in ax.get_yticklabels()] == list(NAMES)
    assert ax.get_ylabel() == "true class" and ax.get_xlabel() == "predicted class"
    assert {t.get_text() for t in ax.texts} >= {"0.67", "0.33", "1.00"}
    buf = io.BytesIO()
    fig.savefig(buf, format="png")                   # renders without pyplot
    assert buf.getvalue()[:4] == b"\x89PNG"


def test_confusion_figure_counts_and_bad_shapes():
    cm = np.array([[5, 1], [2, 7]])
    ax = confusion_figure(cm, ["x", "y"], normalize=False).axes[0]
    np.testing.assert_array_equal(ax.images[0].get_array(), cm)
    assert sorted(t.get_text() for t in ax.texts) == ["1", "2", "5", "7"]
    with pytest.raises(DataError, match=r"must be \[3, 3\] for 3 class names"):
        confusion_figure(cm, NAMES)
    with pytest.raises(DataError, match="non-negative counts"):
        confusion_figure(-cm, ["x", "y"])
