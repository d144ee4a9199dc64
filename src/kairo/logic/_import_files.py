"""Reading difflogic and torchlogix files (the three forms in :mod:`kairo.logic._import`)
into an :class:`~kairo.logic._import_model.ImportedModel`, with ``torch.load(weights_only=True)``
and stand-ins for the frameworks' classes: no code in a file runs, neither framework is needed,
and every shape is checked against the layer's dims, naming the file and the layer."""

from __future__ import annotations

import json
import math
import pickletools
import re
import zipfile
from pathlib import Path

import numpy as np

from kairo._errors import DataError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._gates import TRUTH
from kairo.logic._import_conv import (LAYER_KINDS, ImportedConv, conv_from_state,
                                      grid_layer_from_layout, pool_from_state)
from kairo.logic._import_model import (_VERSION, FRAMEWORKS, LAYOUT_FORMAT, PARAMETRIZATIONS,
                                       ImportedLayer, ImportedModel, InputBinarization, _int,
                                       _tensor, gate_ops)
from kairo.logic._luts import LUT_RANKS, lut_tables

__all__ = ["read_model", "import_model"]


# the classes a whole-module file may hold, by the name pickle records
_FLATTEN = "torch.nn.modules.flatten.Flatten"
_SEQUENTIAL = "torch.nn.modules.container.Sequential"
_DL_LAYER = "difflogic.difflogic.LogicLayer"
_DL_GROUPSUM = "difflogic.difflogic.GroupSum"
_TL_DENSE = "torchlogix.layers.dense.LogicDense"
_TL_GROUPSUM = "torchlogix.layers.groupsum.GroupSum"
_TL_PARAM = {f"torchlogix.parametrization.{c}LUTParametrization": p
             for c, p in (("Raw", "raw"), ("Warp", "warp"), ("Light", "light"))}
_TL_CONN = {"torchlogix.connections.FixedDenseConnections": "fixed",
            "torchlogix.connections.LearnableDenseConnections": "learnable"}
_TL_BIN = {f"torchlogix.layers.binarization.{c}Binarization": c.lower()
           for c in ("Fixed", "Soft", "Learnable", "Dummy")}
_TL_CONV = "torchlogix.layers.conv.LogicConv2d"
_TL_CONV_CONN = "torchlogix.connections.FixedConvConnections"
_TL_POOL = "torchlogix.layers.pool.OrPooling2d"
_PARAM_LIST = "torch.nn.modules.container.ParameterList"
_KNOWN = {_FLATTEN, _SEQUENTIAL, _DL_LAYER, _DL_GROUPSUM, _TL_DENSE, _TL_GROUPSUM, *_TL_PARAM,
          *_TL_CONN, *_TL_BIN, _TL_CONV, _TL_CONV_CONN, _TL_POOL, _PARAM_LIST}
_SUPPORTED = ("nn.Sequential models of difflogic LogicLayer + GroupSum, or of torchlogix "
              "LogicConv2d and OrPooling2d, nn.Flatten, LogicDense (lut_rank 2, or 4 and 6 "
              "with warp or light weights) + GroupSum after an optional torchlogix "
              "binarization")


def _is_container(name: str) -> bool:
    """nn.Sequential, or a torchlogix model class (``torchlogix.models.*``: Sequentials)."""
    return name == _SEQUENTIAL or name.startswith("torchlogix.models.")


# ---------------------------------------------------------------------------- reading files
class _Pickled:
    """Stand-in for a module class named in a file: holds the pickled state, runs nothing."""

    _name = ""

    def __setstate__(self, state):
        if not isinstance(state, dict):
            raise DataError(f"{self._name}: unexpected pickled state {type(state).__name__}")
        self.__dict__.update(state)


_STANDINS: dict[str, type] = {}


def _standin(name: str) -> type:
    if name not in _STANDINS:
        _STANDINS[name] = type(name.rsplit(".", 1)[-1], (_Pickled,), {"_name": name})
    return _STANDINS[name]


def _qualname(obj) -> str:
    if isinstance(obj, _Pickled):
        return obj._name
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


