"""The class vote as two-input gates: it computes numpy's argmax of the group sums (first class
on ties) bit for bit, and its size grows as the analysis says (about 5 gates a vote)."""

from __future__ import annotations

import numpy as np
import pytest

from kairo import ConfigError
from kairo.logic import Circuit, vote_circuit, vote_gates


@pytest.mark.parametrize("n_classes, per_class", [(2, 1), (3, 5), (10, 7), (10, 100), (4, 64),
                                                  (7, 3)])
def test_vote_circuit_is_the_first_argmax_of_the_group_sums(n_classes, per_class):
    rng = np.random.default_rng(n_classes * 1000 + per_class)
    v = vote_circuit(n_classes, per_class)
    n = 2000
    # skewed densities per class, so that ties and clear winners both occur
    p = rng.uniform(0.2, 0.8, size=(n, n_classes, 1))
    x = (rng.random((n, n_classes, per_class)) < p).reshape(n, -1).astype(np.uint8)
    idx = v.evaluate(x) @ (1 << np.arange(v.n_outputs))
    want = x.reshape(n, n_classes, per_class).sum(2).argmax(1)
    np.testing.assert_array_equal(idx, want)
    assert v.n_outputs == max(1, (n_classes - 1).bit_length())
    assert v.meta["popcount_gates"] + v.meta["argmax_gates"] == v.n_gates


def test_vote_gate_counts():
    # a popcount of m bits takes m − popcount(m)… full and half adders: ≈ 5 gates a vote
    v = vote_circuit(10, 400)
    assert 4.5 * 4000 < v.meta["popcount_gates"] < 5 * 4000
    # argmax of ten 9-bit counts: nine comparisons, eight maximum multiplexers
    assert v.meta["argmax_gates"] < 9 * (4 * 9) + 8 * (3 * 9) + 9 * 4
    circ = Circuit(n_inputs=4, ops=np.array([6, 1], np.uint8), a=np.array([0, 1]),
                   b=np.array([2, 3]), outputs=np.array([4, 5]), n_classes=2)
    assert vote_gates(circ) == {"popcount": 0, "argmax": 1, "total": 1}
    one = Circuit(n_inputs=2, ops=np.array([6], np.uint8), a=np.array([0]), b=np.array([1]),
                  outputs=np.array([2]), n_classes=1)
    assert vote_gates(one) == {"popcount": 0, "argmax": 0, "total": 0}


def test_vote_circuit_bad_arguments():
    with pytest.raises(ConfigError, match="at least 2 classes"):
        vote_circuit(1, 4)
    with pytest.raises(ConfigError, match="per_class must be an integer ≥ 1"):
        vote_circuit(3, 0)


def test_fewer_outputs_make_a_smaller_vote():
    from kairo.logic import LogicTrainConfig, build_model, to_circuit

    cfg = LogicTrainConfig(classes=(0, 1, 2), hidden=90, layers=2, outputs=30)
    net = build_model(cfg).eval()
    assert [(m.n_in, m.n_out) for m in net.logic] == [(784, 90), (90, 30)]
    circ = to_circuit(net)
    assert circ.n_outputs == 30 and circ.n_classes == 3
    wide = to_circuit(build_model(LogicTrainConfig(classes=(0, 1, 2), hidden=90)).eval())
    assert vote_gates(circ)["total"] < vote_gates(wide)["total"] / 2
    assert cfg.arch()["outputs"] == 30 and "outputs" not in LogicTrainConfig().arch()
    with pytest.raises(ConfigError, match="outputs=25 votes into 3 classes"):
        LogicTrainConfig(classes=(0, 1, 2), hidden=90, outputs=25)
