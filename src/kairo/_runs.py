"""Results folders: every run writes its config, environment, seed, data checksums, metrics,
tables and figures into one folder, created atomically (a failed run leaves nothing behind)."""

from __future__ import annotations

import contextlib
import datetime as _dt
import importlib.metadata
import json
import os
import platform
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import yaml

from kairo._config import config_to_dict
from kairo._errors import KairoError

__all__ = ["ResultsDir", "environment", "register_environment", "default_out", "atomic_write",
           "atomic_write_text", "atomic_folder", "cpu_model", "cpu_flags"]

_PACKAGES = ("kairo", "numpy", "scipy", "pandas", "scikit-learn", "torch", "matplotlib",
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


_ENV_HOOKS: dict[str, object] = {}


def register_environment(name: str, hook) -> None:
    """Have every run record made in this process carry ``hook()`` (a dict) in its environment.

    A family registers one when it is imported, for what shapes its results beyond the package
    versions (e.g. the attention models: torch's CPU kernels and the ResNet's layout, which fix
    the float order of a seeded run even when only worker processes ran the models)."""
    _ENV_HOOKS[name] = hook


def environment() -> dict:
    """Versions of Python, kairo and the libraries that shape results, the CPU, machine load,
    and what the imported families registered (:func:`register_environment`)."""
    versions = {}
    for p in _PACKAGES:
        try:
            versions[p] = importlib.metadata.version(p)
        except importlib.metadata.PackageNotFoundError:
            continue
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "machine": platform.machine(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
           "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
           "packages": versions}
    for hook in list(_ENV_HOOKS.values()):      # before the torch fields: a hook may import it
        env.update(hook())
    torch = sys.modules.get("torch")          # only when the run used it (importing is slow)
    if torch is not None:
        env["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    return env


def default_out(command: str) -> Path:
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{command.replace(' ', '-')}-{stamp}"


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path, write) -> Path:
    """Call ``write(tmp)`` on a temporary sibling of ``path``, then rename it over ``path``:
    readers never see a half-written file, and a failure leaves the old file (or none)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())      # mkstemp's 0600 would make results private
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def atomic_write_text(path, text: str) -> Path:
    """``atomic_write`` of a text file."""
    return atomic_write(path, lambda tmp: Path(tmp).write_text(text))


def _make_parent(out: Path) -> None:
    """Create ``out``'s parent folders; a file in the way is named, not a raw OSError."""
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        blocker = next((a for a in [out.parent, *out.parent.parents]
                        if a.exists() and not a.is_dir()), out.parent)
        raise KairoError(f"cannot create the output folder {out}: {blocker} is a file, not a "
                         f"folder") from None


@contextlib.contextmanager
def atomic_folder(out, *, overwrite: bool = False):
    """Yield a hidden temporary sibling of the folder ``out`` to write into; on success it is
    renamed to ``out`` (replacing an old folder only with ``overwrite``), on error deleted, so
    readers never see a half-written folder."""
    out = Path(out)
    if out.exists() and not overwrite:
        raise KairoError(f"output folder {out} already exists; choose another --out "
                         f"or pass --overwrite")
    _make_parent(out)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    os.chmod(tmp, 0o777 & ~_umask())      # mkdtemp's 0700 would make results private
    try:
        yield tmp
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _jsonable(o):
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, (np.floating,)):
        return float(o)
    if isinstance(o, (np.integer,)):
        return int(o)
    if isinstance(o, (np.bool_,)):
        return bool(o)
    if isinstance(o, Path):
        return str(o)
    if isinstance(o, tuple):
        return list(o)
    raise TypeError(f"not JSON serializable: {type(o).__name__}")


class ResultsDir:
    """Context manager for one run's output folder.

    Files are written into a hidden temporary sibling; on success it is renamed to ``out``
    (replacing an old folder only with ``overwrite=True``); on error it is deleted.
    """

    def __init__(self, out, *, command: str, config, overwrite: bool = False):
        self.out = Path(out)
        self.command = command
        self.config = config
        self.overwrite = overwrite
        self.data_files: dict[str, dict] = {}
        self.files: list[str] = []
        if self.out.exists() and not overwrite:
            raise KairoError(f"output folder {self.out} already exists; choose another --out "
                             f"or pass --overwrite")

    def __enter__(self) -> ResultsDir:
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

    # ---------------------------------------------------------------- writers
    def record_data(self, label: str, path, sha256: str) -> None:
        self.data_files[label] = {"path": str(path), "sha256": sha256}

    def write_json(self, name: str, obj) -> Path:
        p = self.path / name
        p.write_text(json.dumps(obj, indent=2, default=_jsonable, allow_nan=True) + "\n")
        self.files.append(name)
        return p

    def write_table(self, name: str, df) -> Path:
        p = self.path / name
        df.to_csv(p, index=False)
        self.files.append(name)
        return p

    def write_text(self, name: str, text: str) -> Path:
        p = self.path / name
        p.write_text(text)
        self.files.append(name)
        return p

    def save_figure(self, fig, name: str) -> Path:
        import matplotlib.pyplot as plt

        p = self.path / name
        fig.savefig(p, dpi=120, bbox_inches="tight")
        plt.close(fig)
        self.files.append(name)
        return p

    def _write_manifest(self) -> None:
        cfg = config_to_dict(self.config)
        (self.path / "config.yaml").write_text(
            f"# resolved config of `kairo {self.command}`; re-run with --config this file\n"
            + yaml.safe_dump(cfg, sort_keys=False))
        run = {"command": f"kairo {self.command}", "argv": sys.argv,
               "started": self.started.isoformat(),
               "finished": _dt.datetime.now(_dt.timezone.utc).isoformat(),
               "seed": cfg.get("seed"), "config": cfg, "data": self.data_files,
               "environment": environment(), "files": sorted(self.files)}
        (self.path / "run.json").write_text(json.dumps(run, indent=2, default=_jsonable) + "\n")
