"""The adult fly brain's files: Shiu et al.'s parquet, FlyWire Codex and neuPrint exports.

Files are made here in each publisher's exact schema (hand-written rows, and
``synthetic_flywire`` for a graph in all three formats at once); bad files must be refused
with a sentence naming the file and the row or column.
"""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kairo import DataError, SelectionError
from kairo.connectome import (Connectome, adult_files, load_codex, load_connectome,
                              load_neuprint, load_shiu, parse_group, save_shiu,
                              synthetic_flywire, transmitter_sign)

# root ids above 2**53: a float anywhere on the way would merge the first two
A, B, C, D = 720575940600000001, 720575940600000002, 720575940612345678, 720575940699999999


def _gz(path, text: str):
    with gzip.open(path, "wt") as f:
        f.write(text)
    return path


def _codex(tmp_path, connections: str | None = None, *, neurons: str | None = None):
    _gz(tmp_path / "connections.csv.gz", connections or (
        "pre_root_id,post_root_id,neuropil,syn_count,nt_type\n"
        f"{A},{B},AL_L,3,ACH\n{A},{B},LH_L,4,ACH\n{B},{C},AL_L,6,GABA\n{C},{A},GNG,2,GLUT\n"
        f"{D},{A},FB,9,DA\n"))
    _gz(tmp_path / "classification.csv.gz",
        "root_id,flow,super_class,class,sub_class,hemilineage,side,nerve\n"
        f"{A},afferent,sensory,olfactory,ORN_DA1,,left,AN\n"
        f"{B},intrinsic,central,ALPN,uPN,,right,\n"
        f"{C},intrinsic,central,,,,center,\n"
        f"{D},efferent,descending,,,,left,CV\n")
    _gz(tmp_path / "neurons.csv.gz", neurons or (
        "root_id,group,nt_type,nt_type_score,da_avg,ser_avg,gaba_avg,glut_avg,ach_avg,"
        "oct_avg\n"
        f"{A},AL_L,ACH,0.9,0,0,0,0,0.9,0\n{B},AL_R,GABA,0.8,0,0,0.8,0,0,0\n"
        f"{C},GNG,GLUT,0.7,0,0,0,0.7,0,0\n{D},GNG,DA,0.6,0.6,0,0,0,0,0\n"))
    return tmp_path / "connections.csv.gz"


def _dense(c: Connectome, order) -> np.ndarray:
    pos = pd.Index(c.ids).get_indexer(order)
    return c.weights.toarray()[np.ix_(pos, pos)]


# ---------------------------------------------------------------------------- reading
def test_codex_sums_neuropils_signs_by_transmitter_and_keeps_64_bit_ids(tmp_path):
    c = load_codex(_codex(tmp_path))
    assert c.ids.dtype == np.int64 and set(c.ids) == {A, B, C, D}
    w = _dense(c, [A, B, C, D])
    # A→B 3 + 4 (two neuropils), B GABA → −6, C GLUT → −2, D dopamine excites
    assert w[0, 1] == 7 and w[1, 2] == -6 and w[2, 0] == -2 and w[3, 0] == 9
    assert c.n_edges == 4
    t = c.neurons
    assert t.loc[A, "side"] == "L" and t.loc[C, "side"] == "C" and t.loc[B, "side"] == "R"
    assert t.loc[A, "celltype"] == "sensory" and t.loc[A, "class"] == "olfactory"
    assert t.loc[A, "annotations"] == "olfactory; ORN_DA1"
    assert t.loc[B, "nt_type_score"] == pytest.approx(0.8)
    assert any("nt_type of" in h and "neurons.csv.gz" in h for h in c.history)


def test_codex_selectors_name_columns_and_sides_as_flywire_writes_them(tmp_path):
    c = load_codex(_codex(tmp_path))
    assert list(c.ids[c.group("class=olfactory;side=left")]) == [A]
    assert set(c.ids[c.group("super_class=central+descending")]) == {B, C, D}
    assert list(c.ids[c.group("celltype=sensory;annotation=olfactory;side=L")]) == [A]
    assert list(c.ids[c.group("nt_type=GABA")]) == [B]
    (tmp_path / "ids.txt").write_text(f"# the DN\n{D}\n\n{A}\n")
    assert set(c.ids[c.group(f"@{tmp_path / 'ids.txt'}")]) == {A, D}
    assert set(c.ids[c.group(f"ids=@{tmp_path / 'ids.txt'};side=left")]) == {A, D}
    with pytest.raises(SelectionError, match="no neuron has class='ALRN'.*values include"):
        c.group("class=ALRN")


