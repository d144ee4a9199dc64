"""Verilog simulation: run :func:`verilog_source` on input vectors in Icarus Verilog or
Verilator and read back the outputs, the vote counts and the classes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from kairo._errors import KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._config import SIMULATORS
from kairo.logic.backends._common import (IVERILOG_INSTALL, VERILATOR_INSTALL, check_circuit,
                                          class_bits, stderr_head, vbits)
from kairo.logic.backends._verilog import verilog_latency, verilog_source

@lru_cache(maxsize=None)
def _verilator_major(exe: str) -> int:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True,
                             timeout=30).stdout
        m = re.search(r"Verilator\s+(\d+)", out)
        return int(m.group(1)) if m else 0
    except (OSError, subprocess.SubprocessError):
        return 0


def find_simulator(simulator: str = "auto") -> str:
    """``"iverilog"`` (needs iverilog and vvp) or ``"verilator"`` (≥ 5, for --binary).

    ``"auto"`` prefers Icarus Verilog (much faster to build a testbench). Raises KairoError
    naming the package to install when none is available.
    """
    if simulator not in SIMULATORS:
        raise KairoError(f"simulator must be one of {', '.join(SIMULATORS)}, got "
                         f"{simulator!r}")
    if simulator in ("auto", "iverilog"):
        if shutil.which("iverilog") and shutil.which("vvp"):
            return "iverilog"
        if simulator == "iverilog":
            raise KairoError(f"Icarus Verilog (iverilog and vvp) was not found on PATH: "
                             f"install it with `{IVERILOG_INSTALL}`")
    exe = shutil.which("verilator")
    if exe and _verilator_major(exe) >= 5:
        return "verilator"
    if simulator == "verilator":
        if exe:
            raise KairoError(f"{exe} is older than Verilator 5 (needed for --binary): install "
                             f"a newer one (`{VERILATOR_INSTALL}` on Debian 12 / Ubuntu 24.04 "
                             f"gives 5.x)")
        raise KairoError(f"Verilator was not found on PATH: install it with "
                         f"`{VERILATOR_INSTALL}`")
    raise KairoError(f"no Verilog simulator found on PATH: install Icarus Verilog with "
                     f"`{IVERILOG_INSTALL}` (or Verilator ≥ 5 with `{VERILATOR_INSTALL}`)")


def _testbench(circuit: Circuit, n_vec: int, pipeline: int, module: str) -> str:
    """``pipeline``: the module's latency in clock edges (0: combinational, no clk port)."""
    c = circuit
    sw, cw = vbits(c.n_outputs // c.n_classes), class_bits(c.n_classes)
    clk = ".clk(clk), " if pipeline else ""
    # o in slices of ≤ 4,096 bits, MSB first: Verilator refuses a $display with more than
    # 8,192 bits of arguments (a 32,000-output circuit). Slices start at multiples of 4,096
    # from bit 0, so their hex digits join into exactly the digits of the whole of o.
    cuts = list(range(0, c.n_outputs, 4096))[::-1]
    slices = " ".join(f'$write("%h", o[{min(lo + 4096, c.n_outputs) - 1}:{lo}]);' for lo in cuts)
    return f"""module tb;
reg [{c.n_inputs - 1}:0] mem [0:{n_vec - 1}];
reg [{c.n_inputs - 1}:0] x;
reg clk;
wire [{c.n_outputs - 1}:0] o;
wire [{c.n_classes * sw - 1}:0] votes;
wire [{cw - 1}:0] y;
integer i;
{module} dut ({clk}.x(x), .o(o), .votes(votes), .y(y));
initial begin
    $readmemb("x.mem", mem);
    clk = 1'b0;
    x = mem[0];
    for (i = 0; i < {n_vec + pipeline}; i = i + 1) begin
        if (i < {n_vec}) x = mem[i];
        #1;
        if (i >= {pipeline}) begin
            $write("R "); {slices} $display(" %h %0d", votes, y);
        end
        clk = 1'b1;
        #1;
        clk = 1'b0;
    end
    $finish;
end
endmodule
"""


def _hex_bits(tokens: list[str], n_bits: int) -> np.ndarray:
    """Hex strings (MSB first) → (len, n_bits) bool with column j = bit j."""
    nd = (n_bits + 3) // 4
    nd2 = nd + (nd % 2)
    if any(len(t) != nd or not re.fullmatch(r"[0-9a-fA-F]*", t) for t in tokens):
        bad = next(t for t in tokens if len(t) != nd or not re.fullmatch(r"[0-9a-fA-F]*", t))
        raise KairoError(f"Verilog simulation printed {bad[:40]!r}, expected {nd} hex digits "
                         f"(x/z bits mean an undriven signal)")
    raw = bytes.fromhex("".join(t.rjust(nd2, "0") for t in tokens))
    bits = np.unpackbits(np.frombuffer(raw, dtype=np.uint8).reshape(len(tokens), -1), axis=1)
    return bits[:, ::-1][:, :n_bits].astype(bool)


def _raise_stack_limit() -> None:
    """In the Verilator binary's process: stack limit up to the hard limit. Verilator's eval
    of a ~100k-gate netlist overflows the usual 8 MiB stack (a segfault, exit -11)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))


def simulate_verilog(circuit: Circuit, x, *, simulator: str = "auto", pipeline: int = 0,
                     pipeline_votes: int = 0, with_scores: bool = False,
                     timeout: float | None = None, source: str | None = None):
    """Simulate :func:`verilog_source` on input vectors.

    ``x``: (n_samples, n_inputs) of 0/1, as for :meth:`Circuit.evaluate`. Writes the module,
    a testbench that reads the vectors with ``$readmemb`` and prints ``o``, ``votes`` and ``y``
    per vector, runs it with iverilog + vvp or ``verilator --binary`` in a temp folder and
    returns ``(outputs, predictions)``: bool (n, n_outputs) and int64 (n,); with
    ``with_scores=True`` also the vote counts (n, n_classes) int64 the hardware computed.
    ``pipeline``/``pipeline_votes`` as for :func:`verilog_source`; the testbench clocks one
    vector per cycle and reads each result :func:`verilog_latency` edges later. ``source``:
    simulate this text (a file :func:`write_verilog` wrote with the same pipeline settings,
    module ``kairo_circuit``) instead of generating it.
    """
    c = check_circuit(circuit)
    x = c.check_inputs(x)
    sim = find_simulator(simulator)
    src = source if source is not None else verilog_source(
        c, module="kairo_circuit", pipeline=pipeline, pipeline_votes=pipeline_votes)
    n = x.shape[0]
    if n == 0:
        res = (np.zeros((0, c.n_outputs), bool), np.zeros(0, np.int64))
        return res + (np.zeros((0, c.n_classes), np.int64),) if with_scores else res
    with tempfile.TemporaryDirectory(prefix="kairo-vsim-") as tmp:
        d = Path(tmp)
        (d / "kairo.v").write_text(src)
        (d / "tb.v").write_text(_testbench(c, n, verilog_latency(c, pipeline, pipeline_votes),
                                           "kairo_circuit"))
        xb = (np.asarray(x) != 0)[:, ::-1].astype(np.uint8) + ord("0")
        lines = np.concatenate([xb, np.full((n, 1), ord("\n"), np.uint8)], axis=1)
        (d / "x.mem").write_bytes(lines.tobytes())
        if sim == "iverilog":
            steps = [["iverilog", "-g2005", "-o", "sim.vvp", "tb.v", "kairo.v"],
                     ["vvp", "-n", "sim.vvp"]]
        else:
            jobs = str(max(1, min(os.cpu_count() or 1, 8)))
            steps = [["verilator", "--binary", "--timing", "-Wno-fatal", "-Wno-lint",
                      "-Wno-style", "--top-module", "tb", "-Mdir", "obj", "-j", jobs,
                      "tb.v", "kairo.v"],
                     [str(d / "obj" / "Vtb")]]
        out = ""
        for cmd in steps:
            try:
                r = subprocess.run(cmd, cwd=d, capture_output=True, text=True,
                                   timeout=timeout,
                                   preexec_fn=_raise_stack_limit if cmd[0].endswith("Vtb")
                                   else None)
            except OSError as exc:
                raise KairoError(f"could not run {cmd[0]} ({exc}): install it with `"
                                 f"{IVERILOG_INSTALL if sim == 'iverilog' else VERILATOR_INSTALL}`"
                                 ) from None
            except subprocess.TimeoutExpired:
                raise KairoError(f"{cmd[0]} did not finish within {timeout} s; simulate fewer "
                                 f"vectors or raise timeout") from None
            if r.returncode != 0:
                raise KairoError(f"Verilog simulation step `{' '.join(cmd)}` failed (exit "
                                 f"{r.returncode}):\n{stderr_head(r.stderr + r.stdout)}")
            out = r.stdout
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("R ")]
    if len(rows) != n or any(len(r) != 4 for r in rows):
        raise KairoError(f"Verilog simulation printed {len(rows)} result lines for {n} input "
                         f"vectors; output starts:\n{stderr_head(out)}")
    outputs = _hex_bits([r[1] for r in rows], c.n_outputs)
    vote_bits = _hex_bits([r[2] for r in rows],
                          c.n_classes * vbits(c.n_outputs // c.n_classes))
    try:
        pred = np.array([int(r[3]) for r in rows], dtype=np.int64)
    except ValueError:
        raise KairoError("Verilog simulation printed a non-numeric class (x/z: an undriven "
                         "signal)") from None
    if not with_scores:
        return outputs, pred
    sw = vbits(c.n_outputs // c.n_classes)
    weights = (1 << np.arange(sw)).astype(np.int64)
    scores = vote_bits.reshape(n, c.n_classes, sw).astype(np.int64) @ weights
    return outputs, pred, scores
