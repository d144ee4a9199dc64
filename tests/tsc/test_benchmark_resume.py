"""A stopped ``kairo tsc benchmark`` / ``compare-pooling`` resumes: every finished run is kept
in ``<out>.checkpoint.pt`` as it finishes, the same command runs only what is missing, and the
results equal an uninterrupted run's."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from kairo import DataError
from kairo.tsc import _grid
from kairo.tsc._grid import run_grid
from kairo.cli import main

CALLS: list = []


def _row(job):
    CALLS.append(job["seed"])
    return {"dataset": job["dataset"], "seed": job["seed"], "x": job.get("x", 0),
            "proba": np.arange(3.0) * job["seed"]}


def _jobs(seeds, x=0):
    return [{"dataset": "ItalyPowerDemand", "mnist1d_length": 40, "seed": s, "x": x}
            for s in seeds]


def test_the_journal_keeps_rows_and_skips_the_jobs_it_holds(tmp_path, caplog):
    journal = tmp_path / "out.checkpoint.pt"
    CALLS.clear()
    first = run_grid(_jobs([0, 1]), workers=1, run=_row, journal=journal)
    assert CALLS == [0, 1] and journal.is_file()
    CALLS.clear()
    with caplog.at_level(logging.INFO, logger="kairo.progress"):
        rows = run_grid(_jobs([3, 1, 0, 2]), workers=1, run=_row, journal=journal)
    assert CALLS == [3, 2]                               # 0 and 1 came from the journal
    # said where the command line shows it without -v
    assert "2 of 4 runs already done, 2 to run" in caplog.text
    assert list(rows.seed) == [3, 1, 0, 2]               # in job order
    assert np.array_equal(rows.proba[1], first.proba[1])  # arrays kept as they were
    # a job that differs in any setting is another job
    CALLS.clear()
    run_grid(_jobs([0], x=1), workers=1, run=_row, journal=journal)
    assert CALLS == [0]


def test_a_broken_journal_is_named(tmp_path):
    journal = tmp_path / "out.checkpoint.pt"
    journal.write_bytes(b"not a pickle")
    with pytest.raises(DataError, match="journal of finished runs .*out.checkpoint.pt: cannot "
                                        "be read safely"):
        run_grid(_jobs([0]), workers=1, run=_row, journal=journal)


TINY = ["--datasets", "ItalyPowerDemand", "--encoders", "resnet", "--pools", "mean",
        "--time-warps", "0,0.2", "--select", "cv", "--folds", "2", "--seeds", "1", "--epochs", "2",
        "--d-model", "8", "--blocks", "1", "--workers", "1", "--peers", ""]


def test_a_stopped_benchmark_resumes_where_it_was(tmp_path, monkeypatch):
    real = _grid._one
    ran, stop = [], [2]

    def one(job):          # the same function both times: the journal's keys name it
        if len(ran) == stop[0]:
            raise KeyboardInterrupt
        ran.append(job)
        return real(job)

    monkeypatch.setattr(_grid, "_one", one)
    out = tmp_path / "b"
    assert main(["tsc", "benchmark", *TINY, "--out", str(out)]) == 130
    journal = tmp_path / "b.checkpoint.pt"
    assert not out.exists() and journal.is_file()        # no half-written folder
    ran.clear()
    stop[0] = None
    assert main(["tsc", "benchmark", *TINY, "--out", str(out)]) == 0
    assert len(ran) == 3                   # 4 folds (2 candidates × 2) + 1 refit, 2 kept
    assert not journal.exists()            # deleted once the folder is committed

    # the same as a run that was never stopped
    whole = tmp_path / "whole"
    assert main(["tsc", "benchmark", *TINY, "--out", str(whole)]) == 0
    timings = ["seconds", "fit_seconds"]
    for name in ("cv_runs.csv", "refit_runs.csv"):
        pd.testing.assert_frame_equal(pd.read_csv(out / name).drop(columns=timings),
                                      pd.read_csv(whole / name).drop(columns=timings))
    assert (pd.read_csv(out / "selection.csv").equals(pd.read_csv(whole / "selection.csv")))
