"""The folded FPGA architecture: the circuit run as a program, one gate a clock.

As gates, a small FPGA holds a few thousand of them with their vote (the UP5K's 5,280 logic
cells about 10,000 two-input gates); as a program, a circuit of up to 16,384 gates fits its
memories. ``arch="folded"`` compiles the circuit into one instruction per live gate (which
gate values or input bits it reads, its truth table, and the class whose vote it is, if any)
and a processor of a few hundred logic cells runs them in order:

- the program is held in the single-port RAMs (SPRAM, 4 × 16k words of 16 bits on the
  UP5K), the gates' values in block RAM (one bit a gate, two copies for the two operands),
  and the loaded image in block RAM as one word per load;
- each clock one instruction is read, its two operands read, its value written; a vote
  instruction whose value is 1 adds one to its class's counter, and after the last one the
  first class with the most votes is the result.

The SPRAM cannot be initialised by the bitstream, so the program is written after
configuration (:func:`folded_program` gives the words; ``kairo logic fpga`` writes them to
``program.hex``): the design is the same for any circuit of the same size, the circuit is
data. The top module ``kairo_top``::

    input  clk
    input  prog              // high: each load takes din as the next piece of a program word
    input  load              // take din on this rising edge
    input  [io_bits-1:0] din // program piece, or load i of an image (as the other archs)
    input  start             // classify the image loaded since the last start
    output [CW-1:0] cls      // first class with the most votes, held until the next result
    output valid             // high for exactly one cycle with each new cls
    output ready             // loads and starts are taken only while ready is high:
                             // never before a whole program has been written

Program words are loaded ``ceil(word_bits / io_bits)`` loads each, the low bits first, word 0
first; prog low resets the program address to word 0. With prog low, loads and ``start``
work as in the other architectures, except that a load on the edge that takes ``start`` is
ignored and nothing is taken while ``ready`` is low: from the edge that takes ``start``
until the edge after ``valid``, which comes ``n_instr + 3 + n_classes`` edges after it (the
last value counted, then one class compared a clock). An image takes ``loads + 1 + n_instr
+ 4 + n_classes`` clocks (:func:`folded_shape`).

The compiler orders the instructions so that none reads the value of the instruction just
before it (written on the edge the next one's operands are read), inserting a no-op where
no other instruction is ready; :func:`execute_program` runs a program in NumPy with that
timing, to check the compiler without a Verilog simulator.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from kairo._errors import ConfigError
from kairo.logic._circuit import OPERANDS_READ, Circuit
from kairo.logic._gates import TRUTH
from kairo.logic.backends._common import class_bits

__all__ = ["FoldedProgram", "folded_program", "execute_program", "folded_source",
           "folded_shape", "program_hex", "MAX_INSTRUCTIONS", "MAX_WORD_BITS"]

# the UP5K's four SPRAMs: 16k words of 16 bits each, side by side for wider words
MAX_INSTRUCTIONS, MAX_WORD_BITS = 16384, 64
_PASS_A = 0b1100                    # truth table bit 2a + b: the value of operand a
_LATENCY = 3                        # edges from the last issue to the counts (+ classes)


def _width(n: int) -> int:
    """Bits that index 0 … n − 1 (at least 1)."""
    return max(1, (n - 1).bit_length())


@dataclass(frozen=True)
class FoldedProgram:
    """A circuit compiled for the folded architecture (:func:`folded_program`).

    ``words[k]`` is instruction k, low bits first: operand a's source (``src_bits``), operand
    b's, the 4-bit truth table (bit ``2a + b`` the value), then the vote tag (class + 1, 0
    for none). A source's top bit selects a gate value (the rest: its instruction index)
    or an input bit (the rest: load address, then ``sel_bits`` for the bit in that load's
    ``lane_bits``-bit word)."""

    words: np.ndarray               # (n_instr,) uint64
    io_bits: int
    input_stage: str
    loads: int                      # loads per image (words of the input memory)
    lane_bits: int                  # bits each load stores
    lane_map: tuple                 # per circuit input: (load, bit of that load's word)
    src_bits: int
    slot_bits: int
    sel_bits: int
    addr_bits: int
    tag_bits: int
    n_classes: int
    n_gates: int                    # instructions that are the circuit's live gates
    n_copies: int                   # vote instructions that copy an input or a repeated output
    n_nops: int                     # no-ops inserted so no instruction reads the one before

    @property
    def n_instr(self) -> int:
        return int(self.words.shape[0])

    @property
    def word_bits(self) -> int:
        return 2 * self.src_bits + 4 + self.tag_bits

    def field(self, name: str) -> tuple[int, int]:
        """(low bit, width) of ``a``, ``b``, ``tt`` or ``tag`` in a word."""
        s = self.src_bits
        return {"a": (0, s), "b": (s, s), "tt": (2 * s, 4), "tag": (2 * s + 4,
                                                                     self.tag_bits)}[name]


def _lanes(c: Circuit, io_bits: int, input_stage: str) -> tuple[int, int, list[tuple[int, int]]]:
    """(loads per image, bits stored per load, where input i is: (load, bit) per input)."""
    if input_stage == "pixels":
        spec = c.image_input
        lanes, t = io_bits // 8, len(spec.thresholds)
        where = []
        for i in range(c.n_inputs):
            k, p = divmod(i, spec.n_pixels)
            where.append((p // lanes, (p % lanes) * t + k))
        return -(-spec.n_pixels // lanes), lanes * t, where
    return -(-c.n_inputs // io_bits), io_bits, [divmod(i, io_bits) for i in range(c.n_inputs)]


def folded_program(circuit: Circuit, io_bits: int = 8,
                   input_stage: str = "bits") -> FoldedProgram:
    """Compile ``circuit`` into the folded architecture's program (see the module doc):
    its live gates in topological order, a vote instruction for each output that is not a
    live gate's first appearance among the outputs, and no-ops where needed."""
    c = circuit
    if not isinstance(c, Circuit):
        raise ConfigError(f"expected a kairo.logic Circuit, got {type(c).__name__}")
    if isinstance(io_bits, bool) or not isinstance(io_bits, (int, np.integer)) or io_bits < 1:
        raise ConfigError(f"io_bits must be an integer ≥ 1, got {io_bits!r}")
    if input_stage not in ("bits", "pixels"):
        raise ConfigError(f"input_stage: expected bits or pixels, got {input_stage!r}")
    if input_stage == "pixels" and (c.image_input is None or io_bits % 8):
        raise ConfigError("input_stage: 'pixels' needs a circuit that reads thresholded pixels "
                          f"and io_bits a multiple of 8 (got {io_bits})")
    n_in, ops, a_src, b_src = c.n_inputs, c.ops.tolist(), c.a.tolist(), c.b.tolist()
    live = c.live_nodes()
    group = c.n_outputs // c.n_classes
    # instructions before ordering: (op truth table, node a or -1, node b or -1, tag)
    gates = [int(g) for g in np.flatnonzero(live[n_in:])]
    instr_of_node: dict[int, int] = {}
    items: list[list] = []
    for g in gates:
        ra, rb = OPERANDS_READ[ops[g]]
        instr_of_node[n_in + g] = len(items)
        items.append([int(TRUTH[ops[g]]), a_src[g] if ra else -1, b_src[g] if rb else -1, 0])
    copies = 0
    for j, node in enumerate(c.outputs.tolist()):
        tag = j // group + 1
        k = instr_of_node.get(node)
        if k is not None and items[k][3] == 0:
            items[k][3] = tag
        else:
            items.append([_PASS_A, node, -1, tag])
            copies += 1
    # dependencies on other instructions (the nodes read that are gates)
    deps = [[instr_of_node[n] for n in (it[1], it[2]) if n >= n_in] for it in items]
    order = _order(deps)
    n = len(order)
    if n > MAX_INSTRUCTIONS:
        raise ConfigError(f"arch: 'folded' holds at most {MAX_INSTRUCTIONS} instructions (the "
                          f"UP5K's SPRAM); this circuit needs {n} ({len(gates)} live gates, "
                          f"{copies} vote copies, {n - len(items)} no-ops)")
    loads, lane_bits, where = _lanes(c, io_bits, input_stage)
    slot_bits, sel_bits, addr_bits = _width(n), _width(lane_bits), _width(loads)
    src_bits = 1 + max(slot_bits, addr_bits + sel_bits)
    tag_bits = _width(c.n_classes + 1)
    word_bits = 2 * src_bits + 4 + tag_bits
    if word_bits > MAX_WORD_BITS:
        raise ConfigError(f"arch: 'folded' words are at most {MAX_WORD_BITS} bits (four "
                          f"SPRAMs side by side); this circuit needs {word_bits}")
    slot = {k: s for s, k in enumerate(order) if k >= 0}

    def src(node: int) -> int:
        if node < 0:
            return 0
        if node < n_in:
            ld, bit = where[node]
            return (ld << sel_bits) | bit
        return (1 << (src_bits - 1)) | slot[instr_of_node[node]]

    words = np.zeros(n, dtype=np.uint64)
    for s, k in enumerate(order):
        if k < 0:
            continue                # a no-op: truth table 0, tag 0
        tt, na, nb, tag = items[k]
        w = src(na) | (src(nb) << src_bits) | (tt << (2 * src_bits)) | \
            (tag << (2 * src_bits + 4))
        words[s] = w
    return FoldedProgram(words=words, io_bits=int(io_bits), input_stage=input_stage,
                         loads=loads, lane_bits=lane_bits, lane_map=tuple(where),
                         src_bits=src_bits, slot_bits=slot_bits, sel_bits=sel_bits,
                         addr_bits=addr_bits, tag_bits=tag_bits, n_classes=c.n_classes,
                         n_gates=len(gates), n_copies=copies, n_nops=n - len(items))


