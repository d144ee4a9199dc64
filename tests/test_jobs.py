"""``kairo._jobs.map_jobs``: results in job order from every executor, and ``on_result``
called once per job, in this process, with the job's index."""

from __future__ import annotations

import operator

import pytest

from kairo._errors import ConfigError
from kairo._jobs import map_jobs


@pytest.mark.parametrize("workers", [1, 2])       # 1: serial; 2: spawned processes
def test_results_in_job_order_and_each_reported_once(workers):
    jobs = [3, -1, 4, -1, 5, -9]
    seen = []
    out = map_jobs(operator.neg, jobs, workers=workers, progress_bar=False,
                   on_result=lambda i, r: seen.append((i, r)))
    assert out == [-j for j in jobs]
    assert sorted(seen) == [(i, -j) for i, j in enumerate(jobs)]


def test_a_failing_report_stops_the_jobs():
    def stop(i, r):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        map_jobs(operator.neg, [1, 2, 3], workers=1, progress_bar=False, on_result=stop)


def test_bad_executor_and_workers_are_refused():
    with pytest.raises(ConfigError, match="executor: expected one of"):
        map_jobs(operator.neg, [1], executor="threads")
    with pytest.raises(ConfigError, match="workers must be ≥ 0"):
        map_jobs(operator.neg, [1], workers=-1)
