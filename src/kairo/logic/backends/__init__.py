"""Compiled back ends for a :class:`~kairo.logic.Circuit`: bit-parallel C and Verilog.

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
    as ``kairo logic train`` writes them; see :attr:`Circuit.image_input`) also get::

        int kairo_predict_images(const uint8_t *img, int32_t *pred, size_t n_images);

    which goes from images to classes entirely in C, one block at a time: each image row is
    compared with every threshold 64 pixels at a time (AVX-512BW compare into a mask, AVX2
    compare + movemask, or a loop), the 64 × 64 bit tiles are transposed (AVX-512 or scalar)
    into the block's input words, the gates run, each class's votes are counted bit-sliced
    (full-adder trees over whole words) and the first argmax is taken bit-sliced too.
    :meth:`CompiledCircuit.predict_images` calls it; it equals
    ``predict(circuit.image_bits(images))``. Its fixed C is the template ``images.c``.

    ``write_c(..., standalone=True)`` writes a portable C99 file for firmware instead: only
    ``uint64_t``, no vector extensions, nothing from libc beyond ``<stdint.h>``/``<stddef.h>``,
    with ``kairo_eval`` (64-sample blocks), ``kairo_scores_one`` and ``kairo_predict_one``;
    :func:`run_portable_c` builds such a file's text and runs it, to check it.

Verilog (``verilog_source`` / ``write_verilog`` / ``simulate_verilog``)
    Synthesizable Verilog-2001: one ``assign`` per gate, per-class vote counts from a balanced
    adder tree, and a balanced argmax tree whose ties go to the lower class index. With
    ``pipeline=k`` the gate core is cut into ``k + 1`` segments of about equal logic depth by
    ``k`` register stages (see :func:`verilog_source` for the latency).

The modules: ``_csource`` (C source), ``_cimages`` + ``images.c`` (the image path's C),
``_toolchain`` (compiler and compile cache: :func:`build_shared_library`), ``_runtime``
(:class:`CompiledCircuit`, :func:`compile_c`), ``_verilog`` (Verilog writing), ``_simulate``
(Icarus Verilog / Verilator).
"""

from kairo.logic.backends._csource import CHUNK, WIDTHS, c_source, native_width, write_c
from kairo.logic.backends._runtime import O1_ABOVE, CompiledCircuit, compile_c, run_portable_c
from kairo.logic.backends._simulate import find_simulator, simulate_verilog
from kairo.logic.backends._toolchain import (C_FLAGS, SharedLibrary, build_shared_library,
                                             default_cache_dir, find_compiler)
from kairo.logic.backends._verilog import (verilog_latency, verilog_source, vote_cuts,
                                           vote_levels, write_verilog)

__all__ = ["c_source", "compile_c", "CompiledCircuit", "write_c", "native_width", "WIDTHS",
           "CHUNK", "O1_ABOVE", "build_shared_library", "SharedLibrary", "find_compiler",
           "default_cache_dir", "C_FLAGS", "verilog_source", "write_verilog",
           "verilog_latency", "vote_levels", "vote_cuts", "simulate_verilog", "find_simulator",
           "run_portable_c"]
