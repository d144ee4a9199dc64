"""Compiled back ends for a :class:`~kairo.logic._circuit.Circuit`: bit-parallel C and Verilog.

C (``c_source`` / ``compile_c`` / ``write_c``)
    Every node is one machine word and every sample one bit of it, so one pass over the
    straight-line gate code evaluates a whole *block* of samples. The block is 64 samples for
    ``width=64`` (``uint64_t``), 256 or 512 samples for the wider widths, which use GCC vector
    extensions (``uint64_t __attribute__((vector_size(32|64)))``) so ``gcc -march=native``
    emits AVX2 / AVX-512 instructions; on a CPU without them gcc splits the vectors into
    narrower ones and the results stay the same.

    Data layout (the same ``uint64_t`` ABI for every width): with ``L = width / 64`` lanes per
    word, the input buffer is ``in[block][input][lane]`` (``n_inputs * L`` words per block) and
    the output buffer ``out[block][output][lane]``; sample ``s`` is bit ``s % 64`` of lane
    ``(s // 64) % L`` of block ``s // width``. This is exactly :func:`pack_bits`'s word order
    split into blocks, so packed words go in with one reshape/transpose and no bit shuffling.
    Samples past ``n_samples`` in the last block are padding and are ignored.

    Gates that no output depends on are left out (they cannot change any output). The live
    gates, in topological order, are split into parts of ``CHUNK`` (64) gates, each a
    ``noinline`` function of straight-line code with one ``const W`` local per node; values
    read by a later part also go to a scratch slot (slots are reused once their last reader
    has run), outputs are stored to ``out`` as soon as they are computed. This bounds what gcc
    optimizes at once: one straight-line function of 100k statements takes gcc -O2 longer
    than 10 minutes, while 64-gate parts compile at about 0.2–0.3 ms per gate and run as fast
    as any larger part size we measured (register pressure stays per part).

    The library exports::

        int kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks);
        int kairo_scores(const uint64_t *in, int32_t *scores, size_t n_samples);  // [s][class]
        int kairo_predict(const uint64_t *in, int32_t *pred, size_t n_samples);

    ``kairo_scores`` / ``kairo_predict`` read ``ceil(n_samples / width)`` blocks of ``in``,
    count each class's votes per sample by transposing 64×64 bit tiles (outputs × samples →
    samples × outputs) and ``__builtin_popcountll`` of each class's slice, and take the first
    argmax (ties go to the lowest class index, like :meth:`Circuit.predict`). All return 0,
    or -1 if ``malloc`` failed (scratch and output buffers are allocated once per call).

    Circuits that read thresholded uint8 pixels (``meta["thresholds"]`` dividing the inputs,
    as ``kairo logic train`` writes them; see :func:`image_spec`) also get::

        int kairo_predict_images(const uint8_t *img, int32_t *pred, size_t n_images);

    which goes from images to classes entirely in C, one block at a time: each image row is
    compared with every threshold 64 pixels at a time (AVX-512BW compare into a mask, AVX2
    compare + movemask, or a loop), the 64 × 64 bit tiles are transposed (AVX-512 or scalar)
    into the block's input words, the gates run, each class's votes are counted bit-sliced
    (full-adder trees over whole words) and the first argmax is taken bit-sliced too.
    :meth:`CompiledCircuit.predict_images` calls it; it equals
    ``predict(image_bits(circuit, images))``.

    ``write_c(..., standalone=True)`` writes a portable C99 file for firmware instead: only
    ``uint64_t``, no vector extensions, nothing from libc beyond ``<stdint.h>``/``<stddef.h>``,
    with ``kairo_eval`` (64-sample blocks), ``kairo_scores_one`` and ``kairo_predict_one``.

Verilog (``verilog_source`` / ``write_verilog`` / ``simulate_verilog``)
    Synthesizable Verilog-2001: one ``assign`` per gate, per-class vote counts from a balanced
    adder tree, and a balanced argmax tree whose ties go to the lower class index. With
    ``pipeline=k`` the gate core is cut into ``k + 1`` segments of about equal logic depth by
    ``k`` register stages (see :func:`verilog_source` for the latency).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import re
import shlex
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

import numpy as np

from kairo._errors import DataError, KairoError
from kairo._runs import cpu_flags as _cpu_flags
from kairo.logic._circuit import Circuit, pack_bits, unpack_bits
from kairo.logic._gates import N_GATES, TRUTH

__all__ = ["c_source", "compile_c", "CompiledCircuit", "write_c", "find_compiler",
           "native_width", "verilog_source", "write_verilog", "simulate_verilog",
           "verilog_latency", "vote_levels", "vote_cuts",
           "find_simulator", "image_spec", "C_FLAGS", "WIDTHS"]

WIDTHS = (64, 256, 512)
C_FLAGS = ("-O2", "-march=native", "-shared", "-fPIC")
CHUNK = 64            # gates per generated C function (see _c_core)
O1_ABOVE = 20_000     # live gates above which compile_c uses -O1 (see compile_c)
PARTS_PER_TU = 64     # generated functions per translation unit in parallel builds

GCC_INSTALL = "apt-get install gcc"
IVERILOG_INSTALL = "apt-get install iverilog"
VERILATOR_INSTALL = "apt-get install verilator"


# ============================================================================ shared helpers
def _uses(op: int) -> tuple[bool, bool]:
    """Whether gate ``op`` depends on input a and on input b (from its truth table)."""
    t = int(TRUTH[op])
    out = [[(t >> (2 * a + b)) & 1 for b in (0, 1)] for a in (0, 1)]
    return out[0] != out[1], any(out[a][0] != out[a][1] for a in (0, 1))


_USES = [_uses(op) for op in range(N_GATES)]

# C expressions; {a}, {b} are operand names, ZERO/ONES the constant words.
_C_EXPR = ("ZERO", "{a} & {b}", "{a} & ~{b}", "{a}", "~{a} & {b}", "{b}", "{a} ^ {b}",
           "{a} | {b}", "~({a} | {b})", "~({a} ^ {b})", "~{b}", "{a} | ~{b}", "~{a}",
           "~{a} | {b}", "~({a} & {b})", "ONES")
_V_EXPR = ("1'b0", "{a} & {b}", "{a} & ~{b}", "{a}", "~{a} & {b}", "{b}", "{a} ^ {b}",
           "{a} | {b}", "~({a} | {b})", "~({a} ^ {b})", "~{b}", "{a} | ~{b}", "~{a}",
           "~{a} | {b}", "~({a} & {b})", "1'b1")


def _check_circuit(circuit) -> Circuit:
    if not isinstance(circuit, Circuit):
        raise KairoError(f"expected a kairo.logic Circuit, got {type(circuit).__name__}; "
                         f"load one with Circuit.load(path)")
    return circuit


def _live_nodes(circuit: Circuit) -> np.ndarray:
    """Boolean mask over nodes: True where some output depends on the node."""
    k = circuit.n_inputs
    live = np.zeros(circuit.n_nodes, dtype=bool)
    live[circuit.outputs] = True
    ops, a, b = circuit.ops.tolist(), circuit.a.tolist(), circuit.b.tolist()
    lv = live.tolist()
    for i in range(circuit.n_gates - 1, -1, -1):
        if lv[k + i]:
            ua, ub = _USES[ops[i]]
            if ua:
                lv[a[i]] = True
            if ub:
                lv[b[i]] = True
    return np.asarray(lv, dtype=bool)


def _check_x(circuit: Circuit, x) -> np.ndarray:
    """The Circuit.evaluate input contract: (n_samples, n_inputs) of 0/1."""
    return circuit._check_x(x)


def _atomic_write(path, text: str, what: str) -> Path:
    path = Path(path)
    if not path.parent.is_dir():
        raise KairoError(f"{what} {path}: folder {path.parent} does not exist; create it first "
                         f"(mkdir -p {path.parent})")
    from kairo._runs import atomic_write_text

    return atomic_write_text(path, text)


def _stderr_head(text: str, n: int = 12) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = "\n".join(lines[:n])
    return head + (f"\n… ({len(lines) - n} more lines)" if len(lines) > n else "")


# ============================================================================ C back end
def native_width() -> int:
    """The ``width="auto"`` choice: 512 with AVX-512F, 256 with AVX2, else 64."""
    flags = _cpu_flags()
    if "avx512f" in flags:
        return 512
    if "avx2" in flags:
        return 256
    return 64


def _resolve_width(width) -> int:
    if isinstance(width, str) and width == "auto":
        return native_width()
    if isinstance(width, (int, np.integer)) and not isinstance(width, bool) and \
            int(width) in WIDTHS:
        return int(width)
    raise KairoError(f"C width must be \"auto\" or one of {', '.join(map(str, WIDTHS))} "
                     f"(bits per word), got {width!r}")


def _class_segments(n_out: int, n_classes: int):
    """(chunk, class, mask) for each 64-output chunk and class that overlap, in chunk order."""
    g = n_out // n_classes
    segs = []
    for c in range((n_out + 63) // 64):
        lo, hi = c * 64, min(c * 64 + 64, n_out)
        for cls in range(lo // g, (hi - 1) // g + 1):
            s, e = max(lo, cls * g), min(hi, cls * g + g)
            mask = ((1 << (e - s)) - 1) << (s - lo)
            segs.append((c, cls, mask))
    return segs


def _c_core(circuit: Circuit, lanes: int, chunk: int) -> tuple[str, int]:
    """The gate code: ``kairo_part<p>`` functions and ``kairo_block(x, y, v)``.

    Live gates (in topological order) are split into parts of ``chunk`` gates, each a
    ``noinline`` function of straight-line code whose nodes are local ``const W`` values, so
    gcc never sees one giant function (its register allocator is superlinear in function
    size: a single 100k-statement function takes gcc > 10 min). A node read by a later part
    is also stored to a scratch slot ``v[slot]``; slots are reused once their last reader has
    run. Inputs are read from ``x`` where used. Returns (C text, number of scratch slots).
    """
    k = circuit.n_inputs
    live = _live_nodes(circuit)
    ops, a, b = circuit.ops.tolist(), circuit.a.tolist(), circuit.b.tolist()
    gates = np.flatnonzero(live[k:]).tolist()
    n_parts = max(1, -(-len(gates) // chunk))
    part = {}                                   # gate node -> part index
    for idx, g in enumerate(gates):
        part[k + g] = idx // chunk
    last = {}                                   # node -> last part that reads it
    for g in gates:
        p = part[k + g]
        ua, ub = _USES[ops[g]]
        for use, src in ((ua, a[g]), (ub, b[g])):
            if use and src >= k and part[src] != p:
                last[src] = max(last.get(src, -1), p)
    stores: dict[int, list[int]] = {}
    for j, node in enumerate(circuit.outputs.tolist()):
        stores.setdefault(node, []).append(j)

    if lanes == 1:
        def ld(i):
            return f"x[{i}]"

        def st(j, e):
            return f"y[{j}] = {e};"
    else:
        def ld(i):
            return f"kairo_ld(x + {i * lanes})"

        def st(j, e):
            return f"kairo_st(y + {j * lanes}, {e});"

    slot: dict[int, int] = {}
    free: list[int] = []
    n_slots = 0
    releases: dict[int, list[int]] = {}         # part -> nodes whose slot frees after it
    for node, p in last.items():
        releases.setdefault(p, []).append(node)
    text = []
    args = "const uint64_t *restrict x, uint64_t *restrict y, W *restrict v"
    protos = "".join(f"KAIRO_PART void kairo_part{p}({args});\n" for p in range(n_parts))
    for p in range(n_parts):
        body = []
        if p == 0:
            for i in range(k):
                for j in stores.get(i, ()):
                    body.append(f"    {st(j, ld(i))}")
        for g in gates[p * chunk:(p + 1) * chunk]:
            node = k + g
            ua, ub = _USES[ops[g]]
            names = []
            for use, src in ((ua, a[g]), (ub, b[g])):
                if not use:
                    names.append("")
                elif src < k:
                    names.append(ld(src))
                elif part[src] == p:
                    names.append(f"n{src}")
                else:
                    names.append(f"v[{slot[src]}]")
            body.append(f"    const W n{node} = "
                        f"{_C_EXPR[ops[g]].format(a=names[0], b=names[1])};")
            if node in last:
                if free:
                    slot[node] = free.pop()
                else:
                    slot[node] = n_slots
                    n_slots += 1
                body.append(f"    v[{slot[node]}] = n{node};")
            for j in stores.get(node, ()):
                body.append(f"    {st(j, f'n{node}')}")
        for node in releases.get(p, ()):
            free.append(slot[node])
        text.append(f"KAIRO_PART void kairo_part{p}({args})\n{{\n"
                    f"    (void)x; (void)y; (void)v;\n" + "\n".join(body) + "\n}\n")
    calls = "\n".join(f"    kairo_part{p}(x, y, v);" for p in range(n_parts))
    block = (f"/* One block: x = in + block * KAIRO_N_INPUTS * KAIRO_LANES, y likewise for "
             f"out;\n * v = KAIRO_N_SLOTS scratch words. */\n"
             f"static void kairo_block({args})\n{{\n{calls}\n}}\n")
    # the markers let compile_c split the parts over several translation units
    return (protos + _PARTS_BEGIN + "\n".join(text) + _PARTS_END + block,
            max(1, n_slots))


_PARTS_BEGIN = "/* kairo:parts-begin */\n"
_PARTS_END = "/* kairo:parts-end */\n"


_TRANSPOSE = r"""
/* In-place transpose of a 64x64 bit matrix: afterwards bit j of a[i] is what bit i of a[j]
 * was (bit 0 = least significant). */