def _pickled_globals(path: Path) -> list[str] | None:
    """The classes and functions a torch.save zip file names (protocol-2 GLOBAL opcodes and
    simple STACK_GLOBALs); None when the file is no zip (torch's legacy format)."""
    if not zipfile.is_zipfile(path):
        return None
    try:
        with zipfile.ZipFile(path) as z:
            pkl = [n for n in z.namelist() if n.endswith("/data.pkl") or n == "data.pkl"]
            if not pkl:
                return None
            data = z.read(pkl[0])
        names, strings = [], []
        for op, arg, _ in pickletools.genops(data):
            if op.name == "GLOBAL":
                names.append(arg.replace(" ", "."))
            elif op.name == "STACK_GLOBAL" and len(strings) >= 2:
                names.append(f"{strings[-2]}.{strings[-1]}")
            if isinstance(arg, str):
                strings.append(arg)
        return names
    except (zipfile.BadZipFile, ValueError, EOFError, KeyError, OSError) as exc:
        raise DataError(f"model file {path}: not a readable torch.save file — truncated or "
                        f"corrupt? ({type(exc).__name__}: {exc})") from None


def _torch_load(path: Path, real: dict | None = None):
    """``torch.load(weights_only=True)`` with the module classes the file names mapped to
    stand-ins (``real``: name → the framework's class, to rebuild the real module)."""
    import torch

    names = _pickled_globals(path)
    legacy = names is None
    if legacy:                        # torch's legacy format: no scan, the known names only
        names = sorted(_KNOWN)
    allow = {}
    for n in dict.fromkeys(names):
        if n in _KNOWN or _is_container(n):
            allow[n] = (real or {}).get(n) or _standin(n)
    try:
        with torch.serialization.safe_globals([(cls, n) for n, cls in allow.items()]):
            return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
        msg = str(exc)
        unknown = re.findall(r"GLOBAL ([\w.]+)", msg)
        if unknown:
            raise DataError(f"model file {path}: holds a {unknown[0]}, which kairo does not "
                            f"import; it reads {_SUPPORTED} (whole modules saved with "
                            f"torch.save(model)), or a state_dict with a layout — see "
                            f"docs/notes/logic_import.md") from None
        hint = ("; if it is torch's legacy (non-zip) format, which pickles whole modules with "
                "their source, re-save it with torch.save's default format"
                if legacy and "persistent_load" in msg else "")
        raise DataError(f"model file {path}: cannot be read — not a torch.save file, truncated "
                        f"or corrupt ({type(exc).__name__}: {msg.split('. ')[0][:200]}){hint}"
                        ) from None


def _num(v, what: str, source: str, positive: bool = False) -> float:
    if (isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating))
            or not math.isfinite(v) or (positive and v <= 0)):
        raise DataError(f"{source}: {what} must be a {'positive ' if positive else ''}finite "
                        f"number, got {v!r}")
    return float(v) if isinstance(v, (float, np.floating)) else int(v)


def _indices(idx, in_dim: int, out_dim: int, what: str, source: str, rank: int = 2):
    """(rank, out_dim) int64 indices into ``in_dim`` inputs, checked."""
    import torch

    if isinstance(idx, (tuple, list)) and len(idx) == rank:
        try:
            idx = torch.stack([torch.as_tensor(i) for i in idx])
        except (TypeError, ValueError, RuntimeError) as exc:
            raise DataError(f"{source}: {what}: {rank} index arrays of {out_dim} inputs "
                            f"expected ({exc})") from None
    idx = _tensor(idx, what, source)
    if idx.is_floating_point() or idx.is_complex() or idx.dtype == torch.bool:
        raise DataError(f"{source}: {what} must hold integers, got {idx.dtype}")
    if tuple(idx.shape) != (rank, out_dim):
        raise DataError(f"{source}: {what} has shape {tuple(idx.shape)} but the layer has "
                        f"{out_dim} gates of {rank} inputs (expected ({rank}, {out_dim}))")
    bad = (idx < 0) | (idx >= in_dim)
    if bad.any():
        side, g = (int(v) for v in bad.nonzero()[0])
        name = "ab"[side] if rank == 2 else str(side)
        raise DataError(f"{source}: {what}: gate {g} input {name} reads input "
                        f"{int(idx[side, g])}, but the layer has {in_dim} inputs "
                        f"(0…{in_dim - 1})")
    return idx.to(torch.int64)


