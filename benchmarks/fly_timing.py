"""Where the closed loop's wall time goes, and how many trials an hour 1 and 2 workers give.

Runs kairo's loop with flygym as the body and reports, per part, the wall time of one
trial: kairo's sensing + brain + motor map ("controller") and bookkeeping against flygym's
physics (the hybrid turning controller's CPG/corrections included) and rendering. The peer
is flygym itself: the target is ≤ 2 % of wall time for everything that is not flygym.
As a same-computation check, the brainless constant-drive trial is run twice and must give
identical trajectories (deterministic physics under kairo's loop).

Usage: python benchmarks/fly_timing.py [--duration 1.0] [--trial-duration 0.5] [--n 4]
Writes benchmarks/results/fly_timing.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import tempfile
from pathlib import Path

import numpy as np

from kairo.results import environment
from kairo.fly import (FlyConfig, TrialsConfig, VideoRecorder, make_controller, run_trial,
                            run_trials)

from _common import atomic_write_json


def _shares(timing: dict) -> dict:
    loop = {k: v for k, v in timing.items() if k != "build"}
    total = sum(loop.values())
    out = {k: {"seconds": round(v, 4), "share": round(v / total, 5)} for k, v in loop.items()}
    kairo_s = loop["controller"] + loop["bookkeeping"]
    out["kairo_total"] = {"seconds": round(kairo_s, 4), "share": round(kairo_s / total, 5)}
    # with a video, kairo also draws the signal panel and encodes the mp4
    with_video = kairo_s + loop.get("video", 0.0)
    out["kairo_incl_video"] = {"seconds": round(with_video, 4),
                               "share": round(with_video / total, 5)}
    out["setup_s"] = round(timing["build"], 3)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=float, default=1.0, help="simulated s per timed trial")
    ap.add_argument("--trial-duration", type=float, default=0.5,
                    help="simulated s per trial in the trials/hour runs")
    ap.add_argument("--n", type=int, default=4, help="trials in each trials/hour run")
    ap.add_argument("--data-dir", default=os.environ.get("KAIRO_DATA_DIR"))
    ap.add_argument("--out", default="benchmarks/results/fly_timing.json")
    a = ap.parse_args(argv)
    res: dict = {"command": "python " + " ".join(sys.argv), "date": dt.date.today().isoformat(),
                 "machine": environment(), "sections": {}}
    cfg = FlyConfig(duration=a.duration, data_dir=a.data_dir)

    def timed(name, **kw):
        before = os.getloadavg()
        r = run_trial(cfg, **kw)
        res["sections"][name] = {
            "simulated_s": r.metrics["simulated_s"], "wall_s": round(r.metrics["wall_s"], 3),
            "real_time_factor": round(r.metrics["real_time_factor"], 5),
            "parts": _shares(r.timing), "loadavg_before": before, "loadavg_after":
            os.getloadavg()}
        print(name, json.dumps(res["sections"][name]["parts"]["kairo_total"]),
              "RTF", res["sections"][name]["real_time_factor"], flush=True)
        return r

    timed("connectome_no_video")
    with tempfile.TemporaryDirectory() as tmp:
        rec = VideoRecorder(Path(tmp) / "v.mp4", fps=cfg.fps, play_speed=cfg.play_speed,
                            duration=cfg.duration, odor_xy=(cfg.odor_x, cfg.odor_y),
                            frame_size=cfg.frame_size)
        timed("connectome_video", recorder=rec)
        rec.close(True)
        res["sections"]["connectome_video"]["frames"] = rec.n_frames
    const = make_controller(cfg, "constant")
    r1 = run_trial(cfg, controller=const)
    r2 = run_trial(cfg, controller=make_controller(cfg, "constant"))
    same = np.array_equal(r1.trajectory[["x", "y", "heading"]].to_numpy(),
                          r2.trajectory[["x", "y", "heading"]].to_numpy())
    res["deterministic_physics"] = bool(same)
    tph = {}
    for workers in (1, 2):
        tc = TrialsConfig(n=a.n, controllers=("connectome",), wirings=("crossed",),
                          duration=a.trial_duration, workers=workers, data_dir=a.data_dir,
                          executor="serial" if workers == 1 else "processes")
        before = os.getloadavg()
        out = run_trials(tc, progress_bar=False)
        tph[str(workers)] = {"trials": a.n, "simulated_s_per_trial": a.trial_duration,
                             "wall_s": round(out["wall_s"], 2),
                             "trials_per_hour": round(out["trials_per_hour"], 1),
                             "simulated_s_per_hour": round(out["trials_per_hour"]
                                                           * a.trial_duration, 1),
                             "loadavg_before": before, "loadavg_after": os.getloadavg()}
        print("workers", workers, tph[str(workers)], flush=True)
    tph["speedup_2_vs_1"] = round(tph["2"]["trials_per_hour"] / tph["1"]["trials_per_hour"], 2)
    res["trials_per_hour"] = tph
    atomic_write_json(Path(a.out), res)
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
