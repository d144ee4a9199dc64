"""torchlogix's 4- and 6-input LUTs (``lut_rank``) as kairo two-input gates: the truth tables
its eval forward computes from warp and light weights (``kairo.logic.lut_tables``) and their
synthesis into gates (``kairo.logic.lut_gates``). Imports of whole LUT networks are tested in
test_import.py."""

from __future__ import annotations

import numpy as np
import pytest

from kairo import DataError
from kairo.logic import GATE_NAMES, TRUTH, gate_ops, lut_gates, lut_tables


def _lut_values(gates, out, rank):
    """The truth table a gate list computes, every input combination at once."""
    c = np.arange(1 << rank)
    v = [(c >> (rank - 1 - j)) & 1 for j in range(rank)]
    for op, a, b in gates:
        v.append((int(TRUTH[op]) >> (2 * v[a] + v[b])) & 1)
    return int(sum(int(bit) << i for i, bit in enumerate(v[out])))


def test_lut_gates_compute_their_table():
    """Every 1-, 2- and 3-input table, and random 4-, 5- and 6-input ones."""
    rng = np.random.default_rng(0)
    tables = [(r, t) for r in (1, 2, 3) for t in range(1 << (1 << r))]
    tables += [(r, int(t)) for r in (4, 5) for t in rng.integers(0, 1 << (1 << r), 300)]
    tables += [(6, int(rng.integers(0, 1 << 62)) * 4 + int(rng.integers(0, 4)))
               for _ in range(200)]
    for r, t in tables:
        gates, out = lut_gates(t, r)
        assert out >= r and _lut_values(gates, out, r) == t, (r, t)
        assert all(a < r + g and b < r + g for g, (_, a, b) in enumerate(gates))


def test_lut_gates_known_sizes():
    bits = lambda f: int(sum(int(f(i)) << i for i in range(64)))          # noqa: E731
    assert len(lut_gates(bits(lambda i: i == 63), 6)[0]) == 5            # AND of six
    assert len(lut_gates(bits(lambda i: bin(i).count("1") % 2), 6)[0]) == 5   # XOR of six
    assert len(lut_gates(bits(lambda i: (i >> 2) & 1), 6)[0]) == 1       # input 3 passed on
    assert lut_gates(0, 6)[0] == [(GATE_NAMES.index("FALSE"), 0, 0)]
    assert lut_gates((1 << 64) - 1, 6)[0] == [(GATE_NAMES.index("TRUE"), 0, 0)]
    # a 4:1 multiplexer (inputs 0, 1 select among 2…5): three 2:1 multiplexers
    mux = bits(lambda i: (i >> (3 - (i >> 4))) & 1)
    assert len(lut_gates(mux, 6)[0]) <= 9
    with pytest.raises(DataError, match=r"4-input truth table must be an int in \[0, 2\*\*16\)"):
        lut_gates(1 << 16, 4)


@pytest.mark.parametrize("rank", [2, 4, 6])
def test_lut_tables_are_torchlogix_eval_forward(rank):
    """warp: the sign of torchlogix's Walsh sum, term by term in its order in float32 (with
    coefficients that cancel in exact arithmetic but not in float32); light: weight > 0."""
    rng = np.random.default_rng(rank)
    n = 1 << rank
    w = rng.normal(size=(50, n)).astype(np.float32)
    w[0] = 0.0
    w[0, 0], w[0, n - 1], w[0, 1] = 1e8, -1e8, 1.0                # 1e8 + 1 − 1e8 rounds
    want = np.zeros(50, dtype=np.uint64)
    for c in range(n):
        x = [1 - 2 * ((c >> (rank - 1 - j)) & 1) for j in range(rank)]
        s = np.zeros(50, np.float32)
        for i in range(n):
            term = np.float32(np.prod([x[j] for j in range(rank) if (i >> (rank - 1 - j)) & 1]))
            s = (s + w[:, i] * term).astype(np.float32)
        want |= ((-s) > 0).astype(np.uint64) << np.uint64(c)
    assert np.array_equal(lut_tables(w, "warp"), want)
    light = sum(((w[:, c] > 0).astype(np.uint64) << np.uint64(c)) for c in range(n))
    assert np.array_equal(lut_tables(w, "light"), light)
    if rank == 2:            # the two-input gates read the same tables
        assert np.array_equal(TRUTH[gate_ops(w, "warp")], lut_tables(w, "warp"))
    with pytest.raises(DataError, match="NaN"):
        lut_tables(np.full((2, n), np.nan, np.float32), "warp")
    with pytest.raises(DataError, match=r"k in 2, 4, 6, got torch.float32 \(3, 8\)"):
        lut_tables(np.zeros((3, 8), np.float32), "light")
