"""Networks trained with difflogic and torchlogix as kairo circuits (``kairo.logic.import_model``,
``kairo logic import``): the 16 gates one by one, real trained files of both frameworks bit
for bit against the framework's own eval forward (run here when the framework is importable,
else its stored reference), simplification, the command, and bad files refused by name.

The peers are not kairo dependencies: the tests that run them skip without them, saying how to
install them (docs/notes/logic_import.md); the committed files in tests/logic/data/ were written
by them (tests/logic/import_peers.py).
"""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

from kairo import DataError, KairoError
from kairo.cli import main
from kairo.logic import (DIFFLOGIC_OPS, GATE_NAMES, Circuit, InputBinarization,
                         framework_status, gate_ops, import_model, read_model, read_reference,
                         scores_from_counts, simplify, verify_import, write_reference)
from kairo.logic._gates import gate_bits, relaxed

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data"
INSTALL = ("to run the peers: pip install --no-deps --target /tmp/peers torchlogix==0.2.2, "
           "copy difflogic/ from difflogic's sdist there, PYTHONPATH=/tmp/peers "
           "(docs/notes/logic_import.md)")

# The frameworks' own definitions, copied as the oracle (difflogic/functional.py ``bin_op``,
# torchlogix/functional.py ``ID_TO_OP`` is the same): gate id i on real a, b.
BIN_OP = [
    lambda a, b: 0 * a,
    lambda a, b: a * b,
    lambda a, b: a - a * b,
    lambda a, b: a,
    lambda a, b: b - a * b,
    lambda a, b: b,
    lambda a, b: a + b - 2 * a * b,
    lambda a, b: a + b - a * b,
    lambda a, b: 1 - (a + b - a * b),
    lambda a, b: 1 - (a + b - 2 * a * b),
    lambda a, b: 1 - b,
    lambda a, b: 1 - b + a * b,
    lambda a, b: 1 - a,
    lambda a, b: 1 - a + a * b,
    lambda a, b: 1 - a * b,
    lambda a, b: 0 * a + 1,
]
# difflogic/compiled_model.py ALL_OPERATIONS, id by id
DIFFLOGIC_NAMES = ["zero", "and", "not_implies", "a", "not_implied_by", "b", "xor", "or",
                   "not_or", "not_xor", "not_b", "implied_by", "not_a", "implies", "not_and",
                   "one"]
KAIRO_NAME = {"zero": "FALSE", "and": "AND", "not_implies": "A_AND_NOT_B", "a": "A",
              "not_implied_by": "NOT_A_AND_B", "b": "B", "xor": "XOR", "or": "OR",
              "not_or": "NOR", "not_xor": "XNOR", "not_b": "NOT_B", "implied_by": "A_OR_NOT_B",
              "not_a": "NOT_A", "implies": "NOT_A_OR_B", "not_and": "NAND", "one": "TRUE"}
# torchlogix/functional.py ID_TO_WALSH_COEFFICIENTS: (w0, w1·B, w2·A, w3·AB), A = 1 − 2a
WALSH = [(1, 0, 0, 0), (0.5, 0.5, 0.5, -0.5), (0.5, -0.5, 0.5, 0.5), (0, 0, 1, 0),
         (0.5, 0.5, -0.5, 0.5), (0, 1, 0, 0), (0, 0, 0, 1), (-0.5, 0.5, 0.5, 0.5),
         (0.5, -0.5, -0.5, -0.5), (0, 0, 0, -1), (0, -1, 0, 0), (-0.5, -0.5, 0.5, -0.5),
         (0, 0, -1, 0), (-0.5, 0.5, -0.5, -0.5), (-0.5, -0.5, -0.5, 0.5), (-1, 0, 0, 0)]
A4, B4 = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])      # the four input pairs


def _mnist_test():
    from kairo.data import load_images

    m = load_images("mnist")
    return m.x_test.reshape(len(m.x_test), -1), m.y_test


def _framework(name: str):
    reason = framework_status(name)
    if reason:
        pytest.skip(f"{reason}; {INSTALL}")
    from kairo.logic import framework_module as imp

    return imp(name)


# ---------------------------------------------------------------------------- the 16 gates
@pytest.mark.parametrize("i", range(16))
def test_gate_i_of_the_frameworks_is_kairo_gate(i):
    """difflogic's / torchlogix's gate id i has the truth table of kairo's op DIFFLOGIC_OPS[i],
    in the packed reference, the relaxation and the name; its weights in each parametrization
    pick that op."""
    op = DIFFLOGIC_OPS[i]
    want = BIN_OP[i](A4, B4)
    assert op == i                                       # the same order (the paper's Table 1)
    packed = gate_bits(op, np.array([0b1100], np.uint64), np.array([0b1010], np.uint64))[0]
    assert [(int(packed) >> k) & 1 for k in range(4)] == want.tolist()   # sample k: A4[k], B4[k]
    assert np.array_equal(relaxed(op, A4, B4), want)
    assert GATE_NAMES[op] == KAIRO_NAME[DIFFLOGIC_NAMES[i]]
    raw = np.random.default_rng(i).standard_normal((3, 16)).astype(np.float32)
    raw[:, i] = 5.0
    assert gate_ops(raw, "raw").tolist() == [op] * 3
    assert gate_ops(np.array([WALSH[i]], np.float32), "warp").tolist() == [op]
    light = np.where(want == 1, 2.0, -2.0).astype(np.float32)[None]
    assert gate_ops(light, "light").tolist() == [op]