def _rank(v, where: str, source: str, param: str) -> int:
    """A torchlogix lut_rank kairo reads: 2, or 4 and 6 for warp and light LUTs."""
    if v is None:
        return 2
    if isinstance(v, bool) or not isinstance(v, int) or v not in LUT_RANKS:
        raise DataError(f"{source}: {where}: lut_rank {v!r} is not supported (expected "
                        f"{', '.join(map(str, LUT_RANKS))})")
    if v != 2 and param == "raw":
        raise DataError(f"{source}: {where}: lut_rank {v} with the raw parametrization (raw "
                        f"is two-input only; warp and light hold 2**lut_rank weights)")
    return v


def _tables(w, param: str, where: str) -> np.ndarray:
    """uint64 truth tables of [n, width] weights, errors prefixed with ``where``."""
    try:
        return (TRUTH[gate_ops(w, param)].astype(np.uint64) if param == "raw"
                else lut_tables(w, param))
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None


def _layer(source: str, name: str, kind: str, param: str, in_dim, out_dim, weights, indices,
           cand_weights=None, rank: int = 2) -> ImportedLayer:
    """One logic layer from its tensors, every shape checked against its dims."""
    where = f"layer {name} ({kind})"
    in_dim = _int(in_dim, f"{where}: in_dim", source)
    out_dim = _int(out_dim, f"{where}: out_dim", source)
    w = _tensor(weights, f"{where}: gate weights", source)
    want = 16 if param == "raw" else 1 << rank
    if tuple(w.shape) != (out_dim, want) or not w.is_floating_point():
        raise DataError(f"{source}: {where}: gate weights have shape {tuple(w.shape)} ({w.dtype}) "
                        f"but the layer has {out_dim} gates (out_dim): expected float "
                        f"({out_dim}, {want}) for the {param} parametrization"
                        + (f" of lut_rank {rank}" if param != "raw" else ""))
    tensors = {"weights": w}
    if cand_weights is None:
        idx = _indices(indices, in_dim, out_dim, f"{where}: connection indices", source, rank)
    else:                                   # torchlogix's learnable connections
        cand = _tensor(indices, f"{where}: candidate indices", source)
        cw = _tensor(cand_weights, f"{where}: connection weights", source)
        if cand.ndim != 3 or tuple(cand.shape[1:]) != (rank, out_dim) or cw.shape != cand.shape:
            raise DataError(f"{source}: {where}: learnable connections need candidate indices "
                            f"and weights of one shape (C, {rank}, {out_dim}), got "
                            f"{tuple(cand.shape)} and {tuple(cw.shape)}")
        import torch

        if torch.isnan(cw).any():
            raise DataError(f"{source}: {where}: connection weights are NaN")
        chosen = cw.argmax(dim=0)               # as torchlogix's resolve_connections
        l_ = torch.arange(rank).unsqueeze(1)
        o_ = torch.arange(out_dim).unsqueeze(0)
        idx = _indices(cand[chosen, l_, o_], in_dim, out_dim,
                       f"{where}: chosen connections", source, rank)
        tensors.update(candidates=cand.to(torch.int64), connection_weights=cw)
    tensors["indices"] = idx
    tables = _tables(w, param, f"{source}: {where}")
    return ImportedLayer(name=name, kind=kind, parametrization=param, in_dim=in_dim,
                         out_dim=out_dim, inputs=idx.numpy().copy(), tables=tables,
                         tensors=tensors)


def _module_state(obj) -> dict:
    return vars(obj)


def _children(obj) -> list:
    mods = _module_state(obj).get("_modules")
    return list(mods.items()) if isinstance(mods, dict) else []


def _param(obj, name: str):
    st = _module_state(obj)
    for where in ("_parameters", "_buffers"):
        d = st.get(where)
        if isinstance(d, dict) and d.get(name) is not None:
            return d[name]
    return st.get(name)


def _learnable_thresholds(b, where: str):
    """torchlogix LearnableBinarization.get_thresholds(), with torch, as torchlogix does it."""
    import torch
    import torch.nn.functional as F

    raw = _tensor(_param(b, "raw_diffs"), "raw_diffs (the learned thresholds)", where)
    first = raw[..., :1]
    if raw.shape[-1] == 1:
        diffs = first
    else:
        scale = _module_state(b).get("temperature_softplus", 0.1) + 1e-6
        diffs = torch.cat([first, scale * F.softplus(raw[..., 1:] / scale)], dim=-1)
    return torch.cumsum(diffs, dim=-1)


