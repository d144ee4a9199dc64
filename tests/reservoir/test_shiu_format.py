"""A graph in Shiu et al.'s file format (``save_shiu`` → ``load_shiu``) runs to the same spikes
in kairo and in Brian2 (``brian2_run``, the network Shiu's ``model.py`` builds), given the
same input spikes. The comparison with Shiu's own code is benchmarks/shiu_reference.py."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from kairo.connectome import Connectome, load_shiu, save_shiu
from kairo.reservoir import LIFNetwork, LIFParams, brian2_run


def _signed_graph(n: int = 300, seed: int = 7) -> Connectome:
    """Random signed synapse counts (10 % of pairs, 1 + geometric(0.15) synapses, a quarter of
    the neurons inhibitory), FlyWire-like root ids above 2**53."""
    rng = np.random.default_rng(seed)
    counts = np.where(rng.random((n, n)) < 0.1, 1 + rng.geometric(0.15, (n, n)), 0)
    sign = np.where(rng.random(n) < 0.25, -1, 1)
    ids = 720_575_940_600_000_000 + rng.choice(10**8, n, replace=False)
    return Connectome(sp.csr_matrix((counts * sign[:, None]).astype(float)),
                      pd.DataFrame(index=pd.Index(ids, name="id")), name="signed")


@pytest.mark.slow
def test_shiu_files_give_the_same_spikes_in_kairo_and_brian2(tmp_path):
    pytest.importorskip("brian2")
    src = _signed_graph()
    con, comp = save_shiu(src, tmp_path)
    c = load_shiu(con, comp)
    assert np.array_equal(c.ids, src.ids)
    assert (c.weights != src.weights).nnz == 0 and (c.weights.data < 0).any()

    rng = np.random.default_rng(1)
    inputs = np.arange(30)
    ks, js = np.nonzero(rng.random((3000, inputs.size)) < 0.015)     # ≈ 150 Hz, 300 ms
    spikes = (ks * 0.1, inputs[js])
    net = LIFNetwork(c, LIFParams(), engine="numba")
    ours = net.run(300.0, input_spikes=spikes)
    ref, _ = brian2_run(net, 300.0, input_spikes=spikes, target="numpy")

    counts = ours.counts()[0]
    assert counts[inputs.size:].sum() > 100          # activity spreads past the input neurons
    assert np.array_equal(counts, ref.counts()[0])
    assert np.array_equal(ours.step, ref.step) and np.array_equal(ours.neuron, ref.neuron)
