"""The house utilities for writing results, public for benchmarks and scripts: the run's
environment record (:func:`environment`, :func:`cpu_model`, :func:`cpu_flags`), atomic writes
of a file or a whole folder (:func:`atomic_write`, :func:`atomic_write_text`,
:func:`atomic_path`, :func:`atomic_folder`), the :class:`ResultsDir` every command writes
through, and :func:`file_sha256`. These are the objects of :mod:`kairo._results` and
:mod:`kairo._io`, re-exported so code outside the package has a public import path.
"""

from kairo._io import (atomic_folder, atomic_path, atomic_write, atomic_write_text,
                       file_sha256, jsonable)
from kairo._results import ResultsDir, cpu_flags, cpu_model, default_out, environment

__all__ = ["ResultsDir", "environment", "cpu_model", "cpu_flags", "default_out", "atomic_write",
           "atomic_write_text", "atomic_path", "atomic_folder", "jsonable", "file_sha256"]
