"""The :class:`Command` a family declares in its ``COMMANDS`` list: a command as data, read
by the registry and :func:`~kairo._app.execute`. A leaf, so a family declares its commands
without importing the registry that gathers them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Command"]


@dataclass(frozen=True)
class Command:
    """One command: ``kairo <name>`` builds ``config`` from flags and files and calls
    ``run(cfg, rd)``, which returns the summary printed at the end.

    folder: the command writes a results folder (``--out``; ``rd`` is a ResultsDir). Without
        one ``rd`` is None and the command writes at most the single file its config names
        (``output``, obeying its ``overwrite`` field) or nothing.
    inputs: ``inputs(cfg) -> {label: path}``, the data files whose SHA-256 goes into run.json.
    default_out: the results folder when none is given (else ``results/<command>-<time>``).
    record: the run is recorded in the results store (queries of the store itself, and
        commands that only print where things are, are not).
    headline: the recorded metrics (flattened names) that sum a run up, in the order a
        report lists them; a run without them is summed up by its first numbers.
    """

    name: str
    config: type
    run: Callable
    help: str
    description: str = ""
    inputs: Callable | None = None
    folder: bool = True
    default_out: str = ""
    record: bool = True
    headline: tuple[str, ...] = ()

    def __post_init__(self):
        if self.inputs is not None and not self.folder:
            raise ValueError(f"{self.name}: inputs are recorded in a results folder; a command "
                             f"without one (folder=False) has nowhere to record them")
