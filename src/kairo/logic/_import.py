"""Logic-gate networks trained elsewhere — difflogic (Petersen et al.) or torchlogix — as a
kairo :class:`~kairo.logic.Circuit`.

A trained dense network of either framework is a chain of two-input gate layers and a
GroupSum: each neuron reads inputs ``a[i]``, ``b[i]`` of the layer before and computes the
gate its weights pick; the last layer's outputs are summed in ``k`` contiguous groups (and
divided by τ). That is a kairo circuit, gate for gate. What the files hold:

- **difflogic** ``LogicLayer``: ``weights`` [out, 16] logits over the 16 gates in the order of
  the paper's Table 1 — kairo's op codes, the same order (``DIFFLOGIC_OPS``, checked by truth
  table) — and ``indices`` = (a, b), a plain attribute, *not* a buffer: ``model.state_dict()``
  does not hold the wiring. The eval forward takes ``argmax`` (first maximum).
- **torchlogix** ``LogicDense``: ``weight`` and ``connections.indices`` [2, out] (buffers), or
  learnable connections (candidate ``indices`` and ``weights`` [C, 2, out]; the circuit reads
  the argmax candidate). ``weight`` is parametrized ``raw`` ([out, 16], difflogic's order),
  ``warp`` ([out, 4] Walsh coefficients: the gate is 1 where w0 + w1·B + w2·A + w3·AB < 0
  with A = 1 − 2a, evaluated in the weights' dtype in torchlogix's order) or ``light`` ([out, 4]:
  truth-table entry 2a + b is 1 where its weight > 0). Its ``GroupSum`` adds ``beta``.
  ``lut_rank`` 4 and 6 neurons (warp or light, [out, 2^k] weights, [k, out] indices) are
  k-input LUTs: each becomes a few two-input gates (:mod:`kairo.logic._luts`).
- **torchlogix** ``LogicConv2d`` (a tree of LUTs per kernel, its receptive field listed at
  every position) and ``OrPooling2d``, in whole-module files: :mod:`kairo.logic._import_conv`.

Accepted files (all read with ``torch.load(weights_only=True)``: no code in them runs):

1. ``torch.save(model)`` of the whole module: an ``nn.Sequential`` (or a torchlogix ``Dlgn``
   model) of [torchlogix binarization], ``Flatten``, logic layers, ``GroupSum``. The classes are
   mapped to stand-ins by name, so neither framework has to be installed.
2. ``torch.save(model.state_dict())`` with a layout JSON (``layout=``): framework, each
   layer's state-dict prefix and dims, GroupSum k/τ, optionally the input binarization.
   difflogic's state dict lacks the wiring: add ``sd[f"{i}.indices"] = torch.stack(layer.indices)``
   or put ``"indices": [[a…], [b…]]`` in the layout.
3. ``torch.save({"state_dict": sd, "layout": layout})``: the two in one file.

The input binarization (:class:`InputBinarization`) says how uint8 pixels become the first
layer's bits in the framework: ``x = pixel / scale``, bit = ``x > t`` (float32, as torch
compares), in threshold-major or pixel-major order, channels first (torchvision) or last.
Each threshold becomes the exact integer pixel threshold, and the first layer is rewired to
kairo's threshold-major, channels-last inputs, so the circuit reads images like any other
(``meta["thresholds"]``). Full description: docs/notes/logic_import.md.
"""

from __future__ import annotations

import contextlib
import io
import sys
import types
from pathlib import Path

import numpy as np

from kairo._errors import DataError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._import_conv import ImportedConv, ImportedPool
from kairo.logic._import_files import (_DL_GROUPSUM, _DL_LAYER, _FLATTEN, _PARAM_LIST,
                                       _SEQUENTIAL, _TL_BIN, _TL_CONN, _TL_CONV, _TL_CONV_CONN,
                                       _TL_DENSE, _TL_GROUPSUM, _TL_PARAM, _TL_POOL,
                                       _is_container, _pickled_globals, _torch_load,
                                       import_model, read_model)
from kairo.logic._import_model import (_VERSION, BIT_ORDERS, CHANNEL_ORDERS, DIFFLOGIC_OPS,
                                       FRAMEWORKS, LAYOUT_FORMAT, PARAMETRIZATIONS,
                                       REFERENCE_FORMAT, ImportedLayer, ImportedModel,
                                       InputBinarization, gate_ops)

