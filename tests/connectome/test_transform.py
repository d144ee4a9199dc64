"""Normalizations, signs and null models: invariants, determinism, no mutation."""

import numpy as np
import pytest
import scipy.sparse as sp

from kairo.connectome import (apply_signs, costi_design, degree_preserving_rewire,
                              gaussian_esn, normalize, null_model, prepare, random_topology,
                              spectral_radius, weight_shuffle)


def _edges(c):
    coo = c.weights.tocoo()
    return set(zip(coo.row.tolist(), coo.col.tolist()))


def test_spectral_normalization(winding):
    c = normalize(winding, "spectral", target=0.9)
    assert spectral_radius(c.weights) == pytest.approx(0.9, rel=1e-8)
    assert winding.weights.sum() == 352_611  # original untouched
    assert c.history[-1].startswith("spectral")


def test_row_and_column_normalization(winding):
    r = normalize(winding, "row")
    s = r.out_strength()
    has_out = winding.out_strength() > 0
    np.testing.assert_allclose(s[has_out], 1.0)
    assert (s[~has_out] == 0).all()
    col = normalize(winding, "column").in_strength()
    np.testing.assert_allclose(col[winding.in_strength() > 0], 1.0)
    # a row-stochastic non-negative matrix has spectral radius ≤ 1
    assert spectral_radius(r.weights) <= 1 + 1e-9


def test_prepare_order_and_gain(small):
    c = prepare(small, norm="spectral", spectral_radius_target=0.5, alpha=2.0)
    assert spectral_radius(c.weights) == pytest.approx(1.0, rel=1e-8)
    assert [h.split("(")[0] for h in c.history] == ["spectral", "gain"]


def test_dale(winding):
    c = apply_signs(winding, "dale", inhibitory_fraction=0.2, seed=1)
    row_sign = np.sign(np.asarray(c.weights.sum(axis=1)).ravel())
    has_out = winding.out_strength() > 0
    frac = (row_sign[has_out] < 0).mean()
    assert frac == pytest.approx(0.2, abs=0.03)
    # every row is all-positive or all-negative
    w = c.weights.tocsr()
    for i in np.flatnonzero(has_out)[:200]:
        d = w.data[w.indptr[i]:w.indptr[i + 1]]
        assert (d > 0).all() or (d < 0).all()
    ln = apply_signs(winding, "dale", inhibitory_types=["LN"])
    idx = winding.select(celltype="LN")
    assert (np.asarray(ln.weights[idx].sum(axis=1)).ravel() <= 0).all()
    assert (abs(ln.weights) - winding.weights).max() == 0


def test_rewire_preserves_degrees_and_changes_wiring(winding):
    a = degree_preserving_rewire(winding, seed=3)
    b = degree_preserving_rewire(winding, seed=3)
    assert abs(a.weights - b.weights).max() == 0  # seeded
    w0, w1 = winding.weights, a.weights
    assert w1.nnz == w0.nnz
    np.testing.assert_array_equal((w1 != 0).sum(0).A1, (w0 != 0).sum(0).A1)
    np.testing.assert_array_equal((w1 != 0).sum(1).A1, (w0 != 0).sum(1).A1)
    np.testing.assert_allclose(a.out_strength(), winding.out_strength())
    assert w1.diagonal().astype(bool).sum() == w0.diagonal().astype(bool).sum()
    kept = len(_edges(a) & _edges(winding)) / w0.nnz
    assert kept < 0.25, kept
    c = degree_preserving_rewire(winding, seed=4)
    assert abs(c.weights - a.weights).max() > 0


def test_weight_shuffle(winding):
    s = weight_shuffle(winding, seed=0)
    assert _edges(s) == _edges(winding)
    np.testing.assert_array_equal(np.sort(s.weights.data), np.sort(winding.weights.data))
    assert (s.weights.data != winding.weights.data).mean() > 0.3


def test_random_topology(winding):
    r = random_topology(winding, seed=0)
    assert r.n_edges == winding.n_edges
    np.testing.assert_array_equal(np.sort(r.weights.data), np.sort(winding.weights.data))
    assert (r.weights.diagonal() != 0).sum() == (winding.weights.diagonal() != 0).sum()
    assert len(_edges(r) & _edges(winding)) / r.n_edges < 0.05


def test_gaussian_esn(winding):
    g = gaussian_esn(winding, seed=0)
    assert g.n_edges == winding.n_edges and g.n_neurons == winding.n_neurons
    assert abs(g.weights.data.mean()) < 0.02 and g.weights.data.std() == pytest.approx(1, abs=0.02)


def test_costi_design(winding):
    d = costi_design(winding, seed=0)
    assert set(d) == {("real", "real"), ("real", "random"), ("random", "real"),
                      ("random", "random")}
    assert d["real", "real"] is winding
    assert _edges(d["real", "random"]) == _edges(winding)
    again = costi_design(winding, seed=0)
    assert abs(again["random", "random"].weights - d["random", "random"].weights).max() == 0


def test_null_model_dispatch_and_small_graphs(small):
    for kind in ("rewire", "weight-shuffle", "random-topology", "gaussian"):
        n = null_model(small, kind, seed=1)
        assert n.n_edges == small.n_edges
    assert spectral_radius(sp.csr_matrix(np.diag([2.0, -3.0]))) == pytest.approx(3.0)
