"""``kairo demo``: every family that exists, end to end, into one report folder.

The demo is a list of (command, config) steps, each run through :func:`kairo._app.execute`
exactly as ``kairo <command> --config <step>/config.yaml`` would run it: the connectome
reservoir (lateralization, one task per normalization, the real connectome against every null
model, a gain sweep, a spiking activation screen), the embodied fly, a logic-gate circuit
(trained, exported, verified, sized for an FPGA) and a time-series classifier with attention
pooling.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from kairo._app import execute, get_command
from kairo._command import Command
from kairo._config import check_fields, option

__all__ = ["DemoConfig", "Step", "demo_steps", "run_steps", "run_demo", "COMMANDS"]

log = logging.getLogger("kairo.progress")


@dataclass(frozen=True)
class DemoConfig:
    quick: bool = option(False, "tiny sizes: a smoke run of every step, not for conclusions")
    data_dir: str = option("", "data directory (default: $KAIRO_DATA_DIR, else the user cache "
                           "dir)")

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class Step:
    """One command of the demo: its folder in the report, the command and its config, and
    what the report says about it."""

    name: str
    command: str
    config: object
    note: str = ""


def _reservoir_steps(ddir: str, quick: bool) -> list[Step]:
    from kairo.reservoir import (CompareConfig, PropagateConfig, RunConfig, ScreenConfig,
                                 SweepConfig)

    size = (dict(n_train=300, n_test=100, washout=100, max_delay=20, cv=3) if quick else
            dict(n_train=2000, n_test=1000, washout=300))
    readout = "DN-VNC+DN-SEZ+pre-DN-VNC+pre-DN-SEZ" if quick else "all"
    common = dict(data_dir=ddir, readout_group=readout, **size)
    # the comparisons fit one ridge readout per condition over all 2,952 neurons, a Cholesky
    # factorisation per alpha and CV fold: 3 folds and 3 replicates of every null model keep
    # the full-size demo within minutes (kairo reservoir compare defaults to 5 and 20)
    many = {**common, "cv": 3}
    return [
        Step("propagate", "reservoir propagate", PropagateConfig(data_dir=ddir),
             "Sensory neurons of one side are driven; DN-VNC / DN-SEZ activity left and right "
             "answers whether the larval brain keeps the stimulus lateralized."),
        Step("narma10-spectral", "reservoir run",
             RunConfig(task="narma10", norm="spectral", **common),
             "NARMA-10 with the connectome scaled to spectral radius 0.9."),
        Step("narma10-row", "reservoir run", RunConfig(task="narma10", norm="row", **common),
             "NARMA-10 with each neuron's out-weights summing to 1."),
        Step("compare-memory-capacity", "reservoir compare",
             CompareConfig(task="memory-capacity", norm="row", nulls=2 if quick else 3,
                           **many),
             "Memory capacity of the real wiring against every null model (degree-preserving "
             "rewiring, weight shuffle, random topology, Gaussian weights)."),
        Step("sweep-alpha", "reservoir sweep",
             SweepConfig(task="narma10", norm="row", nulls=2, null_models=("rewire", "gaussian"),
                         values=(0.5, 1.0) if quick else (0.25, 0.5, 1.0, 1.5), **many),
             "NARMA-10 error against the global gain α, real wiring and two null models."),
        Step("spiking-screen", "reservoir screen",
             ScreenConfig(data_dir=ddir, trials=8 if quick else 30,
                          duration_ms=300.0 if quick else 1000.0),
             "Spiking neurons (LIF, Shiu et al. 2024): Poisson input into the left olfactory "
             "sensory neurons; every neuron ranked by its rate increase over baseline."),
    ]


def _fly_steps(ddir: str, quick: bool) -> list[Step]:
    if importlib.util.find_spec("flygym") is None:
        return []
    from kairo.fly import FlyConfig

    # crossed DN-VNC → legs: the wiring under which the connectome turns toward the odor
    # (docs/fly.md; with ipsilateral wiring it turns away)
    return [Step("fly-run", "fly run",
                 FlyConfig(data_dir=ddir, duration=0.06 if quick else 1.5, video="fly.mp4",
                           wiring="crossed", frame_size=128 if quick else 480),
                 "The connectome (row-normalized) steers NeuroMechFly toward an odor; with DN-VNC "
                 "crossed to the legs it turns toward it, with ipsilateral wiring away. Many "
                 "trials and the null models: `kairo fly trials` (docs/fly.md).")]


def _logic_steps(ddir: str, quick: bool) -> list[Step]:
    from kairo import KairoError
    from kairo.logic import (ExportConfig, FpgaConfig, LogicTrainConfig, VerifyConfig,
                             find_fpga_tools, find_simulator)

    circuit = "logic-train/circuit.json"        # relative to the report folder
    # quick: 300 iterations learn 0 vs 1 (100 left the circuit at chance)
    steps = [
        Step("logic-train", "logic train",
             LogicTrainConfig(classes=(0, 1), kernels=4, hidden=100, layers=2,
                              iters=300 if quick else 600, eval_every=100 if quick else 200,
                              data_dir=ddir),
             "The seed's convolutional logic-gate network (4 kernels of depth-3 gate trees, OR "
             "pooling, 2 dense layers × 100) learns 0 vs 1 on MNIST and is fixed to its most "
             "likely gates and simplified into a circuit."),
        Step("logic-c", "logic export",
             ExportConfig(circuit=circuit, format="c", output="logic-train/circuit.c")),
        Step("logic-verilog", "logic export",
             ExportConfig(circuit=circuit, format="verilog", output="logic-train/circuit.v")),
    ]
    try:
        find_simulator()
        backends = ("numpy", "c", "verilog")
    except KairoError:
        backends = ("numpy", "c")
    steps.append(Step("logic-verify", "logic verify",
                      VerifyConfig(circuit=circuit, backends=backends,
                                   verilog_samples=200 if quick else 1000, data_dir=ddir),
                      "Every back end checked bit for bit against the NumPy reference on the "
                      "test images" + ("" if "verilog" in backends else
                                       " (no Verilog simulator here: apt-get install iverilog)")
                      + "."))
    try:
        find_fpga_tools()
    except KairoError as exc:
        log.info("demo: FPGA sizing skipped: %s", exc)
    else:
        steps.append(Step("logic-fpga", "logic fpga",
                          FpgaConfig(circuit=circuit, sim_vectors=16 if quick else 64),
                          "The circuit placed and routed for an iCE40 UP5K (Yosys + nextpnr)."))
    return steps


def _tsc_steps(quick: bool) -> list[Step]:
    from kairo.tsc._config import MapsConfig, TscTrainConfig

    return [
        Step("tsc-train", "tsc train",
             # the quick demo checks the chain, the full one runs the default recipe
             TscTrainConfig(dataset="GunPoint", **({"steps": 40} if quick else {})),
             "kairo's default time-series classifier, two Transformers on convolutional "
             "tokens trained side by side and averaged, classifies GunPoint (UCR, shipped in "
             "the aeon wheel); published: ResNet 0.991, HC2 1.000 (docs/tsc.md)."),
        Step("tsc-maps", "tsc maps",
             MapsConfig(model="tsc-train/model.pt", dataset="GunPoint", series=(0, 1)),
             "Where the first of the two looks: its self-attention over each series."),
    ]


def demo_steps(cfg: DemoConfig) -> list[Step]:
    """The demo's steps in order; paths are relative to the report folder."""
    from kairo.data import data_dir

    ddir = str(data_dir(cfg.data_dir or None))
    return (_reservoir_steps(ddir, cfg.quick) + _fly_steps(ddir, cfg.quick)
            + _logic_steps(ddir, cfg.quick) + _tsc_steps(cfg.quick))