static void kairo_transpose64(uint64_t a[64])
{
    uint64_t m = 0x00000000FFFFFFFFull;
    for (unsigned j = 32; j != 0; j >>= 1, m ^= m << j) {
        for (unsigned k = 0; k < 64; k = ((k | j) + 1) & ~j) {
            uint64_t t = ((a[k] >> j) ^ a[k | j]) & m;
            a[k] ^= t << j;
            a[k | j] ^= t;
        }
    }
}
"""


def _c_header(circuit: Circuit, width: int, live_gates: int, extra: str) -> str:
    c = circuit
    g = c.n_outputs // c.n_classes
    return f"""/* Generated by kairo (kairo.logic._backends) -- do not edit.
 *
 * Circuit: {c.n_inputs} inputs, {c.n_gates} gates ({live_gates} reach an output and are
 * emitted), {c.n_outputs} outputs in {c.n_classes} class groups of {g}; depth {c.depth()}.
 * Word width {width} bits: one block = {width} samples, sample s is bit s % 64 of lane
 * (s / 64) % {width // 64} of block s / {width}.
{extra} */
"""


def c_source(circuit: Circuit, *, width="auto", chunk: int | None = None) -> str:
    """Bit-parallel C source for ``compile_c`` (GCC vector extensions for width 256/512).

    ``width``: ``"auto"`` (:func:`native_width`), 64, 256 or 512 bits per node word. See the
    module docstring for the buffer layout and the exported functions. ``chunk``: gates per
    generated function (default ``CHUNK``; see :func:`_c_core`).
    """
    c = _check_circuit(circuit)
    width = _resolve_width(width)
    chunk = _check_chunk(chunk)
    lanes = width // 64
    core, n_slots = _c_core(c, lanes, chunk)
    n_alloc = -(-n_slots * lanes * 8 // 64) * 64 // (lanes * 8)   # whole 64-byte lines
    n_live = int(_live_nodes(c)[c.n_inputs:].sum())
    segs = _class_segments(c.n_outputs, c.n_classes)
    ni, no, nc = c.n_inputs, c.n_outputs, c.n_classes
    if lanes == 1:
        wtype = "typedef uint64_t W;\n#define ZERO ((W)0)\n#define ONES (~(W)0)\n"
    else:
        # a W wider than the CPU's vectors (512 bits without AVX-512) is split by the
        # compiler, and GCC then notes that returning it changes the ABI (-Wpsabi); that
        # concerns only these file-local helpers, so the note is silenced for -Werror builds
        wtype = (f"typedef uint64_t W __attribute__((vector_size({width // 8})));\n"
                 "#define ZERO ((W){0})\n#define ONES (~(W){0})\n"
                 "#if defined(__GNUC__) && !defined(__clang__)\n"
                 "#pragma GCC diagnostic ignored \"-Wpsabi\"\n#endif\n"
                 "static inline W kairo_ld(const uint64_t *p)"
                 " { W v; memcpy(&v, p, sizeof v); return v; }\n"
                 "static inline void kairo_st(uint64_t *p, W v) { memcpy(p, &v, sizeof v); }\n")
    extra = f""" *
 * Layout: in[block][input][lane] ({ni} x {lanes} uint64_t words per block),
 *         out[block][output][lane] ({no} x {lanes} words per block),
 *         scores[sample][class] (int32_t), pred[sample] (int32_t).
 *
 *   int kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks);
 *   int kairo_scores(const uint64_t *in, int32_t *scores, size_t n_samples);
 *   int kairo_predict(const uint64_t *in, int32_t *pred, size_t n_samples);
 *
 * kairo_scores / kairo_predict read ceil(n_samples / {width}) blocks of `in`. All return 0,
 * or -1 when malloc fails. Prediction = first class with the most votes.
 * Gate code: {chunk} gates per function, {n_slots} scratch words carry values between them.
"""
    out = [_c_header(c, width, n_live, extra),
           "#include <stdint.h>\n#include <stddef.h>\n#include <stdlib.h>\n#include <string.h>\n",
           f"#define KAIRO_N_INPUTS {ni}\n#define KAIRO_N_OUTPUTS {no}\n"
           f"#define KAIRO_N_CLASSES {nc}\n#define KAIRO_WIDTH {width}\n"
           f"#define KAIRO_LANES {lanes}\n#define KAIRO_N_SLOTS {n_alloc}\n"
           "/* hidden: the parts may live in several objects of one library */\n"
           "#define KAIRO_PART __attribute__((noinline, visibility(\"hidden\")))\n",
           wtype, "\n", core,
           r"""
