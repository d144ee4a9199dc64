"""Reservoir computing on connectomes: the engine, readouts, tasks and experiments.

The configs import nothing heavy; every other name is loaded on first use, so building a
config (the CLI does it before any work) stays light.
"""

from kairo._lazy import lazy_exports
from kairo.reservoir._config import (ACTIVATIONS, DYNAMICS, ENGINES, INPUT_WEIGHTS,
                                     CompareConfig, LIFParams, LIFSettings, PropagateConfig,
                                     ReservoirSettings, RunConfig, ScreenConfig, SweepConfig)

_LAZY = {
    "Reservoir": "kairo.reservoir._esn",
    "StreamingRidgeCV": "kairo.reservoir._readout",
    "DEFAULT_ALPHAS": "kairo.reservoir._readout",
    **{name: "kairo.reservoir._tasks" for name in (
        "TASKS", "TaskData", "make_task", "narma", "mackey_glass", "lorenz", "nrmse", "r2",
        "memory_capacity", "accuracy", "ngym_tasks", "ngym_task", "trial_accuracy")},
    **{name: "kairo.reservoir._experiments" for name in (
        "build_reservoir", "build_spiking_reservoir", "evaluate", "run_experiment",
        "compare_experiment", "compare_at", "sweep_result",
        "sweep_experiment", "propagate_experiment", "connectome_inputs")},
    "null_stats": "kairo._stats",
    **{name: "kairo.reservoir._spiking" for name in ("LIFNetwork", "SpikeTrains")},
    **{name: "kairo.reservoir._spiking_online" for name in ("LIFSession", "SpikingReservoir")},
    "brian2_run": "kairo.reservoir._spiking_brian2",
    "screen_experiment": "kairo.reservoir._experiments",
    "shiu_spike_table": "kairo.reservoir._experiments",
}

__all__ = ["Reservoir", "ACTIVATIONS", "ENGINES", "INPUT_WEIGHTS", "StreamingRidgeCV",
           "DEFAULT_ALPHAS", "TASKS", "TaskData", "make_task", "narma", "mackey_glass",
           "lorenz", "nrmse", "r2", "memory_capacity", "accuracy", "ReservoirSettings",
           "RunConfig", "CompareConfig", "SweepConfig", "PropagateConfig", "build_reservoir",
           "evaluate", "run_experiment", "compare_experiment", "sweep_experiment",
           "compare_at", "sweep_result", "propagate_experiment", "screen_experiment",
           "connectome_inputs", "null_stats",
           "DYNAMICS", "LIFParams", "LIFSettings", "ScreenConfig", "LIFNetwork", "LIFSession",
           "SpikeTrains",
           "SpikingReservoir", "build_spiking_reservoir", "brian2_run", "ngym_tasks", "ngym_task",
           "trial_accuracy", "shiu_spike_table"]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