def test_raw_ties_pick_the_first_gate_as_torch_argmax():
    w = np.zeros((2, 16), np.float32)
    w[0, [3, 9]] = 1.0
    assert gate_ops(w, "raw").tolist() == [3, 0]


def test_warp_rounds_as_torchlogix_in_float32():
    """A Walsh sum that is 0 in exact arithmetic but not in float32 (left to right)."""
    w = np.array([[1e8, 1.0, -1e8, 0.0]], np.float32)
    ops = gate_ops(w, "warp")
    table = [int(((-(np.float32(1e8) + np.float32(1 - 2 * b) - np.float32(1e8) * (1 - 2 * a)))
                  > 0)) for a in (0, 1) for b in (0, 1)]
    assert [(gate_bits(int(ops[0]), np.array([0b1100], np.uint64),
                       np.array([0b1010], np.uint64))[0] >> k) & 1
            for k in range(4)] == table


# ---------------------------------------------------------------------------- input bits
@pytest.mark.parametrize("th, scale", [((0.5,), 255.0), ((0.25, 0.5, 0.75), 255.0),
                                       ((0.3, 0.6, 0.1), 255.0), ((127.0, 127.5, -3.0, 255.0), 1.0),
                                       ((0.999,), 255.0)])
def test_pixel_thresholds_are_exact(th, scale):
    """pixel > e ⇔ float32(pixel) / scale > float32(t), for every uint8 pixel."""
    ib = InputBinarization(th, scale, (16, 16, 1))
    px = torch.arange(256, dtype=torch.float32).div(scale)
    for t, e in zip(th, ib.pixel_thresholds()):
        assert np.array_equal((px > torch.tensor(t, dtype=torch.float32)).numpy(),
                              np.arange(256) > e)


@pytest.mark.parametrize("order", ["threshold-major", "pixel-major"])
@pytest.mark.parametrize("channels", ["first", "last"])
def test_input_permutation_maps_framework_bits_to_kairo_inputs(order, channels):
    rng = np.random.default_rng(1)
    ib = InputBinarization((0.2, 0.5, 0.7), 255, (3, 4, 2), order, channels)
    x = rng.integers(0, 256, (50, 24)).astype(np.uint8)
    fw = ib.framework_bits(x).numpy().astype(bool)
    kairo = (x[:, None, :] > np.array(ib.pixel_thresholds())[None, :, None]).reshape(50, -1)
    perm = ib.permutation()
    assert sorted(perm) == list(range(72))
    assert np.array_equal(fw, kairo[:, perm])
    # the frameworks' own idioms on (C, H, W) tensors: difflogic's CIFAR experiments
    # torch.cat([(x > t) for t in th], dim=0); torchlogix's FixedBinarization (feature_dim -2)
    # x.unsqueeze(-1) > th, then W and T merged
    v = torch.from_numpy(x.reshape(50, 3, 4, 2)).float().div(255)
    if channels == "first":
        v = v.permute(0, 3, 1, 2)
    th = torch.tensor([0.2, 0.5, 0.7])
    if order == "threshold-major":
        idiom = torch.stack([torch.cat([(im > t) for t in th], dim=0).flatten() for im in v])
    else:
        idiom = (v.unsqueeze(-1) > th).reshape(50, -1)
    assert np.array_equal(idiom.numpy(), fw)
    second = 1 if channels == "last" else 2          # pixel 1 of (h, w, c) or of (c, h, w)
    assert perm[1] == (second if order == "threshold-major" else 24)


# ---------------------------------------------------------------------------- hand-written files
def _bin_forward(x, layers, k, tau):
    """difflogic's eval forward written out from its definitions: argmax gate, bin_op."""
    h = x.astype(np.float32)
    for w, idx in layers:
        ids = np.asarray(w).argmax(1)
        a, b = h[:, np.asarray(idx[0])], h[:, np.asarray(idx[1])]
        h = np.stack([BIN_OP[g](a[:, j], b[:, j]) for j, g in enumerate(ids)], 1)
    out = h.astype(np.float32)
    return out == 1, (torch.from_numpy(out.reshape(len(x), k, -1).sum(2)) / tau).numpy()


def _handwritten_difflogic():
    """4 inputs → 16 gates, one of each op → 8 gates → GroupSum(2, τ = 2), in the schema."""
    g = torch.Generator().manual_seed(0)
    w1 = torch.randn(16, 16, generator=g)
    w1[torch.arange(16), torch.arange(16)] += 10.0            # gate i is op i
    i16 = torch.arange(16)
    idx1 = torch.stack([i16 % 4, (3 * i16 + 1) % 4])
    w2 = torch.randn(8, 16, generator=g)
    idx2 = torch.randint(0, 16, (2, 8), generator=g)
    sd = {"1.weights": w1, "1.indices": idx1, "2.weights": w2, "2.indices": idx2}
    layout = {"format": "kairo.logic-layout", "version": 1, "framework": "difflogic",
              "layers": [{"key": "1", "in_dim": 4, "out_dim": 16},
                         {"key": "2", "in_dim": 16, "out_dim": 8}],
              "group_sum": {"k": 2, "tau": 2.0}, "n_gates": 24}
    return sd, layout, [(w1.numpy(), idx1.numpy()), (w2.numpy(), idx2.numpy())]