def run_steps(job: tuple) -> list[tuple[Step, str, float]]:
    """Run ``job = (root, steps)`` in order inside the report folder ``root``; returns
    (step, summary, seconds) per step. Module-level, so a worker process can run it."""
    root, steps = job
    done = []
    # the steps read and write paths relative to the report folder, so each config.yaml
    # re-runs from there exactly as it ran here
    with contextlib.chdir(root):
        for step in steps:
            t0 = time.perf_counter()
            cmd = get_command(step.command)
            outcome = execute(cmd, step.config, out=Path(root) / step.name if cmd.folder
                              else None)
            done.append((step, outcome.summary, time.perf_counter() - t0))
    return done


def run_demo(cfg: DemoConfig, rd) -> str:
    """Run every step into ``rd``'s folder and write report.md and report.html.

    The reservoir steps run one after another (compare and sweep fill every core
    themselves); then the fly, the logic chain and the time-series chain run side by side,
    one worker process each, since each of them keeps about one core busy."""
    from kairo._jobs import map_jobs

    steps = demo_steps(cfg)
    started = time.perf_counter()
    number = {s.name: i for i, s in enumerate(steps, 1)}

    def begin(step):
        log.info("demo: [%d/%d] %s (%s) …", number[step.name], len(steps), step.command,
                 step.name)

    def end(step, secs):
        log.info("demo: %s done in %.0f s (%.0f s so far)", step.name, secs,
                 time.perf_counter() - started)

    results = {}
    for step in (s for s in steps if s.command.startswith("reservoir")):
        begin(step)
        [results[step.name]] = run_steps((rd.path, [step]))
        end(step, results[step.name][2])
    chains: dict[str, list[Step]] = {}
    for step in steps:
        if not step.command.startswith("reservoir"):
            chains.setdefault(step.command.split()[0], []).append(step)
            begin(step)
    # local processes, never Ray: the steps write into this machine's temporary report folder
    for chain in map_jobs(run_steps, [(rd.path, c) for c in chains.values()],
                          executor="processes", desc="demo"):
        for step, summary, secs in chain:
            results[step.name] = (step, summary, secs)
            end(step, secs)
    sections = [results[s.name] for s in steps]
    text = _report(rd.path, sections, cfg.quick)
    html = [_html_section(rd.path, *section) for section in sections]
    if not any(s.command.startswith("fly") for s in steps):
        from kairo.fly import INSTALL_HINT

        skipped = f"Skipped: the embodied fly needs the [fly] extra — {INSTALL_HINT}."
        log.warning("demo: %s", skipped)
        text += f"\n## fly-run\n\n{skipped}\n"
        html.append({"name": "fly-run", "command": "fly run", "skipped": skipped})
    rd.add("report.md", text)
    from kairo.report import demo_report

    demo_report(rd.path, html, quick=cfg.quick)
    rd.add("report.html")
    return f"report: {rd.out / 'report.html'} (and report.md)"


