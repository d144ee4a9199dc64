"""``Circuit``: the one netlist every logic back end reads.

Nodes are numbered inputs first (0 … n_inputs−1), then gates in topological order (gate i is
node n_inputs + i and may read only nodes before it). ``outputs`` lists node ids; they are
split into ``n_classes`` equal contiguous groups and a class's score is the number of its
outputs that are 1 (GroupSum), the prediction the first class with the highest score.

The reference evaluation packs 64 samples per 64-bit word and runs the gates level by level
(all gates of one depth and one op in a single NumPy call), so a 100k-gate circuit over the
10k MNIST test images takes well under a second.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from kairo._errors import DataError, KairoError
from kairo.logic._gates import GATE_NAMES, N_GATES, TRUTH, gate_bits

__all__ = ["Circuit", "ImageInput", "pack_bits", "unpack_bits", "OPERANDS_READ", "FORMAT",
           "VERSION"]

FORMAT = "kairo.circuit"
VERSION = 1


def _reads(op: int) -> tuple[bool, bool]:
    """Whether gate ``op`` depends on input a and on input b (from its truth table)."""
    t = int(TRUTH[op])
    out = [[(t >> (2 * a + b)) & 1 for b in (0, 1)] for a in (0, 1)]
    return out[0] != out[1], any(out[a][0] != out[a][1] for a in (0, 1))


# (reads a, reads b) of every op: constants read neither input, "a" and "not a" only a, …
OPERANDS_READ = tuple(_reads(op) for op in range(N_GATES))


def pack_bits(x: np.ndarray) -> np.ndarray:
    """(n_samples, n_bits) of 0/1 → (n_bits, ceil(n_samples / 64)) uint64 words."""
    x = np.asarray(x)
    n, m = x.shape
    pad = (-n) % 64
    xt = np.zeros((m, n + pad), dtype=np.uint8)
    xt[:, :n] = x.T != 0
    return np.packbits(xt, axis=1, bitorder="little").view(np.uint64)


def unpack_bits(words: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`pack_bits`: (n_bits, n_words) uint64 → (n, n_bits) bool."""
    words = np.ascontiguousarray(words, dtype=np.uint64)
    bits = np.unpackbits(words.view(np.uint8), axis=1, bitorder="little")
    return bits[:, :n].T.astype(bool)


@dataclass(frozen=True)
class ImageInput:
    """How a circuit reads uint8 images: input ``k * n_pixels + p`` is ``pixel p >
    thresholds[k]`` (threshold-major, as ``Binarize``).

    ``thresholds`` are the integers equivalent for uint8 pixels to the circuit's
    ``meta["thresholds"]``: ``floor(t)`` clipped to −1 (always 1) … 255 (always 0).
    """

    thresholds: tuple[int, ...]
    n_pixels: int

    @property
    def shape(self) -> tuple[int, ...]:
        """One image's shape: (side, side) when the pixels make a square, else (n_pixels,)."""
        side = math.isqrt(self.n_pixels)
        return (side, side) if side * side == self.n_pixels else (self.n_pixels,)

    def check(self, images) -> np.ndarray:
        """Images as C-contiguous (n_images, n_pixels) uint8, or DataError naming the problem."""
        x = np.asarray(images)
        if x.dtype != np.uint8:
            raise DataError(f"images must be uint8 pixels (0–255), got dtype {x.dtype}; "
                            f"convert with np.asarray(images, dtype=np.uint8) if they are "
                            f"already integers in that range")
        if x.ndim < 2 or int(np.prod(x.shape[1:])) != self.n_pixels:
            raise DataError(f"images must have shape (n_images, {self.n_pixels}) (or "
                            f"(n_images, …) with {self.n_pixels} pixels per image), got shape "
                            f"{x.shape}")
        return np.ascontiguousarray(x.reshape(x.shape[0], self.n_pixels))

    def compare_thresholds(self) -> np.ndarray:
        """The thresholds as (1, T, 1) integers for ``images[:, None, :] > th``: uint8 when
        they fit (the fast NumPy compare), else int16."""
        th = np.asarray(self.thresholds)
        dtype = np.uint8 if th.min() >= 0 and th.max() <= 254 else np.int16
        return th.astype(dtype)[None, :, None]

    def bits(self, images) -> np.ndarray:
        """uint8 images → the circuit's input bits, (n_images, n_inputs) bool."""
        x = self.check(images)
        return (x[:, None, :] > self.compare_thresholds()).reshape(x.shape[0], -1)


