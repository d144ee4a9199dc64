"""Reservoir computing on connectomes: the engine, readouts, tasks and experiments."""

from kairo.reservoir._esn import ACTIVATIONS, BACKENDS, INPUT_WEIGHTS, Reservoir
from kairo.reservoir._experiments import (CompareConfig, PropagateConfig, ReservoirSettings,
                                          RunConfig, SweepConfig, build_reservoir,
                                          compare_experiment, evaluate, null_stats,
                                          propagate_experiment, run_experiment,
                                          sweep_experiment)
from kairo.reservoir._readout import DEFAULT_ALPHAS, StreamingRidgeCV
from kairo.reservoir._tasks import (TASKS, TaskData, accuracy, lorenz, mackey_glass,
                                    make_task, memory_capacity, narma, nrmse, r2)

__all__ = ["Reservoir", "ACTIVATIONS", "BACKENDS", "INPUT_WEIGHTS", "StreamingRidgeCV",
           "DEFAULT_ALPHAS", "TASKS", "TaskData", "make_task", "narma", "mackey_glass",
           "lorenz", "nrmse", "r2", "memory_capacity", "accuracy", "ReservoirSettings",
           "RunConfig", "CompareConfig", "SweepConfig", "PropagateConfig", "build_reservoir",
           "evaluate", "run_experiment", "compare_experiment", "sweep_experiment",
           "propagate_experiment", "null_stats"]