def test_codex_threshold_applies_to_the_pairs_summed_count(tmp_path):
    c = load_codex(_codex(tmp_path), min_synapses=5)
    w = _dense(c, [A, B, C, D])
    # A→B keeps (3 + 4 ≥ 5, though no single row reaches 5); C→A (2) goes
    assert w[0, 1] == 7 and w[1, 2] == -6 and w[2, 0] == 0 and w[3, 0] == 9
    assert c.history[-1] == "min_synapses(5)"
    with pytest.raises(DataError, match="min_synapses: expected a whole number ≥ 1"):
        load_codex(tmp_path, min_synapses=0)


def test_codex_without_annotations_signs_by_the_connection_rows(tmp_path):
    path = _codex(tmp_path)
    for f in ("classification.csv.gz", "neurons.csv.gz"):
        (tmp_path / f).unlink()
    c = load_codex(path)
    assert list(c.ids) == sorted([A, B, C, D])            # the ids of the edges
    assert _dense(c, [A, B, C, D])[1, 2] == -6
    assert "connections.csv.gz" in c.history[-1]


def test_shiu_reads_his_schema_and_round_trips(tmp_path):
    (tmp_path / "codex").mkdir()
    c = load_codex(_codex(tmp_path / "codex"))
    con, comp = save_shiu(c, tmp_path / "shiu")
    t = pq.read_table(con)
    assert t.schema.names == ["Presynaptic_ID", "Postsynaptic_ID", "Presynaptic_Index",
                              "Postsynaptic_Index", "Connectivity", "Excitatory",
                              "Excitatory x Connectivity"]
    assert all(pa.types.is_int64(f.type) for f in t.schema)
    assert comp.read_text().splitlines()[:2] == [",Completed", f"{c.ids[0]},True"]
    back = load_shiu(con)
    assert list(back.ids) == list(c.ids)
    assert (back.weights != c.weights).nnz == 0
    assert load_connectome(tmp_path / "shiu").n_edges == c.n_edges   # the folder, too


def test_all_three_formats_hold_the_same_synthetic_graph(tmp_path):
    files = synthetic_flywire(tmp_path, n_neurons=600, n_synapses=12_000, seed=3,
                              formats=("codex", "shiu", "neuprint"))
    assert set(files) == {"connections.csv.gz", "classification.csv.gz", "neurons.csv.gz",
                          "Connectivity_783.parquet", "Completeness_783.csv",
                          "traced-neurons.csv", "traced-total-connections.csv"}
    codex = load_connectome(tmp_path / "connections.csv.gz")
    shiu = load_connectome(tmp_path / "Connectivity_783.parquet")
    neuprint = load_connectome(tmp_path / "traced-total-connections.csv")
    order = np.sort(codex.ids)
    assert np.array_equal(_dense(codex, order), _dense(shiu, order))
    assert np.array_equal(abs(_dense(codex, order)), _dense(neuprint, order))  # no NT: unsigned
    assert codex.ids.min() > 2**53 and (codex.weights.data < 0).any()
    assert set(codex.neurons.super_class) <= {"optic", "central", "sensory",
                                              "visual_projection", "ascending", "descending",
                                              "visual_centrifugal", "motor", "endocrine"}
    assert set(neuprint.neurons.side) <= {"L", "R", "unknown"}
    assert adult_files(tmp_path)[0] == "shiu"            # a folder with both: Shiu's first


def test_neuprint_sides_types_and_transmitter_column(tmp_path):
    (tmp_path / "traced-neurons.csv").write_text(
        "bodyId,type,instance,predictedNt\n1,ORN_DA1,ORN_DA1_R,acetylcholine\n"
        "2,LHLN,LHLN(L),gaba\n3,,,\n")
    (tmp_path / "traced-total-connections.csv").write_text(
        "bodyId_pre,bodyId_post,weight\n1,2,5\n2,3,7\n")
    c = load_neuprint(tmp_path)
    assert list(c.neurons.side) == ["R", "L", "unknown"]
    assert list(c.neurons.celltype) == ["ORN_DA1", "LHLN", "unannotated"]
    assert _dense(c, [1, 2, 3])[1, 2] == -7 and _dense(c, [1, 2, 3])[0, 1] == 5