static W *kairo_scratch(void)
{
    return aligned_alloc(64, sizeof(W) * KAIRO_N_SLOTS);
}

int kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks)
{
    W *v = kairo_scratch();
    if (!v)
        return -1;
    for (size_t k = 0; k < n_blocks; ++k)
        kairo_block(in + k * (size_t)KAIRO_N_INPUTS * KAIRO_LANES,
                    out + k * (size_t)KAIRO_N_OUTPUTS * KAIRO_LANES, v);
    free(v);
    return 0;
}
""",
           _TRANSPOSE,
           f"\n#define KAIRO_N_CHUNKS {(no + 63) // 64}\n#define KAIRO_N_SEGS {len(segs)}\n"
           "/* (64-output chunk, class, bit mask) of every chunk/class overlap */\n"
           "static const uint32_t kairo_seg_chunk[KAIRO_N_SEGS] = {"
           + ",".join(str(s[0]) for s in segs) + "};\n"
           "static const uint32_t kairo_seg_class[KAIRO_N_SEGS] = {"
           + ",".join(str(s[1]) for s in segs) + "};\n"
           "static const uint64_t kairo_seg_mask[KAIRO_N_SEGS] = {"
           + ",".join(f"0x{s[2]:x}ull" for s in segs) + "};\n",
           r"""
/* Add the votes of the ns (<= 64) samples in lane `lane` of block outputs y to sc[s][class]. */
static void kairo_lane_scores(const uint64_t *y, size_t lane, int32_t *sc, size_t ns)
{
    uint64_t t[64];
    size_t seg = 0;
    for (size_t c = 0; c < KAIRO_N_CHUNKS; ++c) {
        for (size_t r = 0; r < 64; ++r) {
            size_t o = c * 64 + r;
            t[r] = o < KAIRO_N_OUTPUTS ? y[o * KAIRO_LANES + lane] : 0;
        }
        kairo_transpose64(t);   /* t[s]: bit r = output c*64+r of sample s */
        for (; seg < KAIRO_N_SEGS && kairo_seg_chunk[seg] == c; ++seg) {
            const uint64_t mask = kairo_seg_mask[seg];
            int32_t *col = sc + kairo_seg_class[seg];
            for (size_t s = 0; s < ns; ++s)
                col[s * KAIRO_N_CLASSES] += __builtin_popcountll(t[s] & mask);
        }
    }
}

/* Votes of n_samples samples into scores[s][class] (pred == NULL) or, with pred, only the
 * first argmax per sample (scores is then a 64-sample buffer). */
static int kairo_count(const uint64_t *in, int32_t *scores, int32_t *pred, size_t n_samples)
{
    const size_t per_block = 64 * (size_t)KAIRO_LANES;
    uint64_t *y = malloc(sizeof(uint64_t) * KAIRO_N_OUTPUTS * KAIRO_LANES);
    W *v = kairo_scratch();
    if (!y || !v) {
        free(y);
        free(v);
        return -1;
    }
    for (size_t k = 0; k * per_block < n_samples; ++k) {
        kairo_block(in + k * (size_t)KAIRO_N_INPUTS * KAIRO_LANES, y, v);
        for (size_t lane = 0; lane < KAIRO_LANES; ++lane) {
            size_t s0 = k * per_block + lane * 64;
            if (s0 >= n_samples)
                break;
            size_t ns = n_samples - s0 < 64 ? n_samples - s0 : 64;
            int32_t *sc = pred ? scores : scores + s0 * KAIRO_N_CLASSES;
            memset(sc, 0, sizeof(int32_t) * KAIRO_N_CLASSES * ns);
            kairo_lane_scores(y, lane, sc, ns);
            if (!pred)
                continue;
            for (size_t s = 0; s < ns; ++s) {
                const int32_t *row = sc + s * KAIRO_N_CLASSES;
                int32_t best = 0, top = row[0];
                for (int32_t cls = 1; cls < KAIRO_N_CLASSES; ++cls) {
                    const int gt = row[cls] > top;      /* strict: ties keep the lower class */
                    best = gt ? cls : best;
                    top = gt ? row[cls] : top;
                }
                pred[s0 + s] = best;
            }
        }
    }
    free(y);
    free(v);
    return 0;
}

int kairo_scores(const uint64_t *in, int32_t *scores, size_t n_samples)
{
    return kairo_count(in, scores, NULL, n_samples);
}

int kairo_predict(const uint64_t *in, int32_t *pred, size_t n_samples)
{
    int32_t *sc = malloc(sizeof(int32_t) * 64 * KAIRO_N_CLASSES);
    if (!sc)
        return -1;
    int rc = kairo_count(in, sc, pred, n_samples);
    free(sc);
    return rc;
}
"""]
    if image_spec(c) is not None:
        out.append(_c_images(c, width))
    return "".join(out)


def image_spec(circuit: Circuit) -> tuple[tuple[int, ...], int] | None:
    """``(thresholds, n_pixels)`` for circuits that read thresholded uint8 pixels, else None.

    ``circuit.meta["thresholds"]`` (as written by ``kairo logic train``) gives the pixel
    thresholds; input ``k * n_pixels + p`` is ``pixel p > thresholds[k]`` (threshold-major,
    as :func:`kairo.logic._model.image_bits`). The thresholds returned are the equivalent
    integers for uint8 pixels: ``floor(t)`` clipped to −1 (always 1) … 255 (always 0).
    """
    th = circuit.meta.get("thresholds") if isinstance(circuit.meta, dict) else None
    if not isinstance(th, (list, tuple)) or not th or any(
            isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating))
            or not np.isfinite(t) for t in th):
        return None
    if circuit.n_inputs % len(th):
        return None
    eff = tuple(int(min(255, max(-1, np.floor(t)))) for t in th)
    return eff, circuit.n_inputs // len(th)


VOTE_CHUNK = 128      # outputs per generated vote-counting function (see _c_images)


class _BitSum:
    """C code for a bit-sliced sum of 1-bit words: full adders per bit weight (carry-save).

    Words pushed at weight k count 2^k per set bit; with at most two words pending per weight
    each full adder turns three into two, so a sum of m words costs about 5m operations.
    Only ``n_bits`` weights are kept: the caller guarantees that the total fits, so a carry
    out of the top weight is always zero and is not computed.
    """

    def __init__(self, n_bits: int, lines: list[str], prefix: str = "t"):
        self.levels: list[list[str]] = [[] for _ in range(n_bits)]
        self.lines, self.prefix, self.n = lines, prefix, 0

    def tmp(self, expr: str) -> str:
        name = f"{self.prefix}{self.n}"
        self.n += 1
        self.lines.append(f"    const W {name} = {expr};")
        return name

    def push(self, k: int, word: str) -> None:
        while True:
            lv = self.levels[k]
            lv.append(word)
            if len(lv) < 3:
                return
            a, b, c = lv
            lv.clear()
            x = self.tmp(f"{a} ^ {b}")
            lv.append(self.tmp(f"{x} ^ {c}"))
            if k + 1 == len(self.levels):
                return
            word = self.tmp(f"({a} & {b}) | ({x} & {c})")
            k += 1

    def finish(self) -> list[str]:
        """One word (or ``ZERO``) per weight, least significant first."""
        for k, lv in enumerate(self.levels):
            if len(lv) == 2:
                a, b = lv
                lv.clear()
                lv.append(self.tmp(f"{a} ^ {b}"))
                if k + 1 < len(self.levels):
                    self.push(k + 1, self.tmp(f"{a} & {b}"))
        return [lv[0] if lv else "ZERO" for lv in self.levels]


def _c_images(circuit: Circuit, width: int) -> str:
    """``kairo_predict_images``: uint8 images → classes, all in C (appended to c_source).

    Per block of ``width`` images: compare each 64-pixel row chunk with every threshold
    (AVX-512BW ``vpcmpub`` into a mask register, or AVX2 compare + ``movemask``, else a
    loop), transpose the 64 × 64 bit tiles (images × pixels → pixels × images) into the
    block's input words, run ``kairo_block``, count each class's votes bit-sliced (full-adder
    trees over the output words: about five word operations per output for ``width``
    samples at once), take the first argmax bit-sliced, and write one int32 per image.
    """
    c = circuit
    th, n_px = image_spec(c)
    lanes = width // 64
    no, nc = c.n_outputs, c.n_classes
    grp = no // nc
    kb, cw = _vbits(grp), _class_bits(nc)

    def ld(o):
        return f"y[{o}]" if lanes == 1 else f"kairo_ld(y + {o * lanes})"

    masks = []
    for k, t in enumerate(th):
        if t < 0:
            masks.append(f"    m[{64 * k}] = ~0ull;                 /* every pixel > {t} */")
        elif t >= 255:
            masks.append(f"    m[{64 * k}] = 0;                     /* no pixel > 255 */")
        else:
            masks.append(f"    m[{64 * k}] = KAIRO_GT({t});")

    # vote counting: one noinline function per class and VOTE_CHUNK outputs, adding into the
    # bit-sliced count acc[class * KAIRO_VOTE_BITS + bit]
    funcs, calls = [], []
    for cls in range(nc):
        for j0 in range(0, grp, VOTE_CHUNK):
            name = f"kairo_votes{cls}_{j0 // VOTE_CHUNK}"
            lines: list[str] = []
            bs = _BitSum(kb, lines)
            if j0:                      # the count so far enters as words of weight 2^k
                for k in range(kb):
                    lines.append(f"    const W a{k} = acc[{cls * kb + k}];")
                    bs.push(k, f"a{k}")
            for o in range(cls * grp + j0, cls * grp + min(grp, j0 + VOTE_CHUNK)):
                lines.append(f"    const W o{o} = {ld(o)};")
                bs.push(0, f"o{o}")
            lines += [f"    acc[{cls * kb + k}] = {w};" for k, w in enumerate(bs.finish())]
            funcs.append(f"static KAIRO_VOTE void {name}(const uint64_t *restrict y, "
                         f"W *restrict acc)\n{{\n" + "\n".join(lines) + "\n}\n")
            calls.append(f"    {name}(y, acc);")

    # first argmax, bit-sliced: scan the classes in order, replace on a strictly larger count
    am: list[str] = []
    bs = _BitSum(1, am, prefix="m")
    best = [f"b{k}" for k in range(kb)]
    am += [f"    const W b{k} = acc[{k}];" for k in range(kb)]
    idx = ["ZERO"] * cw
    for cls in range(1, nc):
        cur = [f"c{cls}_{k}" for k in range(kb)]
        am += [f"    const W c{cls}_{k} = acc[{cls * kb + k}];" for k in range(kb)]
        gt, eq = None, None                         # from the most significant bit down
        for k in reversed(range(kb)):
            here = bs.tmp(f"{cur[k]} & ~{best[k]}")
            gt = here if gt is None else bs.tmp(f"{gt} | ({eq} & {here})")
            if k:
                same = bs.tmp(f"~({cur[k]} ^ {best[k]})")
                eq = same if eq is None else bs.tmp(f"{eq} & {same}")
        if cls < nc - 1:
            best = [bs.tmp(f"({gt} & {cur[k]}) | (~{gt} & {best[k]})") for k in range(kb)]
        idx = [bs.tmp(f"{idx[b]} | {gt}") if (cls >> b) & 1 else
               (bs.tmp(f"{idx[b]} & ~{gt}") if idx[b] != "ZERO" else "ZERO")
               for b in range(cw)]
    am += [f"    idx[{b}] = {w};" for b, w in enumerate(idx)]
    if nc == 1:
        am = ["    (void)acc;"] + [ln for ln in am if not ln.lstrip().startswith("const W b")]
    argmax = ("static void kairo_argmax(const W *restrict acc, W *restrict idx)\n{\n"
              + "\n".join(am) + "\n}\n")

    ths = ", ".join(map(str, th))
    return rf"""
