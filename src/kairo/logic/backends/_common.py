"""What the C and Verilog back ends share: operand use, gate expressions, checks, file writes."""

from __future__ import annotations

from pathlib import Path

from kairo._errors import KairoError
from kairo.logic._circuit import Circuit

GCC_INSTALL = "apt-get install gcc"
IVERILOG_INSTALL = "apt-get install iverilog"
VERILATOR_INSTALL = "apt-get install verilator"

# C expressions; {a}, {b} are operand names, ZERO/ONES the constant words.
C_EXPR = ("ZERO", "{a} & {b}", "{a} & ~{b}", "{a}", "~{a} & {b}", "{b}", "{a} ^ {b}",
          "{a} | {b}", "~({a} | {b})", "~({a} ^ {b})", "~{b}", "{a} | ~{b}", "~{a}",
          "~{a} | {b}", "~({a} & {b})", "ONES")
V_EXPR = ("1'b0", "{a} & {b}", "{a} & ~{b}", "{a}", "~{a} & {b}", "{b}", "{a} ^ {b}",
          "{a} | {b}", "~({a} | {b})", "~({a} ^ {b})", "~{b}", "{a} | ~{b}", "~{a}",
          "~{a} | {b}", "~({a} & {b})", "1'b1")


def check_circuit(circuit) -> Circuit:
    if not isinstance(circuit, Circuit):
        raise KairoError(f"expected a kairo.logic Circuit, got {type(circuit).__name__}; "
                         f"load one with Circuit.load(path)")
    return circuit


def write_text(path, text: str, what: str) -> Path:
    """``text`` to ``path`` atomically; KairoError when the folder does not exist."""
    path = Path(path)
    if not path.parent.is_dir():
        raise KairoError(f"{what} {path}: folder {path.parent} does not exist; create it first "
                         f"(mkdir -p {path.parent})")
    from kairo._io import atomic_write_text

    return atomic_write_text(path, text)


def stderr_head(text: str, n: int = 12) -> str:
    """The first ``n`` non-blank lines of a tool's output, for an error message."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = "\n".join(lines[:n])
    return head + (f"\n… ({len(lines) - n} more lines)" if len(lines) > n else "")


def vbits(n: int) -> int:
    """Bits of an unsigned value up to n (at least 1)."""
    return max(1, int(n).bit_length())


def class_bits(n_classes: int) -> int:
    """Bits of a class index (at least 1)."""
    return max(1, (n_classes - 1).bit_length())