__all__ = ["FRAMEWORKS", "PARAMETRIZATIONS", "BIT_ORDERS", "CHANNEL_ORDERS", "DIFFLOGIC_OPS",
           "LAYOUT_FORMAT", "REFERENCE_FORMAT", "InputBinarization", "ImportedLayer",
           "ImportedModel", "gate_ops", "read_model", "import_model", "framework_status",
           "framework_module", "framework_forward", "scores_from_counts", "verify_import", "write_reference",
           "read_reference", "run_import"]


# ---------------------------------------------------------------------------- the frameworks
_FRAMEWORK_CACHE: dict[str, object] = {}


class _NoCudaExtension(types.ModuleType):
    """Stands in for difflogic's compiled CUDA extension on machines without it: difflogic's
    pure-python implementation never touches it; anything that does gets a clear error."""

    def __getattr__(self, name):
        if name.startswith("__"):                # module machinery probing, not a call
            raise AttributeError(name)
        raise KairoError(f"difflogic's CUDA extension (difflogic_cuda.{name}) is not built "
                         f"here; kairo runs difflogic's pure-python implementation")


def framework_module(name: str):
    """The framework's package (difflogic or torchlogix), imported across two known gaps: difflogic's CUDA extension
    (its python implementation runs without it) and torchlogix.circuit's Python ≥ 3.12
    syntax (the layers do not use it). KairoError when it is not installed."""
    if name in _FRAMEWORK_CACHE:
        return _FRAMEWORK_CACHE[name]
    import importlib

    if name not in FRAMEWORKS:
        raise KairoError(f"unknown framework {name!r}")
    try:
        try:
            mod = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if name == "difflogic" and exc.name == "difflogic_cuda":
                sys.modules["difflogic_cuda"] = _NoCudaExtension("difflogic_cuda")
                mod = importlib.import_module(name)
            else:
                raise
        except SyntaxError as exc:
            if name == "torchlogix" and str(exc.filename or "").endswith("circuit.py"):
                stub = types.ModuleType("torchlogix.circuit")
                stub.Circuit = type("Circuit", (), {})       # torchlogix's __init__ imports it
                sys.modules["torchlogix.circuit"] = stub
                mod = importlib.import_module(name)
            else:
                raise
        if name == "torchlogix":
            importlib.import_module("torchlogix.layers")
    except ImportError as exc:
        raise KairoError(f"{name} is not importable here ({type(exc).__name__}: {exc}); "
                         f"install it (docs/notes/logic_import.md) or verify against a "
                         f"reference file") from None
    _FRAMEWORK_CACHE[name] = mod
    return mod


def framework_status(name: str) -> str | None:
    """None when ``name``'s own forward can run here, else why not."""
    try:
        framework_module(name)
        return None
    except KairoError as exc:
        return str(exc)


def _real_classes(fw: str) -> dict:
    import torch

    real = {_FLATTEN: torch.nn.Flatten, _SEQUENTIAL: torch.nn.Sequential}
    mod = framework_module(fw)
    if fw == "difflogic":
        real.update({_DL_LAYER: mod.LogicLayer, _DL_GROUPSUM: mod.GroupSum})
    else:
        import importlib

        for n in (_TL_DENSE, _TL_GROUPSUM, *_TL_PARAM, *_TL_CONN, *_TL_BIN, _TL_CONV,
                  _TL_CONV_CONN, _TL_POOL):
            m, c = n.rsplit(".", 1)
            real[n] = getattr(importlib.import_module(m), c)
        real[_PARAM_LIST] = torch.nn.ParameterList
    return real