def _all_inputs(n):
    return ((np.arange(2 ** n)[:, None] >> np.arange(n)) & 1).astype(np.uint8)


@pytest.mark.parametrize("form", ["bundle", "state_dict+layout", "inline indices"])
def test_handwritten_difflogic_schema_equals_difflogic_definition(tmp_path, form):
    sd, layout, layers = _handwritten_difflogic()
    path = tmp_path / "m.pt"
    lay = None
    if form == "bundle":
        torch.save({"state_dict": sd, "layout": layout}, path)
    else:
        if form == "inline indices":
            layout["layers"][0]["indices"] = sd.pop("1.indices").tolist()
        torch.save(sd, path)
        lay = tmp_path / "layout.json"
        lay.write_text(json.dumps(layout))
    model = read_model(path, layout=lay)
    c = model.circuit()
    assert (c.n_inputs, c.n_gates, c.n_classes) == (4, 24, 2)
    assert c.ops[:16].tolist() == list(range(16))
    x = _all_inputs(4)
    want_out, want_scores = _bin_forward(x, layers, 2, 2.0)
    assert np.array_equal(c.evaluate(x), want_out)
    assert np.array_equal(scores_from_counts(model, c.scores(x)), want_scores)
    expected = {"outputs": want_out, "scores": want_scores}
    assert verify_import(c, model, x, expected=expected)["scores_equal"]
    s, _ = simplify(c)
    assert s.n_gates <= c.n_gates and np.array_equal(s.evaluate(x), want_out)


def test_handwritten_torchlogix_schema(tmp_path):
    """warp and light weights, fixed and learnable connections, GroupSum with β."""
    g = torch.Generator().manual_seed(3)
    w1 = torch.tensor(WALSH, dtype=torch.float32)                 # gate i is op i
    idx1 = torch.stack([torch.arange(16) % 6, (5 * torch.arange(16) + 2) % 6])
    light = torch.randn(12, 4, generator=g)
    cand = torch.randint(0, 16, (3, 2, 12), generator=g)
    cw = torch.rand(3, 2, 12, generator=g)
    sd = {"1.weight": w1, "1.connections.indices": idx1, "2.weight": light,
          "2.connections.indices": cand, "2.connections.weights": cw}
    layout = {"framework": "torchlogix",
              "layers": [{"key": "1", "in_dim": 6, "out_dim": 16, "parametrization": "warp"},
                         {"key": "2", "in_dim": 16, "out_dim": 12, "parametrization": "light"}],
              "group_sum": {"k": 3, "tau": 4.0, "beta": 0.5}}
    path = tmp_path / "t.pt"
    torch.save({"state_dict": sd, "layout": layout}, path)
    model = read_model(path)
    c = model.circuit()
    assert c.ops[:16].tolist() == list(range(16))
    x = _all_inputs(6)
    # torchlogix's definitions: warp → bin_op of its id; light: entry 2a + b is weight > 0;
    # learnable: the argmax candidate
    h1 = np.stack([BIN_OP[j](x[:, idx1[0, j]], x[:, idx1[1, j]]) for j in range(16)], 1)
    chosen = cand.gather(0, cw.argmax(0, keepdim=True))[0].numpy()
    a, b = h1[:, chosen[0]], h1[:, chosen[1]]
    lw = (light > 0).numpy()
    h2 = np.where(a == 1, np.where(b == 1, lw[:, 3], lw[:, 2]),
                  np.where(b == 1, lw[:, 1], lw[:, 0]))
    assert np.array_equal(c.evaluate(x), h2)
    sums = torch.from_numpy(h2.reshape(len(x), 3, 4).sum(2).astype(np.float32))
    assert np.array_equal(scores_from_counts(model, c.scores(x)), ((sums + 0.5) / 4.0).numpy())


# ---------------------------------------------------------------------------- committed real files
REAL = {"difflogic": {"thresholds": (0.5,)}, "torchlogix": None, "torchlogix_lut": None,
        "torchlogix_conv": None}