/* ------------------------------------------------------------------ uint8 images -> classes
 *
 *   int kairo_predict_images(const uint8_t *img, int32_t *pred, size_t n_images);
 *
 * img: n_images x {n_px} uint8 pixels, row-major. Input k * {n_px} + p of the circuit is
 * pixel p > threshold k, thresholds {{{ths}}} (threshold-major). Writes the first class
 * with the most votes of every image to pred. Returns 0, or -1 when malloc fails.
 * Single-threaded; one block of {width} images at a time.
 */
#if defined(__AVX512BW__) || defined(__AVX2__)
#include <immintrin.h>
#endif
#define KAIRO_N_PIXELS {n_px}
#define KAIRO_N_THRESH {len(th)}
#define KAIRO_VOTE_BITS {kb}
#define KAIRO_CLASS_BITS {cw}
#define KAIRO_VOTE __attribute__((noinline))

#if !defined(__AVX512BW__) && defined(__AVX2__)
/* x > t for unsigned bytes via the signed compare: flip the top bit of both sides */
static inline uint64_t kairo_gt_avx2(__m256i lo, __m256i hi, int t)
{{
    const __m256i tv = _mm256_set1_epi8((char)(t ^ 0x80));
    const uint32_t a = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(lo, tv));
    const uint32_t b = (uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(hi, tv));
    return a | (uint64_t)b << 32;
}}
#endif

#if !defined(__AVX512BW__) && !defined(__AVX2__)
static inline uint64_t kairo_gt_scalar(const uint8_t *p, size_t w, int t)
{{
    uint64_t m = 0;
    for (size_t j = 0; j < w; ++j)
        m |= (uint64_t)(p[j] > t) << j;
    return m;
}}
#endif

/* m[64 * k]: bit j = pixel p[j] > threshold k, for the w (<= 64) pixels at p. */
static inline void kairo_px_masks(const uint8_t *p, size_t w, uint64_t *m)
{{
#if defined(__AVX512BW__)
    const __m512i v = w == 64 ? _mm512_loadu_si512((const void *)p)
                              : _mm512_maskz_loadu_epi8((__mmask64)((1ull << w) - 1), p);
#define KAIRO_GT(t) ((uint64_t)_mm512_cmpgt_epu8_mask(v, _mm512_set1_epi8((char)(t))))
#elif defined(__AVX2__)
    uint8_t buf[64];
    if (w < 64) {{
        memset(buf, 0, sizeof buf);
        memcpy(buf, p, w);
        p = buf;
    }}
    const __m256i top = _mm256_set1_epi8((char)0x80);
    const __m256i lo = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)p), top);
    const __m256i hi = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(p + 32)), top);
#define KAIRO_GT(t) kairo_gt_avx2(lo, hi, (t))
#else
#define KAIRO_GT(t) kairo_gt_scalar(p, w, (t))
#endif
{chr(10).join(masks)}
#undef KAIRO_GT
}}

#if defined(__AVX512F__)
/* kairo_transpose64 with AVX-512: the 64 words in 8 registers of 8; swapping bit j of the
 * row and column index is one "delta swap" per pair of words k, k | j (the six swaps
 * commute). For j = 32, 16, 8 the pair is in two registers, for j = 4, 2, 1 in one, whose
 * lanes are permuted to meet their partners. */
#define KAIRO_XSWAP(A, B, J, M) do {{                                                     \
        const __m512i t_ = _mm512_and_si512(_mm512_xor_si512(_mm512_srli_epi64(A, J), B), \
                                            _mm512_set1_epi64((long long)(M)));          \
        A = _mm512_xor_si512(A, _mm512_slli_epi64(t_, J));                              \
        B = _mm512_xor_si512(B, t_);                                                     \
    }} while (0)
#define KAIRO_ISWAP(A, J, M, PERM, HI) do {{                                              \
        const __m512i s_ = PERM(A);                                                      \
        const __m512i t_ = _mm512_and_si512(_mm512_xor_si512(_mm512_srli_epi64(A, J), s_),\
                                            _mm512_set1_epi64((long long)(M)));          \
        A = _mm512_mask_xor_epi64(_mm512_xor_si512(A, _mm512_slli_epi64(t_, J)), HI, A,  \
                                  PERM(t_));                                             \
    }} while (0)
#define KAIRO_P4(x) _mm512_shuffle_i64x2(x, x, 0x4e)     /* word k <-> k ^ 4 */
#define KAIRO_P2(x) _mm512_permutex_epi64(x, 0x4e)        /* word k <-> k ^ 2 */
#define KAIRO_P1(x) _mm512_shuffle_epi32(x, 0x4e)         /* word k <-> k ^ 1 */
static inline void kairo_transpose64_fast(uint64_t a[64])
{{
    __m512i r[8];
    for (int i = 0; i < 8; ++i)
        r[i] = _mm512_loadu_si512((const void *)(a + 8 * i));
    for (int i = 0; i < 4; ++i)
        KAIRO_XSWAP(r[i], r[i + 4], 32, 0x00000000FFFFFFFFull);
    for (int i = 0; i < 8; i += (i & 1) ? 3 : 1)                      /* 0, 1, 4, 5 */
        KAIRO_XSWAP(r[i], r[i + 2], 16, 0x0000FFFF0000FFFFull);
    for (int i = 0; i < 8; i += 2)
        KAIRO_XSWAP(r[i], r[i + 1], 8, 0x00FF00FF00FF00FFull);
    for (int i = 0; i < 8; ++i) {{
        KAIRO_ISWAP(r[i], 4, 0x0F0F0F0F0F0F0F0Full, KAIRO_P4, 0xF0);
        KAIRO_ISWAP(r[i], 2, 0x3333333333333333ull, KAIRO_P2, 0xCC);
        KAIRO_ISWAP(r[i], 1, 0x5555555555555555ull, KAIRO_P1, 0xAA);
    }}
    for (int i = 0; i < 8; ++i)
        _mm512_storeu_si512((void *)(a + 8 * i), r[i]);
}}
#else
#define kairo_transpose64_fast kairo_transpose64
#endif

