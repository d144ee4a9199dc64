"""The 16 two-input Boolean functions and their real-valued relaxations.

Every relaxed gate is affine in {1, a, b, ab}: g(a, b) = c₀ + c_a·a + c_b·b + c_ab·ab, with
the product ab as the probabilistic AND of independent inputs in [0, 1]. A neuron's output is
the softmax-weighted mixture of the 16 gates, i.e. the same affine form with coefficients
p @ COEFFS, so a layer needs four multiply-adds per neuron whatever the number of gates.

Op codes follow the order of Petersen et al. (2022), Table 1 (the ordering difflogic uses):
0 FALSE, 1 AND, 2 A∧¬B, 3 A, 4 ¬A∧B, 5 B, 6 XOR, 7 OR, 8 NOR, 9 XNOR, 10 ¬B, 11 A∨¬B, 12 ¬A,
13 ¬A∨B, 14 NAND, 15 TRUE.
"""

from __future__ import annotations

import numpy as np

__all__ = ["N_GATES", "GATE_NAMES", "COEFFS", "TRUTH", "PASS_A", "gate_bits", "relaxed"]

N_GATES = 16
GATE_NAMES = ("FALSE", "AND", "A_AND_NOT_B", "A", "NOT_A_AND_B", "B", "XOR", "OR", "NOR",
              "XNOR", "NOT_B", "A_OR_NOT_B", "NOT_A", "NOT_A_OR_B", "NAND", "TRUE")
PASS_A = 3      # the pass-through gate biased by residual initialization

# (c0, ca, cb, cab) per op
COEFFS = np.array([
    [0, 0, 0, 0],     # FALSE
    [0, 0, 0, 1],     # AND          ab
    [0, 1, 0, -1],    # A ∧ ¬B       a − ab
    [0, 1, 0, 0],     # A
    [0, 0, 1, -1],    # ¬A ∧ B       b − ab
    [0, 0, 1, 0],     # B
    [0, 1, 1, -2],    # XOR          a + b − 2ab
    [0, 1, 1, -1],    # OR           a + b − ab
    [1, -1, -1, 1],   # NOR          1 − (a + b − ab)
    [1, -1, -1, 2],   # XNOR         1 − (a + b − 2ab)
    [1, 0, -1, 0],    # ¬B
    [1, 0, -1, 1],    # A ∨ ¬B       1 − b + ab
    [1, -1, 0, 0],    # ¬A
    [1, -1, 0, 1],    # ¬A ∨ B       1 − a + ab
    [1, 0, 0, -1],    # NAND
    [1, 0, 0, 0],     # TRUE
], dtype=np.float64)


def relaxed(op: int, a, b):
    """The relaxed gate ``op`` on real inputs (NumPy or torch arrays)."""
    c0, ca, cb, cab = COEFFS[op]
    return c0 + ca * a + cb * b + cab * a * b


def _truth_table() -> np.ndarray:
    """TRUTH[op] is a 4-bit int: bit (2a + b) is the output for inputs a, b ∈ {0, 1}."""
    t = np.zeros(N_GATES, dtype=np.uint8)
    for op in range(N_GATES):
        for a in (0, 1):
            for b in (0, 1):
                if relaxed(op, a, b) > 0.5:
                    t[op] |= 1 << (2 * a + b)
    return t


TRUTH = _truth_table()


def gate_bits(op: int, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Gate ``op`` on bit-packed unsigned words (every bit an independent sample)."""
    if op == 0:
        return np.zeros_like(a)
    if op == 1:
        return a & b
    if op == 2:
        return a & ~b
    if op == 3:
        return a.copy()
    if op == 4:
        return ~a & b
    if op == 5:
        return b.copy()
    if op == 6:
        return a ^ b
    if op == 7:
        return a | b
    if op == 8:
        return ~(a | b)
    if op == 9:
        return ~(a ^ b)
    if op == 10:
        return ~b
    if op == 11:
        return a | ~b
    if op == 12:
        return ~a
    if op == 13:
        return ~a | b
    if op == 14:
        return ~(a & b)
    if op == 15:
        return ~np.zeros_like(a)
    raise ValueError(f"unknown gate op {op}")
