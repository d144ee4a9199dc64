"""kairo.tsc data: aeon's shipped sets offline, MNIST-1D, user arrays/CSV/.ts, z-norm,
stratified split."""

from __future__ import annotations

import socket
from pathlib import Path

import numpy as np
import pytest

from kairo import ConfigError, DataError, DataNotFoundError
from kairo.tsc import (TSData, from_arrays, list_datasets, load_csv, load_dataset, load_ts,
                             make_mnist1d, stratified_split, znormalize)
from kairo.tsc._data import STD_FLOOR, channel_stats, standardize
from kairo.tsc._mnist1d import TEMPLATES


def _aeon_file(name: str, split: str) -> Path:
    import aeon

    return Path(aeon.__file__).parent / "datasets" / "data" / name / f"{name}_{split}.ts"


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails loudly."""
    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


# ---------------------------------------------------------------------------- shipped sets
def test_list_datasets_holds_the_shipped_classification_sets_only():
    names = list_datasets()
    for expected in ("GunPoint", "JapaneseVowels", "BasicMotions", "ArrowHead", "OSULeaf",
                     "PickupGestureWiimoteZ", "ACSF1", "ItalyPowerDemand"):
        assert expected in names
    # regression sets and forecasting CSVs are not classification sets
    for absent in ("CardanoSentiment", "Covid3Month", "Airline", "segmentation"):
        assert absent not in names
    # the equal-length copies shipped beside the variable-length sets are sets of their own
    assert {"JapaneseVowels_eq", "PickupGestureWiimoteZ_eq"} <= set(names)
    assert not any(n.endswith("_eq") for n in names
                   if n not in ("JapaneseVowels_eq", "PickupGestureWiimoteZ_eq"))
    assert names[-1] == "MNIST1D"
    assert names[:-1] == sorted(names[:-1], key=str.lower)


def test_equal_length_copy_holds_the_same_series_and_labels(no_network):
    """PickupGestureWiimoteZ_eq: every series at the longest length (361), no mask; its first
    `length` steps are the original series, its classes and labels those of the original."""
    for split in ("train", "test"):
        var, eq = load_dataset("PickupGestureWiimoteZ", split), load_dataset(
            "pickupgesturewiimotez_eq", split)
        assert eq.name == "PickupGestureWiimoteZ_eq" and eq.mask is None
        assert eq.x.shape == (50, 1, 361) and var.x.shape == (50, 1, 361)
        assert eq.classes == var.classes and (eq.y == var.y).all()
        for i in range(50):
            n = var.lengths[i]
            np.testing.assert_array_equal(eq.x[i, :, :n], var.x[i, :, :n])
        # the extension is low-amplitude noise, not zeros
        short = int(np.argmin(var.lengths))
        assert (eq.x[short, 0, var.lengths[short]:] != 0).all()


def test_gunpoint_loads_offline_with_shared_label_mapping(no_network):
    tr, te = load_dataset("GunPoint", "train"), load_dataset("gunpoint", split="test")
    assert tr.x.shape == (50, 1, 150) and te.x.shape == (150, 1, 150)
    assert tr.x.dtype == np.float32 and tr.y.dtype == np.int64
    assert tr.mask is None and te.mask is None
    assert tr.classes == te.classes == ("1", "2") and tr.name == "GunPoint"
    from aeon.datasets import load_from_ts_file

    raw_x, raw_y = load_from_ts_file(str(_aeon_file("GunPoint", "TEST")))
    np.testing.assert_allclose(te.x, raw_x.astype(np.float32))
    assert [te.classes[i] for i in te.y] == list(raw_y)


def test_unequal_length_set_is_padded_never_truncated(no_network):
    from aeon.datasets import load_from_ts_file

    tr, te = load_dataset("JapaneseVowels"), load_dataset("JapaneseVowels", "test")
    raw_tr, _ = load_from_ts_file(str(_aeon_file("JapaneseVowels", "TRAIN")))
    raw_te, y_te = load_from_ts_file(str(_aeon_file("JapaneseVowels", "TEST")))
    longest = max(s.shape[1] for s in raw_tr + raw_te)
    assert tr.n_steps == te.n_steps == longest == 29          # both splits share one length
    assert tr.x.shape == (270, 12, 29) and te.x.shape == (370, 12, 29)
    for data, raw in ((tr, raw_tr), (te, raw_te)):
        assert data.mask is not None
        np.testing.assert_array_equal(data.lengths, [s.shape[1] for s in raw])
        for i in (0, 5, len(raw) - 1):
            n = raw[i].shape[1]
            np.testing.assert_allclose(data.x[i, :, :n], raw[i].astype(np.float32))
            assert (data.x[i, :, n:] == 0).all()
            assert data.mask[i, :n].all() and not data.mask[i, n:].any()
    assert [te.classes[i] for i in te.y] == list(y_te)


def test_numeric_labels_are_ordered_numerically():
    tr, te = load_dataset("PickupGestureWiimoteZ"), load_dataset("PickupGestureWiimoteZ", "test")
    assert tr.classes == te.classes == tuple(str(i) for i in range(1, 11))
    assert tr.mask is not None and tr.n_steps == te.n_steps
    assert tr.lengths.min() < tr.n_steps and not tr.one_length
    eq = load_dataset("PickupGestureWiimoteZ_eq")
    assert eq.one_length and eq.subset(np.arange(3)).one_length
    full = from_arrays(eq.x[:4], eq.y[:4], np.ones((4, eq.n_steps), dtype=bool), name="full")
    assert full.mask is not None and full.one_length       # a mask with no padding in it


def test_multichannel_string_labels():
    d = load_dataset("BasicMotions")
    assert d.x.shape == (40, 6, 100)
    assert d.classes == ("badminton", "running", "standing", "walking")
    assert np.bincount(d.y).tolist() == [10, 10, 10, 10]


def test_unknown_dataset_lists_the_available_ones():
    with pytest.raises(DataError, match=r"unknown dataset 'NoSuchSet'.*GunPoint.*MNIST1D"):
        load_dataset("NoSuchSet")
    with pytest.raises(ConfigError, match="split must be 'train' or 'test'"):
        load_dataset("GunPoint", "validation")


# ---------------------------------------------------------------------------- MNIST-1D
def test_mnist1d_is_deterministic_and_balanced():
    x1, y1 = make_mnist1d(200, seed=3)
    x2, y2 = make_mnist1d(200, seed=3)
    x3, _ = make_mnist1d(200, seed=4)
    assert x1.shape == (200, 1, 40) and x1.dtype == np.float32 and y1.dtype == np.int64
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(y1, y2)
    assert not np.allclose(x1, x3)
    assert np.bincount(y1).tolist() == [20] * 10
    assert TEMPLATES.shape == (10, 12)
    assert np.isfinite(x1).all() and 0.3 < x1.std() < 3


def test_mnist1d_length_is_settable():
    x, _ = make_mnist1d(20, length=700, seed=0)
    assert x.shape == (20, 1, 700)
    d = load_dataset("MNIST1D", "test", mnist1d_length=700)
    assert d.x.shape == (1000, 1, 700) and d.classes == tuple("0123456789")
    with pytest.raises(ConfigError, match="length must be an integer ≥ 12"):
        make_mnist1d(10, length=5)
    with pytest.raises(ConfigError, match="n must be an integer ≥ 1"):
        make_mnist1d(0)


@pytest.mark.slow
def test_mnist1d_standard_split_is_hard_for_a_linear_model():
    from sklearn.linear_model import LogisticRegression

    tr, te = load_dataset("MNIST1D"), load_dataset("MNIST1D", "test")
    assert len(tr) == 4000 and len(te) == 1000
    assert not np.array_equal(tr.x[:1000], te.x)                 # disjoint draws
    clf = LogisticRegression(max_iter=1000).fit(tr.x[:, 0], tr.y)
    acc = clf.score(te.x[:, 0], te.y)
    # chance is 0.10 (σ ≈ 0.01 on 1000 series); the paper's linear model gets ≈ 0.32
    assert 0.17 < acc < 0.5


# ---------------------------------------------------------------------------- user arrays
def test_from_arrays_univariate_and_label_mapping():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 30))
    y = np.array([10, 2, 2, 10, 1, 1])
    d = from_arrays(x, y)
    assert d.x.shape == (6, 1, 30) and d.x.dtype == np.float32
    assert d.classes == ("1", "2", "10")
    assert d.y.tolist() == [2, 1, 1, 2, 0, 0]
    again = from_arrays(x, ["b", "a", "a", "b", "c", "c"], classes=("c", "b", "a"))
    assert again.y.tolist() == [1, 2, 2, 1, 0, 0]
    assert from_arrays(x, y.astype(float)).classes == ("1", "2", "10")   # 2.0 is class "2"


def test_from_arrays_unequal_lengths_need_pad():
    series = [np.arange(5.0), np.arange(3.0), np.arange(7.0)]
    with pytest.raises(DataError, match=r"different lengths \(3 to 7 steps; shorter than 7: "
                                        r"series 0, 1, counted from 0\); pass pad=True "
                                        r"\(--pad on"):
        from_arrays(series, [0, 1, 0])
    d = from_arrays(series, [0, 1, 0], pad=True)
    assert d.x.shape == (3, 1, 7)
    np.testing.assert_array_equal(d.lengths, [5, 3, 7])
    np.testing.assert_array_equal(d.x[1, 0], [0, 1, 2, 0, 0, 0, 0])
    assert d.mask[1].tolist() == [True] * 3 + [False] * 4


def test_from_arrays_mask_zeroes_padding_and_never_mutates_input():
    x = np.ones((2, 2, 4))
    x[0, :, 3] = np.nan                                   # padding may hold anything
    keep = x.copy()
    mask = np.array([[True, True, True, False], [True] * 4])
    d = from_arrays(x, [0, 1], mask=mask)
    assert (d.x[0, :, 3] == 0).all() and np.isfinite(d.x).all()
    np.testing.assert_array_equal(x, keep)
    with pytest.raises(DataError, match=r"mask must be a bool array of shape \(2, 4\)"):
        from_arrays(x, [0, 1], mask=mask[:, :3])
    with pytest.raises(DataError, match="series 0 have no valid step"):
        from_arrays(np.ones((2, 4)), [0, 1], mask=np.array([[False] * 4, [True] * 4]))


def test_from_arrays_rejects_nan_inf_and_misfits():
    x = np.zeros((5, 1, 8))
    x[1, 0, :2] = np.nan
    x[3, 0, 5] = np.nan
    with pytest.raises(DataError, match=r"x contains 3 NaN values in series 1, 3; fill or drop"):
        from_arrays(x, np.arange(5) % 2)
    x[:] = 0
    x[4, 0, 0] = np.inf
    with pytest.raises(DataError, match="1 infinite value in series 4"):
        from_arrays(x, np.arange(5) % 2)
    # finite float64 values float32 cannot hold are named as such, not as "infinite" (the
    # cast would make them inf); at padded steps they are ignored like any padding value
    x[:] = 0
    x[2, 0, 3], x[4, 0, 1] = 1e300, -1e39
    with pytest.raises(DataError, match=r"x contains 2 values beyond float32's range "
                                        r"\(\|x\| > 3.4e\+38\), e\.g\. 1e\+300, in series 2, 4; "
                                        r"kairo computes in float32: rescale them"):
        from_arrays(x, np.arange(5) % 2)
    mask = np.ones((5, 8), bool)
    mask[2, 3:] = mask[4, 1:] = False
    d = from_arrays(x, np.arange(5) % 2, mask=mask)
    assert np.isfinite(d.x).all() and d.x[2, 0, 3] == 0
    with pytest.raises(DataError, match="1 value beyond float32's range .* in series 1"):
        from_arrays([np.zeros(3), np.array([1.0, 3.5e38])], [0, 1], pad=True)
    with np.errstate(over="ignore"):                    # float32 data: inf only at padding
        x32 = x.astype(np.float32)
    assert np.isfinite(from_arrays(x32, np.arange(5) % 2, mask=mask).x).all()
    with pytest.raises(DataError, match="4 labels .* for 5 series; give exactly one label"):
        from_arrays(np.zeros((5, 8)), [0, 1, 0, 1])
    with pytest.raises(DataError, match=r"got shape \(5,\)"):
        from_arrays(np.zeros(5), [0, 1, 0, 1, 0])
    with pytest.raises(DataError, match=r"got shape \(2, 2, 2, 2\)"):
        from_arrays(np.zeros((2, 2, 2, 2)), [0, 1])
    with pytest.raises(DataError, match=r"labels \['z'\] are not among the classes"):
        from_arrays(np.zeros((2, 4)), ["a", "z"], classes=("a", "b"))
    with pytest.raises(DataError, match="different numbers of channels"):
        from_arrays([np.zeros((2, 4)), np.zeros((3, 4))], [0, 1])


def test_tsdata_validates_its_fields():
    x = np.zeros((3, 1, 4), dtype=np.float32)
    with pytest.raises(DataError, match="x must be a float32 array"):
        TSData(x.astype(np.float64), np.zeros(3, np.int64), None, ("a",))
    with pytest.raises(DataError, match=r"labels must lie in 0…1"):
        TSData(x, np.array([0, 1, 2]), None, ("a", "b"))
    with pytest.raises(DataError, match="y must be an int64 array of 3 labels"):
        TSData(x, np.zeros(2, np.int64), None, ("a",))
    d = TSData(x, np.array([0, 1, 1]), None, ("a", "b"), "t")
    sub = d.subset(np.array([2, 0]))
    assert len(sub) == 2 and sub.y.tolist() == [1, 0] and sub.classes == d.classes
    xi, yi, mi = d[1]
    assert xi.shape == (1, 4) and yi == 1 and mi.tolist() == [True] * 4
    with pytest.raises(DataError, match="series 1 have no valid step"):
        TSData(x, np.zeros(3, np.int64), np.array([[True] * 4, [False] * 4, [True] * 4]), ("a",))


# ---------------------------------------------------------------------------- user files
def test_load_csv_with_header_and_label_by_name(tmp_path):
    p = tmp_path / "series.csv"
    p.write_text("t0,t1,t2,label\n1,2,3,cat\n4,5,6,dog\n\n7,8,9,cat\n")
    d = load_csv(p, label_column="label")
    assert d.x.shape == (3, 1, 3) and d.classes == ("cat", "dog")
    np.testing.assert_array_equal(d.x[:, 0], [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    assert load_csv(p, label_column=-1).y.tolist() == [0, 1, 0]      # header guessed
    with pytest.raises(ConfigError, match="label_column 'kind' is not a column"):
        load_csv(p, label_column="kind")


def test_load_csv_without_label_column_reads_every_cell(tmp_path):
    p = tmp_path / "bare.csv"
    p.write_text("t0,t1,t2\n1,2,3\n4,5,6\n")                     # header guessed and skipped
    d = load_csv(p, label_column=None)
    np.testing.assert_array_equal(d.x[:, 0], [[1, 2, 3], [4, 5, 6]])
    assert d.y.tolist() == [0, 0]
    p.write_text("1,2,3\n4,5\n")
    np.testing.assert_array_equal(load_csv(p, label_column=None, pad=True).lengths, [3, 2])
    p.write_text("1,2,3\n,,\n" + "4,5,6\n")                         # blank rows are skipped
    assert load_csv(p, label_column=None).x.shape == (2, 1, 3)
    p.write_text("a\nb\n")
    with pytest.raises(DataError, match="row 1 holds no values"):      # only a label column
        load_csv(p)
    with pytest.raises(ConfigError, match="column index, a header name or None"):
        load_csv(p, label_column=1.0)


def test_load_csv_names_file_row_and_column_of_bad_cells(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("1,0.5,0.6,0.7\n2,0.1,oops,0.3\n")
    with pytest.raises(DataError, match=r"bad\.csv: row 2, column 3 holds 'oops', not a number"):
        load_csv(p)
    p.write_text("1,0.5,,0.7\n")
    with pytest.raises(DataError, match="row 1, column 3 is empty"):
        load_csv(p)
    p.write_text("1,0.5,nan,0.7\n2,1,2,3\n1,inf,2,3\n")
    with pytest.raises(DataError, match=r"bad\.csv: x contains 2 NaN or infinite values in "
                                        r"rows 1, 3"):
        load_csv(p)
    p.write_text("1,0.5,1e300,0.7\n2,1,2,3\n")
    with pytest.raises(DataError, match=r"bad\.csv: x contains 1 value beyond float32's range"):
        load_csv(p)
    with pytest.raises(DataNotFoundError, match="does not exist"):
        load_csv(tmp_path / "missing.csv")


def test_load_csv_short_rows_need_pad(tmp_path):
    p = tmp_path / "ragged.csv"
    p.write_text("a,1,2,3,4\nb,1,2,,\nb,5,6,7\n")
    with pytest.raises(DataError, match="pass pad=True"):
        load_csv(p)
    d = load_csv(p, pad=True)
    np.testing.assert_array_equal(d.lengths, [4, 2, 3])
    np.testing.assert_array_equal(d.x[1, 0], [1, 2, 0, 0])


def _write_ts(path: Path, rows: list[str], equal: bool, labels=("a", "b")) -> Path:
    head = ["@problemName toy", "@timeStamps false", "@missing false", "@univariate true",
            f"@equalLength {'true' if equal else 'false'}",
            f"@classLabel true {' '.join(labels)}", "@data"]
    path.write_text("\n".join(head + rows) + "\n")
    return path


def test_load_ts_equal_and_unequal(tmp_path):
    eq = _write_ts(tmp_path / "eq.ts", ["1,2,3,4:a", "4,3,2,1:b", "0,0,1,1:a"], equal=True)
    d = load_ts(eq)
    assert d.x.shape == (3, 1, 4) and d.classes == ("a", "b") and d.y.tolist() == [0, 1, 0]
    un = _write_ts(tmp_path / "un.ts", ["1,2,3,4:a", "4,3:b"], equal=False)
    with pytest.raises(DataError, match=r"un\.ts: series have different lengths.*pad=True"):
        load_ts(un)
    d = load_ts(un, pad=True)
    np.testing.assert_array_equal(d.lengths, [4, 2])


def test_load_ts_bad_files(tmp_path):
    with pytest.raises(DataError, match="has no class labels"):
        load_ts(_aeon_file("CardanoSentiment", "TRAIN"))
    junk = tmp_path / "junk.ts"
    junk.write_text("this is not a ts file\n")
    with pytest.raises(DataError, match=r"junk\.ts"):
        load_ts(junk)
    with pytest.raises(DataNotFoundError):
        load_ts(tmp_path / "absent.ts")
    nan = _write_ts(tmp_path / "nan.ts", ["1,?,3:a", "1,2,3:b"], equal=True)
    with pytest.raises(DataError, match=r"nan\.ts: x contains 1 NaN value in series 0"):
        load_ts(nan)


# ---------------------------------------------------------------------------- transforms
def test_znormalize_known_values_and_floor():
    x = np.array([[[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]]])
    z = znormalize(x)
    s = np.sqrt(2 / 3)
    np.testing.assert_allclose(z[0, 0], [-1 / s, 0, 1 / s], rtol=1e-6)
    assert (z[0, 1] == 0).all()                          # constant: std floored, not NaN
    assert STD_FLOOR == 1e-8 and z.dtype == np.float32


def test_znormalize_with_mask_matches_the_unpadded_series():
    rng = np.random.default_rng(1)
    series = [rng.normal(3, 2, size=(2, n)) for n in (9, 4, 6)]
    d = from_arrays(series, [0, 1, 0], pad=True)
    before = d.x.copy()
    z = znormalize(d.x, d.mask)
    np.testing.assert_array_equal(d.x, before)
    for i, s in enumerate(series):
        n = s.shape[1]
        ref = (s - s.mean(1, keepdims=True)) / s.std(1, keepdims=True)
        np.testing.assert_allclose(z[i, :, :n], ref, rtol=1e-5, atol=1e-5)
        assert (z[i, :, n:] == 0).all()
    with pytest.raises(DataError, match="mask must have shape"):
        znormalize(d.x, d.mask[:, :3])


def test_channel_stats_pool_valid_steps_of_all_series():
    rng = np.random.default_rng(2)
    series = [rng.normal([[1.0], [-4.0]], [[2.0], [0.5]], size=(2, n)) for n in (9, 4, 6)]
    d = from_arrays(series, [0, 1, 0], pad=True)
    mean, std = channel_stats(d.x, d.mask)
    flat = np.concatenate(series, axis=1)                          # [2, 19] valid steps only
    np.testing.assert_allclose(mean, flat.mean(1), rtol=1e-6)   # x is stored float32
    np.testing.assert_allclose(std, flat.std(1), rtol=1e-6)
    z = standardize(d.x, mean, std, d.mask)
    assert z.dtype == np.float32 and (z[1, :, 4:] == 0).all()    # padding stays zero
    np.testing.assert_allclose(z[0, :, :9], (series[0] - mean[:, None]) / std[:, None],
                               rtol=1e-5)
    # pooled over the valid steps, the result has mean 0 and sd 1 per channel
    zv = np.concatenate([z[i, :, :s.shape[1]] for i, s in enumerate(series)], axis=1)
    np.testing.assert_allclose(zv.mean(1), 0, atol=1e-6)
    np.testing.assert_allclose(zv.std(1), 1, rtol=1e-5)
    assert channel_stats(np.ones((3, 1, 5)))[1][0] == STD_FLOOR   # constant: floored
    with pytest.raises(DataError, match="one mean and std per channel"):
        standardize(d.x, mean[:1], std)
    with pytest.raises(DataError, match="stds finite and > 0"):
        standardize(d.x, mean, [1.0, 0.0])
    with pytest.raises(DataError, match="mask must have shape"):
        channel_stats(d.x, d.mask[:, :3])


def test_stratified_split_keeps_class_proportions():
    y = np.repeat([0, 1, 2], [50, 30, 20])
    tr, va = stratified_split(y, 0.2, seed=0)
    assert len(va) == 20 and len(tr) == 80
    assert np.intersect1d(tr, va).size == 0
    np.testing.assert_array_equal(np.sort(np.concatenate([tr, va])), np.arange(100))
    assert np.bincount(y[va]).tolist() == [10, 6, 4]
    np.testing.assert_array_equal(va, stratified_split(y, 0.2, seed=0)[1])
    assert not np.array_equal(va, stratified_split(y, 0.2, seed=1)[1])
    with pytest.raises(ConfigError, match=r"fraction must be in \(0, 1\)"):
        stratified_split(y, 1.5)
    with pytest.raises(DataError, match="cannot hold out a stratified validation set"):
        stratified_split(np.array([0, 0, 0, 1]), 0.25)
