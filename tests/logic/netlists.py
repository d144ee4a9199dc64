"""Seeded random netlists and inputs shared by the back-end, benchmark and FPGA tests, and the
markers that skip a test when a tool is missing (with the command that installs it)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from kairo.logic.backends._simulate import _verilator_major
from kairo.logic import Circuit

HAVE_GCC = shutil.which("gcc") is not None or shutil.which("cc") is not None
HAVE_IVERILOG = shutil.which("iverilog") is not None and shutil.which("vvp") is not None
HAVE_VERILATOR = (shutil.which("verilator") is not None
                  and _verilator_major(shutil.which("verilator")) >= 5)
needs_gcc = pytest.mark.skipif(not HAVE_GCC, reason="no C compiler: apt-get install gcc")
needs_iverilog = pytest.mark.skipif(not HAVE_IVERILOG,
                                    reason="Icarus Verilog missing: apt-get install iverilog")
needs_verilator = pytest.mark.skipif(not HAVE_VERILATOR,
                                     reason="Verilator >= 5 missing: apt-get install verilator")

# the ten ops that read both inputs: deep random circuits built from them rarely collapse to
# constants, so their outputs keep depending on the inputs
TWO_INPUT = np.array([1, 2, 4, 6, 7, 8, 9, 11, 13, 14])


def random_netlist(seed: int, n_inputs: int, n_gates: int, n_classes: int, group: int, *,
                   window: int, p_anywhere: float = 0.25, p_two_input: float = 0.0,
                   outputs: str = "last", meta: dict | None = None) -> Circuit:
    """A random netlist in which every one of the 16 ops appears.

    Each gate input is one of the ``window`` nodes before the gate, or with probability
    ``p_anywhere`` any earlier node. A share ``p_two_input`` of the ops is drawn from
    ``TWO_INPUT``, the rest from all 16. ``outputs``: ``"last"`` takes the last
    ``n_classes·group`` nodes, ``"sampled"`` draws them (repeats allowed) from the last two
    thirds of the gates; either way one output is an input node and, for ``"last"``, one
    node is read twice.
    """
    rng = np.random.default_rng(seed)
    ops = rng.integers(0, 16, n_gates)
    if p_two_input:
        ops = np.where(rng.random(n_gates) < p_two_input, rng.choice(TWO_INPUT, n_gates), ops)
    ops[rng.choice(n_gates, 16, replace=False)] = np.arange(16)
    node = n_inputs + np.arange(n_gates)

    def pick():
        near = node - 1 - rng.integers(0, 1 << 30, n_gates) % np.minimum(window, node)
        anywhere = rng.integers(0, 1 << 30, n_gates) % node
        return np.where(rng.random(n_gates) < p_anywhere, anywhere, near)

    n_out = n_classes * group
    if outputs == "last":
        out = node[-n_out:].copy()
        out[rng.integers(n_out)] = rng.integers(n_inputs)          # an input as an output
        out[rng.integers(n_out)] = out[rng.integers(n_out)]       # a node read twice
    elif outputs == "sampled":
        out = rng.choice(node[n_gates // 3:], n_out)
        out[0] = rng.integers(n_inputs)
    else:
        raise ValueError(f"outputs must be 'last' or 'sampled', got {outputs!r}")
    return Circuit(n_inputs=n_inputs, ops=ops, a=pick(), b=pick(), outputs=out,
                   n_classes=n_classes, meta=meta or {})


def first_varied(make, predict, seed: int, tries: int = 100):
    """``make(s)`` for the first s ≥ seed whose circuit predicts more than one class on the
    probe (``predict(circuit)`` → classes); any circuit when it has one class."""
    for s in range(seed, seed + tries):
        c = make(s)
        if c.n_classes == 1 or len(set(predict(c).tolist())) > 1:
            return c
    raise AssertionError(f"no circuit with varied predictions in seeds {seed}…{seed + tries}")


def random_bits(seed: int, n: int, m: int, dtype=np.uint8) -> np.ndarray:
    """(n, m) random 0/1 inputs."""
    return np.random.default_rng(seed).integers(0, 2, (n, m), dtype=dtype)


def tie_circuit() -> Circuit:
    """Classes 1 and 3 always tie at 2 votes, class 2 = x0 + x1: ties must go to class 1."""
    return Circuit(n_inputs=2, ops=[0, 15, 3, 5], a=[0, 0, 0, 0], b=[1, 1, 1, 1],
                   outputs=[2, 2, 3, 3, 4, 5, 3, 3], n_classes=4)
