"""``kairo reservoir sweep`` runs one stored ``reservoir compare`` run per swept value (in
``<out>.runs/``, moved into the folder as ``runs/``): a stopped sweep runs only the values it
has not finished, and its table is the one :func:`sweep_experiment` computes in memory."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from kairo import _app
from kairo.cli import main
from kairo.reservoir import SweepConfig, sweep_experiment

SMALL = dict(n_train=300, n_test=150, washout=50, cv=3, readout_group="DN-VNC+DN-SEZ")
ARGS = ["reservoir", "sweep", "--task", "narma10", "--values", "0.5,1", "--nulls", "2",
        "--null-models", "weight-shuffle", "--workers", "1",
        *[a for k, v in SMALL.items() for a in (f"--{k.replace('_', '-')}", str(v))]]


@pytest.mark.slow
def test_a_sweep_is_a_compare_run_per_value_and_resumes(tmp_path, monkeypatch):
    real = _app.execute
    ran, stop = [], [1]

    def execute(command, cfg, **kw):
        if command == "reservoir compare":
            if len(ran) == stop[0]:
                raise KeyboardInterrupt
            ran.append(cfg.alpha)
        return real(command, cfg, **kw)

    monkeypatch.setattr(_app, "execute", execute)
    out = tmp_path / "s"
    assert main([*ARGS, "--out", str(out)]) == 130
    assert not out.exists() and len(list((tmp_path / "s.runs").glob("*/run.json"))) == 1
    ran.clear()
    stop[0] = None
    assert main([*ARGS, "--out", str(out)]) == 0
    assert ran == [1.0]                                     # 0.5 was done before the stop
    points = sorted((out / "runs").glob("*/run.json"))
    assert [json.loads(p.read_text())["command"] for p in points] == \
        ["kairo reservoir compare"] * 2
    assert [p.parent.name.split("-")[0] for p in points] == ["alpha=0.5", "alpha=1"]

    # the same numbers as the sweep computed in memory
    want = sweep_experiment(SweepConfig(task="narma10", values=(0.5, 1.0), nulls=2,
                                        null_models=("weight-shuffle",), workers=1, **SMALL))
    got = pd.read_csv(out / "runs.csv", float_precision="round_trip")
    pd.testing.assert_frame_equal(got, want["table"], check_exact=True, check_dtype=False)
