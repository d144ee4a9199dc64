"""k-input lookup tables (torchlogix's ``lut_rank`` 4 and 6 neurons) as two-input gates.

A truth table of ``k`` inputs is an int of ``2**k`` bits: bit ``i`` is the output when input
``j`` is bit ``k − 1 − j`` of ``i`` (input 0 the most significant, as kairo's two-input
``TRUTH`` puts ``a`` at bit 2a + b, and as torchlogix orders its basis).

:func:`lut_tables` computes the tables a torchlogix layer's weights pick in its eval forward,
with torch in the weights' dtype and torchlogix's order of summation, so a coefficient sum that
is 0 in exact arithmetic but not in float comes out as torchlogix's. :func:`lut_gates` turns one
table into two-input gates by Shannon expansion: inputs the function ignores are dropped, each
split takes the input whose cofactors are cheapest (a constant or complementary cofactor costs
one gate, a multiplexer three), and the cost of every sub-table is memoized, so a 6-input LUT is
at most 3·(2⁴ − 1) + 16 = 61 gates and usually far fewer. NOTs cost nothing here:
:func:`~kairo.logic.simplify` folds them into the polarity of the gates that read them.
Written by hand because the exact minimum is a SAT problem per table, and ABC (through Yosys)
would have to be run on the whole network at once and its answer mapped back gate by gate.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from kairo._errors import DataError
from kairo.logic._gates import N_GATES, TRUTH

__all__ = ["LUT_RANKS", "lut_tables", "lut_gates"]

LUT_RANKS = (2, 4, 6)                      # torchlogix's Walsh and light bases
_OP_OF_TRUTH = [0] * N_GATES
for _op, _t in enumerate(TRUTH.tolist()):
    _OP_OF_TRUTH[_t] = _op
_OP = {name: _OP_OF_TRUTH[t] for name, t in (
    ("FALSE", 0b0000), ("TRUE", 0b1111), ("A", 0b1100), ("NOT_A", 0b0011), ("AND", 0b1000),
    ("OR", 0b1110), ("XOR", 0b0110), ("A_AND_NOT_B", 0b0100))}


def lut_tables(weights, parametrization: str) -> np.ndarray:
    """uint64 truth tables of a torchlogix ``warp`` or ``light`` layer's weights
    [out, 2**k] (k = 2, 4 or 6), as its eval forward computes them.

    ``warp``: with X_j = 1 − 2·x_j in the weights' dtype, s = Σ_i w_i·Π_{j ∈ i} X_j summed
    left to right over i = 0 … 2**k − 1 (basis term i multiplies the inputs whose bit is set in
    i, input 0 the most significant); the output is 1 where −s > 0. ``light``: entry i is 1
    where w_i > 0."""
    import torch

    w = torch.as_tensor(weights)
    if parametrization not in ("warp", "light"):
        raise DataError(f"lut_tables reads warp or light weights, not {parametrization!r}")
    width = int(w.shape[1]) if w.ndim == 2 else 0
    k = width.bit_length() - 1
    if w.ndim != 2 or k not in LUT_RANKS or width != 1 << k or not w.is_floating_point():
        raise DataError(f"{parametrization} weights must be a float [n, 2**k] array with k in "
                        f"{', '.join(map(str, LUT_RANKS))}, got {w.dtype} {tuple(w.shape)}")
    if torch.isnan(w).any():
        n = int(torch.isnan(w).any(1).nonzero()[0, 0])
        raise DataError(f"gate {n}: its weights are NaN (a diverged model?)")
    table = torch.zeros(w.shape[0], dtype=torch.int64)
    # basis[c, i] = Π_{j ∈ i} X_j at input combination c: ±1, exact in any float dtype
    bits = (np.arange(width)[:, None] >> np.arange(k - 1, -1, -1)) & 1        # [c or i, j]
    basis = np.prod(np.where(bits[None, :, :] == 1, 1 - 2 * bits[:, None, :], 1), axis=2)
    for c in range(width):
        if parametrization == "light":
            bit = w[:, c] > 0
        else:
            s = w[:, 0] * float(basis[c, 0])
            for i in range(1, width):                    # left to right, as torchlogix sums
                s = s + w[:, i] * float(basis[c, i])
            bit = (-s) > 0
        table |= bit.to(torch.int64) << c
    return table.numpy().astype(np.uint64)


def _cofactors(n: int, t: int, j: int) -> tuple[int, int]:
    """(f with input j = 0, f with input j = 1) of an n-input table, as (n−1)-input tables."""
    step = 1 << (n - 1 - j)
    f0 = f1 = 0
    out = 0
    for i in range(1 << n):
        if i & step:
            continue
        f0 |= ((t >> i) & 1) << out
        f1 |= ((t >> (i | step)) & 1) << out
        out += 1
    return f0, f1


@lru_cache(maxsize=1 << 16)
def _reduced(n: int, t: int) -> tuple[tuple[int, ...], int]:
    """The inputs (positions) the table depends on, and the table over those alone."""
    keep = list(range(n))
    j = 0
    while j < len(keep):
        f0, f1 = _cofactors(len(keep), t, j)
        if f0 == f1:
            t = f0
            del keep[j]
        else:
            j += 1
    return tuple(keep), t


@lru_cache(maxsize=1 << 16)
def _plan(n: int, t: int) -> tuple[int, int]:
    """(gates, split input) for a table that depends on all its n ≥ 3 inputs."""
    full = (1 << (1 << (n - 1))) - 1
    best = None
    for j in range(n):
        f0, f1 = _cofactors(n, t, j)
        if f0 in (0, full):
            cost = 1 + _cost(n - 1, f1)
        elif f1 in (0, full) or f1 == f0 ^ full:
            cost = 1 + _cost(n - 1, f0)
        else:
            cost = 3 + _cost(n - 1, f0) + _cost(n - 1, f1)
        if best is None or cost < best[0]:
            best = (cost, j)
    return best


def _cost(n: int, t: int) -> int:
    keep, t = _reduced(n, t)
    return len(keep) - 1 if len(keep) <= 2 else _plan(len(keep), t)[0]


def lut_gates(table: int, rank: int) -> tuple[list[tuple[int, int, int]], int]:
    """Two-input gates computing an n-input truth table: ``(gates, out)``, each gate
    ``(op, a, b)`` reading slots (0 … rank − 1 the LUT's inputs, rank + g the g-th gate), and
    ``out`` the slot of the result — always a gate, so every LUT is a node of its own."""
    table = int(table)
    if not 1 <= rank <= 6 or not 0 <= table < 1 << (1 << rank):
        raise DataError(f"a {rank}-input truth table must be an int in [0, 2**{1 << rank}), "
                        f"got {table}")
    gates: list[tuple[int, int, int]] = []
    memo: dict[tuple, int] = {}

    def gate(op: str, a: int, b: int) -> int:
        gates.append((_OP[op], a, b))
        return rank + len(gates) - 1

    def build(slots: tuple[int, ...], t: int) -> int:
        """The slot of the function t of these slots (which it all depends on), or its NOT
        as a gate."""
        if (slots, t) in memo:
            return memo[slots, t]
        n = len(slots)
        if n == 1:
            out = slots[0] if t == 0b10 else gate("NOT_A", slots[0], slots[0])
        elif n == 2:
            gates.append((_OP_OF_TRUTH[t], slots[0], slots[1]))
            out = rank + len(gates) - 1
        else:
            j = _plan(n, t)[1]
            x, rest = slots[j], slots[:j] + slots[j + 1:]
            f0, f1 = _cofactors(n, t, j)
            full = (1 << (1 << (n - 1))) - 1
            sub = lambda f: build(*_sub(rest, n - 1, f))           # noqa: E731
            if f0 == 0:
                out = gate("AND", x, sub(f1))
            elif f0 == full:
                out = gate("OR", gate("NOT_A", x, x), sub(f1))
            elif f1 == 0:
                out = gate("A_AND_NOT_B", sub(f0), x)
            elif f1 == full:
                out = gate("OR", x, sub(f0))
            elif f1 == f0 ^ full:
                out = gate("XOR", x, sub(f0))
            else:
                hi, lo = sub(f1), sub(f0)
                out = gate("OR", gate("AND", x, hi), gate("A_AND_NOT_B", lo, x))
        memo[slots, t] = out
        return out

    slots, t = _sub(tuple(range(rank)), rank, table)
    if not slots:                                 # a constant LUT
        out = gate("TRUE" if t else "FALSE", 0, 0)
    else:
        out = build(slots, t)
        if out < rank:                            # the LUT passes one input through
            out = gate("A", out, out)
    return gates, out


def _sub(slots: tuple[int, ...], n: int, t: int) -> tuple[tuple[int, ...], int]:
    keep, t = _reduced(n, t)
    return tuple(slots[i] for i in keep), t
