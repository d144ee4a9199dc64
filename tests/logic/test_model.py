"""Logic layers, training, checkpoints and the circuit a trained model becomes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kairo import ConfigError, DataError, KairoError
from kairo.logic import (COEFFS, N_GATES, TRUTH, Binarize, GroupSum, LogicDense,
                         LogicTrainConfig, build_model, load_data, model_from_checkpoint,
                         pairings, snapshot_path, to_circuit, train)
from kairo.logic._gates import relaxed
from kairo.logic._train import load_checkpoint


def test_relaxed_gates_match_the_truth_table_on_bits():
    for op in range(N_GATES):
        for a in (0, 1):
            for b in (0, 1):
                assert relaxed(op, a, b) == (TRUTH[op] >> (2 * a + b)) & 1


def test_relaxed_gates_stay_in_unit_interval():
    a, b = np.meshgrid(np.linspace(0, 1, 21), np.linspace(0, 1, 21))
    for op in range(N_GATES):
        v = relaxed(op, a, b)
        assert v.min() >= -1e-12 and v.max() <= 1 + 1e-12


def test_dense_forward_equals_the_16_gate_mixture_and_its_gradient():
    torch.manual_seed(0)
    layer = LogicDense(12, 9, seed=3)
    x = torch.rand(7, 12, requires_grad=True)
    y = layer(x)
    p = torch.softmax(layer.weight, 1)
    a, b = x[:, layer.ia], x[:, layer.ib]
    ref = sum(p[:, g] * relaxed(g, a, b) for g in range(N_GATES))
    torch.testing.assert_close(y, ref)
    g1 = torch.autograd.grad(y.sum(), x, retain_graph=True)[0]
    g2 = torch.autograd.grad(ref.sum(), x)[0]
    torch.testing.assert_close(g1, g2)


def test_eval_mode_is_the_discrete_gate():
    layer = LogicDense(6, 5, seed=1).eval()
    x = torch.randint(0, 2, (32, 6)).float()
    y = layer(x).detach().numpy()
    ops = layer.ops()
    xa, xb = x[:, layer.ia].numpy().astype(int), x[:, layer.ib].numpy().astype(int)
    want = (TRUTH[ops][None, :] >> (2 * xa + xb)) & 1
    np.testing.assert_array_equal(y, want)


def test_residual_init_starts_as_pass_through():
    layer = LogicDense(8, 8, residual_init=5.0, seed=0).eval()
    x = torch.randint(0, 2, (10, 8)).float()
    torch.testing.assert_close(layer(x), x[:, layer.ia])


def test_gumbel_mode_is_hard_forward_soft_backward():
    torch.manual_seed(0)
    layer = LogicDense(10, 4, mode="gumbel", seed=0)
    x = torch.rand(3, 10)
    y = layer(x)
    p = layer.gate_probs()
    assert torch.all((p == 0) | (p == 1)) and torch.all(p.sum(1) == 1)
    y.sum().backward()
    assert layer.weight.grad is not None and layer.weight.grad.abs().sum() > 0


@pytest.mark.parametrize("engine", ["torch", "fused"])
def test_hard_mode_trains_the_discrete_circuit(engine):
    """Straight-through with argmax: the training forward equals the eval (discrete) forward,
    and the logits' gradient is the softmax mixture's gradient at that forward."""
    torch.manual_seed(0)
    hard = LogicDense(12, 6, mode="hard", seed=3, engine=engine)
    soft = LogicDense(12, 6, mode="soft", seed=3, engine=engine)
    soft.load_state_dict(hard.state_dict())
    x = torch.randint(0, 2, (5, 12)).float()
    y = hard(x)
    torch.testing.assert_close(y, hard.eval()(x).detach())
    hard.train()
    g = torch.randn_like(y)
    hard(x).backward(g)
    p = torch.softmax(soft.weight, -1)
    # d loss / d p for the hard forward = g · (gate outputs at the binary inputs): chain it
    # through the softmax Jacobian by hand and compare
    a, b = x[:, hard.ia], x[:, hard.ib]
    basis = torch.stack([torch.ones_like(a), a, b, a * b], -1)           # (5, 6, 4)
    gate_out = basis @ torch.tensor(COEFFS, dtype=torch.float32).T       # (5, 6, 16)
    dp = (g[..., None] * gate_out).sum(0)                                # (6, 16)
    dw = p * (dp - (p * dp).sum(-1, keepdim=True))
    torch.testing.assert_close(hard.weight.grad, dw, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("n_in, n_out", [(1000, 100), (100, 1000), (7, 3), (2, 5)])
def test_unique_pairings_cover_inputs_and_never_repeat_an_input(n_in, n_out):
    a, b = pairings(n_in, n_out, "unique", np.random.default_rng(0))
    assert a.shape == b.shape == (n_out,) and np.all(a != b)
    used = np.union1d(a, b).size
    assert used == min(n_in, 2 * n_out) or (2 * n_out > n_in and used == n_in)


def test_bad_layer_arguments():
    with pytest.raises(ConfigError, match="pairing"):
        pairings(4, 4, "zigzag", np.random.default_rng(0))
    with pytest.raises(ConfigError, match="gate mode"):
        LogicDense(4, 4, mode="sharp")
    with pytest.raises(ConfigError, match="class groups do not divide"):
        GroupSum(3)(torch.zeros(2, 10))
    with pytest.raises(ConfigError, match="thresholds"):
        Binarize((200, 100))


def test_groupsum_and_binarize_known_values():
    torch.testing.assert_close(GroupSum(2, tau=2.0)(torch.tensor([[1., 1., 0., 1.]])),
                               torch.tensor([[1.0, 0.5]]))
    img = torch.tensor([[0, 100, 200, 255]], dtype=torch.uint8)
    bits = Binarize((50, 150))(img)
    torch.testing.assert_close(bits, torch.tensor([[0., 1., 1., 1., 0., 0., 1., 1.]]))
    circ = _circuit_with_thresholds((50, 150))
    np.testing.assert_array_equal(
        circ.image_bits(np.array([[0, 100, 200, 255] * 196], dtype=np.uint8))[0, :4],
        [0, 1, 1, 1])


def _circuit_with_thresholds(thresholds):
    return to_circuit(build_model(LogicTrainConfig(classes=(0, 1), thresholds=thresholds,
                                                   hidden=10, layers=1)).eval())


def test_image_bits_reject_wrong_shape_and_dtype():
    circ = _circuit_with_thresholds((127,))
    with pytest.raises(DataError, match="uint8"):
        circ.image_bits(np.zeros((2, 28, 28), dtype=np.float32))
    with pytest.raises(DataError, match="shape"):
        circ.image_bits(np.zeros((2, 27, 28), dtype=np.uint8))


def test_config_validation():
    with pytest.raises(ConfigError, match="class groups do not divide"):
        LogicTrainConfig(classes=(0, 1, 2), hidden=100)
    with pytest.raises(ConfigError, match="kernels must be ≥ 0"):
        LogicTrainConfig(kernels=-4)
    with pytest.raises(ConfigError, match="classes"):
        LogicTrainConfig(classes=(1, 1))
    with pytest.raises(ConfigError, match="classes must be ≥ 0"):
        LogicTrainConfig(classes=(1, -1))
    with pytest.raises(ConfigError, match="dataset"):       # labels beyond the set: at load
        LogicTrainConfig(dataset=" ")
    with pytest.raises(ConfigError, match="lr_decay_from must be ≥ -1"):
        LogicTrainConfig(iters=100, lr_decay_from=-2)
    with pytest.raises(ConfigError, match="shift must be ≤ 8"):
        LogicTrainConfig(shift=9)
    with pytest.raises(ConfigError, match="thresholds must be increasing"):
        LogicTrainConfig(thresholds=(200, 100))
    with pytest.raises(ConfigError, match="engine: expected one of auto, torch, fused"):
        LogicTrainConfig(engine="gpu")


def test_cosine_decay_known_values():
    from kairo.logic._train import lr_at

    cfg = LogicTrainConfig(lr=0.02, iters=100, lr_decay_from=60)
    assert [lr_at(cfg, i) for i in (0, 59, 60)] == [0.02, 0.02, 0.02]
    assert lr_at(cfg, 80) == pytest.approx(0.01)          # half way: cos(π/2)
    assert lr_at(cfg, 99) == pytest.approx(0.02 * 0.5 * (1 + np.cos(np.pi * 39 / 40)))
    assert lr_at(LogicTrainConfig(lr=0.02, iters=100), 99) == 0.02


def test_gate_temperature_schedule_known_values():
    from kairo.logic._train import gate_temperature_at

    cfg = LogicTrainConfig(iters=100, lr_decay_from=60, gate_temperature=0.01)
    assert [gate_temperature_at(cfg, i) for i in (0, 59, 60)] == [1.0, 1.0, 1.0]
    assert gate_temperature_at(cfg, 80) == pytest.approx(0.1)      # geometric: half way
    assert gate_temperature_at(cfg, 100) == pytest.approx(0.01)
    whole = LogicTrainConfig(iters=100, gate_temperature=0.25)       # no cosine phase
    assert gate_temperature_at(whole, 50) == pytest.approx(0.5)
    assert gate_temperature_at(LogicTrainConfig(iters=100), 99) == 1.0
    early = LogicTrainConfig(iters=100, lr_decay_from=80, gate_temperature=0.01,
                             gate_temperature_from=20)               # falls at constant lr
    assert gate_temperature_at(early, 20) == 1.0
    assert gate_temperature_at(early, 60) == pytest.approx(0.1)
    with pytest.raises(ConfigError, match="gate_temperature_from must be"):
        LogicTrainConfig(gate_temperature_from=-2)
    for bad in (0.0, -0.5, 1.5):
        with pytest.raises(ConfigError, match="gate_temperature must be"):
            LogicTrainConfig(gate_temperature=bad)


@pytest.mark.parametrize("engine", ["torch", "fused"])
def test_low_gate_temperature_makes_the_relaxed_layer_its_circuit(engine):
    """Dividing the logits by a small temperature concentrates each mixture on its argmax:
    the training forward on bits tends to the discrete (eval) forward, whatever the logits."""
    torch.manual_seed(0)
    layer = LogicDense(12, 30, seed=2, engine=engine)
    with torch.no_grad():
        layer.weight.normal_(0.0, 1.0)
    x = torch.randint(0, 2, (16, 12)).float()
    want = layer.eval()(x)
    layer.train()
    assert (layer(x) - want).abs().max() > 0.1                     # T = 1: a real mixture
    torch.testing.assert_close(layer(x, temperature=1e-3), want, atol=1e-6, rtol=0)
    torch.testing.assert_close(layer(x, fixed=True), want, rtol=0, atol=0)
    y = layer(x, temperature=0.5)
    y.sum().backward()
    assert layer.weight.grad.abs().sum() > 0


def test_random_shift_moves_each_image_rigidly():
    from kairo.logic._train import random_shift

    rng = np.random.default_rng(0)
    x = np.zeros((50, 28, 28), np.uint8)
    x[:, 10:18, 9:19] = rng.integers(1, 256, (50, 8, 10))   # content 9+ px from every edge
    np.testing.assert_array_equal(random_shift(x, 0, rng), x)
    y = random_shift(x, 3, np.random.default_rng(1))
    assert y.shape == x.shape and y.dtype == np.uint8
    moves = set()
    for a, b in zip(x, y):
        ra, ca = np.nonzero(a)
        rb, cb = np.nonzero(b)
        dy, dx = rb.min() - ra.min(), cb.min() - ca.min()
        assert abs(dy) <= 3 and abs(dx) <= 3
        np.testing.assert_array_equal(np.roll(a, (dy, dx), axis=(0, 1)), b)   # pure translation
        moves.add((dy, dx))
    assert len(moves) > 10                       # images get their own shifts
    flat = random_shift(x.reshape(50, 784), 3, np.random.default_rng(1))
    np.testing.assert_array_equal(flat, y.reshape(50, 784))



def test_affine_images_rotate_and_scale_about_the_centre():
    from kairo.logic._train import affine_images, random_affine

    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, (3, 7, 7)).astype(np.uint8)
    one = np.ones(3)
    np.testing.assert_array_equal(affine_images(x, np.zeros(3), one), x)
    # quarter turns land on pixel centres: exact, and counter-clockwise as displayed
    np.testing.assert_array_equal(affine_images(x, 90 * one, one), np.rot90(x, 1, axes=(1, 2)))
    np.testing.assert_array_equal(affine_images(x, -90 * one, one), np.rot90(x, -1, axes=(1, 2)))
    np.testing.assert_array_equal(affine_images(x, 180 * one, one), x[:, ::-1, ::-1])
    # a rectangular image turns about its centre in pixel units, not in stretched ones
    r = np.zeros((1, 4, 6), np.uint8)
    r[0, 1:3, 1] = 200
    want = np.zeros((1, 4, 6), np.uint8)
    want[0, 3, 2:4] = 200
    np.testing.assert_array_equal(affine_images(r, np.array([90.0]), np.ones(1)), want)
    # twice the size: the centre pixel's value spreads, the corners stay dark
    d = np.zeros((1, 9, 9), np.uint8)
    d[0, 4, 4] = 255
    y = affine_images(d, np.zeros(1), np.array([2.0]))[0]
    assert y[4, 4] > 0 and y[3:6, 3:6].sum() > 255 and y[0, 0] == 0 and y[8, 8] == 0
    # colour images: every channel moves together; flat square images are taken as images
    c = rng.integers(0, 256, (2, 5, 5, 3)).astype(np.uint8)
    np.testing.assert_array_equal(affine_images(c, 90 * np.ones(2), np.ones(2)),
                                  np.rot90(c, 1, axes=(1, 2)))
    digits = rng.integers(0, 256, (4, 784)).astype(np.uint8)
    a = random_affine(digits, 15, 0.1, np.random.default_rng(3))
    b = random_affine(digits.reshape(4, 28, 28), 15, 0.1, np.random.default_rng(3))
    np.testing.assert_array_equal(a, b.reshape(4, 784))
    assert a.dtype == np.uint8 and not np.array_equal(a, digits)
    np.testing.assert_array_equal(random_affine(digits, 0, 0, rng), digits)
    with pytest.raises(ConfigError, match="rotate must be ≤ 45"):
        LogicTrainConfig(rotate=90)
    with pytest.raises(ConfigError, match="scale must be ≤ 0.5"):
        LogicTrainConfig(scale=0.7)

@pytest.fixture(scope="module")
def zero_one(data_dir):
    cfg = LogicTrainConfig(classes=(0, 1), hidden=60, layers=2, iters=120, eval_every=60,
                           checkpoint_every=40, data_dir=str(data_dir))
    return cfg, load_data(cfg)


def test_training_learns_zero_vs_one_and_the_circuit_agrees(zero_one):
    cfg, data = zero_one
    res = train(cfg, data=data, progress_bar=False)
    h = res["history"]
    assert [r["iter"] for r in h] == [60, 120]
    assert h[-1]["val_discrete"] > 0.95 and h[-1]["val_relaxed"] > 0.95
    model = res["model"]
    circ = to_circuit(model)
    xt, yt = data["test"]
    with torch.no_grad():
        pm = model(torch.from_numpy(xt)).argmax(1).numpy()
    np.testing.assert_array_equal(circ.predict(circ.image_bits(xt)), pm)
    assert circ.n_gates == 120 and circ.n_classes == 2 and (pm == yt).mean() > 0.95


def test_training_is_reproducible_and_resumes_exactly(zero_one, tmp_path):
    cfg, data = zero_one
    quiet = dict(data=data, progress_bar=False)
    # with augmentation, a cosine tail and gate annealing: all must follow the iteration
    cfg = LogicTrainConfig(**{**cfg.__dict__, "shift": 2, "rotate": 10, "scale": 0.1,
                              "lr_decay_from": 60, "gate_temperature": 0.2})
    full = train(cfg, checkpoint=tmp_path / "full.pt", **quiet)
    # a run "killed" after 40 iterations (its checkpoint), then resumed to 120
    short = LogicTrainConfig(**{**cfg.__dict__, "iters": 40})
    train(short, checkpoint=tmp_path / "part.pt", **quiet)
    state = torch.load(tmp_path / "part.pt", weights_only=True)
    assert state["iter"] == 40
    resumed = train(cfg, checkpoint=tmp_path / "part.pt", **quiet)
    assert resumed["resumed_from"] == 40
    for p, q in zip(full["model"].parameters(), resumed["model"].parameters()):
        torch.testing.assert_close(p, q)
    assert not list(tmp_path.glob(".*tmp"))         # atomic writes left no temp file
    model, cfg2 = model_from_checkpoint(tmp_path / "full.pt")
    assert cfg2 == cfg


def test_a_branch_from_a_snapshot_replays_the_single_run(zero_one, tmp_path):
    """A run keeps its 40-iteration checkpoint (snapshots); a second config that shares the
    schedule up to 40 and then anneals branches from it (init_from) and ends exactly where a
    single run of that config from scratch ends; a branch whose schedule differed before the
    branch point says so, and bad branch points are refused."""
    cfg, data = zero_one
    quiet = dict(data=data, progress_bar=False)
    base = LogicTrainConfig(**{**cfg.__dict__, "shift": 1, "iters": 80, "snapshots": (40,)})
    train(base, checkpoint=tmp_path / "a.checkpoint.pt", **quiet)
    snap = snapshot_path(tmp_path / "a.checkpoint.pt", 40)
    assert snap.name == "a.checkpoint-40.pt"
    assert torch.load(snap, weights_only=True)["iter"] == 40
    late = dict(cfg.__dict__, shift=1, iters=120, lr_decay_from=100, gate_temperature=0.2,
                gate_temperature_from=40)
    single = train(LogicTrainConfig(**late), **quiet)
    branched = train(LogicTrainConfig(**{**late, "init_from": str(snap)}),
                     checkpoint=tmp_path / "b.checkpoint.pt", **quiet)
    assert branched["resumed_from"] == 40
    assert branched["branch"] == {"from": str(snap), "iter": 40, "same_as_single_run": True,
                                  "differs_before": []}
    assert [h["iter"] for h in branched["history"]] == [60, 120]
    for p, q in zip(single["model"].parameters(), branched["model"].parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    # the branch record survives a resume of the branched run
    state = torch.load(tmp_path / "b.checkpoint.pt", weights_only=True)
    assert state["branch"]["from"] == str(snap)
    # a schedule that differed before iteration 40 is reported, not hidden
    early = dict(late, gate_temperature_from=20, lr=0.02)
    other = train(LogicTrainConfig(**{**early, "init_from": str(snap)}), **quiet)
    assert other["branch"]["same_as_single_run"] is False
    assert other["branch"]["differs_before"] == ["learning-rate schedule",
                                                 "gate-temperature schedule"]
    # ... and so is a branch from a checkpoint of such a branch
    train(LogicTrainConfig(**{**early, "init_from": str(snap), "snapshots": (60,)}),
          checkpoint=tmp_path / "c.checkpoint.pt", **quiet)
    again = train(LogicTrainConfig(**{**early, "init_from": str(tmp_path / "c.checkpoint-60.pt")}),
                  **quiet)
    assert again["branch"]["iter"] == 60 and not again["branch"]["same_as_single_run"]
    assert again["branch"]["differs_before"][-1].startswith("the branch at iteration 40")
    with pytest.raises(ConfigError, match="iters .40. must be larger"):
        train(LogicTrainConfig(**{**late, "iters": 40, "lr_decay_from": -1,
                                  "gate_temperature": 1.0, "init_from": str(snap)}), **quiet)
    with pytest.raises(DataError, match="other settings .*'hidden': \\(60, 80\\)"):
        train(LogicTrainConfig(**{**late, "hidden": 80, "init_from": str(snap)}), **quiet)
    with pytest.raises(ConfigError, match="snapshots must be iterations"):
        LogicTrainConfig(iters=100, snapshots=(100,))


@pytest.mark.parametrize("engine", [pytest.param("torch", marks=pytest.mark.slow), "fused"])
def test_fixed_layers_stop_learning_and_compute_their_circuit(zero_one, tmp_path, engine):
    """fix_at: from its iteration a gate layer computes its argmax gates in training too and
    its logits stop changing, while later layers go on learning; with every layer fixed the
    relaxed network is its circuit. The fixed-layer schedule counts in a branch's verdict."""
    cfg, data = zero_one
    quiet = dict(data=data, progress_bar=False)
    base = dict(cfg.__dict__, iters=80, eval_every=40, engine=engine, snapshots=(40,))
    plain = train(LogicTrainConfig(**base), checkpoint=tmp_path / "p.checkpoint.pt", **quiet)
    snap = torch.load(tmp_path / "p.checkpoint-40.pt", weights_only=True)["model"]
    part = train(LogicTrainConfig(**{**base, "fix_at": (40,)}), **quiet)
    first, second = part["model"].gate_layers()
    torch.testing.assert_close(first.weight, snap["logic.0.weight"], rtol=0, atol=0)
    assert not torch.equal(second.weight, snap["logic.1.weight"])          # still learning
    assert not torch.equal(plain["model"].gate_layers()[0].weight, first.weight)
    # a layer fixed from the start keeps its initial logits
    init = build_model(LogicTrainConfig(**base)).gate_layers()[0].weight
    both = train(LogicTrainConfig(**{**base, "fix_at": (0, 60)}), **quiet)
    torch.testing.assert_close(both["model"].gate_layers()[0].weight, init, rtol=0, atol=0)
    h = both["history"][-1]                     # all fixed at the end: relaxed = discrete
    assert h["val_relaxed"] == h["val_discrete"]
    with torch.no_grad():
        model = both["model"].train()
        x = torch.from_numpy(data["val"][0][:200])
        relaxed = model(x, fixed=range(len(model.gate_layers())))
        torch.testing.assert_close(relaxed, model.eval()(x), rtol=0, atol=0)
    # fixing after the branch point replays; fixing before it differs
    late = {**base, "snapshots": (), "iters": 120}
    same = train(LogicTrainConfig(**{**late, "fix_at": (60,),
                                     "init_from": str(tmp_path / "p.checkpoint-40.pt")}), **quiet)
    assert same["branch"]["same_as_single_run"]
    single = train(LogicTrainConfig(**{**late, "fix_at": (60,)}), **quiet)
    for p, q in zip(single["model"].parameters(), same["model"].parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0)
    early = train(LogicTrainConfig(**{**late, "fix_at": (20,),
                                      "init_from": str(tmp_path / "p.checkpoint-40.pt")}), **quiet)
    assert early["branch"]["differs_before"] == ["fixed-layer schedule"]
    with pytest.raises(ConfigError, match="fix_at must be iterations"):
        LogicTrainConfig(**{**base, "fix_at": (80,)})
    with pytest.raises(ConfigError, match="the network has 2 gate layers"):
        LogicTrainConfig(**{**base, "fix_at": (10, 20, 30)})


