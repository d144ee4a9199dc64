"""Generic loaders: CSV adjacency, CSV edge list, NPZ — and round trips through them."""

import numpy as np
import pandas as pd
import scipy.sparse as sp

from kairo.connectome import (load_adjacency_csv, load_connectome, load_edge_list_csv,
                              load_npz, save_npz)


def test_npz_round_trip(winding, tmp_path):
    p = tmp_path / "w.npz"
    save_npz(winding, p)
    c = load_npz(p)
    assert abs(c.weights - winding.weights).max() == 0
    pd.testing.assert_frame_equal(c.neurons, winding.neurons, check_dtype=False)
    assert c.name == "winding2023"
    assert load_connectome(str(p)).n_edges == winding.n_edges


def test_scipy_npz(tmp_path):
    m = sp.random(20, 20, density=0.2, random_state=0, format="csr")
    sp.save_npz(tmp_path / "m.npz", m)
    c = load_npz(tmp_path / "m.npz")
    assert abs(c.weights - m).max() == 0


def test_adjacency_csv_round_trip_with_shuffled_header(small, tmp_path):
    dense = pd.DataFrame(small.weights.toarray(), index=small.ids, columns=small.ids)
    cols = list(np.random.default_rng(0).permutation(small.ids))
    dense[cols].to_csv(tmp_path / "adj.csv")  # header order differs from row order
    small.neurons.reset_index().to_csv(tmp_path / "neurons.csv", index=False)
    c = load_connectome(str(tmp_path / "adj.csv"), neurons=tmp_path / "neurons.csv")
    assert abs(c.weights - small.weights).max() == 0
    assert (c.neurons.celltype == small.neurons.celltype).all()
    assert load_adjacency_csv(tmp_path / "adj.csv").n_edges == small.n_edges


def test_edge_list(tmp_path):
    (tmp_path / "e.csv").write_text("pre,post,weight\n10,20,3\n20,30,1\n10,20,2\n30,10,4\n")
    (tmp_path / "n.csv").write_text("id,side,celltype\n10,L,sensory\n20,R,DN-VNC\n"
                                    "30,L,inter\n40,R,inter\n")
    c = load_edge_list_csv(tmp_path / "e.csv", neurons=tmp_path / "n.csv")
    assert list(c.ids) == [10, 20, 30, 40]  # isolated neuron 40 from the table is kept
    w = c.weights.toarray()
    assert w[0, 1] == 5  # repeated edges are summed; rows are pre
    assert w[2, 0] == 4 and w.sum() == 10
    assert list(c.select(celltype="DN-VNC")) == [1]
    (tmp_path / "u.csv").write_text("pre,post\na,b\nb,c\n")
    c2 = load_connectome(str(tmp_path / "u.csv"))
    assert c2.weights.sum() == 2 and list(c2.ids) == ["a", "b", "c"]
