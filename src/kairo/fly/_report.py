"""Figures and tables of trials (``kairo fly run`` and ``kairo fly trials`` write them)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["trajectory_figure", "trials_figure", "timing_table"]

_COLORS = {"ipsilateral": "tab:red", "crossed": "tab:blue", "-": "0.3"}


def _figure(**kw):
    # a Figure without pyplot: no global backend is chosen or changed, and no window opens
    from matplotlib.figure import Figure

    return Figure(**kw)


def trajectory_figure(traj: pd.DataFrame, odor_xy, title: str):
    fig = _figure(figsize=(9, 4))
    a, b = fig.subplots(1, 2)
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
    from matplotlib.lines import Line2D
    from matplotlib.patches import Circle

    names = list(dict.fromkeys(trials.controller))
    ncol = min(4, len(names))
    nrow = -(-len(names) // ncol)
    fig = _figure(figsize=(3.4 * ncol, 3.5 * nrow + 0.4))
    axes = fig.subplots(nrow, ncol, squeeze=False, sharex=True, sharey=True)
    for ax in axes.ravel()[len(names):]:
        ax.set_visible(False)
    for ax, name in zip(axes.ravel(), names):
        g = trials[trials.controller == name]
        for _, r in g.drop_duplicates("trial").iterrows():
            ax.add_patch(Circle((r.odor_x, r.odor_y), radius, color="tab:orange",
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
    handles = [Line2D([], [], color=c, label=w) for w, c in _COLORS.items()
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
