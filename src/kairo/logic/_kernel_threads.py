"""Threads for the fused logic layers' loops (:mod:`kairo.logic._kernel_loops`).

The loops are serial numba functions that release the GIL. :func:`_parallel` hands their
parts to as many threads as torch uses, the caller included, which take parts from a shared
counter: a thread the OS does not schedule in time takes no part and leaves its share to the
others. (numba's ``parallel=True`` would bring a second OpenMP runtime beside torch's, whose
spinning workers fight torch's for shared cores.) During training :func:`training_threads`
also runs torch single-threaded: all it has left are tiny ops whose OpenMP barriers dominate
on a loaded machine. Results never depend on which thread ran a part, so training is
reproducible.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

__all__ = ["set_num_threads", "training_threads"]

_POOL: list = []                     # [(n_workers, ThreadPoolExecutor)], grown on demand
_THREADS = [0]                       # 0: as many as torch uses


def set_num_threads(n: int) -> None:
    """Threads for the fused loops (0: follow ``torch.get_num_threads()``)."""
    _THREADS[0] = max(0, int(n))


def _n_threads() -> int:
    return max(1, _THREADS[0] or torch.get_num_threads())


@contextlib.contextmanager
def training_threads():
    """Inside: torch runs single-threaded and the fused loops take torch's threads.

    With the fused layers torch is left only tiny ops (softmax of the logits, Adam), whose
    OpenMP barriers would dominate a step when the cores are shared. Restored on exit.
    """
    n, old = torch.get_num_threads(), _THREADS[0]
    _THREADS[0] = old or n
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)
        _THREADS[0] = old


def _executor(n_workers: int) -> ThreadPoolExecutor:
    if not _POOL or _POOL[0][0] < n_workers:
        if _POOL:
            _POOL.pop()[1].shutdown(wait=False)
        _POOL.append((n_workers, ThreadPoolExecutor(n_workers,
                                                    thread_name_prefix="kairo-logic")))
    return _POOL[0][1]


def _parallel(kernel, edges: np.ndarray, *args) -> None:
    """kernel(part, edges[part], edges[part + 1], *args) for every part, on shared threads.

    The caller works too and returns once every part is done; a worker that starts late
    finds no part left and returns at once.
    """
    n_parts = len(edges) - 1
    n_threads = min(_n_threads(), n_parts)
    if n_threads <= 1:
        for p in range(n_parts):
            kernel(p, edges[p], edges[p + 1], *args)
        return
    parts = itertools.count()                  # next() is atomic under the GIL
    done = threading.Semaphore(0)
    errors: list = []

    def work():
        while (p := next(parts)) < n_parts:
            try:
                kernel(p, edges[p], edges[p + 1], *args)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)
            finally:
                done.release()

    ex = _executor(n_threads - 1)
    for _ in range(n_threads - 1):
        ex.submit(work)
    work()
    for _ in range(n_parts):
        done.acquire()
    if errors:
        raise errors[0]
