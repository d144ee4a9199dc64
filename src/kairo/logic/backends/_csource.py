"""C source generation: the bit-parallel library source (``c_source``) and the portable C99
file for firmware (``write_c(standalone=True)``); the image path's C is in :mod:`._cimages`."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kairo._errors import KairoError
from kairo._results import cpu_flags
from kairo.logic._circuit import OPERANDS_READ, Circuit
from kairo.logic.backends._cimages import c_images
from kairo.logic.backends._common import C_EXPR, check_circuit, write_text

WIDTHS = (64, 256, 512)
CHUNK = 64            # gates per generated C function (see _c_core)
PARTS_BEGIN = "/* kairo:parts-begin */\n"
PARTS_END = "/* kairo:parts-end */\n"
PART_MARKER = "KAIRO_PART void kairo_part"


def native_width() -> int:
    """The ``width="auto"`` choice: 512 with AVX-512F, 256 with AVX2, else 64."""
    flags = cpu_flags()
    if "avx512f" in flags:
        return 512
    if "avx2" in flags:
        return 256
    return 64


def resolve_width(width) -> int:
    """``"auto"`` → :func:`native_width`; 64, 256 or 512 as they are; else KairoError."""
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
    live = circuit.live_nodes()
    ops, a, b = circuit.ops.tolist(), circuit.a.tolist(), circuit.b.tolist()
    gates = np.flatnonzero(live[k:]).tolist()
    n_parts = max(1, -(-len(gates) // chunk))
    part = {}                                   # gate node -> part index
    for idx, g in enumerate(gates):
        part[k + g] = idx // chunk
    last = {}                                   # node -> last part that reads it
    for g in gates:
        p = part[k + g]
        ua, ub = OPERANDS_READ[ops[g]]
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
            ua, ub = OPERANDS_READ[ops[g]]
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
                        f"{C_EXPR[ops[g]].format(a=names[0], b=names[1])};")
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
    return (protos + PARTS_BEGIN + "\n".join(text) + PARTS_END + block,
            max(1, n_slots))



TRANSPOSE = r"""
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
    return f"""/* Generated by kairo (kairo.logic.backends) -- do not edit.
 *
 * Circuit: {c.n_inputs} inputs, {c.n_gates} gates ({live_gates} reach an output and are
 * emitted), {c.n_outputs} outputs in {c.n_classes} class groups of {g}; depth {c.depth()}.
 * Word width {width} bits: one block = {width} samples, sample s is bit s % 64 of lane
 * (s / 64) % {width // 64} of block s / {width}.
{extra} */
"""


# the library's evaluation over blocks (after the gate code)
_C_EVAL = r"""
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
"""

# the library's votes and predictions (after TRANSPOSE and the tables of _c_segment_tables)
_C_COUNT = r"""
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
"""


