"""Bad input must fail with a kairo error whose message names the culprit and the expectation.

Every test builds a small broken input (in ``tmp_path`` where a file is needed) and checks
(a) that the exception is a ``kairo.KairoError`` (or a subclass) rather than a raw traceback
from numpy/pandas/scipy, and (b) with ``match=`` that the message names the offending file,
field or argument and says what was expected.
"""

from __future__ import annotations

import re
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import kairo
from kairo import (ChecksumError, ConfigError, DataError, DataNotFoundError, KairoError,
                   SelectionError)
from kairo.cli import load_config_file, make_config
from kairo.connectome import (Connectome, load_adjacency_csv, load_connectome,
                              load_edge_list_csv, load_npz, load_winding2023, normalize,
                              parse_group)
from kairo.data import REGISTRY, fetch
from kairo.reservoir import Reservoir, StreamingRidgeCV, make_task

# ---------------------------------------------------------------------------- helpers
def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _esc(path) -> str:
    return re.escape(str(path))


def _zip(tmp_path: Path, name: str, entries: dict[str, str]) -> Path:
    p = tmp_path / name
    with zipfile.ZipFile(p, "w") as z:
        for member, text in entries.items():
            z.writestr(member, text)
    return p


@pytest.fixture
def tiny() -> Connectome:
    """Three neurons in a cycle: 10 (sensory, L) → 20 (PN, R) → 30 (DN-VNC, L) → 10."""
    w = np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)
    table = pd.DataFrame({"celltype": ["sensory", "PN", "DN-VNC"], "side": ["L", "R", "L"]},
                         index=[10, 20, 30])
    return Connectome(w, table, name="tiny")


