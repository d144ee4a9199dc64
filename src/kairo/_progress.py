"""Progress bars (tqdm on stderr; silent when stderr is not a terminal unless forced)."""

from __future__ import annotations

import os

from tqdm.auto import tqdm

__all__ = ["progress"]


def progress(iterable=None, *, total=None, desc: str = "", enabled: bool | None = None, **kw):
    """Wrap ``iterable`` in a tqdm bar. ``enabled=None`` shows it on a TTY or when
    ``$KAIRO_PROGRESS=1``; ``$KAIRO_PROGRESS=0`` always hides it."""
    env = os.environ.get("KAIRO_PROGRESS")
    if env is not None:
        enabled = env not in ("0", "", "false")
    disable = None if enabled is None else not enabled
    return tqdm(iterable, total=total, desc=desc, disable=disable, leave=False,
                dynamic_ncols=True, **kw)