def _binarization(child, kind: str, st: dict, where: str) -> tuple[dict, dict | None]:
    """(input spec, binarization) of a torchlogix binarization layer."""
    if st.get("feature_dim", -2) != -2:
        raise DataError(f"{where}: feature_dim {st.get('feature_dim')} is not supported "
                        f"(torchlogix's default, -2, is)")
    if kind == "dummy":
        return {}, None
    th = (_learnable_thresholds(child, where) if kind == "learnable"
          else _tensor(_param(child, "thresholds"), "thresholds", where))
    if th.ndim != 1:
        raise DataError(f"{where}: per-feature or per-channel thresholds (shape "
                        f"{tuple(th.shape)}) are not supported; one threshold "
                        f"vector for all pixels is")
    return ({"thresholds": [float(t) for t in th.tolist()], "bit_order": "pixel-major",
             "channels": "first"}, {"class": kind, "thresholds": th.detach().clone()})


def _tl_lut_layer(cname: str, child, cls: str, shape, source: str):
    """A torchlogix LogicDense or LogicConv2d, and the (C, H, W) grid it leaves (None: flat)."""
    where = f"{source}: layer {cname} ({cls})"
    st = _module_state(child)
    sub = dict(_children(child))
    pname = _qualname(sub.get("parametrization")) if "parametrization" in sub else ""
    conn = sub.get("connections")
    cname_ = _qualname(conn) if conn is not None else ""
    dense = cls == _TL_DENSE
    if pname not in _TL_PARAM or cname_ not in (_TL_CONN if dense else (_TL_CONV_CONN,)):
        raise DataError(f"{where}: expected a torchlogix LUT parametrization and "
                        f"{'dense' if dense else 'fixed conv'} connections, found "
                        f"{pname or 'none'} and {cname_ or 'none'}")
    param = _TL_PARAM[pname]
    rank = _rank(st.get("lut_rank"), f"layer {cname}", source, param)
    if not dense:
        bufs = (vars(conn).get("_buffers") or {})
        tw = (vars(sub["tree_weights"]).get("_parameters") or {}) if "tree_weights" in sub else {}
        tensors = {**{f"connections.{k}": v for k, v in bufs.items()},
                   **{f"tree_weights.{k}": v for k, v in tw.items()}}
        conv = conv_from_state(cname, {**st, "lut_rank": rank}, tensors, param, shape, source,
                               _tables)
        return conv, conv.out_shape
    if shape is not None:
        raise DataError(f"{where} reads a flat vector, but the layer before leaves a "
                        f"{tuple(shape)} grid: put nn.Flatten() between them")
    learn = _TL_CONN[cname_] == "learnable"
    return _layer(source, cname, "torchlogix LogicDense", param, st.get("in_dim"),
                  st.get("out_dim"), _param(child, "weight"), _param(conn, "indices"),
                  _param(conn, "weights") if learn else None, rank), None


def _from_module(obj, source: str):
    """(framework, layers, k, tau, beta, input, binarization) of a pickled nn.Sequential."""
    name = _qualname(obj)
    if not _is_container(name):
        raise DataError(f"{source}: holds a {name}, not an nn.Sequential; kairo reads "
                        f"{_SUPPORTED}")
    layers, k = [], None
    tau, beta, binar, inp = 1.0, 0.0, None, None
    frameworks = set()
    shape = None                   # the (C, H, W) grid a conv or pooling layer leaves
    for cname, child in _children(obj):
        cls = _qualname(child)
        where = f"{source}: layer {cname} ({cls})"
        if k is not None:
            raise DataError(f"{where} comes after the GroupSum, which must be the last layer")
        if cls.startswith("difflogic."):
            frameworks.add("difflogic")
        elif cls.startswith("torchlogix."):
            frameworks.add("torchlogix")
        st = _module_state(child)
        if cls == _FLATTEN:
            if (layers and shape is None) or (st.get("start_dim", 1),
                                              st.get("end_dim", -1)) != (1, -1):
                raise DataError(f"{where}: only Flatten(1, -1), before the first logic layer "
                                f"or after a convolution or pooling, is supported")
            shape = None
            if not layers:
                shape = "flat"
        elif cls == _DL_LAYER:
            layers.append(_layer(source, cname, "difflogic LogicLayer", "raw", st.get("in_dim"),
                                 st.get("out_dim"), _param(child, "weights"),
                                 st.get("indices")))
        elif cls in (_TL_DENSE, _TL_CONV):
            if cls == _TL_CONV and (shape == "flat" or (layers and shape is None)):
                raise DataError(f"{where}: a convolution after nn.Flatten() or a dense layer "
                                f"reads no grid")
            layer, shape = _tl_lut_layer(cname, child, cls, None if shape == "flat" else shape,
                                         source)
            layers.append(layer)
        elif cls == _TL_POOL:
            layers.append(pool_from_state(cname, st, None if shape == "flat" else shape,
                                          source))
            shape = layers[-1].out_shape
        elif cls in (_DL_GROUPSUM, _TL_GROUPSUM):
            k = _int(st.get("k"), "GroupSum k", where)
            tau = _num(st.get("tau", 1.0), "GroupSum tau", where, positive=True)
            beta = _num(st.get("beta", 0.0), "GroupSum beta", where) if cls == _TL_GROUPSUM \
                else 0.0
        elif cls in _TL_BIN:
            if layers or binar is not None or inp is not None:
                raise DataError(f"{where}: one binarization, before the logic layers, is "
                                f"supported")
            inp, binar = _binarization(child, _TL_BIN[cls], st, where)
        elif _is_container(cls):
            raise DataError(f"{where}: nested containers are not supported; pass a flat "
                            f"nn.Sequential")
        else:
            raise DataError(f"{where}: kairo does not import this layer; it reads {_SUPPORTED}")
    if len(frameworks) != 1:
        raise DataError(f"{source}: " + ("mixes difflogic and torchlogix layers"
                                         if frameworks else
                                         f"holds no difflogic or torchlogix layer; kairo reads "
                                         f"{_SUPPORTED}"))
    if layers and isinstance(layers[0], ImportedConv) and inp:
        inp = _conv_image_shape(layers[0], inp, source)
    return frameworks.pop(), layers, k, tau, beta, inp, binar


