"""``kairo demo``: every family that exists, end to end, into one report folder.

The connectome reservoir (lateralization, one task per normalization, the real connectome
against every null model, a gain sweep), the embodied fly, a logic-gate circuit and a
time-series classifier with attention pooling.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path

from kairo._errors import KairoError
from kairo._runs import ResultsDir, atomic_folder
from kairo.data import data_dir as resolve_data_dir

__all__ = ["run_demo"]


def run_demo(out, *, data_dir=None, quick: bool = False, overwrite: bool = False,
             log=None) -> Path:
    """Run the demo and write ``out/report.md`` with figures. ``quick`` shrinks every run.
    ``log`` (default: print to stderr) gets a line as each section starts and ends."""
    if log is None:
        def log(msg):
            print(msg, file=sys.stderr, flush=True)
    from kairo.connectome import load_connectome
    from kairo.reservoir import _experiments as ex
    from kairo.reservoir import _report as rp

    out = Path(out)
    if out.exists() and not overwrite:            # before the minutes of work, not after
        raise KairoError(f"output folder {out} already exists; choose another --out or pass "
                         f"--overwrite")
    ddir = str(resolve_data_dir(data_dir))
    size = (dict(n_train=300, n_test=100, washout=100, max_delay=20, cv=3) if quick else
            dict(n_train=2000, n_test=1000, washout=300))
    nulls = 2 if quick else 5
    readout = "DN-VNC+DN-SEZ+pre-DN-VNC+pre-DN-SEZ" if quick else "all"
    raw = load_connectome("winding2023", data_dir=ddir)
    runs = [
        ("propagate", "propagate", ex.PropagateConfig(data_dir=ddir), ex.propagate_experiment,
         rp.write_propagate),
        ("narma10-spectral", "run", ex.RunConfig(data_dir=ddir, task="narma10", norm="spectral",
                                          readout_group=readout, **size),
         ex.run_experiment, rp.write_run),
        ("narma10-row", "run", ex.RunConfig(data_dir=ddir, task="narma10", norm="row",
                                     readout_group=readout, **size),
         ex.run_experiment, rp.write_run),
        ("compare-memory-capacity", "compare",
         ex.CompareConfig(data_dir=ddir, task="memory-capacity", norm="row", nulls=nulls,
                          readout_group=readout, **size),
         ex.compare_experiment, rp.write_compare),
        ("sweep-alpha", "sweep", ex.SweepConfig(data_dir=ddir, task="narma10", norm="row", nulls=2,
                                       null_models=("rewire", "gaussian"),
                                       values=(0.25, 0.5, 1.0, 1.5) if not quick else (0.5, 1.0),
                                       readout_group=readout, **size),
         ex.sweep_experiment, rp.write_sweep),
    ]
    started = time.perf_counter()

    def section(name, fn):
        log(f"demo: {name} …")
        t0 = time.perf_counter()
        result = fn()
        log(f"demo: {name} done in {time.perf_counter() - t0:.0f} s "
            f"({time.perf_counter() - started:.0f} s so far)")
        return result

    with atomic_folder(out, overwrite=overwrite) as tmp:
        sections = []
        for name, cmd, cfg, fn, writer in runs:
            def one(name=name, cmd=cmd, cfg=cfg, fn=fn, writer=writer):
                t0 = time.perf_counter()
                with ResultsDir(tmp / name, command=f"reservoir {cmd}", config=cfg) as rd:
                    for label, info in ex.data_provenance(cfg).items():
                        rd.record_data(label, info["path"], info["sha256"])
                    text = writer(rd, cfg, fn(cfg, raw))
                figs = sorted(p.name for p in (tmp / name).glob("*.png"))
                return name, cmd, cfg, text, figs, time.perf_counter() - t0
            sections.append(section(f"reservoir {cmd} ({name})", one))
        fly = section("fly run", lambda: _fly_sections(tmp, ddir, quick))
        logic = section("logic train/export/verify/fpga", lambda: _logic_section(tmp, ddir, quick))
        tsc = section("tsc train/maps", lambda: _tsc_section(tmp, quick))
        (tmp / "report.md").write_text(_report(sections, raw, quick) + fly + logic + tsc)
    return out


def _fly_sections(tmp: Path, ddir: str, quick: bool) -> str:
    """The embodied fly: one connectome-driven trial with its video, when flygym is here."""
    import importlib.util

    head = ["## fly-run", ""]
    if importlib.util.find_spec("flygym") is None:
        from kairo.embodied._body import INSTALL_HINT

        return "\n".join(head + ["Skipped: the embodied fly needs the [fly] extra — "
                                 f"{INSTALL_HINT}.", ""])
    from kairo.embodied import FlyConfig
    from kairo.embodied import _report as fr

    # crossed DN-VNC → legs: the wiring under which the connectome turns toward the odor
    # (docs/fly.md; with ipsilateral wiring it turns away)
    cfg = FlyConfig(data_dir=ddir, duration=0.06 if quick else 1.5, video="fly.mp4",
                    wiring="crossed", frame_size=128 if quick else 480)
    t0 = time.perf_counter()
    with ResultsDir(tmp / "fly-run", command="fly run", config=cfg) as rd:
        text = fr.run_and_write(cfg, rd, rd.path / "fly.mp4")
    secs = time.perf_counter() - t0
    return "\n".join(head + [
        f"Re-run: `kairo fly run --config fly-run/config.yaml` ({secs:.1f} s here). "
        "The connectome (row-normalized) steers NeuroMechFly; with DN-VNC crossed to the "
        "legs it turns toward the odor, with ipsilateral wiring away. Many trials and the "
        "null models: `kairo fly trials` (docs/fly.md).", "",
        "```", text.replace(str(rd.path), "fly-run"), "```", "",
        "![last video frame](fly-run/video_frame.png)", "",
        "![trajectory](fly-run/trajectory.png)", "", "Video: [fly-run/fly.mp4](fly-run/fly.mp4)",
        ""])


def _logic_section(tmp: Path, ddir: str, quick: bool) -> str:
    """Logic-gate network: the seed's 0-vs-1 convolutional network trained, made a circuit,
    exported to C and Verilog, every back end checked bit-exactly against the reference, and
    the circuit sized for an iCE40 UP5K with Yosys and nextpnr (when they are installed)."""
    from kairo.logic import _backends as be
    from kairo.logic import _commands as lc
    from kairo.logic._fpga import find_tools, run_fpga_command

    cfg = lc.LogicTrainConfig(classes=(0, 1), kernels=4, hidden=100, layers=2,
                              # quick: 300 iterations learn 0 vs 1 (100 left the circuit
                              # at chance, 54 %)
                              iters=300 if quick else 600, eval_every=100 if quick else 200,
                              data_dir=ddir)
    t0 = time.perf_counter()
    out = tmp / "logic-train"
    with ResultsDir(out, command="logic train", config=cfg) as rd:
        text = lc.run_train(cfg, rd, out, log=lambda *_: None)
    lc._done_checkpoint(out)
    circ_path = out / "circuit.json"
    lc.run_export(lc.ExportConfig(circuit=str(circ_path), format="c",
                                  output=str(out / "circuit.c")))
    lc.run_export(lc.ExportConfig(circuit=str(circ_path), format="verilog",
                                  output=str(out / "circuit.v")))
    try:
        be.find_simulator()
        backends = ("numpy", "c", "verilog")
    except KairoError:
        backends = ("numpy", "c")
    vcfg = lc.VerifyConfig(circuit=str(circ_path), backends=backends,
                           verilog_samples=200 if quick else 1000, data_dir=ddir)
    # recorded relative to the report folder, where the re-run command is meant to be run
    shown = dataclasses.replace(vcfg, circuit="logic-train/circuit.json")
    with ResultsDir(tmp / "logic-verify", command="logic verify", config=shown) as rd:
        vtext = lc.write_verify(rd, lc.run_verify(vcfg, log=lambda *_: None))
    notes = "" if "verilog" in backends else (
        "\n(Verilog simulation skipped: no simulator — apt-get install iverilog)")
    try:
        find_tools()
    except KairoError as exc:
        ftext = f"FPGA sizing skipped: {exc}"
    else:
        fcfg = lc.FpgaConfig(circuit=str(circ_path), sim_vectors=16 if quick else 64)
        fshown = dataclasses.replace(fcfg, circuit="logic-train/circuit.json")
        with ResultsDir(tmp / "logic-fpga", command="logic fpga", config=fshown) as rd:
            ftext = run_fpga_command(fcfg, rd, log=lambda *_: None)
    secs = time.perf_counter() - t0
    return "\n".join([
        "", "## logic-0-vs-1", "",
        f"Re-run, from this folder ({secs:.1f} s here): `kairo logic train --config "
        f"logic-train/config.yaml`; `kairo logic export --circuit logic-train/circuit.json "
        f"--format c|verilog --output …`; `kairo logic verify --config "
        f"logic-verify/config.yaml`; `kairo logic fpga --config logic-fpga/config.yaml`. "
        "The seed's convolutional logic-gate network (4 kernels of depth-3 gate trees, OR "
        "pooling, 2 dense layers × 100) learns 0 vs 1 on MNIST; the trained network is fixed "
        "to its most likely gates, simplified, written as C (logic-train/circuit.c) and "
        "Verilog (logic-train/circuit.v), every back end is checked bit for bit against the "
        "NumPy reference on the test images, and the circuit is placed and routed for an "
        "iCE40 UP5K (docs/logic.md).", "",
        "```", text, vtext + notes, "", ftext, "```", ""])


def _tsc_section(tmp: Path, quick: bool) -> str:
    """Time-series classification: a Transformer with attention pooling on GunPoint, its test
    metrics and confusion matrix, and where it looks (pooling weights, self-attention)."""
    from kairo.attention import _commands as tc

    cfg = tc.TscTrainConfig(dataset="GunPoint", **TSC_DEMO, epochs=5 if quick else 150)
    t0 = time.perf_counter()
    out = tmp / "tsc-train"
    with ResultsDir(out, command="tsc train", config=cfg) as rd:
        text = tc.run_train(cfg, rd, out, log=lambda *_: None)
    tc.checkpoint_path(out).unlink(missing_ok=True)
    mcfg = tc.MapsConfig(model=str(out / "model.pt"), dataset="GunPoint", samples=(0, 1))
    shown = dataclasses.replace(mcfg, model="tsc-train/model.pt")
    with ResultsDir(tmp / "tsc-maps", command="tsc maps", config=shown) as rd:
        maps_text = tc.run_maps(mcfg, rd)
    secs = time.perf_counter() - t0
    return "\n".join([
        "", "## tsc-gunpoint", "",
        f"Re-run: `kairo tsc train --config tsc-train/config.yaml` and `kairo tsc maps "
        f"--config tsc-maps/config.yaml`, from this folder ({secs:.1f} s here). A Transformer "
        "encoder with attention pooling classifies GunPoint (UCR, shipped in the aeon wheel); "
        "published: ResNet 0.991, HC2 0.998 (docs/attention.md has the pooling comparison "
        "and the benchmark).", "",
        "```", text, maps_text, "```", "",
        "![confusion matrix](tsc-train/confusion.png)", "",
        "![learning curves](tsc-train/curves.png)", "",
        "![attention maps](tsc-maps/attention_0.png)", ""])


# the time-series demo's model (docs/attention.md explains the choice)
TSC_DEMO = dict(encoder="transformer", pool="attention", tokens="step", d_model=64, layers=2,
                lr=2e-3, patience=100)


def _report(sections, raw, quick: bool) -> str:
    lines = ["# kairo demo report", "",
             f"Connectome: `{raw!r}`" + ("  (quick mode: tiny sizes, not for conclusions)"
                                          if quick else ""), "",
             "Direction convention: `weights[i, j]` = synapses from neuron i (pre) onto j (post);"
             " activity flows x(t) = f(x(t−1) W + input).", ""]
    for name, cmd, cfg, text, figs, secs in sections:
        lines += [f"## {name}", "", f"Re-run: `kairo reservoir {cmd} --config {name}/config.yaml`"
                  f" ({secs:.1f} s here)", "", "```", text, "```", ""]
        lines += [f"![{f}]({name}/{f})" for f in figs] + [""]
        changed = {f.name: getattr(cfg, f.name) for f in dataclasses.fields(cfg)
                   if getattr(cfg, f.name) != f.default and f.name != "data_dir"}
        if changed:
            lines += [f"Settings that differ from the defaults: `{changed}`", ""]
    return "\n".join(lines)
