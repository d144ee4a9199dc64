"""Inference throughput on one core: uint8 images in memory → predicted classes.

Three ways to run the same :class:`~kairo.logic._circuit.Circuit` are timed on the same
images, and must predict the same classes:

``kairo``
    :meth:`~kairo.logic.backends.CompiledCircuit.predict_images` — thresholding, bit
    transposition, the gates, vote counting and argmax all in the generated C
    (``kairo_predict_images``), on 512/256/64-bit words.
``anchor``
    The method difflogic describes for its compiled networks, written here from that
    description: NumPy thresholds the images (uint8 compares) and packs them with
    ``np.packbits`` into 64-bit words (64 images per word, in batches), then a generated C
    function with one statement per gate on ``uint64_t`` evaluates each word and sums each
    class's votes by popcount (64 × 64 bit transposes) before the argmax. Compiled with
    ``gcc -O3 -march=native``.
``kairo_bits`` (informational)
    NumPy thresholding + :meth:`CompiledCircuit.predict` on the 0/1 matrix — what the C back
    end offered before ``predict_images``.

The memory-bandwidth bound is one core's read bandwidth (a compiled C loop summing a large
``uint64`` buffer, best of several passes) divided by the bytes of one image.
"""

from __future__ import annotations

import ctypes
import logging
import os
import time

import numpy as np

from kairo._errors import DataError, KairoError
from kairo._results import cpu_model
from kairo.logic._circuit import Circuit
from kairo.logic.backends import build_shared_library, compile_c
from kairo.logic.backends._common import C_EXPR, check_circuit
from kairo.logic.backends._csource import TRANSPOSE

__all__ = ["read_bandwidth", "anchor_source", "AnchorCircuit", "bench_images", "bench_circuit",
           "bench_text", "run_bench", "time_calls", "cpu_model", "ANCHOR_FLAGS"]

log = logging.getLogger(__name__)

ANCHOR_FLAGS = ("-O3", "-march=native", "-shared", "-fPIC")
ANCHOR_MAX_GATES = 40_000      # one straight-line function: gcc time grows superlinearly
ANCHOR_BATCH = 8192            # images NumPy thresholds and packs per call


# ============================================================================ compiling
def _load(src: str, stem: str, cache_dir=None) -> tuple[ctypes.CDLL, bool]:
    """Build ``src`` with ANCHOR_FLAGS (:func:`build_shared_library`, cached) and load it;
    also whether the compiler was skipped."""
    built = build_shared_library(src, flags=ANCHOR_FLAGS, stem=stem, cache_dir=cache_dir)
    return ctypes.CDLL(str(built.path)), built.from_cache


# ============================================================================ bandwidth
_BW_SRC = r"""
#include <stdint.h>
#include <stddef.h>
/* Sum of n words: gcc -O3 -march=native vectorizes it, so it runs at the read bandwidth. */
uint64_t kairo_bw_sum(const uint64_t *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; ++i)
        s += p[i];
    return s;
}
"""