def _framework_net(model: ImportedModel):
    """The framework's own modules for ``model``, in eval mode: the file reloaded with the
    real classes (whole modules) or built by the framework from the tensors (state dicts)."""
    import torch

    from kairo._io import file_sha256

    mod = framework_module(model.framework)
    if model.form == "module":
        if file_sha256(model.path) != model.sha256:
            raise KairoError(f"model file {model.path} changed since it was read")
        real = _real_classes(model.framework)
        names = _pickled_globals(Path(model.path)) or []
        for n in names:                      # torchlogix's model classes: Sequentials only
            if n not in real and _is_container(n):
                import importlib

                m, c = n.rsplit(".", 1)
                cls = getattr(importlib.import_module(m), c, None)
                if isinstance(cls, type) and issubclass(cls, torch.nn.Sequential):
                    real[n] = cls
        net = _torch_load(Path(model.path), real)
        if not isinstance(net, torch.nn.Module):
            raise KairoError(f"model file {model.path}: {model.framework} cannot rebuild its "
                             f"{type(net).__name__}")
        layers = [m for _, m in net.named_children()]
        for m in layers:
            if model.framework == "difflogic" and isinstance(m, mod.LogicLayer):
                m.implementation, m.device = "python", "cpu"      # its CPU forward
    else:
        layers = []
        with torch.random.fork_rng(devices=[]):    # the constructors draw wiring: not from ours
            prev = None
            for L in model.layers:
                if isinstance(L, ImportedLayer) and not isinstance(prev, ImportedLayer):
                    layers.append(torch.nn.Flatten())    # the input or a (C, H, W) grid
                layers.append(_framework_layer(mod, model.framework, L))
                prev = L
        if model.framework == "difflogic":
            layers.append(mod.GroupSum(model.k, model.tau, device="cpu"))
        else:
            from torchlogix.layers import GroupSum

            layers.append(GroupSum(model.k, model.tau, beta=model.beta))
        net = torch.nn.Sequential(*layers)
    net.eval()
    return layers


def _framework_layer(mod, framework: str, L):
    """The framework's own layer for ``L``, holding the file's tensors."""
    if isinstance(L, ImportedPool):
        return mod.layers.OrPooling2d(L.kernel, L.stride, L.padding)
    if isinstance(L, ImportedConv):
        return _framework_conv(mod, L)
    w, idx = L.tensors["weights"], L.tensors["indices"]
    try:
        if framework == "difflogic":
            m = mod.LogicLayer(L.in_dim, L.out_dim, device="cpu", implementation="python")
            m.indices = (idx[0].clone(), idx[1].clone())
            m.weights.data = w.clone()
            return m
        from torchlogix.layers import LogicDense

        learn = "candidates" in L.tensors
        kw = ({"connections": "learnable", "connections_kwargs": {
            "num_candidates": int(L.tensors["candidates"].shape[0])}} if learn else {})
        m = LogicDense(L.in_dim, L.out_dim, parametrization=L.parametrization,
                       lut_rank=L.rank, **kw)
        m.weight.data = w.clone()
        if learn:
            m.connections.indices = L.tensors["candidates"].clone()
            m.connections.weights.data = L.tensors["connection_weights"].clone()
        else:
            m.connections.indices = idx.clone()
        return m
    except (AssertionError, ValueError, RuntimeError, TypeError) as exc:
        raise KairoError(f"{framework} cannot build layer {L.name} ({L.in_dim} → {L.out_dim}): "
                         f"{type(exc).__name__}: {exc}") from None


def _framework_conv(mod, L: ImportedConv):
    c, h, w = L.in_shape
    try:
        m = mod.layers.LogicConv2d(in_dim=(h, w), channels=c, num_kernels=L.out_shape[0],
                                   tree_depth=len(L.tables), receptive_field_size=L.receptive_field,
                                   stride=L.stride, padding=L.padding, lut_rank=L.rank,
                                   parametrization=L.parametrization)
        m.load_state_dict(L.tensors)
        return m
    except (AssertionError, ValueError, RuntimeError, TypeError) as exc:
        raise KairoError(f"torchlogix cannot build layer {L.name} (LogicConv2d "
                         f"{L.in_shape} → {L.out_shape}): {type(exc).__name__}: {exc}") from None