def test_layer_report_counts_wires_copies_and_ties():
    from kairo.logic import GATE_NAMES, layer_report

    cfg = LogicTrainConfig(classes=(0, 1), kernels=2, conv_blocks=2, hidden=20, layers=1,
                           iters=10, fix_at=(5,))
    model = build_model(cfg)
    conv = model.gate_layers()[0]
    with torch.no_grad():
        for layer in model.gate_layers():
            layer.weight.zero_()
            layer.weight[..., GATE_NAMES.index("A")] = 1.0       # every gate a wire, decided
        conv.weight[0, 0, GATE_NAMES.index("AND")] = 0.98        # a wire within 0.05 of AND
        conv.weight[1, 0, GATE_NAMES.index("OR")] = 5.0          # a real gate
        model.gate_layers()[2].weight[3, GATE_NAMES.index("B")] = 1.0   # a tie of two wires
    rep = layer_report(model, cfg)
    n = conv.weight.shape[0] * conv.weight.shape[1]
    assert [r["layer"] for r in rep] == ["features.0", "features.2", "logic.0"]
    assert rep[0] == {"layer": "features.0", "gates": n, "copies": 28 * 28, "wires": n - 1,
                      "near_tie_share": 1 / n, "fixed_from": 5}
    assert rep[1]["copies"] == 14 * 14 and rep[1]["wires"] == rep[1]["gates"]
    assert rep[1]["fixed_from"] is None
    assert rep[2]["copies"] == 1 and rep[2]["gates"] == 20 and rep[2]["wires"] == 20
    assert rep[2]["near_tie_share"] == pytest.approx(1 / 20)