def _order(deps: list[list[int]]) -> list[int]:
    """List scheduling of instructions with dependencies ``deps`` in their original
    (topological) order, never an instruction right after one it reads: the order, -1 for
    a no-op where nothing else is ready."""
    users: list[list[int]] = [[] for _ in deps]
    waiting = [0] * len(deps)
    for k, ds in enumerate(deps):
        for d in set(ds):
            users[d].append(k)
            waiting[k] += 1
    ready = [k for k in range(len(deps)) if waiting[k] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        skipped, pick = [], None
        while ready:
            k = heapq.heappop(ready)
            if order and order[-1] >= 0 and order[-1] in deps[k]:
                skipped.append(k)
            else:
                pick = k
                break
        for k in skipped:
            heapq.heappush(ready, k)
        if pick is None:
            order.append(-1)
            continue
        order.append(pick)
        for u in users[pick]:
            waiting[u] -= 1
            if waiting[u] == 0:
                heapq.heappush(ready, u)
    return order


def execute_program(prog: FoldedProgram, x) -> np.ndarray:
    """Classes of the circuit inputs ``x`` ((n, n_inputs) 0/1) as the folded processor
    computes them, instruction by instruction on all rows at once. A value read before it
    is written (the instruction just before, whose write lands on the edge of the read, or
    a later one) reads as 0 here; in the block RAM it would be the last image's. The
    compiler never emits such a read; this is how a test sees that it did not."""
    x = np.asarray(x, dtype=bool)
    lanes = np.zeros((x.shape[0], prog.loads, prog.lane_bits), dtype=bool)
    for i, (ld, bit) in enumerate(prog.lane_map):
        lanes[:, ld, bit] = x[:, i]
    vals = np.zeros((prog.n_instr, x.shape[0]), dtype=bool)
    votes = np.zeros((x.shape[0], prog.n_classes), dtype=np.int64)
    fields = {f: prog.field(f) for f in ("a", "b", "tt", "tag")}
    gate_bit, sel_mask = 1 << (prog.src_bits - 1), (1 << prog.sel_bits) - 1
    unknown = np.zeros(x.shape[0], dtype=bool)
    for k, w in enumerate(prog.words.tolist()):
        f = {name: (w >> lo) & ((1 << width) - 1) for name, (lo, width) in fields.items()}
        ops = []
        for s in (f["a"], f["b"]):
            if s & gate_bit:
                slot = s & (gate_bit - 1)
                ops.append(unknown if slot >= k - 1 else vals[slot])
            else:
                ld, bit = s >> prog.sel_bits, s & sel_mask
                ok = ld < prog.loads and bit < prog.lane_bits
                ops.append(lanes[:, ld, bit] if ok else unknown)
        v = ((f["tt"] >> (2 * ops[0].astype(np.int64) + ops[1])) & 1).astype(bool)
        vals[k] = v
        if f["tag"]:
            votes[:, f["tag"] - 1] += v
    return votes.argmax(axis=1)


def program_hex(prog: FoldedProgram) -> str:
    """The program as text, one word a line in hexadecimal (``$readmemh``'s format), word 0
    first."""
    digits = -(-prog.word_bits // 4)
    return "".join(f"{int(w):0{digits}x}\n" for w in prog.words.tolist())


def folded_shape(prog: FoldedProgram, n_classes: int) -> dict:
    """Loads, pins and clocks of the folded design (the keys of ``design_shape``)."""
    w = prog.io_bits
    return {"arch": "folded", "input_stage": prog.input_stage, "io_bits": w,
            "load_cycles": prog.loads, "input_flip_flops": 0,
            "class_bits": class_bits(n_classes),
            # + clk, prog, load, start, valid, ready
            "pins": w + class_bits(n_classes) + 6,
            "instructions": prog.n_instr, "word_bits": prog.word_bits,
            "program_loads": prog.n_instr * -(-prog.word_bits // w),
            "busy_cycles": prog.n_instr + _LATENCY + n_classes + 1,
            "interval_cycles": prog.loads + 1 + prog.n_instr + _LATENCY + n_classes + 1}


def _lane_word(c: Circuit, prog: FoldedProgram) -> str:
    """Verilog for the word a load stores: din itself, or each pixel lane's comparisons."""
    if prog.input_stage != "pixels":
        return "wire [LB-1:0] lane = din;"
    th = c.image_input.thresholds
    bits = []
    for j in range(prog.io_bits // 8):
        for t in th:
            bits.append("1'b1" if t < 0 else "1'b0" if t >= 255
                        else f"(din[{8 * j + 7}:{8 * j}] > 8'd{t})")
    return "wire [LB-1:0] lane = {" + ", ".join(reversed(bits)) + "};"


def folded_source(circuit: Circuit, prog: FoldedProgram) -> str:
    """Verilog-2001 ``kairo_top`` of the folded architecture for ``prog`` (compiled from
    ``circuit``, whose classes and thresholds it reads)."""
    c = circuit
    shape = folded_shape(prog, c.n_classes)
    w, n, pw = prog.io_bits, prog.n_instr, prog.word_bits
    ch = -(-pw // w)                       # loads a program word
    cw, nc, ia, pa = shape["class_bits"], c.n_classes, prog.addr_bits, _width(n)
    kb = max(1, ch.bit_length())
    sr = "din" if ch == 1 else f"{{din, psr[{ch * w - 1}:{w}]}}"
    lines = "\n".join(
        f"// {ln}" for ln in (
            f"Folded: {n} instructions ({prog.n_gates} gates, {prog.n_copies} vote copies, "
            f"{prog.n_nops} no-ops) of {pw} bits,",
            f"run one a clock from SPRAM; written after configuration with prog high, {ch} "
            f"load(s) of {w} bits a word.",
            f"An image: {prog.loads} loads of {prog.lane_bits} stored bits, then start; "
            f"valid {n + _LATENCY + nc} edges after the edge that takes start, ready one "
            f"edge later."))
    return f"""// Generated by kairo (kairo.logic._fpga_folded) -- do not edit.
{lines}
`default_nettype none
module kairo_top (
    input  wire clk,
    input  wire prog,
    input  wire load,
    input  wire [{w - 1}:0] din,
    input  wire start,
    output reg  [{cw - 1}:0] cls,
    output reg  valid,
    output wire ready
);
localparam LB = {prog.lane_bits};

// ---- the program: SPRAM, written {ch} load(s) a word while prog is high
reg [{kb - 1}:0] pk;                 // loads of the word being assembled
reg [{pa - 1}:0] pwa;                // program address the next word goes to
reg pwe;                            // write the assembled word on this edge
/* verilator lint_off UNUSEDSIGNAL */
reg [{ch * w - 1}:0] psr;
/* verilator lint_on UNUSEDSIGNAL */
reg loaded;                         // all {n} words written since the last program began
initial begin pk = {kb}'d0; pwa = {pa}'d0; pwe = 1'b0; loaded = 1'b0; end
always @(posedge clk) begin
    if (prog && load) psr <= {sr};
    pwe <= prog && load && pk == {kb}'d{ch - 1};
    if (!prog) pk <= {kb}'d0;
    else if (load) pk <= pk == {kb}'d{ch - 1} ? {kb}'d0 : pk + {kb}'d1;
    if (pwe) pwa <= pwa + {pa}'d1;
    else if (!prog) pwa <= {pa}'d0;
    if (pwe && pwa == {pa}'d{n - 1}) loaded <= 1'b1;
    else if (prog && load && !pwe && pk == {kb}'d0 && pwa == {pa}'d0) loaded <= 1'b0;
end

reg busy;                           // from the edge that takes start until valid
reg [{pa}:0] pc;                     // instructions issued
reg v1, v2;                         // an instruction in stage 1 (operands read) / 2 (value)
reg [{pa}:0] wa;                     // the instruction in stage 2
reg fin;                            // the last value was written: the counts are final
initial begin busy = 1'b0; v1 = 1'b0; v2 = 1'b0; fin = 1'b0; valid = 1'b0; end
assign ready = loaded && !busy && !prog && !pwe;
wire take = start && ready;
wire issue = busy && pc < {pa + 1}'d{n};

(* ram_style = "huge" *) reg [{pw - 1}:0] pmem [0:{n - 1}];
reg [{pw - 1}:0] iq;                 // the instruction in stage 1
wire [{pa - 1}:0] paddr = (prog || pwe) ? pwa : pc[{pa - 1}:0];
always @(posedge clk) begin
    // SPRAM reads nothing on an edge that writes
    if (pwe) pmem[paddr] <= psr[{pw - 1}:0];
    else iq <= pmem[paddr];
end

// ---- the image: one word of {prog.lane_bits} stored bits per load
{_lane_word(c, prog)}
reg [{ia - 1}:0] pos;                // which load of the image the next din is
initial pos = {ia}'d0;
wire ld = load && ready && !start;
(* ram_style = "block" *) reg [LB-1:0] imem [0:{prog.loads - 1}];
always @(posedge clk) begin
    if (ld) begin
        imem[pos] <= lane;
        pos <= pos == {ia}'d{prog.loads - 1} ? {ia}'d0 : pos + {ia}'d1;
    end else if (take) pos <= {ia}'d0;
end

{_datapath(prog)}
{_vote(c, prog)}endmodule
`default_nettype wire
"""


def _datapath(prog: FoldedProgram) -> str:
    """Stages 1–3: the operands read, the gate's value written back, then counted."""
    sb, ss, ia, gs, tb = prog.src_bits, prog.sel_bits, prog.addr_bits, prog.slot_bits, \
        prog.tag_bits
    n, pa = prog.n_instr, _width(prog.n_instr)
    fa, fb, ft, fg = (prog.field(f)[0] for f in ("a", "b", "tt", "tag"))
    return f"""// ---- stage 1: read the operands (gate values: one block RAM copy per operand)
wire [{sb - 1}:0] sa = iq[{fa + sb - 1}:{fa}], sbb = iq[{fb + sb - 1}:{fb}];
(* ram_style = "block" *) reg gva [0:{n - 1}];
(* ram_style = "block" *) reg gvb [0:{n - 1}];
reg ga, gb, ra2, rb2;
reg [LB-1:0] ia2, ib2;
reg [{ss - 1}:0] sela2, selb2;
reg [3:0] tt2;
reg [{tb - 1}:0] tag2;
always @(posedge clk) begin
    ga <= gva[sa[{gs - 1}:0]];
    gb <= gvb[sbb[{gs - 1}:0]];
    ia2 <= imem[sa[{ss + ia - 1}:{ss}]];
    ib2 <= imem[sbb[{ss + ia - 1}:{ss}]];
    ra2 <= sa[{sb - 1}];
    rb2 <= sbb[{sb - 1}];
    sela2 <= sa[{ss - 1}:0];
    selb2 <= sbb[{ss - 1}:0];
    tt2 <= iq[{ft + 3}:{ft}];
    tag2 <= iq[{fg + tb - 1}:{fg}];
end

// ---- stage 2: the gate's value, written back and counted
wire va = ra2 ? ga : ia2[sela2];
wire vb = rb2 ? gb : ib2[selb2];
wire r = tt2[{{va, vb}}];
always @(posedge clk) if (v2) begin gva[wa[{pa - 1}:0]] <= r; gvb[wa[{pa - 1}:0]] <= r; end
// stage 3: counted (a clock later, so the counters' adders are not behind the reads)
reg v3, r3;
reg [{tb - 1}:0] tag3;
initial v3 = 1'b0;
always @(posedge clk) begin v3 <= v2; r3 <= r; tag3 <= tag2; end

"""


def _vote(c: Circuit, prog: FoldedProgram) -> str:
    """The control (busy, instructions issued, the write address), the class counters and
    the scan for the first class with the most votes."""
    n, nc, tb, pa = prog.n_instr, c.n_classes, prog.tag_bits, _width(prog.n_instr)
    cw, kw = class_bits(nc), _width(nc)
    sw = max(1, (c.n_outputs // nc).bit_length())
    counts = "\n".join(
        f"        if (v3 && r3 && tag3 == {tb}'d{i + 1}) cnt{i} <= cnt{i} + {sw}'d1;"
        for i in range(nc))
    clear = " ".join(f"cnt{i} <= {sw}'d0;" for i in range(nc))
    # while scanning, the counters shift down one class a clock: cnt0 is the class compared
    zero = f"{sw}'d0"
    shift = " ".join(f"cnt{i} <= {f'cnt{i + 1}' if i + 1 < nc else zero};" for i in range(nc))
    return f"""reg [{sw - 1}:0] {", ".join(f"cnt{i}" for i in range(nc))};
always @(posedge clk) begin
    if (take) begin
        busy <= 1'b1; {clear}
    end else if (valid) busy <= 1'b0;
    if (take) pc <= {pa + 1}'d0; else if (issue) pc <= pc + {pa + 1}'d1;
    v1 <= issue;
    v2 <= v1;
    if (take) wa <= {pa + 1}'d0; else if (v2) wa <= wa + {pa + 1}'d1;
    fin <= v3 && wa == {pa + 1}'d{n};
    if (fin || scan) begin
        {shift}
    end else if (!take) begin
{counts}
    end
end

// the first class with the most votes, one class a clock after the last value
reg scan;                           // comparing class k (in cnt0) with the best before it
reg [{kw - 1}:0] k, bi;
reg [{sw - 1}:0] m;
initial scan = 1'b0;
wire last = k == {kw}'d{nc - 1};
wire gt = cnt0 > m;
always @(posedge clk) begin
    valid <= 1'b0;
    if (fin) begin
        m <= cnt0; bi <= {kw}'d0; k <= {kw}'d1; scan <= 1'b{int(nc > 1)};
        if (1'b{int(nc == 1)}) begin valid <= 1'b1; cls <= {cw}'d0; end
    end else if (scan) begin
        if (gt) begin m <= cnt0; bi <= k; end
        k <= k + {kw}'d1;
        if (last) begin
            scan <= 1'b0; valid <= 1'b1;
            cls <= gt ? k[{cw - 1}:0] : bi[{cw - 1}:0];
        end
    end
end
"""
