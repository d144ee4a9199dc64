"""``kairo runs list|show|compare|export|rm``: query the results store.

The store is ``--store`` (a flag of ``kairo`` itself), else ``$KAIRO_STORE``, else
``results/kairo.db``. These commands read it; they are not recorded in it.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import shutil
from pathlib import Path

from kairo._command import Command
from kairo._errors import KairoError
from kairo.runs._config import (RunsCompareConfig, RunsExportConfig, RunsListConfig,
                                 RunsRmConfig, RunsShowConfig)

__all__ = ["runs_table", "compare_table", "export_frame", "COMMANDS"]


def _store():
    from kairo.runs import require_store

    return require_store()


# ---------------------------------------------------------------------- formatting
def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.4g}"
        return f"{v:.4f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def _local(iso: str) -> str:
    try:
        return _dt.datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except ValueError:
        return iso


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
              for i, h in enumerate(header)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa
    return "\n".join([line(header), line(["-" * w for w in widths])] + [line(r) for r in rows])


def _value(rec, name: str):
    if name.startswith("config."):
        return rec.config.get(name[len("config."):])
    return rec.metrics.get(name)


def runs_table(recs, columns=()) -> str:
    """Runs as a text table: id, start, command, state, seconds, seed, then ``columns``
    (metrics or ``config.FIELD``; default up to 4 metrics every run has), then the folder."""
    if not columns and recs:
        shared = [n for n in recs[0].metrics if all(n in r.metrics for r in recs)]
        columns = [n for n in shared if not isinstance(recs[0].metrics[n], str)][:4]
    header = ["id", "started", "command", "status", "seconds", "seed", *columns, "folder"]
    rows = [[str(r.id), _local(r.started), r.command, r.state,
             "—" if r.duration is None else f"{r.duration:.1f}", _fmt(r.seed),
             *(_fmt(_value(r, c)) for c in columns), r.out or "—"] for r in recs]
    return _table(header, rows)


def compare_table(recs, *, show_all: bool = False) -> str:
    """Runs side by side: config fields (``*`` marks those that differ; equal ones only with
    ``show_all``), then every metric."""
    def section(title, names, get):
        rows = []
        for n in names:
            vals = [get(r, n) for r in recs]
            differ = len({json.dumps(v, sort_keys=True, default=str) for v in vals}) > 1
            if differ or show_all or title == "metric":
                rows.append([("* " if differ else "  ") + n, *(_fmt(v) for v in vals)])
        return rows

    header = ["", *(f"run {r.id}" for r in recs)]
    top = [["  command", *(r.command for r in recs)], ["  status", *(r.state for r in recs)],
           ["  seconds", *("—" if r.duration is None else f"{r.duration:.1f}"
                           for r in recs)]]
    cfg_names = list(dict.fromkeys(k for r in recs for k in r.config))
    met_names = list(dict.fromkeys(k for r in recs for k in r.metrics))
    cfg_rows = section("config", cfg_names, lambda r, n: r.config.get(n))
    met_rows = section("metric", met_names, lambda r, n: r.metrics.get(n))
    out = [_table(header, top)]
    out.append("\nconfig (* differs)" + ("" if show_all else "; equal fields hidden, --all "
                                                            "shows them") + ":")
    out.append(_table(["field", *header[1:]], cfg_rows) if cfg_rows else "  (identical)")
    out.append("\nmetrics (* differs):")
    out.append(_table(["metric", *header[1:]], met_rows) if met_rows else "  (none)")
    return "\n".join(out)


# ---------------------------------------------------------------------- commands
def _query(cfg, **kw):
    return _store().runs(command=cfg.command or None, where=cfg.where, since=cfg.since,
                         sweep=cfg.sweep or None, status=cfg.status or None, **kw)


def _list(cfg: RunsListConfig, rd) -> str:
    recs = _query(cfg, limit=cfg.limit or None)
    if not recs:
        return "no runs match"
    return runs_table(recs, cfg.columns)


def _show(cfg: RunsShowConfig, rd) -> str:
    import yaml

    st = _store()
    r = st.get(cfg.id)
    children = st.runs(parent=r.id)
    lines = [f"run {r.id}: kairo {r.command}", f"status: {r.state}"
             + (f" — {r.error}" if r.error else ""),
             f"started: {_local(r.started)}" + ("" if r.duration is None
                                                 else f", {r.duration:.1f} s"),
             f"folder: {r.out or '—'}" + ("" if r.out is None or r.folder else " (missing)"),
             f"seed: {_fmt(r.seed)}", f"host: {r.host} (pid {r.pid})",
             f"machine: {r.machine.get('cpu', '?')}, {r.machine.get('cpu_count', '?')} cpus, "
             f"load {r.machine.get('loadavg')}",
             "versions: " + ", ".join(f"{k} {v}" for k, v in r.versions.items())]
    if r.parent:
        lines.append(f"inside run {r.parent}")
    if r.sweep:
        lines.append(f"sweep: {r.sweep} (point {r.point})")
    if children:
        lines.append("runs inside it: " + ", ".join(f"{c.id} ({c.command})" for c in children))
    lines += ["", "config:", yaml.safe_dump(r.config, sort_keys=False).rstrip()]
    if r.metrics:
        lines += ["", "metrics:"] + [f"  {k}: {_fmt(v)}" for k, v in r.metrics.items()]
    if r.data:
        lines += ["", "data:"] + [f"  {k}: {v.get('path')} (sha256 {v.get('sha256', '')[:16]}…)"
                                  for k, v in r.data.items()]
    if r.artifacts:
        lines += ["", "files: " + ", ".join(r.artifacts)]
    return "\n".join(lines)


def _compare(cfg: RunsCompareConfig, rd) -> str:
    st = _store()
    recs = [st.get(i) for i in dict.fromkeys(cfg.ids)]
    return compare_table(recs, show_all=cfg.all)


def export_frame(recs):
    """One row per run: its fields, ``config.*`` and ``metric.*`` columns (pandas)."""
    import pandas as pd

    rows = []
    for r in recs:
        row = {"id": r.id, "command": r.command, "status": r.state, "started": r.started,
               "duration": r.duration, "seed": r.seed, "out": r.out, "sweep": r.sweep,
               "point": r.point, "parent": r.parent, "error": r.error}
        row.update({f"config.{k}": json.dumps(v) if isinstance(v, (list, dict)) else v
                    for k, v in r.config.items()})
        row.update({f"metric.{k}": v for k, v in r.metrics.items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    # a config field holding numbers in one command and text in another is text
    for c in df.columns:
        if df[c].dtype == object:
            kinds = {type(v) for v in df[c].dropna()}
            if len(kinds) > 1:
                df[c] = df[c].map(lambda v: v if v is None or isinstance(v, float) and
                                  math.isnan(v) else str(v))
    return df


def _export(cfg: RunsExportConfig, rd) -> str:
    from kairo._io import atomic_write

    out = Path(cfg.output)
    if out.is_dir():
        raise KairoError(f"output {out} is a folder; give the name of the file to write")
    if not out.parent.is_dir():
        raise KairoError(f"output: folder {out.parent} does not exist")
    if out.exists() and not cfg.overwrite:
        raise KairoError(f"output {out} already exists; choose another --output or pass "
                         f"--overwrite")
    recs = _query(cfg)
    df = export_frame(recs)
    if cfg.format == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise KairoError("--format parquet needs pyarrow: pip install pyarrow") from None
        atomic_write(out, lambda tmp: df.to_parquet(tmp, index=False))
    else:
        atomic_write(out, lambda tmp: df.to_csv(tmp, index=False))
    return f"{len(df)} runs → {out}"


def _rm(cfg: RunsRmConfig, rd) -> str:
    st = _store()
    recs = [st.get(i) for i in dict.fromkeys(cfg.ids)]      # every id checked before any goes
    lines = []
    for r in recs:
        if r.state == "running":
            raise KairoError(f"run {r.id} is still running (pid {r.pid} on {r.host}); stop it "
                             f"first")
    for r in recs:
        st.remove(r.id)
        gone, folder = "", r.folder
        if cfg.files and folder is not None:
            if _owned(r, st):
                shutil.rmtree(folder)
                gone = f"; deleted {folder}"
            else:
                gone = f"; kept {folder} (its run.json names another run)"
        lines.append(f"removed run {r.id} ({r.command}){gone}")
    return "\n".join(lines)


def _owned(r, st) -> bool:
    """Whether the folder's run.json says it is this run of this store (never delete anything
    else)."""
    try:
        run = json.loads((Path(r.out) / "run.json").read_text())
    except (OSError, ValueError):
        return False
    rec = run.get("store") or {}
    return rec.get("id") == r.id and rec.get("path") == str(st.path)


COMMANDS = [
    Command("runs list", RunsListConfig, _list, "list recorded runs (filter, newest N)",
            folder=False, record=False),
    Command("runs show", RunsShowConfig, _show, "one run: config, metrics, files, machine",
            folder=False, record=False),
    Command("runs compare", RunsCompareConfig, _compare,
            "runs side by side: what differs in their configs, and their metrics",
            folder=False, record=False),
    Command("runs export", RunsExportConfig, _export, "runs as a CSV or Parquet table",
            folder=False, record=False),
    Command("runs rm", RunsRmConfig, _rm, "remove runs from the store (--files: their folders)",
            folder=False, record=False),
]
