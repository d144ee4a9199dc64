"""torchlogix's convolutional layers as read from a file (see :mod:`kairo.logic._import`):
``LogicConv2d`` (a tree of LUTs per kernel, slid over the image) and ``OrPooling2d``.

How torchlogix computes them in its eval forward (``layers/conv.py``, ``connections.py``
``FixedConvConnections``, ``layers/pool.py``), which the circuit reproduces gate for gate:

- The input is a (C, H, W) grid of bits: the flat bit vector of the layer before in row-major
  order (a binarization's output with its thresholds merged into the width, or the pooled
  grid), zero-padded by ``padding`` on each side.
- Tree level 0 has S = rank^(depth − 1) LUTs per kernel and window position; LUT s of kernel k
  at position p reads, as its input i, the bit at ``_indices_L0[i, k, p, s]`` = (h, w, c) of
  the padded grid, and computes the table of ``tree_weights[0][s, k]``. Level l ≥ 1 has
  S / rank^l LUTs; LUT j reads LUT ``_indices_L{l}[i, j]`` of the level below (same kernel and
  position) and computes ``tree_weights[l][j, k]``. The output is the last level's single LUT
  per (k, p), laid out (K, out_h, out_w), positions row-major.
- ``OrPooling2d(kernel, stride, padding)``: max_pool2d of 0/1 values, the OR of each window's
  bits inside the grid (the padding never wins a max).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairo._errors import DataError
from kairo.logic._import_model import _OP_OF_TRUTH, _int, _tensor, lut_nodes

__all__ = ["ImportedConv", "ImportedPool", "LAYER_KINDS"]

# a layout's layer kinds; conv and pool take torchlogix's constructor arguments by name
LAYER_KINDS = ("dense", "conv", "pool")
_CONV_FIELDS = ("in_dim", "channels", "num_kernels", "tree_depth", "receptive_field_size",
                "stride", "padding", "lut_rank")

_FALSE = int(_OP_OF_TRUTH[0])
_OR = int(_OP_OF_TRUTH[0b1110])


class _GridLayer:
    """A layer between (C, H, W) grids of bits: its flat input and output sizes."""

    in_shape: tuple[int, int, int]
    out_shape: tuple[int, int, int]

    @property
    def in_dim(self) -> int:
        return int(np.prod(self.in_shape))

    @property
    def out_dim(self) -> int:
        return int(np.prod(self.out_shape))


@dataclass(frozen=True, eq=False)
class ImportedConv(_GridLayer):
    """A torchlogix ``LogicConv2d``: K kernels, each a tree of ``depth`` levels of LUTs of
    ``rank`` inputs, slid over a (C, H, W) grid of bits."""

    name: str
    kind: str
    parametrization: str
    in_shape: tuple[int, int, int]       # (C, H, W) before padding
    padding: int
    out_shape: tuple[int, int, int]      # (K, out_h, out_w)
    leaves: np.ndarray                   # (rank, K, P, S, 3): (h, w, c) of the padded grid
    links: tuple                         # level l ≥ 1: (rank, n_l) indices into level l − 1
    tables: tuple                        # level l: (n_l, K) uint64 truth tables
    receptive_field: tuple[int, int]
    stride: int
    tensors: dict                        # the layer's state dict, to rebuild torchlogix's layer

    @property
    def rank(self) -> int:
        return int(self.leaves.shape[0])

    @property
    def n_luts(self) -> int:
        return self.out_shape[0] * int(self.leaves.shape[2]) * sum(t.shape[0]
                                                                    for t in self.tables)

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "parametrization": self.parametrization,
                "lut_rank": self.rank, "in_shape": list(self.in_shape),
                "receptive_field_size": list(self.receptive_field), "stride": self.stride,
                "padding": self.padding, "out_shape": list(self.out_shape),
                "tree_depth": len(self.tables), "in_dim": self.in_dim, "out_dim": self.out_dim}

    def gates(self, nodes: np.ndarray, first: int) -> tuple[list, list, list, np.ndarray]:
        c, h, w = self.in_shape
        grid = np.asarray(nodes).reshape(c, h, w)
        ops: list = []
        aa: list = []
        bb: list = []
        if self.padding:
            p = self.padding
            zero = first                         # the padding: one constant-0 gate
            ops.append(_FALSE)
            aa.append(int(grid.flat[0]))
            bb.append(int(grid.flat[0]))
            padded = np.full((c, h + 2 * p, w + 2 * p), zero, dtype=np.int64)
            padded[:, p:p + h, p:p + w] = grid
            grid = padded
        _, k, npos, s, _ = self.leaves.shape
        lv = self.leaves
        src = grid[lv[..., 2], lv[..., 0], lv[..., 1]]              # (rank, K, P, S)
        level = None
        for li, tab in enumerate(self.tables):
            if li:
                link = self.links[li - 1]                            # (rank, n_l)
                src = level[:, :, link].transpose(2, 0, 1, 3)        # (rank, K, P, n_l)
            n_l = src.shape[-1]
            t = np.broadcast_to(tab.T[:, None, :], (k, npos, n_l))   # (K, P, n_l)
            o, a, b, out = lut_nodes(t.reshape(-1), src.reshape(self.rank, -1),
                                     first + len(ops))
            ops += o
            aa += a
            bb += b
            level = out.reshape(k, npos, n_l)
        return ops, aa, bb, level[:, :, 0].reshape(-1)


@dataclass(frozen=True, eq=False)
class ImportedPool(_GridLayer):
    """A torchlogix ``OrPooling2d``: the OR of each window of a (C, H, W) grid."""

    name: str
    kind: str
    in_shape: tuple[int, int, int]
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]

    @property
    def out_shape(self) -> tuple[int, int, int]:
        c, h, w = self.in_shape
        return (c, *((d + 2 * p - k) // s + 1 for d, k, s, p in
                     zip((h, w), self.kernel, self.stride, self.padding)))

    n_luts = 0

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "in_shape": list(self.in_shape),
                "kernel": list(self.kernel), "stride": list(self.stride),
                "padding": list(self.padding), "out_shape": list(self.out_shape),
                "in_dim": self.in_dim, "out_dim": self.out_dim}

    def gates(self, nodes: np.ndarray, first: int) -> tuple[list, list, list, np.ndarray]:
        c, h, w = self.in_shape
        grid = np.asarray(nodes).reshape(c, h, w)
        _, oh, ow = self.out_shape
        ops: list = []
        aa: list = []
        bb: list = []
        out = np.empty((c, oh, ow), dtype=np.int64)
        for y in range(oh):
            for x in range(ow):
                y0 = y * self.stride[0] - self.padding[0]
                x0 = x * self.stride[1] - self.padding[1]
                ys = slice(max(y0, 0), min(y0 + self.kernel[0], h))
                xs = slice(max(x0, 0), min(x0 + self.kernel[1], w))
                win = [grid[:, yy, xx] for yy in range(h)[ys] for xx in range(w)[xs]]
                while len(win) > 1:                  # a balanced OR tree, all channels at once
                    nxt = []
                    for i in range(0, len(win) - 1, 2):
                        node = first + len(ops) + np.arange(c, dtype=np.int64)
                        ops += [_OR] * c
                        aa += win[i].tolist()
                        bb += win[i + 1].tolist()
                        nxt.append(node)
                    win = nxt + win[len(win) - len(win) % 2:]
                out[:, y, x] = win[0]
        return ops, aa, bb, out.reshape(-1)


def pool_from_state(name: str, st: dict, in_shape, source: str) -> ImportedPool:
    """An ``OrPooling2d`` from its pickled attributes, checked against the grid it reads."""
    where = f"{source}: layer {name} (torchlogix OrPooling2d)"

    def pair(v, what, low):
        v = (v, v) if isinstance(v, int) and not isinstance(v, bool) else v
        if (not isinstance(v, (tuple, list)) or len(v) != 2
                or any(isinstance(x, bool) or not isinstance(x, int) or x < low for x in v)):
            raise DataError(f"{where}: {what} must be an integer ≥ {low} or a pair, got {v!r}")
        return tuple(int(x) for x in v)

    kernel = pair(st.get("kernel_size"), "kernel_size", 1)
    stride = pair(st.get("stride") if st.get("stride") is not None else kernel, "stride", 1)
    padding = pair(st.get("padding", 0), "padding", 0)
    if in_shape is None:
        raise DataError(f"{where}: pooling needs a (C, H, W) grid: a LogicConv2d before it")
    if any(2 * p > k for p, k in zip(padding, kernel)):
        raise DataError(f"{where}: padding {padding} is more than half the kernel {kernel} "
                        f"(torch's max_pool2d refuses it)")
    pool = ImportedPool(name, "torchlogix OrPooling2d", tuple(in_shape), kernel, stride,
                        padding)
    if min(pool.out_shape[1:]) < 1:
        raise DataError(f"{where}: a {kernel} window does not fit the {in_shape[1:]} grid")
    return pool


def conv_from_state(name: str, st: dict, tensors: dict, param: str, in_shape, source: str,
                    tables_of) -> ImportedConv:
    """A ``LogicConv2d`` from its attributes (torchlogix's constructor arguments: in_dim,
    channels, num_kernels, tree_depth, receptive_field_size, stride, padding, lut_rank) and its
    tensors (``tensors``: the layer's state dict, keys ``connections._indices_L{l}`` and
    ``tree_weights.{l}``), every tensor checked against the layer's dims; ``in_shape`` the
    (C, H, W) grid of the layer before, or None for the first layer. ``tables_of(w, param,
    what)``: the truth tables of a [n, width] weight tensor."""
    import torch

    where = f"layer {name} (torchlogix LogicConv2d)"
    if st.get("conv_dimension", 2) != 2:
        raise DataError(f"{source}: {where}: conv_dimension {st.get('conv_dimension')} (only "
                        f"2-D convolutions are read)")
    rank = st.get("lut_rank", 2)
    depth = _int(st.get("tree_depth"), f"{where}: tree_depth", source)
    kernels = _int(st.get("num_kernels"), f"{where}: num_kernels", source)
    chans = _int(st.get("channels", 1), f"{where}: channels", source)
    stride = _int(st.get("stride", 1), f"{where}: stride", source)
    pad = _int(st.get("padding", 0), f"{where}: padding", source, 0)
    dims = st.get("in_dim")
    rf = st.get("receptive_field_size")
    if not all(isinstance(v, (tuple, list)) and len(v) == 2 for v in (dims, rf)):
        raise DataError(f"{source}: {where}: in_dim and receptive_field_size must be (h, w) "
                        f"pairs, got {dims!r} and {rf!r}")
    h, w = (_int(v, f"{where}: in_dim", source) for v in dims)
    rf = tuple(_int(v, f"{where}: receptive_field_size", source) for v in rf)
    shape = (chans, h, w)
    if in_shape is not None and tuple(in_shape) != shape:
        raise DataError(f"{source}: {where} reads a (channels, h, w) = {shape} grid, but the "
                        f"layer before gives {tuple(in_shape)}")
    out_hw = [(d + 2 * pad - r) // stride + 1 for d, r in zip((h, w), rf)]
    if min(out_hw) < 1:
        raise DataError(f"{source}: {where}: a {rf} receptive field does not fit the "
                        f"{h}×{w} grid padded by {pad}")
    n_pos, n_leaf = out_hw[0] * out_hw[1], rank ** (depth - 1)
    leaves = _tensor(tensors.get("connections._indices_L0"),
                     f"{where}: connections._indices_L0", source)
    want = (rank, kernels, n_pos, n_leaf, 3)
    if tuple(leaves.shape) != want or leaves.is_floating_point():
        raise DataError(f"{source}: {where}: connections._indices_L0 has shape "
                        f"{tuple(leaves.shape)} ({leaves.dtype}); expected integers {want} (lut_rank, "
                        f"kernels, {out_hw[0]}×{out_hw[1]} positions, leaves, (h, w, c))")
    lim = torch.tensor([h + 2 * pad, w + 2 * pad, chans])
    if ((leaves < 0) | (leaves >= lim)).any():
        bad = ((leaves < 0) | (leaves >= lim)).nonzero()[0].tolist()
        raise DataError(f"{source}: {where}: leaf {bad[:4]} reads (h, w, c) = "
                        f"{leaves[tuple(bad[:4])].tolist()} outside the padded "
                        f"{h + 2 * pad}×{w + 2 * pad}×{chans} grid")
    links, tables, n_prev = [], [], n_leaf
    kept = {"connections._indices_L0": leaves}
    width = 16 if param == "raw" else 1 << rank
    for lv in range(depth):
        n_l = n_leaf // rank ** lv
        if lv:
            key = f"connections._indices_L{lv}"
            link = _tensor(tensors.get(key), f"{where}: {key}", source)
            if (tuple(link.shape) != (rank, n_l) or link.is_floating_point()
                    or bool(((link < 0) | (link >= n_prev)).any())):
                raise DataError(f"{source}: {where}: {key} must be integers ({rank}, {n_l}) in "
                                f"0…{n_prev - 1}, got {tuple(link.shape)} {link.dtype}")
            links.append(link.numpy().astype(np.int64))
            kept[key] = link
        wt = _tensor(tensors.get(f"tree_weights.{lv}"), f"{where}: tree_weights.{lv}", source)
        if tuple(wt.shape) != (n_l, kernels, width) or not wt.is_floating_point():
            raise DataError(f"{source}: {where}: tree_weights.{lv} has shape "
                            f"{tuple(wt.shape)} ({wt.dtype}); expected float ({n_l}, "
                            f"{kernels}, {width}): level {lv}'s LUTs per kernel, kernels, "
                            f"{param} weights")
        tables.append(tables_of(wt.reshape(-1, width), param,   # row s·K + k: LUT s, kernel k
                                f"{source}: {where}: tree_weights.{lv}").reshape(n_l, kernels))
        kept[f"tree_weights.{lv}"] = wt
        n_prev = n_l
    return ImportedConv(name, "torchlogix LogicConv2d", param, shape, pad,
                        (kernels, *out_hw), leaves.numpy().astype(np.int64), tuple(links),
                        tuple(tables), rf, stride, kept)


def grid_layer_from_layout(i: int, entry: dict, sd: dict, in_shape, source: str, tables_of):
    """Layer ``i`` of a layout, of kind conv (its tensors the state dict's ``<key>.…``) or
    pool, reading the (C, H, W) grid ``in_shape`` (None: the layout's first layer)."""
    if entry.get("kind") == "pool":
        return pool_from_state(str(entry.get("key", f"layers[{i}]")), entry, in_shape, source)
    key = str(entry["key"])
    st = {f: entry[f] for f in _CONV_FIELDS if f in entry}
    for f, default in (("in_dim", None), ("receptive_field_size", 2)):  # torchlogix's _pair
        v = st.get(f, default)
        st[f] = (v, v) if isinstance(v, int) and not isinstance(v, bool) else v
    tensors = {k[len(key) + 1:]: v for k, v in sd.items() if k.startswith(key + ".")}
    return conv_from_state(key, st, tensors, entry.get("parametrization", "raw"), in_shape,
                           source, tables_of)