def c_source(circuit: Circuit, *, width="auto", chunk: int | None = None) -> str:
    """Bit-parallel C source for ``compile_c`` (GCC vector extensions for width 256/512).

    ``width``: ``"auto"`` (:func:`native_width`), 64, 256 or 512 bits per node word. See
    :mod:`kairo.logic.backends` for the buffer layout and the exported functions.
    ``chunk``: gates per generated function (default ``CHUNK``; see :func:`_c_core`).
    """
    c = check_circuit(circuit)
    width = resolve_width(width)
    chunk = _check_chunk(chunk)
    lanes = width // 64
    core, n_slots = _c_core(c, lanes, chunk)
    n_alloc = -(-n_slots * lanes * 8 // 64) * 64 // (lanes * 8)   # whole 64-byte lines
    n_live = c.n_live_gates()
    ni, no, nc = c.n_inputs, c.n_outputs, c.n_classes
    out = [_c_header(c, width, n_live, _c_layout_comment(c, width, chunk, n_slots)),
           "#include <stdint.h>\n#include <stddef.h>\n#include <stdlib.h>\n#include <string.h>\n",
           f"#define KAIRO_N_INPUTS {ni}\n#define KAIRO_N_OUTPUTS {no}\n"
           f"#define KAIRO_N_CLASSES {nc}\n#define KAIRO_WIDTH {width}\n"
           f"#define KAIRO_LANES {lanes}\n#define KAIRO_N_SLOTS {n_alloc}\n"
           "/* hidden: the parts may live in several objects of one library */\n"
           "#define KAIRO_PART __attribute__((noinline, visibility(\"hidden\")))\n",
           _c_word_type(width), "\n", core, _C_EVAL, TRANSPOSE, _c_segment_tables(c),
           _C_COUNT]
    if c.image_input is not None:
        out.append(c_images(c, width))
    return "".join(out)


def _c_word_type(width: int) -> str:
    """The C word type ``W`` of ``width`` bits, its ZERO and ONES (and for vector words the
    unaligned load and store helpers)."""
    if width == 64:
        return "typedef uint64_t W;\n#define ZERO ((W)0)\n#define ONES (~(W)0)\n"
    # a W wider than the CPU's vectors (512 bits without AVX-512) is split by the
    # compiler, and GCC then notes that returning it changes the ABI (-Wpsabi); that
    # concerns only these file-local helpers, so the note is silenced for -Werror builds
    return (f"typedef uint64_t W __attribute__((vector_size({width // 8})));\n"
            "#define ZERO ((W){0})\n#define ONES (~(W){0})\n"
            "#if defined(__GNUC__) && !defined(__clang__)\n"
            "#pragma GCC diagnostic ignored \"-Wpsabi\"\n#endif\n"
            "static inline W kairo_ld(const uint64_t *p)"
            " { W v; memcpy(&v, p, sizeof v); return v; }\n"
            "static inline void kairo_st(uint64_t *p, W v) { memcpy(p, &v, sizeof v); }\n")


def _c_layout_comment(c: Circuit, width: int, chunk: int, n_slots: int) -> str:
    """The header comment's part on the buffers' layout and the exported functions."""
    ni, no, lanes = c.n_inputs, c.n_outputs, width // 64
    return f""" *
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


def _c_segment_tables(c: Circuit) -> str:
    """The tables of (64-output chunk, class, bit mask) of every chunk/class overlap that
    the vote counting reads."""
    segs = _class_segments(c.n_outputs, c.n_classes)
    return (f"\n#define KAIRO_N_CHUNKS {(c.n_outputs + 63) // 64}\n"
            f"#define KAIRO_N_SEGS {len(segs)}\n"
            "/* (64-output chunk, class, bit mask) of every chunk/class overlap */\n"
            "static const uint32_t kairo_seg_chunk[KAIRO_N_SEGS] = {"
            + ",".join(str(s[0]) for s in segs) + "};\n"
            "static const uint32_t kairo_seg_class[KAIRO_N_SEGS] = {"
            + ",".join(str(s[1]) for s in segs) + "};\n"
            "static const uint64_t kairo_seg_mask[KAIRO_N_SEGS] = {"
            + ",".join(f"0x{s[2]:x}ull" for s in segs) + "};\n")


def _c_portable_source(circuit: Circuit, chunk: int | None = None) -> str:
    """Plain C99 (uint64_t only, no libc beyond stdint/stddef) for firmware."""
    c = circuit
    chunk = _check_chunk(chunk)
    core, n_slots = _c_core(c, 1, chunk)
    n_live = c.n_live_gates()
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


def write_c(circuit: Circuit, path, *, standalone: bool = True, width="auto") -> Path:
    """Write the circuit as one C file, atomically (temp file + rename).

    ``standalone=True`` (default): portable C99 for firmware or any program, no Python
    needed: ``kairo_predict_one(const uint8_t *bits)``, ``kairo_scores_one`` and a 64-sample
    ``kairo_eval`` (see the comment at the top of the file). ``standalone=False``: the
    GCC-specific source :func:`compile_c` builds (``c_source(circuit, width=width)``).
    """
    c = check_circuit(circuit)
    text = _c_portable_source(c) if standalone else c_source(c, width=width)
    return write_text(path, text, "C file")