def test_transmitter_signs_follow_shiu():
    assert list(transmitter_sign(["GABA", "glutamate", "GLUT", "ACH", "DA", "", None,
                                  "Glu"])) == [-1, -1, -1, 1, 1, 1, 1, -1]


def test_parse_group_reads_column_keys():
    assert parse_group("class=olfactory;side=left") == {"where": {"class": ["olfactory"]},
                                                        "side": ["left"]}


# ---------------------------------------------------------------------------- bad input
def test_codex_missing_column(tmp_path):
    path = _codex(tmp_path, "pre_root_id,post_root_id,neuropil,nt_type\n1,2,AL_L,ACH\n")
    with pytest.raises(DataError, match=r"connections.csv.gz: missing column\(s\) "
                                        r"\['syn_count'\]"):
        load_codex(path)


def test_codex_edge_ids_the_neuron_table_lacks(tmp_path):
    path = _codex(tmp_path, "pre_root_id,post_root_id,neuropil,syn_count,nt_type\n"
                            f"{A},{B},AL_L,3,ACH\n{A},720575940600000003,AL_L,3,ACH\n")
    with pytest.raises(DataError, match=r"connections.csv.gz: 1 id\(s\) in column "
                                        r"'post_root_id' are not in the neuron table .*"
                                        r"720575940600000003 \(data row 2\)"):
        load_codex(path)


def test_codex_negative_count_duplicate_row_and_bad_id(tmp_path):
    head = "pre_root_id,post_root_id,neuropil,syn_count,nt_type\n"
    path = _codex(tmp_path, head + f"{A},{B},AL_L,3,ACH\n{B},{C},AL_L,-2,GABA\n")
    with pytest.raises(DataError, match=r"column 'syn_count' has a negative value \(-2\) in "
                                        r"data row 2"):
        load_codex(path)
    _codex(tmp_path, head + f"{A},{B},AL_L,3,ACH\n{B},{C},AL_L,2,GABA\n{A},{B},AL_L,1,ACH\n")
    with pytest.raises(DataError, match=r"1 duplicate \(pre_root_id, post_root_id, neuropil\) "
                                        r"rows, e.g. data rows 1 and 3"):
        load_codex(path)
    _codex(tmp_path, head + f"{A},{B},AL_L,3,ACH\n{A}x,{B},AL_L,3,ACH\n")
    with pytest.raises(DataError, match=r"connections.csv.gz: column 'pre_root_id' must hold integers; "
                                        r"data row 2 has '720575940600000001x'"):
        load_codex(path)


def test_codex_truncated_gzip(tmp_path):
    path = _codex(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=r"connections.csv.gz: "):
        load_codex(path)


def test_codex_duplicate_neuron_rows(tmp_path):
    path = _codex(tmp_path, neurons="root_id,group,nt_type,nt_type_score\n"
                                    f"{A},X,ACH,0.9\n{A},X,ACH,0.9\n")
    with pytest.raises(DataError, match=r"neurons.csv.gz: 1 duplicate id\(s\) in column "
                                        rf"'root_id', e.g. {A}"):
        load_codex(path)


def _shiu(tmp_path, **change):
    cols = {"Presynaptic_ID": [A, B], "Postsynaptic_ID": [B, C], "Presynaptic_Index": [0, 1],
            "Postsynaptic_Index": [1, 2], "Connectivity": [3, 6], "Excitatory": [1, -1],
            "Excitatory x Connectivity": [3, -6]}
    cols.update(change)
    cols = {k: v for k, v in cols.items() if v is not None}
    pq.write_table(pa.table({k: pa.array(v, pa.int64()) for k, v in cols.items()}),
                   tmp_path / "Connectivity_783.parquet")
    (tmp_path / "Completeness_783.csv").write_text(f",Completed\n{A},True\n{B},True\n"
                                                   f"{C},False\n")
    return tmp_path / "Connectivity_783.parquet"


def test_shiu_reads_a_good_file(tmp_path):
    c = load_shiu(_shiu(tmp_path))
    assert list(c.ids) == [A, B, C] and list(c.neurons.completed) == [True, True, False]
    assert _dense(c, [A, B, C])[1, 2] == -6