#define KAIRO_N_CHUNKS_PX ((KAIRO_N_PIXELS + 63) / 64)
#define KAIRO_PX_TAIL (KAIRO_N_PIXELS - 64 * (KAIRO_N_CHUNKS_PX - 1))   /* 1 … 64 */

/* Threshold the ns (<= 64) images at img and transpose them into lane `lane` of the input
 * block x: x[i * KAIRO_LANES + lane] bit r = input i of image r. Each image is read once,
 * front to back (t[chunk][threshold][image] holds the masks), then the tiles transposed. */
static void kairo_image_lane(const uint8_t *img, size_t ns, uint64_t *restrict x, size_t lane)
{{
    static _Thread_local uint64_t t[KAIRO_N_CHUNKS_PX][KAIRO_N_THRESH][64]
        __attribute__((aligned(64)));
    for (size_t r = 0; r < 64; ++r) {{
        if (r < ns) {{
            const uint8_t *p = img + r * KAIRO_N_PIXELS;
            for (size_t c = 0; c + 1 < KAIRO_N_CHUNKS_PX; ++c)
                kairo_px_masks(p + 64 * c, 64, &t[c][0][r]);
            kairo_px_masks(p + 64 * (KAIRO_N_CHUNKS_PX - 1), KAIRO_PX_TAIL,
                           &t[KAIRO_N_CHUNKS_PX - 1][0][r]);
        }} else {{
            for (size_t c = 0; c < KAIRO_N_CHUNKS_PX; ++c)
                for (size_t k = 0; k < KAIRO_N_THRESH; ++k)
                    t[c][k][r] = 0;
        }}
    }}
    for (size_t c = 0; c < KAIRO_N_CHUNKS_PX; ++c) {{
        const size_t w = c + 1 < KAIRO_N_CHUNKS_PX ? 64 : KAIRO_PX_TAIL;
        for (size_t k = 0; k < KAIRO_N_THRESH; ++k) {{
            kairo_transpose64_fast(t[c][k]);  /* t[c][k][j]: bit r = pixel 64c + j of image r */
            uint64_t *dst = x + (k * KAIRO_N_PIXELS + 64 * c) * KAIRO_LANES + lane;
            for (size_t j = 0; j < w; ++j)
                dst[j * KAIRO_LANES] = t[c][k][j];
        }}
    }}
}}

{chr(10).join(funcs)}
static void kairo_votes(const uint64_t *restrict y, W *restrict acc)
{{
{chr(10).join(calls)}
}}

{argmax}
/* Class of each of the ns (<= KAIRO_WIDTH) samples of a block from the index bit-planes. */
static void kairo_write_classes(const W *idx, int32_t *pred, size_t ns)
{{
    uint64_t w[KAIRO_CLASS_BITS][KAIRO_LANES];
    memcpy(w, idx, sizeof w);
    for (size_t s = 0; s < ns; ++s) {{
        int32_t cl = 0;
        for (size_t b = 0; b < KAIRO_CLASS_BITS; ++b)
            cl |= (int32_t)((w[b][s >> 6] >> (s & 63)) & 1u) << b;
        pred[s] = cl;
    }}
}}

static size_t kairo_round64(size_t n) {{ return (n + 63) / 64 * 64; }}

int kairo_predict_images(const uint8_t *img, int32_t *pred, size_t n_images)
{{
    uint64_t *x = aligned_alloc(64, kairo_round64(8 * (size_t)KAIRO_N_INPUTS * KAIRO_LANES));
    uint64_t *y = aligned_alloc(64, kairo_round64(8 * (size_t)KAIRO_N_OUTPUTS * KAIRO_LANES));
    W *acc = aligned_alloc(64, kairo_round64(sizeof(W) * KAIRO_N_CLASSES * KAIRO_VOTE_BITS));
    W *idx = aligned_alloc(64, kairo_round64(sizeof(W) * KAIRO_CLASS_BITS));
    W *v = kairo_scratch();
    int rc = -1;
    if (!x || !y || !acc || !idx || !v)
        goto done;
    for (size_t s0 = 0; s0 < n_images; s0 += KAIRO_WIDTH) {{
        const size_t nb = n_images - s0 < KAIRO_WIDTH ? n_images - s0 : KAIRO_WIDTH;
        for (size_t lane = 0; lane < KAIRO_LANES; ++lane) {{
            const size_t first = lane * 64;
            const size_t ns = nb <= first ? 0 : nb - first < 64 ? nb - first : 64;
            kairo_image_lane(ns ? img + (s0 + first) * KAIRO_N_PIXELS : img, ns, x, lane);
        }}
        kairo_block(x, y, v);
        kairo_votes(y, acc);
        kairo_argmax(acc, idx);
        kairo_write_classes(idx, pred + s0, nb);
    }}
    rc = 0;
done:
    free(x);
    free(y);
    free(acc);
    free(idx);
    free(v);
    return rc;
}}
"""


def _c_portable_source(circuit: Circuit, chunk: int | None = None) -> str:
    """Plain C99 (uint64_t only, no libc beyond stdint/stddef) for firmware."""
    c = circuit
    chunk = _check_chunk(chunk)
    core, n_slots = _c_core(c, 1, chunk)
    n_live = int(_live_nodes(c)[c.n_inputs:].sum())
    ni, no, nc = c.n_inputs, c.n_outputs, c.n_classes
    g = no // nc
    extra = f""" *
 * Portable C99: only <stdint.h> and <stddef.h>, no vector extensions, no other libc.
 * Compile it into your firmware or program (e.g. `cc -O2 -c model.c`) and declare:
 *
 *   // One sample: bits[i] is input i (0 or non-zero). Writes {nc} vote counts to scores.
 *   void    kairo_scores_one(const uint8_t *bits, int32_t *scores);
 *   // One sample: the first class with the most votes (0 .. {nc - 1}).
 *   int32_t kairo_predict_one(const uint8_t *bits);
 *   // Batches of 64 samples: in[block][input], out[block][output]; sample s of a block
 *   // is bit s of each word (bit 0 = least significant).
 *   void    kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks);
 *
 * Memory: each call keeps {n_slots} scratch words (+ {ni} input and {no} output words for
 * kairo_scores_one) of uint64_t on the stack; define KAIRO_STATIC_BUFFERS to make them
 * static instead (then the functions are not re-entrant).
"""
    return "".join([
        _c_header(c, 64, n_live, extra),
        "#include <stdint.h>\n#include <stddef.h>\n\n",
        f"#define KAIRO_N_INPUTS {ni}\n#define KAIRO_N_OUTPUTS {no}\n"
        f"#define KAIRO_N_CLASSES {nc}\n#define KAIRO_GROUP {g}\n"
        f"#define KAIRO_N_SLOTS {n_slots}\n\n",
        "#if defined(__GNUC__)\n#define KAIRO_PART static __attribute__((noinline))\n#else\n"
        "#define KAIRO_PART static\n#endif\n",
        "#ifdef KAIRO_STATIC_BUFFERS\n#define KAIRO_BUF static\n#else\n#define KAIRO_BUF\n"
        "#endif\n\n",
        "typedef uint64_t W;\n#define ZERO ((W)0)\n#define ONES (~(W)0)\n\n",
        "void kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks);\n"
        "void kairo_scores_one(const uint8_t *bits, int32_t *scores);\n"
        "int32_t kairo_predict_one(const uint8_t *bits);\n\n",
        core,
        """
void kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks)
{
    KAIRO_BUF W v[KAIRO_N_SLOTS];
    size_t k;
    for (k = 0; k < n_blocks; ++k)
        kairo_block(in + k * (size_t)KAIRO_N_INPUTS, out + k * (size_t)KAIRO_N_OUTPUTS, v);
}

void kairo_scores_one(const uint8_t *bits, int32_t *scores)
{
    KAIRO_BUF uint64_t x[KAIRO_N_INPUTS];
    KAIRO_BUF uint64_t y[KAIRO_N_OUTPUTS];
    KAIRO_BUF W v[KAIRO_N_SLOTS];
    size_t i, c;
    for (i = 0; i < KAIRO_N_INPUTS; ++i)
        x[i] = bits[i] ? 1u : 0u;
    kairo_block(x, y, v);
    for (c = 0; c < KAIRO_N_CLASSES; ++c) {
        int32_t s = 0;
        for (i = 0; i < KAIRO_GROUP; ++i)
            s += (int32_t)(y[c * KAIRO_GROUP + i] & 1u);
        scores[c] = s;
    }
}

