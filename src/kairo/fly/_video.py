"""Headless mp4 of a trial: the tracking camera beside a panel of the loop's signals.

The panel is drawn with Matplotlib (Agg) once, and only the line data change per frame; the
mp4 is encoded by the ffmpeg binary that the ``imageio-ffmpeg`` wheel ships (a flygym
dependency), into a temporary file that is renamed into place only when the trial finished.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import numpy as np

from kairo._errors import KairoError
from kairo._io import atomic_path

__all__ = ["VideoRecorder"]


class VideoRecorder:
    """Collects (frame, time, rows so far) and writes them to ``path`` on :meth:`close`.

    A trial hands it a camera frame of ``frame_size`` pixels every :attr:`frame_interval`
    simulated seconds (``play_speed`` simulated seconds per video second at ``fps``).
    """

    def __init__(self, path, *, fps: int, play_speed: float, duration: float, odor_xy,
                 frame_size: int, title: str = ""):
        # an Agg canvas of its own: no pyplot, so no global backend is chosen or changed
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        if not (fps >= 1 and play_speed > 0):
            raise KairoError(f"video needs fps ≥ 1 and play_speed > 0, got {fps}, {play_speed}")
        self.path = Path(path)
        if not self.path.parent.is_dir():
            raise KairoError(f"video {self.path}: folder {self.path.parent} does not exist")
        self.fps = int(fps)
        self.frame_interval = float(play_speed) / self.fps
        self.size = int(frame_size)
        self._file = contextlib.ExitStack()      # closed: the mp4 is moved into place
        self._tmp = self._file.enter_context(atomic_path(self.path, suffix=".mp4"))
        import imageio.v2 as imageio

        try:
            self._writer = imageio.get_writer(self._tmp, format="FFMPEG", mode="I",
                                              fps=self.fps, codec="libx264", quality=7,
                                              macro_block_size=16, ffmpeg_log_level="error")
        except BaseException as exc:
            self._file.__exit__(type(exc), exc, exc.__traceback__)   # no temporary left
            raise
        self.n_frames = 0
        self.last_frame: np.ndarray | None = None
        dpi = 100
        self._fig = fig = Figure(figsize=(self.size / dpi, self.size / dpi), dpi=dpi)
        FigureCanvasAgg(fig)
        gs = fig.add_gridspec(4, 1, height_ratios=[1.6, 1, 1, 1], hspace=0.55,
                              left=0.16, right=0.97, top=0.93, bottom=0.08)
        self._map = fig.add_subplot(gs[0])
        self._map.set_title(title, fontsize=8)
        ox, oy = odor_xy
        self._map.plot([ox], [oy], "o", color="tab:orange", ms=7, label="odor")
        self._map.plot([0], [0], "k+", ms=6)
        self._path, = self._map.plot([], [], "-", color="k", lw=1)
        self._pos, = self._map.plot([], [], "o", color="tab:blue", ms=4)
        self._map.tick_params(labelsize=6)
        self._map.set_xlabel("x (mm)", fontsize=6, labelpad=1)
        specs = [("sensory", ("sensory_L", "sensory_R", "drive_L", "drive_R")),
                 ("DN-VNC", ("dn_L", "dn_R")),
                 ("descending", ("action_L", "action_R"))]
        self._axes = []
        for i, (label, cols) in enumerate(specs):
            ax = fig.add_subplot(gs[i + 1])
            ax.set_xlim(0, duration)
            ax.set_ylabel(label, fontsize=7)
            ax.tick_params(labelsize=6)
            lines = {}
            for c in cols:
                side = c[-1]
                lines[c] = ax.plot([], [], "-", lw=1,
                                   color="tab:blue" if side == "L" else "tab:red",
                                   alpha=1.0 if not c.startswith("drive") else 0.35,
                                   label=f"{side}" if not c.startswith("drive") else None)[0]
            if i == 0:
                ax.legend(fontsize=6, loc="lower right", bbox_to_anchor=(1.0, 0.95), ncol=2,
                          frameon=False)
            self._axes.append((ax, lines))
        self._axes[-1][0].set_xlabel("time (s)", fontsize=6, labelpad=1)
        self._animated = [self._path, self._pos] + [ln for _, lines in self._axes
                                                    for ln in lines.values()]
        for a in self._animated:
            a.set_animated(True)
        self._background = None
        # the map starts around the start and the odor source and only ever widens
        self._map_fitted = False
        self._fit_map(min(0.0, ox), max(0.0, ox), min(0.0, oy), max(0.0, oy))
        self._axes[0][0].set_ylabel("sensory\n(drive faint)", fontsize=7)

    def add(self, frame: np.ndarray, t: float, rows: list[dict]) -> None:
        frame = np.asarray(frame)
        if frame.shape != (self.size, self.size, 3):
            raise KairoError(f"camera frame has shape {frame.shape}, expected "
                             f"({self.size}, {self.size}, 3)")
        panel = self._panel(rows)
        self.last_frame = np.concatenate([frame, panel], axis=1)
        self._writer.append_data(self.last_frame)
        self.n_frames += 1

    def _panel(self, rows: list[dict]) -> np.ndarray:
        # Blitting: the axes, ticks and labels are drawn only when a limit must grow; every
        # other frame restores that background and draws just the lines (~10x cheaper).
        full = self._background is None
        if rows:
            t = np.array([r["t"] for r in rows])
            x = np.array([r["x"] for r in rows])
            y = np.array([r["y"] for r in rows])
            self._path.set_data(x, y)
            self._pos.set_data(x[-1:], y[-1:])
            full |= self._fit_map(x.min(), x.max(), y.min(), y.max())
            for ax, lines in self._axes:
                vals = []
                for c, line in lines.items():
                    v = np.array([r.get(c, np.nan) for r in rows], dtype=float)
                    line.set_data(t, v)
                    vals.append(v[np.isfinite(v)])
                v = np.concatenate(vals)
                if v.size:
                    span = max(1e-3, float(v.max() - v.min()), 0.05 * abs(float(v.mean())))
                    full |= self._grow(ax, "y", v.min(), v.max(), pad=0.25 * span)
        canvas = self._fig.canvas
        if full:
            canvas.draw()                 # animated artists are left out of a full draw
            self._background = canvas.copy_from_bbox(self._fig.bbox)
        else:
            canvas.restore_region(self._background)
        for a in self._animated:
            a.axes.draw_artist(a)
        img = np.asarray(canvas.buffer_rgba())[..., :3]
        return np.ascontiguousarray(img[:self.size, :self.size])

    def _fit_map(self, xlo, xhi, ylo, yhi) -> bool:
        """Widen the map so the path fits, keeping 1 mm = 1 mm on both axes."""
        (cx0, cx1), (cy0, cy1) = self._map.get_xlim(), self._map.get_ylim()
        if self._map_fitted and xlo >= cx0 and xhi <= cx1 and ylo >= cy0 and yhi <= cy1:
            return False
        if self._map_fitted:
            xlo, xhi, ylo, yhi = min(xlo, cx0), max(xhi, cx1), min(ylo, cy0), max(yhi, cy1)
        xlo, xhi, ylo, yhi = xlo - 3, xhi + 3, ylo - 3, yhi + 3
        bbox = self._map.get_window_extent()
        ratio = bbox.width / bbox.height             # x mm per y mm at equal scale
        w, h = xhi - xlo, yhi - ylo
        if w / h < ratio:
            grow = (h * ratio - w) / 2
            xlo, xhi = xlo - grow, xhi + grow
        else:
            grow = (w / ratio - h) / 2
            ylo, yhi = ylo - grow, yhi + grow
        self._map.set_xlim(xlo, xhi)
        self._map.set_ylim(ylo, yhi)
        self._map_fitted = True
        return True

    @staticmethod
    def _grow(ax, which: str, lo: float, hi: float, pad: float) -> bool:
        """Widen an axis (never shrink it) so [lo, hi] fits; True when it changed."""
        get, set_ = (ax.get_xlim, ax.set_xlim) if which == "x" else (ax.get_ylim, ax.set_ylim)
        cur_lo, cur_hi = get()
        if getattr(ax, "_kairo_fitted_" + which, False) and lo >= cur_lo and hi <= cur_hi:
            return False
        if getattr(ax, "_kairo_fitted_" + which, False):
            lo, hi = min(lo, cur_lo), max(hi, cur_hi)
        setattr(ax, "_kairo_fitted_" + which, True)
        set_(lo - pad, hi + pad)
        return True

    def close(self, ok: bool = True) -> None:
        """Finish the file and move it into place (``ok``), or delete it."""
        try:
            self._writer.close()
        except BaseException as exc:         # ffmpeg failed: a truncated mp4 is not kept
            self._file.__exit__(type(exc), exc, exc.__traceback__)
            raise
        if ok and self.n_frames:
            self._file.close()
        else:                   # unwound as by an error: the temporary file is deleted
            self._file.__exit__(KairoError, KairoError("video discarded"), None)
        if ok and not self.n_frames:
            raise KairoError(f"video {self.path}: no frames were rendered (the trial was "
                             f"shorter than one frame interval)")