def framework_forward(model: ImportedModel, x, *, batch: int = 256) -> dict:
    """The framework's own discrete (eval-mode) forward on ``x``: uint8 images (n, n_pixels,
    kairo's (h, w, c) order) when the model has an input binarization, else 0/1 input bits
    (n, n_inputs) in the framework's order. Returns ``outputs`` (n, n_out) bool, the last logic
    layer's bits, and ``scores`` (n, k), its GroupSum's output as the framework returns it.

    The framework must be importable (:func:`framework_status`); difflogic runs its
    pure-python implementation, on the CPU."""
    import torch

    layers = _framework_net(model)
    x = np.asarray(x)
    outs, scores = [], []
    uses_values = model.binarization is not None
    with torch.no_grad(), contextlib.redirect_stdout(io.StringIO()):   # difflogic prints dtypes
        for s in range(0, len(x), batch):
            part = x[s:s + batch]
            if model.input is not None:
                h = (model.input.framework_values(part) if uses_values
                     else model.input.framework_bits(part))
            else:
                h = torch.from_numpy(np.asarray(part, dtype=np.float32))
            first = model.layers[0]
            if isinstance(first, ImportedConv) and h.ndim == 2:    # bits → the conv's grid
                h = h.reshape(len(h), *first.in_shape)
            for m in layers[:-1]:
                h = m(h)
            scores.append(layers[-1](h).numpy())
            if not bool(((h == 0) | (h == 1)).all()):
                raise KairoError(f"{model.framework}'s eval forward gave outputs other than 0 "
                                 f"and 1; is the model in its discrete mode?")
            outs.append(h.numpy() == 1)
    return {"outputs": np.concatenate(outs), "scores": np.concatenate(scores)}


def scores_from_counts(model: ImportedModel, counts: np.ndarray, dtype="float32") -> np.ndarray:
    """The class scores the framework's GroupSum returns for these integer class counts, with
    its own torch arithmetic (difflogic: sum / τ; torchlogix: (sum + β) / τ, each only when it
    changes something), so they compare bit for bit."""
    import torch

    s = torch.from_numpy(np.asarray(counts)).to(getattr(torch, str(dtype)))
    if model.framework == "difflogic":
        return (s / model.tau).numpy()
    if model.beta != 0.0:
        s = s + model.beta
    if model.tau != 1.0:
        s = s / model.tau
    return s.numpy()


# ---------------------------------------------------------------------------- references
def write_reference(path, model: ImportedModel, x, result: dict) -> Path:
    """Keep the framework's answers (:func:`framework_forward`) on inputs ``x`` in ``path``
    (.npz), so an import can be verified later where the framework is not installed."""
    from kairo._io import atomic_write

    x = np.asarray(x)
    out = np.asarray(result["outputs"], dtype=bool)
    arrays = {"format": np.array(REFERENCE_FORMAT), "version": np.array(_VERSION),
              "framework": np.array(model.framework), "model_sha256": np.array(model.sha256),
              "kind": np.array("images" if model.input is not None else "bits"),
              "inputs": x.astype(np.uint8), "n_outputs": np.array(out.shape[1]),
              "outputs": np.packbits(out, axis=1),
              "scores": np.asarray(result["scores"])}
    path = Path(path)

    def write(tmp):
        with open(tmp, "wb") as f:
            np.savez_compressed(f, **arrays)
    return atomic_write(path, write)


