"""The body: NeuroMechFly v2 (flygym 1.x) walking in an odor arena under the hybrid turning
controller. Everything flygym-specific lives here, behind :class:`FlyWorld`."""

from __future__ import annotations

import math
import os

import numpy as np

from kairo._errors import ConfigError, KairoError

__all__ = ["require_flygym", "FlyWorld", "INSTALL_HINT", "ODOR_HEIGHT"]

INSTALL_HINT = ("pip install 'kairo-circuits[fly]'  (flygym 1.2.1 with MuJoCo; or "
                "KAIRO_EXTRAS=fly bash scripts/setup.sh)")
ODOR_HEIGHT = 1.5          # mm above the floor, as in flygym's odor-taxis example
_LEGS = ("LF", "LM", "LH", "RF", "RM", "RH")
_SEGMENTS = ("Tibia", "Tarsus1", "Tarsus2", "Tarsus3", "Tarsus4", "Tarsus5")


def require_flygym():
    """Import flygym's pieces, or fail with the install command."""
    # Headless by default: EGL renders offscreen without a display. Must be set before MuJoCo's
    # Python bindings are imported; a user's own MUJOCO_GL wins.
    os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")          # glfw warns about a missing DISPLAY
            import flygym
            from dm_control.rl.control import PhysicsError
            from flygym.arena import OdorArena
            from flygym.examples.locomotion import HybridTurningController
    except ImportError as exc:
        raise KairoError(f"the embodied fly needs the [fly] extra, which is not installed "
                         f"({exc.name or exc}): {INSTALL_HINT}") from exc
    return flygym, OdorArena, HybridTurningController, PhysicsError


def _inverse_square(d):
    return d ** -2


class FlyWorld:
    """One fly, one odor source, one physics simulation.

    Parameters
    ----------
    odor_xy : (x, y) of the odor source in mm; the fly starts at the origin facing +x.
    arena_size : side of the square arena in mm (the source must lie inside it).
    timestep : physics step in s (flygym's default 1e-4; 2e-4 stays close; 5e-4 diverges).
    camera : add the top tracking camera used for videos, rendered at ``frame_size``.
    """

    def __init__(self, odor_xy, *, arena_size: float = 300.0, timestep: float = 1e-4,
                 seed: int = 0, camera: bool = False, frame_size=(480, 480)):
        flygym, OdorArena, HybridTurningController, self._PhysicsError = require_flygym()
        odor_xy = np.asarray(odor_xy, dtype=float)
        if odor_xy.shape != (2,) or not np.all(np.isfinite(odor_xy)):
            raise ConfigError(f"odor source must be two finite numbers (x, y) in mm, "
                              f"got {odor_xy!r}")
        half = arena_size / 2
        if np.any(np.abs(odor_xy) >= half):
            raise ConfigError(f"odor source ({odor_xy[0]:g}, {odor_xy[1]:g}) mm lies outside "
                              f"the {arena_size:g} × {arena_size:g} mm arena (|x|, |y| < "
                              f"{half:g}); move it or enlarge --arena-size")
        if np.hypot(*odor_xy) < 1.0:
            raise ConfigError("odor source must be at least 1 mm from the fly's start (0, 0)")
        if not (0 < timestep <= 5e-4):
            raise ConfigError(f"physics timestep must be in (0, 5e-4] s, got {timestep}")
        self.odor_xy = odor_xy
        self.timestep = float(timestep)
        arena = OdorArena(size=(arena_size, arena_size),
                          odor_source=np.array([[*odor_xy, ODOR_HEIGHT]]),
                          peak_odor_intensity=np.array([[1.0]]), diffuse_func=_inverse_square,
                          marker_colors=[(1.0, 0.5, 0.05, 1.0)], marker_size=0.3)
        sensors = [f"{leg}{seg}" for leg in _LEGS for seg in _SEGMENTS]
        fly = flygym.Fly(spawn_pos=(0, 0, 0.2), spawn_orientation=(0, 0, 0),
                         contact_sensor_placements=sensors, enable_olfaction=True,
                         enable_adhesion=True, draw_adhesion=False)
        cams = []
        if camera:
            # a top view that tracks the thorax, 20 mm up: the fly and ~15 mm around it
            cams = [flygym.Camera(attachment_point=fly.model.worldbody,
                                  camera_name="kairo_track", targeted_fly_names=[fly.name],
                                  window_size=tuple(frame_size), play_speed_text=False,
                                  camera_parameters={"mode": "track", "pos": (0, 0, 20),
                                                     "euler": (0, 0, 0), "fovy": 45})]
        self.camera = cams[0] if cams else None
        self.frame_size = tuple(int(v) for v in frame_size)
        self.sim = HybridTurningController(fly=fly, cameras=cams, arena=arena,
                                           timestep=self.timestep, seed=int(seed))
        self.fly = fly
        self.seed = int(seed)
        self.obs = None
        if camera:
            self._cheap_rendering()

    def _cheap_rendering(self) -> None:
        # No multisampling, shadows or reflections: 40–115 ms a frame instead of 335–505 ms.
        m = self.sim.physics.model
        m.vis.quality.offsamples = 0
        m.vis.quality.shadowsize = 0
        m.light_castshadow[:] = 0
        m.mat_reflectance[:] = 0

    def reset(self) -> dict:
        self.obs, _ = self.sim.reset(seed=self.seed)
        return self.obs

    def step(self, action: np.ndarray) -> dict:
        try:
            self.obs, *_ = self.sim.step(np.asarray(action, dtype=float))
        except self._PhysicsError as exc:
            raise PhysicsDiverged(str(exc)) from exc
        return self.obs

    # ---------------------------------------------------------------- read-outs
    @property
    def time(self) -> float:
        return float(self.sim.curr_time)

    @property
    def position(self) -> np.ndarray:
        return np.asarray(self.obs["fly"][0, :2], dtype=float)

    @property
    def heading(self) -> float:
        """Heading in rad, counter-clockwise from +x (``obs["fly_orientation"]``)."""
        o = self.obs["fly_orientation"]
        return math.atan2(float(o[1]), float(o[0]))

    @property
    def odor(self) -> np.ndarray:
        return np.asarray(self.obs["odor_intensity"], dtype=float)

    def render(self) -> np.ndarray:
        """An RGB frame from the tracking camera."""
        if self.camera is None:
            raise KairoError("this FlyWorld was built without a camera")
        w, h = self.frame_size
        return self.sim.physics.render(width=w, height=h, camera_id=self.camera.camera_id)

    def body_id(self, name: str = "Thorax") -> int:
        return int(self.sim.physics.model.name2id(f"{self.fly.name}/{name}", "body"))

    def close(self) -> None:
        try:
            self.sim.close()
        except Exception:  # noqa: BLE001 - closing a renderer must never mask the real error
            pass


class PhysicsDiverged(KairoError):
    """MuJoCo reported an unstable simulation (usually: timestep too large)."""
