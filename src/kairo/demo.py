"""``kairo demo``: every family that exists, end to end, into one report folder.

Today that is the connectome-reservoir family: the lateralization experiment, one task per
normalization, the real connectome against every null model, and a gain sweep.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from pathlib import Path

from kairo._errors import KairoError
from kairo._runs import ResultsDir
from kairo.data import data_dir as resolve_data_dir

__all__ = ["run_demo"]


def run_demo(out, *, data_dir=None, quick: bool = False, overwrite: bool = False) -> Path:
    """Run the demo and write ``out/report.md`` with figures. ``quick`` shrinks every run."""
    from kairo.connectome import load_connectome
    from kairo.reservoir import _experiments as ex
    from kairo.reservoir import _report as rp

    out = Path(out)
    if out.exists() and not overwrite:
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
        ("compare-memory-capacity", "compare", ex.CompareConfig(data_dir=ddir, task="memory-capacity",
                                                     norm="row", nulls=nulls,
                                                     readout_group=readout, **size),
         ex.compare_experiment, rp.write_compare),
        ("sweep-alpha", "sweep", ex.SweepConfig(data_dir=ddir, task="narma10", norm="row", nulls=2,
                                       null_models=("rewire", "gaussian"),
                                       values=(0.25, 0.5, 1.0, 1.5) if not quick else (0.5, 1.0),
                                       readout_group=readout, **size),
         ex.sweep_experiment, rp.write_sweep),
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        sections = []
        for name, cmd, cfg, fn, writer in runs:
            t0 = time.perf_counter()
            with ResultsDir(tmp / name, command=f"reservoir {cmd}", config=cfg) as rd:
                for label, info in ex.data_provenance(cfg).items():
                    rd.record_data(label, info["path"], info["sha256"])
                text = writer(rd, cfg, fn(cfg, raw))
            figs = sorted(p.name for p in (tmp / name).glob("*.png"))
            sections.append((name, cmd, cfg, text, figs, time.perf_counter() - t0))
        fly = _fly_sections(tmp, ddir, quick)
        (tmp / "report.md").write_text(_report(sections, raw, quick) + fly)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
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

    cfg = FlyConfig(data_dir=ddir, duration=0.06 if quick else 1.0, video="fly.mp4",
                    frame_size=128 if quick else 480)
    t0 = time.perf_counter()
    with ResultsDir(tmp / "fly-run", command="fly run", config=cfg) as rd:
        text = fr.run_and_write(cfg, rd, rd.path / "fly.mp4")
    secs = time.perf_counter() - t0
    return "\n".join(head + [
        f"Re-run: `kairo fly run --config fly-run/config.yaml` ({secs:.1f} s here). "
        "The connectome (row-normalized) steers NeuroMechFly toward or away from an odor "
        "source; many trials and the null models: `kairo fly trials` (docs/fly.md).", "",
        "```", text.replace(str(rd.path), "fly-run"), "```", "",
        "![last video frame](fly-run/video_frame.png)", "",
        "![trajectory](fly-run/trajectory.png)", "", "Video: [fly-run/fly.mp4](fly-run/fly.mp4)",
        ""])


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
