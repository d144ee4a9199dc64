"""The config of ``kairo report`` (torch-, pandas- and matplotlib-free)."""

from __future__ import annotations

from dataclasses import dataclass

from kairo._config import check_fields, option
from kairo._errors import ConfigError
from kairo.runs import RunFilters

__all__ = ["ReportConfig"]


@dataclass(frozen=True)
class ReportConfig(RunFilters):
    """Which runs the site shows (run ids, filters on the results store, or a demo folder)
    and whether to serve it. With no selection at all, every run in the store."""

    ids: tuple[int, ...] = option((), "run ids to report (from kairo runs list); the runs "
                                  "started inside them come too", positional=True, low=1)
    demo: str = option("", "a kairo demo results folder: report its steps (instead of a "
                       "selection from the store)")
    max_rows: int = option(50, "rows of each CSV table shown on a run page (the rest are "
                           "counted and linked)", low=1)
    serve: bool = option(False, "after building the site, serve it on 127.0.0.1 until "
                         "Ctrl-C (the folder is written when the server stops)")
    port: int = option(8000, "port for --serve (0: any free port)", low=0, high=65535)

    def __post_init__(self):
        check_fields(self)
        if self.demo and (self.ids or self.command or self.where or self.since or self.sweep
                          or self.status):
            raise ConfigError("demo: a demo folder is reported on its own; drop the run ids "
                              "and --command/--where/--since/--sweep/--status, or drop --demo")
