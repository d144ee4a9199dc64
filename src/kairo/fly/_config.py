"""The configs of ``kairo fly run | trials | view``: torch-free and flygym-free, so the CLI
and the registry build and check them without loading a physics engine.

:class:`FlySettings` holds what every closed-loop trial needs (the arena, the controller, the
brain, sensing and motor map); :class:`FlyConfig` adds the video of one trial,
:class:`TrialsConfig` the design of many trials, :class:`ViewConfig` the live viewer's options.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kairo._config import check_fields, option
from kairo._errors import ConfigError
from kairo._jobs import EXECUTORS
from kairo.reservoir._config import DYNAMICS, NORMALIZATIONS, SIGNS, ConnectomeSource, \
    LIFSettings

__all__ = ["FlySettings", "FlyConfig", "TrialsConfig", "ViewConfig", "CONTROLLERS",
           "NULL_CONTROLLERS", "WIRINGS", "SENSING_MODES"]

# controller name → null model of kairo.connectome (the real wiring is "connectome")
NULL_CONTROLLERS = {"rewired": "rewire", "weight-shuffle": "weight-shuffle",
                    "random-topology": "random-topology", "gaussian": "gaussian"}
# "spiking": the connectome as LIF neurons whatever --dynamics says, so that `fly trials`
# compares a spiking and a rate brain in one run
CONTROLLERS = ("connectome", "spiking", "braitenberg", "constant", *NULL_CONTROLLERS)
WIRINGS = ("ipsilateral", "crossed")
SENSING_MODES = ("relative", "absolute")
# the fly also keeps the connectome's own signs (reservoir configs draw them)
_SIGN_MODES = SIGNS + ("keep",)


@dataclass(frozen=True)
class FlySettings(LIFSettings, ConnectomeSource):
    """One closed-loop trial: arena, controller, connectome brain, sensing and motor map."""

    controller: str = option("connectome", "what steers the legs: the connectome (its "
                             "neurons per --dynamics), the connectome as spiking neurons "
                             "(spiking), a direct sensor → leg map (braitenberg), a constant "
                             "drive, or the connectome replaced by a null model",
                             choices=CONTROLLERS)
    wiring: str = option("ipsilateral", "ipsilateral (left DN → left legs) or crossed",
                         choices=WIRINGS)
    duration: float = option(2.0, "simulated seconds", above=0)
    odor_x: float = option(20.0, "odor source x in mm (the fly starts at 0,0 facing +x)")
    odor_y: float = option(8.0, "odor source y in mm")
    arena_size: float = option(300.0, "side of the square arena in mm", above=0)
    success_radius: float = option(3.0, "mm from the odor source that count as reached (ends "
                                   "the trial)", above=0)
    timestep: float = option(1e-4, "physics timestep in seconds (2e-4 is ~2x faster and "
                             "close; 5e-4 diverges)", above=0)
    decision_interval: float = option(0.02, "seconds between controller decisions", above=0)
    seed: int = option(0, "seed of the physics, the sign draws and the null models")
    # brain
    norm: str = option("row", "normalization: none, spectral, row (out-weights sum to 1; the "
                       "signal reaches DN-VNC), column", choices=NORMALIZATIONS)
    spectral_radius: float = option(0.9, "target spectral radius for --norm spectral",
                                    above=0)
    alpha: float = option(1.0, "global gain applied after normalization")
    signs: str = option("auto", "auto (the connectome's own signs if it has any, e.g. an "
                        "adult brain's transmitters, else excitatory), excitatory (all "
                        "positive), dale (inhibitory neurons by row), given or keep",
                        choices=_SIGN_MODES)
    inhibitory_fraction: float = option(0.0, "fraction of neurons made inhibitory (--signs "
                                        "dale)", low=0, high=1)
    sensory_left: str = option("celltype=sensory;annotation=olfactory;side=L",
                               "neuron group driven by the left odor reading")
    sensory_right: str = option("celltype=sensory;annotation=olfactory;side=R",
                                "neuron group driven by the right odor reading")
    descending_left: str = option("DN-VNC:L", "neuron group whose mean activity is the left "
                                  "motor signal")
    descending_right: str = option("DN-VNC:R", "neuron group whose mean activity is the right "
                                   "motor signal")
    dynamics: str = option("rate", "the brain's neurons: rate (tanh units on the normalized "
                           "connectome) or lif (spiking neurons on synapse counts; the LIF "
                           "options apply)", choices=DYNAMICS)
    rate_per_drive: float = option(100.0, "--dynamics lif: Poisson rate (Hz) of a sensory "
                                   "neuron per unit of sensory drive", above=0)
    dn_filter_ms: float = option(100.0, "--dynamics lif: time constant (ms) of the low-pass "
                                 "filter on the descending rates across decisions", above=0)
    settle_ms: float = option(300.0, "--dynamics lif: simulated time (ms) the spiking brain "
                              "settles under the tonic drive before a trial", low=0)
    brain_steps: int = option(10, "reservoir steps per decision interval", low=1)
    leak: float = option(1.0, "leak rate of the reservoir neurons (1: no leak)", above=0,
                         high=1)
    bias: float = option(0.0, "bias added to every neuron's input")
    # sensing and motor map
    sensing_mode: str = option("relative", "relative (drive follows the left-right odor "
                               "contrast) or absolute (drive follows the intensity)",
                               choices=SENSING_MODES)
    sensing_gain: float = option(50.0, "sensory drive per unit of relative odor contrast")
    sensing_offset: float = option(1.0, "tonic sensory drive, both sides")
    motor_gain: float = option(30.0, "descending action per relative change of DN activity")
    motor_base: float = option(1.0, "descending action with no turning signal (walk "
                               "straight)")
    motor_scale: float = option(0.0, "divide DN activity changes by this (0: the settled "
                                "activity's mean)", low=0)
    braitenberg_gain: float = option(2.0, "action per unit of sensory drive difference "
                                     "(--controller braitenberg)")

    def __post_init__(self):
        check_fields(self)
        self.lif_params()
        if self.spiking_engine == "torch":
            raise ConfigError("spiking_engine: the fly's spiking brain steps one trial on the "
                              "numba engine (torch runs batches of trials)")
        half = self.arena_size / 2
        if abs(self.odor_x) >= half or abs(self.odor_y) >= half:
            raise ConfigError(f"odor_x, odor_y: the odor source ({self.odor_x:g}, "
                              f"{self.odor_y:g}) mm lies outside the {self.arena_size:g} × "
                              f"{self.arena_size:g} mm arena (|x|, |y| < {half:g}); move it or "
                              f"enlarge arena_size")
        if self.decision_interval < self.timestep:
            raise ConfigError(f"decision_interval ({self.decision_interval:g} s) is shorter "
                              f"than the physics timestep ({self.timestep:g} s)")
        if self.duration < self.decision_interval:
            raise ConfigError(f"duration ({self.duration:g} s) is shorter than one decision "
                              f"interval ({self.decision_interval:g} s)")

    @property
    def physics_per_decision(self) -> int:
        return max(1, int(round(self.decision_interval / self.timestep)))


@dataclass(frozen=True)
class FlyConfig(FlySettings):
    """One closed-loop trial (``kairo fly run``), optionally recorded as an mp4."""

    video: str = option("", "write an mp4 of the trial: a bare file name (fly.mp4) goes into "
                        "the results folder, a path with a folder (./fly.mp4, /tmp/fly.mp4) "
                        "there (its folder must exist; an existing file is replaced only with "
                        "--overwrite); empty: no video")
    fps: int = option(30, "video frames per second", low=1)
    play_speed: float = option(0.25, "simulated seconds per video second", above=0)
    frame_size: int = option(480, "camera frame (square) in pixels", low=64)

    @property
    def video_in_results(self) -> bool:
        """The video is a bare file name, written into the results folder."""
        return bool(self.video) and not os.path.dirname(self.video)


@dataclass(frozen=True)
class TrialsConfig(FlySettings):
    """Many trials (``kairo fly trials``): odor positions × controllers × wirings."""

    n: int = option(8, "trials (odor positions and seeds) per controller and wiring", low=1)
    controllers: tuple[str, ...] = option(("connectome", "braitenberg", "constant", "rewired"),
                                          "comma-separated controllers (see --controller)",
                                          choices=CONTROLLERS)
    wirings: tuple[str, ...] = option(("ipsilateral", "crossed"), "comma-separated wirings to "
                                      "run each controller with", choices=WIRINGS)
    odor_distance: float = option(20.0, "mm from the start to each odor source", above=1)
    odor_angle: float = option(90.0, "odor bearings are drawn from ±this many degrees",
                               low=0, high=180)
    workers: int = option(0, "parallel worker processes (0: one per core)", low=0)
    executor: str = option("auto", "auto (Ray when RAY_ADDRESS is set, else processes), "
                           "processes, ray, serial", choices=EXECUTORS)

    def __post_init__(self):
        super().__post_init__()
        if not self.controllers:
            raise ConfigError("controllers must not be empty")
        if not self.wirings:
            raise ConfigError("wirings must not be empty")
        if self.odor_distance >= self.arena_size / 2:
            raise ConfigError(f"odor_distance {self.odor_distance:g} mm does not fit in the "
                              f"{self.arena_size:g} mm arena")


@dataclass(frozen=True)
class ViewConfig(FlySettings):
    """The live viewer (``kairo fly view``): one trial on screen, nothing recorded."""

    keep_open: bool = option(True, "after the trial, keep the window open until it is closed")
    output: str = option("", "write a PNG screenshot of the viewer here when the trial ends "
                         "(X11 only; its folder must exist); empty: none")
    overwrite: bool = option(False, "replace an existing --output file")
