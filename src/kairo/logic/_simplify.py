"""Gate-count reduction of a :class:`Circuit` that keeps every output bit-exact.

One forward pass in topological order maps every old node to a *literal* of the new circuit
(a new node with a polarity, or a constant) and does constant propagation, pass-through and
NOT folding and structural hashing at once; dead gates are then dropped and the rest
renumbered. Passes repeat until nothing changes.
"""

from __future__ import annotations

import numpy as np

from kairo.logic._circuit import Circuit
from kairo.logic._gates import N_GATES, TRUTH

__all__ = ["simplify"]

# Truth tables are 4-bit ints, bit (2x + y) the output for inputs x, y (see _gates.TRUTH).
_OP_OF = [0] * N_GATES                      # truth table -> op code
for _op, _t in enumerate(TRUTH.tolist()):
    _OP_OF[_t] = _op
_NEG_A = [((t & 3) << 2) | ((t >> 2) & 3) for t in range(16)]        # f(¬x, y)
_NEG_B = [((t & 5) << 1) | ((t >> 1) & 5) for t in range(16)]        # f(x, ¬y)
_SWAP = [(t & 9) | ((t & 2) << 1) | ((t & 4) >> 1) for t in range(16)]  # f(y, x)

# Literals: 2·node + negated for new nodes; constants are negative so one test spots them.
_FALSE, _TRUE = -2, -1


def _unary(f0: int, f1: int, lit: int) -> int:
    """The literal of f(lit) for the one-variable function with f(0) = f0, f(1) = f1."""
    if f0 == f1:
        return _TRUE if f0 else _FALSE
    if lit < 0:                              # f of a constant is a constant
        return _TRUE if (f1 if lit == _TRUE else f0) else _FALSE
    return lit ^ f0                          # f0 = 1, f1 = 0 is NOT: flip the polarity


def _pass(c: Circuit) -> Circuit:
    """One pass: fold and hash the gates, place the outputs' polarities, drop dead gates."""
    k = int(c.n_inputs)
    out_lits, gates = _fold(c)
    flip = _complement_negated_outputs(gates, out_lits, k)
    outs = _output_nodes(gates, out_lits, flip, k)
    return _without_dead_gates(c, gates, outs)


def _fold(c: Circuit) -> tuple[list[int], tuple[list[int], list[int], list[int]]]:
    """The forward pass in topological order: every old node as a literal of the new circuit
    (constant propagation, pass-through and NOT folding, structural hashing at once).
    Returns the outputs' literals and the new gates (canonical truth table, inputs u < v)."""
    k = int(c.n_inputs)
    ops, aa, bb = c.ops.tolist(), c.a.tolist(), c.b.tolist()
    sig = [2 * i for i in range(k)] + [0] * len(ops)     # old node -> literal
    g_t: list[int] = []                      # new gates: canonical truth table, inputs u < v
    g_u: list[int] = []
    g_v: list[int] = []
    table: dict[int, int] = {}               # structural hash (t, u, v) -> new node
    m = c.n_nodes

    for i, op in enumerate(ops):
        t = int(TRUTH[op])
        la, lb = sig[aa[i]], sig[bb[i]]
        if la < 0:                           # a constant: f(ca, y) is a function of b alone
            s = 2 * (la - _FALSE)
            r = _unary((t >> s) & 1, (t >> (s + 1)) & 1, lb)
        elif lb < 0:                         # b constant: a function of a alone
            s = lb - _FALSE
            r = _unary((t >> s) & 1, (t >> (2 + s)) & 1, la)
        else:
            u, v = la >> 1, lb >> 1
            if la & 1:                       # absorb a negated input into the table
                t = _NEG_A[t]
            if lb & 1:
                t = _NEG_B[t]
            if u == v:                       # f(x, x): only table bits 0 and 3 matter
                r = _unary(t & 1, (t >> 3) & 1, 2 * u)
            else:
                if u > v:
                    u, v, t = v, u, _SWAP[t]
                if _NEG_A[t] == t:           # does not depend on a
                    r = _unary(t & 1, (t >> 1) & 1, 2 * v)
                elif _NEG_B[t] == t:         # does not depend on b
                    r = _unary(t & 1, (t >> 2) & 1, 2 * u)
                else:
                    # Hash f and ¬f as one gate (table with f(0, 0) = 0) so NAND(x, y)
                    # and AND(x, y) share a node; consumers absorb the polarity.
                    neg = t & 1
                    t ^= 15 * neg
                    key = (u * m + v) * 16 + t
                    n = table.get(key)
                    if n is None:
                        n = k + len(g_t)
                        table[key] = n
                        g_t.append(t)
                        g_u.append(u)
                        g_v.append(v)
                    r = 2 * n + neg
        sig[k + i] = r

    return [sig[o] for o in c.outputs.tolist()], (g_t, g_u, g_v)


