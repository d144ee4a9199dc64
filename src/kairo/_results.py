"""Results folders: every run writes its config, environment, seed, data checksums, metrics,
tables and figures into one folder, created atomically (a failed run leaves nothing behind)."""

from __future__ import annotations

import functools
import logging
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import sys
from pathlib import Path

import yaml

from kairo._config import config_to_dict
from kairo._errors import KairoError
from kairo._io import atomic_folder, file_sha256, jsonable

log = logging.getLogger(__name__)

__all__ = ["ResultsDir", "environment", "default_out", "cpu_model", "cpu_flags"]

_PACKAGES = ("kairo-circuits", "numpy", "scipy", "pandas", "scikit-learn", "torch", "matplotlib",
             "reservoirpy", "flygym", "mujoco")


def cpu_flags() -> set[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo; empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def cpu_model() -> str:
    """Model name, family/model numbers and the SIMD extensions that change results: the
    same seed trains to different weights on CPUs whose kernels differ (e.g. AVX2 against
    AVX-512 in oneDNN), so a run records which one it had."""
    info: dict[str, str] = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, val = line.partition(":")
                if key.strip() in ("model name", "cpu family", "model") and \
                        key.strip() not in info:
                    info[key.strip()] = val.strip()
                if not line.strip():
                    break
    except OSError:
        pass
    name = info.get("model name") or platform.processor() or platform.machine()
    simd = [f for f in ("avx2", "avx512f", "avx512bw", "gfni") if f in cpu_flags()]
    fam = (f" family {info['cpu family']} model {info['model']}"
           if "cpu family" in info and "model" in info else "")
    return f"{name}{fam}" + (f" ({', '.join(simd)})" if simd else "")


@functools.lru_cache(maxsize=1)
def _versions() -> tuple:
    # once per process: reading the packages' metadata is most of environment()'s ~20 ms,
    # and a run asks twice (its store record at the start, run.json at the end)
    out = []
    for p in _PACKAGES:
        try:
            out.append((p, importlib.metadata.version(p)))
        except importlib.metadata.PackageNotFoundError:
            continue
    return tuple(out)


def environment() -> dict:
    """Versions of Python, kairo and the libraries that shape results, the CPU, machine load,
    and torch's CPU kernels when the run used torch."""
    versions = dict(_versions())
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "machine": platform.machine(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
           "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
           "packages": versions}
    torch = sys.modules.get("torch")          # only when the run used it (importing is slow)
    if torch is not None:
        env["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return env


def default_out(command: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{command.replace(' ', '-')}-{stamp}"


class ResultsDir:
    """Context manager for one run's output folder.

    Files are written into a hidden temporary sibling; on success it is renamed to ``out``
    (replacing an old folder only with ``overwrite=True``); on error it is deleted.

    A resumable command keeps its state in :attr:`checkpoint` (``<out>.checkpoint.pt``, next
    to the folder, so it outlives a failed attempt); it is deleted once the folder is
    committed, together with any file passed to :meth:`discard_on_success`. A command that
    runs a grid of other runs keeps them in :attr:`points` (``<out>.runs/``, next to the
    folder for the same reason); they move into the committed folder as ``runs/``.
    """

    def __init__(self, out, *, command: str, config, overwrite: bool = False):
        self.out = Path(out)
        self.command = command
        self.config = config
        self.overwrite = overwrite
        self.data_files: dict[str, dict] = {}
        self.resolved: dict = {}
        self.files: list[str] = []
        self.metrics: dict = {}
        self.store_record: dict | None = None
        self._checkpoint = self.out.with_name(self.out.name + ".checkpoint.pt")
        self._uses_checkpoint = False
        self._points = self.out.with_name(self.out.name + ".runs")
        self._uses_points = False
        # (from, to) once the grid's runs moved into the committed folder
        self.moved_points: tuple[Path, Path] | None = None
        self._discard: list[Path] = []
        if self.out.exists() and not overwrite:
            raise KairoError(f"output folder {self.out} already exists; choose another --out "
                             f"or pass --overwrite")

    @property
    def checkpoint(self) -> Path:
        """Where a resumable command keeps its state; only a run that asked for it has it
        deleted on success (another command writing the same --out leaves it alone)."""
        self._uses_checkpoint = True
        return self._checkpoint

    @property
    def points(self) -> Path:
        """The folder of the runs a grid command starts (one folder per run); it outlives a
        failed attempt, so the same command runs only the missing ones."""
        self._uses_points = True
        return self._points

    def __enter__(self) -> ResultsDir:
        self._ckpt_before = _mtime(self._checkpoint)
        self._folder = atomic_folder(self.out, overwrite=self.overwrite)
        self.path = self._folder.__enter__()
        self.started = _dt.datetime.now(_dt.timezone.utc)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            try:
                self._write_manifest()
            except BaseException as e:
                self._folder.__exit__(type(e), e, e.__traceback__)
                raise
        self._folder.__exit__(exc_type, exc, tb)
        if exc_type is None:
            for p in ([self._checkpoint] if self._uses_checkpoint else []) + self._discard:
                Path(p).unlink(missing_ok=True)
            if self._uses_points and self._points.is_dir():
                for lock in self._points.glob(".*.lock"):
                    lock.unlink(missing_ok=True)
                final = self.out / "runs"
                self._points.rename(final)
                self.moved_points = (self._points.absolute(), final.absolute())
        elif self._uses_points and self._points.is_dir() and any(self._points.iterdir()):
            log.warning("%s stopped; the runs it finished are kept in %s: the same command "
                        "runs only the missing ones (delete it to start over)", self.command,
                        self._points)
        elif self._uses_checkpoint and _mtime(self._checkpoint) not in (None, self._ckpt_before):
            # a run that stopped after saving state says where it is, so nobody is surprised
            # that the next run resumes (or wonders what the file next to --out is)
            log.warning("%s stopped; its checkpoint %s is kept: the same command resumes from "
                        "it (delete it to start over)", self.command, self._checkpoint)

    # ---------------------------------------------------------------- writers
    def add(self, name: str, obj=None) -> Path:
        """Write ``obj`` as ``name`` in the folder and list it in run.json: a dict or list
        (JSON), a pandas DataFrame (CSV, or Parquet for a ``.parquet`` name), a str (text) or a Matplotlib figure (PNG/SVG/PDF,
        closed after saving). ``obj=None`` lists a file something else wrote there."""
        p = self.path / name
        if obj is None:
            if not p.is_file():
                raise FileNotFoundError(f"{p}: listed in the results but not written")
        elif isinstance(obj, (dict, list)):
            p.write_text(json.dumps(obj, indent=2, default=jsonable, allow_nan=True) + "\n")
        elif isinstance(obj, str):
            p.write_text(obj)
        elif hasattr(obj, "to_parquet") and name.endswith(".parquet"):
            obj.to_parquet(p, index=False)
        elif hasattr(obj, "to_csv"):
            obj.to_csv(p, index=False)
        elif hasattr(obj, "savefig"):
            obj.savefig(p, dpi=120, bbox_inches="tight")
            if getattr(obj.canvas, "manager", None) is not None:     # made through pyplot
                import matplotlib.pyplot as plt

                plt.close(obj)
        else:
            raise TypeError(f"cannot write a {type(obj).__name__} as {name}")
        if name not in self.files:
            self.files.append(name)
        return p

    def record_input(self, label: str, path) -> None:
        """Record an input file's path and SHA-256 in run.json."""
        self.data_files[label] = {"path": str(path), "sha256": file_sha256(path)}

    def resolve(self, name: str, value) -> None:
        """Record what an ``"auto"`` (or otherwise derived) setting resolved to; the config
        keeps ``"auto"`` so a re-run resolves it again."""
        self.resolved[name] = value

    def discard_on_success(self, path) -> None:
        """Delete ``path`` (a scratch file beside the folder) once the run is committed."""
        self._discard.append(Path(path))

    def _write_manifest(self) -> None:
        from kairo.runs import read_results

        # the store's queryable metrics, read back from the files as the store and the
        # report read a folder (kairo.runs.read_results)
        self.metrics = read_results(self.path, self.files)
        cfg = config_to_dict(self.config)
        (self.path / "config.yaml").write_text(
            f"# resolved config of `kairo {self.command}`; re-run with --config this file\n"
            + yaml.safe_dump(cfg, sort_keys=False))
        run = {"command": f"kairo {self.command}", "argv": sys.argv,
               "started": self.started.isoformat(),
               "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(),
               "seed": cfg.get("seed"), "config": cfg, "resolved": self.resolved,
               "data": self.data_files, "environment": environment(),
               "files": sorted(self.files)}
        if self.store_record:
            run["store"] = self.store_record
        (self.path / "run.json").write_text(json.dumps(run, indent=2, default=jsonable) + "\n")


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None