def _conv_image_shape(conv: ImportedConv, inp: dict, source: str) -> dict:
    """``inp`` with the image shape a first convolution reads: torchlogix merges the
    thresholds into the width, so its (C, H, W) grid is H × (W·T) × C."""
    if not inp.get("thresholds") or isinstance(inp["thresholds"], str):
        return inp
    c, h, w = conv.in_shape
    t = len(inp["thresholds"])
    if w % t:
        raise DataError(f"{source}: layer {conv.name} reads a width of {w}, which {t} "
                        f"thresholds per pixel do not divide")
    if inp.get("image_shape") not in (None, [h, w // t, c], (h, w // t, c)):
        raise DataError(f"{source}: input image_shape {inp['image_shape']} disagrees with "
                        f"layer {conv.name}, which reads {h} × {w // t} pixels × {c} channels "
                        f"({t} thresholds merged into the width)")
    return {**inp, "image_shape": [h, w // t, c]}


def _check_layout(lay, source: str) -> dict:
    if not isinstance(lay, dict):
        raise DataError(f"{source}: the layout must be a JSON object, got {type(lay).__name__}")
    if lay.get("format", LAYOUT_FORMAT) != LAYOUT_FORMAT:
        raise DataError(f"{source}: format {lay.get('format')!r} is not a kairo layout "
                        f"(expected {LAYOUT_FORMAT!r})")
    if lay.get("version", _VERSION) != _VERSION:
        raise DataError(f"{source}: layout version {lay.get('version')!r} is not supported "
                        f"(this kairo reads version {_VERSION})")
    if lay.get("framework") not in FRAMEWORKS:
        raise DataError(f"{source}: field 'framework' must be one of {', '.join(FRAMEWORKS)}, "
                        f"got {lay.get('framework')!r}")
    layers = lay.get("layers")
    if not isinstance(layers, list) or not layers or not all(isinstance(L, dict) for L in layers):
        raise DataError(f"{source}: field 'layers' must be a non-empty list of objects "
                        f"({{\"key\", \"in_dim\", \"out_dim\"}} per dense layer)")
    for i, L in enumerate(layers):
        kind = L.get("kind", "dense")
        if kind not in LAYER_KINDS or (kind != "dense" and lay["framework"] != "torchlogix"):
            raise DataError(f"{source}: layers[{i}].kind must be "
                            + ("dense for difflogic" if lay["framework"] == "difflogic" else
                               f"one of {', '.join(LAYER_KINDS)}") + f", got {kind!r}")
        if kind != "dense" and any(E.get("kind", "dense") == "dense" for E in layers[:i]):
            raise DataError(f"{source}: layers[{i}] ({kind}) comes after a dense layer, which "
                            f"leaves no grid")
        if kind == "pool":
            continue
        if not isinstance(L.get("key"), (str, int)) or isinstance(L.get("key"), bool):
            raise DataError(f"{source}: layers[{i}].key must name the layer's state_dict prefix "
                            f"(e.g. \"1\" for 1.weights), got {L.get('key')!r}")
        for d in ("in_dim", "out_dim") if kind == "dense" else ():
            _int(L.get(d), f"layers[{i}].{d}", source)
        p = L.get("parametrization", "raw")
        if p not in PARAMETRIZATIONS or (lay["framework"] == "difflogic" and p != "raw"):
            raise DataError(f"{source}: layers[{i}].parametrization must be "
                            + ("raw for difflogic" if lay["framework"] == "difflogic"
                               else f"one of {', '.join(PARAMETRIZATIONS)}") + f", got {p!r}")
        if lay["framework"] == "difflogic" and L.get("lut_rank", 2) != 2:
            raise DataError(f"{source}: layers[{i}].lut_rank: difflogic's gates have 2 inputs, "
                            f"got {L.get('lut_rank')!r}")
        _rank(L.get("lut_rank"), f"layers[{i}]", source, p)
    gs = lay.get("group_sum")
    if not isinstance(gs, dict):
        raise DataError(f"{source}: field 'group_sum' must be an object {{\"k\": classes, "
                        f"\"tau\": τ}}")
    _int(gs.get("k"), "group_sum.k", source)
    _num(gs.get("tau", 1.0), "group_sum.tau", source, positive=True)
    _num(gs.get("beta", 0.0), "group_sum.beta", source)
    if "n_gates" in lay:
        _int(lay["n_gates"], "n_gates", source)
    if lay.get("input") is not None and not isinstance(lay["input"], dict):
        raise DataError(f"{source}: field 'input' must be an object (thresholds, scale, "
                        f"image_shape, bit_order, channels)")
    return lay


def _from_state_dict(sd: dict, lay: dict, source: str, lay_source: str):
    import torch

    lay = _check_layout(lay, lay_source)
    fw = lay["framework"]
    layers = []
    shape = None                   # the (C, H, W) grid a conv or pooling layer leaves
    for i, L in enumerate(lay["layers"]):
        param = L.get("parametrization", "raw")
        if L.get("kind", "dense") != "dense":
            layers.append(grid_layer_from_layout(i, L, sd, shape, source, _tables))
            shape = layers[-1].out_shape
            continue
        shape = None               # a dense layer reads the grid flattened, row-major
        key = str(L["key"])
        if fw == "difflogic":
            wkey, ikey = f"{key}.weights", f"{key}.indices"
            if wkey not in sd:
                raise DataError(f"{source}: no tensor {wkey!r} for layers[{i}] of {lay_source} "
                                f"(state_dict keys: {', '.join(list(sd)[:8])}…)")
            idx = L.get("indices", sd.get(ikey))
            if idx is None:
                raise DataError(f"{source}: layer {key} has no wiring: difflogic keeps "
                                f"LogicLayer.indices outside the state_dict; add "
                                f"sd['{ikey}'] = torch.stack(model[{key}].indices) before "
                                f"saving, or \"indices\": [[a…], [b…]] to layers[{i}] of "
                                f"{lay_source}")
            if isinstance(idx, list):
                try:
                    idx = torch.tensor(idx, dtype=torch.int64)
                except (TypeError, ValueError, RuntimeError) as exc:
                    raise DataError(f"{lay_source}: layers[{i}].indices must be two lists of "
                                    f"integers ({exc})") from None
            layers.append(_layer(source, key, "difflogic LogicLayer", "raw", L["in_dim"],
                                 L["out_dim"], sd[wkey], idx))
        else:
            wkey, ikey, ckey = (f"{key}.weight", f"{key}.connections.indices",
                                f"{key}.connections.weights")
            for k_ in (wkey, ikey):
                if k_ not in sd:
                    raise DataError(f"{source}: no tensor {k_!r} for layers[{i}] of "
                                    f"{lay_source} (state_dict keys: "
                                    f"{', '.join(list(sd)[:8])}…)")
            if "parametrization" not in L and getattr(sd[wkey], "shape", (0, 0))[-1] == 4:
                raise DataError(f"{lay_source}: layers[{i}] has [out, 4] weights: say which "
                                f"torchlogix parametrization they are (\"parametrization\": "
                                f"\"warp\" or \"light\")")
            layers.append(_layer(source, key, "torchlogix LogicDense", param, L["in_dim"],
                                 L["out_dim"], sd[wkey], sd[ikey], sd.get(ckey),
                                 L.get("lut_rank", 2)))
    gs = lay["group_sum"]
    inp = lay.get("input")
    if inp is not None and isinstance(inp.get("thresholds"), str):   # a key: "0.thresholds"
        inp = dict(inp)
        key = inp["thresholds"]
        th = _tensor(sd.get(key), f"input thresholds {key!r}", source)
        if th.ndim != 1:
            raise DataError(f"{source}: input thresholds {key!r} must be one vector, got "
                            f"shape {tuple(th.shape)}")
        inp["thresholds"] = [float(t) for t in th.tolist()]
    if "n_gates" in lay and lay["n_gates"] != sum(L.n_luts for L in layers):
        raise DataError(f"{lay_source}: n_gates is {lay['n_gates']} but its layers have "
                        f"{sum(L.n_luts for L in layers)} gates "
                        f"({' + '.join(str(L.n_luts) for L in layers)})")
    if layers and isinstance(layers[0], ImportedConv) and inp:
        inp = _conv_image_shape(layers[0], dict(inp), source)
    return fw, layers, gs["k"], gs.get("tau", 1.0), gs.get("beta", 0.0), inp, None


def _read_json(path, what: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise KairoError(f"{what} {path} does not exist")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"{what} {path}: not valid JSON — truncated or corrupt? ({exc})"
                        ) from None
    except UnicodeDecodeError:
        raise DataError(f"{what} {path}: not a text (JSON) file") from None


_INPUT_KEYS = ("thresholds", "scale", "image_shape", "bit_order", "channels")


def _input(own: dict | None, override, n_bits: int, framework: str, fixed: bool,
           source: str) -> InputBinarization | None:
    """The input binarization: the model's (or layout's), then ``override``'s keys on top.
    ``fixed``: the model binarizes its input itself (a torchlogix layer), so only the scale and
    image shape — which its file does not know — may be given."""
    spec = {k: v for k, v in (own or {}).items() if v is not None}
    if isinstance(override, InputBinarization):
        override = override.to_dict()
    if override is not None and not isinstance(override, dict):
        raise KairoError(f"input must be an InputBinarization or a dict of "
                         f"{', '.join(_INPUT_KEYS)}, got {type(override).__name__}")
    extra = set(spec) - set(_INPUT_KEYS)
    if extra:
        raise DataError(f"{source}: unknown input field(s) {', '.join(sorted(extra))} (expected "
                        f"{', '.join(_INPUT_KEYS)})")
    for key, v in (override or {}).items():
        if key not in _INPUT_KEYS:
            raise KairoError(f"unknown input field {key!r} (expected {', '.join(_INPUT_KEYS)})")
        if v is None or (key == "thresholds" and not len(v)) or (key == "scale" and not v):
            continue
        if fixed and key in ("thresholds", "bit_order", "channels"):
            same = ([float(t) for t in v] == spec.get("thresholds") if key == "thresholds"
                    else v == spec.get(key))
            if not same:
                raise DataError(f"{source}: the model binarizes its input itself (thresholds "
                                f"{spec.get('thresholds')}, {spec.get('bit_order')}, channels "
                                f"{spec.get('channels')}); its {key} cannot be changed — give "
                                f"only the input scale and image shape")
        spec[key] = v
    if not spec.get("thresholds"):
        if set(spec) - {"bit_order", "channels"}:
            raise DataError(f"{source}: an input scale or image shape without thresholds; say "
                            f"which thresholds binarized the pixels")
        return None
    th = spec["thresholds"]
    if not spec.get("scale"):                       # auto: ToTensor's [0, 1] or raw pixels
        spec["scale"] = 255.0 if all(0 <= t <= 1 for t in th) else 1.0
    # torchlogix's binarization layers emit pixel-major bits; difflogic leaves it to the script
    spec.setdefault("bit_order", "pixel-major" if framework == "torchlogix" else
                    "threshold-major")
    spec.setdefault("channels", "first")
    shape = spec.get("image_shape")
    try:
        ib = InputBinarization(tuple(th), spec["scale"], tuple(shape) if shape else None,
                               spec["bit_order"], spec["channels"])
    except DataError as exc:
        raise DataError(f"{source}: {exc}") from None
    return ib.resolved(n_bits, source)


def read_model(path, framework: str = "auto", *, layout=None, input=None) -> ImportedModel:
    """Read a trained difflogic or torchlogix network (see :mod:`kairo.logic._import` for the three
    accepted files) without running its code or needing its framework.

    ``layout``: a layout JSON file (or dict) for a bare state_dict. ``input``: an
    :class:`InputBinarization` or a dict of its fields, overriding or completing the model's
    own (torchlogix binarization layer) or the layout's. Errors name the file and the layer.
    """
    from kairo._io import file_sha256

    path = Path(path)
    if framework not in ("auto", *FRAMEWORKS):
        raise KairoError(f"framework must be auto, difflogic or torchlogix, got {framework!r}")
    if not path.is_file():
        raise KairoError(f"model file {path} does not exist")
    source = f"model file {path}"
    obj = _torch_load(path)
    lay_source = source
    if isinstance(layout, (str, Path)):
        lay_source = f"layout {layout}"
        layout = _read_json(layout, "layout")
    elif layout is not None:
        lay_source = "layout"
    import torch

    if isinstance(obj, dict):
        if "state_dict" in obj and "layout" in obj:
            if layout is not None:
                raise KairoError(f"{source} carries its own layout; do not pass another")
            sd, layout, form = obj["state_dict"], obj["layout"], "state_dict"
            if not isinstance(sd, dict):
                raise DataError(f"{source}: 'state_dict' must map names to tensors")
        elif obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
            if layout is None:
                dl = any(str(k).endswith(".weights") for k in obj)
                raise DataError(
                    f"{source} holds a bare state_dict ({', '.join(list(obj)[:4])}…) without "
                    f"the layer layout (dims, GroupSum k and τ" + (
                        ", and the wiring: difflogic's LogicLayer.indices is no buffer, so "
                        "state_dict() leaves it out" if dl else "") +
                    "); save the whole module with torch.save(model, path), or pass a layout "
                    "JSON (docs/notes/logic_import.md)")
            sd, form = obj, "state_dict"
        else:
            raise DataError(f"{source}: a dict that is neither a state_dict (names → tensors) "
                            f"nor {{'state_dict': …, 'layout': …}}; keys: "
                            f"{', '.join(map(str, list(obj)[:6]))}")
        fw, layers, k, tau, beta, own_in, binar = _from_state_dict(sd, layout, source, lay_source)
    else:
        if layout is not None:
            raise KairoError(f"{source} holds a whole module, which carries its layout; a "
                             f"layout applies to a bare state_dict")
        form = "module"
        fw, layers, k, tau, beta, own_in, binar = _from_module(obj, source)
    if framework != "auto" and framework != fw:
        raise DataError(f"{source} holds a {fw} model, not a {framework} one (use "
                        f"--framework auto or {fw})")
    if not layers:
        raise DataError(f"{source}: no logic layers; kairo reads {_SUPPORTED}")
    if k is None:
        raise DataError(f"{source}: no GroupSum at the end; kairo imports classifiers whose "
                        f"last logic layer feeds a GroupSum")
    for prev, L in zip(layers, layers[1:]):
        if L.in_dim != prev.out_dim:
            raise DataError(f"{source}: layer {L.name} reads {L.in_dim} inputs but layer "
                            f"{prev.name} before it has {prev.out_dim} gates")
    if layers[-1].out_dim % k:
        raise DataError(f"{source}: GroupSum k={k} does not divide the {layers[-1].out_dim} "
                        f"outputs of the last layer {layers[-1].name}")
    inp = _input(own_in, input, layers[0].in_dim, fw, binar is not None,
                 source if own_in is None or form == "module" else lay_source)
    return ImportedModel(framework=fw, path=str(path), form=form, layers=tuple(layers), k=k,
                         tau=tau, beta=beta, input=inp, binarization=binar,
                         sha256=file_sha256(path))


def import_model(path, framework: str = "auto", *, layout=None, input=None,
                 meta: dict | None = None) -> Circuit:
    """The circuit of a trained difflogic or torchlogix network (:func:`read_model`, then
    :meth:`ImportedModel.circuit`); ``meta`` is added to the circuit's (e.g. ``dataset``,
    ``classes``). Not simplified: :func:`~kairo.logic.simplify` it."""
    return read_model(path, framework, layout=layout, input=input).circuit(meta)
