"""A logic-gate network on images (:class:`LogicNet`) and the discrete circuit it becomes
(:func:`to_circuit`)."""

from __future__ import annotations

import math
from collections.abc import Collection

import numpy as np
import torch
from torch import nn

from kairo._errors import ConfigError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._config import LogicTrainConfig
from kairo.logic._gates import GATE_NAMES, N_GATES
from kairo.logic._layers import (Binarize, GroupSum, LogicConv2d, LogicDense, OrPooling2d,
                                  fused_threads)

__all__ = ["LogicNet", "build_model", "image_shape", "predict", "layer_report", "to_circuit",
           "expected_gates", "raw_gates"]

OR = GATE_NAMES.index("OR")


class LogicNet(nn.Module):
    """Binarize → [LogicConv2d → OrPooling2d] × conv_blocks → LogicDense × layers → GroupSum.

    ``shape``: one image's (height, width, channels) — (28, 28, 1) for MNIST — or, for a dense
    network, just its number of values. Images arrive as uint8 ``[n, H, W, C]`` (or anything
    with H·W·C values per image, row-major).

    Without kernels (``cfg.kernels`` = 0) ``features`` is empty and the dense layers read the
    bits directly. With kernels the thresholds × colour channels are the channels of the
    first convolution: bits (n, T·H·W·C) threshold-major → (n, T·C, H, W); the last feature
    map is flattened channel-major (torch's ``flatten``) for the dense layers.

    ``forward(images, temperature=1.0, fixed=(), mode=None)``: ``fixed`` holds the indices
    (in :meth:`gate_layers` order) of the layers that compute their argmax gates in training
    too; ``temperature`` and ``mode`` go to every gate layer (see ``kairo.logic._layers``).
    """

    def __init__(self, shape, cfg: LogicTrainConfig):
        super().__init__()
        self.binarize = Binarize(cfg.thresholds)
        rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 11]))
        n_levels = self.binarize.n_levels
        self.image_shape = image_shape(shape, conv=bool(cfg.kernels))
        h, w, c = self.image_shape
        n_pixels = h * w * c
        blocks = []
        if cfg.kernels:
            cfg.feature_sizes(h, w, c)                     # a clear error for what cannot fit
            c_in = n_levels * c
            for i in range(cfg.conv_blocks):
                c_out = cfg.kernels * cfg.conv_growth ** i
                conv = LogicConv2d(c_in, c_out, receptive=cfg.receptive, depth=cfg.conv_depth,
                                   stride=cfg.conv_stride, padding=cfg.padding,
                                   groups=cfg.conv_groups,
                                   wiring=cfg.wiring,
                                   residual_init=cfg.residual_init, mode=cfg.gate_mode,
                                   tau=cfg.gumbel_tau, seed=rng, engine=cfg.engine,
                                   param=cfg.gate_param)
                blocks += [conv, OrPooling2d(2, 2, engine=cfg.engine)]
                c_in = c_out
            for m in blocks:
                h, w = m.out_size(h, w)
            n_flat = c_in * h * w
        else:
            n_flat = n_pixels * n_levels
        self.features = nn.Sequential(*blocks)
        sizes = [n_flat] + [cfg.hidden] * (cfg.layers - 1) + [cfg.outputs or cfg.hidden]
        self.logic = nn.Sequential(*[
            LogicDense(i, o, wiring=cfg.wiring, candidates=cfg.candidates,
                       residual_init=cfg.residual_init,
                       mode=cfg.gate_mode, tau=cfg.gumbel_tau, seed=rng, engine=cfg.engine,
                       param=cfg.gate_param)
            for i, o in zip(sizes[:-1], sizes[1:])])
        self.head = GroupSum(len(cfg.classes), cfg.tau)
        self.n_pixels = n_pixels

    def bits(self, images: torch.Tensor) -> torch.Tensor:
        return self.binarize(images)

    def gate_layers(self) -> list[nn.Module]:
        """Every layer with trainable gates, in order."""
        return [m for m in self.modules() if isinstance(m, (LogicConv2d, LogicDense))]

    def forward(self, images: torch.Tensor, *, temperature: float = 1.0,
                fixed: Collection[int] = (), mode: str | None = None) -> torch.Tensor:
        x = self.bits(images)                                        # (n, T·H·W·C)
        i = 0                                                        # gate layer index
        if len(self.features):
            h, w, c = self.image_shape
            if c == 1:
                x = x.reshape(x.shape[0], -1, h, w)                  # (n, T, H, W)
            else:                                                    # (n, T·C, H, W)
                x = x.reshape(x.shape[0], -1, h, w, c).permute(0, 1, 4, 2, 3).reshape(
                    x.shape[0], -1, h, w)
            for m in self.features:
                if isinstance(m, LogicConv2d):
                    x = m(x, temperature=temperature, fixed=i in fixed, mode=mode)
                    i += 1
                else:
                    x = m(x)
            x = x.flatten(1)                                         # (n, K·h·w)
        for m in self.logic:
            x = m(x, temperature=temperature, fixed=i in fixed, mode=mode)
            i += 1
        return self.head(x)


