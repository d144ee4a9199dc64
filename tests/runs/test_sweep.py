"""Sweeps: a spec is checked whole before anything runs; every point is a run in the store
tagged with the sweep; a failing point is recorded and the sweep goes on; a killed sweep
resumes without running any point twice; the same sweep runs on a local Ray runtime."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from kairo import ConfigError, KairoError, _app, cli
from kairo._command import Command
from kairo._config import check_fields, option
from kairo.runs import Store
from kairo.sweep import grid_points, load_spec, run_sweep, spec_from_dict

REPO = Path(__file__).resolve().parents[2]


def _spec(tmp_path, body: dict, name="s") -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(yaml.safe_dump(body))
    return p


def _example(tmp_path) -> Path:
    """The committed example sweep, shrunk to seconds a point (same command, grid, metric)."""
    body = yaml.safe_load((REPO / "examples" / "sweep-reservoir-alpha.yaml").read_text())
    body["base"].update(n_train=300, n_test=100, washout=50, cv=2,
                        readout_group="DN-VNC+DN-SEZ+pre-DN-VNC+pre-DN-SEZ")
    body["seeds"] = 1
    return _spec(tmp_path, body, name="example")


ENC = {"command": "tsc encodings", "base": {"positions": 16},
       "grid": {"d": [4, 8, 12]}, "metric": "encodings.max_offset_rotation_error",
       "goal": "min"}


@pytest.mark.parametrize("body, match", [
    ({**ENC, "command": "tsc nope"}, "command: unknown command"),
    ({**ENC, "command": "runs list"}, "cannot be swept"),
    ({**ENC, "base": {"width": 3}}, r"base: unknown option\(s\) \['width'\]"),
    ({**ENC, "base": {"positions": "many"}}, "positions.*expects an integer"),
    ({**ENC, "grid": {"width": [1]}}, "'width' is not an option of tsc encodings"),
    ({**ENC, "grid": {"d": []}}, r"grid\.d: empty grid"),
    ({**ENC, "grid": {}}, "grid: expected a non-empty mapping"),
    ({**ENC, "grid": {"d": ["four"]}}, "grid point .*expects an integer"),
    ({**ENC, "grid": {"d": [3]}}, "d must be even"),
    ({**ENC, "grid": {"d": {"range": [2, 8]}}}, "three numbers"),
    ({**ENC, "seeds": 2}, "seeds: this command's config has no seed field"),
    ({**ENC, "search": {"space": {"base": {"low": 2, "high": 9}}, "trials": 2}},
     "either grid or search"),
    ({k: v for k, v in ENC.items() if k != "grid"}, "either grid or search"),
    ({**{k: v for k, v in ENC.items() if k not in ("grid", "metric")},
      "search": {"space": {"base": {"low": 2, "high": 9}}, "trials": 2}}, "metric: a search"),
    ({**{k: v for k, v in ENC.items() if k != "grid"},
      "search": {"space": {"base": {"low": 9, "high": 2}}, "trials": 2}}, "low < high"),
    ({**ENC, "goal": "up"}, "goal: expected max or min"),
    ({**ENC, "metrics": "x"}, r"unknown key\(s\) \['metrics'\]"),
])
def test_a_bad_spec_is_refused_before_anything_runs(tmp_path, body, match):
    with pytest.raises(ConfigError, match=match):
        load_spec(_spec(tmp_path, body))
    assert not list(tmp_path.glob("*/"))          # nothing ran, no folder


def test_grid_ranges_and_seeds_expand():
    spec = spec_from_dict({"command": "reservoir run", "base": {"task": "narma10"},
                           "grid": {"alpha": {"range": [0.5, 1.5, 0.5]},
                                    "leak": {"linspace": [0.2, 1.0, 3]}}, "seeds": [3, 5]})
    pts = grid_points(spec)
    assert len(pts) == 3 * 3 * 2 and len({p.key for p in pts}) == 18
    assert sorted({p.values["alpha"] for p in pts}) == [0.5, 1.0, 1.5]
    assert sorted({p.values["leak"] for p in pts}) == [0.2, 0.6, 1.0]
    assert {p.config["seed"] for p in pts} == {3, 5}
    assert spec.id == spec_from_dict({**spec.as_dict(), "name": spec.name}).id


def test_a_grid_sweep_records_every_point_and_resumes(tmp_path):
    st = Store(tmp_path / "k.db")
    spec = load_spec(_spec(tmp_path, ENC))
    res = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert [p["status"] for p in res.points] == ["done"] * 3
    recs = st.runs(sweep=spec.id)
    assert sorted(r.config["d"] for r in recs) == [4, 8, 12]
    assert {r.point for r in recs} == {p.key for p in grid_points(spec)}
    assert res.best(1)[0]["mean"] == min(p["metric"] for p in res.points)
    assert (tmp_path / "sw" / "points.csv").read_text().count("\n") == 4
    again = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert [p["status"] for p in again.points] == ["skipped"] * 3
    assert len(st.runs(sweep=spec.id)) == 3
    assert st.sweep(spec.id)["status"] == "done"
    assert cli.main(["--store", str(st.path), "runs", "list", "--sweep", spec.id]) == 0
    # the report's sweep page draws the metric against the swept option
    assert cli.main(["--store", str(st.path), "report", "--sweep", spec.id, "--out",
                     str(tmp_path / "site")]) == 0
    [page] = (tmp_path / "site" / "sweeps").glob("*/index.html")
    assert (page.parent / "d.png").is_file() and "p002-d=12" in page.read_text()
    other = load_spec(_spec(tmp_path, {**ENC, "grid": {"d": [4]}}, name="t"))
    with pytest.raises(KairoError, match="holds sweep"):
        run_sweep(other, out=tmp_path / "sw", store=st, workers=1)


@dataclass(frozen=True)
class FlakyConfig:
    x: int = option(0, "fails when odd", low=0)

    def __post_init__(self):
        check_fields(self)


def _flaky(cfg, rd):
    if cfg.x % 2:
        raise KairoError(f"x={cfg.x} is odd")
    rd.add("metrics.json", {"y": cfg.x * 10})
    return "ok"


@pytest.fixture
def flaky(monkeypatch):
    monkeypatch.setitem(_app.commands(), "flaky", Command("flaky", FlakyConfig, _flaky,
                                                          "a command that fails when odd"))


def test_run_points_runs_a_list_of_runs_resumes_and_relocates(tmp_path, flaky):
    """The runner under a sweep's grid, for a command's own grids (kairo tsc benchmark): each
    point a run in its folder, recorded with the sweep id; done points are not run again."""
    from kairo.sweep import run_points

    st = Store(tmp_path / "k.db")
    pts = [("a", {"x": 0}), ("b", {"x": 2})]
    rows = run_points("flaky", pts, tmp_path / "g", sweep="g1", store=st, workers=1)
    assert [r["status"] for r in rows] == ["done", "done"]
    assert {r.point: r.config["x"] for r in st.runs(sweep="g1")} == {"a": 0, "b": 2}
    rows = run_points("flaky", [("c", {"x": 4}), *pts], tmp_path / "g", sweep="g1", store=st,
                      workers=1)
    assert [r["status"] for r in rows] == ["done", "skipped", "skipped"]
    assert len(st.runs(sweep="g1")) == 3 and st.sweep("g1")["status"] == "done"
    # fail fast (the default): the error comes back and the grid is marked stopped
    with pytest.raises(KairoError, match="x=1 is odd"):
        run_points("flaky", [("d", {"x": 1})], tmp_path / "g", sweep="g1", store=st, workers=1)
    assert st.sweep("g1")["status"] == "stopped" and not (tmp_path / "g" / "d").exists()
    rows = run_points("flaky", [("d", {"x": 1})], tmp_path / "g", sweep="g1", store=st,
                      workers=1, fail_fast=False)
    assert rows[0]["status"] == "failed" and st.sweep("g1")["status"] == "failed"
    # the folder moved: every run and the sweep recorded under it follow
    (tmp_path / "g").rename(tmp_path / "moved")
    st.relocate(tmp_path / "g", tmp_path / "moved")
    done = st.runs(sweep="g1", status="done")
    assert sorted(r.out for r in done) == [str(tmp_path / "moved" / k) for k in "abc"]
    assert st.sweep("g1")["out"] == str(tmp_path / "moved")
    # with the store switched off the folders still say what is done
    rows = run_points("flaky", pts, tmp_path / "h", sweep="g2", store="none", workers=1)
    rows += run_points("flaky", pts, tmp_path / "h", sweep="g2", store="none", workers=1)
    assert [r["status"] for r in rows] == ["done", "done", "skipped", "skipped"]
    with pytest.raises(ConfigError, match=r"repeated: \['a'\]"):
        run_points("flaky", [pts[0], pts[0]], tmp_path / "i", sweep="g3", store=st)
    # a point's folder name: its label and a hash of its whole config
    from kairo.sweep import point_key

    assert point_key("x=1", {"x": 1}).startswith("x=1-")
    assert point_key("x=1", {"x": 1}) == point_key("x=1", {"x": 1})
    assert point_key("x=1", {"x": 1}) != point_key("x=1", {"x": 1, "y": 0})


def test_a_failing_point_is_recorded_and_the_sweep_goes_on(tmp_path, flaky):
    st = Store(tmp_path / "k.db")
    spec = spec_from_dict({"command": "flaky", "grid": {"x": [0, 1, 2, 3]}, "metric": "y",
                           "name": "flaky"})
    res = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert [p["status"] for p in res.points] == ["done", "failed", "done", "failed"]
    assert "x=1 is odd" in res.failed[0]["error"]
    failed = st.runs(sweep=spec.id, status="failed")
    assert len(failed) == 2 and all("odd" in r.error for r in failed)
    assert res.best(1)[0]["values"] == {"x": 2} and st.sweep(spec.id)["status"] == "failed"
    # a resumed sweep runs the failed points again, and only those
    res = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert [p["status"] for p in res.points] == ["skipped", "failed", "skipped", "failed"]
    with pytest.raises(KairoError, match="odd"):
        run_sweep(spec, out=tmp_path / "sw2", store=st, workers=1, fail_fast=True)
    assert not (tmp_path / "sw2" / "p002-x=2").exists()      # stopped at the first failure


def test_an_optuna_search_finds_the_minimum_and_resumes(tmp_path, flaky):
    st = Store(tmp_path / "k.db")
    spec = spec_from_dict({"command": "flaky", "name": "search", "metric": "y", "goal": "min",
                           "search": {"space": {"x": {"choices": [0, 2, 4, 6]}},
                                      "trials": 6, "sampler": "random", "seed": 1}})
    res = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert len(res.points) == 6 and {p["status"] for p in res.points} == {"done"}
    assert res.best(1)[0]["mean"] == min(p["metric"] for p in res.points)
    import shutil
    shutil.rmtree(tmp_path / "sw" / "t002")
    again = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert [p["status"] for p in again.points].count("done") == 1
    assert len(again.points) == 6 and again.points[2]["values"] == res.points[2]["values"]


def test_a_point_committed_but_not_recorded_is_finished_from_its_folder(tmp_path):
    """Killed after its folder was committed and before its record was finished: resuming
    does not run the point again; its record becomes done, with the folder's metrics."""
    st = Store(tmp_path / "k.db")
    spec = spec_from_dict(ENC)
    first = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    rid = first.points[1]["run_id"]
    want = st.get(rid).metrics
    assert want and st.get(rid).duration is not None
    # the record as a kill in that window leaves it: still running, no metrics
    with sqlite3.connect(st.path) as con:
        con.execute("UPDATE runs SET status = 'running', duration = NULL, artifacts = '[]' "
                    "WHERE id = ?", (rid,))
        con.execute("DELETE FROM metrics WHERE run = ?", (rid,))
    assert st.get(rid).status == "running" and not st.get(rid).metrics
    again = run_sweep(spec, out=tmp_path / "sw", store=st, workers=1)
    assert [p["status"] for p in again.points] == ["skipped"] * 3
    rec = st.get(rid)
    assert rec.status == "done" and rec.metrics == want and rec.duration >= 0
    assert "encodings.json" in rec.artifacts and again.points[1]["metric"] == first.points[1][
        "metric"]
    assert _done_per_point(st, spec.id) == {p.key: 1 for p in grid_points(spec)}
    # a folder whose run.json names another store's run is not this store's to finish
    other = Store(tmp_path / "other.db")
    assert other.finish_from_folder(tmp_path / "sw" / first.points[0]["key"]) is None
    assert other.finish_from_folder(tmp_path / "nowhere") is None


