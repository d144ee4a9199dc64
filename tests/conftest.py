"""Shared fixtures. Tests read the real data from ``$KAIRO_DATA_DIR`` or ``../shared/data``."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]


def _data_dir() -> Path:
    env = os.environ.get("KAIRO_DATA_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "data").resolve()


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = _data_dir()
    if not (d / "connectome" / "winding2023" / "Supplementary-Data-S1.zip").is_file():
        pytest.fail(f"test data not found under {d}: set KAIRO_DATA_DIR to a folder laid out "
                    f"like ../shared/data")
    return d


@pytest.fixture(autouse=True)
def _env(monkeypatch, data_dir):
    monkeypatch.setenv("KAIRO_DATA_DIR", str(data_dir))
    monkeypatch.setenv("KAIRO_OFFLINE", "1")
    monkeypatch.setenv("KAIRO_PROGRESS", "0")


@pytest.fixture(scope="session")
def winding(data_dir):
    from kairo.connectome import load_winding2023

    return load_winding2023(data_dir=data_dir, download=False)


@pytest.fixture(scope="session")
def winding_zip(data_dir) -> Path:
    return data_dir / "connectome" / "winding2023" / "Supplementary-Data-S1.zip"


@pytest.fixture
def small():
    """A 60-neuron random connectome with a neuron table (sides and cell types)."""
    import pandas as pd

    from kairo.connectome import Connectome

    rng = np.random.default_rng(42)
    n = 60
    m = sp.random(n, n, density=0.1, random_state=rng, data_rvs=lambda k: rng.integers(1, 9, k))
    t = pd.DataFrame({"side": np.where(np.arange(n) % 2 == 0, "L", "R"),
                      "celltype": np.repeat(["sensory", "inter", "DN-VNC"], n // 3)},
                     index=pd.Index(np.arange(1000, 1000 + n), name="id"))
    return Connectome(m, t, name="small")


@pytest.fixture(scope="session")
def load_benchmark():
    """name → the module benchmarks/<name>.py, imported as when run as a script (its folder on
    the path, for benchmarks/_common.py)."""
    import importlib.util
    import sys

    folder = Path(__file__).resolve().parents[1] / "benchmarks"

    def load(name: str):
        sys.path.insert(0, str(folder))
        try:
            spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(str(folder))
        return mod
    return load