def image_shape(shape, *, conv: bool = False) -> tuple[int, int, int]:
    """(height, width, channels) from a shape (H, W), (H, W, C) or a number of values (a
    square one-channel image for a convolutional network, a flat vector for a dense one)."""
    if isinstance(shape, (int, np.integer)) and not isinstance(shape, bool):
        n = int(shape)
        side = math.isqrt(max(n, 0))
        if n >= 1 and side * side == n:
            return side, side, 1
        if n >= 1 and not conv:
            return 1, n, 1
        raise ConfigError(f"convolutional models need images of shape (H, W[, C]); {n} values "
                          f"per image are not a square")
    dims = tuple(int(d) for d in shape)
    if len(dims) == 2:
        dims = dims + (1,)
    if len(dims) != 3 or min(dims) < 1:
        raise ConfigError(f"image shape must be (height, width) or (height, width, channels) "
                          f"of positive sizes, got {tuple(shape)}")
    return dims


def build_model(cfg: LogicTrainConfig, shape=(28, 28, 1)) -> LogicNet:
    """The untrained network of ``cfg`` for images of ``shape`` ((H, W, C); see
    :class:`LogicNet`). torch's global seed is set to ``cfg.seed`` first, as the trainer
    does, so a model built here starts where training starts."""
    torch.manual_seed(cfg.seed)
    return LogicNet(shape, cfg)


def _eval_batch(model: LogicNet) -> int:
    # the torch conv path gathers (n, K, 2^(depth−1), H·W) per input side: keep it bounded
    return 2000 if not len(model.features) else 256


@torch.no_grad()
def predict(model: LogicNet, x: np.ndarray, *, batch: int | None = None, **gates) -> np.ndarray:
    """Class predictions of ``model`` as it is (train or eval mode), in memory-bounded batches;
    ``gates`` (temperature, fixed, mode) go to its forward."""
    batch = batch or _eval_batch(model)
    with fused_threads(model):
        out = [model(torch.from_numpy(np.array(x[s:s + batch])), **gates).argmax(1).numpy()
               for s in range(0, len(x), batch)]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


WIRE_OPS = (GATE_NAMES.index("A"), GATE_NAMES.index("B"))      # gates that are wires
# gates the simplifier removes: wires and constants
FREE_OPS = (*WIRE_OPS, GATE_NAMES.index("FALSE"), GATE_NAMES.index("TRUE"))


def _copies(model: LogicNet) -> dict:
    """Gate layer → how many copies of it the circuit holds (a conv layer's positions)."""
    copies, (h, w, _) = {}, model.image_shape
    for m in model.features:                 # conv → pooling blocks, sizes as they go
        if isinstance(m, LogicConv2d):
            ho, wo = m.out_size(h, w)
            copies[m] = ho * wo
        h, w = m.out_size(h, w)
    return copies


def raw_gates(model: LogicNet) -> int:
    """Gates of every gate layer, a conv layer's at every position: the circuit before
    simplification, without OR pooling."""
    copies = _copies(model)
    return sum(copies.get(m, 1) * m.weight[..., 0].numel() for m in model.gate_layers())


def expected_gates(model: LogicNet, *, temperature: float = 1.0, fixed=()) -> torch.Tensor:
    """Differentiable count of the gates that stay gates in the circuit: per gate, the
    probability (its layer's ``op_probs`` at ``temperature``) of a function that is neither a
    wire nor a constant, times its copies; layers in ``fixed`` count their discrete gates.
    The gate-budget penalty of :func:`kairo.logic.train` (``max_gates``)."""
    copies = _copies(model)
    free = torch.tensor(FREE_OPS)
    total = torch.zeros(())
    for i, layer in enumerate(model.gate_layers()):
        if i in fixed:
            p = nn.functional.one_hot(layer._op_tensor(), N_GATES).to(layer.weight.dtype)
        else:
            p = layer.op_probs(temperature=temperature)
        p = p.reshape(-1, N_GATES)
        total = total + copies.get(layer, 1) * (1 - p[:, free].sum(-1)).sum()
    return total


def layer_report(model: LogicNet, cfg: LogicTrainConfig, tie: float = 0.05) -> list[dict]:
    """Per gate layer: its gates, how many are wires (A or B: the simplifier removes them),
    how many copies of each the circuit holds (positions of a conv layer), and the share whose
    two largest logits lie within ``tie`` (undecided gates: the relaxed network mixes two
    gates there that the circuit cannot). The last is where a discretization gap comes from."""
    names = {m: n for n, m in model.named_modules()}
    copies = _copies(model)
    out = []
    for i, layer in enumerate(model.gate_layers()):
        ties = layer.near_ties(tie)
        ops = layer.ops().reshape(-1)
        out.append({"layer": names[layer], "gates": int(ops.size),
                    "copies": int(copies.get(layer, 1)),
                    "wires": int(np.isin(ops, WIRE_OPS).sum()),
                    "near_tie_share": int(ties.sum()) / len(ties),
                    "fixed_from": int(cfg.fix_at[i]) if i < len(cfg.fix_at) else None})
    return out