@pytest.fixture(scope="module")
def mnist_test():
    return _mnist_test()


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_model_equals_its_frameworks_stored_forward(name, mnist_test):
    """A model trained by the framework itself (tests/logic/import_peers.py), read without the
    framework, equals the framework's eval forward stored beside it: every output bit and every
    class score, before and after simplification."""
    model = read_model(DATA / f"{name}_mnist.pt", input=REAL[name])
    assert model.form == "module" and model.framework == name.split("_")[0]
    c = model.circuit()
    ref = read_reference(DATA / f"{name}_mnist_reference.npz")
    assert ref["framework"] == name.split("_")[0] and ref["model_sha256"] == model.sha256
    rep = verify_import(c, model, reference=ref)
    assert rep == {"against": f"reference {DATA / f'{name}_mnist_reference.npz'}",
                   "samples": 100, "outputs_equal": True, "scores_equal": True}
    s, report = simplify(c)
    assert report["after"]["n_gates"] < report["before"]["n_gates"] == c.n_gates
    # a wide LUT is several gates; pooling adds ORs
    assert (c.n_gates == model.n_gates) == (name in ("difflogic", "torchlogix"))
    verify_import(s, model, reference=ref)
    # a classifier of the MNIST images, on the image contract kairo's back ends read
    x, y = mnist_test
    assert np.array_equal(ref["inputs"], x[:100])
    assert (c.predict(c.image_bits(x[:100])) == y[:100]).mean() > 0.35
    assert c.image_input.n_pixels == 784
    th = [float(t) for t in model.input.thresholds]
    px = torch.arange(256, dtype=torch.float32).div(255)
    assert c.meta["thresholds"] == [int((px <= torch.tensor(t)).sum()) - 1 for t in th]
    assert model.input.bit_order == ("threshold-major" if name == "difflogic" else "pixel-major")


def test_real_torchlogix_lut_file():
    m = read_model(DATA / "torchlogix_lut_mnist.pt")
    assert [(L.parametrization, L.rank, L.inputs.shape, "candidates" in L.tensors)
            for L in m.layers] == [("warp", 4, (4, 400), False), ("light", 6, (6, 200), True)]
    assert m.summary()["layers"][1]["lut_rank"] == 6
    with pytest.raises(KairoError, match="6-input LUTs, not gates"):
        m.layers[1].ops


def test_real_torchlogix_file_uses_all_three_parametrizations():
    m = read_model(DATA / "torchlogix_mnist.pt")
    assert [(L.parametrization, "candidates" in L.tensors) for L in m.layers] == \
        [("raw", False), ("warp", False), ("light", True)]
    assert (m.k, m.tau, m.beta) == (10, 10.0, 0.5)
    assert m.input.thresholds == (0.30000001192092896, 0.6000000238418579)   # float32 buffer


def test_a_reference_catches_one_wrong_gate(tmp_path):
    model = read_model(DATA / "difflogic_mnist.pt", input=REAL["difflogic"])
    c = model.circuit()
    ref = read_reference(DATA / "difflogic_mnist_reference.npz")
    out = c.evaluate(c.image_bits(ref["inputs"]))
    j = int(np.flatnonzero(out.any(0) & ~out.all(0))[0])        # an output that varies
    ops = c.ops.copy()
    ops[c.outputs[j] - c.n_inputs] ^= 15                         # its complement
    bad = Circuit(c.n_inputs, ops, c.a, c.b, c.outputs, c.n_classes, c.meta)
    with pytest.raises(KairoError, match=f"disagrees with reference .* output {j} "):
        verify_import(bad, model, reference=ref)
    scores = dict(ref, scores=ref["scores"] + np.float32(1e-3))
    with pytest.raises(KairoError, match="class scores differ"):
        verify_import(c, model, reference=scores)


# ---------------------------------------------------------------------------- with the frameworks
@pytest.fixture(scope="module")
def difflogic_files(tmp_path_factory, mnist_test):
    """A difflogic model trained here, saved whole, as state_dict + layout and as a bundle."""
    from import_peers import difflogic_model, mnist_subset

    dl = _framework("difflogic")
    xtr, ytr, _, _ = mnist_subset(400)
    model = difflogic_model(dl, xtr, ytr, widths=(500, 300), steps=100, seed=1)
    d = tmp_path_factory.mktemp("difflogic")
    torch.save(model, d / "whole.pt")
    sd = model.state_dict()
    for i, m in enumerate(model):
        if isinstance(m, dl.LogicLayer):
            sd[f"{i}.indices"] = torch.stack(m.indices)
    layout = {"framework": "difflogic",
              "layers": [{"key": str(i), "in_dim": m.in_dim, "out_dim": m.out_dim}
                         for i, m in enumerate(model) if isinstance(m, dl.LogicLayer)],
              "group_sum": {"k": model[-1].k, "tau": model[-1].tau},
              "input": {"thresholds": [0.5], "scale": 255}}
    torch.save(sd, d / "sd.pt")
    (d / "layout.json").write_text(json.dumps(layout))
    torch.save({"state_dict": sd, "layout": layout}, d / "bundle.pt")
    return dl, model, d


def _difflogic_own(dl, model, x):
    """difflogic's eval forward of the trained object itself (python implementation)."""
    for m in model:
        if isinstance(m, dl.LogicLayer):
            m.implementation = "python"
    bits = (torch.from_numpy(np.array(x)).float().div(255) > 0.5).float()
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):
        model.eval()
        h = model[:-1](bits)
        return h.numpy() == 1, model[-1](h).numpy()


