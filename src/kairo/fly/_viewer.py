"""``kairo fly view``: MuJoCo's interactive viewer on the running closed loop.

The passive viewer (``mujoco.viewer.launch_passive``) shows the live physics state while our
loop steps it; the camera tracks the fly's thorax. It needs a display: on a headless machine
run it under a virtual X server (``xvfb-run -a kairo fly view``).
"""

from __future__ import annotations

import logging
import os
import time

from kairo._errors import KairoError

__all__ = ["run_viewer", "require_display"]

log = logging.getLogger(__name__)

_SYNC_EVERY = 1 / 30     # s of wall time between viewer refreshes


def require_display() -> str:
    display = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    if not display:
        raise KairoError("kairo fly view needs a display, and none was found ($DISPLAY is "
                         "unset). On a headless machine start it under a virtual one: "
                         "`xvfb-run -a kairo fly view` (Debian/Ubuntu: apt-get install xvfb); "
                         "or record a video instead: `kairo fly run --video fly.mp4`")
    return display


class _Closed(Exception):
    pass


def run_viewer(cfg):
    """Run one trial of ``cfg`` (a ViewConfig) in the live viewer; returns the TrialResult, or
    None when the window was closed before the trial ended. A screenshot goes to
    ``cfg.output`` when it is set."""
    from kairo.fly._body import require_flygym
    from kairo.fly._experiments import check_output_path, make_controller, run_trial

    display = require_display()
    shot = check_output_path(cfg.output, "output", overwrite=cfg.overwrite)
    require_flygym()
    import mujoco
    import mujoco.viewer

    controller = make_controller(cfg)
    state = {"viewer": None, "last": 0.0}

    def on_step(world):
        v = state["viewer"]
        if v is None:
            try:
                v = mujoco.viewer.launch_passive(world.sim.physics.model.ptr,
                                                 world.sim.physics.data.ptr,
                                                 show_left_ui=False, show_right_ui=False)
            except Exception as exc:  # noqa: BLE001 - GLFW reports "no display" many ways
                raise KairoError(f"could not open the MuJoCo viewer on display {display!r} "
                                 f"({exc}); on a headless machine use `xvfb-run -a kairo fly "
                                 f"view`") from exc
            v.cam.type = mujoco.mjtCamera.mjCAMERA_TRACKING
            v.cam.trackbodyid = world.body_id("Thorax")
            v.cam.distance, v.cam.elevation, v.cam.azimuth = 12.0, -50.0, 90.0
            state["viewer"] = v
        now = time.perf_counter()
        if now - state["last"] >= _SYNC_EVERY:
            if not v.is_running():
                state["closed"] = True
                raise _Closed
            v.sync()
            state["last"] = now

    def finish(world):
        # Runs before the physics is freed: the viewer's render thread reads MuJoCo's model
        # and data, so it must be closed first (freeing them under it crashes the process).
        v = state["viewer"]
        if v is None:
            return
        try:
            if v.is_running() and not state.get("closed"):
                v.sync()
                time.sleep(0.5)              # let the render thread draw the last state
                if shot is not None:
                    _screenshot(display, shot)
                if cfg.keep_open:
                    # shown without -v: the user has to act before the command returns
                    log.warning("trial finished; close the viewer window to exit")
                    while v.is_running():
                        time.sleep(0.1)
        finally:
            v.close()
            time.sleep(0.2)                  # the render thread exits on its next frame
            state["viewer"] = None

    result = None
    try:
        result = run_trial(cfg, controller=controller, on_step=on_step,
                           before_close=finish, progress_bar=None)
    except _Closed:       # the window was closed: the command's summary says so
        pass
    return result


def _screenshot(display: str, path, wait: float = 10.0) -> None:
    import numpy as np
    from PIL import ImageGrab

    # The viewer draws in its own thread; on a loaded machine the first frames can lag, so
    # grab until the screen shows something (or give up after ``wait`` seconds).
    deadline = time.perf_counter() + wait
    while True:
        try:
            img = ImageGrab.grab(xdisplay=display)
        except OSError as exc:
            raise KairoError(f"could not take a screenshot of display {display!r}: {exc}") \
                from exc
        if np.asarray(img).std() > 10 or time.perf_counter() > deadline:
            break
        time.sleep(0.25)
    from kairo._io import atomic_write

    atomic_write(path, lambda tmp: img.save(tmp, format="PNG"))
