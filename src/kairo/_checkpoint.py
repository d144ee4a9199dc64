"""Checkpoints of the trainers (logic-gate networks, time-series classifiers): one format tag,
atomic saves, ``weights_only`` loads (a checkpoint never runs code) and one compatibility
check, so both families resume — and refuse — the same way."""

from __future__ import annotations

from pathlib import Path

from kairo._errors import DataError, DataNotFoundError
from kairo._io import atomic_write

__all__ = ["save_checkpoint", "load_checkpoint", "check_compatible", "settings_diff"]


def save_checkpoint(path, state: dict, *, kind: str) -> None:
    """Write ``state`` (tensors and plain values) tagged ``format=kind`` to ``path``
    atomically: a kill mid-write leaves the previous checkpoint, never a truncated one."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: torch.save({**state, "format": kind}, tmp))


def load_checkpoint(path, *, kind: str, what: str = "checkpoint") -> dict:
    """Read a file written by :func:`save_checkpoint` with ``format=kind``; errors name the
    file and say why it cannot be read."""
    import torch

    path = Path(path)
    if not path.is_file():
        raise DataNotFoundError(f"{what} {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
        # torch's own message suggests weights_only=False, i.e. running the file's code: kept out
        msg = str(exc)
        detail = ("it holds Python objects other than tensors and plain values, which kairo "
                  "does not unpickle" if "Weights only load failed" in msg
                  else f"{type(exc).__name__}: {msg.split('. ')[0][:200]}")
        raise DataError(f"{what} {path}: cannot be read safely — corrupt, truncated or not a "
                        f"kairo file ({detail})") from None
    if not isinstance(state, dict) or state.get("format") != kind:
        raise DataError(f"{what} {path}: not a {kind} file")
    return state


def settings_diff(saved: dict, now: dict) -> dict:
    """{key: (saved, now)} for every key whose value differs (missing counts as None)."""
    keys = sorted(set(saved) | set(now))
    return {k: (saved.get(k), now.get(k)) for k in keys if saved.get(k) != now.get(k)}


def check_compatible(saved: dict, now: dict, path, *, what: str = "checkpoint",
                     hint: str = "") -> None:
    """Refuse to resume from ``path`` when the settings it was saved with (``saved``) differ
    from this run's (``now``); the error lists each difference as (saved, now)."""
    diff = settings_diff(saved, now)
    if diff:
        raise DataError(f"{what} {path} was saved by a run with other settings (saved vs now: "
                        f"{diff}){'; ' + hint if hint else ''}")
