"""The pieces of an imported network (see :mod:`kairo.logic._import`): how its input bits
come from pixels (:class:`InputBinarization`), which kairo gate its weights pick
(:func:`gate_ops`) and the network itself (:class:`ImportedModel`), whose
:meth:`~ImportedModel.circuit` is the netlist."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kairo._errors import DataError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._gates import N_GATES, TRUTH
from kairo.logic._luts import lut_gates, lut_tables

__all__ = ["FRAMEWORKS", "PARAMETRIZATIONS", "BIT_ORDERS", "CHANNEL_ORDERS", "DIFFLOGIC_OPS",
           "LAYOUT_FORMAT", "REFERENCE_FORMAT", "InputBinarization", "ImportedLayer",
           "ImportedModel", "gate_ops"]

FRAMEWORKS = ("difflogic", "torchlogix")
PARAMETRIZATIONS = ("raw", "warp", "light")          # torchlogix's; difflogic's is "raw"
BIT_ORDERS = ("threshold-major", "pixel-major")
CHANNEL_ORDERS = ("first", "last")
LAYOUT_FORMAT = "kairo.logic-layout"
REFERENCE_FORMAT = "kairo.logic-reference"
_VERSION = 1

# kairo's truth tables: bit (2a + b) is the output for inputs a, b (see _gates.TRUTH)
_OP_OF_TRUTH = np.zeros(16, dtype=np.uint8)
_OP_OF_TRUTH[TRUTH] = np.arange(N_GATES, dtype=np.uint8)

# difflogic's op id i (difflogic/functional.py, the table of bin_op): its truth table read as
# columns AB = 00, 01, 10, 11 is the binary number i, most significant bit first; torchlogix's
# raw ids are the same. As kairo op codes (the identity, checked by the tests gate by gate):
DIFFLOGIC_OPS = tuple(int(_OP_OF_TRUTH[sum(((i >> (3 - k)) & 1) << k for k in range(4))])
                      for i in range(16))


# ---------------------------------------------------------------------------- input bits
@dataclass(frozen=True)
class InputBinarization:
    """How the framework turned uint8 pixels into the first layer's bits.

    ``x = pixel / scale`` (float32, as ``ToTensor`` divides by 255; ``scale=1``: raw pixels),
    bit = ``x > t`` for each threshold ``t`` (compared in float32, as torch compares a float32
    tensor with a Python float or a float32 buffer). ``bit_order``: ``threshold-major`` (bit
    ``t·P + p``: difflogic's ``torch.cat([(x > t) for t in …])``, kairo's own) or ``pixel-major``
    (bit ``p·T + t``: torchlogix's binarization layers). ``channels``: pixel ``p`` runs over
    (c, h, w) (``first``, torchvision's C×H×W tensors) or (h, w, c) (``last``). ``image_shape``
    (H, W, C); ``None``: inferred from the first layer's inputs (square, one channel).
    """

    thresholds: tuple[float, ...]
    scale: float = 255.0
    image_shape: tuple[int, int, int] | None = None
    bit_order: str = "threshold-major"
    channels: str = "first"

    def __post_init__(self):
        th = tuple(self.thresholds)
        if not th or any(isinstance(t, bool) or not isinstance(t, (int, float, np.integer,
                                                                     np.floating))
                         or not math.isfinite(t) for t in th):
            raise DataError(f"input thresholds must be finite numbers, got {list(th)!r}")
        object.__setattr__(self, "thresholds", tuple(float(t) for t in th))
        if (isinstance(self.scale, bool) or not isinstance(self.scale, (int, float))
                or not math.isfinite(self.scale) or self.scale <= 0):
            raise DataError(f"input scale must be a positive number (the framework's input is "
                            f"pixel / scale), got {self.scale!r}")
        if self.bit_order not in BIT_ORDERS:
            raise DataError(f"input bit_order must be one of {', '.join(BIT_ORDERS)}, got "
                            f"{self.bit_order!r}")
        if self.channels not in CHANNEL_ORDERS:
            raise DataError(f"input channels must be first or last, got {self.channels!r}")
        if self.image_shape is not None:
            shape = tuple(self.image_shape)
            if len(shape) == 2:
                shape = (*shape, 1)
            if len(shape) != 3 or any(isinstance(s, bool) or not isinstance(s, (int, np.integer))
                                      or s < 1 for s in shape):
                raise DataError(f"input image_shape must be [H, W] or [H, W, C] of positive "
                                f"integers, got {list(self.image_shape)!r}")
            object.__setattr__(self, "image_shape", tuple(int(s) for s in shape))

    @property
    def n_pixels(self) -> int:
        h, w, c = self.image_shape
        return h * w * c

    @property
    def n_bits(self) -> int:
        return len(self.thresholds) * self.n_pixels

    def resolved(self, n_bits: int, source: str = "model") -> InputBinarization:
        """This description with ``image_shape`` filled in for a first layer of ``n_bits``
        inputs; DataError when the bits do not add up."""
        t = len(self.thresholds)
        if self.image_shape is None:
            if n_bits % t:
                raise DataError(f"{source}: the first logic layer reads {n_bits} bits, not a "
                                f"multiple of the {t} input thresholds")
            p = n_bits // t
            side = math.isqrt(p)
            shape = (side, side, 1) if side * side == p else (p, 1, 1)
            return InputBinarization(self.thresholds, self.scale, shape, self.bit_order,
                                     self.channels)
        if self.n_bits != n_bits:
            raise DataError(f"{source}: the input binarization gives {t} thresholds × "
                            f"{self.n_pixels} pixels ({'×'.join(map(str, self.image_shape))}) "
                            f"= {self.n_bits} bits, but the first logic layer reads {n_bits}")
        return self

    def pixel_thresholds(self) -> list[int]:
        """Each threshold as the integer ``e`` with ``pixel > e`` ⇔ ``pixel / scale > t`` for
        every uint8 pixel, computed with torch's own float32 division and comparison (−1:
        always 1, 255: always 0)."""
        import torch

        values = torch.arange(256, dtype=torch.float32).div(self.scale)
        out = []
        for t in self.thresholds:
            above = (values > torch.tensor(t, dtype=torch.float32)).numpy()
            e = int(np.count_nonzero(~above)) - 1
            if not (above[e + 1:].all() and not above[:e + 1].any()):   # monotone, by IEEE
                raise KairoError(f"internal error: threshold {t} at scale {self.scale} is not "
                                 f"monotone in the pixel value")
            out.append(e)
        return out

    def framework_values(self, images: np.ndarray):
        """uint8 images (n, n_pixels) in kairo's (h, w, c) order → the framework's float32
        input tensor: (n, C, H, W) for channels first, else (n, H, W, C), divided by scale."""
        import torch

        h, w, c = self.image_shape
        x = torch.from_numpy(np.array(images, dtype=np.uint8).reshape(len(images), h, w, c))
        if self.channels == "first":
            x = x.permute(0, 3, 1, 2).contiguous()
        return x.to(torch.float32).div(self.scale)

    def framework_bits(self, images: np.ndarray):
        """uint8 images (n, n_pixels) → the first layer's input bits in the framework's order,
        as a float32 tensor (n, n_bits) of 0/1, the way a training script feeds difflogic."""
        import torch

        x = self.framework_values(images).reshape(len(images), -1)
        th = [torch.tensor(t, dtype=torch.float32) for t in self.thresholds]
        parts = [(x > t).to(torch.float32) for t in th]
        dim = 1 if self.bit_order == "threshold-major" else 2
        return torch.stack(parts, dim=dim).reshape(len(images), -1)

    def permutation(self) -> np.ndarray:
        """``perm[j]``: the kairo input node (threshold-major, pixels in (h, w, c) order) that
        holds the framework's input bit ``j``."""
        h, w, c = self.image_shape
        t, p = len(self.thresholds), self.n_pixels
        node = np.arange(t * p, dtype=np.int64).reshape(t, h, w, c)     # kairo's layout
        if self.channels == "first":
            node = node.transpose(0, 3, 1, 2)                           # (T, C, H, W)
        node = node.reshape(t, p)
        return (node if self.bit_order == "threshold-major" else node.T).reshape(-1).copy()

    def to_dict(self) -> dict:
        return {"thresholds": list(self.thresholds), "scale": self.scale,
                "image_shape": list(self.image_shape) if self.image_shape else None,
                "bit_order": self.bit_order, "channels": self.channels}


# ---------------------------------------------------------------------------- gates
def _int(v, what: str, source: str, low: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise DataError(f"{source}: {what} must be an integer ≥ {low}, got {v!r}")
    return int(v)


def _tensor(v, what: str, source: str):
    import torch

    if not isinstance(v, torch.Tensor):
        raise DataError(f"{source}: {what} is missing (expected a tensor, found "
                        f"{type(v).__name__ if v is not None else 'nothing'})")
    return v.detach().cpu()


def gate_ops(weights, parametrization: str = "raw") -> np.ndarray:
    """kairo op codes of the gates a framework's weights pick in its eval forward.

    ``raw`` (difflogic, torchlogix raw): ``argmax`` over 16 logits in the paper's order (the
    first maximum, as torch); ``warp``: torchlogix's Walsh coefficients [out, 4]; ``light``:
    torchlogix's truth-table weights [out, 4]. Computed with torch in the weights' dtype.
    """
    import torch

    w = torch.as_tensor(weights)
    if parametrization not in PARAMETRIZATIONS:
        raise DataError(f"unknown parametrization {parametrization!r} (expected "
                        f"{', '.join(PARAMETRIZATIONS)})")
    want = 16 if parametrization == "raw" else 4
    if w.ndim != 2 or w.shape[1] != want or not w.is_floating_point():
        raise DataError(f"{parametrization} gate weights must be a float [n, {want}] array, got "
                        f"{w.dtype} {tuple(w.shape)}")
    if torch.isnan(w).any():
        n = int(torch.isnan(w).any(1).nonzero()[0, 0])
        raise DataError(f"gate {n}: its weights are NaN (a diverged model?)")
    if parametrization == "raw":
        return np.asarray(DIFFLOGIC_OPS, dtype=np.uint8)[w.argmax(-1).numpy()]
    return _OP_OF_TRUTH[lut_tables(w, parametrization).astype(np.int64)]


# ---------------------------------------------------------------------------- the model
@dataclass(frozen=True, eq=False)
class ImportedLayer:
    """One dense layer as read from the file: ``inputs`` [rank, out] the indices in the layer
    before that each neuron reads (rank 2: a and b; torchlogix's ``lut_rank`` 4 and 6 LUTs read
    more), ``tables`` the truth table each neuron computes in the framework's eval forward
    (uint64; bit i is the output when input j is bit rank − 1 − j of i), ``tensors`` what the
    file held, for the framework's own forward."""

    name: str
    kind: str                        # "difflogic LogicLayer" or "torchlogix LogicDense"
    parametrization: str
    in_dim: int
    out_dim: int
    inputs: np.ndarray
    tables: np.ndarray
    tensors: dict = field(default_factory=dict, repr=False)

    @property
    def rank(self) -> int:
        return int(self.inputs.shape[0])

    @property
    def ops(self) -> np.ndarray:
        """kairo op codes of a two-input layer."""
        if self.rank != 2:
            raise KairoError(f"layer {self.name} holds {self.rank}-input LUTs, not gates")
        return _OP_OF_TRUTH[self.tables.astype(np.int64)]

    @property
    def n_luts(self) -> int:
        return self.out_dim

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "parametrization": self.parametrization,
                "lut_rank": self.rank, "in_dim": self.in_dim, "out_dim": self.out_dim}

    def gates(self, nodes: np.ndarray, first: int) -> tuple[list, list, list, np.ndarray]:
        """(ops, a, b, out): the layer as two-input gates numbered from ``first``, reading the
        node ids ``nodes`` of the layer before; ``out`` is each neuron's node."""
        return lut_nodes(self.tables, nodes[self.inputs], first)


def lut_nodes(tables: np.ndarray, src: np.ndarray, first: int
              ) -> tuple[list, list, list, np.ndarray]:
    """(ops, a, b, out) of n LUTs: ``tables`` (n,) truth tables, ``src`` (rank, n) the node of
    each LUT's inputs, gates numbered from ``first``. Two-input LUTs are one gate each; wider
    ones become :func:`~kairo.logic.lut_gates`' gates (one plan per distinct table)."""
    rank, n = src.shape
    if rank == 2:
        return (_OP_OF_TRUTH[tables.astype(np.int64)].tolist(), src[0].tolist(),
                src[1].tolist(), first + np.arange(n, dtype=np.int64))
    ops, aa, bb, out = [], [], [], np.empty(n, dtype=np.int64)
    plans: dict[int, tuple] = {}
    for g, t in enumerate(tables.tolist()):
        if t not in plans:
            plans[t] = lut_gates(t, rank)
        body, o = plans[t]
        slot = src[:, g].tolist() + [first + len(ops) + i for i in range(len(body))]
        for op, a, b in body:
            ops.append(op)
            aa.append(slot[a])
            bb.append(slot[b])
        out[g] = slot[o]
    return ops, aa, bb, out


@dataclass(frozen=True, eq=False)
class ImportedModel:
    """A framework's network as read by :func:`read_model`; :meth:`circuit` is its netlist."""

    framework: str
    path: str
    form: str                        # "module" (torch.save(model)) or "state_dict"
    layers: tuple
    k: int
    tau: float
    beta: float = 0.0
    input: InputBinarization | None = None
    binarization: dict | None = None  # a torchlogix binarization layer: its class and tensors
    sha256: str = ""

    @property
    def n_inputs(self) -> int:
        return self.layers[0].in_dim

    @property
    def n_gates(self) -> int:
        """The network's neurons (LUTs); a LUT of more than two inputs is several gates."""
        return sum(L.n_luts for L in self.layers)

    def summary(self) -> dict:
        return {"framework": self.framework, "file": str(self.path), "sha256": self.sha256,
                "form": self.form, "n_inputs": self.n_inputs, "n_gates": self.n_gates,
                "layers": [L.describe() for L in self.layers],
                "group_sum": {"k": self.k, "tau": self.tau, "beta": self.beta},
                "input": self.input.to_dict() if self.input else None}

    def circuit(self, meta: dict | None = None) -> Circuit:
        """The network as a :class:`Circuit`: layer by layer, one gate per two-input neuron
        (wider LUTs several, convolutions every tree at every position, pooling ORs), outputs
        the last layer's neurons in ``k`` class groups. With an input binarization the inputs are
        kairo's (threshold-major, (h, w, c) pixels) and ``meta["thresholds"]`` the integer
        pixel thresholds, so the circuit reads uint8 images."""
        n = self.n_inputs
        nodes = self.input.permutation() if self.input else np.arange(n, dtype=np.int64)
        ops, aa, bb = [], [], []
        for L in self.layers:
            o, a, b, nodes = L.gates(nodes, n + len(ops))
            ops += o
            aa += a
            bb += b
        info = {"imported": self.summary(), "classes": list(range(self.k))}
        if self.input:
            h, w, c = self.input.image_shape
            info.update(thresholds=self.input.pixel_thresholds(),
                        n_pixels=self.input.n_pixels, image_shape=[h, w, c])
        return Circuit(n_inputs=n, ops=np.array(ops, dtype=np.uint8), a=np.array(aa, np.int64),
                       b=np.array(bb, np.int64), outputs=nodes, n_classes=self.k,
                       meta={**info, **(meta or {})})