@pytest.mark.slow
@pytest.mark.parametrize("form", ["whole.pt", "sd.pt", "bundle.pt"])
def test_difflogic_import_equals_difflogic(difflogic_files, mnist_test, form):
    dl, model, d = difflogic_files
    x, _ = mnist_test
    x = x[:500]
    kw = {"layout": d / "layout.json"} if form == "sd.pt" else {}
    inp = {"thresholds": (0.5,)} if form == "whole.pt" else None
    c = import_model(d / form, "difflogic", input=inp, **kw)
    out, scores = _difflogic_own(dl, model, x)
    assert np.array_equal(c.evaluate(c.image_bits(x)), out)
    imported = read_model(d / form, input=inp, **kw)
    assert np.array_equal(scores_from_counts(imported, c.scores(c.image_bits(x))), scores)
    assert verify_import(simplify(c)[0], imported, x)["outputs_equal"]


@pytest.mark.slow
def test_difflogic_compiled_c_counts_equal_the_circuits(difflogic_files, mnist_test):
    """difflogic's own C path (CompiledLogicNet, gcc) counts the same votes per class."""
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("no gcc")
    dl, model, d = difflogic_files
    x, _ = mnist_test
    x = x[:300]
    c = import_model(d / "whole.pt", input={"thresholds": (0.5,)})
    compiled = dl.CompiledLogicNet(model=model, num_bits=64, cpu_compiler="gcc")
    with contextlib.redirect_stdout(io.StringIO()):
        compiled.compile(opt_level=0)
        counts = compiled((x / 255 > 0.5)).numpy()
    assert np.array_equal(counts, c.scores(c.image_bits(x)))


@pytest.fixture(scope="module")
def torchlogix_files(tmp_path_factory):
    from import_peers import mnist_subset, torchlogix_model

    _framework("torchlogix")
    xtr, ytr, _, _ = mnist_subset(300)
    model = torchlogix_model(xtr, ytr, steps=30, seed=2)
    d = tmp_path_factory.mktemp("torchlogix")
    torch.save(model, d / "whole.pt")
    layout = {"framework": "torchlogix",
              "layers": [{"key": str(i), "in_dim": m.in_dim, "out_dim": m.out_dim,
                          "parametrization": p}
                         for (i, m), p in zip(list(enumerate(model))[2:5],
                                              ("raw", "warp", "light"))],
              "group_sum": {"k": 10, "tau": 10.0, "beta": 0.5},
              "input": {"thresholds": "0.thresholds"}}
    torch.save({"state_dict": model.state_dict(), "layout": layout}, d / "bundle.pt")
    return model, d


@pytest.mark.slow
@pytest.mark.parametrize("form", ["whole.pt", "bundle.pt"])
def test_torchlogix_import_equals_torchlogix(torchlogix_files, mnist_test, form):
    model, d = torchlogix_files
    x, _ = mnist_test
    x = x[:500]
    imported = read_model(d / form)
    c = imported.circuit()
    values = torch.from_numpy(np.array(x).reshape(-1, 1, 28, 28)).float().div(255)
    with torch.no_grad():
        model.eval()
        h = model[:-1](values)
        scores = model[-1](h).numpy()
    bits = c.image_bits(x)
    assert np.array_equal(c.evaluate(bits), h.numpy() == 1)
    assert np.array_equal(scores_from_counts(imported, c.scores(bits)), scores)
    assert verify_import(simplify(c)[0], imported, x)["scores_equal"]


@pytest.mark.parametrize("kind", ["learnable", "soft", "dummy", "Dlgn"])
def test_torchlogix_binarizations_and_model_classes(tmp_path, kind):
    """Learnable thresholds (softplus-ordered diffs, recomputed as torchlogix does), soft
    ones (hard in eval), none, and torchlogix's own Dlgn model class, with random weights."""
    tlx = _framework("torchlogix")
    L = tlx.layers
    torch.manual_seed(4)
    if kind == "Dlgn":
        from torchlogix.models.dense import Dlgn

        model = Dlgn(thresholds=torch.tensor([0.5]), binarization="fixed",
                     binarization_kwargs={}, in_dim=49, n_layers=2, neurons_per_layer=[40, 30],
                     class_count=3, tau=10.0)
    else:
        b = {"learnable": lambda: L.LearnableBinarization(torch.tensor([0.2, 0.45, 0.7])),
             "soft": lambda: L.SoftBinarization(torch.tensor([0.3, 0.5])),
             "dummy": L.DummyBinarization}[kind]()
        n = 49 * (len(b.thresholds) if kind != "dummy" else 1)
        if kind == "learnable":
            with torch.no_grad():
                b.raw_diffs.add_(torch.randn(3) * 0.05)
        model = torch.nn.Sequential(b, torch.nn.Flatten(), L.LogicDense(n, 90),
                                    L.GroupSum(3, 2.0, beta=-1.0))
    for m in model:
        if isinstance(m, L.LogicDense):
            with torch.no_grad():
                m.weight.normal_()
    torch.save(model, tmp_path / "m.pt")
    imported = read_model(tmp_path / "m.pt")
    c = imported.circuit()
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2 if kind == "dummy" else 256, (400, 49)).astype(np.uint8)
    assert verify_import(c, imported, x)["scores_equal"]
    assert (c.image_input is None) == (kind == "dummy")


