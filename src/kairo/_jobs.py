"""``map_jobs``: one function over many independent jobs, in local worker processes or on a
Ray cluster, with one progress report, results in job order, and every worker stopped as soon
as one job fails (or on Ctrl-C / SIGTERM) instead of waiting for the rest; a worker whose
driver was killed outright ends by itself.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterable

from kairo._errors import ConfigError, KairoError
from kairo._progress import progress

__all__ = ["map_jobs", "resolve_executor", "EXECUTORS"]

EXECUTORS = ("auto", "processes", "ray", "serial")


def resolve_executor(executor: str, workers: int, n_jobs: int) -> tuple[str, int]:
    """(executor, workers) actually used: ``auto`` is Ray when ``$RAY_ADDRESS`` is set, else
    local processes; ``workers`` 0 is one per core; one worker or one job runs serially."""
    if executor not in EXECUTORS:
        raise ConfigError(f"executor: expected one of {', '.join(EXECUTORS)}; got {executor!r}")
    if workers < 0:
        raise ConfigError(f"workers must be ≥ 0 (0: one per core), got {workers}")
    workers = workers or os.cpu_count() or 1
    if executor == "auto":
        executor = "ray" if os.environ.get("RAY_ADDRESS") else "processes"
    if executor == "processes" and (workers == 1 or n_jobs <= 1):
        executor = "serial"
    return executor, min(workers, max(n_jobs, 1)) if executor != "ray" else workers


def map_jobs(fn: Callable, jobs: Iterable, *, workers: int = 0, executor: str = "auto",
             desc: str = "jobs", progress_bar: bool | None = None,
             address: str | None = None,
             on_result: Callable[[int, object], None] | None = None) -> list:
    """``[fn(job) for job in jobs]``, computed in parallel.

    ``address``: the Ray cluster to join (else ``$RAY_ADDRESS``; neither: a local Ray
    runtime with ``workers`` CPUs). ``on_result(i, result)`` is called in this process as
    each job finishes, in the order they finish (to save work as it is done).

    ``fn`` must be a module-level function and ``jobs`` picklable (worker processes are
    spawned, not forked: MuJoCo's GL contexts, OpenMP and torch thread pools do not survive a
    fork). A job's exception is raised here after the other workers are stopped; a worker
    killed midway (the out-of-memory killer) is a ``KairoError`` saying so.
    """
    jobs = list(jobs)
    kind, n = resolve_executor(executor, workers, len(jobs))
    bar = progress(total=len(jobs), desc=desc, enabled=progress_bar)
    n_done = 0

    def done(i, result):
        nonlocal n_done
        n_done += 1
        if on_result is not None:
            on_result(i, result)
        bar.update(1)

    try:
        if kind == "serial":
            out = []
            for i, job in enumerate(jobs):
                out.append(fn(job))
                done(i, out[-1])
            return out
        if kind == "ray":
            return _ray(fn, jobs, n, done, address or os.environ.get("RAY_ADDRESS"))
        return _processes(fn, jobs, n, done)
    except _WorkerLost as exc:
        raise KairoError(f"a worker process died ({desc}: {n_done} of {len(jobs)} finished): "
                         f"it was killed, most often by the out-of-memory killer; run fewer at "
                         f"once (--workers) or give each less to do") from exc.__cause__
    finally:
        bar.close()


class _WorkerLost(Exception):
    """A worker process died midway; its executor's own error is the cause."""


def _processes(fn, jobs: list, workers: int, done) -> list:
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool
    from multiprocessing import get_context

    results: list = [None] * len(jobs)
    pool = ProcessPoolExecutor(workers, mp_context=get_context("spawn"),
                               initializer=_exit_with_parent, initargs=(os.getpid(),))
    try:
        pending = {pool.submit(fn, job): i for i, job in enumerate(jobs)}
        while pending:
            ready, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in ready:
                i = pending.pop(fut)
                results[i] = fut.result()
                done(i, results[i])
    except BaseException as exc:
        # stop running jobs now (each may take minutes); the executor has no public call for
        # this, so its worker table is used
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        pool.shutdown(wait=False, cancel_futures=True)
        if isinstance(exc, BrokenProcessPool):
            raise _WorkerLost() from exc
        raise
    pool.shutdown()
    return results


def _exit_with_parent(parent: int, every: float = 1.0) -> None:
    """Worker initializer: end this worker once ``parent`` is gone. A driver killed outright
    (SIGKILL, the OOM killer) cannot stop its workers, and a spawned worker never sees its
    queue close (it holds both ends of the pipe), so it would wait for work forever."""
    def watch():
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)
    threading.Thread(target=watch, name="kairo-parent-watch", daemon=True).start()


def _ray(fn, jobs: list, workers: int, done, address: str | None) -> list:
    try:
        import ray
    except ImportError as exc:
        raise KairoError("executor 'ray' needs Ray: pip install 'kairo-circuits[ray]'") from exc
    started = not ray.is_initialized()
    if started:
        # ray.init replaces the process's SIGTERM handler with its own sys.exit and never
        # restores it: put back the caller's (the CLI unwinds results folders on SIGTERM)
        main = threading.current_thread() is threading.main_thread()
        term = signal.getsignal(signal.SIGTERM) if main else None
        try:
            ray.init(address=address, num_cpus=None if address else workers,
                     include_dashboard=False, log_to_driver=False)
        finally:
            if main and term is not None:
                signal.signal(signal.SIGTERM, term)
    try:
        remote = ray.remote(num_cpus=1)(fn)
        refs = [remote.remote(job) for job in jobs]
        index = {ref: i for i, ref in enumerate(refs)}
        results: list = [None] * len(jobs)
        pending = list(refs)
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                i = index[ready[0]]
                results[i] = ray.get(ready[0])
                done(i, results[i])
        except BaseException as exc:
            for ref in pending:
                ray.cancel(ref, force=True)
            # a worker killed (the OOM killer, Ray's memory monitor) once Ray's retries are spent
            if isinstance(exc, (ray.exceptions.WorkerCrashedError,
                                ray.exceptions.OutOfMemoryError)):
                raise _WorkerLost() from exc
            raise
        return results
    finally:
        if started:
            ray.shutdown()
