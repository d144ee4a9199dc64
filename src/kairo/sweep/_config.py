"""The config of ``kairo sweep`` (torch-free)."""

from __future__ import annotations

from dataclasses import dataclass

from kairo._config import check_fields, option
from kairo._jobs import EXECUTORS

__all__ = ["SweepConfig"]


@dataclass(frozen=True)
class SweepConfig:
    spec: str = option("", "sweep spec (YAML/TOML/JSON): command, base, grid or search, seeds, "
                       "metric, goal (docs/results.md)", positional=True, required=True)
    out: str = option("", "sweep folder (default: results/sweeps/<name>-<id>); running the "
                      "same spec into the same folder resumes it")
    workers: int = option(0, "points run at once (0: one per core)", low=0)
    executor: str = option("auto", "auto (Ray when RAY_ADDRESS is set, else processes), "
                           "processes, ray, serial", choices=EXECUTORS)
    address: str = option("", "Ray cluster to run on (host:port, or auto); implies --executor "
                          "ray")
    fail_fast: bool = option(False, "stop at the first failing point (default: record it and "
                             "go on)")

    def __post_init__(self):
        check_fields(self)
