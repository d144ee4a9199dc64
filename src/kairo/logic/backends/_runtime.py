"""The ctypes runtime: :func:`compile_c` builds a circuit's C and loads it as a
:class:`CompiledCircuit`."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np

from kairo._errors import KairoError
from kairo.logic._circuit import Circuit, pack_bits, unpack_bits
from kairo.logic.backends._common import check_circuit
from kairo.logic.backends._csource import resolve_width, c_source
from kairo.logic.backends._toolchain import C_FLAGS, build_shared_library

O1_ABOVE = 20_000     # live gates above which compile_c uses -O1 (see compile_c)


def _c_opt_flags(circuit: Circuit) -> tuple[str, ...]:
    """-O2, or -O1 above O1_ABOVE live gates: same throughput there, half the compile time."""
    if circuit.n_live_gates() > O1_ABOVE:
        return ("-O1",) + C_FLAGS[1:]
    return C_FLAGS


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
        x = self.circuit.check_inputs(x)
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
        x = self.circuit.check_inputs(x)
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
        """Images as C-contiguous (n_images, n_pixels) uint8 (:meth:`ImageInput.check`)."""
        spec = self.circuit.image_input
        if spec is None or self._images is None:
            raise KairoError("this circuit has no pixel thresholds (meta['thresholds'], set by "
                             "`kairo logic train`, dividing its inputs), so it cannot read "
                             "images; threshold them yourself and call predict(bits)")
        return spec.check(images)

    def predict_images(self, images, out: np.ndarray | None = None) -> np.ndarray:
        """Classes of uint8 images, thresholding in C: (n_images, n_pixels) → (n_images,).

        Equals ``predict(circuit.image_bits(images))`` (same thresholds, first argmax).
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

    Builds ``c_source(circuit, width=width)`` with :func:`build_shared_library` (``$CC``,
    else gcc, else cc; parallel translation units for large circuits; cached under
    ``cache_dir``, a cached library is reused and ``.from_cache`` is then True) and
    ``-O2 -march=native -shared -fPIC``; above ``O1_ABOVE`` live gates with ``-O1`` instead
    (measured on random layered circuits: the same throughput, half the compile time).
    """
    c = check_circuit(circuit)
    width = resolve_width(width)
    flags = _c_opt_flags(c)
    built = build_shared_library(c_source(c, width=width), flags=flags, cache_dir=cache_dir,
                                 jobs=jobs)
    return CompiledCircuit(c, built.path, width, source_path=built.source,
                           from_cache=built.from_cache, flags=flags)


def run_portable_c(circuit: Circuit, source: str, x, *, cache_dir=None
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Build the text of a portable C file (``write_c(..., standalone=True)``) as a shared
    library and run it on ``x`` ((n, n_inputs) of 0/1): ``kairo_eval``'s outputs (n,
    n_outputs) bool and ``kairo_predict_one``'s class per sample, int64 — what a firmware
    build of that file computes, for checking it against :meth:`Circuit.evaluate`."""
    c = check_circuit(circuit)
    x = c.check_inputs(x)
    # one translation unit: the portable file's parts are static functions
    built = build_shared_library(source, flags=("-O1", "-shared", "-fPIC"),
                                 stem="kairo-portable", cache_dir=cache_dir, jobs=1)
    try:
        lib = ctypes.CDLL(str(built.path))
    except OSError as exc:
        raise KairoError(f"could not load the compiled C file {built.path} ({exc})") from None
    vp, sz = ctypes.c_void_p, ctypes.c_size_t
    lib.kairo_eval.argtypes, lib.kairo_eval.restype = [vp, vp, sz], None
    lib.kairo_predict_one.argtypes, lib.kairo_predict_one.restype = [vp], ctypes.c_int32
    n = x.shape[0]
    n_blocks = -(-n // 64)
    inp = np.ascontiguousarray(pack_bits(x).T)                   # in[block][input]
    out = np.zeros((n_blocks, c.n_outputs), np.uint64)
    if n_blocks:
        lib.kairo_eval(inp.ctypes.data, out.ctypes.data, n_blocks)
    outputs = unpack_bits(np.ascontiguousarray(out.T), n)
    rows = np.ascontiguousarray(x != 0, dtype=np.uint8)
    base, step = rows.ctypes.data, rows.shape[1]
    pred = np.array([lib.kairo_predict_one(base + i * step) for i in range(n)], np.int64)
    return outputs, pred
