"""torchlogix's convolutional networks (``LogicConv2d`` trees, ``OrPooling2d``) as kairo circuits:
the circuit against a plain NumPy reading of torchlogix's definition (no peer needed), real and
random models against torchlogix's own eval forward (run when it is importable), and bad
layers refused by name."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from kairo import DataError
from kairo.logic import TRUTH, framework_status, read_model, simplify, verify_import
from kairo.logic._import_conv import conv_from_state, pool_from_state
from kairo.logic._import_files import _tables

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data"


def _tlx():
    reason = framework_status("torchlogix")
    if reason:
        pytest.skip(f"torchlogix not importable ({reason}); docs/notes/logic_import.md")
    from kairo.logic import framework_module

    return framework_module("torchlogix")


def _conv_state(rng, c=2, hw=(6, 7), k=3, depth=3, rf=(3, 2), stride=1, pad=1, rank=2):
    """The attributes and state dict of a LogicConv2d with random wiring and raw weights."""
    out = [(d + 2 * pad - r) // stride + 1 for d, r in zip(hw, rf)]
    n_leaf = rank ** (depth - 1)
    leaves = np.stack([rng.integers(0, hw[0] + 2 * pad, (rank, k, out[0] * out[1], n_leaf)),
                       rng.integers(0, hw[1] + 2 * pad, (rank, k, out[0] * out[1], n_leaf)),
                       rng.integers(0, c, (rank, k, out[0] * out[1], n_leaf))], -1)
    sd = {"connections._indices_L0": torch.from_numpy(leaves)}
    for lv in range(depth):
        n_l = n_leaf // rank ** lv
        if lv:
            sd[f"connections._indices_L{lv}"] = (torch.arange(n_l * rank).view(-1, rank).T
                                                 .contiguous())
        sd[f"tree_weights.{lv}"] = torch.from_numpy(rng.normal(size=(n_l, k, 16))
                                                    .astype(np.float32))
    st = {"in_dim": hw, "channels": c, "num_kernels": k, "tree_depth": depth,
          "receptive_field_size": rf, "stride": stride, "padding": pad, "lut_rank": rank,
          "conv_dimension": 2}
    return st, sd


def _reference_conv(x, st, sd):
    """torchlogix's LogicConv2d eval forward on a (n, C, H, W) 0/1 array, read from its
    definition: pad with zeros, gather the leaves, apply each level's gates."""
    p = st["padding"]
    x = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    lv0 = sd["connections._indices_L0"].numpy()             # (2, K, P, S, 3)
    a = x[:, lv0[0, ..., 2], lv0[0, ..., 0], lv0[0, ..., 1]]               # (n, K, P, S)
    b = x[:, lv0[1, ..., 2], lv0[1, ..., 0], lv0[1, ..., 1]]
    h = None
    for lv in range(st["tree_depth"]):
        w = sd[f"tree_weights.{lv}"].numpy()                # (n_l, K, 16)
        if lv:
            link = sd[f"connections._indices_L{lv}"].numpy()  # (2, n_l)
            a, b = h[..., link[0]], h[..., link[1]]
        truth = TRUTH[w.argmax(-1).T].astype(np.int64)   # (K, n_l); raw id = kairo op
        h = (truth[None, :, None, :] >> (2 * a + b)) & 1
    return h[..., 0]                                                        # (n, K, P)


def test_conv_and_pool_circuit_is_torchlogix_definition():
    """Without torchlogix: a two-conv, two-pool grid as the circuit computes it equals a NumPy
    reading of the definition, for every bit of every position."""
    rng = np.random.default_rng(0)
    st, sd = _conv_state(rng)
    conv = conv_from_state("1", st, sd, "raw", None, "m.pt", _tables)
    assert conv.out_shape == (3, 6, 8) and conv.n_luts == 3 * 48 * 7
    pool = pool_from_state("2", {"kernel_size": 3, "stride": 2, "padding": 1}, conv.out_shape,
                           "m.pt")
    assert pool.out_shape == (3, 3, 4)
    n_in = 2 * 6 * 7
    x = rng.integers(0, 2, (64, 2, 6, 7))
    o, a, b, out = conv.gates(np.arange(n_in), n_in)
    o2, a2, b2, out2 = pool.gates(out, n_in + len(o))
    from kairo.logic import Circuit

    c = Circuit(n_inputs=n_in, ops=np.array(o + o2, np.uint8), a=np.array(a + a2),
                b=np.array(b + b2), outputs=out2)
    want = _reference_conv(x, st, sd).reshape(64, 3, 6, 8)
    pooled = np.zeros((64, 3, 3, 4), dtype=np.int64)          # max over the window in bounds
    for y in range(3):
        for z in range(4):
            pooled[:, :, y, z] = want[:, :, max(2 * y - 1, 0):2 * y + 2,
                                      max(2 * z - 1, 0):2 * z + 2].max((2, 3))
    got = c.evaluate(x.reshape(64, -1).astype(np.uint8))
    assert np.array_equal(got, pooled.reshape(64, -1).astype(got.dtype))
    assert np.array_equal(simplify(c)[0].evaluate(x.reshape(64, -1).astype(np.uint8)), got)


