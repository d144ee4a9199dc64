"""The Winding 2023 loader against facts of the data set."""

import zipfile

import numpy as np
import pandas as pd
import pytest

from kairo.connectome import load_connectome, load_winding2023, spectral_radius


def test_shape_and_totals(winding):
    assert winding.n_neurons == 2952
    assert winding.n_edges == 110_677
    assert winding.weights.sum() == 352_611


def test_direction_rows_are_presynaptic(winding):
    """Column sums (inputs onto a neuron) track inputs.csv, row sums track outputs.csv."""
    t = winding.neurons
    inputs = t.axon_input + t.dendrite_input
    outputs = t.axon_output + t.dendrite_output
    col, row = winding.in_strength(), winding.out_strength()
    r_in = np.corrcoef(col, inputs)[0, 1]
    r_out = np.corrcoef(row, outputs)[0, 1]
    assert r_in == pytest.approx(0.961, abs=0.01)
    assert r_out == pytest.approx(0.735, abs=0.01)
    assert r_in > np.corrcoef(row, inputs)[0, 1]
    assert r_out > np.corrcoef(col, outputs)[0, 1]


@pytest.mark.slow
def test_compartments_sum_to_all_all(winding, winding_zip):
    total = sum(load_winding2023(winding_zip, compartment=k).weights for k in
                ("aa", "ad", "da", "dd"))
    assert abs(total - winding.weights).max() == 0
    ad = load_winding2023(winding_zip, compartment="ad")
    assert (ad.ids == winding.ids).all()
    assert ad.weights.sum() == 234_958


def test_neuron_table(winding):
    t = winding.neurons
    assert t.side.value_counts().to_dict() == {"R": 1307, "L": 1299, "unknown": 346}
    assert (t.celltype == "unannotated").sum() == 346
    paired = t[t.partner_id.notna()]
    # 4 partners listed in annotations.csv are not in the matrix; the rest must be mutual
    paired = paired[paired.partner_id.isin(t.index)]
    assert len(paired) > 2000
    # partners are mutual and on opposite sides
    back = t.loc[paired.partner_id.astype(int).to_numpy()]
    assert (back.partner_id.astype(int).to_numpy() == paired.index.to_numpy()).all()
    assert (back.side.to_numpy() != paired.side.to_numpy()).all()


def test_selections(winding):
    sl = winding.select(celltype="sensory", side="L")
    sr = winding.select(celltype="sensory", side="R")
    assert len(sl) == 211 and len(np.intersect1d(sl, sr)) == 0
    assert len(winding.select(celltype="sensory")) == len(sl) + len(sr)
    olf = winding.select(annotation="OLFACTORY")  # olfactory receptors and their PNs
    assert set(winding.neurons.iloc[olf].celltype) == {"sensory", "PN"}
    assert len(winding.select(annotation="olfactory", celltype="sensory")) == 42
    ids = winding.ids[[5, 17, 3]]
    assert list(winding.select(ids=ids)) == [3, 5, 17]
    both = winding.group("DN-VNC+DN-SEZ:R")
    assert len(both) == len(winding.select(celltype=["DN-VNC", "DN-SEZ"], side="R"))
    assert len(winding.group("celltype=sensory;annotation=olfactory;side=L")) > 0
    assert len(winding.group("all")) == 2952


def test_zip_and_folder_agree(winding, winding_zip, tmp_path):
    with zipfile.ZipFile(winding_zip) as z:
        z.extractall(tmp_path)
    c = load_winding2023(tmp_path / "Supplementary-Data-S1")
    assert abs(c.weights - winding.weights).max() == 0
    pd.testing.assert_frame_equal(c.neurons, winding.neurons)
    c2 = load_connectome(str(tmp_path))  # the parent folder works too
    assert c2.n_edges == winding.n_edges


def test_immutable(winding):
    with pytest.raises(ValueError):
        winding.weights.data[0] = 5.0
    t = winding.neurons
    t.loc[t.index[0], "celltype"] = "changed"
    assert winding.neurons.celltype.iloc[0] != "changed"


@pytest.mark.slow
def test_perron_root_is_directed(winding):
    rho = spectral_radius(winding.weights)
    assert rho == pytest.approx(297.138, abs=1e-3)
    sym = np.abs(np.linalg.eigvalsh(winding.weights.toarray())).max()  # what eigh would say
    assert sym == pytest.approx(417.36, abs=0.01)