def read_reference(path) -> dict:
    """A reference file of :func:`write_reference`, checked; errors name the file and field."""
    path = Path(path)
    if not path.is_file():
        raise KairoError(f"reference file {path} does not exist")
    try:
        with np.load(path, allow_pickle=False) as z:
            d = {k: z[k] for k in z.files}
    except Exception as exc:  # noqa: BLE001 - zip, pickle and format errors alike
        raise DataError(f"reference file {path}: not a readable .npz ({type(exc).__name__}: "
                        f"{exc})") from None
    if str(d.get("format", "")) != REFERENCE_FORMAT:
        raise DataError(f"reference file {path}: not a kairo import reference (expected "
                        f"format {REFERENCE_FORMAT!r})")
    for key in ("framework", "kind", "inputs", "n_outputs", "outputs", "scores"):
        if key not in d:
            raise DataError(f"reference file {path}: missing field {key!r}")
    n = len(d["inputs"])
    n_out = int(d["n_outputs"])
    if d["outputs"].shape != (n, (n_out + 7) // 8) or d["scores"].ndim != 2 or \
            len(d["scores"]) != n or d["inputs"].ndim != 2:
        raise DataError(f"reference file {path}: inputs {d['inputs'].shape}, outputs "
                        f"{d['outputs'].shape} and scores {d['scores'].shape} do not describe "
                        f"the same samples")
    return {"framework": str(d["framework"]), "kind": str(d["kind"]),
            "model_sha256": str(d.get("model_sha256", "")), "inputs": d["inputs"],
            "outputs": np.unpackbits(d["outputs"], axis=1, count=n_out).astype(bool),
            "scores": d["scores"], "path": str(path)}


# ---------------------------------------------------------------------------- verification
def _circuit_bits(circuit: Circuit, model: ImportedModel, x: np.ndarray) -> np.ndarray:
    if model.input is not None:
        return circuit.image_bits(x)
    return np.asarray(x) != 0              # no binarization: the framework's bits, in order


def verify_import(circuit: Circuit, model: ImportedModel, x=None, *, reference=None,
                  expected: dict | None = None) -> dict:
    """Check ``circuit`` bit for bit against the framework: its last layer's outputs and its
    class scores (GroupSum, as the framework computes them from the counts).

    The expected answers come from ``reference`` (a :func:`read_reference` dict or path; its
    own inputs), else ``expected`` (a :func:`framework_forward` result on ``x``), else the
    framework's own forward on ``x``, run here. KairoError naming the first sample and output
    that differ; else a report {"against", "samples", "outputs_equal", "scores_equal"}."""
    if reference is not None:
        ref = reference if isinstance(reference, dict) else read_reference(reference)
        if ref["framework"] != model.framework:
            raise DataError(f"reference file {ref.get('path')} was made with "
                            f"{ref['framework']}, not {model.framework}")
        if ref["kind"] != ("images" if model.input is not None else "bits"):
            raise DataError(f"reference file {ref.get('path')} holds input {ref['kind']}, but "
                            f"this import reads " + ("images" if model.input else "bits"))
        x, expected = ref["inputs"], ref
        against = f"reference {ref.get('path')}"
    elif expected is None:
        expected = framework_forward(model, x)
        against = f"{model.framework}'s own forward"
    else:
        against = f"{model.framework}'s own forward"
    x = np.asarray(x)
    bits = _circuit_bits(circuit, model, x)
    out = circuit.evaluate(bits)
    want = np.asarray(expected["outputs"], dtype=bool)
    note = ""
    if reference is not None and expected.get("model_sha256") and \
            expected["model_sha256"] != model.sha256:
        note = " (the reference was made from another model file: its SHA-256 differs)"
    if out.shape != want.shape:
        raise KairoError(f"{against}: {want.shape[1]} outputs per sample, the circuit has "
                         f"{out.shape[1]}{note}")
    if not np.array_equal(out, want):
        i, j = (int(v) for v in np.argwhere(out != want)[0])
        raise KairoError(f"the imported circuit disagrees with {against} on sample {i} of "
                         f"{len(x)}, output {j} (class {j // (out.shape[1] // circuit.n_classes)}"
                         f"): circuit {int(out[i, j])}, {model.framework} {int(want[i, j])}"
                         f"{note}")
    counts = out.reshape(len(x), circuit.n_classes, -1).sum(axis=2)
    got = scores_from_counts(model, counts, np.asarray(expected["scores"]).dtype)
    scores_ok = bool(np.array_equal(got, expected["scores"]) and
                     got.dtype == np.asarray(expected["scores"]).dtype)
    if not scores_ok:
        i = int(np.flatnonzero((got != expected["scores"]).any(1))[0]) \
            if got.shape == np.shape(expected["scores"]) else 0
        raise KairoError(f"the imported circuit's class scores differ from {against} on sample "
                         f"{i}: {got[i].tolist()} vs {np.asarray(expected['scores'])[i].tolist()}"
                         f"{note}")
    return {"against": against, "samples": int(len(x)), "outputs_equal": True,
            "scores_equal": True}


# ---------------------------------------------------------------------------- the command
def _overrides(cfg) -> dict:
    return {"thresholds": tuple(cfg.thresholds) or None, "scale": cfg.input_scale or None,
            "image_shape": tuple(cfg.image_shape) or None,
            "bit_order": None if cfg.bit_order == "auto" else cfg.bit_order,
            "channels": None if cfg.channels == "auto" else cfg.channels}


def _label(L) -> str:
    """A layer in the one-line summary: its outputs, and what they are when not plain gates."""
    if isinstance(L, ImportedPool):
        return "OR-pool " + "×".join(map(str, L.out_shape))
    size = "×".join(map(str, L.out_shape)) if isinstance(L, ImportedConv) else str(L.out_dim)
    what = [f"{L.rank}-input LUTs"] if L.rank != 2 else []
    if isinstance(L, ImportedConv):
        what.insert(0, f"conv trees of depth {len(L.tables)}")
    return size + (f" ({', '.join(what)})" if what else "")


def run_import(cfg, rd) -> str:
    """``kairo logic import``: read, make the circuit, simplify, verify, write."""
    from kairo.logic._data import circuit_images
    from kairo.logic._simplify import simplify

    model = read_model(cfg.model, cfg.framework, layout=cfg.layout or None,
                       input=_overrides(cfg))
    if cfg.classes and len(cfg.classes) != model.k:
        raise KairoError(f"classes: {len(cfg.classes)} labels given for a model of {model.k} "
                         f"classes")
    meta = {"classes": list(cfg.classes) if cfg.classes else list(range(model.k))}
    if model.input is not None:
        meta["dataset"] = cfg.dataset
    raw = model.circuit(meta)
    circ, report = simplify(raw)
    res = {"framework": model.framework, "model": model.summary(),
           "gates_before": raw.n_gates, "gates_after": circ.n_gates,
           "depth_before": report["before"]["depth"], "depth_after": report["after"]["depth"],
           "simplify": report}
    if model.input is not None:
        rd.resolve("input", model.input.to_dict())
        x, y, dataset = circuit_images(raw, cfg.dataset, cfg.data_dir)
        res.update(dataset=dataset, n_test=int(len(y)),
                   test_accuracy_circuit=float((circ.predict(circ.image_bits(x)) == y).mean()))
        xs = x[:cfg.samples] if cfg.samples else x
        what = f"{len(xs)} {dataset} test images"
    else:
        rng = np.random.default_rng(cfg.seed)
        xs = rng.integers(0, 2, (cfg.samples or 1000, raw.n_inputs)).astype(np.uint8)
        what = f"{len(xs)} random input vectors (the model reads bits, not images)"
    checks = []
    status = framework_status(model.framework)
    if status is None:
        expected = framework_forward(model, xs)
        for c in (raw, circ):
            verify_import(c, model, xs, expected=expected)
        write_reference(rd.path / "reference.npz", model, xs, expected)
        rd.add("reference.npz")
        checks.append(f"bit-exact with {model.framework}'s own discrete forward on {what} "
                      f"(outputs and class scores; kept as reference.npz)")
        res["verified_against_framework"] = int(len(xs))
    if cfg.reference:
        ref = read_reference(cfg.reference)
        for c in (raw, circ):
            rep = verify_import(c, model, reference=ref)
        checks.append(f"bit-exact with the reference {cfg.reference} ({rep['samples']} "
                      f"samples, outputs and class scores)")
        res["verified_against_reference"] = rep["samples"]
    if not checks:
        if cfg.verify:
            raise KairoError(f"cannot verify the import: {status}; and no --reference was "
                             f"given (a reference.npz that `kairo logic import` wrote where "
                             f"{model.framework} is installed). Pass --no-verify to import "
                             f"unchecked")
        checks.append(f"not verified (--no-verify; {model.framework}: {status})")
    res["verified"] = bool(res.get("verified_against_framework") or
                           res.get("verified_against_reference"))
    rd.add("metrics.json", res)
    raw.save(rd.path / "circuit_raw.json")
    circ.save(rd.path / "circuit.json")
    rd.add("circuit_raw.json")
    rd.add("circuit.json")
    lay = " → ".join([str(model.n_inputs)] + [_label(L) for L in model.layers])
    acc = (f"; test accuracy {res['test_accuracy_circuit']:.2%} on {res['n_test']} "
           f"{res['dataset']} test images" if "test_accuracy_circuit" in res else "")
    luts = f" for {model.n_gates} LUTs" if raw.n_gates != model.n_gates else ""
    return (f"imported {model.framework} {model.form} {cfg.model}: {lay}, GroupSum k="
            f"{model.k} τ={model.tau:g}{acc}\n"
            f"gates {raw.n_gates}{luts} → {circ.n_gates} after simplification, depth "
            f"{res['depth_before']} → {res['depth_after']}\n" + "\n".join(checks))
