"""The light gate parametrization (``--gate-param light``, Light DLGN): 4 logits per gate, one
per truth-table entry. Its mixture against the definition, fused = torch (values and
gradients), the circuit = the eval forward bit for bit, the gate budget, and a resumed run."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo import ConfigError
from kairo.logic import (COEFFS, TRUTH, LogicConv2d, LogicDense, LogicTrainConfig,
                         build_model, fused_available, to_circuit, train)
from kairo.logic._model import FREE_OPS, expected_gates

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _dense(engine="torch", **kw):
    return LogicDense(50, 40, seed=3, engine=engine, param="light", **kw)


def test_light_mixture_is_the_multilinear_interpolation_of_its_entries():
    """p_op = Π entry probabilities; c = p @ COEFFS equals p00(1−a)(1−b) + p01(1−a)b +
    p10·a(1−b) + p11·ab on real inputs; the probabilities sum to 1."""
    layer = _dense().train()
    with torch.no_grad():
        layer.weight.normal_(generator=torch.Generator().manual_seed(0))
    p = layer.op_probs(temperature=0.7)
    torch.testing.assert_close(p.sum(-1), torch.ones(40))
    q = torch.sigmoid(layer.weight / 0.7)                    # entry i = 2a + b
    a, b = torch.rand(2, 40, dtype=torch.float32)
    want = (q[:, 0] * (1 - a) * (1 - b) + q[:, 1] * (1 - a) * b + q[:, 2] * a * (1 - b)
            + q[:, 3] * a * b)
    c = layer.gate_coeffs(torch.float32, temperature=0.7)
    got = c[:, 0] + c[:, 1] * a + c[:, 2] * b + c[:, 3] * a * b
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(p @ torch.tensor(COEFFS, dtype=torch.float32), c)


def test_light_ops_are_the_positive_entries_and_ties_read_zero():
    layer = _dense()
    for op in range(16):
        t = int(TRUTH[op])
        w = torch.tensor([1.0 if (t >> i) & 1 else -1.0 for i in range(4)])
        with torch.no_grad():
            layer.weight[op] = w * (op + 1)
    with torch.no_grad():
        layer.weight[16:] = 0.0                              # 0 is not > 0: FALSE
    assert layer.ops()[:16].tolist() == list(range(16))
    assert set(layer.ops()[16:].tolist()) == {0}
    assert layer.near_ties(0.1)[16:].all() and not layer.near_ties(0.1)[:16].any()


def test_light_residual_init_is_the_pass_through():
    layer = _dense(residual_init=3.0)
    assert set(layer.ops().tolist()) == {3}                  # A
    torch.testing.assert_close(layer.weight[0], torch.tensor([-3.0, -3.0, 3.0, 3.0]))


@pytest.mark.skipif(not fused_available(), reason="numba not installed")
@pytest.mark.parametrize("mode", ["soft", "hard"])
def test_light_fused_equals_torch_values_and_gradients(mode):
    torch.manual_seed(0)
    x0 = torch.rand(23, 50)
    out = {}
    for engine in ("torch", "fused"):
        layer = _dense(engine, mode=mode).train()
        x = x0.clone().requires_grad_(True)
        y = layer(x, temperature=0.5)
        (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        out[engine] = (y.detach(), x.grad, layer.weight.grad)
    for r, f in zip(out["torch"], out["fused"]):
        torch.testing.assert_close(f, r, rtol=1e-5, atol=1e-6)
    conv = {}
    xc = torch.rand(5, 3, 9, 9)
    for engine in ("torch", "fused"):
        layer = LogicConv2d(3, 4, receptive=3, depth=2, seed=1, engine=engine,
                            param="light").train()
        x = xc.clone().requires_grad_(True)
        y = layer(x)
        y.square().sum().backward()
        conv[engine] = (y.detach(), x.grad, layer.weight.grad)
    for r, f in zip(conv["torch"], conv["fused"]):
        torch.testing.assert_close(f, r, rtol=1e-5, atol=1e-6)


def test_light_expected_gates_counts_the_tables_that_are_not_wires_or_constants():
    cfg = LogicTrainConfig(classes=(0, 1), hidden=20, layers=1, gate_param="light")
    model = build_model(cfg).train()
    layer = model.gate_layers()[0]
    p = layer.op_probs()
    free = p[:, list(FREE_OPS)].sum(-1)
    torch.testing.assert_close(expected_gates(model), (1 - free).sum())
    with torch.no_grad():
        layer.weight[:] = torch.tensor([-9.0, -9.0, 9.0, 9.0])          # all A: wires
    q = torch.sigmoid(torch.tensor(9.0))            # A's entries all right: q⁴; the rest gates
    torch.testing.assert_close(expected_gates(model).detach(), 20 * (1 - q ** 4), rtol=0,
                               atol=1e-4)
    assert float(expected_gates(model, fixed=(0,)).detach()) == 0.0


def test_light_config():
    with pytest.raises(ConfigError, match="gumbel samples one of 16 gate logits"):
        LogicTrainConfig(gate_param="light", gate_mode="gumbel")
    with pytest.raises(ConfigError, match="gate_param: expected one of softmax, light"):
        LogicTrainConfig(gate_param="warp")
    with pytest.raises(ConfigError, match="gate parametrization must be one of"):
        LogicDense(4, 4, param="walsh")
    assert LogicTrainConfig(gate_param="light").arch()["gate_param"] == "light"
    assert "gate_param" not in LogicTrainConfig().arch()


@pytest.fixture(scope="module")
def zero_one_light(data_dir):
    from kairo.logic import load_data

    cfg = LogicTrainConfig(classes=(0, 1), hidden=60, layers=2, iters=120, eval_every=60,
                           checkpoint_every=40, gate_param="light", lr=0.05,
                           data_dir=str(data_dir))
    return cfg, load_data(cfg)


def test_light_training_circuit_equals_the_model_and_resumes_exactly(zero_one_light,
                                                                      tmp_path):
    cfg, data = zero_one_light
    quiet = dict(data=data, progress_bar=False)
    full = train(cfg, checkpoint=tmp_path / "full.pt", **quiet)
    assert full["history"][-1]["val_discrete"] > 0.95
    model = full["model"].eval()
    circ = to_circuit(model)
    xt, _ = data["test"]
    with torch.no_grad():
        pm = model(torch.from_numpy(xt)).argmax(1).numpy()
    np.testing.assert_array_equal(circ.predict(circ.image_bits(xt)), pm)
    short = LogicTrainConfig(**{**cfg.__dict__, "iters": 40})
    train(short, checkpoint=tmp_path / "part.pt", **quiet)
    resumed = train(cfg, checkpoint=tmp_path / "part.pt", **quiet)
    assert resumed["resumed_from"] == 40
    for p, q in zip(full["model"].parameters(), resumed["model"].parameters()):
        torch.testing.assert_close(p, q)
    soft = LogicTrainConfig(**{**cfg.__dict__, "gate_param": "softmax"})
    with pytest.raises(Exception, match="architecture|gate_param"):
        train(soft, checkpoint=tmp_path / "full.pt", **quiet)
