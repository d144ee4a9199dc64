"""The reservoir configs: torch-free, validated however they are built, and the commands that
run them end to end."""

import json
import subprocess
import sys

import pytest

from kairo import ConfigError
from kairo._app import get_command
from kairo.cli import execute
from kairo.reservoir import (CompareConfig, PropagateConfig, ReservoirSettings, RunConfig,
                             SweepConfig)
from kairo.reservoir import _config


def test_config_vocabulary_matches_the_library():
    """The configs repeat the connectome's and the tasks' names (to stay import-light)."""
    from kairo.connectome import NORMALIZATIONS, NULL_MODELS, SIGN_MODES
    from kairo.reservoir import TASKS, make_task

    assert _config.NORMALIZATIONS == NORMALIZATIONS
    assert _config.NULL_MODELS == tuple(NULL_MODELS)
    assert _config.SIGNS == tuple(s for s in SIGN_MODES if s != "keep")
    assert _config.TASK_NAMES == tuple(TASKS)
    kinds = {t: make_task(t, n_train=20, n_test=10, washout=5, max_delay=2, seed=0).kind
             for t in TASKS}
    assert _config.CLASSIFICATION_TASKS == tuple(t for t, k in kinds.items()
                                                 if k == "classification")


def test_configs_import_nothing_heavy():
    code = ("import sys, kairo.reservoir, kairo.reservoir._commands; "
            "print(sorted(m for m in ('torch', 'pandas', 'matplotlib', 'numpy', 'scipy') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("cls, kw, field", [
    (RunConfig, {"norm": "banana"}, "norm"),
    (RunConfig, {"leak": 0.0}, "leak"),
    (RunConfig, {"spectral_radius": 0.0}, "spectral_radius"),
    (RunConfig, {"alpha": float("nan")}, "alpha"),
    (RunConfig, {"engine": "jax"}, "engine"),
    (RunConfig, {"engine": "scipy", "device": "cuda"}, "device"),
    (RunConfig, {"readout": "logistic", "task": "narma10"}, "readout"),
    (RunConfig, {"n_train": 0}, "n_train"),
    (RunConfig, {"horizon": 0}, "horizon"),
    (CompareConfig, {"nulls": 1}, "nulls"),
    (CompareConfig, {"null_models": ("rewire", "nope")}, "null_models"),
    (CompareConfig, {"null_models": ()}, "null_models"),
    (CompareConfig, {"workers": -1}, "workers"),
    (CompareConfig, {"executor": "threads"}, "executor"),
    (SweepConfig, {"param": "dtype"}, "param"),
    (SweepConfig, {"param": "leak", "values": (0.5, 1.5)}, "values"),
    (SweepConfig, {"values": ()}, "values"),
    (PropagateConfig, {"norms": ("row", "banana")}, "norms"),
    (PropagateConfig, {"steps": 0}, "steps"),
])
def test_bad_values_are_refused_naming_the_field(cls, kw, field):
    with pytest.raises(ConfigError, match=rf"^{field}\b"):
        cls(**kw)


def test_every_field_has_help():
    import dataclasses

    for cls in (ReservoirSettings, RunConfig, CompareConfig, SweepConfig, PropagateConfig):
        for f in dataclasses.fields(cls):
            assert f.metadata.get("help"), (cls.__name__, f.name)


def test_compare_command_writes_its_folder(tmp_path, data_dir):
    cfg = CompareConfig(task="memory-capacity", nulls=2, null_models=("weight-shuffle",),
                        n_train=200, n_test=100, washout=50, max_delay=5, cv=3,
                        readout_group="DN-VNC", workers=1, data_dir=str(data_dir))
    out = tmp_path / "c"
    summary = execute("reservoir compare", cfg, out=out).summary
    assert "vs weight-shuffle" in summary
    assert {"runs.csv", "summary.csv", "metrics.json", "compare.png", "run.json",
            "config.yaml"} <= {p.name for p in out.iterdir()}
    run = json.loads((out / "run.json").read_text())
    assert run["resolved"]["engine"] in ("scipy", "torch", "numba")
    assert set(run["data"]) == {"winding2023"}
    assert get_command("reservoir sweep").config is SweepConfig