int32_t kairo_predict_one(const uint8_t *bits)
{
    int32_t scores[KAIRO_N_CLASSES];
    int32_t c, best = 0;
    kairo_scores_one(bits, scores);
    for (c = 1; c < KAIRO_N_CLASSES; ++c)
        if (scores[c] > scores[best])
            best = c;
    return best;
}
"""])


def _check_chunk(chunk) -> int:
    if chunk is None:
        return CHUNK
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
        raise KairoError(f"chunk (gates per generated C function) must be a positive "
                         f"integer, got {chunk!r}")
    return int(chunk)


def find_compiler() -> list[str]:
    """The C compiler command: ``$CC`` if set (may carry flags), else gcc, else cc."""
    cc = os.environ.get("CC", "").strip()
    if cc:
        argv = shlex.split(cc)
        exe = shutil.which(argv[0])
        if exe is None:
            raise KairoError(f"C compiler $CC={cc!r} was not found on PATH: install gcc "
                             f"(`{GCC_INSTALL}` on Debian/Ubuntu) or set CC to an installed "
                             f"compiler")
        return [exe, *argv[1:]]
    for name in ("gcc", "cc"):
        exe = shutil.which(name)
        if exe:
            return [exe]
    raise KairoError(f"no C compiler found (looked for $CC, gcc and cc on PATH): install gcc "
                     f"with `{GCC_INSTALL}` (Debian/Ubuntu) or set CC to a C compiler")


def _default_cache_dir() -> Path:
    try:
        import platformdirs

        d = Path(platformdirs.user_cache_dir("kairo")) / "c"
        d.mkdir(parents=True, exist_ok=True)
        if os.access(d, os.W_OK):
            return d
    except (ImportError, OSError):      # no platformdirs or an unwritable home: fall back
        pass
    d = Path(tempfile.gettempdir()) / f"kairo-c-{os.getuid() if hasattr(os, 'getuid') else 0}"
    d.mkdir(parents=True, exist_ok=True)
    return d


@lru_cache(maxsize=1)
def _cpu_fingerprint() -> str:
    """-march=native code is only valid on the same CPU model: key the cache on it."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{platform.machine()}|{model}|{' '.join(sorted(_cpu_flags()))}"


def _c_opt_flags(circuit: Circuit) -> tuple[str, ...]:
    """-O2, or -O1 above O1_ABOVE live gates: same throughput there, half the compile time."""
    if int(_live_nodes(circuit)[circuit.n_inputs:].sum()) > O1_ABOVE:
        return ("-O1",) + C_FLAGS[1:]
    return C_FLAGS