@pytest.fixture
def ring_weights() -> np.ndarray:
    return 0.5 * np.array([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=float)


# ---------------------------------------------------------------------------- 1-6 adjacency CSV
def test_adjacency_non_numeric_cell(tmp_path):
    p = _write(tmp_path, "garbage.csv", ",1,2,3\n1,0,abc,1\n2,1,0,1\n3,0,1,0\n")
    with pytest.raises(DataError, match=_esc(p) + r": weights must be numbers.*'abc'"):
        load_adjacency_csv(p)


def test_adjacency_binary_garbage_is_not_a_csv(tmp_path):
    p = tmp_path / "binary.csv"
    p.write_bytes(b"\xff\xfe\x00\x89PNG\r\n\x1a\n")
    with pytest.raises(DataError, match=_esc(p) + r": not a readable CSV file"):
        load_adjacency_csv(p)


def test_adjacency_empty_file(tmp_path):
    p = _write(tmp_path, "empty.csv", "")
    with pytest.raises(DataError, match=_esc(p) + r": not a readable CSV file"):
        load_adjacency_csv(p)


def test_adjacency_truncated_last_row(tmp_path):
    p = _write(tmp_path, "truncated.csv", ",1,2,3\n1,0,2,1\n2,1,0,1\n3,0,1\n")
    with pytest.raises(DataError, match=_esc(p) + r": 1 missing/NaN/infinite weight\(s\), "
                                                   r"first at row 2, column 2 .*truncated"):
        load_adjacency_csv(p)


def test_adjacency_header_ids_do_not_match_row_ids(tmp_path):
    p = _write(tmp_path, "header.csv", ",1,2,9\n1,0,2,1\n2,1,0,1\n3,0,1,0\n")
    with pytest.raises(DataError, match=_esc(p) + r": header ids do not match row ids "
                                                   r"\(rows only: \[3\], header only: \[9\]\)"):
        load_adjacency_csv(p)


def test_adjacency_duplicate_ids(tmp_path):
    p = _write(tmp_path, "dup.csv", ",1,1\n1,0,2\n1,1,0\n")
    with pytest.raises(DataError, match=_esc(p) + r": duplicate \w+ ids, e\.g\. \[1\]"):
        load_adjacency_csv(p)


def test_adjacency_not_square(tmp_path):
    p = _write(tmp_path, "rect.csv", ",1,2,3\n1,0,2,1\n2,1,0,1\n")
    with pytest.raises(DataError, match=_esc(p) + r": the matrix is not square: 2 rows × 3 "
                                                   r"columns \(expected .*same neuron ids\)"):
        load_adjacency_csv(p)


def test_adjacency_negative_counts_rejected_unless_signed(tmp_path):
    p = _write(tmp_path, "negative.csv", ",1,2\n1,0,-2\n2,1,0\n")
    with pytest.raises(DataError, match=_esc(p) + r": 1 negative weight\(s\) where synapse "
                                                   r"counts \(≥ 0\) are expected; pass "
                                                   r"signed=True"):
        load_adjacency_csv(p)
    c = load_adjacency_csv(p, signed=True)
    assert c.n_neurons == 2
    assert c.weights.min() == -2


@pytest.mark.parametrize("cell", ["nan", "NaN", "inf"])
def test_adjacency_nan_or_infinite_weight(tmp_path, cell):
    p = _write(tmp_path, "nan.csv", f",1,2\n1,0,{cell}\n2,1,0\n")
    with pytest.raises(DataError, match=_esc(p) + r": 1 missing/NaN/infinite weight\(s\), "
                                                   r"first at row 0, column 1"):
        load_adjacency_csv(p)


# ---------------------------------------------------------------------------- 7 edge lists
def test_edge_list_missing_post_column(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,target,weight\n1,2,3\n")
    with pytest.raises(DataError, match=_esc(p) + r": an edge list needs columns 'pre' and "
                                                   r"'post'.*found \['pre', 'target', "
                                                   r"'weight'\]"):
        load_edge_list_csv(p)


def test_edge_list_non_numeric_weight(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,post,weight\n1,2,3\n2,1,lots\n")
    with pytest.raises(DataError, match=_esc(p) + r": weight in data row 2 is missing or not "
                                                   r"a number"):
        load_edge_list_csv(p)


@pytest.mark.parametrize("tail", ["3", "3,"])
def test_edge_list_truncated_last_row(tmp_path, tail):
    p = _write(tmp_path, "edges.csv", f"pre,post,weight\n1,2,3\n2,1,4\n{tail}")
    with pytest.raises(DataError, match=_esc(p) + r": missing pre/post id in data row 3 "
                                                   r"\(truncated file\?\)"):
        load_edge_list_csv(p)


def test_edge_list_truncated_weight(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,post,weight\n1,2,3\n2,1,4\n3,1")
    with pytest.raises(DataError, match=_esc(p) + r": weight in data row 3 is missing"):
        load_edge_list_csv(p)


def test_edge_list_header_only(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,post\n")
    with pytest.raises(DataError, match=_esc(p) + r": the edge list has no rows"):
        load_edge_list_csv(p)


def test_edge_list_negative_weight_needs_signed(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,post,weight\n1,2,-3\n")
    with pytest.raises(DataError, match=_esc(p) + r": 1 negative weight\(s\).*signed=True"):
        load_edge_list_csv(p)
    assert load_edge_list_csv(p, signed=True).weights.sum() == -3


def _kairo_error_or_result(fn):
    """Run ``fn``; a KairoError is an acceptable answer, any other exception fails the test."""
    try:
        return fn()
    except KairoError:
        return None


def test_edge_list_float_formatted_ids(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,post\n1,2.0\n2,1\n")
    c = _kairo_error_or_result(lambda: load_edge_list_csv(p))
    if c is not None:  # the ids are integer-valued: loading them as 1, 2 is the right answer
        assert sorted(c.ids.tolist()) == [1, 2]


def test_edge_list_non_integer_numeric_ids(tmp_path):
    p = _write(tmp_path, "edges.csv", "pre,post\n1.5,2\n2,1\n")
    c = _kairo_error_or_result(lambda: load_edge_list_csv(p))
    if c is not None:
        assert c.n_neurons == 3 and c.n_edges == 2


# ---------------------------------------------------------------------------- 8 selections
def test_select_unknown_celltype_lists_known_types(tiny):
    with pytest.raises(SelectionError, match=r"unknown cell type\(s\) \['banana'\] in "
                                             r"connectome 'tiny'; known: DN-VNC, PN, sensory"):
        tiny.select(celltype="banana")


def test_select_unknown_side(tiny):
    with pytest.raises(SelectionError, match=r"unknown side\(s\) \['M'\]; expected one of "
                                             r"\('L', 'R', 'C', 'unknown'\)"):
        tiny.select(side="M")


def test_select_empty_selection(tiny):
    # 20 is the PN: celltype=sensory & ids=[20] matches nothing
    with pytest.raises(SelectionError, match=r"selection celltype=\['sensory'\] & ids=\[1 "
                                             r"ids\] matches no neuron in connectome 'tiny'"):
        tiny.select(celltype="sensory", ids=[20])


def test_select_unknown_id(tiny):
    with pytest.raises(SelectionError, match=r"1 neuron id\(s\) not in connectome 'tiny', "
                                             r"e\.g\. \[99\]"):
        tiny.select(ids=[99])


def test_a_group_key_that_is_no_column_is_refused_naming_the_columns(tiny):
    # any other key is a column of the neuron table (FlyWire's class, nt_type, …)
    assert parse_group("celltype=sensory;colour=red") == {"celltype": ["sensory"],
                                                          "where": {"colour": ["red"]}}
    with pytest.raises(SelectionError, match=r"'colour' is not a column of connectome "
                                             r"'tiny'.s neuron table; columns: celltype, side"):
        tiny.group("celltype=sensory;colour=red")


@pytest.mark.parametrize("spec, msg", [
    ("", r"neuron group must be a non-empty string, got ''"),
    ("celltype=sensory;side", r"part 'side' is not key=value"),
    ("paired=maybe", r"paired must be true or false"),
])
def test_parse_group_malformed(spec, msg):
    with pytest.raises(SelectionError, match=msg):
        parse_group(spec)


def test_group_string_with_unknown_side(tiny):
    with pytest.raises(SelectionError, match=r"unknown side\(s\) \['X'\]"):
        tiny.group("sensory:X")


# ---------------------------------------------------------------------------- 9 Winding archive
def test_winding_zip_with_other_files(tmp_path):
    p = _zip(tmp_path, "other.zip", {"readme.txt": "hello", "data/x.csv": "1,2\n"})
    with pytest.raises(DataError, match=_esc(p) + r": not the expected Winding 2023 "
                                                   r"Supplementary Data S1 archive: missing "
                                                   r"all-all_connectivity_matrix\.csv, .* under "
                                                   r"Supplementary-Data-S1/"):
        load_winding2023(p)


@pytest.mark.parametrize("entry", ["../evil.csv", "Supplementary-Data-S1/../../x",
                                   "/etc/evil.csv"])
def test_winding_zip_entry_outside_its_folder(tmp_path, entry):
    p = _zip(tmp_path, "evil.zip", {entry: "x", "Supplementary-Data-S1/annotations.csv": "a\n"})
    with pytest.raises(DataError, match=_esc(p) + r": archive entry " + re.escape(repr(entry))
                       + r" points outside its folder; refusing"):
        load_winding2023(p)


def test_winding_not_a_zip(tmp_path):
    p = _write(tmp_path, "fake.zip", "this is not a zip archive\n")
    with pytest.raises(DataError, match=_esc(p) + r": not a readable zip archive"):
        load_winding2023(p)


def test_winding_zip_with_garbage_matrix_names_member(tmp_path):
    f = "Supplementary-Data-S1/"
    p = _zip(tmp_path, "bad.zip", {f + "all-all_connectivity_matrix.csv": ",1,2\n1,0,x\n2,1,0\n",
                                   f + "annotations.csv": "a\n", f + "inputs.csv": "a\n",
                                   f + "outputs.csv": "a\n"})
    with pytest.raises(DataError, match=_esc(p) + r":all-all_connectivity_matrix\.csv: weights "
                                                   r"must be numbers"):
        load_winding2023(p)


def test_winding_unknown_compartment(tmp_path):
    with pytest.raises(DataError, match=r"unknown compartment 'xx'; expected one of all, aa, "
                                        r"ad, da, dd"):
        load_winding2023(tmp_path, compartment="xx")


# ---------------------------------------------------------------------------- 10 data store
def test_fetch_checksum_mismatch(tmp_path):
    target = tmp_path / REGISTRY["winding2023"].relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(b"junk bytes, not the archive")
    with pytest.raises(ChecksumError, match=_esc(target) + r": SHA-256 is [0-9a-f]{64}, "
                       r"expected " + REGISTRY["winding2023"].sha256):
        fetch("winding2023", tmp_path, download=False)


def test_fetch_missing_file_without_download(tmp_path):
    expected = tmp_path / "connectome" / "winding2023" / "Supplementary-Data-S1.zip"
    with pytest.raises(DataNotFoundError, match=r"data file for 'winding2023' not found at "
                       + _esc(expected) + r" \(downloads disabled\)\. Put the original file "
                                          r"there"):
        fetch("winding2023", tmp_path, download=False)
    assert not expected.exists()


def test_fetch_unknown_data_set(tmp_path):
    with pytest.raises(DataNotFoundError, match=r"unknown data set 'nope'; known: winding2023"):
        fetch("nope", tmp_path, download=False)


def test_data_not_found_is_also_a_file_not_found_error():
    assert issubclass(DataNotFoundError, FileNotFoundError)
    assert issubclass(ChecksumError, DataError) and issubclass(DataError, KairoError)


# ---------------------------------------------------------------------------- 11 config files
@pytest.mark.parametrize("name, text", [("bad.yaml", "n_train: 10\nbogus_key: 3\n"),
                                        ("bad.toml", "n_train = 10\nbogus_key = 3\n")])
def test_config_unknown_key(tmp_path, name, text):
    p = _write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=_esc(p) + r": unknown option\(s\) \['bogus_key'\]; "
                                                   r"valid options: .*n_train"):
        make_config("reservoir run", load_config_file(p), source=str(p))


@pytest.mark.parametrize("name, text", [("type.yaml", "n_train: abc\n"),
                                        ("type.toml", 'n_train = "abc"\n')])
def test_config_wrong_type(tmp_path, name, text):
    p = _write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=_esc(p) + r": field 'n_train' expects an integer, "
                                                   r"got 'abc'"):
        make_config("reservoir run", load_config_file(p), source=str(p))


@pytest.mark.parametrize("name, text, kind", [("broken.yaml", "n_train: [1, 2\nfoo: : :\n",
                                               "YAML"),
                                              ("broken.toml", "n_train = = 3\n", "TOML")])
def test_config_invalid_syntax(tmp_path, name, text, kind):
    p = _write(tmp_path, name, text)
    with pytest.raises(ConfigError, match=r"config file " + _esc(p) + rf": not valid {kind}"):
        load_config_file(p)


def test_config_invalid_choice(tmp_path):
    p = _write(tmp_path, "choice.yaml", "norm: banana\n")
    with pytest.raises(ConfigError, match=r"norm: expected one of none, spectral, row, column; "
                                          r"got 'banana'"):
        make_config("reservoir run", load_config_file(p), source=str(p))


def test_config_not_a_mapping(tmp_path):
    p = _write(tmp_path, "list.yaml", "- a\n- b\n")
    with pytest.raises(ConfigError, match=_esc(p) + r": expected a mapping of option names to "
                                                   r"values, got list"):
        load_config_file(p)


def test_config_unknown_extension_and_missing_file(tmp_path):
    p = _write(tmp_path, "cfg.ini", "a=1\n")
    with pytest.raises(ConfigError, match=_esc(p) + r": unknown extension '\.ini'; use "
                                                   r"\.yaml, \.yml, \.toml or \.json"):
        load_config_file(p)
    with pytest.raises(ConfigError, match=r"config file " + _esc(tmp_path / "nope.yaml")
                       + r" does not exist"):
        load_config_file(tmp_path / "nope.yaml")


# ---------------------------------------------------------------------------- 12 CLI
def test_cli_unknown_config_key_exits_2_and_leaves_no_folder(tmp_path, capsys):
    from kairo.cli import main

    cfg = _write(tmp_path, "cfg.yaml", "n_train: 10\nbogus_key: 1\n")
    out = tmp_path / "runs" / "out"
    rc = main(["reservoir", "run", "--config", str(cfg), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert err.startswith("kairo: error: ")
    assert re.search(_esc(cfg) + r": unknown option\(s\) \['bogus_key'\]", err)
    assert "Traceback" not in err
    assert not out.exists()
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_cli_run_failing_midway_leaves_no_half_written_folder(tmp_path, capsys, data_dir):
    from kairo.cli import main

    runs = tmp_path / "runs"
    runs.mkdir()
    out = runs / "out"
    rc = main(["reservoir", "run", "--input-group", "nonexistent_type", "--n-train", "50",
               "--n-test", "20", "--washout", "100", "--max-delay", "5", "--engine", "scipy",
               "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2
    assert re.search(r"^kairo: error: unknown cell type\(s\) \['nonexistent_type'\] in "
                     r"connectome 'winding2023'; known: .*sensory", err)
    assert not out.exists()
    assert list(runs.iterdir()) == []  # no hidden temporary folder either


# ---------------------------------------------------------------------------- 13 reservoir
def test_reservoir_inputs_wrong_number_of_channels(ring_weights):
    res = Reservoir(ring_weights, input_neurons=[0], engine="scipy")
    with pytest.raises(KairoError, match=r"inputs must have shape \(n_steps, n_inputs=1\) or "
                                         r"\(n_steps, n_streams, n_inputs=1\); got "
                                         r"\(5, 2, 3\)"):
        res.run(np.zeros((5, 2, 3)))


def test_reservoir_inputs_too_many_dimensions(ring_weights):
    res = Reservoir(ring_weights, input_neurons=[0], engine="scipy")
    with pytest.raises(KairoError, match=r"inputs must have shape .*got \(5, 2, 3, 4\)"):
        res.run(np.zeros((5, 2, 3, 4)))


def test_reservoir_inputs_wrong_shape_reports_callers_shape(ring_weights):
    res = Reservoir(ring_weights, input_neurons=[0], engine="scipy")
    with pytest.raises(KairoError, match=r"inputs must have shape .*; got \(5, 2\)$"):
        res.run(np.zeros((5, 2)))


def test_reservoir_nan_inputs(ring_weights):
    res = Reservoir(ring_weights, input_neurons=[0], engine="scipy")
    with pytest.raises(KairoError, match=r"inputs contain NaN or infinite values"):
        res.run(np.array([0.1, np.nan, 0.2]))


@pytest.mark.parametrize("leak", [0.0, -0.5, 1.5, float("nan")])
def test_reservoir_leak_outside_unit_interval(ring_weights, leak):
    with pytest.raises(KairoError, match=r"leak must be in \(0, 1\], got"):
        Reservoir(ring_weights, input_neurons=[0], leak=leak)


def test_reservoir_unknown_activation(ring_weights):
    with pytest.raises(KairoError, match=r"unknown activation 'relu'; expected one of tanh, "
                                         r"linear"):
        Reservoir(ring_weights, input_neurons=[0], activation="relu")


def test_reservoir_unknown_engine(ring_weights):
    with pytest.raises(KairoError, match=r"unknown engine 'jax'; expected one of auto, "
                                         r"scipy, torch"):
        Reservoir(ring_weights, input_neurons=[0], engine="jax")


def test_reservoir_input_positions_out_of_range(ring_weights):
    with pytest.raises(KairoError, match=r"input_neurons has positions outside 0\.\.2"):
        Reservoir(ring_weights, input_neurons=[5])


def test_reservoir_x0_wrong_shape(ring_weights):
    res = Reservoir(ring_weights, input_neurons=[0], engine="scipy")
    with pytest.raises(KairoError, match=r"x0 must have shape \(1, 3\), got \(1, 5\)"):
        res.run(np.zeros(4), x0=np.zeros(5))


def test_reservoir_zero_steps(ring_weights):
    res = Reservoir(ring_weights, input_neurons=[0], engine="scipy")
    with pytest.raises(KairoError, match=r"inputs.*step"):
        res.run(np.zeros(0))


# ---------------------------------------------------------------------------- 14 ridge readout
@pytest.fixture
def xy():
    rng = np.random.default_rng(0)
    X = rng.standard_normal((100, 4))
    return X, X @ np.ones(4)


def test_ridge_nan_in_X(xy):
    X, y = xy
    X = X.copy()
    X[3, 1] = np.nan
    with pytest.raises(KairoError, match=r"Input X contains NaN"):
        StreamingRidgeCV().fit(X, y)


def test_ridge_y_wrong_length(xy):
    X, y = xy
    with pytest.raises(KairoError, match=r"inconsistent numbers of samples: \[100, 50\]"):
        StreamingRidgeCV().fit(X, y[:50])


def test_ridge_predict_wrong_feature_count(xy):
    X, y = xy
    model = StreamingRidgeCV().fit(X, y)
    with pytest.raises(KairoError, match=r"X has 3 features, but StreamingRidgeCV is expecting 4"):
        model.predict(X[:, :3])


def test_ridge_finalize_without_data():
    with pytest.raises(KairoError, match=r"no data: call partial_fit with at least one chunk"):
        StreamingRidgeCV().finalize()


def test_ridge_chunk_with_other_feature_count(xy):
    X, y = xy
    model = StreamingRidgeCV().partial_fit(X, y)
    with pytest.raises(KairoError, match=r"X has 2 features, but StreamingRidgeCV is "
                                         r"expecting 4 features"):
        model.partial_fit(X[:, :2], y)


def test_ridge_too_few_rows_for_cv(xy):
    X, y = xy
    with pytest.raises(KairoError, match=r"cross-validation needs data in ≥ 2 folds; got "
                                         r"n_samples = 100 with block size 256"):
        StreamingRidgeCV(block=256).partial_fit(X, y).finalize()


# ---------------------------------------------------------------------------- 15 tasks
def test_make_task_unknown_name_lists_valid_names():
    with pytest.raises(KairoError, match=r"unknown task 'banana'; expected one of "
                                         r"memory-capacity, narma10, mackey-glass, lorenz, "
                                         r"sine-square"):
        make_task("banana")


def test_memory_capacity_washout_shorter_than_max_delay():
    with pytest.raises(KairoError, match=r"washout \(10\) must be ≥ max_delay \(100\)"):
        make_task("memory-capacity", washout=10, max_delay=100)


@pytest.mark.parametrize("kw, msg", [({"n_train": 0}, r"n_train must be ≥ 1, got 0"),
                                     ({"washout": -1}, r"washout must be ≥ 0, got -1")])
def test_task_bad_split(kw, msg):
    with pytest.raises(KairoError, match=msg):
        make_task("narma10", **kw)


def test_sine_square_period_zero():
    with pytest.raises(KairoError, match=r"period must be ≥ \d, got 0"):
        make_task("sine-square", period=0, n_train=10, n_test=10, washout=0)


# ---------------------------------------------------------------------------- 16 normalization
def test_unknown_normalization(tiny):
    with pytest.raises(KairoError, match=r"unknown normalization 'banana'; expected one of "
                                         r"none, spectral, row, column"):
        normalize(tiny, "banana")


def test_spectral_normalization_of_acyclic_graph():
    dag = Connectome(np.triu(np.ones((5, 5)), k=1), name="dag")
    with pytest.raises(KairoError, match=r"connectome 'dag' has spectral radius 0 \(no "
                                         r"cycles\); spectral normalization is undefined"):
        normalize(dag, "spectral")


def test_spectral_normalization_of_large_acyclic_graph():
    dag = Connectome(np.triu(np.ones((600, 600)), k=1), name="big-dag")
    with pytest.raises(KairoError, match=r"connectome 'big-dag' has spectral radius 0 \(no "
                                         r"cycles\)"):
        normalize(dag, "spectral")


def test_spectral_target_must_be_positive(tiny):
    with pytest.raises(KairoError, match=r"spectral radius target must be > 0, got -1"):
        normalize(tiny, "spectral", target=-1)


# ---------------------------------------------------------------------------- 17 npz
def test_npz_without_expected_arrays(tmp_path):
    p = tmp_path / "foo.npz"
    np.savez(p, foo=np.ones(3))
    with pytest.raises(DataError, match=_esc(p) + r".*expected arrays "
                                                   r"data/indices/indptr/shape \(sparse\) or "
                                                   r"'weights' \(dense\); found \['foo'\]"):
        load_npz(p)


def test_npz_without_expected_arrays_message_is_not_rewrapped(tmp_path):
    p = tmp_path / "foo.npz"
    np.savez(p, foo=np.ones(3))
    with pytest.raises(DataError, match=r"^" + _esc(p) + r": expected arrays"):
        load_npz(p)


def test_npz_dense_weights_not_square(tmp_path):
    p = tmp_path / "rect.npz"
    np.savez(p, weights=np.ones((2, 3)))
    with pytest.raises(DataError, match=_esc(p) + r": weights must be square, got shape "
                                                   r"\(2, 3\)"):
        load_npz(p)


def test_npz_ids_do_not_match_matrix(tmp_path):
    p = tmp_path / "ids.npz"
    np.savez(p, weights=np.ones((3, 3)), ids=np.arange(2))
    with pytest.raises(DataError, match=_esc(p) + r": 2 ids for a 3-neuron matrix"):
        load_npz(p)


def test_npz_not_an_npz(tmp_path):
    p = _write(tmp_path, "text.npz", "hello")
    with pytest.raises(DataError, match=_esc(p) + r": not a readable \.npz file"):
        load_npz(p)


def test_npz_sparse_indices_out_of_range(tmp_path):
    p = tmp_path / "corrupt.npz"
    np.savez(p, data=np.ones(2), indices=np.array([0, 5]), indptr=np.array([0, 1, 2]),
             shape=np.array([2, 2]))
    with pytest.raises(DataError, match=_esc(p)):
        load_npz(p)


# ---------------------------------------------------------------------------- 18 load_connectome
def test_load_connectome_missing_path(tmp_path):
    p = tmp_path / "nope.csv"
    with pytest.raises(DataError, match=r"connectome " + re.escape(repr(str(p)))
                       + r" is neither a registered name \(winding2023\) nor an existing file"):
        load_connectome(p)


def test_load_connectome_unknown_format(tmp_path):
    p = _write(tmp_path, "graph.json", "{}")
    with pytest.raises(DataError, match=_esc(p) + r": unknown connectome format '\.json'; "
                                                   r"expected \.zip, folder, \.npz, \.csv, Shiu's \.parquet, "
                                                   r"FlyWire Codex's connections\.csv\.gz or "
                                                   r"neuPrint's traced-total-connections\.csv"):
        load_connectome(p)


def test_load_connectome_compartment_only_for_winding(tmp_path):
    p = _write(tmp_path, "adj.csv", ",1,2\n1,0,1\n2,1,0\n")
    with pytest.raises(DataError, match=r"compartment 'aa' is only available for Winding 2023"):
        load_connectome(p, compartment="aa")


def test_load_connectome_registered_name_with_corrupt_file(tmp_path):
    target = tmp_path / REGISTRY["winding2023"].relpath
    target.parent.mkdir(parents=True)
    target.write_bytes(b"junk")
    with pytest.raises(ChecksumError, match=_esc(target) + r": SHA-256 is"):
        load_connectome("winding2023", data_dir=tmp_path, download=False)


def test_every_error_is_a_value_error():
    for cls in (KairoError, DataError, ChecksumError, DataNotFoundError, ConfigError,
                SelectionError):
        assert issubclass(cls, ValueError)
        assert getattr(kairo, cls.__name__) is cls
