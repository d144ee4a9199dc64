"""Gate budgets (max_gates): the penalty's count, the budget kept by the circuit, a resumed
run equal to an uninterrupted one, and a budget no evaluation meets."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo import ConfigError, KairoError
from kairo.logic import (LogicTrainConfig, build_model, load_data, model_from_checkpoint,
                         simplify, to_circuit, train)
from kairo.logic._model import FREE_OPS, expected_gates, raw_gates


def test_expected_gates_counts_what_is_not_a_wire_or_a_constant():
    cfg = LogicTrainConfig(classes=(0, 1), kernels=2, conv_blocks=1, hidden=20, layers=2)
    net = build_model(cfg)
    layers = net.gate_layers()
    # the conv layer's trees (7 gates at depth 3) count at every position (28×28, padding 1)
    assert raw_gates(net) == 2 * 7 * 28 * 28 + 20 + 20
    counted = sum((~np.isin(layer.ops(), FREE_OPS)).sum() * (28 * 28 if i == 0 else 1)
                  for i, layer in enumerate(layers))
    # fixed layers count their argmax gates; a tiny temperature is the same count
    torch.testing.assert_close(float(expected_gates(net, fixed=(0, 1, 2)).detach()), float(counted))
    torch.testing.assert_close(float(expected_gates(net, temperature=1e-6).detach()), float(counted),
                               rtol=1e-4, atol=1e-3)
    assert expected_gates(net).requires_grad


@pytest.fixture(scope="module")
def zero_one(data_dir):
    cfg = LogicTrainConfig(classes=(0, 1), hidden=100, layers=2, iters=400, eval_every=50,
                           checkpoint_every=100, max_gates=60, data_dir=str(data_dir))
    return cfg, load_data(cfg)


def test_the_circuit_keeps_the_budget_and_a_resumed_run_is_the_same(zero_one, tmp_path):
    cfg, data = zero_one
    quiet = dict(data=data, progress_bar=False)
    full = train(cfg, checkpoint=tmp_path / "full.pt", **quiet)
    h = full["history"]
    assert h[0]["gates"] > cfg.max_gates                      # 200 gates → over budget first
    assert h[0]["budget_weight"] == 0.0 and h[1]["budget_weight"] > 0
    circ, _ = simplify(to_circuit(full["model"]))
    assert circ.n_gates <= cfg.max_gates
    kept = next(r for r in h if r["iter"] == full["kept_iter"])
    assert kept["gates"] == circ.n_gates and kept["val_discrete"] > 0.97
    # killed at 200 (over budget then: that short run has nothing to keep) and resumed: the
    # penalty's weight comes back with the checkpoint
    with pytest.raises(KairoError, match="max_gates"):
        train(LogicTrainConfig(**{**cfg.__dict__, "iters": 200}), checkpoint=tmp_path / "p.pt",
              **quiet)
    resumed = train(cfg, checkpoint=tmp_path / "p.pt", **quiet)
    assert resumed["history"] == h and resumed["kept_iter"] == full["kept_iter"]
    for p, q in zip(full["model"].parameters(), resumed["model"].parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    model, _ = model_from_checkpoint(tmp_path / "full.pt")       # the kept weights
    assert simplify(to_circuit(model))[0].n_gates == circ.n_gates


def test_a_budget_no_evaluation_meets_is_an_error(zero_one):
    cfg, data = zero_one
    tiny = LogicTrainConfig(**{**cfg.__dict__, "iters": 100, "max_gates": 1})
    with pytest.raises(KairoError, match="max_gates: no evaluation was within the budget of 1 "
                                         "gates .the smallest circuit had"):
        train(tiny, data=data, progress_bar=False)
    with pytest.raises(ConfigError, match="max_gates"):
        LogicTrainConfig(max_gates=-1)