def _split_units(src: str, n_units: int) -> list[str]:
    """Split c_source output into n_units translation units: the parts spread over the
    first n_units − 1, the rest (kairo_block, kairo_eval, …) in the last. Each unit repeats
    the preamble (macros, typedefs, part prototypes)."""
    head, rest = src.split(_PARTS_BEGIN, 1)
    parts_text, tail = rest.split(_PARTS_END, 1)
    marker = "KAIRO_PART void kairo_part"
    pieces = [marker + p for p in parts_text.split(marker)[1:]]
    n = max(1, n_units - 1)
    per = -(-len(pieces) // n)
    units = [head + "".join(pieces[i:i + per]) for i in range(0, len(pieces), per)]
    return units + [head + tail]


def _build(cc: list[str], flags: tuple[str, ...], src: str, out: str, jobs: int,
           csrc: Path) -> None:
    """Compile ``src`` to the shared library ``out``; with several parts per job, compile
    parts in parallel translation units and link them."""
    n_parts = src.count("KAIRO_PART void kairo_part") // 2     # prototypes + definitions
    n_units = min(jobs, -(-n_parts // PARTS_PER_TU)) + 1
    def run(cmd):
        try:
            return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True)
        except OSError as exc:
            raise KairoError(f"could not run the C compiler {cc[0]} ({exc}): install gcc "
                             f"with `{GCC_INSTALL}` or set CC") from None

    def check(cmd, proc):
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise KairoError(f"C compilation of {csrc} failed ({' '.join(cmd)}, exit "
                             f"{proc.returncode}):\n{_stderr_head(err)}")

    if n_units <= 2:
        cmd = [*cc, *flags, "-o", out, str(csrc)]
        check(cmd, run(cmd))
        return
    comp = [f for f in flags if f != "-shared"]
    with tempfile.TemporaryDirectory(prefix="kairo-cc-") as tmp:
        procs, objs = [], []
        for i, unit in enumerate(_split_units(src, n_units)):
            path = Path(tmp) / f"unit{i}.c"
            path.write_text(unit)
            objs.append(str(Path(tmp) / f"unit{i}.o"))
            cmd = [*cc, *comp, "-c", "-o", objs[-1], str(path)]
            procs.append((cmd, run(cmd)))
        try:
            for cmd, proc in procs:
                check(cmd, proc)
        finally:
            for _, proc in procs:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        cmd = [*cc, *flags, "-o", out, *objs]
        check(cmd, run(cmd))


def _blocks_from_x(x: np.ndarray, lanes: int) -> np.ndarray:
    """(n_samples, n_inputs) 0/1 → contiguous in[block][input][lane] uint64 (pack_bits order)."""
    n, m = x.shape
    per = 64 * lanes
    nb = -(-n // per)
    bits = np.zeros((m, nb * per), dtype=bool)
    bits[:, :n] = x.T if x.dtype == bool else x.T != 0
    by = np.packbits(bits, axis=1, bitorder="little")            # (m, nb * lanes * 8)
    blk = np.ascontiguousarray(by.reshape(m, nb, lanes * 8).transpose(1, 0, 2))
    return blk.view(np.uint64).reshape(nb, m, lanes)


class CompiledCircuit:
    """A circuit compiled to a shared library by :func:`compile_c`.

    ``evaluate`` / ``evaluate_packed`` / ``scores`` / ``predict`` have the contracts of the
    :class:`Circuit` methods of the same names (results are bit-identical).
    """

    def __init__(self, circuit: Circuit, library_path: Path, width: int, *,
                 source_path: Path | None = None, from_cache: bool = False,
                 flags: tuple[str, ...] = C_FLAGS):
        self.circuit = circuit
        self.width = int(width)
        self.lanes = self.width // 64
        self.library_path = Path(library_path)
        self.source_path = source_path
        self.from_cache = from_cache
        self.flags = flags
        try:
            lib = ctypes.CDLL(str(self.library_path))
        except OSError as exc:
            raise KairoError(f"could not load the compiled circuit {self.library_path} ({exc}); "
                             f"delete it so that compile_c rebuilds it") from None
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        self._eval = lib.kairo_eval
        self._eval.argtypes, self._eval.restype = [vp, vp, sz], ctypes.c_int
        self._scores = lib.kairo_scores
        self._scores.argtypes, self._scores.restype = [vp, vp, sz], ctypes.c_int
        self._predict = lib.kairo_predict
        self._predict.argtypes, self._predict.restype = [vp, vp, sz], ctypes.c_int
        try:                            # only circuits with pixel thresholds have it
            self._images = lib.kairo_predict_images
            self._images.argtypes, self._images.restype = [vp, vp, sz], ctypes.c_int
        except AttributeError:
            self._images = None
        self._lib = lib

    def __repr__(self) -> str:
        c = self.circuit
        return (f"CompiledCircuit({c.n_inputs} inputs, {c.n_gates} gates, {c.n_outputs} "
                f"outputs, width={self.width}, library={str(self.library_path)!r})")

    @property
    def n_inputs(self) -> int:
        return self.circuit.n_inputs

    @property
    def n_outputs(self) -> int:
        return self.circuit.n_outputs

    @property
    def n_classes(self) -> int:
        return self.circuit.n_classes

    # ------------------------------------------------------------------ layout
    def _blocks_in(self, words: np.ndarray) -> tuple[np.ndarray, int]:
        """(n_inputs, n_words) packed words → contiguous in[block][input][lane]."""
        n_in, n_words = words.shape
        n_blocks = -(-n_words // self.lanes)
        pad = n_blocks * self.lanes - n_words
        if pad:
            words = np.concatenate([words, np.zeros((n_in, pad), dtype=np.uint64)], axis=1)
        blk = words.reshape(n_in, n_blocks, self.lanes).transpose(1, 0, 2)
        return np.ascontiguousarray(blk, dtype=np.uint64), n_blocks

    def _packed_x(self, x) -> tuple[np.ndarray, int]:
        x = _check_x(self.circuit, x)
        return _blocks_from_x(x, self.lanes), x.shape[0]

    # ------------------------------------------------------------------ API
    def evaluate_packed(self, words) -> np.ndarray:
        """Packed inputs (n_inputs, n_words) uint64 → packed outputs (n_outputs, n_words)."""
        words = np.asarray(words)
        if words.ndim != 2 or words.shape[0] != self.n_inputs:
            raise KairoError(f"packed circuit inputs must have shape ({self.n_inputs}, "
                             f"n_words) (one row of 64-sample words per input, see "
                             f"pack_bits), got {words.shape}")
        if words.size and not (np.issubdtype(words.dtype, np.integer) and
                               (words.dtype.kind == "u" or words.min() >= 0)):
            raise KairoError(f"packed circuit inputs must be unsigned 64-bit words, got "
                             f"dtype {words.dtype}")
        words = words.astype(np.uint64, copy=False)
        n_words = words.shape[1]
        if n_words == 0:
            return np.zeros((self.n_outputs, 0), dtype=np.uint64)
        blk, n_blocks = self._blocks_in(words)
        out = np.empty((n_blocks, self.n_outputs, self.lanes), dtype=np.uint64)
        if self._eval(blk.ctypes.data, out.ctypes.data, n_blocks) != 0:
            raise MemoryError("kairo_eval: out of memory")
        return out.transpose(1, 0, 2).reshape(self.n_outputs, -1)[:, :n_words].copy()

    def evaluate(self, x) -> np.ndarray:
        """Output bits (n_samples, n_outputs) bool for 0/1 inputs (n_samples, n_inputs)."""
        x = _check_x(self.circuit, x)
        return unpack_bits(self.evaluate_packed(pack_bits(x)), x.shape[0])

    def scores(self, x) -> np.ndarray:
        """Per-class vote counts (n_samples, n_classes), int64."""
        blk, n = self._packed_x(x)
        out = np.zeros((n, self.n_classes), dtype=np.int32)
        if n and self._scores(blk.ctypes.data, out.ctypes.data, n) != 0:
            raise MemoryError("kairo_scores: out of memory")
        return out.astype(np.int64)

    def predict(self, x) -> np.ndarray:
        """First class with the highest vote count, (n_samples,) int64."""
        blk, n = self._packed_x(x)
        out = np.zeros(n, dtype=np.int32)
        if n and self._predict(blk.ctypes.data, out.ctypes.data, n) != 0:
            raise MemoryError("kairo_predict: out of memory")
        return out.astype(np.int64)

    def check_images(self, images) -> np.ndarray:
        """Images as C-contiguous (n_images, n_pixels) uint8, or DataError naming the problem."""
        spec = image_spec(self.circuit)
        if spec is None or self._images is None:
            raise KairoError("this circuit has no pixel thresholds (meta['thresholds'], set by "
                             "`kairo logic train`, dividing its inputs), so it cannot read "
                             "images; threshold them yourself and call predict(bits)")
        n_px = spec[1]
        x = np.asarray(images)
        if x.dtype != np.uint8:
            raise DataError(f"images must be uint8 pixels (0–255), got dtype {x.dtype}; "
                            f"convert with np.asarray(images, dtype=np.uint8) if they are "
                            f"already integers in that range")
        if x.ndim < 2 or int(np.prod(x.shape[1:])) != n_px:
            raise DataError(f"images must have shape (n_images, {n_px}) (or (n_images, …) "
                            f"with {n_px} pixels per image), got shape {x.shape}")
        return np.ascontiguousarray(x.reshape(x.shape[0], n_px))

    def predict_images(self, images, out: np.ndarray | None = None) -> np.ndarray:
        """Classes of uint8 images, thresholding in C: (n_images, n_pixels) → (n_images,).

        Equals ``predict(image_bits(circuit, images))`` (same thresholds, first argmax).
        Returns int64, or fills ``out`` (a C-contiguous int32 array of n_images) and
        returns it, which skips the conversion (used by the throughput benchmark).
        """
        x = self.check_images(images)
        n = x.shape[0]
        res = out if out is not None else np.empty(n, dtype=np.int32)
        if res.dtype != np.int32 or res.shape != (n,) or not res.flags.c_contiguous or \
                not res.flags.writeable:
            raise KairoError(f"out must be a writable C-contiguous int32 array of shape "
                             f"({n},), got {res.dtype} {res.shape}")
        if n and self._images(x.ctypes.data, res.ctypes.data, n) != 0:
            raise MemoryError("kairo_predict_images: out of memory")
        return res if out is not None else res.astype(np.int64)


def compile_c(circuit: Circuit, *, width="auto", cache_dir=None,
              jobs: int | None = None) -> CompiledCircuit:
    """Compile ``circuit`` to a shared library and load it.

    Builds ``c_source(circuit, width=width)`` with ``$CC`` (else gcc, else cc) and
    ``-O2 -march=native -shared -fPIC``; above ``O1_ABOVE`` live gates with ``-O1`` instead
    (measured on random layered circuits: the same throughput, half the compile time). Large
    circuits are compiled as up to ``jobs`` (default: the CPU count) translation units in
    parallel and linked. The library is cached under ``cache_dir`` (default
    ``platformdirs.user_cache_dir("kairo")/c``, else a temp folder) as ``kairo-<sha256>.so``,
    keyed on the source, the flags and the CPU (because of ``-march=native``); a cached
    library is reused without calling the compiler (``.from_cache`` is then True). The build
    goes to a temporary name and is renamed into place, so concurrent builds are safe.
    """
    if jobs is None:
        jobs = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            (os.cpu_count() or 1)
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise KairoError(f"jobs (parallel compiler processes) must be a positive integer, "
                         f"got {jobs!r}")
    c = _check_circuit(circuit)
    width = _resolve_width(width)
    src = c_source(c, width=width)
    flags = _c_opt_flags(c)
    key = hashlib.sha256("\0".join([src, " ".join(flags), _cpu_fingerprint()])
                         .encode()).hexdigest()
    if cache_dir is None:
        cache = _default_cache_dir()
    else:
        cache = Path(cache_dir)
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KairoError(f"C cache folder {cache} cannot be created ({exc}); pass a "
                             f"writable cache_dir") from None
    lib = cache / f"kairo-{key[:32]}.so"
    csrc = cache / f"kairo-{key[:32]}.c"
    if lib.is_file():
        return CompiledCircuit(c, lib, width, source_path=csrc if csrc.is_file() else None,
                               from_cache=True, flags=flags)
    cc = find_compiler()
    _atomic_write(csrc, src, "C source")
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{lib.name}.", suffix=".tmp")
    os.close(fd)
    try:
        _build(cc, flags, src, tmp, jobs, csrc)
        os.replace(tmp, lib)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return CompiledCircuit(c, lib, width, source_path=csrc, from_cache=False, flags=flags)


def write_c(circuit: Circuit, path, *, standalone: bool = True, width="auto") -> Path:
    """Write the circuit as one C file, atomically (temp file + rename).

    ``standalone=True`` (default): portable C99 for firmware or any program, no Python
    needed: ``kairo_predict_one(const uint8_t *bits)``, ``kairo_scores_one`` and a 64-sample
    ``kairo_eval`` (see the comment at the top of the file). ``standalone=False``: the
    GCC-specific source :func:`compile_c` builds (``c_source(circuit, width=width)``).
    """
    c = _check_circuit(circuit)
    text = _c_portable_source(c) if standalone else c_source(c, width=width)
    return _atomic_write(path, text, "C file")


# ============================================================================ Verilog
_VERILOG_KEYWORDS = set("""always and assign automatic begin buf bufif0 bufif1 case casex casez
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
_VERILOG_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")
_TB_RESERVED = {"tb"}      # the testbench's own module name


def _vbits(n: int) -> int:
    """Bits of an unsigned value up to n (at least 1)."""
    return max(1, int(n).bit_length())


def _class_bits(n_classes: int) -> int:
    return max(1, (n_classes - 1).bit_length())


def _stage_of_depth(depth: np.ndarray, max_depth: int, k: int) -> np.ndarray:
    """Pipeline stage of each node: gates at depth d ≥ 1 go to ⌊(d−1)(k+1)/D⌋, inputs to 0."""
    if k == 0 or max_depth == 0:
        return np.zeros_like(depth)
    return np.where(depth > 0, ((depth - 1) * (k + 1)) // max_depth, 0)


def vote_levels(circuit: Circuit) -> tuple[int, int]:
    """Levels of the per-class vote adder tree and of the argmax tree in
    :func:`verilog_source`: ``ceil(log2(outputs per class))`` and ``ceil(log2(n_classes))``."""
    c = _check_circuit(circuit)
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
    c = _check_circuit(circuit)
    if not isinstance(module, str) or not _VERILOG_ID.match(module) or \
            module in _VERILOG_KEYWORDS or module in _TB_RESERVED:
        raise KairoError(f"Verilog module name {module!r} is not a valid identifier: use "
                         f"letters, digits, _ and $, starting with a letter or _, and not a "
                         f"Verilog keyword or one of {sorted(_TB_RESERVED)}")
    if isinstance(pipeline, bool) or not isinstance(pipeline, (int, np.integer)) or pipeline < 0:
        raise KairoError(f"pipeline must be a non-negative integer number of register "
                         f"stages, got {pipeline!r}")
    cuts = set(vote_cuts(c, pipeline_votes))
    kst = int(pipeline)
    regv = len(cuts)
    lat = kst + regv
    ni, no, nc, k = c.n_inputs, c.n_outputs, c.n_classes, c.n_inputs
    grp = no // nc
    sw, cw = _vbits(grp), _class_bits(nc)
    live = _live_nodes(c)
    depth = c.depths()
    dmax = int(depth[live].max()) if live.any() else 0
    stage = _stage_of_depth(depth, dmax, kst)
    ops, a, b = c.ops.tolist(), c.a.tolist(), c.b.tolist()
    outs = c.outputs.tolist()

    # latest stage at which each node is read
    need = np.full(c.n_nodes, -1, dtype=np.int64)
    for g in np.flatnonzero(live[k:]).tolist():
        ua, ub = _USES[ops[g]]
        sg = stage[k + g]
        if ua:
            need[a[g]] = max(need[a[g]], sg)
        if ub:
            need[b[g]] = max(need[b[g]], sg)
    need[outs] = kst

    def base(n):
        return f"x[{n}]" if n < k else f"g{n - k}"

    def at(n, s):                       # node n's value as seen in stage s
        if s == stage[n]:
            return base(n)
        return f"{'x' if n < k else 'g'}{n if n < k else n - k}_s{s}"

    L = []
    L.append(f"// Generated by kairo (kairo.logic._backends) -- do not edit.\n"
             f"// {ni} inputs, {c.n_gates} gates ({int(live[k:].sum())} reach an output), "
             f"{no} outputs in {nc} classes of {grp}; depth {dmax}.\n"
             f"// votes: class c at votes[c*{sw} +: {sw}]; y: first class with the most votes.\n"
             + (f"// Pipeline: {kst} register stage(s) in the gate core"
                + (f", {regv} in the vote and argmax trees (after levels "
                   f"{', '.join(map(str, sorted(cuts)))})" if regv else "")
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
    L.append(f"module {module} (\n" + "\n".join(ports) + "\n);\n")

    gates = np.flatnonzero(live[k:]).tolist()
    if gates:
        L.append("// gate core")
        names = [f"g{g}" for g in gates]
        for i in range(0, len(names), 16):
            L.append("wire " + ", ".join(names[i:i + 16]) + ";")
    for g in gates:
        sg = stage[k + g]
        expr = _V_EXPR[ops[g]].format(a=at(a[g], sg), b=at(b[g], sg))
        L.append(f"assign g{g} = {expr};")

    if kst:
        L.append("\n// pipeline registers")
        by_stage: dict[int, list[str]] = {s: [] for s in range(1, kst + 1)}
        for n in np.flatnonzero(need > stage).tolist():
            for s in range(int(stage[n]) + 1, int(need[n]) + 1):
                L.append(f"reg {at(n, s)};")
                by_stage[s].append(f"    {at(n, s)} <= {at(n, s - 1)};")
        for s in range(1, kst + 1):
            if by_stage[s]:
                L.append(f"always @(posedge clk) begin  // stage {s}\n"
                         + "\n".join(by_stage[s]) + "\nend")

    def delayed(expr: str, w: int, n: int, name: str) -> str:
        """``expr`` (``w`` bits) through a chain of ``n`` registers; returns the last one."""
        for i in range(1, n + 1):
            L.append(f"reg {'' if w == 1 else f'[{w - 1}:0] '}{name}_d{i};\n"
                     f"always @(posedge clk) {name}_d{i} <= {expr};")
            expr = f"{name}_d{i}"
        return expr

    def node(name: str, w: int, expr: str, level: int) -> str:
        """A tree node at ``level``: a wire, or a register where a cut follows the level."""
        rng = "" if w == 1 else f"[{w - 1}:0] "
        if level in cuts:
            L.append(f"reg {rng}{name};\nalways @(posedge clk) {name} <= {expr};")
        else:
            L.append(f"wire {rng}{name} = {expr};")
        return name

    n_add, n_arg = vote_levels(c)
    cut_add = sum(1 for v in cuts if v <= n_add)            # registers inside the adder trees
    L.append("\n// outputs")
    if regv:                    # o waits for the vote and argmax registers, aligned with y
        L.append(f"wire [{no - 1}:0] o_core;")
        for j, n in enumerate(outs):
            L.append(f"assign o_core[{j}] = {at(n, kst)};")
        L.append(f"assign o = {delayed('o_core', no, regv, 'o')};")
    else:
        for j, n in enumerate(outs):
            L.append(f"assign o[{j}] = {at(n, kst)};")

    # balanced adder tree per class: terms (expr, max value)
    L.append("\n// vote counts")
    wid = 0
    for cls in range(nc):
        # read the nodes themselves, not bits of the o bus: in event-driven simulators a
        # change of any bit of a vector net re-evaluates every reader of that net
        terms = [(at(outs[cls * grp + i], kst), 1) for i in range(grp)]
        level = 0
        while len(terms) > 1:
            level += 1
            nxt = []
            for i in range(0, len(terms) - 1, 2):
                (e1, m1), (e2, m2) = terms[i], terms[i + 1]
                w = _vbits(m1 + m2)
                nxt.append((node(f"pc{cls}_{wid}", w, f"{_zext(e1, _vbits(m1), w)} + "
                                 f"{_zext(e2, _vbits(m2), w)}", level), m1 + m2))
                wid += 1
            if len(terms) % 2:          # the odd term skips this level (registered at a cut)
                e, m = terms[-1]
                if level in cuts:
                    e = node(f"pc{cls}_{wid}", _vbits(m), e, level)
                    wid += 1
                nxt.append((e, m))
            terms = nxt
        L.append(f"wire [{sw - 1}:0] cnt{cls} = {terms[0][0]};")
    cat = "{" + ", ".join(f"cnt{cls}" for cls in reversed(range(nc))) + "}"
    if regv - cut_add:          # votes wait for the argmax registers
        L.append(f"wire [{nc * sw - 1}:0] votes_tree = {cat};")
        L.append(f"assign votes = {delayed('votes_tree', nc * sw, regv - cut_add, 'votes')};")
    else:
        L.append(f"assign votes = {cat};")

    L.append("\n// argmax (ties -> lower class index)")
    leaves = [(f"cnt{cls}", f"{cw}'d{cls}") for cls in range(nc)]
    aid = 0
    level = n_add
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
        if len(leaves) % 2:             # the odd leaf skips this level (registered at a cut)
            s1, i1 = leaves[-1]
            if level in cuts:
                t = f"am{aid}"
                aid += 1
                s1, i1 = node(f"{t}_v", sw, s1, level), node(f"{t}_i", cw, i1, level)
            nxt.append((s1, i1))
        leaves = nxt
    L.append(f"assign y = {leaves[0][1]};")
    L.append("\nendmodule\n`default_nettype wire\n")
    return "\n".join(L)


def _zext(expr: str, w: int, to: int) -> str:
    return expr if w == to else f"{{{to - w}'b0, {expr}}}"


def write_verilog(circuit: Circuit, path, **kw) -> Path:
    """Write :func:`verilog_source` (same keywords) to ``path`` atomically."""
    return _atomic_write(path, verilog_source(circuit, **kw), "Verilog file")


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
    if simulator not in ("auto", "iverilog", "verilator"):
        raise KairoError(f"simulator must be \"auto\", \"iverilog\" or \"verilator\", got "
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
    sw, cw = _vbits(c.n_outputs // c.n_classes), _class_bits(c.n_classes)
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
                     timeout: float | None = None):
    """Simulate :func:`verilog_source` on input vectors.

    ``x``: (n_samples, n_inputs) of 0/1, as for :meth:`Circuit.evaluate`. Writes the module,
    a testbench that reads the vectors with ``$readmemb`` and prints ``o``, ``votes`` and ``y``
    per vector, runs it with iverilog + vvp or ``verilator --binary`` in a temp folder and
    returns ``(outputs, predictions)``: bool (n, n_outputs) and int64 (n,); with
    ``with_scores=True`` also the vote counts (n, n_classes) int64 the hardware computed.
    ``pipeline``/``pipeline_votes`` as for :func:`verilog_source`; the testbench clocks one
    vector per cycle and reads each result :func:`verilog_latency` edges later.
    """
    c = _check_circuit(circuit)
    x = _check_x(c, x)
    sim = find_simulator(simulator)
    src = verilog_source(c, module="kairo_circuit", pipeline=pipeline,
                         pipeline_votes=pipeline_votes)
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
                                 f"{r.returncode}):\n{_stderr_head(r.stderr + r.stdout)}")
            out = r.stdout
    rows = [ln.split() for ln in out.splitlines() if ln.startswith("R ")]
    if len(rows) != n or any(len(r) != 4 for r in rows):
        raise KairoError(f"Verilog simulation printed {len(rows)} result lines for {n} input "
                         f"vectors; output starts:\n{_stderr_head(out)}")
    outputs = _hex_bits([r[1] for r in rows], c.n_outputs)
    vbits = _hex_bits([r[2] for r in rows], c.n_classes * _vbits(c.n_outputs // c.n_classes))
    try:
        pred = np.array([int(r[3]) for r in rows], dtype=np.int64)
    except ValueError:
        raise KairoError("Verilog simulation printed a non-numeric class (x/z: an undriven "
                         "signal)") from None
    if not with_scores:
        return outputs, pred
    sw = _vbits(c.n_outputs // c.n_classes)
    weights = (1 << np.arange(sw)).astype(np.int64)
    scores = vbits.reshape(n, c.n_classes, sw).astype(np.int64) @ weights
    return outputs, pred, scores
