"""``kairo data path|fetch|verify``: the data directory and its registered files."""

from __future__ import annotations

from dataclasses import dataclass

from kairo._command import Command
from kairo._config import check_fields, option
from kairo._errors import ConfigError

__all__ = ["DataConfig", "COMMANDS"]


@dataclass(frozen=True)
class DataConfig:
    name: str = option("", "registered data set (default: all)", positional=True)
    data_dir: str = option("", "data directory (default: $KAIRO_DATA_DIR, else the user "
                           "cache dir)")

    def __post_init__(self):
        check_fields(self)
        from kairo.data._files import REGISTRY

        if self.name and self.name not in REGISTRY:
            raise ConfigError(f"name: unknown data set {self.name!r}; registered: "
                              f"{', '.join(REGISTRY)}")


def _path(cfg: DataConfig, rd) -> str:
    from kairo.data._files import data_dir

    return str(data_dir(cfg.data_dir or None))


def _fetch(cfg: DataConfig, rd, *, download: bool = True) -> str:
    from kairo.data._files import REGISTRY, fetch

    names = [cfg.name] if cfg.name else list(REGISTRY)
    return "\n".join(f"{n}: {fetch(n, cfg.data_dir, download=download)} (checksum ok)"
                     for n in names)


def _verify(cfg: DataConfig, rd) -> str:
    return _fetch(cfg, rd, download=False)


def _sources(cfg: DataConfig, rd) -> str:
    from kairo.data._files import REGISTRY, SOURCES, data_dir

    base = data_dir(cfg.data_dir or None)
    lines = ["Registered files (kairo data fetch downloads and checksums them):"]
    for name, spec in REGISTRY.items():
        if cfg.name and name != cfg.name:
            continue
        lines.append(f"  {name}: {base / spec.relpath}")
        lines.append(f"      from {spec.urls[0]}")
    if not cfg.name:
        lines.append("Adult fly brain files (not downloadable by kairo: put them in any "
                     "folder and pass it as --connectome):")
        for name, (where, files, use) in SOURCES.items():
            lines += [f"  {name}", f"      from: {where}", f"      files: {files}",
                      f"      use: {use}"]
    return "\n".join(lines)


COMMANDS = [
    Command("data path", DataConfig, _path, "print the data directory", folder=False,
            record=False),
    Command("data fetch", DataConfig, _fetch, "download and checksum registered data files",
            folder=False),
    Command("data verify", DataConfig, _verify, "checksum registered data files (no download)",
            folder=False),
    Command("data sources", DataConfig, _sources, "where each data file comes from and what "
            "it is named (registered files and the adult fly brain's)", folder=False,
            record=False),
]