def _report(root, sections, quick: bool) -> str:
    lines = ["# kairo demo report", "",
             "Every section is one kairo command; re-run it from this folder with the command "
             "shown." + ("  (quick mode: tiny sizes, not for conclusions)" if quick else ""), "",
             "Direction convention: `weights[i, j]` = synapses from neuron i (pre) onto j "
             "(post); activity flows x(t) = f(x(t−1) W + input).", ""]
    for step, summary, secs in sections:
        folder = root / step.name
        rerun = _rerun(root, step)
        lines += [f"## {step.name}", "", f"Re-run: `{rerun}` ({secs:.1f} s here)", ""]
        if step.note:
            lines += [step.note, ""]
        lines += ["```", summary.replace(str(root) + "/", ""), "```", ""]
        if folder.is_dir():
            lines += [f"![{p.stem}]({step.name}/{p.name})"
                      for p in sorted(folder.glob("*.png"))]
            lines += [f"Video: [{step.name}/{p.name}]({step.name}/{p.name})"
                      for p in sorted(folder.glob("*.mp4"))]
            lines.append("")
    return "\n".join(lines)


def _rerun(root, step: Step) -> str:
    if (root / step.name).is_dir():
        return f"kairo {step.command} --config {step.name}/config.yaml"
    return f"kairo {step.command} " + " ".join(_flags(step.config))


def _html_section(root, step: Step, summary: str, secs: float) -> dict:
    """A step as report.html shows it (kairo.report.demo_report)."""
    return {"name": step.name, "command": step.command, "note": step.note,
            "summary": summary.replace(str(root) + "/", ""), "seconds": secs,
            "rerun": _rerun(root, step)}


def _flags(cfg) -> list[str]:
    """The flags that set ``cfg``'s non-default values."""
    out = []
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        if v == f.default:
            continue
        flag = "--" + f.name.replace("_", "-")
        if isinstance(v, bool):
            out.append(flag if v else f"--no-{f.name.replace('_', '-')}")
        else:
            out.append(f"{flag} {','.join(map(str, v)) if isinstance(v, tuple) else v}")
    return out


COMMANDS = [
    Command("demo", DemoConfig, run_demo, "run every family end to end and write a report",
            description="every family end to end: each step is a kairo command run into its "
                        "own folder; report.html (and report.md) shows what each found and "
                        "how to re-run it",
            default_out="results/demo"),
]