@pytest.mark.parametrize("rank, kind, conn", [(4, "warp", "fixed"), (6, "light", "learnable"),
                                              (6, "warp", "learnable"), (4, "light", "fixed")])
def test_torchlogix_lut_layers_equal_torchlogix(tmp_path, rank, kind, conn):
    """4- and 6-input LUT layers with random weights (every sign pattern likely), as a whole
    module and as a state dict with a layout, against torchlogix's own eval forward."""
    tlx = _framework("torchlogix")
    L = tlx.layers
    torch.manual_seed(rank)
    extra = ({"connections": "learnable", "connections_kwargs": {"num_candidates": 3}}
             if conn == "learnable" else {})
    model = torch.nn.Sequential(L.FixedBinarization(torch.tensor([0.4])), torch.nn.Flatten(),
                                L.LogicDense(49, 60, lut_rank=rank, parametrization=kind,
                                             **extra),
                                L.LogicDense(60, 30, lut_rank=2, parametrization="raw"),
                                L.GroupSum(3, 2.0))
    with torch.no_grad():
        model[2].weight.normal_()
        model[3].weight.normal_()
    torch.save(model, tmp_path / "m.pt")
    sd = {k: v for k, v in model.state_dict().items()}
    layout = {"framework": "torchlogix", "input": {"thresholds": "0.thresholds"},
              "layers": [{"key": "2", "in_dim": 49, "out_dim": 60, "parametrization": kind,
                          "lut_rank": rank},
                         {"key": "3", "in_dim": 60, "out_dim": 30}],
              "group_sum": {"k": 3, "tau": 2.0}}
    torch.save({"state_dict": sd, "layout": layout}, tmp_path / "b.pt")
    x = np.random.default_rng(0).integers(0, 256, (500, 49)).astype(np.uint8)
    for f in ("m.pt", "b.pt"):
        imported = read_model(tmp_path / f)
        c = imported.circuit()
        assert c.n_gates > imported.n_gates
        for circ in (c, simplify(c)[0]):
            assert verify_import(circ, imported, x)["scores_equal"]


def test_torchlogix_layers_kairo_cannot_import_are_named(tmp_path):
    tlx = _framework("torchlogix")
    for layer, needle in ((tlx.layers.LogicDense(8, 8, lut_rank=1, parametrization="warp"),
                           r"lut_rank 1 is not supported \(expected 2, 4, 6\)"),
                          (tlx.layers.OrPooling3d(2, 2, 0),
                           "holds a torchlogix.layers.pool.OrPooling3d, which kairo does not "
                           "import"),
                          (tlx.layers.LogicConvTranspose2d(in_dim=4, num_kernels=2, tree_depth=2),
                           "holds a torchlogix.layers.conv.LogicConvTranspose2d, which kairo "
                           "does not import")):
        path = tmp_path / "m.pt"
        torch.save(torch.nn.Sequential(torch.nn.Flatten(), layer, tlx.layers.GroupSum(2)), path)
        with pytest.raises(DataError, match=needle):
            read_model(path)


# ---------------------------------------------------------------------------- the command
def _import(tmp_path, *args):
    out = tmp_path / "imported"
    return main(["logic", "import", *map(str, args), "--out", str(out)]), out


def test_cli_writes_a_verified_circuit(tmp_path, capsys):
    rc, out = _import(tmp_path, "--model", DATA / "difflogic_mnist.pt", "--thresholds", "0.5",
                      "--reference", DATA / "difflogic_mnist_reference.npz", "--samples", "200")
    text = capsys.readouterr()
    assert rc == 0, text.err
    m = json.loads((out / "metrics.json").read_text())
    assert m["verified"] and m["verified_against_reference"] == 100
    assert m["gates_before"] == 600 and m["gates_after"] < 600
    assert m["n_test"] == 10000 and m["test_accuracy_circuit"] > 0.3
    c, raw = Circuit.load(out / "circuit.json"), Circuit.load(out / "circuit_raw.json")
    assert c.meta["dataset"] == "mnist" and c.meta["imported"]["framework"] == "difflogic"
    assert c.meta["thresholds"] == [127] and raw.n_gates == 600
    assert "bit-exact with the reference" in text.out
    run = json.loads((out / "run.json").read_text())
    assert {"model", "reference"} <= set(run["data"])
    if framework_status("difflogic") is None:
        assert m["verified_against_framework"] == 200
        assert (out / "reference.npz").is_file()
        assert read_reference(out / "reference.npz")["inputs"].shape == (200, 784)
    # the imported circuit is a kairo circuit: the back ends take it as it is
    assert main(["logic", "export", "--circuit", str(out / "circuit.json"), "--format", "json",
                 "--output", str(tmp_path / "again.json"), "--verify-samples", "100"]) == 0