def read_bandwidth(n_bytes: int = 1 << 30, repeats: int = 5, cache_dir=None) -> dict:
    """One core's read bandwidth: best of ``repeats`` C passes summing ``n_bytes``."""
    lib, _ = _load(_BW_SRC, "kairo-bw", cache_dir=cache_dir)
    fn = lib.kairo_bw_sum
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_size_t], ctypes.c_uint64
    buf = np.ones(max(1, n_bytes // 8), dtype=np.uint64)       # ones: every page touched
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        total = fn(buf.ctypes.data, buf.size)
        times.append(time.perf_counter() - t0)
    if total != buf.size:
        raise KairoError("bandwidth loop returned a wrong sum")
    best = min(times)
    return {"method": "C loop summing a uint64 buffer (gcc -O3 -march=native), best of "
                      f"{repeats}", "bytes": int(buf.nbytes), "seconds_best": best,
            "bytes_per_s": buf.nbytes / best}


# ============================================================================ the anchor
def anchor_source(circuit: Circuit) -> str:
    """difflogic's method as C: one statement per gate on ``uint64_t`` (64 images per word).

    ``void anchor_predict(const uint64_t *in, size_t n_words, int32_t *pred, size_t n)``
    reads ``in[word][input]`` (one word per input for each 64 images), evaluates the gates,
    counts each class's votes by transposing 64 × 64 bit tiles of its outputs and
    ``__builtin_popcountll``, and writes the first class with the most votes.
    """
    c = check_circuit(circuit)
    k = c.n_inputs
    live = c.live_nodes()
    ops, a, b = c.ops.tolist(), c.a.tolist(), c.b.tolist()

    def name(n):
        return f"x[{n}]" if n < k else f"g{n - k}"

    stmts = []
    for g in np.flatnonzero(live[k:]).tolist():
        expr = C_EXPR[ops[g]].format(a=name(a[g]), b=name(b[g]))
        stmts.append(f"    const uint64_t g{g} = {expr};")
    stmts += [f"    y[{j}] = {name(n)};" for j, n in enumerate(c.outputs.tolist())]
    grp = c.n_outputs // c.n_classes
    return f"""/* The anchor's method (difflogic's compiled model, from its description). */
#include <stdint.h>
#include <stddef.h>
#include <string.h>
#define ZERO ((uint64_t)0)
#define ONES (~(uint64_t)0)
#define N_IN {k}
#define N_OUT {c.n_outputs}
#define N_CLASSES {c.n_classes}
#define GROUP {grp}

static void anchor_gates(const uint64_t *restrict x, uint64_t *restrict y)
{{
{chr(10).join(stmts)}
}}
{TRANSPOSE}
void anchor_predict(const uint64_t *in, size_t n_words, int32_t *pred, size_t n)
{{
    uint64_t y[N_OUT], t[64];
    int32_t sc[64][N_CLASSES];
    for (size_t w = 0; w < n_words; ++w) {{
        anchor_gates(in + w * N_IN, y);
        memset(sc, 0, sizeof sc);
        for (size_t cls = 0; cls < N_CLASSES; ++cls) {{
            for (size_t o0 = 0; o0 < GROUP; o0 += 64) {{
                for (size_t r = 0; r < 64; ++r)
                    t[r] = o0 + r < GROUP ? y[cls * GROUP + o0 + r] : 0;
                kairo_transpose64(t);          /* t[s]: bit r = output o0 + r of image s */
                for (size_t s = 0; s < 64; ++s)
                    sc[s][cls] += __builtin_popcountll(t[s]);
            }}
        }}
        for (size_t s = 0; s < 64 && w * 64 + s < n; ++s) {{
            int32_t best = 0;
            for (int32_t cls = 1; cls < N_CLASSES; ++cls)
                if (sc[s][cls] > sc[s][best])
                    best = cls;
            pred[w * 64 + s] = best;
        }}
    }}
}}
"""


class AnchorCircuit:
    """The anchor's compiled circuit: NumPy packing in Python, gates and votes in C."""

    def __init__(self, circuit: Circuit, cache_dir=None):
        spec = circuit.image_input
        if spec is None:
            raise KairoError("the anchor reads images, but this circuit has no pixel "
                             "thresholds (meta['thresholds'] dividing its inputs)")
        n_live = circuit.n_live_gates()
        if n_live > ANCHOR_MAX_GATES:
            raise KairoError(f"{n_live} gates in one straight-line C function would take gcc "
                             f"too long (the anchor method is limited to "
                             f"{ANCHOR_MAX_GATES} here)")
        self.circuit = circuit
        self.thresholds = spec.compare_thresholds()
        self.n_pixels = spec.n_pixels
        t0 = time.perf_counter()
        self._lib, self.from_cache = _load(anchor_source(circuit), "kairo-anchor",
                                           cache_dir=cache_dir)
        self.compile_seconds = time.perf_counter() - t0
        fn = self._lib.anchor_predict
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        fn.argtypes, fn.restype = [vp, sz, vp, sz], None
        self._fn = fn

    def pack(self, images: np.ndarray) -> np.ndarray:
        """(B, n_pixels) uint8, B a multiple of 64 → (B / 64, n_inputs) uint64 words."""
        b = images.shape[0]
        bits = images[:, None, :] > self.thresholds                     # (B, T, P)
        bits = bits.reshape(b // 64, 64, -1).transpose(0, 2, 1)         # (words, inputs, 64)
        # packing the contiguous last axis is 2.5× faster than packing axis 1 in place
        packed = np.packbits(np.ascontiguousarray(bits), axis=-1, bitorder="little")
        return packed.view(np.uint64)[..., 0]                           # (words, inputs)

    @staticmethod
    def batches(images: np.ndarray):
        """Batches of ANCHOR_BATCH images, the last one zero-padded to a multiple of 64."""
        for s0 in range(0, images.shape[0], ANCHOR_BATCH):
            chunk = images[s0:s0 + ANCHOR_BATCH]
            if chunk.shape[0] % 64:
                pad = np.zeros((64 - chunk.shape[0] % 64, chunk.shape[1]), dtype=np.uint8)
                chunk = np.concatenate([chunk, pad])
            yield chunk

    def predict_images(self, images: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Classes of (n, n_pixels) uint8 images into ``out`` (int32, n)."""
        n = images.shape[0]
        for i, chunk in enumerate(self.batches(images)):
            s0 = i * ANCHOR_BATCH
            words = self.pack(chunk)
            self._fn(words.ctypes.data, words.shape[0], out[s0:].ctypes.data,
                     min(n - s0, ANCHOR_BATCH))
        return out


# ============================================================================ the run
def bench_images(circuit: Circuit, n_images: int, data_dir=None, seed: int = 0
                 ) -> tuple[np.ndarray, np.ndarray | None, str]:
    """``n_images`` uint8 images for the circuit: the test images of its classes from the
    dataset it records (MNIST for a 784-pixel circuit that records none), repeated, else
    seeded random pixels. Returns (images, labels of the unique
    images or None, a description)."""
    spec = circuit.image_input
    if spec is None:
        raise KairoError("this circuit has no pixel thresholds (meta['thresholds'] dividing "
                         "its inputs), so it cannot be benchmarked on images")
    n_px = spec.n_pixels
    if circuit.meta.get("dataset") or n_px == 784:
        from kairo.logic._data import circuit_images

        x, y, name = circuit_images(circuit, data_dir=data_dir)
        reps = -(-n_images // len(x))
        imgs = np.ascontiguousarray(np.tile(x, (reps, 1))[:n_images])
        return imgs, y, (f"{name} test images of classes {circuit.meta.get('classes')} "
                         f"({len(x)}), repeated")
    rng = np.random.default_rng(seed)
    return (rng.integers(0, 256, (n_images, n_px), dtype=np.uint8), None,
            f"random uint8 images (seed {seed})")


def time_calls(fn, repeats: int) -> list[float]:
    """Wall-clock seconds of ``repeats`` calls of ``fn()``."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def bench_circuit(circuit: Circuit, images: np.ndarray, *, repeats: int = 5, width="auto",
                  anchor: bool = True, bits_path: bool = True, bandwidth_bytes: int = 1 << 30,
                  cache_dir=None) -> dict:
    """Time kairo, the anchor (and kairo on pre-thresholded bits) on ``images``.

    Every implementation's predictions must equal kairo's (and, on the first 2,000 images,
    :meth:`Circuit.predict`), else KairoError. Returns the figures ``bench.json`` holds.
    """
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise KairoError(f"repeats must be a positive integer, got {repeats!r}")
    comp = compile_c(circuit, width=width, cache_dir=cache_dir)
    images = comp.check_images(images)
    n = images.shape[0]
    if n == 0:
        raise DataError("no images to benchmark (got shape (0, …))")
    res: dict = {"n_images": int(n), "bytes_per_image": int(images.shape[1]),
                 "repeats": int(repeats), "cpu": cpu_model(),
                 "loadavg_before": [round(v, 2) for v in os.getloadavg()],
                 "circuit": {**{k: v for k, v in circuit.stats().items()
                                if k != "gates_by_op"},
                             "live_gates": circuit.n_live_gates(),
                             "thresholds": list(circuit.image_input.thresholds)},
                 "implementations": {}}
    ref = np.empty(n, dtype=np.int32)
    comp.predict_images(images, out=ref)
    m = min(n, 2000)
    if not np.array_equal(ref[:m], circuit.predict(circuit.image_bits(images[:m]))):
        raise KairoError("internal error: kairo_predict_images disagrees with Circuit.predict")

    def record(name, t, extra):
        best = min(t)
        res["implementations"][name] = {
            "images_per_s": n / best, "seconds_best": best,
            "seconds_median": float(np.median(t)), **extra}
        log.info("%s: %s images/s", name, f"{n / best:,.0f}")

    out = np.empty(n, dtype=np.int32)
    t = time_calls(lambda: comp.predict_images(images, out=out), repeats)
    record("kairo", t, {"method": f"kairo_predict_images, {comp.width}-bit words",
                        "width": comp.width, "flags": list(comp.flags)})
    if not np.array_equal(out, ref):
        raise KairoError("kairo_predict_images is not deterministic")
    if anchor:
        try:
            an = AnchorCircuit(circuit, cache_dir=cache_dir)
        except KairoError as exc:
            res["implementations"]["anchor"] = {"skipped": str(exc)}
        else:
            an.predict_images(images, out)
            if not np.array_equal(out, ref):
                raise KairoError("the anchor's predictions differ from kairo's")
            t = time_calls(lambda: an.predict_images(images, out), repeats)
            # the C part alone, on words packed beforehand: the anchor's best case
            words = np.concatenate([an.pack(b) for b in an.batches(images)])
            t_c = time_calls(lambda: an._fn(words.ctypes.data, words.shape[0], out.ctypes.data, n),
                        repeats)
            if not np.array_equal(out, ref):
                raise KairoError("the anchor's C part differs from kairo's predictions")
            record("anchor", t, {"method": "difflogic's method: NumPy threshold + packbits "
                                           f"(batches of {ANCHOR_BATCH}), one C statement per "
                                           "gate on uint64, popcount group sums",
                                 "flags": list(ANCHOR_FLAGS), "predictions_equal": True,
                                 "c_only_images_per_s": n / min(t_c),
                                 "compile_seconds": round(an.compile_seconds, 2),
                                 "library_from_cache": an.from_cache})
            del words
    if bits_path:
        th = circuit.image_input.compare_thresholds()

        def via_bits():
            for s0 in range(0, n, 65536):
                chunk = images[s0:s0 + 65536]
                b = (chunk[:, None, :] > th).reshape(len(chunk), -1)
                out[s0:s0 + len(chunk)] = comp.predict(b)

        via_bits()
        if not np.array_equal(out, ref):
            raise KairoError("CompiledCircuit.predict differs from predict_images")
        record("kairo_bits", time_calls(via_bits, repeats),
               {"method": "NumPy threshold (batches of 65536) + CompiledCircuit.predict"})
    impl = res["implementations"]
    if "images_per_s" in impl.get("anchor", {}):
        res["speedup_vs_anchor"] = impl["kairo"]["images_per_s"] / impl["anchor"]["images_per_s"]
        res["speedup_vs_anchor_c_only"] = (impl["kairo"]["images_per_s"]
                                           / impl["anchor"]["c_only_images_per_s"])
    if bandwidth_bytes:
        bw = read_bandwidth(bandwidth_bytes, cache_dir=cache_dir)
        bound = bw["bytes_per_s"] / images.shape[1]
        res["bandwidth"] = {**bw, "bound_images_per_s": bound,
                            "kairo_fraction_of_bound": impl["kairo"]["images_per_s"] / bound}
    res["loadavg_after"] = [round(v, 2) for v in os.getloadavg()]
    return res


def bench_text(res: dict) -> str:
    lines = [f"{res['n_images']:,} images, best of {res['repeats']}, one core ({res['cpu']}); "
             f"load {res['loadavg_before'][0]:.2f} → {res['loadavg_after'][0]:.2f}"]
    for name, r in res["implementations"].items():
        if "skipped" in r:
            lines.append(f"  {name:10s} skipped: {r['skipped']}")
        else:
            lines.append(f"  {name:10s} {r['images_per_s']:>14,.0f} images/s  ({r['method']})")
    if "speedup_vs_anchor" in res:
        lines.append(f"kairo / anchor: {res['speedup_vs_anchor']:.1f}× (against the anchor's "
                     f"C alone, without NumPy packing: {res['speedup_vs_anchor_c_only']:.1f}×)")
    if "bandwidth" in res:
        b = res["bandwidth"]
        lines.append(f"read bandwidth {b['bytes_per_s'] / 1e9:.1f} GB/s → bound "
                     f"{b['bound_images_per_s']:,.0f} images/s; kairo reaches "
                     f"{b['kairo_fraction_of_bound']:.0%}")
    return "\n".join(lines)


def run_bench(cfg, rd) -> str:
    """``kairo logic bench``: time the circuit on images, write ``bench.json`` into ``rd``."""
    c = Circuit.load(cfg.circuit)
    images, labels, source = bench_images(c, cfg.images, cfg.data_dir, cfg.seed)
    width = cfg.width if cfg.width == "auto" else int(cfg.width)
    res = bench_circuit(c, images, repeats=cfg.repeats, width=width, anchor=cfg.anchor,
                        bits_path=cfg.bits_path, bandwidth_bytes=cfg.bandwidth_mib << 20)
    res["images_source"] = source
    if cfg.width == "auto":
        rd.resolve("width", res["implementations"]["kairo"]["width"])
    if labels is not None and len(images) >= len(labels):
        pred = compile_c(c, width=width).predict_images(images[:len(labels)])
        res["accuracy"] = float((pred == labels).mean())
        res["accuracy_images"] = int(len(labels))
    rd.add("bench.json", res)
    text = bench_text(res)
    if "accuracy" in res:
        text += f"\naccuracy {res['accuracy']:.2%} on the {res['accuracy_images']} test images"
    return text
