"""Sweeps: a grid or an Optuna search over any registered command's options, each point a
normal run recorded in the results store, on local processes or a Ray cluster, resumable."""

from kairo.sweep._engine import SweepResult, point_key, run_point, run_points, run_sweep
from kairo.sweep._spec import (SAMPLERS, Point, SearchSpace, SweepSpec, grid_points, load_spec,
                               spec_from_dict)

__all__ = ["SweepSpec", "SearchSpace", "Point", "SweepResult", "load_spec", "spec_from_dict",
           "grid_points", "run_sweep", "run_point", "run_points", "point_key", "SAMPLERS"]
