"""The embodied fly: odor → sensory neurons → connectome → DN-VNC → descending signal → legs.

The sensing, brain and motor parts (``_loop``) are plain NumPy and import no physics engine;
``_body`` wraps flygym 1.x (the ``[fly]`` extra) and is imported only when a trial runs.
"""

import os as _os

# Headless rendering by default (EGL needs no display). Set here, before anything can import
# MuJoCo's renderer, and only if the user has not chosen a backend.
_os.environ.setdefault("MUJOCO_GL", "egl")

from kairo.embodied._experiments import (CONTROLLERS, NULL_CONTROLLERS, FlyConfig,
                                         TrialResult, TrialsConfig, ViewConfig, make_controller,
                                         run_trial, run_trials, summarize_trials, trial_plan,
                                         turning_index)
from kairo.embodied._loop import (ACTION_RANGE, WIRINGS, ConnectomeBrain, MotorMap,
                                  OdorSensing, odor_contrast)

__all__ = ["FlyConfig", "TrialsConfig", "ViewConfig", "CONTROLLERS", "NULL_CONTROLLERS",
           "make_controller", "run_trial", "run_trials", "summarize_trials", "trial_plan",
           "turning_index", "TrialResult", "ACTION_RANGE", "WIRINGS", "ConnectomeBrain",
           "MotorMap", "OdorSensing", "odor_contrast"]
