"""Shared fixtures and the test tiers.

Tests read the real data from ``$KAIRO_DATA_DIR`` or ``../shared/data``. Tiers (markers
registered in pyproject.toml):

- ``winding``: the test reads the Winding et al. 2023 archive. Every test that uses the
  ``winding``, ``winding_zip`` or ``data_dir`` fixture gets the marker automatically; tests that
  read the archive another way (through a command) carry it themselves. Without the archive
  they are skipped, saying where to put it; every other test runs without it.
- ``slow``: takes more than a few seconds; the developer loop is ``pytest -m "not slow"``.
- ``study``: tests of ``benchmarks/studies/`` (one-off studies whose decisions are taken).
  Off by default: they run only when selected, with ``-m study`` (or any marker expression
  naming ``study``), ``--studies``, or by naming a file under ``tests/studies/``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

REPO = Path(__file__).resolve().parents[1]
_RESULTS_KEY = pytest.StashKey[dict]()
WINDING_RELPATH = Path("connectome") / "winding2023" / "Supplementary-Data-S1.zip"
# the fixtures that hand a test the data directory or the archive itself
WINDING_FIXTURES = {"winding", "winding_zip", "data_dir"}


def _data_dir() -> Path:
    env = os.environ.get("KAIRO_DATA_DIR")
    return Path(env) if env else (REPO.parent / "shared" / "data").resolve()


def _winding_missing() -> str | None:
    """Why the Winding archive tests cannot run (None when the archive is there)."""
    d = _data_dir()
    if (d / WINDING_RELPATH).is_file():
        return None
    return (f"needs the Winding 2023 archive at {d / WINDING_RELPATH}: set KAIRO_DATA_DIR to a "
            f"folder laid out like ../shared/data (or run `kairo data fetch winding2023` "
            f"online)")


def _results_state() -> dict:
    """Every file under the checkout's results/ (the default results store and run folders)
    with its size and modification time."""
    root = REPO / "results"
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()} if root.is_dir() else {}


def pytest_sessionstart(session):
    session.config.stash[_RESULTS_KEY] = _results_state()


def pytest_sessionfinish(session, exitstatus):
    # tests write only inside their temporary folders: the checkout's results/ (the store a
    # user's runs land in) must be as it was when the session started
    before = session.config.stash.get(_RESULTS_KEY, None)
    if before is None:
        return
    after = _results_state()
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    if changed:
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(
            f"tests wrote into {REPO / 'results'}: {', '.join(changed[:10])} (a test must "
            f"write only inside its temporary folder; if a kairo command of yours ran in this "
            f"checkout meanwhile, run the tests again)", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_addoption(parser):
    parser.addoption("--studies", action="store_true", default=False,
                     help="also run the tests of benchmarks/studies/ (marker `study`)")


def _studies_selected(config) -> bool:
    if config.getoption("--studies") or "study" in (config.option.markexpr or ""):
        return True
    studies = (REPO / "tests" / "studies").resolve()
    for arg in config.args:
        path = Path(str(arg).split("::")[0]).resolve()
        if path == studies or studies in path.parents:
            return True
    return False


def pytest_collection_modifyitems(config, items):
    missing = _winding_missing()
    studies = _studies_selected(config)
    skip_study = pytest.mark.skip(reason="a study's test (benchmarks/studies/): run with "
                                         "`-m study` or --studies")
    for item in items:
        if WINDING_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.winding)
        if missing and item.get_closest_marker("winding"):
            item.add_marker(pytest.mark.skip(reason=missing))
        if not studies and item.get_closest_marker("study"):
            item.add_marker(skip_study)


@pytest.fixture(scope="session", autouse=True)
def _session_store(tmp_path_factory) -> Path:
    # set for the whole session, not per test: module-scoped fixtures that run commands
    # start before any function-scoped fixture and would otherwise record in results/
    store = tmp_path_factory.mktemp("store") / "kairo.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KAIRO_STORE", str(store))
        mp.setenv("KAIRO_DATA_DIR", str(_data_dir()))
        mp.setenv("KAIRO_OFFLINE", "1")
        mp.setenv("KAIRO_PROGRESS", "0")
        mp.delenv("KAIRO_PARENT_RUN", raising=False)
        yield store


@pytest.fixture(autouse=True)
def _env(monkeypatch, _session_store):
    monkeypatch.setenv("KAIRO_DATA_DIR", str(_data_dir()))
    # runs are recorded in a store of the test session's, never in the checkout's results/
    monkeypatch.setenv("KAIRO_STORE", str(_session_store))
    monkeypatch.delenv("KAIRO_PARENT_RUN", raising=False)
    monkeypatch.setenv("KAIRO_OFFLINE", "1")
    monkeypatch.setenv("KAIRO_PROGRESS", "0")


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The data directory holding the Winding archive (tests using it are marked ``winding``
    and skipped without it)."""
    missing = _winding_missing()
    if missing:
        pytest.skip(missing)
    return _data_dir()


@pytest.fixture(scope="session")
def winding(data_dir):
    from kairo.connectome import load_winding2023

    return load_winding2023(data_dir=data_dir, download=False)


@pytest.fixture(scope="session")
def winding_zip(data_dir) -> Path:
    return data_dir / WINDING_RELPATH


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
    """name → the module benchmarks/<name>.py (a peer benchmark) or, for "studies/<name>",
    benchmarks/studies/<name>.py, imported as when run as a script (benchmarks/ on the path,
    for benchmarks/_common.py)."""
    import importlib.util
    import sys

    folder = REPO / "benchmarks"

    def load(name: str):
        path = folder / f"{name}.py"
        sys.path.insert(0, str(folder))
        try:
            spec = importlib.util.spec_from_file_location(Path(name).name, path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        finally:
            sys.path.remove(str(folder))
        return mod
    return load
