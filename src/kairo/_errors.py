"""Exceptions kairo raises for bad input.

Every error is a sentence that says what arrived, what was expected and, where it helps,
how to fix it. They subclass ``ValueError`` so callers that catch the generic type still work.
"""

from __future__ import annotations

__all__ = ["KairoError", "DataError", "ChecksumError", "DataNotFoundError", "ConfigError",
           "SelectionError"]


class KairoError(ValueError):
    """Base class of the errors a user fixes: bad input, or a limit of the machine such as a
    worker process killed for memory (the CLI prints these without a traceback)."""


class DataError(KairoError):
    """A data file is malformed: wrong shape, bad values, unexpected archive layout."""


class ChecksumError(DataError):
    """A data file's checksum differs from the one kairo knows."""


class DataNotFoundError(DataError, FileNotFoundError):
    """A data file is missing and could not be downloaded."""


class ConfigError(KairoError):
    """A configuration file or option is invalid."""


class SelectionError(KairoError):
    """A neuron selection names an unknown value or selects nothing."""
