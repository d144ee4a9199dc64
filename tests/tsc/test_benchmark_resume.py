"""A stopped ``kairo tsc benchmark`` / ``compare-pooling`` resumes: every run of its grid is a
``kairo tsc train`` run in its own folder under ``<out>.runs/`` (recorded in the results store
as one of the grid's runs), the same command runs only the missing ones, and the results
equal an uninterrupted run's; once the folder is committed the runs move into it."""

from __future__ import annotations

import pandas as pd

from kairo import _app
from kairo.cli import main
from kairo.runs import open_store

TINY = ["--datasets", "ItalyPowerDemand", "--encoders", "resnet", "--pools", "mean",
        "--time-warps", "0,0.2", "--select", "cv", "--folds", "2", "--seeds", "1", "--epochs", "2",
        "--d-model", "8", "--blocks", "1", "--workers", "1", "--peers", ""]


def test_a_stopped_benchmark_resumes_where_it_was(tmp_path, monkeypatch):
    real = _app.execute
    ran, stop = [], [2]

    def execute(command, cfg, **kw):           # the grid's runs, in this process (--workers 1)
        if command == "tsc train":
            if len(ran) == stop[0]:
                raise KeyboardInterrupt
            ran.append(kw["point"])
        return real(command, cfg, **kw)

    monkeypatch.setattr(_app, "execute", execute)
    out = tmp_path / "b"
    assert main(["tsc", "benchmark", *TINY, "--out", str(out)]) == 130
    kept = tmp_path / "b.runs"
    assert not out.exists()                                # no half-written folder
    assert sorted(p.name for p in kept.iterdir() if (p / "run.json").is_file()) == sorted(ran)
    first = list(ran)
    ran.clear()
    stop[0] = None
    assert main(["tsc", "benchmark", *TINY, "--out", str(out)]) == 0
    assert len(ran) == 3                   # 4 folds (2 candidates × 2) + 1 refit, 2 kept
    assert not set(ran) & set(first)
    assert not kept.exists()               # moved into the committed folder
    runs = pd.concat([pd.read_csv(out / n) for n in ("cv_runs.csv", "refit_runs.csv")])
    assert sorted(runs.run) == sorted(first + ran)
    assert all((out / "runs" / k / "run.json").is_file() for k in runs.run)
    assert not (out / "runs" / runs.run.iloc[0] / "model.pt").exists()   # no model kept

    # each run is in the store, under its folder's final place, as one of the grid's runs
    store = open_store()
    recs = {r.point: r for r in store.runs() if r.command == "tsc train"
            and str(tmp_path) in (r.out or "")}
    assert set(recs) == set(runs.run)
    assert {r.out for r in recs.values()} == {str((out / "runs" / k).absolute())
                                              for k in runs.run}
    assert len({r.sweep for r in recs.values()}) == 1 and all(
        r.status == "done" for r in recs.values())

    # the same as a run that was never stopped: the same runs (their keys hash their
    # settings), the same numbers
    whole = tmp_path / "whole"
    assert main(["tsc", "benchmark", *TINY, "--out", str(whole)]) == 0
    timings = ["seconds", "fit_seconds"]
    for name in ("cv_runs.csv", "refit_runs.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name).drop(columns=timings),
                                      pd.read_csv(whole / name).drop(columns=timings))
    assert (pd.read_csv(out / "selection.csv").equals(pd.read_csv(whole / "selection.csv")))

    # changed settings are other runs: nothing of the stopped grid is taken for them
    ran.clear()
    (tmp_path / "c.runs").mkdir()
    for k in runs.run:
        (out / "runs" / k).rename(tmp_path / "c.runs" / k)
    assert main(["tsc", "benchmark", *TINY, "--epochs", "3", "--out", str(tmp_path / "c")]) == 0
    assert len(ran) == 5
