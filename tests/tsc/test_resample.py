"""The bake-off's resampling protocol, index for index against aeon's (tsml-eval's) resampler,
and the published bake-off results kairo reads offline."""

from __future__ import annotations

import numpy as np
import pytest
from aeon.benchmarking.resampling import stratified_resample_data_indices
from aeon.datasets import load_classification

from kairo import DataError
from kairo.tsc import (BAKEOFF_CLASSIFIERS, bakeoff_results, load_dataset,
                             published_table, resample_split, stratified_resample)


@pytest.mark.parametrize("name", ["GunPoint", "ArrowHead", "ACSF1"])
def test_resamples_are_aeons_index_for_index(name):
    _, y_train = load_classification(name, split="train")
    _, y_test = load_classification(name, split="test")
    for r in (1, 2, 7, 29):
        ours = stratified_resample(y_train, y_test, r)
        theirs = stratified_resample_data_indices(y_train, y_test, random_state=r)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)


def test_resamples_order_classes_as_strings_and_zero_is_the_archive_split():
    rng = np.random.default_rng(0)
    labels = np.array([str(i) for i in range(1, 13)])              # "10" sorts before "2"
    y_train, y_test = rng.choice(labels, 60), rng.choice(labels, 90)
    y_train[:12] = labels                                           # every class in train
    y_test[:12] = labels
    for r in (1, 3):
        ours = stratified_resample(y_train, y_test, r)
        theirs = stratified_resample_data_indices(y_train, y_test, random_state=r)
        for a, b in zip(ours, theirs):
            np.testing.assert_array_equal(a, b)
        tr, te = ours
        assert sorted(np.concatenate([tr, te])) == list(range(150))
        pooled = np.concatenate([y_train, y_test])
        for c in labels:                                            # class counts kept
            assert (pooled[tr] == c).sum() == (y_train == c).sum()
    tr, te = stratified_resample(y_train, y_test, 0)
    np.testing.assert_array_equal(tr, np.arange(60))
    np.testing.assert_array_equal(te, 60 + np.arange(90))


def test_resample_split_keeps_series_and_labels_together():
    train, test = load_dataset("GunPoint", "train"), load_dataset("GunPoint", "test")
    assert resample_split(train, test, 0) == (train, test)
    a, b = resample_split(train, test, 3)
    assert (len(a), len(b)) == (len(train), len(test)) and a.classes == train.classes
    assert np.bincount(a.y).tolist() == np.bincount(train.y).tolist()
    pooled = np.concatenate([train.x, test.x])
    tr, _ = stratified_resample(np.array(train.classes)[train.y],
                                np.array(test.classes)[test.y], 3)
    np.testing.assert_array_equal(a.x, pooled[tr])
    # each series keeps its label: find series 0 of the resampled train among the originals
    i = int(np.flatnonzero((pooled == a.x[0]).all(axis=(1, 2)))[0])
    pooled_y = np.concatenate([train.y, test.y])
    assert pooled_y[i] == a.y[0]


def test_bad_resamples_are_refused():
    with pytest.raises(DataError, match="resample must be an integer ≥ 0"):
        stratified_resample(["a", "b"], ["a"], -1)
    with pytest.raises(DataError, match=r"classes \['c'\] the training split lacks"):
        stratified_resample(["a", "b"], ["a", "c"], 1)
    with pytest.raises(DataError, match="resamples must be an integer in 1…30"):
        published_table(["GunPoint"], resamples=31)
    with pytest.raises(DataError, match="no published bake-off results for 'Nope'"):
        bakeoff_results("Nope")


def test_the_bakeoff_results_are_read_offline():
    for name in BAKEOFF_CLASSIFIERS:
        t = bakeoff_results(name)
        assert list(t.columns) == list(range(30)) and len(t) in (112, 142)
        assert t.notna().all().all() and ((t >= 0) & (t <= 1)).all().all()
    hc2 = bakeoff_results("HC2")
    assert hc2.loc["GunPoint", 0] == 1.0 and len(hc2) == 142
    t = published_table(["ArrowHead", "PickupGestureWiimoteZ"], resamples=5)
    assert t.loc["ArrowHead", "H-InceptionTime (5 resamples)"] == pytest.approx(
        bakeoff_results("H-InceptionTime").loc["ArrowHead", :4].mean())
    assert t.loc["PickupGestureWiimoteZ", "MR-Hydra"] == pytest.approx(
        bakeoff_results("MR-Hydra").loc["PickupGestureWiimoteZ_eq", 0])


def test_benchmark_on_resamples_runs_each_seed_on_its_resample(tmp_path):
    """`kairo tsc benchmark --resamples 2`: run i trains and scores on resample i (kairo and
    the peer alike) and the table sets the bake-off's means over the same resamples beside."""
    import pandas as pd

    from kairo.cli import main

    out = tmp_path / "bench"
    assert main(["tsc", "benchmark", "--datasets", "GunPoint", "--encoders", "resnet",
                 "--pools", "mean", "--resamples", "2", "--seed", "4", "--workers", "1",
                 "--epochs", "1", "--d-model", "8", "--blocks", "1", "--peers", "minirocket",
                 "--out", str(out)]) == 0
    runs = pd.read_csv(out / "refit_runs.csv")
    assert sorted(zip(runs.seed, runs["resample"])) == [(4, 0), (5, 1)]
    row = pd.read_csv(out / "benchmark.csv").iloc[0]
    hc2 = bakeoff_results("HC2").loc["GunPoint", [0, 1]].mean()
    assert row["HC2 (2 resamples)"] == pytest.approx(hc2) and row.n == 2
    assert "HC2 (2 resamples)" in (out / "table.md").read_text()
    # resample 1 is another split: MiniRocket's accuracies come from the two splits
    a = load_dataset("GunPoint", "train"), load_dataset("GunPoint", "test")
    b = resample_split(*a, 1)
    assert not np.array_equal(a[1].x, b[1].x)
    each = pd.read_csv(out / "per_seed.csv")
    assert set(each.method) == {"kairo", "MiniRocket"} and len(each) == 4