def test_cli_refuses_what_it_cannot_check(tmp_path, capsys, monkeypatch):
    import kairo.logic._import as imp

    monkeypatch.setattr(imp, "framework_status", lambda name: f"{name} is not installed")
    rc, out = _import(tmp_path, "--model", DATA / "torchlogix_mnist.pt")
    assert rc == 2 and "cannot verify the import" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.iterdir())
    rc, out = _import(tmp_path, "--model", DATA / "torchlogix_mnist.pt", "--no-verify",
                      "--samples", "50")
    assert rc == 0 and not json.loads((out / "metrics.json").read_text())["verified"]
    assert "not verified" in capsys.readouterr().out


def test_cli_leaves_nothing_when_the_reference_disagrees(tmp_path, capsys, monkeypatch):
    import kairo.logic._import as imp

    monkeypatch.setattr(imp, "framework_status", lambda name: f"{name} is not installed")
    ref = read_reference(DATA / "torchlogix_mnist_reference.npz")
    model = read_model(DATA / "torchlogix_mnist.pt")
    bad = dict(ref)
    bad["scores"] = ref["scores"].copy()
    bad["scores"][7, 3] += 0.1
    write_reference(tmp_path / "bad.npz", model, ref["inputs"], bad)
    rc, out = _import(tmp_path, "--model", DATA / "torchlogix_mnist.pt", "--reference",
                      tmp_path / "bad.npz")
    assert rc == 2 and "on sample 7" in capsys.readouterr().err
    assert not out.exists()
    # a reference of the other framework, and a model that reads 784 pixels at 2 thresholds
    rc, _ = _import(tmp_path, "--model", DATA / "torchlogix_mnist.pt", "--reference",
                    DATA / "difflogic_mnist_reference.npz")
    assert rc == 2 and "made with difflogic, not torchlogix" in capsys.readouterr().err


# ---------------------------------------------------------------------------- bad files
def _bundle(tmp_path, mutate=None, sd_mutate=None):
    sd, layout, _ = _handwritten_difflogic()
    if mutate:
        mutate(layout)
    if sd_mutate:
        sd_mutate(sd)
    path = tmp_path / "bad.pt"
    torch.save({"state_dict": sd, "layout": layout}, path)
    return path


