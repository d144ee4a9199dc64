"""``kairo fly run | trials | view``: the embodied fly's commands (see :mod:`kairo._app`).

Importable without NumPy, flygym or MuJoCo: the heavy modules are imported inside ``run``.
"""

from __future__ import annotations

import math

from kairo._command import Command
from kairo.fly._config import FlyConfig, FlySettings, TrialsConfig, ViewConfig

__all__ = ["COMMANDS"]

_BRAINLESS = ("constant", "braitenberg")      # controllers that read no connectome


def _connectome_files(cfg: FlySettings) -> dict:
    from kairo.reservoir import connectome_inputs     # the same files a reservoir reads

    return connectome_inputs(cfg)


def _run_inputs(cfg: FlySettings) -> dict[str, str]:
    return {} if cfg.controller in _BRAINLESS else _connectome_files(cfg)


def _trials_inputs(cfg: TrialsConfig) -> dict[str, str]:
    return {} if set(cfg.controllers) <= set(_BRAINLESS) else _connectome_files(cfg)


def _fmt(v: float) -> str:
    return "n/a (too short)" if not math.isfinite(v) else f"{v:+.3f}"


def _run(cfg: FlyConfig, rd) -> str:
    """One trial, with its video when ``cfg.video`` is set: a bare file name is written into
    the results folder and listed in run.json, any other path where it points."""
    import matplotlib.image

    from kairo.fly import (VideoRecorder, make_controller, run_trial, timing_table,
                                trajectory_figure)
    from kairo.fly._experiments import check_output_path

    if cfg.video_in_results:
        video, shown = rd.path / cfg.video, rd.out / cfg.video
    else:       # checked before the trial, so a name clash does not cost a whole run
        video = shown = check_output_path(cfg.video, "video", overwrite=rd.overwrite)
    ctl = make_controller(cfg)
    recorder = None
    if video is not None:
        recorder = VideoRecorder(video, fps=cfg.fps, play_speed=cfg.play_speed,
                                 duration=cfg.duration, odor_xy=(cfg.odor_x, cfg.odor_y),
                                 frame_size=cfg.frame_size,
                                 title=f"{cfg.controller} ({cfg.wiring})")
    ok = False
    try:
        result = run_trial(cfg, controller=ctl, recorder=recorder, progress_bar=None)
        if recorder is not None and recorder.last_frame is not None:
            matplotlib.image.imsave(rd.path / "video_frame.png", recorder.last_frame)
            rd.add("video_frame.png")
        ok = True
    finally:
        if recorder is not None:
            recorder.close(ok)
    if cfg.video_in_results:
        rd.add(cfg.video)
    if ctl.uses_brain and cfg.motor_scale == 0:
        rd.resolve("motor_scale", float(ctl.motor.scale))

    m = result.metrics
    rd.add("trajectory.csv", result.trajectory)
    rd.add("metrics.json", {**m, "timing": result.timing})
    rd.add("timing.csv", timing_table(result.timing, m["simulated_s"]))
    rd.add("trajectory.png", trajectory_figure(result.trajectory, (cfg.odor_x, cfg.odor_y),
                                               f"{cfg.controller} ({cfg.wiring})"))
    share = (result.timing["controller"] + result.timing["bookkeeping"]) / max(
        1e-12, m["wall_s"])
    lines = [f"controller {cfg.controller} ({cfg.wiring}), {m['simulated_s']:.2f} s simulated",
             f"  distance {m['initial_distance']:.1f} → {m['final_distance']:.1f} mm "
             f"(min {m['min_distance']:.1f}); reached: {m['success']}",
             f"  turning index {_fmt(m['turning_index'])} (+ toward the odor, − away)",
             f"  real-time factor {m['real_time_factor']:.3f}; kairo's share of wall time "
             f"{share:.2%}"]
    if m["diverged"]:
        lines.append("  the physics diverged; the trial stopped early")
    if recorder is not None:
        lines.append(f"video: {shown} ({recorder.n_frames} frames)")
    return "\n".join(lines)


def _trials(cfg: TrialsConfig, rd) -> str:
    from kairo.fly import run_trials, summarize_trials, trials_figure

    result = run_trials(cfg, progress_bar=None)
    rd.resolve("executor", result["executor"])
    rd.resolve("workers", result["workers"])
    trials, trajs = result["trials"], result["trajectories"]
    summary = summarize_trials(trials)
    rd.add("trials.csv", trials)
    rd.add("trajectories.csv", trajs)
    rd.add("summary.csv", summary)
    rd.add("metrics.json", {"executor": result["executor"], "workers": result["workers"],
                            "wall_s": result["wall_s"],
                            "trials_per_hour": result["trials_per_hour"],
                            "summary": summary.to_dict("records")})
    rd.add("trajectories.png", trials_figure(trials, trajs, cfg.success_radius))
    cols = ["controller", "wiring", "n", "success_rate", "final_distance_median",
            "turning_index_mean", "turning_index_p", "final_bearing_deg_median"]
    text = summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}")
    return (text + f"\n{len(trials)} trials in {result['wall_s']:.0f} s "
            f"({result['trials_per_hour']:.0f}/h, {result['workers']} workers, "
            f"{result['executor']})")


def _view(cfg: ViewConfig, rd) -> str:
    from kairo.fly import run_viewer

    res = run_viewer(cfg)
    if res is None:
        return "viewer closed before the trial ended"
    m = res.metrics
    text = (f"{m['simulated_s']:.2f} s simulated; distance {m['initial_distance']:.1f} → "
            f"{m['final_distance']:.1f} mm; turning index {_fmt(m['turning_index'])}")
    if cfg.output:
        text += f"\nscreenshot: {cfg.output}"
    return text


COMMANDS = [
    Command("fly run", FlyConfig, _run, "one closed-loop trial (optionally a video)",
            description="one closed-loop trial", inputs=_run_inputs,
            headline=("final_distance", "success")),
    Command("fly trials", TrialsConfig, _trials, "many trials in parallel, with statistics",
            description="many trials in parallel", inputs=_trials_inputs),
    Command("fly view", ViewConfig, _view, "the live MuJoCo viewer on the closed loop",
            description="the live MuJoCo viewer (needs a display)", folder=False),
]
