"""Verilog writing: synthesizable Verilog-2001 for a circuit (:func:`verilog_source`)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from kairo._errors import KairoError
from kairo.logic._circuit import OPERANDS_READ, Circuit
from kairo.logic.backends._common import V_EXPR, check_circuit, class_bits, vbits, write_text

VERILOG_KEYWORDS = set("""always and assign automatic begin buf bufif0 bufif1 case casex casez
cell cmos config deassign default defparam design disable edge else end endcase endconfig
endfunction endgenerate endmodule endprimitive endspecify endtable endtask event for force
forever fork function generate genvar highz0 highz1 if ifnone incdir include initial inout
input instance integer join large liblist library localparam macromodule medium module nand
negedge nmos nor noshowcancelled not notif0 notif1 or output parameter pmos posedge primitive
pull0 pull1 pulldown pullup pulsestyle_onevent pulsestyle_ondetect rcmos real realtime reg
release repeat rnmos rpmos rtran rtranif0 rtranif1 scalared showcancelled signed small specify
specparam strong0 strong1 supply0 supply1 table task time tran tranif0 tranif1 tri tri0 tri1
triand trior trireg unsigned use uwire vectored wait wand weak0 weak1 while wire wor xnor
xor""".split())
VERILOG_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")
TB_RESERVED = {"tb"}      # the testbench's own module name



def _stage_of_depth(depth: np.ndarray, max_depth: int, k: int) -> np.ndarray:
    """Pipeline stage of each node: gates at depth d ≥ 1 go to ⌊(d−1)(k+1)/D⌋, inputs to 0."""
    if k == 0 or max_depth == 0:
        return np.zeros_like(depth)
    return np.where(depth > 0, ((depth - 1) * (k + 1)) // max_depth, 0)


def vote_levels(circuit: Circuit) -> tuple[int, int]:
    """Levels of the per-class vote adder tree and of the argmax tree in
    :func:`verilog_source`: ``ceil(log2(outputs per class))`` and ``ceil(log2(n_classes))``."""
    c = check_circuit(circuit)
    return (int(c.n_outputs // c.n_classes - 1).bit_length(), int(c.n_classes - 1).bit_length())


def vote_cuts(circuit: Circuit, stages: int) -> list[int]:
    """The vote/argmax levels (1-based, adder levels first) followed by a register when
    ``stages`` registers are spread over the L = sum(vote_levels) levels: after level
    ⌊j·L/(stages+1)⌋ for j = 1…stages, so the L levels fall into stages + 1 runs of about
    equal length. At most L − 1 stages: the last level feeds ``y``, which a user registers
    (the FPGA wrapper's ``cls`` register does)."""
    levels = sum(vote_levels(circuit))
    if isinstance(stages, (bool, np.bool_)) or not isinstance(stages, (int, np.integer)) or \
            not 0 <= stages <= max(levels - 1, 0):
        raise KairoError(f"pipeline_votes must be an integer from 0 to {max(levels - 1, 0)} "
                         f"(the circuit's vote adder and argmax trees have {levels} levels), "
                         f"got {stages!r}")
    return [j * levels // (int(stages) + 1) for j in range(1, int(stages) + 1)]


def verilog_latency(circuit: Circuit, pipeline: int = 0, pipeline_votes: int = 0) -> int:
    """Clock edges from ``x`` to valid ``o``/``votes``/``y`` in :func:`verilog_source`."""
    return int(pipeline) + len(vote_cuts(circuit, pipeline_votes))


def verilog_source(circuit: Circuit, *, module: str = "kairo_circuit", pipeline: int = 0,
                   pipeline_votes: int = 0) -> str:
    """Synthesizable Verilog-2001 for the circuit.

    Ports::

        input  wire clk                       // only when pipeline + pipeline_votes > 0
        input  wire [n_inputs-1:0]  x         // x[i] = input node i
        output wire [n_outputs-1:0] o         // o[j] = output j (node circuit.outputs[j])
        output wire [n_classes*SW-1:0] votes  // class c's vote count at votes[c*SW +: SW]
        output wire [CW-1:0] y                // first class with the most votes

    with ``SW = bit_length(outputs per class)`` and ``CW = max(1, bit_length(n_classes−1))``.
    Gates no output depends on are left out.

    ``pipeline=k``: ``k`` register stages (rising edge of ``clk``, no reset) cut the gate core
    by logic depth into ``k + 1`` segments of about equal depth (a gate at depth ``d`` of ``D``
    lands in segment ``⌊(d−1)(k+1)/D⌋``; values that skip segments are delayed by register
    chains). The vote counting and argmax follow the last register combinationally. Latency:
    ``o``, ``votes`` and ``y`` show the result for the ``x`` that was applied ``k`` rising clock
    edges earlier (i.e. ``x`` is sampled by the first edge; after the ``k``-th edge the outputs
    are valid); a new ``x`` can be applied every cycle.

    ``pipeline_votes=s`` puts ``s`` more register stages into the vote adder trees and the
    argmax tree (:func:`vote_levels`; where: :func:`vote_cuts`), so their carry chains and
    comparators are cut too — for wide circuits (thousands of votes) they, not the gates,
    set the clock. ``o`` and ``votes`` are delayed to stay aligned with ``y``; the latency is
    :func:`verilog_latency` (``pipeline + s``).
    """
    c = check_circuit(circuit)
    if not isinstance(module, str) or not VERILOG_ID.match(module) or \
            module in VERILOG_KEYWORDS or module in TB_RESERVED:
        raise KairoError(f"Verilog module name {module!r} is not a valid identifier: use "
                         f"letters, digits, _ and $, starting with a letter or _, and not a "
                         f"Verilog keyword or one of {sorted(TB_RESERVED)}")
    if isinstance(pipeline, bool) or not isinstance(pipeline, (int, np.integer)) or pipeline < 0:
        raise KairoError(f"pipeline must be a non-negative integer number of register "
                         f"stages, got {pipeline!r}")
    w = _VerilogWriter(c, int(pipeline), set(vote_cuts(c, pipeline_votes)))
    w.header(module)
    w.gate_core()
    w.pipeline_registers()
    w.outputs()
    w.vote_counts()
    w.argmax()
    w.lines.append("\nendmodule\n`default_nettype wire\n")
    return "\n".join(w.lines)


class _VerilogWriter:
    """The lines of :func:`verilog_source`'s module, written section by section into
    ``lines``: ``kst`` register stages in the gate core, registers after the vote and argmax
    levels in ``cuts``."""

    def __init__(self, c: Circuit, kst: int, cuts: set[int]):
        self.c, self.kst, self.cuts = c, kst, cuts
        self.regv = len(cuts)
        self.lat = kst + self.regv
        self.k = c.n_inputs
        self.nc, self.no = c.n_classes, c.n_outputs
        self.grp = self.no // self.nc
        self.sw, self.cw = vbits(self.grp), class_bits(self.nc)
        self.live = c.live_nodes()
        depth = c.depths()
        self.dmax = int(depth[self.live].max()) if self.live.any() else 0
        self.stage = _stage_of_depth(depth, self.dmax, kst)
        self.ops, self.a, self.b = c.ops.tolist(), c.a.tolist(), c.b.tolist()
        self.outs = c.outputs.tolist()
        self.gates = np.flatnonzero(self.live[self.k:]).tolist()
        self.lines: list[str] = []

    # ------------------------------------------------------------ names and registers
    def _base(self, n: int) -> str:
        return f"x[{n}]" if n < self.k else f"g{n - self.k}"

    def at(self, n: int, s: int) -> str:
        """Node n's value as seen in stage s."""
        if s == self.stage[n]:
            return self._base(n)
        k = self.k
        return f"{'x' if n < k else 'g'}{n if n < k else n - k}_s{s}"

    def delayed(self, expr: str, w: int, n: int, name: str) -> str:
        """``expr`` (``w`` bits) through a chain of ``n`` registers; returns the last one."""
        for i in range(1, n + 1):
            self.lines.append(f"reg {'' if w == 1 else f'[{w - 1}:0] '}{name}_d{i};\n"
                              f"always @(posedge clk) {name}_d{i} <= {expr};")
            expr = f"{name}_d{i}"
        return expr

    def node(self, name: str, w: int, expr: str, level: int) -> str:
        """A tree node at ``level``: a wire, or a register where a cut follows the level."""
        rng = "" if w == 1 else f"[{w - 1}:0] "
        if level in self.cuts:
            self.lines.append(f"reg {rng}{name};\nalways @(posedge clk) {name} <= {expr};")
        else:
            self.lines.append(f"wire {rng}{name} = {expr};")
        return name

    # ------------------------------------------------------------ sections
    def header(self, module: str) -> None:
        """The comment that describes the module, and its ports."""
        c, kst, regv, lat = self.c, self.kst, self.regv, self.lat
        ni, no, nc, sw, cw = c.n_inputs, self.no, self.nc, self.sw, self.cw
        self.lines.append(
            f"// Generated by kairo (kairo.logic.backends) -- do not edit.\n"
            f"// {ni} inputs, {c.n_gates} gates ({int(self.live[self.k:].sum())} reach an "
            f"output), {no} outputs in {nc} classes of {self.grp}; depth {self.dmax}.\n"
            f"// votes: class c at votes[c*{sw} +: {sw}]; y: first class with the most votes.\n"
            + (f"// Pipeline: {kst} register stage(s) in the gate core"
               + (f", {regv} in the vote and argmax trees (after levels "
                  f"{', '.join(map(str, sorted(self.cuts)))})" if regv else "")
               + f"; outputs are valid {lat} rising clk edge(s) after x.\n"
               if lat else "// Purely combinational.\n")
            + "`default_nettype none\n")
        ports = (["    input  wire clk,"] if lat else []) + [
            "    /* verilator lint_off UNUSEDSIGNAL */  // inputs no output depends on",
            f"    input  wire [{ni - 1}:0] x,",
            "    /* verilator lint_on UNUSEDSIGNAL */",
            f"    output wire [{no - 1}:0] o,",
            f"    output wire [{nc * sw - 1}:0] votes,",
            f"    output wire [{cw - 1}:0] y"]
        self.lines.append(f"module {module} (\n" + "\n".join(ports) + "\n);\n")

    def gate_core(self) -> None:
        """A wire per live gate and its assignment (reading its inputs in its stage)."""
        L, k = self.lines, self.k
        if self.gates:
            L.append("// gate core")
            names = [f"g{g}" for g in self.gates]
            for i in range(0, len(names), 16):
                L.append("wire " + ", ".join(names[i:i + 16]) + ";")
        for g in self.gates:
            sg = self.stage[k + g]
            expr = V_EXPR[self.ops[g]].format(a=self.at(self.a[g], sg),
                                              b=self.at(self.b[g], sg))
            L.append(f"assign g{g} = {expr};")

    def _read_until(self) -> np.ndarray:
        """The latest stage at which each node is read (−1: never)."""
        k, ops, a, b = self.k, self.ops, self.a, self.b
        need = np.full(self.c.n_nodes, -1, dtype=np.int64)
        for g in self.gates:
            ua, ub = OPERANDS_READ[ops[g]]
            sg = self.stage[k + g]
            if ua:
                need[a[g]] = max(need[a[g]], sg)
            if ub:
                need[b[g]] = max(need[b[g]], sg)
        need[self.outs] = self.kst
        return need

    def pipeline_registers(self) -> None:
        """The gate core's registers: each value read in later stages than its own goes
        through one register per stage."""
        kst, L = self.kst, self.lines
        if not kst:
            return
        need = self._read_until()
        L.append("\n// pipeline registers")
        by_stage: dict[int, list[str]] = {s: [] for s in range(1, kst + 1)}
        for n in np.flatnonzero(need > self.stage).tolist():
            for s in range(int(self.stage[n]) + 1, int(need[n]) + 1):
                L.append(f"reg {self.at(n, s)};")
                by_stage[s].append(f"    {self.at(n, s)} <= {self.at(n, s - 1)};")
        for s in range(1, kst + 1):
            if by_stage[s]:
                L.append(f"always @(posedge clk) begin  // stage {s}\n"
                         + "\n".join(by_stage[s]) + "\nend")

    def outputs(self) -> None:
        """``o``: the output nodes (delayed to stay aligned with ``y`` when the vote and
        argmax trees have registers)."""
        L, kst, no = self.lines, self.kst, self.no
        L.append("\n// outputs")
        if self.regv:               # o waits for the vote and argmax registers, aligned with y
            L.append(f"wire [{no - 1}:0] o_core;")
            for j, n in enumerate(self.outs):
                L.append(f"assign o_core[{j}] = {self.at(n, kst)};")
            L.append(f"assign o = {self.delayed('o_core', no, self.regv, 'o')};")
        else:
            for j, n in enumerate(self.outs):
                L.append(f"assign o[{j}] = {self.at(n, kst)};")

    def vote_counts(self) -> None:
        """A balanced adder tree per class (``cnt<class>``) and ``votes``."""
        L, kst, nc, grp, sw, outs = self.lines, self.kst, self.nc, self.grp, self.sw, self.outs
        n_add = vote_levels(self.c)[0]
        cut_add = sum(1 for v in self.cuts if v <= n_add)     # registers inside the adder trees
        L.append("\n// vote counts")
        wid = 0
        for cls in range(nc):
            # read the nodes themselves, not bits of the o bus: in event-driven simulators a
            # change of any bit of a vector net re-evaluates every reader of that net
            terms = [(self.at(outs[cls * grp + i], kst), 1) for i in range(grp)]  # (expr, max)
            level = 0
            while len(terms) > 1:
                level += 1
                nxt = []
                for i in range(0, len(terms) - 1, 2):
                    (e1, m1), (e2, m2) = terms[i], terms[i + 1]
                    w = vbits(m1 + m2)
                    nxt.append((self.node(f"pc{cls}_{wid}", w, f"{_zext(e1, vbits(m1), w)} + "
                                          f"{_zext(e2, vbits(m2), w)}", level), m1 + m2))
                    wid += 1
                if len(terms) % 2:      # the odd term skips this level (registered at a cut)
                    e, m = terms[-1]
                    if level in self.cuts:
                        e = self.node(f"pc{cls}_{wid}", vbits(m), e, level)
                        wid += 1
                    nxt.append((e, m))
                terms = nxt
            L.append(f"wire [{sw - 1}:0] cnt{cls} = {terms[0][0]};")
        cat = "{" + ", ".join(f"cnt{cls}" for cls in reversed(range(nc))) + "}"
        if self.regv - cut_add:     # votes wait for the argmax registers
            L.append(f"wire [{nc * sw - 1}:0] votes_tree = {cat};")
            L.append(f"assign votes = "
                     f"{self.delayed('votes_tree', nc * sw, self.regv - cut_add, 'votes')};")
        else:
            L.append(f"assign votes = {cat};")

    def argmax(self) -> None:
        """``y``: a tree of comparisons of the class counts, ties to the lower class."""
        L, sw, cw, node = self.lines, self.sw, self.cw, self.node
        L.append("\n// argmax (ties -> lower class index)")
        leaves = [(f"cnt{cls}", f"{cw}'d{cls}") for cls in range(self.nc)]
        aid = 0
        level = vote_levels(self.c)[0]
        while len(leaves) > 1:
            level += 1
            nxt = []
            for i in range(0, len(leaves) - 1, 2):
                (s1, i1), (s2, i2) = leaves[i], leaves[i + 1]
                t = f"am{aid}"
                aid += 1
                L.append(f"wire {t}_gt = {s2} > {s1};")
                v = None
                if len(leaves) > 2:                     # the root's best count is not needed
                    v = node(f"{t}_v", sw, f"{t}_gt ? {s2} : {s1}", level)
                nxt.append((v, node(f"{t}_i", cw, f"{t}_gt ? {i2} : {i1}", level)))
            if len(leaves) % 2:         # the odd leaf skips this level (registered at a cut)
                s1, i1 = leaves[-1]
                if level in self.cuts:
                    t = f"am{aid}"
                    aid += 1
                    s1, i1 = node(f"{t}_v", sw, s1, level), node(f"{t}_i", cw, i1, level)
                nxt.append((s1, i1))
            leaves = nxt
        L.append(f"assign y = {leaves[0][1]};")


def _zext(expr: str, w: int, to: int) -> str:
    return expr if w == to else f"{{{to - w}'b0, {expr}}}"


def write_verilog(circuit: Circuit, path, **kw) -> Path:
    """Write :func:`verilog_source` (same keywords) to ``path`` atomically."""
    return write_text(path, verilog_source(circuit, **kw), "Verilog file")