def _complement_negated_outputs(gates, out_lits: list[int], k: int) -> list[bool]:
    """Outputs are node ids, so a negated literal there needs a real gate. A gate wanted by
    the outputs only negated is emitted complemented (its consumers see the flip, its truth
    table in ``gates`` is rewritten in place); which gates were, by new gate."""
    g_t, g_u, g_v = gates
    n_fwd = len(g_t)
    want = [0] * n_fwd                       # bit 0: outputs want it plain, bit 1: negated
    for lit in out_lits:
        if lit >= 2 * k:
            want[(lit >> 1) - k] |= 1 << (lit & 1)
    flip = [w == 2 for w in want]
    for j in range(n_fwd):
        t, u, v = g_t[j], g_u[j], g_v[j]
        if u >= k and flip[u - k]:
            t = _NEG_A[t]
        if v >= k and flip[v - k]:
            t = _NEG_B[t]
        if flip[j]:
            t ^= 15
        g_t[j] = t
    return flip


def _output_nodes(gates, out_lits: list[int], flip: list[bool], k: int) -> list[int]:
    """The node driving each output. A literal no node drives as is gets one gate, appended
    to ``gates``: a constant, a NOT of an input, or the complemented twin of a gate wanted in
    both polarities. Either way no gate is added that the old circuit did not already pay
    for."""
    g_t, g_u, g_v = gates
    extra: dict[int, int] = {}               # literal -> gate that drives it at an output
    outs = []
    for lit in out_lits:
        if lit >= 0 and not lit & 1:
            outs.append(lit >> 1)
            continue
        node = lit >> 1
        if lit >= 2 * k and flip[node - k]:
            outs.append(node)
            continue
        n = extra.get(lit)
        if n is None:
            n = k + len(g_t)
            extra[lit] = n
            if lit < 0:                      # at most one FALSE and one TRUE gate
                g_t.append(15 if lit == _TRUE else 0)
                g_u.append(0)
                g_v.append(0)
            elif node < k:                   # ¬input: a NOT gate is the only way
                g_t.append(int(TRUTH[12]))
                g_u.append(node)
                g_v.append(node)
            else:                            # complemented twin on the same inputs
                j = node - k
                g_t.append(g_t[j] ^ 15)
                g_u.append(g_u[j])
                g_v.append(g_v[j])
        outs.append(n)
    return outs


def _without_dead_gates(c: Circuit, gates, outs: list[int]) -> Circuit:
    """The new circuit of ``gates`` with outputs ``outs``, without the gates no output reads
    (one backward sweep marks what the outputs read), renumbered."""
    g_t, g_u, g_v = gates
    k = int(c.n_inputs)
    n_new = len(g_t)
    live = [False] * (k + n_new)
    for o in outs:
        live[o] = True
    for j in range(n_new - 1, -1, -1):
        if live[k + j]:
            live[g_u[j]] = True
            live[g_v[j]] = True
    keep = np.flatnonzero(np.asarray(live[k:], dtype=bool))
    remap = np.arange(k + n_new, dtype=np.int64)
    remap[k + keep] = k + np.arange(keep.size)
    t_arr = np.asarray(g_t, dtype=np.int64)[keep]
    return Circuit(n_inputs=k, ops=np.asarray(_OP_OF, dtype=np.uint8)[t_arr],
                   a=remap[np.asarray(g_u, dtype=np.int64)[keep]],
                   b=remap[np.asarray(g_v, dtype=np.int64)[keep]],
                   outputs=remap[np.asarray(outs, dtype=np.int64)],
                   n_classes=c.n_classes, meta=dict(c.meta))


def _same(x: Circuit, y: Circuit) -> bool:
    return (np.array_equal(x.ops, y.ops) and np.array_equal(x.a, y.a)
            and np.array_equal(x.b, y.b) and np.array_equal(x.outputs, y.outputs))


def simplify(circuit: Circuit, max_passes: int = 20) -> tuple[Circuit, dict]:
    """An equivalent, usually smaller circuit and a report {"before", "after", "passes"}.

    Same inputs, classes and outputs (in order), bit-exact for every input; never more gates.
    """
    cur, passes = circuit, 0
    while passes < max_passes:
        nxt = _pass(cur)
        passes += 1
        if _same(nxt, cur):
            break
        cur = nxt
    return cur, {"before": circuit.stats(), "after": cur.stats(), "passes": passes}