# ---------------------------------------------------------------------------- circuits
class _Netlist:
    """Gates appended in topological order; ``add`` returns the new gates' node ids."""

    def __init__(self, n_inputs: int):
        self.n_inputs, self.n_nodes = n_inputs, n_inputs
        self.ops: list[np.ndarray] = []
        self.a: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self._zero: int | None = None

    def add(self, ops, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
        ops = np.broadcast_to(np.asarray(ops, dtype=np.uint8), a.shape)
        self.ops.append(ops.ravel())
        self.a.append(a.ravel())
        self.b.append(b.ravel())
        ids = self.n_nodes + np.arange(a.size, dtype=np.int64).reshape(a.shape)
        self.n_nodes += a.size
        return ids

    def zero(self) -> int:
        """A constant-0 node (FALSE gate on input 0; ``simplify`` folds it away)."""
        if self._zero is None:
            self._zero = int(self.add(0, 0, 0))
        return self._zero

    def circuit(self, outputs: np.ndarray, n_classes: int, meta: dict) -> Circuit:
        def cat(v, dt):
            return np.concatenate(v) if v else np.zeros(0, dtype=dt)

        return Circuit(n_inputs=self.n_inputs, ops=cat(self.ops, np.uint8),
                       a=cat(self.a, np.int64), b=cat(self.b, np.int64),
                       outputs=np.asarray(outputs, dtype=np.int64).ravel(),
                       n_classes=n_classes, meta=meta)


def _conv_circuit(net: _Netlist, layer: LogicConv2d, nodes: np.ndarray) -> np.ndarray:
    """Every position of every kernel instantiates its own tree: (C, H, W) → (K, H', W')."""
    _, h, w = nodes.shape
    ho, wo = layer.out_size(h, w)
    p, s = layer.padding, layer.stride
    if p:
        nodes = np.pad(nodes, ((0, 0), (p, p), (p, p)), constant_values=net.zero())
    channels, dy, dx = (t.cpu().numpy() for t in layer.sources())
    ch = channels[:, np.arange(2 ** layer.depth) % 2]                        # (K, S)
    ys = (np.arange(ho) * s)[None, None, :, None] + dy[:, :, None, None]     # (K, S, H', 1)
    xs = (np.arange(wo) * s)[None, None, None, :] + dx[:, :, None, None]     # (K, S, 1, W')
    inp = nodes[ch[:, :, None, None], ys, xs]                                 # (K, S, H', W')
    ops = layer.ops()[:, :, None, None]                                       # (K, G, 1, 1)
    a, b, lo = inp[:, 0::2], inp[:, 1::2], 0
    while True:
        size = a.shape[1]
        out = net.add(ops[:, lo:lo + size], a, b)                             # (K, size, H', W')
        lo += size
        if size == 1:
            return out[:, 0]
        a, b = out[:, 0::2], out[:, 1::2]


def _pool_circuit(net: _Netlist, layer: OrPooling2d, nodes: np.ndarray) -> np.ndarray:
    """OR over each window as a balanced tree of two-input OR gates: (C, H, W) → (C, H', W')."""
    _, h, w = nodes.shape
    ho, wo = layer.out_size(h, w)
    k, s = layer.kernel, layer.stride
    terms = [nodes[:, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
             for dy in range(k) for dx in range(k)]
    while len(terms) > 1:
        nxt = [net.add(OR, terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
        terms = nxt + terms[len(nxt) * 2:]
    return terms[0]


def to_circuit(model: LogicNet, meta: dict | None = None) -> Circuit:
    """The discrete network as a netlist: input bits (threshold-major) → gates → outputs.

    Layer by layer in the model's order; conv trees are instantiated at every position,
    padding reads one constant-0 node, OR pooling becomes OR gates.
    """
    n_in = model.binarize.n_levels * model.n_pixels
    net = _Netlist(n_in)
    nodes = np.arange(n_in, dtype=np.int64)
    if len(model.features):
        h, w, c = model.image_shape
        nodes = nodes.reshape(-1, h, w, c).transpose(0, 3, 1, 2).reshape(-1, h, w)
        for layer in model.features:
            if isinstance(layer, LogicConv2d):
                nodes = _conv_circuit(net, layer, nodes)
            elif isinstance(layer, OrPooling2d):
                nodes = _pool_circuit(net, layer, nodes)
            else:
                raise KairoError(f"to_circuit: no circuit for layer {type(layer).__name__}")
        nodes = nodes.reshape(-1)                    # channel-major, as torch's flatten
    for layer in model.logic:
        ia, ib = layer.sources()
        nodes = net.add(layer.ops(), nodes[ia.numpy()], nodes[ib.numpy()])
    return net.circuit(nodes, model.head.k,
                       {"thresholds": model.binarize.t.numpy().astype(int).tolist(),
                        "n_pixels": model.n_pixels, "image_shape": list(model.image_shape),
                        **(meta or {})})

