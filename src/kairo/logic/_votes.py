"""The class vote of a circuit as two-input gates: per-class popcounts, then the argmax.

A logic network's papers count the gates of its layers; the vote that turns the last layer's
outputs into a class (a popcount per class and a comparison of the counts) is logic too, and on
a small FPGA it can take more cells than the layers. :func:`vote_circuit` builds it from the
same 16 two-input gates as the network, so the two counts compare:

- popcount: column compression — full adders (5 gates: 2 XOR, 2 AND, 1 OR) take three bits of
  one weight to a sum and a carry, half adders (XOR, AND) two — until every weight holds one
  bit: about 5 gates per vote;
- argmax: a linear scan that keeps the first class with the most votes (numpy's rule): a
  w-bit "greater than" (4 gates a bit), a multiplexer of the running maximum (3 gates a bit)
  and of its class index (1 gate a bit: the candidate index is a constant).
"""

from __future__ import annotations

import numpy as np

from kairo._errors import ConfigError
from kairo.logic._circuit import Circuit
from kairo.logic._gates import GATE_NAMES

__all__ = ["vote_circuit", "vote_gates"]

_OP = {n: GATE_NAMES.index(n) for n in ("AND", "A_AND_NOT_B", "XOR", "OR", "XNOR")}


class _Builder:
    def __init__(self, n_inputs: int):
        self.n_inputs = n_inputs
        self.ops: list[int] = []
        self.a: list[int] = []
        self.b: list[int] = []

    def gate(self, op: str, a: int, b: int) -> int:
        self.ops.append(_OP[op])
        self.a.append(a)
        self.b.append(b)
        return self.n_inputs + len(self.ops) - 1

    @property
    def n_gates(self) -> int:
        return len(self.ops)


def _popcount(net: _Builder, bits: list[int]) -> list[int]:
    """The number of ones among ``bits`` as nodes, least significant first."""
    cols, out, w = {0: list(bits)}, [], 0
    while cols.get(w):
        col = cols[w]
        while len(col) > 1:
            if len(col) >= 3:
                x, y, z = col.pop(0), col.pop(0), col.pop(0)
                s1 = net.gate("XOR", x, y)
                col.append(net.gate("XOR", s1, z))
                carry = net.gate("OR", net.gate("AND", x, y), net.gate("AND", s1, z))
            else:
                x, y = col.pop(0), col.pop(0)
                col.append(net.gate("XOR", x, y))
                carry = net.gate("AND", x, y)
            cols.setdefault(w + 1, []).append(carry)
        out.append(col[0])
        w += 1
    return out


def _greater(net: _Builder, a: list[int], b: list[int]) -> int:
    """Node that is 1 when the unsigned number a > b (same width, least significant first)."""
    gt = net.gate("A_AND_NOT_B", a[0], b[0])
    for x, y in zip(a[1:], b[1:]):
        here = net.gate("A_AND_NOT_B", x, y)
        same = net.gate("XNOR", x, y)
        gt = net.gate("OR", here, net.gate("AND", same, gt))
    return gt


def vote_circuit(n_classes: int, per_class: int) -> Circuit:
    """The vote of ``n_classes`` groups of ``per_class`` output bits (class-major, as a
    circuit's outputs) as a circuit: its outputs are the index of the first class with the
    most ones, least significant bit first (one bit for two classes). ``meta`` holds the
    gates of each part: ``popcount_gates`` and ``argmax_gates``."""
    for name, v in (("n_classes", n_classes), ("per_class", per_class)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ConfigError(f"vote_circuit: {name} must be an integer ≥ 1, got {v!r}")
    if n_classes < 2:
        raise ConfigError("vote_circuit: a vote needs at least 2 classes")
    net = _Builder(n_classes * per_class)
    counts = [_popcount(net, list(range(c * per_class, (c + 1) * per_class)))
              for c in range(n_classes)]
    n_pop = net.n_gates
    n_idx = max(1, int(n_classes - 1).bit_length())
    # index bits of the running maximum: None is the constant 0 (class 0's index)
    best, idx = counts[0], [None] * n_idx          # one per_class: equal widths
    for c in range(1, n_classes):
        sel = _greater(net, counts[c], best)
        for j in range(n_idx):
            old = idx[j]
            if (c >> j) & 1:                            # sel ? 1 : old
                idx[j] = sel if old is None else net.gate("OR", sel, old)
            elif old is not None:                       # sel ? 0 : old
                idx[j] = net.gate("A_AND_NOT_B", old, sel)
        if c < n_classes - 1:                           # the last maximum is not needed
            best = [net.gate("OR", net.gate("AND", x, sel), net.gate("A_AND_NOT_B", y, sel))
                    for x, y in zip(counts[c], best)]
    return Circuit(n_inputs=net.n_inputs, ops=np.asarray(net.ops, dtype=np.uint8),
                   a=np.asarray(net.a, dtype=np.int64), b=np.asarray(net.b, dtype=np.int64),
                   outputs=np.asarray(idx, dtype=np.int64), n_classes=1,
                   meta={"kind": "vote", "popcount_gates": n_pop,
                         "argmax_gates": net.n_gates - n_pop})


def vote_gates(circuit: Circuit) -> dict:
    """Two-input gates of ``circuit``'s class vote: ``popcount``, ``argmax`` and ``total``
    (see :func:`vote_circuit`); all 0 for a one-class circuit, which has no vote."""
    if circuit.n_classes < 2:
        return {"popcount": 0, "argmax": 0, "total": 0}
    v = vote_circuit(circuit.n_classes, circuit.n_outputs // circuit.n_classes)
    return {"popcount": v.meta["popcount_gates"], "argmax": v.meta["argmax_gates"],
            "total": v.n_gates}
