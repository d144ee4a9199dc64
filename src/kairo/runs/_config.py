"""Configs of ``kairo runs …`` (torch- and pandas-free)."""

from __future__ import annotations

from dataclasses import dataclass

from kairo._config import check_fields, option
from kairo._errors import ConfigError

__all__ = ["RunFilters", "RunsListConfig", "RunsShowConfig", "RunsCompareConfig", "RunsExportConfig",
           "RunsRmConfig"]


@dataclass(frozen=True)
class RunFilters:
    """The filters on the results store that `kairo runs list`, `export` and `report` share."""

    command: str = option("", "only runs of this command, e.g. 'reservoir run'")
    where: str = option("", "conditions on metrics, run fields or config.FIELD, joined by "
                        "commas or 'and': 'accuracy>0.9, config.norm=row, status=done'")
    since: str = option("", "only runs started since an ISO date/time or an age (2h, 3d)")
    sweep: str = option("", "only the runs of this sweep id")
    status: str = option("", "only runs with this status", choices=("", "running", "done",
                                                                     "failed"))


@dataclass(frozen=True)
class RunsListConfig(RunFilters):
    limit: int = option(50, "show the newest N runs (0: all)", low=0)
    columns: tuple[str, ...] = option((), "metrics or config.FIELD to show as columns "
                                      "(default: up to 4 metrics every listed run has)")

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class RunsShowConfig:
    id: int | None = option(None, "run id (from kairo runs list)", positional=True, low=1,
                            required=True)

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class RunsCompareConfig:
    ids: tuple[int, ...] = option((), "two or more run ids", positional=True, low=1,
                                  required=True)
    all: bool = option(False, "show the fields that are equal too (default: only what "
                       "differs, plus the metrics)")

    def __post_init__(self):
        check_fields(self)
        if len(set(self.ids)) < 2:
            raise ConfigError(f"ids: compare needs two or more different run ids, got "
                              f"{list(self.ids)}")


@dataclass(frozen=True)
class RunsExportConfig(RunFilters):
    format: str = option("csv", "file format", choices=("csv", "parquet"))
    output: str = option("", "file to write (its folder must exist)", required=True)
    overwrite: bool = option(False, "replace an existing --output")

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class RunsRmConfig:
    ids: tuple[int, ...] = option((), "run ids to remove from the store", positional=True,
                                  low=1, required=True)
    files: bool = option(False, "also delete each run's results folder")

    def __post_init__(self):
        check_fields(self)