@pytest.mark.parametrize("change, msg", [
    ({"Excitatory x Connectivity": None}, r"missing column\(s\) \['Excitatory x "
                                          r"Connectivity'\]"),
    ({"Connectivity": [3, -6], "Excitatory": [1, 1]}, r"column 'Connectivity' has a negative "
                                                      r"value \(-6\) in data row 2"),
    ({"Excitatory": [1, 0]}, r"column 'Excitatory' must be 1 or -1, got 0 in data row 2"),
    ({"Excitatory x Connectivity": [3, 6]}, r"'Excitatory x Connectivity' \(6\) is not "
                                            r"Excitatory × Connectivity \(-1 × 6\) in data row 2"),
    ({"Postsynaptic_Index": [1, 3]}, r"Postsynaptic_Index 3 in data row 2 is outside the 3 "
                                     r"neurons of"),
    ({"Presynaptic_ID": [B, B]}, r"Presynaptic_ID in data row 1 is not the root id that .* "
                                 rf"lists at that index \({A}\)"),
    ({"Presynaptic_Index": [0, 0], "Postsynaptic_Index": [1, 1], "Presynaptic_ID": [A, A],
      "Postsynaptic_ID": [B, B], "Excitatory": [1, 1], "Excitatory x Connectivity": [3, 6]},
     r"1 duplicate \(pre, post\) pairs, e.g. data rows 1 and 2"),
])
def test_shiu_bad_files(tmp_path, change, msg):
    with pytest.raises(DataError, match=r"Connectivity_783.parquet: " + msg):
        load_shiu(_shiu(tmp_path, **change))


def test_shiu_truncated_parquet_and_missing_neuron_list(tmp_path):
    path = _shiu(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 40])
    with pytest.raises(DataError, match=r"Connectivity_783.parquet: not a readable parquet "
                                        r"file"):
        load_shiu(path)
    _shiu(tmp_path)
    (tmp_path / "Completeness_783.csv").unlink()
    with pytest.raises(DataError, match=r"needs its neuron list; put Completeness_783.csv "
                                        r"beside it"):
        load_shiu(path)
    (tmp_path / "Completeness_783.csv").write_text(",Completed\n720575940600000001.5,True\n")
    with pytest.raises(DataError, match=r"Completeness_783.csv: the first column holds root "
                                        r"ids \(integers\); data row 1"):
        load_shiu(path)


def test_save_shiu_refuses_weights_that_are_not_counts(tmp_path):
    c = Connectome(np.array([[0, 0.5], [1, 0]]))
    with pytest.raises(DataError, match="whole synapse counts"):
        save_shiu(c, tmp_path)
    assert not list(tmp_path.iterdir())                   # nothing written


def test_neuprint_bad_files(tmp_path):
    (tmp_path / "traced-total-connections.csv").write_text(
        "bodyId_pre,bodyId_post,weight\n1,2,5\n2,9,7\n")
    with pytest.raises(DataError, match=r"traced-neurons.csv: no such file"):
        load_neuprint(tmp_path)
    (tmp_path / "traced-neurons.csv").write_text("bodyId,type,instance\n1,a,a_R\n2,b,b_L\n")
    with pytest.raises(DataError, match=r"1 id\(s\) in column 'bodyId_post' are not in the "
                                        r"neuron table .*traced-neurons.csv, e.g. 9 \(data "
                                        r"row 2\)"):
        load_neuprint(tmp_path)
    (tmp_path / "traced-total-connections.csv").write_text(
        "bodyId_pre,bodyId_post,weight\n1,2,5\n1,2,7\n")
    with pytest.raises(DataError, match=r"1 duplicate \(bodyId_pre, bodyId_post\) pairs"):
        load_neuprint(tmp_path)
    (tmp_path / "traced-total-connections.csv").write_text("bodyId_pre,bodyId_post\n1,2\n")
    with pytest.raises(DataError, match=r"missing column\(s\) \['weight'\]"):
        load_neuprint(tmp_path)


def test_id_file_errors(tmp_path):
    (tmp_path / "ids.txt").write_text(f"{A}\nnot-an-id\n")
    with pytest.raises(SelectionError, match=r"ids.txt: line 2 is not an integer neuron id"):
        parse_group(f"@{tmp_path / 'ids.txt'}")
    with pytest.raises(SelectionError, match=r"no such id file"):
        parse_group(f"@{tmp_path / 'none.txt'}")