@dataclass(frozen=True, eq=False)
class Circuit:
    """A feed-forward netlist of two-input gates with class-grouped outputs."""

    n_inputs: int
    ops: np.ndarray                  # (n_gates,) uint8 op codes (see kairo.logic._gates)
    a: np.ndarray                    # (n_gates,) node id of input a
    b: np.ndarray                    # (n_gates,) node id of input b
    outputs: np.ndarray              # (n_outputs,) node ids
    n_classes: int = 1
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        for name, dt in (("ops", np.uint8), ("a", np.int64), ("b", np.int64),
                         ("outputs", np.int64)):
            arr = np.asarray(getattr(self, name))
            if arr.ndim != 1:
                raise DataError(f"circuit {name} must be a 1-D array, got shape {arr.shape}")
            if arr.size and not np.issubdtype(arr.dtype, np.integer):
                raise DataError(f"circuit {name} must hold integers, got {arr.dtype}")
            if name == "ops" and arr.size and (arr.min() < 0 or arr.max() >= N_GATES):
                g = int(np.flatnonzero((arr < 0) | (arr >= N_GATES))[0])
                raise DataError(f"gate {g}: unknown op {int(arr[g])} (expected 0–15)")
            arr = arr.astype(dt)
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        self.validate()

    # ------------------------------------------------------------------ checks
    @property
    def n_gates(self) -> int:
        return int(self.ops.size)

    @property
    def n_nodes(self) -> int:
        return self.n_inputs + self.n_gates

    @property
    def n_outputs(self) -> int:
        return int(self.outputs.size)

    @property
    def image_input(self) -> ImageInput | None:
        """The image contract of circuits that read thresholded uint8 pixels, else None.

        ``meta["thresholds"]`` (as ``kairo logic train`` writes them) gives the pixel
        thresholds when their number divides the inputs.
        """
        th = self.meta.get("thresholds") if isinstance(self.meta, dict) else None
        if not isinstance(th, (list, tuple)) or not th or any(
                isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating))
                or not np.isfinite(t) for t in th):
            return None
        if self.n_inputs % len(th):
            return None
        eff = tuple(int(min(255, max(-1, np.floor(t)))) for t in th)
        return ImageInput(eff, self.n_inputs // len(th))

    def image_bits(self, images) -> np.ndarray:
        """uint8 images → input bits (:meth:`ImageInput.bits`); KairoError when the circuit
        has no pixel thresholds."""
        spec = self.image_input
        if spec is None:
            raise KairoError("this circuit has no pixel thresholds (meta['thresholds'], set by "
                             "`kairo logic train`, dividing its inputs), so it cannot read "
                             "images; threshold them yourself and pass the bits")
        return spec.bits(images)

    def validate(self) -> None:
        """Raise DataError naming the first gate or field that is wrong."""
        if (isinstance(self.n_inputs, bool) or not isinstance(self.n_inputs, (int, np.integer))
                or self.n_inputs < 1):
            raise DataError(f"circuit n_inputs must be a positive integer, got {self.n_inputs!r}")
        n = self.n_gates
        if self.a.size != n or self.b.size != n:
            raise DataError(f"circuit has {n} ops but {self.a.size} a-inputs and "
                            f"{self.b.size} b-inputs")
        bad = np.flatnonzero(self.ops >= N_GATES)
        if bad.size:
            raise DataError(f"gate {bad[0]}: unknown op {int(self.ops[bad[0]])} "
                            f"(expected 0–15)")
        own = self.n_inputs + np.arange(n)
        for side, refs in (("a", self.a), ("b", self.b)):
            missing = np.flatnonzero((refs < 0) | (refs >= self.n_nodes))
            if missing.size:
                g = missing[0]
                raise DataError(f"gate {g} input {side} refers to node {int(refs[g])}, which "
                                f"does not exist (nodes 0–{self.n_nodes - 1})")
            later = np.flatnonzero(refs >= own)
            if later.size:
                g = later[0]
                raise DataError(f"gate {g} (node {int(own[g])}) input {side} refers to node "
                                f"{int(refs[g])}, which is not computed before it: the netlist "
                                f"has a cycle or is not in topological order")
        if self.n_outputs == 0:
            raise DataError("circuit has no outputs")
        bad = np.flatnonzero((self.outputs < 0) | (self.outputs >= self.n_nodes))
        if bad.size:
            raise DataError(f"output {bad[0]} refers to node {int(self.outputs[bad[0]])}, which "
                            f"does not exist (nodes 0–{self.n_nodes - 1})")
        if (isinstance(self.n_classes, bool) or not isinstance(self.n_classes, (int, np.integer))
                or self.n_classes < 1
                or self.n_outputs % self.n_classes):
            raise DataError(f"class groups do not divide the outputs: {self.n_outputs} outputs "
                            f"into {self.n_classes!r} classes")

    # ------------------------------------------------------------------ structure
    def depths(self) -> np.ndarray:
        """Logic depth of every node (inputs 0)."""
        d = np.zeros(self.n_nodes, dtype=np.int64)
        a, b, k = self.a, self.b, self.n_inputs
        for i in range(self.n_gates):   # one pass in topological order
            d[k + i] = 1 + max(d[a[i]], d[b[i]])
        return d

    def live_nodes(self) -> np.ndarray:
        """Boolean mask over nodes: True where some output depends on the node."""
        k = self.n_inputs
        lv = np.zeros(self.n_nodes, dtype=bool)
        lv[self.outputs] = True
        ops, a, b = self.ops.tolist(), self.a.tolist(), self.b.tolist()
        lv = lv.tolist()
        for i in range(self.n_gates - 1, -1, -1):
            if lv[k + i]:
                ua, ub = OPERANDS_READ[ops[i]]
                if ua:
                    lv[a[i]] = True
                if ub:
                    lv[b[i]] = True
        return np.asarray(lv, dtype=bool)

    def n_live_gates(self) -> int:
        """Gates some output depends on (what the C and Verilog back ends emit)."""
        return int(self.live_nodes()[self.n_inputs:].sum())

    def depth(self) -> int:
        """Longest input-to-output path, in gates."""
        return int(self.depths()[self.outputs].max())

    def stats(self) -> dict:
        counts = Counter(GATE_NAMES[o] for o in self.ops.tolist())
        return {"n_inputs": self.n_inputs, "n_gates": self.n_gates,
                "n_outputs": self.n_outputs, "n_classes": self.n_classes,
                "depth": self.depth(), "gates_by_op": dict(sorted(counts.items()))}

    # ------------------------------------------------------------------ evaluation
    def check_inputs(self, x) -> np.ndarray:
        """``x`` as an array of 0/1 of shape (n_samples, n_inputs), or KairoError."""
        x = np.asarray(x)
        if x.ndim != 2 or x.shape[1] != self.n_inputs:
            raise KairoError(f"circuit inputs must have shape (n_samples, {self.n_inputs}), "
                             f"got {x.shape}")
        if x.dtype != bool and not (np.issubdtype(x.dtype, np.integer) and
                                    (x.size == 0 or (x.min() >= 0 and x.max() <= 1))):
            raise KairoError(f"circuit inputs must be 0/1 (bool or integer), got dtype "
                             f"{x.dtype}" + ("" if x.dtype.kind not in "iu" else
                                             f" with values {x.min()}…{x.max()}"))
        return x

    def evaluate_packed(self, words: np.ndarray) -> np.ndarray:
        """Node-level reference on packed inputs (n_inputs, n_words) → outputs (n_out, n_words)."""
        words = np.asarray(words)
        if words.ndim != 2 or words.shape[0] != self.n_inputs:
            raise KairoError(f"packed inputs must have shape ({self.n_inputs}, n_words), got "
                             f"{words.shape}")
        if words.dtype != np.uint64:
            if not np.issubdtype(words.dtype, np.integer) or (words.size and words.min() < 0):
                raise KairoError(f"packed inputs must be unsigned 64-bit words, got "
                                 f"{words.dtype}")
            words = words.astype(np.uint64)
        vals = np.empty((self.n_nodes, words.shape[1]), dtype=np.uint64)
        vals[:self.n_inputs] = words
        d = self.depths()[self.n_inputs:]
        order = np.lexsort((self.ops, d))        # by level, then op
        ds, os_ = d[order], self.ops[order]
        cuts = np.flatnonzero(np.diff(ds) | np.diff(os_)) + 1
        for grp in np.split(order, cuts):
            if grp.size == 0:
                continue
            vals[self.n_inputs + grp] = gate_bits(int(self.ops[grp[0]]), vals[self.a[grp]],
                                                  vals[self.b[grp]])
        return vals[self.outputs]

    def evaluate(self, x) -> np.ndarray:
        """Output bits (n_samples, n_outputs) for 0/1 inputs (n_samples, n_inputs)."""
        x = self.check_inputs(x)
        return unpack_bits(self.evaluate_packed(pack_bits(x)), x.shape[0])

    def scores(self, x) -> np.ndarray:
        """Per-class vote counts (n_samples, n_classes)."""
        out = self.evaluate(x)
        return out.reshape(out.shape[0], self.n_classes,
                           self.n_outputs // self.n_classes).sum(axis=2)

    def predict(self, x) -> np.ndarray:
        """First class with the highest vote count."""
        return self.scores(x).argmax(axis=1)

    # ------------------------------------------------------------------ JSON
    def to_dict(self) -> dict:
        return {"format": FORMAT, "version": VERSION, "n_inputs": int(self.n_inputs),
                "n_classes": int(self.n_classes),
                "gates": np.stack([self.ops, self.a, self.b], axis=1).tolist(),
                "outputs": self.outputs.tolist(), "meta": self.meta}

    def save(self, path) -> Path:
        """Write the stable JSON format atomically (temp file + rename)."""
        path = Path(path)
        if not path.parent.is_dir():
            raise KairoError(f"circuit {path}: folder {path.parent} does not exist")
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w") as f:
                json.dump(self.to_dict(), f, separators=(",", ":"))
                f.write("\n")
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)          # mkstemp's 0600 is too private for a result
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return path

    @classmethod
    def from_dict(cls, d: dict, source: str = "circuit") -> Circuit:
        if not isinstance(d, dict) or d.get("format") != FORMAT:
            raise DataError(f"{source}: not a kairo circuit (expected \"format\": \"{FORMAT}\")")
        if d.get("version") != VERSION:
            raise DataError(f"{source}: circuit format version {d.get('version')!r} is not "
                            f"supported (this kairo reads version {VERSION})")
        for key in ("n_inputs", "gates", "outputs"):
            if key not in d:
                raise DataError(f"{source}: missing field {key!r}")
        g, outs = d["gates"], d["outputs"]
        if not isinstance(g, list) or not all(isinstance(r, list) and len(r) == 3 for r in g):
            raise DataError(f"{source}: field 'gates' must be a list of [op, a, b] triples")
        if not isinstance(outs, list):
            raise DataError(f"{source}: field 'outputs' must be a list of node ids")
        for key, vals in (("gates", [v for r in g for v in r]), ("outputs", outs)):
            bad = [v for v in vals if isinstance(v, bool) or not isinstance(v, int)
                   or not -2**62 < v < 2**62]
            if bad:
                raise DataError(f"{source}: field {key!r} must hold integers (node ids and op "
                                f"codes), found {bad[0]!r}")
        arr = np.asarray(g, dtype=np.int64).reshape(-1, 3)
        try:
            return cls(n_inputs=d["n_inputs"], ops=arr[:, 0], a=arr[:, 1], b=arr[:, 2],
                       outputs=np.asarray(outs, dtype=np.int64),
                       n_classes=d.get("n_classes", 1), meta=d.get("meta", {}))
        except DataError as exc:
            raise DataError(f"{source}: {exc}") from None
        except (TypeError, ValueError) as exc:
            raise DataError(f"{source}: {exc}") from None

    @classmethod
    def load(cls, path) -> Circuit:
        path = Path(path)
        if not path.is_file():
            raise KairoError(f"circuit file {path} does not exist")
        try:
            d = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise DataError(f"circuit file {path}: not valid JSON — truncated or corrupt? "
                            f"({exc})") from None
        except UnicodeDecodeError:
            raise DataError(f"circuit file {path}: not a text (JSON) file") from None
        return cls.from_dict(d, source=f"circuit file {path}")