def _done_per_point(st, sweep_id) -> dict:
    counts: dict = {}
    for r in st.runs(sweep=sweep_id, status="done"):
        counts[r.point] = counts.get(r.point, 0) + 1
    return counts


@pytest.mark.slow
@pytest.mark.parametrize("sig, workers, example", [
    (signal.SIGKILL, 1, False), (signal.SIGINT, 2, False),
    pytest.param(signal.SIGKILL, 2, True, marks=pytest.mark.winding)])
def test_a_killed_sweep_resumes_and_no_point_runs_twice(tmp_path, sig, workers, example):
    """The driver is killed once two points are done; the same command then finishes the
    rest: every point done exactly once, nothing lost, no hidden folder left."""
    store = tmp_path / "k.db"
    # twelve points of about a second: on a loaded machine the driver still stops well
    # before the last (six were not enough there)
    spec_file = (_example(tmp_path) if example else
                 _spec(tmp_path, {**ENC, "grid": {"d": list(range(2, 26, 2))}}))
    n_points = len(grid_points(load_spec(spec_file)))
    argv = [sys.executable, "-m", "kairo.cli", "--store", str(store), "sweep", str(spec_file),
            "--out", str(tmp_path / "sw"), "--workers", str(workers)]
    # SIGINT's default action in the child even when this run ignores it (a background job
    # of a non-interactive shell): Python makes it KeyboardInterrupt only if not ignored
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if len(list((tmp_path / "sw").glob("p*/run.json"))) >= 2:
            break
        time.sleep(0.2)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    proc.wait(60)
    spec = load_spec(spec_file)
    done_before = len(list((tmp_path / "sw").glob("p*/run.json")))
    assert 2 <= done_before < n_points
    assert cli.main(["--store", str(store), "sweep", str(spec_file), "--out",
                     str(tmp_path / "sw"), "--workers", str(workers)]) == 0
    st = Store(store)
    assert _done_per_point(st, spec.id) == {p.key: 1 for p in grid_points(spec)}
    assert len(list((tmp_path / "sw").glob("p*/run.json"))) == n_points
    assert not [p for p in (tmp_path / "sw").glob(".p*") if p.is_dir()]
    assert not [r for r in st.runs(sweep=spec.id) if r.state == "running"]


