"""The embodied fly: odor → sensory neurons → connectome → DN-VNC → descending signal → legs.

The sensing, brain and motor parts (``_loop``) are plain NumPy and import no physics engine;
``_body`` wraps flygym 1.x (the ``[fly]`` extra) and is imported only when a trial runs (it
selects MuJoCo's headless EGL renderer then, unless ``$MUJOCO_GL`` is set). The configs are
imported eagerly, everything else on first use, so the CLI reads the configs without NumPy.
"""

from kairo._lazy import lazy_exports
from kairo.fly._config import (CONTROLLERS, NULL_CONTROLLERS, SENSING_MODES, WIRINGS,
                                    FlyConfig, FlySettings, TrialsConfig, ViewConfig)

_LAZY = {
    "make_controller": "._experiments", "run_trial": "._experiments",
    "run_trials": "._experiments", "summarize_trials": "._experiments",
    "trial_plan": "._experiments", "turning_index": "._experiments",
    "TrialResult": "._experiments",
    "ACTION_RANGE": "._loop", "ConnectomeBrain": "._loop", "SpikingBrain": "._loop",
    "MotorMap": "._loop",
    "OdorSensing": "._loop", "odor_contrast": "._loop",
    "FlyWorld": "._body", "INSTALL_HINT": "._body", "require_flygym": "._body",
    "VideoRecorder": "._video", "run_viewer": "._viewer",
    "trajectory_figure": "._report", "trials_figure": "._report", "timing_table": "._report",
}

__all__ = ["FlySettings", "FlyConfig", "TrialsConfig", "ViewConfig", "CONTROLLERS",
           "NULL_CONTROLLERS", "WIRINGS", "SENSING_MODES", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