def test_checkpoint_from_another_architecture_or_corrupt(zero_one, tmp_path):
    cfg, data = zero_one
    train(LogicTrainConfig(**{**cfg.__dict__, "iters": 40}), checkpoint=tmp_path / "c.pt",
          data=data, progress_bar=False)
    other = LogicTrainConfig(**{**cfg.__dict__, "hidden": 80})
    with pytest.raises(DataError, match="other settings"):
        load_checkpoint(tmp_path / "c.pt", other)
    bad = tmp_path / "bad.pt"
    bad.write_bytes((tmp_path / "c.pt").read_bytes()[:500])
    with pytest.raises(DataError, match="corrupt"):
        load_checkpoint(bad)
    with pytest.raises(KairoError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")


def test_coefficients_are_affine_in_1_a_b_ab():
    assert COEFFS.shape == (16, 4)
    model = build_model(LogicTrainConfig(classes=(0, 1), hidden=10, layers=1))
    assert len(model.logic) == 1 and model.logic[0].n_in == 784


def test_keep_best_ends_with_the_best_validation_weights_and_resumes(zero_one, tmp_path,
                                                                      monkeypatch):
    """keep_best: the model ends with the weights of the best discrete validation accuracy
    (here scripted: 0.5, 0.9, 0.7 → iteration 80), also after a resume and when loaded from
    the checkpoint; the checkpoint's own weights stay the latest ones."""
    import kairo.logic._train as M

    cfg, data = zero_one
    quiet = dict(data=data, progress_bar=False)

    def scripted():
        seq = iter([0.5, 0.9, 0.7])
        return lambda model, x, y, discrete=True, **kw: next(seq) if discrete else 0.5

    cfg = LogicTrainConfig(**{**cfg.__dict__, "iters": 120, "eval_every": 40, "keep_best": True})
    monkeypatch.setattr(M, "accuracy", scripted())
    best = train(cfg, checkpoint=tmp_path / "best.pt", **quiet)
    assert best["kept_iter"] == 80
    monkeypatch.setattr(M, "accuracy", lambda model, x, y, discrete=True, **kw: 0.5)
    ref = train(LogicTrainConfig(**{**cfg.__dict__, "iters": 80, "keep_best": False}), **quiet)
    assert ref["kept_iter"] is None
    for p, q in zip(best["model"].parameters(), ref["model"].parameters()):
        torch.testing.assert_close(p, q)
    loaded, _ = model_from_checkpoint(tmp_path / "best.pt")
    for p, q in zip(loaded.parameters(), ref["model"].parameters()):
        torch.testing.assert_close(p, q)
    assert torch.load(tmp_path / "best.pt", weights_only=True)["iter"] == 120
    # killed after the evaluation at 80, resumed to 120: the same kept weights
    monkeypatch.setattr(M, "accuracy", scripted())
    train(LogicTrainConfig(**{**cfg.__dict__, "iters": 80}), checkpoint=tmp_path / "p.pt",
          **quiet)
    monkeypatch.setattr(M, "accuracy", lambda model, x, y, discrete=True, **kw: 0.7)
    again = train(cfg, checkpoint=tmp_path / "p.pt", **quiet)
    assert again["resumed_from"] == 80 and again["kept_iter"] == 80
    for p, q in zip(again["model"].parameters(), ref["model"].parameters()):
        torch.testing.assert_close(p, q)
    with pytest.raises(ConfigError, match="keep_best must be true or false"):
        LogicTrainConfig(keep_best="yes")
