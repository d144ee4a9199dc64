"""C and Verilog back ends must agree bit for bit with the NumPy reference ``Circuit``.

Circuits come from a seeded random generator (every one of the 16 ops, inputs from earlier
nodes, outputs in equal class groups). Tools that may be missing (gcc, iverilog, verilator)
skip with the command that installs them.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from kairo import KairoError
from kairo.logic import Circuit, pack_bits
from kairo.logic.backends import (CompiledCircuit, c_source, compile_c, find_compiler,
                                  find_simulator, native_width, simulate_verilog,
                                  verilog_latency, verilog_source, vote_cuts, vote_levels,
                                  write_c, write_verilog)
from kairo.logic.backends import _csource, _toolchain
from kairo.logic.backends._simulate import _raise_stack_limit
from kairo.results import cpu_flags
from netlists import (needs_gcc, needs_iverilog, needs_verilator, random_bits, random_netlist,
                      tie_circuit)

SIZES = (1, 63, 64, 65, 1000)


# ---------------------------------------------------------------------------- generators
def random_circuit(seed: int, n_inputs: int = 12, n_gates: int = 400, n_classes: int = 3,
                   group: int = 4, window: int = 24) -> Circuit:
    """Random netlist (netlists.random_netlist): outputs are the last nodes plus an input."""
    return random_netlist(seed, n_inputs, n_gates, n_classes, group, window=window)


def random_x(seed: int, n: int, m: int) -> np.ndarray:
    return random_bits(seed, n, m, dtype=np.int64)


def _has_ties(scores: np.ndarray) -> bool:
    top = scores.max(axis=1, keepdims=True)
    return bool(((scores == top).sum(axis=1) > 1).any())


@pytest.fixture(scope="module")
def circ() -> Circuit:
    return random_circuit(7)


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kairo-c-cache")


# ---------------------------------------------------------------------------- generator sanity
def test_generator_exercises_every_op_and_ties(circ):
    live = circ.live_nodes()[circ.n_inputs:]
    assert set(circ.ops[live].tolist()) == set(range(16)), "some op never reaches an output"
    assert live.sum() > 150
    assert _has_ties(circ.scores(random_x(1, 1000, circ.n_inputs)))


# ---------------------------------------------------------------------------- C back end
@needs_gcc
@pytest.mark.parametrize("width", [64, 256, 512])
def test_c_matches_reference(circ, cache, width):
    # 512 runs on any x86-64: without AVX-512 gcc splits the 64-byte vectors, same results
    cc = compile_c(circ, width=width, cache_dir=cache)
    assert cc.width == width and cc.library_path.is_file()
    for n in SIZES:
        x = random_x(n, n, circ.n_inputs)
        np.testing.assert_array_equal(cc.evaluate(x), circ.evaluate(x))
        np.testing.assert_array_equal(cc.scores(x), circ.scores(x))
        np.testing.assert_array_equal(cc.predict(x), circ.predict(x))
        words = pack_bits(x)
        np.testing.assert_array_equal(cc.evaluate_packed(words), circ.evaluate_packed(words))
    x = random_x(3, 1000, circ.n_inputs).astype(bool)            # bool input works too
    np.testing.assert_array_equal(cc.predict(x), circ.predict(x))
    empty = np.zeros((0, circ.n_inputs), dtype=np.int64)
    assert cc.evaluate(empty).shape == (0, circ.n_outputs)
    assert cc.scores(empty).shape == (0, circ.n_classes)
    assert cc.predict(empty).shape == (0,)


@needs_gcc
def test_c_ties_and_degenerate_circuits(cache):
    t = tie_circuit()
    x = random_x(5, 200, 2)
    cc = compile_c(t, width=256, cache_dir=cache)
    assert _has_ties(t.scores(x))
    np.testing.assert_array_equal(cc.scores(x), t.scores(x))
    np.testing.assert_array_equal(cc.predict(x), t.predict(x))
    assert set(cc.predict(x).tolist()) <= {1, 2}
    # no gates at all: outputs are inputs, one class
    wires = Circuit(n_inputs=3, ops=[], a=[], b=[], outputs=[2, 0, 0], n_classes=1)
    x = random_x(6, 130, 3)
    for width in (64, 512):
        cw = compile_c(wires, width=width, cache_dir=cache)
        np.testing.assert_array_equal(cw.evaluate(x), wires.evaluate(x))
        np.testing.assert_array_equal(cw.predict(x), np.zeros(130))


@needs_gcc
def test_c_many_parts_and_parallel_units(monkeypatch, tmp_path):
    """Small parts force values through the scratch slots; several translation units are
    compiled in parallel and linked."""
    c = random_circuit(11, n_inputs=20, n_gates=1500, n_classes=5, group=8, window=60)
    monkeypatch.setattr(_csource, "CHUNK", 5)
    monkeypatch.setattr(_toolchain, "PARTS_PER_TU", 4)
    calls = []
    real = _toolchain._split_units
    monkeypatch.setattr(_toolchain, "_split_units", lambda src, n: calls.append(n) or real(src, n))
    src = c_source(c, width=64)
    assert src.count("KAIRO_PART void kairo_part") > 100 and "v[" in src
    x = random_x(12, 777, c.n_inputs)
    for width, jobs in ((64, 3), (512, 1)):
        cc = compile_c(c, width=width, cache_dir=tmp_path, jobs=jobs)
        np.testing.assert_array_equal(cc.evaluate(x), c.evaluate(x))
        np.testing.assert_array_equal(cc.scores(x), c.scores(x))
        np.testing.assert_array_equal(cc.predict(x), c.predict(x))
    assert calls == [4], "the jobs=3 build did not split into 3 part units + 1 main unit"


@needs_gcc
def test_c_source_compiles_warning_free(circ, tmp_path):
    cc = find_compiler()
    for width in (64, 256, 512):
        f = tmp_path / f"w{width}.c"
        f.write_text(c_source(circ, width=width))
        r = subprocess.run([*cc, "-O1", "-march=native", "-Wall", "-Wextra", "-Werror", "-c",
                            "-o", str(tmp_path / "w.o"), str(f)], capture_output=True,
                           text=True)
        assert r.returncode == 0, r.stderr[:2000]


@needs_gcc
def test_compile_cache_reused(circ, tmp_path, monkeypatch):
    first = compile_c(circ, width=64, cache_dir=tmp_path)
    assert not first.from_cache
    mtime = first.library_path.stat().st_mtime_ns
    assert first.source_path and first.source_path.read_text() == c_source(circ, width=64)

    def no_compiler():
        raise AssertionError("compiler called for a cached library")

    monkeypatch.setattr(_toolchain, "find_compiler", no_compiler)
    second = compile_c(circ, width=64, cache_dir=tmp_path)
    assert second.from_cache and second.library_path == first.library_path
    assert second.library_path.stat().st_mtime_ns == mtime
    x = random_x(2, 100, circ.n_inputs)
    np.testing.assert_array_equal(second.predict(x), circ.predict(x))
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    with pytest.raises(AssertionError):        # another width is another library
        compile_c(circ, width=256, cache_dir=tmp_path)


@needs_gcc
def test_auto_width(circ, cache):
    flags = cpu_flags()
    expect = 512 if "avx512f" in flags else 256 if "avx2" in flags else 64
    assert native_width() == expect
    assert compile_c(circ, cache_dir=cache).width == expect


DRIVER = r"""
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
void kairo_eval(const uint64_t *in, uint64_t *out, size_t n_blocks);
void kairo_scores_one(const uint8_t *bits, int32_t *scores);
int32_t kairo_predict_one(const uint8_t *bits);
/* usage: drv N_IN N_OUT N_CLASSES N bits.bin words.bin out.bin */
int main(int argc, char **argv)
{
    if (argc != 8) return 2;
    size_t ni = strtoul(argv[1], 0, 10), no = strtoul(argv[2], 0, 10);
    size_t nc = strtoul(argv[3], 0, 10), n = strtoul(argv[4], 0, 10);
    size_t nb = (n + 63) / 64;
    uint8_t *bits = malloc(ni * n);
    uint64_t *in = malloc(8 * ni * nb), *out = malloc(8 * no * nb);
    int32_t *sc = malloc(4 * nc);
    FILE *f = fopen(argv[5], "rb");
    if (fread(bits, 1, ni * n, f) != ni * n) return 3;
    fclose(f);
    f = fopen(argv[6], "rb");
    if (fread(in, 8, ni * nb, f) != ni * nb) return 3;
    fclose(f);
    for (size_t s = 0; s < n; ++s) {
        kairo_scores_one(bits + s * ni, sc);
        printf("%d", (int)kairo_predict_one(bits + s * ni));
        for (size_t c = 0; c < nc; ++c) printf(" %d", (int)sc[c]);
        printf("\n");
    }
    kairo_eval(in, out, nb);
    f = fopen(argv[7], "wb");
    fwrite(out, 8, no * nb, f);
    fclose(f);
    return 0;
}
"""


@needs_gcc
def test_standalone_c_with_driver(circ, tmp_path):
    model = write_c(circ, tmp_path / "model.c")
    text = model.read_text()
    includes = {ln.strip() for ln in text.splitlines() if ln.startswith("#include")}
    assert includes == {"#include <stdint.h>", "#include <stddef.h>"}
    assert "vector_size" not in text and "kairo_predict_one" in text
    cc = find_compiler()
    # plain C99, warning-free, and no library calls (firmware: no libc)
    obj = tmp_path / "model.o"
    r = subprocess.run([*cc, "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-O2",
                        "-ffreestanding", "-c", "-o", str(obj), str(model)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]
    nm = shutil.which("nm")
    if nm:
        undefined = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True).stdout
        assert undefined.strip() == "", f"model.o needs symbols: {undefined}"
    (tmp_path / "driver.c").write_text(DRIVER)
    exe = tmp_path / "drv"
    r = subprocess.run([*cc, "-O1", "-o", str(exe), str(model), str(tmp_path / "driver.c")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[:2000]
    n = 300
    x = random_x(9, n, circ.n_inputs)
    x[:5] *= 7                                   # any non-zero byte is a 1
    bits = (x != 0).astype(np.uint8)
    (tmp_path / "bits.bin").write_bytes(x.astype(np.uint8).tobytes())
    words = pack_bits(bits)                      # (n_inputs, n_words) → in[block][input]
    (tmp_path / "words.bin").write_bytes(np.ascontiguousarray(words.T).tobytes())
    r = subprocess.run([str(exe), str(circ.n_inputs), str(circ.n_outputs),
                        str(circ.n_classes), str(n), str(tmp_path / "bits.bin"),
                        str(tmp_path / "words.bin"), str(tmp_path / "out.bin")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = np.array([[int(v) for v in ln.split()] for ln in r.stdout.splitlines()])
    np.testing.assert_array_equal(rows[:, 0], circ.predict(bits))
    np.testing.assert_array_equal(rows[:, 1:], circ.scores(bits))
    out = np.fromfile(tmp_path / "out.bin", dtype=np.uint64).reshape(-1, circ.n_outputs).T
    np.testing.assert_array_equal(out, circ.evaluate_packed(words))


@needs_gcc
def test_write_c_not_standalone_is_compile_source(circ, tmp_path):
    p = write_c(circ, tmp_path / "fast.c", standalone=False, width=256)
    assert p.read_text() == c_source(circ, width=256)
    assert [f.name for f in tmp_path.iterdir()] == ["fast.c"]     # no temp file left


# ---------------------------------------------------------------------------- Verilog
def test_verilog_structure(circ):
    v0 = verilog_source(circ)
    live = circ.live_nodes()[circ.n_inputs:]
    assert v0.count("assign g") == int(live.sum())
    assert "clk" not in v0 and "always" not in v0
    assert f"input  wire [{circ.n_inputs - 1}:0] x" in v0
    assert "output wire [1:0] y" in v0                        # 3 classes
    v2 = verilog_source(circ, pipeline=2, module="net2")
    assert v2.startswith("//") and "module net2 (" in v2 and "input  wire clk" in v2
    assert v2.count("always @(posedge clk)") == 2
    assert "valid 2 rising clk edge(s) after x" in v2
    # registers in the vote adder and argmax trees, spread evenly, everything aligned with y
    grp = circ.n_outputs // circ.n_classes
    assert vote_levels(circ) == ((grp - 1).bit_length(), 2)              # 3 classes
    levels = sum(vote_levels(circ))
    assert vote_cuts(circ, 0) == [] and vote_cuts(circ, 1) == [levels // 2]
    assert vote_cuts(circ, levels - 1) == list(range(1, levels))          # every level
    assert verilog_latency(circ, 2, 1) == 3 and verilog_latency(circ, 2) == 2
    v3 = verilog_source(circ, pipeline=2, pipeline_votes=levels - 1)
    assert f"valid {levels + 1} rising clk edge(s) after x" in v3
    assert " pc0_0 <= " in v3 and " pc0_0 = " not in v3                    # regs, not wires
    assert " am0_i <= " in v3 and " am0_i = " not in v3
    assert f"o_d{levels - 1} <= o_d" in v3 and "votes_d1 <=" in v3
    assert "clk" in verilog_source(circ, pipeline_votes=1)
    for bad in (levels, -1, "1", True, 1.0):
        with pytest.raises(KairoError, match=f"pipeline_votes must be an integer from 0 to "
                                             f"{levels - 1}"):
            verilog_source(circ, pipeline_votes=bad)


def test_vote_levels_and_latency_of_small_groups():
    one = Circuit(n_inputs=2, ops=[], a=[], b=[], outputs=[0, 1], n_classes=2)
    assert vote_levels(one) == (0, 1) and verilog_latency(one, 1, 0) == 1
    with pytest.raises(KairoError, match="from 0 to 0"):
        vote_cuts(one, 1)
    five = Circuit(n_inputs=5, ops=[], a=[], b=[], outputs=[0, 1, 2, 3, 4], n_classes=1)
    assert vote_levels(five) == (3, 0) and vote_cuts(five, 2) == [1, 2]
    assert verilog_latency(five, 1, 2) == 3


@needs_iverilog
@pytest.mark.parametrize("pipeline, votes", [(0, 0), (2, 0), (0, 3), (3, 1)])
def test_iverilog_matches_reference(circ, pipeline, votes):
    x = random_x(20 + pipeline, 500, circ.n_inputs)
    out, pred, scores = simulate_verilog(circ, x, simulator="iverilog", pipeline=pipeline,
                                         pipeline_votes=votes, with_scores=True)
    np.testing.assert_array_equal(out, circ.evaluate(x))
    np.testing.assert_array_equal(scores, circ.scores(x))
    np.testing.assert_array_equal(pred, circ.predict(x))
    assert _has_ties(scores)
    assert out.dtype == bool and pred.dtype == np.int64


@needs_iverilog
@pytest.mark.parametrize("pipeline, votes", [(0, 0), (2, 0), (5, 0), (0, 1), (2, 1)])
def test_iverilog_ties_and_degenerate(pipeline, votes):
    t = tie_circuit()
    x = random_x(4, 64, 2)
    out, pred = simulate_verilog(t, x, pipeline=pipeline, pipeline_votes=votes)
    np.testing.assert_array_equal(out, t.evaluate(x))
    np.testing.assert_array_equal(pred, t.predict(x))
    wires = Circuit(n_inputs=3, ops=[], a=[], b=[], outputs=[2, 0, 0], n_classes=1)
    x = random_x(8, 20, 3)
    out, pred = simulate_verilog(wires, x, pipeline=pipeline, pipeline_votes=votes)
    np.testing.assert_array_equal(out, wires.evaluate(x))
    np.testing.assert_array_equal(pred, np.zeros(20))


@needs_iverilog
def test_iverilog_1000_gates_2000_vectors_fast():
    c = random_circuit(3, n_inputs=64, n_gates=1000, n_classes=10, group=10, window=200)
    x = random_x(5, 2000, 64)
    t0 = time.perf_counter()
    out, pred = simulate_verilog(c, x, simulator="iverilog", pipeline=2)
    assert time.perf_counter() - t0 < 10
    np.testing.assert_array_equal(out, c.evaluate(x))
    np.testing.assert_array_equal(pred, c.predict(x))


@needs_verilator
@pytest.mark.parametrize("pipeline, votes", [(0, 0), (2, 0), (1, 2)])
def test_verilator_matches_reference(circ, pipeline, votes):
    x = random_x(30 + pipeline, 300, circ.n_inputs)
    out, pred, scores = simulate_verilog(circ, x, simulator="verilator", pipeline=pipeline,
                                         pipeline_votes=votes, with_scores=True)
    np.testing.assert_array_equal(out, circ.evaluate(x))
    np.testing.assert_array_equal(scores, circ.scores(x))
    np.testing.assert_array_equal(pred, circ.predict(x))


@pytest.mark.slow
@pytest.mark.parametrize("sim", [pytest.param("iverilog", marks=needs_iverilog),
                                 pytest.param("verilator", marks=needs_verilator)])
def test_simulators_read_outputs_wider_than_8192_bits(sim):
    """Verilator limits a $display to 8,192 bits of arguments; a 9,003-output circuit (the
    98.6 % MNIST circuit has 32,000) is printed in slices whose hex digits join exactly."""
    c = random_netlist(4, 16, 60, 3, 3001, window=20, outputs="sampled")
    assert c.n_outputs == 9003 and c.n_outputs % 4
    x = random_x(6, 5, 16)
    out, pred, scores = simulate_verilog(c, x, simulator=sim, with_scores=True)
    np.testing.assert_array_equal(out, c.evaluate(x))
    np.testing.assert_array_equal(scores, c.scores(x))
    np.testing.assert_array_equal(pred, c.predict(x))


def test_verilator_binary_runs_with_the_hard_stack_limit():
    """A ~100k-gate netlist's Verilator eval overflows an 8 MiB stack; the simulation binary
    is started with its stack limit raised to the hard limit."""
    hard = subprocess.run(["sh", "-c", "ulimit -Hs"], capture_output=True, text=True).stdout
    got = subprocess.run(["sh", "-c", "ulimit -s"], capture_output=True, text=True,
                         preexec_fn=_raise_stack_limit).stdout
    assert got == hard


@needs_verilator
def test_verilog_lint_clean(circ, tmp_path):
    for k, votes in ((0, 0), (3, 0), (0, 3), (2, 1)):
        f = write_verilog(circ, tmp_path / "kairo_circuit.v", pipeline=k, pipeline_votes=votes)
        r = subprocess.run(["verilator", "--lint-only", "-Wall", str(f)], capture_output=True,
                           text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr[:2000]


def test_write_verilog_atomic(circ, tmp_path):
    p = write_verilog(circ, tmp_path / "c.v", pipeline=1, module="top")
    assert p.read_text() == verilog_source(circ, pipeline=1, module="top")
    assert [f.name for f in tmp_path.iterdir()] == ["c.v"]


# ---------------------------------------------------------------------------- bad input
@needs_gcc
def test_compiled_bad_input(circ, cache):
    cc = compile_c(circ, width=64, cache_dir=cache)
    m = circ.n_inputs
    with pytest.raises(KairoError, match=rf"shape \(n_samples, {m}\).*got \(5, {m + 1}\)"):
        cc.evaluate(np.zeros((5, m + 1), dtype=int))
    with pytest.raises(KairoError, match="shape"):
        cc.predict(np.zeros(m, dtype=int))
    with pytest.raises(KairoError, match="0/1"):
        cc.scores(np.full((2, m), 2))
    with pytest.raises(KairoError, match="0/1"):
        cc.evaluate(np.zeros((2, m), dtype=float))
    with pytest.raises(KairoError, match=rf"\({m}, n_words\)"):
        cc.evaluate_packed(np.zeros((m - 1, 3), dtype=np.uint64))
    with pytest.raises(KairoError, match="unsigned 64-bit"):
        cc.evaluate_packed(np.full((m, 3), -1, dtype=np.int64))


def test_bad_arguments(circ, tmp_path):
    with pytest.raises(KairoError, match=r"width must be \"auto\" or one of 64, 256, 512"):
        c_source(circ, width=128)
    with pytest.raises(KairoError, match="pipeline must be a non-negative integer"):
        verilog_source(circ, pipeline=-1)
    with pytest.raises(KairoError, match="not a valid identifier"):
        verilog_source(circ, module="module")
    with pytest.raises(KairoError, match="not a valid identifier"):
        verilog_source(circ, module="2fast")
    with pytest.raises(KairoError, match="expected a kairo.logic Circuit"):
        c_source({"gates": []})
    with pytest.raises(KairoError, match="simulator must be"):
        find_simulator("modelsim")
    with pytest.raises(KairoError, match="shape"):
        simulate_verilog(circ, np.zeros((3, 2), dtype=int))


def test_write_into_missing_folder(circ, tmp_path):
    missing = tmp_path / "nope" / "model.c"
    with pytest.raises(KairoError, match=r"folder .*nope does not exist.*mkdir -p"):
        write_c(circ, missing)
    with pytest.raises(KairoError, match="nope does not exist"):
        write_verilog(circ, tmp_path / "nope" / "c.v")
    assert not (tmp_path / "nope").exists()


def test_missing_compiler(circ, tmp_path, monkeypatch):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(KairoError, match="apt-get install gcc"):
        compile_c(circ, width=64, cache_dir=tmp_path / "cache")
    monkeypatch.setenv("CC", "/no/such/compiler -O3")
    with pytest.raises(KairoError, match=r"\$CC='/no/such/compiler -O3'.*apt-get install gcc"):
        compile_c(circ, width=64, cache_dir=tmp_path / "cache")
    assert not list((tmp_path / "cache").glob("*.so"))


@needs_gcc
def test_compile_error_reports_gcc_stderr(circ, tmp_path, monkeypatch):
    cc = find_compiler()
    monkeypatch.setenv("CC", f"{cc[0]} -include /no/such/header.h")
    with pytest.raises(KairoError, match=r"C compilation of .* failed[\s\S]*/no/such/header"):
        compile_c(circ, width=64, cache_dir=tmp_path)
    assert not list(tmp_path.glob("*.so")) and not list(tmp_path.glob(".*.tmp"))


def test_missing_simulator(circ, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    x = random_x(1, 4, circ.n_inputs)
    with pytest.raises(KairoError, match="apt-get install iverilog"):
        simulate_verilog(circ, x)
    with pytest.raises(KairoError, match="apt-get install iverilog"):
        find_simulator("iverilog")
    with pytest.raises(KairoError, match="apt-get install verilator"):
        simulate_verilog(circ, x, simulator="verilator")


@needs_gcc
def test_compiled_circuit_repr_and_attrs(circ, cache):
    cc = compile_c(circ, width=64, cache_dir=cache)
    assert isinstance(cc, CompiledCircuit)
    assert (cc.n_inputs, cc.n_outputs, cc.n_classes) == (circ.n_inputs, circ.n_outputs,
                                                         circ.n_classes)
    assert "width=64" in repr(cc) and str(cc.library_path) in repr(cc)
    assert cc.library_path.suffix == ".so" and cc.library_path.parent == cache
