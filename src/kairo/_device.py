"""The torch device a run computes on, resolved the same way by every family."""

from __future__ import annotations

from kairo._errors import ConfigError

__all__ = ["resolve_device", "DEVICES"]

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(name: str) -> str:
    """``"auto"``: CUDA when torch sees a device, else the CPU; ``"cuda"`` without one is
    refused with a message (not torch's RuntimeError from deep inside a run)."""
    import torch

    if name not in DEVICES:
        raise ConfigError(f"device: expected one of {', '.join(DEVICES)}; got {name!r}")
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device is 'cuda' but torch sees no CUDA device; use 'cpu' or "
                          "'auto'")
    return name