@pytest.mark.slow
@pytest.mark.winding
def test_the_example_sweep_runs_on_a_local_ray_runtime(tmp_path, monkeypatch):
    pytest.importorskip("ray", reason="Ray is the [ray] extra (CI installs it)")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    st = Store(tmp_path / "k.db")
    spec = load_spec(_example(tmp_path))
    res = run_sweep(spec, out=tmp_path / "sw", store=st, workers=2, executor="ray")
    assert [p["status"] for p in res.points] == ["done"] * 4
    assert len(st.runs(sweep=spec.id, status="done")) == 4
    # the same points, locally: the same metrics (one BLAS thread per worker in both)
    local = run_sweep(spec, out=tmp_path / "sw-local", store=st, workers=2,
                      executor="processes")
    assert [p["metric"] for p in local.points] == \
        pytest.approx([p["metric"] for p in res.points], rel=1e-6)
    # a Ray address implies the Ray executor; anything else is refused
    with pytest.raises(ConfigError, match="needs --executor ray"):
        run_sweep(spec, out=tmp_path / "sw", store=st, executor="processes",
                  address="auto")


def test_the_committed_example_spec_is_valid():
    spec = load_spec(REPO / "examples" / "sweep-reservoir-alpha.yaml")
    assert spec.command == "reservoir run" and spec.metric == "nrmse"
    assert len(grid_points(spec)) == len(spec.grid["alpha"]) * len(spec.seeds)


def test_sweep_command_on_a_missing_spec(tmp_path, capsys):
    assert cli.main(["sweep", str(tmp_path / "none.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_sweep_refuses_the_store_switched_off(tmp_path):
    spec = load_spec(_spec(tmp_path, ENC))
    with pytest.raises(ConfigError, match="store switched off"):
        run_sweep(spec, out=tmp_path / "sw", store="none")
    assert os.path.exists(tmp_path / "s.yaml")