@pytest.mark.parametrize("change, needle", [
    (lambda st, sd: st.update(conv_dimension=3), r"conv_dimension 3"),
    (lambda st, sd: st.update(in_dim=7), r"in_dim and receptive_field_size must be \(h, w\)"),
    (lambda st, sd: sd["connections._indices_L0"].__setitem__((0, 1, 2, 3, 0), 8),
     r"leaf \[0, 1, 2, 3\] reads \(h, w, c\) = \[8, .*\] outside the padded 8×9×2 grid"),
    (lambda st, sd: sd.pop("connections._indices_L0"),
     r"connections._indices_L0 is missing"),
    (lambda st, sd: st.update(num_kernels=4), r"_indices_L0 has shape \(2, 3, 48, 4, 3\) .* "
     r"expected integers \(2, 4, 48, 4, 3\)"),
    (lambda st, sd: sd["connections._indices_L2"].__setitem__((1, 0), 2),
     r"_indices_L2 must be integers \(2, 1\) in 0…1"),
    (lambda st, sd: sd.__setitem__("tree_weights.1", torch.zeros(2, 3, 4)), r"tree_weights.1 has shape \(2, 3, 4\) .* expected float "
     r"\(2, 3, 16\)"),
    (lambda st, sd: sd["tree_weights.0"].__setitem__((1, 1, 3), float("nan")),
     r"tree_weights.0: gate 4: its weights are NaN"),
])
def test_bad_conv_layers_are_refused_by_name(change, needle):
    st, sd = _conv_state(np.random.default_rng(1))
    change(st, sd)
    with pytest.raises(DataError, match=needle) as info:
        conv_from_state("1", st, sd, "raw", None, "model file m.pt", _tables)
    assert "model file m.pt: layer 1 (torchlogix LogicConv2d)" in str(info.value)


def test_bad_conv_inputs_and_pools_are_refused_by_name():
    st, sd = _conv_state(np.random.default_rng(2))
    with pytest.raises(DataError, match=r"reads a \(channels, h, w\) = \(2, 6, 7\) grid, but the "
                                        r"layer before gives \(3, 6, 7\)"):
        conv_from_state("1", st, sd, "raw", (3, 6, 7), "m.pt", _tables)
    for state, shape, needle in (
            ({"kernel_size": 2}, None, r"pooling needs a \(C, H, W\) grid"),
            ({"kernel_size": 2, "padding": 2}, (1, 4, 4), r"padding \(2, 2\) is more than half"),
            ({"kernel_size": 5}, (1, 4, 4), r"a \(5, 5\) window does not fit"),
            ({"kernel_size": 0}, (1, 4, 4), r"kernel_size must be an integer ≥ 1")):
        with pytest.raises(DataError, match=needle):
            pool_from_state("2", state, shape, "m.pt")


def test_real_torchlogix_conv_file():
    """The committed model trained by torchlogix (tests/logic/import_peers.py): its layers, and
    the image contract read from the first convolution (its test against the stored forward is
    test_import.py's test_real_model_equals_its_frameworks_stored_forward)."""
    m = read_model(DATA / "torchlogix_conv_mnist.pt")
    assert [(d["kind"].split()[-1], tuple(d.get("out_shape", (d["out_dim"],))))
            for d in m.summary()["layers"]] == [
        ("LogicConv2d", (6, 13, 13)), ("OrPooling2d", (6, 6, 6)), ("LogicConv2d", (12, 4, 4)),
        ("OrPooling2d", (12, 3, 3)), ("LogicDense", (200,))]
    assert m.input.image_shape == (28, 28, 1) and m.n_inputs == 784
    assert m.n_gates == 6 * 169 * 3 + 12 * 16 * 3 + 200


@pytest.mark.parametrize("variant", ["two thresholds", "rank 4 light", "rank 6 warp, bits",
                                     "torchlogix CNN class"])
