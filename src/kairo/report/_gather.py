"""The runs a report shows, as :class:`RunView`: from the results store (a selection, with
the runs started inside each) or read from results folders (a demo folder whose store is gone
or was switched off)."""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from kairo._errors import KairoError
from kairo.runs import read_results

__all__ = ["RunView", "select_runs", "demo_runs", "view_of_record", "view_of_folder"]



@dataclass
class RunView:
    """One run as the report shows it. ``key`` names its page (``runs/<key>/``): the store id,
    or the folder's name for a run read from its folder. ``files`` are relative to
    ``folder`` (absolute for the single file a folder-less command wrote)."""

    key: str
    command: str
    status: str = "done"
    config: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    folder: Path | None = None
    out: str | None = None
    files: list[str] = field(default_factory=list)
    id: int | None = None
    seed: int | None = None
    started: str = ""
    duration: float | None = None
    error: str | None = None
    parent: str | None = None
    sweep: str | None = None
    point: str | None = None
    children: list[str] = field(default_factory=list)

    @property
    def family(self) -> str:
        return self.command.split()[0] if self.command else ""

    @property
    def title(self) -> str:
        return f"run {self.id}" if self.id is not None else self.key


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(text)).strip(".") or "run"


def view_of_record(rec) -> RunView:
    """A :class:`~kairo.runs.RunRecord` as a view; its folder's files are those the store
    lists (or, for a record without a list, what the folder holds)."""
    folder = rec.folder
    files = list(rec.artifacts)
    if not files and folder is not None:
        files = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    return RunView(key=str(rec.id), id=rec.id, command=rec.command, status=rec.state,
                   config=dict(rec.config), metrics=dict(rec.metrics), folder=folder,
                   out=rec.out, files=files, seed=rec.seed, started=rec.started,
                   duration=rec.duration, error=rec.error,
                   parent=None if rec.parent is None else str(rec.parent), sweep=rec.sweep,
                   point=rec.point)


def _read_run_json(folder: Path) -> dict:
    try:
        run = json.loads((folder / "run.json").read_text())
    except FileNotFoundError:
        raise KairoError(f"{folder} is not a kairo results folder: it has no run.json") \
            from None
    except (OSError, ValueError) as exc:
        raise KairoError(f"{folder / 'run.json'}: cannot read it ({exc})") from None
    if not isinstance(run, dict) or not str(run.get("command", "")).startswith("kairo "):
        raise KairoError(f"{folder / 'run.json'}: expected a kairo run record with a "
                         f"'command' like 'kairo reservoir run'")
    return run


def _seconds(run: dict) -> float | None:
    try:
        t0 = _dt.datetime.fromisoformat(run["started"])
        t1 = _dt.datetime.fromisoformat(run["finished"])
    except (KeyError, TypeError, ValueError):
        return None
    return (t1 - t0).total_seconds()


def view_of_folder(folder, key: str | None = None, parent: str | None = None) -> RunView:
    """A results folder read from its run.json and results JSON (no store needed)."""
    folder = Path(folder).absolute()
    run = _read_run_json(folder)
    files = [f for f in run.get("files", []) if (folder / f).is_file()]
    seed = run.get("seed")
    return RunView(key=_slug(key or folder.name), command=run["command"][len("kairo "):],
                   config=run.get("config") or {}, metrics=read_results(folder, files),
                   folder=folder, out=str(folder), files=files,
                   seed=seed if isinstance(seed, int) else None,
                   started=run.get("started", ""), duration=_seconds(run), parent=parent)


def link_children(views: list[RunView]) -> list[RunView]:
    """Fill each view's ``children`` with the keys of the views started inside it (those
    outside the selection are not linked); returns ``views``."""
    by_key = {v.key: v for v in views}
    for v in views:
        v.children = []
    for v in views:
        if v.parent in by_key:
            by_key[v.parent].children.append(v.key)
    return views


def select_runs(store, ids=(), *, command: str = "", where: str = "", since: str = "",
                sweep: str = "", status: str = "") -> list:
    """Runs of ``store`` (:class:`~kairo.runs.RunRecord`, oldest first): ``ids`` (each must
    exist) and/or the filters of :meth:`~kairo.runs.Store.runs`, with every run started
    inside a selected one (a demo's steps); nothing given selects every run. An empty
    selection is an error naming the store."""
    ids = [int(i) for i in dict.fromkeys(ids)]
    for i in ids:
        store.get(i)                  # an unknown id is named before anything is read
    recs = store.runs(ids=ids or None, command=command or None, where=where, since=since,
                      sweep=sweep or None, status=status or None)
    if not recs:
        what = ", ".join(f"{k}={v!r}" for k, v in (("ids", ids), ("command", command),
                                                   ("where", where), ("since", since),
                                                   ("sweep", sweep), ("status", status)) if v)
        raise KairoError(f"no runs in the results store {store.path} match "
                         f"{what or 'anything (it is empty)'}; see kairo runs list")
    chosen = {r.id: r for r in recs}
    todo = list(chosen)
    while todo:                       # the runs started inside them, at any depth
        kids = [k for i in todo for k in store.runs(parent=i) if k.id not in chosen]
        chosen.update({k.id: k for k in kids})
        todo = [k.id for k in kids]
    return sorted(chosen.values(), key=lambda r: r.id)


def _store_of(folder: Path, run: dict):
    """The store that recorded the run in ``folder`` and its record there, when both are
    still there (else None)."""
    from kairo.runs import Store, StoreError

    rec = run.get("store") or {}
    path, run_id = rec.get("path"), rec.get("id")
    if not path or not isinstance(run_id, int) or not Path(path).is_file():
        return None
    st = Store(path)
    try:
        got = st.get(run_id)
    except StoreError:
        return None
    if got.out is None or Path(got.out).absolute() != folder:
        return None               # the folder moved, or the id names another run now
    return st


def demo_runs(folder) -> tuple:
    """``(store, runs)`` of a demo results folder (or any results folder with runs inside
    it): through the store that recorded it when it is still there (``runs`` are
    :class:`~kairo.runs.RunRecord`), else read from the folders (``store`` is None, ``runs``
    are :class:`RunView` keyed by folder name, in the order they ran)."""
    folder = Path(folder).absolute()
    if not folder.is_dir():
        raise KairoError(f"demo folder {folder} does not exist (expected the --out of a "
                         f"kairo demo run)")
    run = _read_run_json(folder)
    st = _store_of(folder, run)
    if st is not None:
        return st, select_runs(st, [run["store"]["id"]])
    root = view_of_folder(folder)
    kids = [view_of_folder(p, parent=root.key) for p in sorted(folder.iterdir())
            if p.is_dir() and (p / "run.json").is_file()]
    # a report written inside the folder is not one of its steps
    kids = sorted((v for v in kids if v.command != "report"), key=lambda v: v.started)
    seen = {root.key}
    for v in kids:
        while v.key in seen:
            v.key += "_"
        seen.add(v.key)
    return None, [root, *kids]


def is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and not (
        isinstance(v, float) and math.isnan(v))
