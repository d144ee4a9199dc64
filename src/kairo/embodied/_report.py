"""Figures and tables for ``kairo fly run`` and ``kairo fly trials``."""

from __future__ import annotations

import numpy as np
import pandas as pd

from kairo.embodied._experiments import summarize_trials

__all__ = ["trajectory_figure", "trials_figure", "write_run", "write_trials", "timing_table"]

_COLORS = {"ipsilateral": "tab:red", "crossed": "tab:blue", "-": "0.3"}


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _fmt(v: float) -> str:
    return "n/a (too short)" if not np.isfinite(v) else f"{v:+.3f}"


def trajectory_figure(traj: pd.DataFrame, odor_xy, title: str):
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(9, 4))
    a.plot(traj.x, traj.y, "k-", lw=1)
    a.plot([0], [0], "k+", ms=8)
    a.plot([odor_xy[0]], [odor_xy[1]], "o", color="tab:orange", ms=9, label="odor")
    a.set_aspect("equal", adjustable="datalim")
    a.set_xlabel("x (mm)")
    a.set_ylabel("y (mm)")
    a.set_title(title, fontsize=9)
    a.legend(fontsize=8)
    b.plot(traj.t, np.degrees(traj.bearing), "k-", lw=1, label="bearing to odor (°)")
    b.axhline(0, color="0.7", lw=0.8)
    b.set_xlabel("time (s)")
    b.set_ylabel("bearing (°; + = odor on the left)")
    c = b.twinx()
    c.plot(traj.t, traj.action_L, color="tab:blue", lw=0.8, label="action L")
    c.plot(traj.t, traj.action_R, color="tab:red", lw=0.8, label="action R")
    c.set_ylabel("descending signal")
    c.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def trials_figure(trials: pd.DataFrame, trajs: pd.DataFrame, radius: float):
    """One panel per controller: every trajectory, colored by wiring, with its odor source."""
    plt = _plt()
    names = list(dict.fromkeys(trials.controller))
    ncol = min(4, len(names))
    nrow = -(-len(names) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.4 * ncol, 3.5 * nrow + 0.4), squeeze=False,
                             sharex=True, sharey=True)
    for ax in axes.ravel()[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.ravel(), names):
        g = trials[trials.controller == name]
        for _, r in g.drop_duplicates("trial").iterrows():
            ax.add_patch(plt.Circle((r.odor_x, r.odor_y), radius, color="tab:orange",
                                    alpha=0.25, lw=0))
            ax.plot([r.odor_x], [r.odor_y], ".", color="tab:orange", ms=4)
        for (wiring, trial), tr in trajs[trajs.controller == name].groupby(["wiring", "trial"]):
            ax.plot(tr.x, tr.y, "-", color=_COLORS.get(wiring, "k"), lw=0.8, alpha=0.8)
        ax.plot([0], [0], "k+", ms=8)
        rates = ", ".join(f"{w}: {s:.0%}" for w, s in g.groupby("wiring")["success"].mean()
                          .items())
        ax.set_title(f"{name}\nreached {rates}", fontsize=8)
        ax.set_aspect("equal", adjustable="box")
        ax.set_xlabel("x (mm)")
    for row in axes:
        row[0].set_ylabel("y (mm)")
    handles = [plt.Line2D([], [], color=c, label=w) for w, c in _COLORS.items()
               if w in set(trials.wiring)]
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), fontsize=8,
               frameon=False)
    fig.tight_layout(rect=(0, 0.05 / nrow, 1, 1))
    return fig


def timing_table(timing: dict, simulated_s: float) -> pd.DataFrame:
    """Wall time per part and its share; ``kairo`` = sensing + brain + motor + bookkeeping."""
    loop = {k: v for k, v in timing.items() if k != "build"}
    total = sum(loop.values())
    rows = [{"part": k, "seconds": v, "share": v / total if total else np.nan}
            for k, v in loop.items()]
    ours = timing.get("controller", 0.0) + timing.get("bookkeeping", 0.0)
    rows.append({"part": "kairo loop (controller + bookkeeping)", "seconds": ours,
                 "share": ours / total if total else np.nan})
    if timing.get("video"):
        v = ours + timing["video"]
        rows.append({"part": "kairo incl. video panel + encoding", "seconds": v,
                     "share": v / total if total else np.nan})
    rows.append({"part": "real-time factor (simulated s / wall s)",
                 "seconds": simulated_s / total if total else np.nan, "share": np.nan})
    return pd.DataFrame(rows)


def write_run(rd, cfg, result) -> str:
    m = result.metrics
    rd.write_table("trajectory.csv", result.trajectory)
    rd.write_json("metrics.json", {**m, "timing": result.timing})
    rd.write_table("timing.csv", timing_table(result.timing, m["simulated_s"]))
    rd.save_figure(trajectory_figure(result.trajectory, (cfg.odor_x, cfg.odor_y),
                                     f"{cfg.controller} ({cfg.wiring})"), "trajectory.png")
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
    return "\n".join(lines)


def run_and_write(cfg, rd, video=None) -> str:
    """``kairo fly run``: one trial (with an mp4 at ``video``), written into results ``rd``.

    The video is encoded to a temporary file and renamed into place only if the trial and
    the results finished; its last frame is also saved as ``video_frame.png``.
    """
    from kairo.embodied._experiments import make_controller, run_trial

    recorder = None
    ctl = make_controller(cfg)
    if video is not None:
        from kairo.embodied._video import VideoRecorder

        recorder = VideoRecorder(video, fps=cfg.fps, duration=cfg.duration,
                                 odor_xy=(cfg.odor_x, cfg.odor_y), frame_size=cfg.frame_size,
                                 title=f"{cfg.controller} ({cfg.wiring})")
    ok = False
    try:
        result = run_trial(cfg, controller=ctl, recorder=recorder, progress_bar=None)
        text = write_run(rd, cfg, result)
        if recorder is not None and recorder.last_frame is not None:
            import matplotlib.image

            matplotlib.image.imsave(rd.path / "video_frame.png", recorder.last_frame)
            rd.files.append("video_frame.png")
        ok = True
    finally:
        if recorder is not None:
            recorder.close(ok)
    if video is not None:
        text += f"\nvideo: {video} ({recorder.n_frames} frames)"
    return text


def write_trials(rd, cfg, result) -> str:
    trials, trajs = result["trials"], result["trajectories"]
    summary = summarize_trials(trials)
    rd.write_table("trials.csv", trials)
    rd.write_table("trajectories.csv", trajs)
    rd.write_table("summary.csv", summary)
    rd.write_json("metrics.json", {"executor": result["executor"], "workers": result["workers"],
                                   "wall_s": result["wall_s"],
                                   "trials_per_hour": result["trials_per_hour"],
                                   "summary": summary.to_dict("records")})
    rd.save_figure(trials_figure(trials, trajs, cfg.success_radius), "trajectories.png")
    cols = ["controller", "wiring", "n", "success_rate", "final_distance_median",
            "turning_index_mean", "turning_index_p", "final_bearing_deg_median"]
    text = summary[cols].to_string(index=False, float_format=lambda v: f"{v:.3g}")
    return (text + f"\n{len(trials)} trials in {result['wall_s']:.0f} s "
            f"({result['trials_per_hour']:.0f}/h, {result['workers']} workers, "
            f"{result['executor']})")