def test_torchlogix_conv_models_equal_torchlogix(tmp_path, variant):
    """Random weights (every gate likely), as a whole module and as a state dict with a
    layout, against torchlogix's own forward."""
    tlx = _tlx()
    L = tlx.layers
    torch.manual_seed(5)
    if variant == "torchlogix CNN class":
        from torchlogix.models.conv import ClgnMnistTiny

        model = ClgnMnistTiny(thresholds=torch.tensor([0.5]), binarization="dummy",
                              binarization_kwargs={})
        n_px, bits = 784, True
    else:
        th = {"two thresholds": [0.3, 0.6], "rank 4 light": [0.5]}.get(variant)
        rank, kind = {"two thresholds": (2, "raw"), "rank 4 light": (4, "light"),
                      "rank 6 warp, bits": (6, "warp")}[variant]
        first = (L.FixedBinarization(torch.tensor(th)) if th else L.DummyBinarization())
        t = len(th) if th else 1
        conv = L.LogicConv2d(in_dim=(8, 8 * t), channels=1, num_kernels=3, tree_depth=2,
                             receptive_field_size=3, stride=1, padding=1, lut_rank=rank,
                             parametrization=kind)
        pool = L.OrPooling2d(3, 2, 1)
        shape = torch.nn.functional.max_pool2d(torch.zeros(1, 3, 8, 8 * t), 3, 2, 1).shape
        model = torch.nn.Sequential(first, conv, pool, torch.nn.Flatten(),
                                    L.LogicDense(int(np.prod(shape[1:])), 60), L.GroupSum(3))
        n_px, bits = 64, th is None
    for prm in model.parameters():
        with torch.no_grad():
            prm.normal_()
    torch.save(model, tmp_path / "m.pt")
    imported = read_model(tmp_path / "m.pt")
    sd, layout = _as_layout(imported)                  # and torchlogix's layers built from it
    torch.save({"state_dict": sd, "layout": layout}, tmp_path / "b.pt")
    x = np.random.default_rng(0).integers(0, 2 if bits else 256, (200, n_px)).astype(np.uint8)
    for f in ("m.pt", "b.pt"):
        imported = read_model(tmp_path / f)
        c = imported.circuit()
        for circ in (c, simplify(c)[0]):
            assert verify_import(circ, imported, x)["scores_equal"]


def test_conv_order_mistakes_are_refused_by_name(tmp_path):
    tlx = _tlx()
    L = tlx.layers
    conv = L.LogicConv2d(in_dim=6, channels=1, num_kernels=2, tree_depth=2,
                         receptive_field_size=3)
    for layers, needle in (
            ([torch.nn.Flatten(), conv, torch.nn.Flatten(), L.LogicDense(32, 16)],
             r"a convolution after nn.Flatten\(\) or a dense layer reads no grid"),
            ([conv, L.LogicDense(32, 16)], r"reads a flat vector, but the layer before leaves a "
                                          r"\(2, 4, 4\) grid: put nn.Flatten\(\) between them"),
            ([L.OrPooling2d(2, 2), conv], r"pooling needs a \(C, H, W\) grid"),
            ([conv, L.LogicConv2d(in_dim=5, channels=2, num_kernels=2, tree_depth=2,
                                  receptive_field_size=2)],
             r"reads a \(channels, h, w\) = \(2, 5, 5\) grid, but the layer before gives "
             r"\(2, 4, 4\)")):
        torch.save(torch.nn.Sequential(*layers, L.GroupSum(2)), tmp_path / "m.pt")
        with pytest.raises(DataError, match=needle):
            read_model(tmp_path / "m.pt")


def _as_layout(model, dense_in: dict | None = None) -> tuple[dict, dict]:
    """A torchlogix state dict and layout holding ``model``'s (an ImportedModel's) layers."""
    sd, entries = {}, []
    for L in model.layers:
        d = L.describe()
        kind = d["kind"].split()[-1]
        if kind == "OrPooling2d":
            entries.append({"kind": "pool", "key": L.name, "kernel_size": d["kernel"],
                            "stride": d["stride"], "padding": d["padding"]})
            continue
        key = L.name
        if kind == "LogicConv2d":
            c, h, w = d["in_shape"]
            entries.append({"kind": "conv", "key": key, "in_dim": [h, w], "channels": c,
                            "num_kernels": d["out_shape"][0], "tree_depth": d["tree_depth"],
                            "receptive_field_size": d["receptive_field_size"],
                            "stride": d["stride"], "padding": d["padding"],
                            "lut_rank": d["lut_rank"], "parametrization": d["parametrization"]})
            sd.update({f"{key}.{k}": v for k, v in L.tensors.items()})
        else:
            entries.append({"key": key, "in_dim": L.in_dim, "out_dim": L.out_dim,
                            "parametrization": L.parametrization, "lut_rank": L.rank})
            sd[f"{key}.weight"] = L.tensors["weights"]
            sd[f"{key}.connections.indices"] = L.tensors["indices"]
    layout = {"framework": "torchlogix", "layers": entries,
              "group_sum": {"k": model.k, "tau": model.tau, "beta": model.beta},
              "n_gates": model.n_gates}
    if model.input is not None:
        layout["input"] = {"thresholds": [float(t) for t in model.input.thresholds]}
    return sd, layout


