"""Names of a package imported on first use, so that ``import kairo.<family>`` (and the CLI,
which builds configs before any work) does not load torch, numba or MuJoCo.

Each family's ``__init__`` lists where its public names live and takes its module-level
``__getattr__`` and ``__dir__`` from :func:`lazy_exports` (PEP 562).
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["lazy_exports"]


def lazy_exports(package: str, where: dict):
    """``(__getattr__, __dir__)`` for ``package`` (its ``__name__``): ``where`` maps a public
    name to the module it lives in (``"._train"``, relative to the package, or an absolute
    name), or to ``(module, name there)`` when it is exported under another name. A name is
    imported once, then kept in the package's namespace."""
    def __getattr__(name: str):
        target = where.get(name)
        if target is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = target if isinstance(target, tuple) else (target, name)
        value = getattr(importlib.import_module(module, package), attr)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__():
        public = {n for n in vars(sys.modules[package]) if not n.startswith("_")}
        return sorted(public | set(where))

    return __getattr__, __dir__
