"""What every benchmark script shares: load averages, timed sections, atomic JSON results, and
installing a peer without its dependencies.

Standard library only: ``attention_speed.py`` is also run by the tsai environment's Python,
which has no kairo.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def loadavg() -> list[float]:
    return [round(v, 2) for v in os.getloadavg()]


@contextmanager
def section(results: dict, name: str, *, digits: int = 2, after=None):
    """Record wall time and load average around a section (garbage collected first) in
    ``results["sections"][name]``; ``after()`` may add fields at the end."""
    gc.collect()
    rec = {"loadavg_before": loadavg()}
    print(f"== {name} (loadavg {rec['loadavg_before']})", flush=True)
    t0 = time.perf_counter()
    try:
        yield rec
    finally:
        rec["wall_s"] = round(time.perf_counter() - t0, digits)
        rec["loadavg_after"] = loadavg()
        if after is not None:
            rec.update(after())
        results["sections"][name] = rec


def atomic_write_json(path: Path, obj) -> None:
    """Write to a temporary sibling, then rename over ``path`` (readers never see half a file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(tmp, 0o666 & ~mask)          # mkstemp's 0600 would make results private
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(json.dumps(obj, indent=2) + "\n")
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def pip_install_no_deps(target: Path, spec: str) -> str | None:
    """``pip install --no-deps --target target spec`` (a peer's code only, never its torch);
    returns None on success, else the end of pip's error output."""
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target",
                        str(target), spec], capture_output=True, text=True, check=False)
    return None if r.returncode == 0 else r.stderr[-300:]
