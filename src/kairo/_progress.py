"""Progress of long work: a tqdm bar on a terminal, and a line through ``logging`` every few
seconds when stderr is not a terminal (a run writing into a log file still shows it is alive).
"""

from __future__ import annotations

import logging
import os
import sys
import time

from tqdm.auto import tqdm

__all__ = ["progress", "LOG_EVERY_S"]

log = logging.getLogger("kairo.progress")

LOG_EVERY_S = 10.0


class _LogProgress:
    """The slice of tqdm's interface kairo uses, reporting through ``logging``."""

    def __init__(self, iterable, total, desc: str, every: float):
        self.iterable = iterable
        self.total = total if total is not None else (
            len(iterable) if hasattr(iterable, "__len__") else None)
        self.desc = desc or "progress"
        self.every = every
        self.n = 0
        self.postfix = ""
        self.t0 = self._last = time.monotonic()

    def __iter__(self):
        for item in self.iterable:
            yield item
            self.update(1)
        self.close()

    def update(self, k: int = 1) -> None:
        self.n += k
        now = time.monotonic()
        if now - self._last >= self.every:
            self._last = now
            self._emit(now)

    def set_postfix(self, refresh: bool = True, **kw) -> None:
        # tqdm's signature; refresh means nothing to a log line
        self.postfix = ", ".join(f"{k}={v}" for k, v in kw.items())

    def _emit(self, now: float) -> None:
        done = f"{self.n}/{self.total}" if self.total else str(self.n)
        eta = ""
        if self.total and self.n:
            eta = f", about {(now - self.t0) / self.n * (self.total - self.n):.0f} s left"
        log.info("%s: %s after %.0f s%s%s", self.desc, done, now - self.t0, eta,
                 f" ({self.postfix})" if self.postfix else "")

    def close(self) -> None:
        pass


def progress(iterable=None, *, total=None, desc: str = "", enabled: bool | None = None,
             **kw):
    """Wrap ``iterable`` (or count ``update`` calls) with progress reporting.

    ``enabled=None``: a bar when stderr is a terminal, else a log line every
    :data:`LOG_EVERY_S` seconds on the ``kairo.progress`` logger; ``enabled=False`` (or
    ``$KAIRO_PROGRESS=0``) reports nothing; ``True`` (or ``$KAIRO_PROGRESS=1``) forces the bar.
    """
    env = os.environ.get("KAIRO_PROGRESS")
    if env is not None:
        enabled = env not in ("0", "", "false")
    if enabled is None and not sys.stderr.isatty():
        return _LogProgress(iterable, total, desc, LOG_EVERY_S)
    return tqdm(iterable, total=total, desc=desc, disable=not enabled if enabled is not None
                else None, leave=False, dynamic_ncols=True, **kw)
