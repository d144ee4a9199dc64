"""``kairo._jobs.map_jobs``: results in job order from every executor, ``on_result`` called
once per job, in this process, with the job's index; workers that outlive a killed driver end,
and a worker killed midway is a one-sentence error."""

from __future__ import annotations

import operator
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kairo import ConfigError, KairoError
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


def _state(pid: int) -> str | None:
    """The process's state letter from /proc (None: gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def _workers_of(pid: int) -> list[int]:
    """Spawned multiprocessing workers whose parent is ``pid``."""
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int(d.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
            cmd = d.joinpath("cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == pid and b"spawn_main" in cmd:
            found.append(int(d.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_end_when_their_driver_is_killed():
    """A driver killed outright (SIGKILL, the OOM killer) cannot stop its workers: they must
    notice and end instead of waiting for work forever."""
    driver = subprocess.Popen([sys.executable, "-c",
                               "import time\nfrom kairo._jobs import map_jobs\n"
                               "map_jobs(time.sleep, [300, 300], workers=2, "
                               "executor='processes', progress_bar=False)"])
    workers: list[int] = []
    try:
        deadline = time.time() + 120
        while len(workers) < 2 and time.time() < deadline and driver.poll() is None:
            time.sleep(0.2)
            workers = _workers_of(driver.pid)
        assert len(workers) == 2, "the driver did not start two workers"
        driver.kill()
        driver.wait(30)
        deadline = time.time() + 30
        while time.time() < deadline and \
                any(_state(w) not in (None, "Z", "X") for w in workers):
            time.sleep(0.2)
        assert all(_state(w) in (None, "Z", "X") for w in workers)
    finally:
        driver.kill()
        for w in workers:
            if _state(w) not in (None, "Z", "X"):
                os.kill(w, signal.SIGKILL)


def test_a_worker_killed_midway_is_named_not_a_broken_pool():
    # what the out-of-memory killer does to a worker; the driver must say so in one sentence
    with pytest.raises(KairoError, match=r"a worker process died \(trials: 0 of 2 "
                                         r"finished\).*out-of-memory.*--workers"):
        map_jobs(signal.raise_signal, [signal.SIGKILL, signal.SIGKILL], workers=2,
                 executor="processes", desc="trials", progress_bar=False)


@pytest.mark.slow
def test_a_ray_worker_killed_midway_is_named_too(monkeypatch):
    pytest.importorskip("ray", reason="Ray is the [ray] extra (CI installs it)")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(KairoError, match=r"a worker process died \(trials: 0 of 1 finished\)"):
        # Ray wraps only Python functions; a lambda travels by value (cloudpickle)
        map_jobs(lambda sig: os.kill(os.getpid(), sig), [signal.SIGKILL], workers=1,
                 executor="ray", desc="trials", progress_bar=False)