@pytest.mark.parametrize("mutate, sd_mutate, needle", [
    (lambda L: L["layers"][1].update(out_dim=9), None,
     r"layer 2 .*gate weights have shape \(8, 16\) .* but the layer has 9 gates"),
    (lambda L: L["layers"][1].update(in_dim=15), None, r"gate \d input [ab] reads input 1[05]"
     r"|layer 2 reads 15 inputs but layer 1 before it has 16 gates"),
    (lambda L: L.update(n_gates=25), None, r"n_gates is 25 but its layers have 24 gates"),
    (lambda L: L["group_sum"].update(k=3), None, r"GroupSum k=3 does not divide the 8 outputs"),
    (lambda L: L.update(framework="keras"), None, r"'framework' must be one of"),
    (lambda L: L["layers"][0].update(key="7"), None, r"no tensor '7.weights'"),
    (lambda L: L["layers"][0].pop("out_dim"), None, r"layers\[0\].out_dim must be an integer"),
    (lambda L: L["layers"][1].update(parametrization="warp"), None, r"raw for difflogic"),
    (None, lambda sd: sd.pop("2.indices"), r"layer 2 has no wiring: difflogic keeps "
     r"LogicLayer.indices outside the state_dict"),
    (None, lambda sd: sd["1.indices"].__setitem__((0, 5), 4), r"gate 5 input a reads input 4, "
     r"but the layer has 4 inputs"),
    (None, lambda sd: sd.__setitem__("1.indices", sd["1.indices"][:, :15]),
     r"connection indices has shape \(2, 15\) but the layer has 16 gates"),
    (None, lambda sd: sd["2.weights"].__setitem__((3, 2), float("nan")), r"gate 3: .*NaN"),
    (None, lambda sd: sd.__setitem__("2.weights", sd["2.weights"][:, :4]),
     r"expected float \(8, 16\)"),
])
def test_bad_layouts_and_tensors_are_refused_by_name(tmp_path, mutate, sd_mutate, needle):
    path = _bundle(tmp_path, mutate, sd_mutate)
    with pytest.raises(DataError, match=needle) as info:
        read_model(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("mutate, needle", [
    (lambda L, sd: L["layers"][0].update(lut_rank=5), r"layers\[0\]: lut_rank 5 is not "
     r"supported \(expected 2, 4, 6\)"),
    (lambda L, sd: L["layers"][0].update(lut_rank="4"), r"lut_rank '4' is not supported"),
    (lambda L, sd: L["layers"][1].update(lut_rank=4), r"layers\[1\]: lut_rank 4 with the raw "
     r"parametrization"),
    (lambda L, sd: L["layers"][0].update(lut_rank=6), r"gate weights have shape \(12, 16\) "
     r".*expected float \(12, 64\) for the warp parametrization of lut_rank 6"),
    (lambda L, sd: sd.__setitem__("1.connections.indices", sd["1.connections.indices"][:2]),
     r"connection indices has shape \(2, 12\) but the layer has 12 gates of 4 inputs "
     r"\(expected \(4, 12\)\)"),
    (lambda L, sd: sd["1.connections.indices"].__setitem__((3, 7), 9),
     r"gate 7 input 3 reads input 9, but the layer has 6 inputs"),
    (lambda L, sd: L.update(n_gates=12 * 15), r"n_gates is 180 but its layers have 24 gates"),
])
def test_bad_lut_layers_are_refused_by_name(tmp_path, mutate, needle):
    """A torchlogix 4-input LUT layer (6 → 12) and a raw one (12 → 12), then one thing wrong."""
    g = torch.Generator().manual_seed(1)
    sd = {"1.weight": torch.randn(12, 16, generator=g),
          "1.connections.indices": torch.randint(0, 6, (4, 12), generator=g),
          "2.weight": torch.randn(12, 16, generator=g),
          "2.connections.indices": torch.randint(0, 12, (2, 12), generator=g)}
    lay = {"framework": "torchlogix",
           "layers": [{"key": "1", "in_dim": 6, "out_dim": 12, "parametrization": "warp",
                       "lut_rank": 4},
                      {"key": "2", "in_dim": 12, "out_dim": 12}],
           "group_sum": {"k": 3}}
    path = tmp_path / "b.pt"
    torch.save({"state_dict": sd, "layout": lay}, path)
    assert read_model(path).circuit().n_gates > 24
    mutate(lay, sd)
    torch.save({"state_dict": sd, "layout": lay}, path)
    with pytest.raises(DataError, match=needle) as info:
        read_model(path)
    assert str(path) in str(info.value)
    bad = dict(lay, framework="difflogic")
    bad["layers"] = [{"key": "1", "in_dim": 6, "out_dim": 12, "lut_rank": 4}]
    torch.save({"state_dict": sd, "layout": bad}, path)
    with pytest.raises(DataError, match=r"lut_rank: difflogic's gates have 2 inputs, got 4"):
        read_model(path)


def test_bad_files_are_refused_by_name(tmp_path):
    with pytest.raises(KairoError, match="model file .*nope.pt does not exist"):
        read_model(tmp_path / "nope.pt")
    (tmp_path / "text.pt").write_text("not a model\n")
    with pytest.raises(DataError, match="text.pt: cannot be read"):
        read_model(tmp_path / "text.pt")
    real = (DATA / "difflogic_mnist.pt").read_bytes()
    (tmp_path / "cut.pt").write_bytes(real[:len(real) // 2])
    with pytest.raises(DataError, match="cut.pt: .*(truncated|cannot be read)"):
        read_model(tmp_path / "cut.pt")
    torch.save(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(4, 2)), tmp_path / "l.pt")
    with pytest.raises(DataError, match="l.pt: holds a torch.nn.modules.linear.Linear"):
        read_model(tmp_path / "l.pt")
    sd, layout, _ = _handwritten_difflogic()
    torch.save(sd, tmp_path / "sd.pt")
    with pytest.raises(DataError, match="bare state_dict .* difflogic's LogicLayer.indices"):
        read_model(tmp_path / "sd.pt")
    (tmp_path / "layout.json").write_text(json.dumps(layout)[:40])
    with pytest.raises(DataError, match="layout .*layout.json: not valid JSON"):
        read_model(tmp_path / "sd.pt", layout=tmp_path / "layout.json")
    with pytest.raises(DataError, match="holds a difflogic model, not a torchlogix one"):
        read_model(DATA / "difflogic_mnist.pt", "torchlogix")
    with pytest.raises(DataError, match=r"gives 2 thresholds × 784 pixels \(28×28×1\) = 1568 "
                                        r"bits, but the first logic layer reads 784"):
        read_model(DATA / "difflogic_mnist.pt", input={"thresholds": (0.2, 0.5),
                                                       "image_shape": (28, 28)})
    with pytest.raises(DataError, match="784 bits, not a multiple of the 3 input thresholds"):
        read_model(DATA / "difflogic_mnist.pt", input={"thresholds": (0.2, 0.5, 0.7)})
    with pytest.raises(DataError, match="binarizes its input itself"):
        read_model(DATA / "torchlogix_mnist.pt", input={"thresholds": (0.5,)})
    torch.save(torch.nn.Sequential(torch.nn.Flatten()), tmp_path / "old.pt",
               _use_new_zipfile_serialization=False)
    with pytest.raises(DataError, match="old.pt: .*legacy .*re-save it"):
        read_model(tmp_path / "old.pt")
    torch.save({"weights": [1, 2]}, tmp_path / "d.pt")
    with pytest.raises(DataError, match="neither a state_dict"):
        read_model(tmp_path / "d.pt")


def test_a_model_without_thresholds_reads_bits(tmp_path):
    """Without an input binarization the circuit's inputs are the framework's bits."""
    c = import_model(DATA / "difflogic_mnist.pt")
    assert c.image_input is None and c.n_inputs == 784
    m = read_model(DATA / "difflogic_mnist.pt")
    ref = read_reference(DATA / "difflogic_mnist_reference.npz")
    bits = (ref["inputs"] > 127).astype(np.uint8)          # x / 255 > 0.5
    assert verify_import(c, m, bits, expected=ref)["outputs_equal"]