def test_conv_state_dict_with_layout_is_the_same_circuit(tmp_path):
    """Without torchlogix: the committed conv model's tensors as a state dict with a layout
    (conv, pool, an implied Flatten before the dense layer) give the module's circuit gate for
    gate and its image contract, and verify against the stored forward."""
    from kairo.logic import read_reference

    module = read_model(DATA / "torchlogix_conv_mnist.pt")
    sd, layout = _as_layout(module)
    torch.save({"state_dict": sd, "layout": layout}, tmp_path / "b.pt")
    m = read_model(tmp_path / "b.pt")
    assert m.form == "state_dict" and m.n_gates == module.n_gates
    assert [L.describe() for L in m.layers] == [L.describe() for L in module.layers]
    assert m.input.image_shape == (28, 28, 1)
    torch.save(sd, tmp_path / "sd.pt")                  # a layout given as a dict: unchanged
    before = copy.deepcopy(layout)                      # (its dense entries name no kind)
    assert read_model(tmp_path / "sd.pt", layout=layout).n_gates == m.n_gates
    assert layout == before
    a, b = module.circuit(), m.circuit()
    assert all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("ops", "a", "b",
                                                                       "outputs"))
    ref = read_reference(DATA / "torchlogix_conv_mnist_reference.npz")
    assert verify_import(simplify(b)[0], m, reference=ref)["scores_equal"]


@pytest.mark.parametrize("change, needle", [
    (lambda lay, sd: lay["layers"][0].update(kind="lstm"),
     r"layers\[0\].kind must be one of dense, conv, pool, got 'lstm'"),
    (lambda lay, sd: lay.update(framework="difflogic"),
     r"layers\[0\].kind must be dense for difflogic, got 'conv'"),
    (lambda lay, sd: lay["layers"].insert(0, {"key": "9", "in_dim": 4, "out_dim": 784}),
     r"layers\[1\] \(conv\) comes after a dense layer, which leaves no grid"),
    (lambda lay, sd: lay["layers"][0].update(num_kernels=7),
     r"layer 1 \(torchlogix LogicConv2d\): connections._indices_L0 has shape"),
    (lambda lay, sd: sd.pop("3.tree_weights.1"),
     r"layer 3 \(torchlogix LogicConv2d\): tree_weights.1 is missing"),
    (lambda lay, sd: lay["layers"][0].update(receptive_field_size=40),
     r"a \(40, 40\) receptive field does not fit the 28×28 grid padded by 1"),
    (lambda lay, sd: lay["layers"][1].update(kernel_size=15) or lay["layers"][1].pop("key"),
     r"layer layers\[1\] \(torchlogix OrPooling2d\): a \(15, 15\) window does not fit"),
    (lambda lay, sd: lay["layers"][2].update(in_dim=[7, 7]),
     r"reads a \(channels, h, w\) = \(6, 7, 7\) grid, but the layer before gives \(6, 6, 6\)"),
    (lambda lay, sd: lay.update(n_gates=5),
     r"n_gates is 5 but its layers have 3818 gates \(3042 \+ 0 \+ 576 \+ 0 \+ 200\)"),
    (lambda lay, sd: lay["input"].update(image_shape=[14, 56, 1]),
     r"input image_shape \[14, 56, 1\] disagrees with layer 1, which reads 28 × 28 pixels"),
])
def test_bad_conv_layouts_are_refused_by_name(tmp_path, change, needle):
    sd, layout = _as_layout(read_model(DATA / "torchlogix_conv_mnist.pt"))
    change(layout, sd)
    torch.save({"state_dict": sd, "layout": layout}, tmp_path / "b.pt")
    with pytest.raises(DataError, match=needle):
        read_model(tmp_path / "b.pt")
