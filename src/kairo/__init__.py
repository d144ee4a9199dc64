"""kairo (回路, "circuit"): computing with circuits — connectome reservoirs first."""

from kairo._errors import (ChecksumError, ConfigError, DataError, DataNotFoundError,
                           KairoError, SelectionError)

__version__ = "0.1.0"

__all__ = ["__version__", "KairoError", "DataError", "ChecksumError", "DataNotFoundError",
           "ConfigError", "SelectionError"]
