"""The application layer: every command is a :class:`~kairo._command.Command` declared as
data by its family.

A command is a frozen config class (help, choices and bounds on its fields, see
:func:`~kairo._config.option`) and a function ``run(cfg, rd) -> summary`` that computes
through the family's public API and writes through the :class:`~kairo._results.ResultsDir` it
is handed. The CLI, the demo and the tests iterate the registry (:func:`commands`);
:func:`execute` is the one path every run takes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from kairo._command import Command
from kairo._errors import ConfigError

__all__ = ["commands", "get_command", "make_config", "execute", "Outcome", "FAMILIES"]

log = logging.getLogger(__name__)

# the modules whose ``COMMANDS`` list makes up the registry, in the order ``kairo --help``
# shows them; each is torch-free at import (heavy modules are imported inside ``run``)
FAMILIES = ("kairo.reservoir._commands", "kairo.fly._commands", "kairo.logic._commands",
            "kairo.tsc._commands", "kairo.data._commands", "kairo.runs._commands",
            "kairo.report._commands", "kairo.sweep._commands", "kairo.demo")


_REGISTRY: dict[str, Command] | None = None


def commands() -> dict[str, Command]:
    """Every registered command by name (``"reservoir run"``, ``"tsc train"``, …)."""
    global _REGISTRY
    if _REGISTRY is None:
        reg: dict[str, Command] = {}
        for mod in FAMILIES:
            for c in importlib.import_module(mod).COMMANDS:
                if c.name in reg:
                    raise RuntimeError(f"command {c.name!r} registered twice")
                reg[c.name] = c
        _REGISTRY = reg
    return _REGISTRY


def get_command(name: str) -> Command:
    try:
        return commands()[name]
    except KeyError:
        raise ConfigError(f"unknown command {name!r}; commands: "
                          f"{', '.join(commands())}") from None


def make_config(command: Command | str, file_values: dict | None = None,
                flag_values: dict | None = None, *, source: str = "config",
                data_dir=None):
    """The command's config from file values < flags; a ``data_dir`` field is resolved to the
    folder actually read (``data_dir`` argument, else ``$KAIRO_DATA_DIR``, else the cache)."""
    from kairo._config import build_config

    cmd = get_command(command) if isinstance(command, str) else command
    cfg = build_config(cmd.config, file_values, flag_values, source=source)
    if any(f.name == "data_dir" for f in dataclasses.fields(cfg)):
        from kairo.data import data_dir as resolve

        cfg = dataclasses.replace(cfg, data_dir=str(resolve(cfg.data_dir or data_dir)))
    return cfg


@dataclass(frozen=True)
class Outcome:
    """What a run left: its summary text, its results folder (None without one) and its id
    in the results store (None when not recorded)."""

    summary: str
    out: Path | None
    run_id: int | None = None


def execute(command: Command | str, cfg, *, out=None, overwrite: bool = False,
            store="default", sweep: str | None = None, point: str | None = None) -> Outcome:
    """Run ``command`` on ``cfg``: the results folder (``out``, default
    ``results/<command>-<time>``) appears only when the run succeeds, with config.yaml and a
    run.json that records the seed, the resolved values and the SHA-256 of every input.

    The run is recorded in the results store (``store``: a path, a
    :class:`~kairo.runs.Store`, ``"none"``, or by default ``$KAIRO_STORE`` else
    ``results/kairo.db``): running, then done or failed with its error, duration, metrics and
    files; ``sweep``/``point`` tag a sweep's runs. Runs started inside this one (the demo's
    steps, in this process or its workers) are recorded as its children."""
    import sys
    import time

    from kairo._results import ResultsDir, default_out, environment
    from kairo.runs import open_store

    cmd = get_command(command) if isinstance(command, str) else command
    if not isinstance(cfg, cmd.config):
        raise TypeError(f"{cmd.name} takes a {cmd.config.__name__}, got {type(cfg).__name__}")
    store = open_store(None if store == "default" else store) if cmd.record else None
    if store is not None:
        store.check()              # a corrupt or foreign store is refused before anything runs
    if cmd.folder:
        out = Path(out or cmd.default_out or default_out(cmd.name))
        rd = ResultsDir(out, command=cmd.name, config=cfg, overwrite=overwrite)
    run_id = None
    if store is not None:
        env = environment()
        run_id = store.start_run(
            cmd.name, _config_dict(cfg), out=out.absolute() if cmd.folder else None,
            seed=getattr(cfg, "seed", None), versions={"python": env["python"],
                                                      **env["packages"]},
            machine={k: env[k] for k in ("platform", "machine", "cpu", "cpu_count",
                                         "loadavg")},
            argv=sys.argv, parent=_parent_run(store), sweep=sweep, point=point)
        if cmd.folder:
            rd.store_record = {"path": str(store.path), "id": run_id}
    t0 = time.perf_counter()
    tmp = None
    try:
        with _inside(cmd, store, run_id):
            if not cmd.folder:
                text = cmd.run(cfg, None)
            else:
                with rd:
                    tmp = rd.path
                    text = cmd.run(cfg, rd)
                    # after the run: a file it downloaded is there now, and what it read is
                    # what is hashed
                    for label, path in (cmd.inputs(cfg) if cmd.inputs else {}).items():
                        rd.record_input(label, path)
    except BaseException as exc:
        if run_id is not None:
            _record_end(store, run_id, status="failed", duration=time.perf_counter() - t0,
                        error=f"{type(exc).__name__}: {exc}")
            if tmp is not None:
                _quietly(store.orphan_children, run_id, tmp)
        raise
    if run_id is not None:
        if cmd.folder:
            _record_end(store, run_id, status="done", duration=time.perf_counter() - t0,
                        metrics=rd.metrics, artifacts=rd.files, data=rd.data_files)
            _quietly(store.relocate_children, run_id, tmp, out.absolute())
            if rd.moved_points:
                _quietly(store.relocate, *rd.moved_points)
        else:
            output = getattr(cfg, "output", "")
            _record_end(store, run_id, status="done", duration=time.perf_counter() - t0,
                        artifacts=[str(Path(output).absolute())] if output else [])
    return Outcome(text, out if cmd.folder else None, run_id)


@contextlib.contextmanager
def _inside(cmd: Command, store, run_id: int | None):
    """While a run runs, the runs it starts (the demo's steps, also in spawned worker
    processes, which inherit the environment) record into its store, as its children."""
    saved = {k: os.environ.get(k) for k in ("KAIRO_STORE", "KAIRO_PARENT_RUN")}
    if cmd.record:
        os.environ["KAIRO_STORE"] = str(store.path) if store is not None else "none"
    if run_id is not None:
        os.environ["KAIRO_PARENT_RUN"] = f"{run_id}@{store.path}"
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _parent_run(store) -> int | None:
    """The run this one was started inside (``$KAIRO_PARENT_RUN``, set by ``execute`` as
    ``id@store``), when it records into the same store."""
    run, _, path = os.environ.get("KAIRO_PARENT_RUN", "").partition("@")
    return int(run) if run.isdigit() and path == str(store.path) else None


def _config_dict(cfg) -> dict:
    from kairo._config import config_to_dict

    return config_to_dict(cfg)


def _quietly(fn, *args) -> None:
    """A store write after the run: its results are on disk whatever happens to the record."""
    from kairo.runs import StoreError

    try:
        fn(*args)
    except StoreError as exc:
        log.warning("%s", exc)


def _record_end(store, run_id: int, **kw) -> None:
    _quietly(lambda: store.finish_run(run_id, **kw))
