"""Circuit (netlist, reference evaluation, JSON) and simplify (equivalence, minimality)."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

from kairo import DataError, KairoError
from kairo.logic import GATE_NAMES, N_GATES, TRUTH, Circuit, pack_bits, simplify, unpack_bits
from kairo.logic._circuit import FORMAT, VERSION
from kairo.logic._gates import relaxed

# Truth-table helpers derived here, independently of the code under test.
_T = [int(t) for t in TRUTH]
_OP_OF = {t: op for op, t in enumerate(_T)}
# swapping the inputs swaps table bits 1 (a=0, b=1) and 2 (a=1, b=0)
SWAP_OP = [_OP_OF[(t & 9) | ((t & 2) << 1) | ((t & 4) >> 1)] for t in _T]
SYMMETRIC = {op for op in range(N_GATES) if SWAP_OP[op] == op}
DEPENDS_ON_A = {op for op in range(N_GATES)
                if any(((_T[op] >> (2 + b)) & 1) != ((_T[op] >> b) & 1) for b in (0, 1))}
DEPENDS_ON_B = {op for op in range(N_GATES)
                if any(((_T[op] >> (2 * a + 1)) & 1) != ((_T[op] >> (2 * a)) & 1)
                       for a in (0, 1))}
BINARY = DEPENDS_ON_A & DEPENDS_ON_B          # the ten ops that read both inputs
CONST = {0, 15}
NOT_OPS = {10, 12}
PASS = {3, 5}
SPECIAL = np.array([0, 15, 3, 5, 10, 12])     # constants, pass-throughs, NOTs


def op(name: str) -> int:
    return GATE_NAMES.index(name)


def all_inputs(k: int) -> np.ndarray:
    return ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1).astype(bool)


def random_circuit(rng, n_inputs, n_gates, n_outputs=8, n_classes=1, *, special=0.0,
                   dup=0.0, same=0.0, local=0, binary=False) -> Circuit:
    """A random netlist: random ops, inputs drawn from earlier nodes, random outputs.

    ``special`` is the share of constant / pass-through / NOT gates, ``dup`` of gates that
    copy an earlier gate (half of them with inputs swapped and the op mirrored), ``same`` of
    gates whose two inputs are one node; ``local`` > 0 draws half the inputs from that many
    preceding nodes so chains get deep. ``binary`` draws the other ops from the ten that read
    both inputs, so that deep random circuits do not collapse to constants.
    """
    own = n_inputs + np.arange(n_gates)
    ops = (rng.choice(sorted(BINARY), n_gates) if binary
           else rng.integers(0, N_GATES, n_gates))
    sp = rng.random(n_gates) < special
    ops[sp] = rng.choice(SPECIAL, sp.sum())

    def pick():
        far = (rng.random(n_gates) * own).astype(np.int64)
        if not local:
            return far
        near = np.maximum(own - rng.integers(1, local + 1, n_gates), 0)
        return np.where(rng.random(n_gates) < 0.5, near, far)

    a, b = pick(), pick()
    b = np.where(rng.random(n_gates) < same, a, b)
    for i in np.flatnonzero(rng.random(n_gates) < dup):
        if i == 0:
            continue
        j = int(rng.integers(0, i))
        if rng.random() < 0.5:
            ops[i], a[i], b[i] = ops[j], a[j], b[j]
        else:
            ops[i], a[i], b[i] = SWAP_OP[ops[j]], b[j], a[j]
    n_out = n_outputs - n_outputs % n_classes
    outputs = rng.integers(0, n_inputs + n_gates, n_out)
    return Circuit(n_inputs, ops, a, b, outputs, n_classes)


def naive_evaluate(c: Circuit, x: np.ndarray) -> np.ndarray:
    """Gate by gate on unpacked bools through the relaxed (real-valued) gates."""
    vals = [x[:, i].astype(np.float64) for i in range(c.n_inputs)]
    for o, a, b in zip(c.ops.tolist(), c.a.tolist(), c.b.tolist(), strict=True):
        vals.append(relaxed(o, vals[a], vals[b]))
    return np.stack([vals[o] for o in c.outputs.tolist()], axis=1) > 0.5


def sample_evaluate(c: Circuit, row) -> list[bool]:
    """One sample in pure Python through TRUTH."""
    vals = [bool(v) for v in row]
    for o, a, b in zip(c.ops.tolist(), c.a.tolist(), c.b.tolist(), strict=True):
        vals.append(bool((_T[o] >> (2 * vals[a] + vals[b])) & 1))
    return [vals[o] for o in c.outputs.tolist()]


# ---------------------------------------------------------------------------- gates, bits
@pytest.mark.parametrize("code", range(N_GATES))
def test_every_op_matches_truth(code):
    c = Circuit(2, [code], [0], [1], [2])
    x = np.array([[a, b] for a in (0, 1) for b in (0, 1)])
    got = c.evaluate(x)[:, 0]
    want = [bool((_T[code] >> (2 * a + b)) & 1) for a, b in x]
    assert got.tolist() == want
    assert [bool(relaxed(code, a, b) > 0.5) for a, b in x] == want
    # the same op with inputs swapped is its mirror
    sw = Circuit(2, [SWAP_OP[code]], [1], [0], [2])
    assert np.array_equal(sw.evaluate(x), c.evaluate(x))


def test_truth_table_names():
    assert _T[op("AND")] == 0b1000 and _T[op("OR")] == 0b1110 and _T[op("XOR")] == 0b0110
    assert _T[op("A")] == 0b1100 and _T[op("B")] == 0b1010 and _T[op("NOT_A")] == 0b0011
    assert sorted(_T) == list(range(16))
    assert BINARY == {op(n) for n in ("AND", "A_AND_NOT_B", "NOT_A_AND_B", "XOR", "OR", "NOR",
                                      "XNOR", "A_OR_NOT_B", "NOT_A_OR_B", "NAND")}
    assert SYMMETRIC == {op(n) for n in ("FALSE", "AND", "XOR", "OR", "NOR", "XNOR", "NAND",
                                         "TRUE")}


@pytest.mark.parametrize("n", [0, 1, 63, 64, 65, 1000])
def test_pack_unpack_round_trip(n):
    rng = np.random.default_rng(n)
    x = rng.random((n, 5)) < 0.5
    w = pack_bits(x)
    assert w.dtype == np.uint64 and w.shape == (5, -(-n // 64))
    assert np.array_equal(unpack_bits(w, n), x)
    # sample i is bit i % 64 of word i // 64
    for i in range(min(n, 70)):
        assert bool((int(w[2, i // 64]) >> (i % 64)) & 1) == x[i, 2]
    # padding bits are zero
    if n % 64:
        assert int(w[:, -1].max()) >> (n % 64) == 0


# ---------------------------------------------------------------------------- evaluation
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_circuit_matches_naive(seed):
    rng = np.random.default_rng(seed)
    c = random_circuit(rng, 12, 3000, n_outputs=40, n_classes=4, local=20)
    x = rng.random((300, 12)) < 0.5
    got = c.evaluate(x)
    assert got.dtype == bool and got.shape == (300, 40)
    assert np.array_equal(got, naive_evaluate(c, x))
    for i in range(5):
        assert got[i].tolist() == sample_evaluate(c, x[i])
    # integer 0/1 inputs give the same as bools
    assert np.array_equal(c.evaluate(x.astype(np.int8)), got)
    s = c.scores(x)
    assert s.shape == (300, 4)
    assert np.array_equal(s, got.reshape(300, 4, 10).sum(axis=2))
    assert np.array_equal(c.predict(x), np.argmax(s, axis=1))


def test_scores_and_first_argmax():
    # 2 inputs, 3 classes × 2 outputs: class 0 = (x, y), class 1 = (x, x), class 2 = (0, y)
    c = Circuit(2, [op("FALSE")], [0], [0], [0, 1, 0, 0, 2, 1], n_classes=3)
    x = np.array([[0, 0], [1, 0], [0, 1], [1, 1]])
    assert c.scores(x).tolist() == [[0, 0, 0], [1, 2, 0], [1, 0, 1], [2, 2, 1]]
    assert c.predict(x).tolist() == [0, 1, 0, 0]     # ties go to the first class


def test_depths_on_chains():
    # x0 → NOT → NOT → NOT → NOT → NOT: depths 1..5
    c = Circuit(1, [op("NOT_A")] * 5, [0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [5])
    assert c.depths().tolist() == [0, 1, 2, 3, 4, 5]
    assert c.depth() == 5
    # depth counts only what the outputs read; a gate takes 1 + its deeper input
    c = Circuit(2, [op("AND"), op("OR"), op("XOR"), op("NAND")], [0, 2, 3, 0], [1, 1, 0, 1],
                [2, 5])
    assert c.depths().tolist() == [0, 0, 1, 2, 3, 1]
    assert c.depth() == 1
    assert Circuit(2, [op("AND")], [0], [1], [0, 1]).depth() == 0
    st = Circuit(2, [op("AND"), op("AND"), op("OR")], [0, 1, 2], [1, 0, 3], [4]).stats()
    assert st == {"n_inputs": 2, "n_gates": 3, "n_outputs": 1, "n_classes": 1, "depth": 2,
                  "gates_by_op": {"AND": 2, "OR": 1}}


# ---------------------------------------------------------------------------- JSON
def test_json_round_trip(tmp_path):
    rng = np.random.default_rng(7)
    c = random_circuit(rng, 9, 500, n_outputs=30, n_classes=3)
    c = Circuit(c.n_inputs, c.ops, c.a, c.b, c.outputs, c.n_classes,
                meta={"name": "r", "acc": 0.5, "layers": [1, 2]})
    p = c.save(tmp_path / "c.json")
    assert p == tmp_path / "c.json"
    assert [f.name for f in tmp_path.iterdir()] == ["c.json"]      # no temp file left
    d = json.loads(p.read_text())
    assert isinstance(d, dict) and d["format"] == FORMAT == "kairo.circuit"
    assert d["version"] == VERSION == 1
    assert d == c.to_dict()
    r = Circuit.load(p)
    for name in ("ops", "a", "b", "outputs"):
        assert np.array_equal(getattr(r, name), getattr(c, name))
        assert getattr(r, name).dtype == getattr(c, name).dtype
    assert (r.n_inputs, r.n_classes, r.meta) == (9, 3, c.meta)
    x = all_inputs(9)
    assert np.array_equal(r.evaluate(x), c.evaluate(x))
    # a circuit without gates survives too
    e = Circuit(3, [], [], [], [2, 0])
    assert Circuit.from_dict(json.loads(json.dumps(e.to_dict()))).n_gates == 0


def test_save_into_missing_folder(tmp_path):
    c = Circuit(2, [1], [0], [1], [2])
    with pytest.raises(KairoError, match="does not exist"):
        c.save(tmp_path / "nope" / "c.json")


def test_load_missing_file(tmp_path):
    with pytest.raises(KairoError, match="does not exist"):
        Circuit.load(tmp_path / "nope.json")


# ---------------------------------------------------------------------------- bad input
def test_truncated_json(tmp_path):
    c = random_circuit(np.random.default_rng(3), 4, 50)
    p = c.save(tmp_path / "c.json")
    text = p.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(DataError, match="truncated"):
        Circuit.load(p)


def test_binary_file(tmp_path):
    p = tmp_path / "c.json"
    p.write_bytes(b"\xff\xfe\x00\x81")
    with pytest.raises(DataError):
        Circuit.load(p)


@pytest.mark.parametrize("a, b", [(0, 5), (7, 1), (-1, 0), (0, -3)])
def test_gate_refers_to_missing_node(a, b):
    with pytest.raises(DataError, match="does not exist"):
        Circuit(2, [1, 1], [0, a], [1, b], [3])


@pytest.mark.parametrize("a, b", [(2, 0), (0, 2), (3, 1)])
def test_gate_refers_to_itself_or_later(a, b):
    # gate 0 is node 2; node 3 is the next gate
    with pytest.raises(DataError, match="cycle"):
        Circuit(2, [1, 1], [a, 0], [b, 1], [3])


@pytest.mark.parametrize("code", [16, 99, 255])
def test_unknown_op(code):
    with pytest.raises(DataError, match=f"unknown op {code}"):
        Circuit(2, [1, code], [0, 0], [1, 1], [3])
    d = Circuit(2, [1, 1], [0, 0], [1, 1], [3]).to_dict()
    d["gates"][1][0] = code
    with pytest.raises(DataError, match="unknown op"):
        Circuit.from_dict(d)


@pytest.mark.parametrize("n_classes", [2, 4, 0, -1, 1.5])
def test_class_groups_must_divide(n_classes):
    with pytest.raises(DataError, match="class groups do not divide"):
        Circuit(2, [1], [0], [1], [0, 1, 2], n_classes=n_classes)


def test_other_bad_structure():
    with pytest.raises(DataError, match="no outputs"):
        Circuit(2, [1], [0], [1], [])
    with pytest.raises(DataError, match="output 1 refers to node 9"):
        Circuit(2, [1], [0], [1], [2, 9])
    with pytest.raises(DataError, match="n_inputs"):
        Circuit(0, [], [], [], [0])
    with pytest.raises(DataError, match="1 ops but 2 a-inputs"):
        Circuit(2, [1], [0, 1], [1], [2])
    with pytest.raises(DataError, match="integers"):
        Circuit(2, [1], [0.0], [1], [2])
    with pytest.raises(DataError, match="1-D"):
        Circuit(2, [[1]], [[0]], [[1]], [2])


@pytest.mark.parametrize("change, fragment", [
    ({"format": "kairo.model"}, "not a kairo circuit"),
    ({"format": None}, "not a kairo circuit"),
    ({"version": 2}, "version 2 is not supported"),
    ({"version": "1"}, "version '1' is not supported"),
    ({"gates": [[1, 0]]}, "triples"),
    ({"gates": [1, 0, 1]}, "triples"),
    ({"gates": [[1, 0, 1], [1, 0]]}, "triples"),
    ({"outputs": [0, 1, 7]}, "does not exist"),
    ({"n_classes": 2}, "class groups do not divide"),
    ({"gates": [[1, 0, 2]]}, "cycle"),
])
def test_bad_dicts(tmp_path, change, fragment):
    d = {**Circuit(2, [1], [0], [1], [0, 1, 2]).to_dict(), **change}
    with pytest.raises(DataError, match=fragment):
        Circuit.from_dict(d)
    p = tmp_path / "c.json"
    p.write_text(json.dumps(d))
    with pytest.raises(DataError, match=f"circuit file .*{fragment}"):
        Circuit.load(p)


def test_missing_field_and_not_a_dict(tmp_path):
    d = Circuit(2, [1], [0], [1], [2]).to_dict()
    del d["outputs"]
    with pytest.raises(DataError, match="missing field 'outputs'"):
        Circuit.from_dict(d)
    p = tmp_path / "c.json"
    p.write_text("[1, 2, 3]")
    with pytest.raises(DataError, match="not a kairo circuit"):
        Circuit.load(p)


@pytest.mark.parametrize("x, fragment", [
    (np.zeros(3, dtype=bool), "shape"),
    (np.zeros((4, 2), dtype=bool), "shape"),
    (np.zeros((4, 3, 1), dtype=bool), "shape"),
    (np.full((4, 3), 2), "0/1"),
    (np.full((4, 3), -1), "0/1"),
    (np.zeros((4, 3)), "0/1"),
    (np.full((4, 3), 0.5), "0/1"),
    (np.array([["0", "1", "0"]]), "0/1"),
])
def test_evaluate_bad_input(x, fragment):
    c = Circuit(3, [1], [0], [1], [3])
    for fn in (c.evaluate, c.scores, c.predict):
        with pytest.raises(KairoError, match=fragment):
            fn(x)


def test_errors_are_value_errors():
    assert issubclass(DataError, KairoError) and issubclass(KairoError, ValueError)
    with pytest.raises(ValueError):
        Circuit(2, [1], [0], [3], [2])


# -------------------------------------------------------- defects in _circuit.py (reported)
def test_op_256_is_rejected():
    with pytest.raises(DataError, match="unknown op"):
        Circuit(2, [256], [0], [1], [2])


def test_negative_op_is_named():
    with pytest.raises(DataError, match="unknown op -1"):
        Circuit(2, [-1], [0], [1], [2])


@pytest.mark.parametrize("field", ["gates", "outputs"])
def test_huge_integer_in_json(field):
    d = Circuit(2, [1], [0], [1], [2]).to_dict()
    if field == "gates":
        d["gates"][0][1] = 2 ** 70
    else:
        d["outputs"] = [2 ** 70]
    with pytest.raises(DataError):
        Circuit.from_dict(d)


def test_fractional_gate_field_is_rejected():
    d = Circuit(2, [1], [0], [1], [2]).to_dict()
    d["gates"][0][0] = 1.7
    with pytest.raises(DataError):
        Circuit.from_dict(d)


def test_scores_on_zero_samples():
    c = Circuit(2, [1], [0], [1], [2, 2], n_classes=2)
    x = np.zeros((0, 2), dtype=bool)
    assert c.evaluate(x).shape == (0, 2)
    assert c.scores(x).shape == (0, 2)
    assert c.predict(x).shape == (0,)


# ---------------------------------------------------------------------------- simplify
def check_simplified(c: Circuit, s: Circuit, x: np.ndarray) -> None:
    """Equivalent on x, no larger, and free of everything simplify removes."""
    assert (s.n_inputs, s.n_classes, s.n_outputs) == (c.n_inputs, c.n_classes, c.n_outputs)
    assert np.array_equal(s.evaluate(x), c.evaluate(x))
    assert s.n_gates <= c.n_gates
    assert s.depth() <= c.depth()
    k, ops, a, b = s.n_inputs, s.ops.tolist(), s.a.tolist(), s.b.tolist()
    outs = set(s.outputs.tolist())
    read = set(a) | set(b)
    consumers = [0] * s.n_nodes
    for i in range(s.n_gates):
        if ops[i] not in CONST:
            consumers[a[i]] += 1
            consumers[b[i]] += 1
    keys = set()
    for i, o in enumerate(ops):
        node = k + i
        assert o not in PASS, f"pass-through gate {i}"
        if o in BINARY:
            assert a[i] != b[i], f"gate {i} reads one node twice"
            key = (o, a[i], b[i]) if a[i] < b[i] else (SWAP_OP[o], b[i], a[i])
            assert key not in keys, f"duplicate gate {i} {key}"
            keys.add(key)
        else:
            # constants and NOTs exist only to drive outputs, never other gates
            assert node in outs and consumers[node] == 0, f"gate {i} op {o} feeds gates"
        if o in CONST:
            assert (a[i], b[i]) == (0, 0)
        assert node in outs or node in read
    assert sum(o == 0 for o in ops) <= 1 and sum(o == 15 for o in ops) <= 1
    # every gate reachable from an output
    live = np.zeros(s.n_nodes, dtype=bool)
    live[list(outs)] = True
    for i in range(s.n_gates - 1, -1, -1):
        if live[k + i]:
            live[a[i]] = live[b[i]] = True
    assert live[k:].all()


CASES = [  # seed, n_inputs, n_gates, special, dup, same, local, binary
    (0, 1, 40, 0.3, 0.2, 0.1, 3, False),
    (1, 2, 200, 0.4, 0.3, 0.1, 5, False),
    (2, 3, 500, 0.3, 0.2, 0.05, 10, False),
    (3, 5, 2000, 0.5, 0.2, 0.1, 10, False),
    (4, 8, 3000, 0.3, 0.3, 0.05, 30, False),
    (5, 10, 3000, 0.2, 0.1, 0.02, 50, False),
    (6, 10, 3000, 0.0, 0.0, 0.0, 0, False),
    (7, 24, 4000, 0.3, 0.2, 0.05, 20, False),
    (8, 64, 3000, 0.6, 0.3, 0.1, 8, False),
    (9, 16, 2000, 0.9, 0.5, 0.2, 4, False),
    (10, 6, 2000, 0.3, 0.2, 0.05, 0, True),
    (11, 10, 4000, 0.4, 0.3, 0.05, 0, True),
    (12, 10, 4000, 0.2, 0.1, 0.02, 100, True),
    (13, 32, 5000, 0.5, 0.3, 0.05, 0, True),
    (14, 100, 5000, 0.3, 0.2, 0.05, 200, True),
]


@pytest.mark.parametrize("seed, k, n, special, dup, same, local, binary", CASES)
def test_simplify_random(seed, k, n, special, dup, same, local, binary):
    rng = np.random.default_rng(seed)
    c = random_circuit(rng, k, n, n_outputs=300, n_classes=3, special=special, dup=dup,
                       same=same, local=local, binary=binary)
    # make many outputs deep gates, where the chains are
    outs = c.outputs.copy()
    outs[: len(outs) // 2] = k + n - 1 - rng.integers(0, min(n, 50), len(outs) // 2)
    c = Circuit(k, c.ops, c.a, c.b, outs, 3, meta={"seed": seed})
    x = all_inputs(k) if k <= 10 else rng.random((4096, k)) < 0.5
    s, rep = simplify(c)
    check_simplified(c, s, x)
    assert s.meta == {"seed": seed}
    assert rep["before"] == c.stats() and rep["after"] == s.stats()
    assert rep["before"]["n_gates"] == c.n_gates and rep["after"]["n_gates"] == s.n_gates
    assert isinstance(rep["passes"], int) and rep["passes"] >= 1
    # idempotent: a second run finds nothing to do
    s2, rep2 = simplify(s)
    for name in ("ops", "a", "b", "outputs"):
        assert np.array_equal(getattr(s2, name), getattr(s, name))
    assert rep2["before"] == rep2["after"] == rep["after"]


def test_simplify_many_small_exhaustive():
    rng = np.random.default_rng(11)
    for _ in range(150):
        k, n = int(rng.integers(1, 5)), int(rng.integers(0, 40))
        c = random_circuit(rng, k, n, n_outputs=int(rng.integers(1, 7)), special=0.4,
                           dup=0.3, same=0.2, local=3)
        s, _ = simplify(c)
        check_simplified(c, s, all_inputs(k))
        assert np.array_equal(simplify(s)[0].ops, s.ops)


def gates(s: Circuit) -> list[tuple[str, int, int]]:
    return [(GATE_NAMES[o], a, b) for o, a, b in zip(s.ops.tolist(), s.a.tolist(),
                                                     s.b.tolist(), strict=True)]


def test_and_with_true_is_the_input():
    c = Circuit(1, [op("TRUE"), op("AND")], [0, 0], [0, 1], [2])
    s, rep = simplify(c)
    assert s.n_gates == 0 and s.outputs.tolist() == [0]
    assert rep["before"]["n_gates"] == 2 and rep["after"]["n_gates"] == 0
    assert rep["after"]["depth"] == 0


def test_xor_with_itself_is_false():
    s, _ = simplify(Circuit(1, [op("XOR")], [0], [0], [1]))
    assert gates(s) == [("FALSE", 0, 0)] and s.outputs.tolist() == [1]


def test_constant_outputs_share_one_gate_each():
    # FALSE, x AND ¬x, TRUE, x OR ¬x, NAND(FALSE, x) as outputs
    c = Circuit(1, [op("FALSE"), op("A_AND_NOT_B"), op("TRUE"), op("A_OR_NOT_B"), op("NAND")],
                [0, 0, 0, 0, 1], [0, 0, 0, 0, 0], [1, 2, 3, 4, 5, 0])
    s, _ = simplify(c)
    assert sorted(gates(s)) == [("FALSE", 0, 0), ("TRUE", 0, 0)]
    x = all_inputs(1)
    assert s.evaluate(x).tolist() == [[0, 0, 1, 1, 1, 0], [0, 0, 1, 1, 1, 1]]


def test_double_not_disappears():
    c = Circuit(2, [op("NOT_A"), op("NOT_B")], [0, 0], [0, 2], [3, 1])
    s, _ = simplify(c)
    assert s.n_gates == 0 and s.outputs.tolist() == [0, 1]


def test_not_feeding_a_gate_is_absorbed():
    # AND(¬a, b)
    c = Circuit(2, [op("NOT_A"), op("AND")], [0, 2], [0, 1], [3])
    s, _ = simplify(c)
    assert gates(s) == [("NOT_A_AND_B", 0, 1)] and s.outputs.tolist() == [2]
    # OR(a, ¬b) with the NOT on the b side, written as a NOT_B gate
    c = Circuit(2, [op("NOT_B"), op("OR")], [1, 0], [1, 2], [3])
    s, _ = simplify(c)
    assert gates(s) == [("A_OR_NOT_B", 0, 1)]


def test_not_of_input_at_output_stays():
    c = Circuit(2, [op("NOT_A"), op("B"), op("AND")], [0, 1, 0], [1, 0, 1], [2, 3, 4])
    s, _ = simplify(c)
    assert sorted(gates(s)) == [("AND", 0, 1), ("NOT_A", 0, 0)]
    check_simplified(c, s, all_inputs(2))


def test_not_of_gate_at_output_is_folded_into_the_gate():
    # g = AND(a, b); outputs ¬g and OR(g, c): g is emitted as NAND, the OR absorbs the flip
    c = Circuit(3, [op("AND"), op("NOT_A"), op("OR")], [0, 3, 3], [1, 3, 2], [4, 5])
    s, _ = simplify(c)
    # (inputs come out in ascending order: OR(¬g, c) is written A∨¬B(c, g))
    assert gates(s) == [("NAND", 0, 1), ("A_OR_NOT_B", 2, 3)]
    check_simplified(c, s, all_inputs(3))
    # wanted in both polarities: the plain gate plus a complemented twin, no NOT
    c = Circuit(2, [op("AND"), op("NOT_A")], [0, 2], [1, 2], [2, 3])
    s, _ = simplify(c)
    assert gates(s) == [("AND", 0, 1), ("NAND", 0, 1)] and s.outputs.tolist() == [2, 3]


def test_swapped_duplicates_merge():
    c = Circuit(2, [op("OR"), op("OR")], [0, 1], [1, 0], [2, 3])
    s, _ = simplify(c)
    assert gates(s) == [("OR", 0, 1)] and s.outputs.tolist() == [2, 2]
    # asymmetric ops merge with their mirror: A∧¬B(x, y) == ¬A∧B(y, x)
    c = Circuit(2, [op("A_AND_NOT_B"), op("NOT_A_AND_B"), op("XOR")], [0, 1, 2], [1, 0, 3],
                [2, 3, 4])
    s, _ = simplify(c)
    assert gates(s)[0] == ("A_AND_NOT_B", 0, 1) and s.outputs.tolist()[:2] == [2, 2]
    assert gates(s)[1] == ("FALSE", 0, 0) and s.n_gates == 2


def test_complements_share_a_gate():
    # AND(x, y) and NAND(x, y) both feed gates: one AND is enough
    c = Circuit(3, [op("AND"), op("NAND"), op("OR"), op("OR")], [0, 0, 3, 4], [1, 1, 2, 2],
                [5, 6])
    s, _ = simplify(c)
    assert s.n_gates == 3
    check_simplified(c, s, all_inputs(3))


def test_pass_throughs_vanish_everywhere():
    # A(x) → B(·, A) → XOR(B, y): the XOR reads the inputs, the outputs see the source
    c = Circuit(2, [op("A"), op("B"), op("XOR")], [0, 1, 3], [1, 2, 1], [2, 3, 4])
    s, _ = simplify(c)
    assert gates(s) == [("XOR", 0, 1)] and s.outputs.tolist() == [0, 0, 2]


def test_simplify_keeps_unchanged_circuit():
    c = Circuit(3, [op("AND"), op("XOR")], [0, 2], [1, 3], [4, 3, 0], n_classes=3)
    s, rep = simplify(c)
    assert gates(s) == gates(c) and s.outputs.tolist() == [4, 3, 0]
    assert rep["before"] == rep["after"]


def test_simplify_100k_gates_is_fast():
    rng = np.random.default_rng(5)
    c = random_circuit(rng, 784, 100_000, n_outputs=5000, n_classes=10, special=0.3,
                       dup=0.1, same=0.02, binary=True)
    t = time.perf_counter()
    s, rep = simplify(c)
    assert time.perf_counter() - t < 5.0
    assert rep["after"]["n_gates"] <= rep["before"]["n_gates"] == 100_000
    x = rng.random((256, 784)) < 0.5
    assert np.array_equal(s.evaluate(x), c.evaluate(x))
