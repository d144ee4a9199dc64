"""The results store: one SQLite database (standard library ``sqlite3``, WAL mode) that
remembers every run — its command, config, versions, seed, data checksums, machine, status,
timing, flattened metrics and files — so runs can be listed, queried and compared.

Many processes write at once (a sweep's workers, two terminals): every write is one short
``BEGIN IMMEDIATE`` transaction on its own connection, which SQLite serialises; readers are
never blocked in WAL mode.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import random
import re
import socket
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kairo._errors import ConfigError, KairoError

__all__ = ["Store", "RunRecord", "StoreError", "SCHEMA_VERSION", "default_store_path",
           "open_store", "require_store", "flatten_metrics", "read_results", "parse_where", "parse_since", "STATUSES"]

SCHEMA_VERSION = 1
_KIND = "kairo-store"
_BUSY_WAIT_S = 60.0      # how long a writer waits for another process's lock
STATUSES = ("running", "done", "failed")
# a run writes at most this many metrics; a results JSON with more leaves is a table, not a
# set of metrics, and would bloat every query
MAX_METRICS = 2000

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sweeps (
    id TEXT PRIMARY KEY,
    command TEXT NOT NULL,
    spec TEXT NOT NULL,
    out TEXT,
    created TEXT NOT NULL,
    status TEXT NOT NULL
);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    command TEXT NOT NULL,
    config TEXT NOT NULL,
    seed INTEGER,
    status TEXT NOT NULL CHECK (status IN ('running', 'done', 'failed')),
    error TEXT,
    started TEXT NOT NULL,
    duration REAL,
    out TEXT,
    artifacts TEXT NOT NULL DEFAULT '[]',
    data TEXT NOT NULL DEFAULT '{}',
    versions TEXT NOT NULL DEFAULT '{}',
    machine TEXT NOT NULL DEFAULT '{}',
    argv TEXT NOT NULL DEFAULT '[]',
    host TEXT,
    pid INTEGER,
    parent INTEGER REFERENCES runs(id) ON DELETE SET NULL,
    sweep TEXT REFERENCES sweeps(id) ON DELETE SET NULL,
    point TEXT
);
CREATE INDEX runs_command ON runs(command, started);
CREATE INDEX runs_sweep ON runs(sweep, point);
CREATE TABLE metrics (
    run INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value REAL,
    text TEXT,
    PRIMARY KEY (run, name)
);
CREATE INDEX metrics_name ON metrics(name, value);
"""


class StoreError(KairoError):
    """The results store cannot be used: not a database, another program's database, or a
    schema this kairo does not know."""


def default_store_path() -> Path | None:
    """``$KAIRO_STORE``, else ``results/kairo.db``; None when recording is switched off
    (``KAIRO_STORE=none``)."""
    env = os.environ.get("KAIRO_STORE", "").strip()
    if env.lower() == "none":
        return None
    return Path(env or Path("results") / "kairo.db").absolute()


def open_store(path=None) -> Store | None:
    """The store at ``path`` (``"none"``: recording off), else at :func:`default_store_path`."""
    if isinstance(path, Store):
        return path
    if path is not None and str(path).strip().lower() == "none":
        return None
    p = Path(path).absolute() if path else default_store_path()
    return None if p is None else Store(p)


def require_store(hint: str = "") -> Store:
    """The store the commands read (:func:`open_store`'s default), which must exist: a
    switched-off or missing store is a clear error (``hint`` adds what else to try)."""
    st = open_store()
    extra = f", {hint}" if hint else ""
    if st is None:
        raise ConfigError(f"the results store is switched off (KAIRO_STORE=none); set "
                          f"--store PATH or $KAIRO_STORE{extra}")
    if not st.path.exists():
        raise KairoError(f"no results store at {st.path}: no run has been recorded there yet "
                         f"(--store / $KAIRO_STORE name another{extra})")
    return st


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


@dataclass
class RunRecord:
    """One run as the store remembers it."""

    id: int
    command: str
    config: dict
    seed: int | None
    status: str
    error: str | None
    started: str
    duration: float | None
    out: str | None
    artifacts: list[str]
    data: dict
    versions: dict
    machine: dict
    argv: list
    host: str | None
    pid: int | None
    parent: int | None
    sweep: str | None
    point: str | None
    metrics: dict = field(default_factory=dict)

    @property
    def folder(self) -> Path | None:
        """The results folder, when the run wrote one and it is still there."""
        return Path(self.out) if self.out and Path(self.out).is_dir() else None

    @property
    def state(self) -> str:
        """``status``, except that a run still marked running whose process is gone (killed,
        or the machine rebooted) on this host reads ``lost``."""
        if self.status == "running" and self.host == socket.gethostname() and self.pid:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return "lost"
            except PermissionError:
                pass
        return self.status


_COLUMNS = ("id", "command", "config", "seed", "status", "error", "started", "duration", "out",
            "artifacts", "data", "versions", "machine", "argv", "host", "pid", "parent",
            "sweep", "point")
_JSON_COLUMNS = {"config", "artifacts", "data", "versions", "machine", "argv"}


class Store:
    """The SQLite results store at ``path`` (created on first use, with its parent folder).

    A file that is not a SQLite database, or a database another program wrote, or one with a
    newer schema, raises :class:`StoreError` naming the file; nothing in it is changed.
    """

    def __init__(self, path):
        self.path = Path(path)
        self._checked = False

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # ------------------------------------------------------------------ connections
    def _connect(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise StoreError(f"results store {self.path} is a folder; give the path of a "
                             f"database file (--store / $KAIRO_STORE)")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = sqlite3.connect(self.path, timeout=_BUSY_WAIT_S, isolation_level=None)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(f"cannot open the results store {self.path}: {exc}") from None
        try:
            con.execute("PRAGMA foreign_keys = ON")
            if not self._checked:
                self._prepare(con)
                self._checked = True
        except BaseException:
            con.close()
            raise
        return con

    def _prepare(self, con: sqlite3.Connection) -> None:
        """Check (and on first use create) the schema; refuse what is not a kairo store."""
        try:
            tables = {r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"results store {self.path} is not a SQLite database ({exc}); "
                             f"kairo leaves it as it is — move it away or choose another "
                             f"--store") from None
        if not tables:
            self._lock_new(con)
            try:
                # another process may have created it while this one waited for the lock
                if not con.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            con.execute(statement)
                    con.executemany("INSERT INTO meta VALUES (?, ?)",
                                    [("kind", _KIND), ("created", _now())])
                    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
            return
        kind = None
        if "meta" in tables:
            row = con.execute("SELECT value FROM meta WHERE key = 'kind'").fetchone()
            kind = row[0] if row else None
        if kind != _KIND:
            raise StoreError(f"{self.path} is a SQLite database but not a kairo results store "
                             f"(tables: {', '.join(sorted(tables))}); kairo leaves it as it is "
                             f"— choose another --store")
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"results store {self.path} has schema version {version}; this "
                             f"kairo reads up to {SCHEMA_VERSION}: upgrade kairo, or use "
                             f"another --store")
        if version < 1:
            raise StoreError(f"results store {self.path} has no schema version; it was not "
                             f"written by a kairo release — choose another --store")

    def _lock_new(self, con: sqlite3.Connection, wait: float = _BUSY_WAIT_S) -> None:
        """Switch a new database to WAL and take its write lock. While several processes
        create the same store, SQLite answers some of them "locked" at once, without its
        busy handler (a rollback-mode lock upgrade it refuses to wait on), so retry here for
        as long as the connection would have waited."""
        deadline = time.monotonic() + wait
        delay = 0.005
        while True:
            try:
                con.execute("PRAGMA journal_mode = WAL")
                con.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise StoreError(f"cannot write the results store {self.path}: "
                                     f"{exc}") from None
            except sqlite3.Error as exc:
                raise StoreError(f"cannot write the results store {self.path}: {exc}") from None
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 0.2)

    def _write(self, sql: str, args=(), many: list | None = None):
        con = self._connect()
        try:
            con.execute("BEGIN IMMEDIATE")
            cur = con.execute(sql, args)
            for s, a in many or ():
                con.execute(s, a)
            con.execute("COMMIT")
            return cur.lastrowid
        except sqlite3.Error as exc:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise StoreError(f"results store {self.path}: {exc}") from None
        finally:
            con.close()

    def _read(self, sql: str, args=()) -> list[tuple]:
        con = self._connect()
        try:
            return con.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"results store {self.path}: {exc}") from None
        finally:
            con.close()

    def check(self) -> None:
        """Open the store (creating it if new) and check it is a kairo store; raises
        :class:`StoreError` otherwise. A run calls this before it starts."""
        self._connect().close()

    # ------------------------------------------------------------------ writing runs
    def start_run(self, command: str, config: dict, *, out=None, seed=None,
                  versions: dict | None = None, machine: dict | None = None,
                  argv: Iterable = (), parent: int | None = None, sweep: str | None = None,
                  point: str | None = None) -> int:
        """Record a run as ``running``; returns its id."""
        return self._write(
            "INSERT INTO runs (command, config, seed, status, started, out, versions, machine,"
            " argv, host, pid, parent, sweep, point) VALUES (?, ?, ?, 'running', ?, ?, ?, ?, ?,"
            " ?, ?, ?, ?, ?)",
            (command, _dumps(config), seed if isinstance(seed, int) else None, _now(),
             None if out is None else str(out), _dumps(versions or {}), _dumps(machine or {}),
             _dumps(list(argv)), socket.gethostname(), os.getpid(), parent, sweep, point))

    def finish_run(self, run_id: int, *, status: str, duration: float, error: str | None = None,
                   metrics: dict | None = None, artifacts: Iterable[str] = (),
                   data: dict | None = None, out=None) -> None:
        """Record how run ``run_id`` ended: ``done`` or ``failed`` (with ``error``), its
        duration in seconds, metrics ``{name: number or text}``, files (relative to its
        folder) and input checksums."""
        if status not in ("done", "failed"):
            raise ValueError(f"status must be done or failed, got {status!r}")
        rows = []
        for name, v in list((metrics or {}).items())[:MAX_METRICS]:
            if isinstance(v, bool):
                v = int(v)
            if isinstance(v, (int, float)):
                rows.append(("INSERT OR REPLACE INTO metrics VALUES (?, ?, ?, NULL)",
                             (run_id, name, float(v) if math.isfinite(v) else None)))
            else:
                rows.append(("INSERT OR REPLACE INTO metrics VALUES (?, ?, NULL, ?)",
                             (run_id, name, str(v))))
        sets = "status = ?, duration = ?, error = ?, artifacts = ?, data = ?"
        args = [status, duration, error, _dumps(sorted(artifacts)), _dumps(data or {})]
        if out is not None:
            sets += ", out = ?"
            args.append(str(out))
        self._write(f"UPDATE runs SET {sets} WHERE id = ?", (*args, run_id), many=rows)

    def finish_from_folder(self, folder) -> int | None:
        """The id of the run whose committed results folder is ``folder`` (its run.json names
        it); a record of it that is not ``done`` — the process was killed after the folder
        was committed and before the record was finished — is finished from the folder:
        duration from run.json, metrics from its results JSON files, its files. ``None``
        when run.json names no run of this store."""
        folder = Path(folder)
        try:
            run = json.loads((folder / "run.json").read_text())
            ref = run.get("store") or {}
            run_id = int(ref["id"])
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if Path(ref.get("path", "")).absolute() != self.path.absolute():
            return None
        rows = self._read("SELECT status FROM runs WHERE id = ?", (run_id,))
        if not rows or rows[0][0] == "done":
            return run_id if rows else None
        files = [f for f in run.get("files", []) if isinstance(f, str)]
        metrics = read_results(folder, files)
        try:
            duration = (_dt.datetime.fromisoformat(run["finished"])
                        - _dt.datetime.fromisoformat(run["started"])).total_seconds()
        except (KeyError, TypeError, ValueError):
            duration = None
        self.finish_run(run_id, status="done", duration=duration, metrics=metrics,
                        artifacts=files, data=run.get("data") or {}, out=folder.absolute())
        return run_id

    def relocate_children(self, parent: int, tmp, final) -> None:
        """A parent run's folder was written under the temporary ``tmp`` and renamed to
        ``final``: point the runs inside it (its children) at their final folders."""
        tmp, final = str(tmp), str(final)
        self._write("UPDATE runs SET out = ? || substr(out, ?) WHERE parent = ? AND "
                    "substr(out, 1, ?) = ?", (final, len(tmp) + 1, parent, len(tmp), tmp))

    def relocate(self, old, new) -> None:
        """A folder of runs (a grid's points) moved from ``old`` to ``new``: point every run
        and sweep recorded under it at its new place."""
        old, new = str(old), str(new)
        n = len(old)
        self._write("UPDATE runs SET out = ? || substr(out, ?) WHERE substr(out, 1, ?) = ? "
                    "AND substr(out, ?, 1) IN ('', '/')", (new, n + 1, n, old, n + 1),
                    many=[("UPDATE sweeps SET out = ? || substr(out, ?) WHERE "
                           "substr(out, 1, ?) = ? AND substr(out, ?, 1) IN ('', '/')",
                           (new, n + 1, n, old, n + 1))])

    def orphan_children(self, parent: int, tmp) -> None:
        """A parent run failed and its temporary folder was deleted with its children's."""
        tmp = str(tmp)
        self._write("UPDATE runs SET out = NULL, error = coalesce(error, '') || ? WHERE "
                    "parent = ? AND substr(out, 1, ?) = ?",
                    (f"(folder removed: parent run {parent} failed)", parent, len(tmp), tmp))

    def remove(self, run_id: int) -> RunRecord:
        """Delete run ``run_id``'s record (its metrics go with it); returns what it was."""
        rec = self.get(run_id)
        self._write("DELETE FROM runs WHERE id = ?", (run_id,))
        return rec

    # ------------------------------------------------------------------ sweeps
    def add_sweep(self, sweep_id: str, command: str, spec: dict, out) -> None:
        """Record a sweep (again: a resumed sweep keeps its id and creation time)."""
        self._write("INSERT INTO sweeps (id, command, spec, out, created, status) VALUES "
                    "(?, ?, ?, ?, ?, 'running') ON CONFLICT(id) DO UPDATE SET "
                    "status = 'running'", (sweep_id, command, _dumps(spec), str(out), _now()))

    def mark_interrupted(self, sweep_id: str, point: str) -> None:
        """Records of a sweep point still marked running when the point is started again
        (its process was killed) become failed, saying so."""
        self._write("UPDATE runs SET status = 'failed', error = 'interrupted: the sweep was "
                    "stopped before this point finished' WHERE sweep = ? AND point = ? AND "
                    "status = 'running'", (sweep_id, point))

    def set_sweep_status(self, sweep_id: str, status: str) -> None:
        self._write("UPDATE sweeps SET status = ? WHERE id = ?", (status, sweep_id))

    def sweeps(self) -> list[dict]:
        rows = self._read("SELECT id, command, spec, out, created, status FROM sweeps "
                          "ORDER BY created")
        return [{"id": r[0], "command": r[1], "spec": json.loads(r[2]), "out": r[3],
                 "created": r[4], "status": r[5]} for r in rows]

    def sweep(self, sweep_id: str) -> dict:
        for s in self.sweeps():
            if s["id"] == sweep_id:
                return s
        raise StoreError(f"results store {self.path}: no sweep {sweep_id!r}")

    # ------------------------------------------------------------------ reading
    def get(self, run_id: int) -> RunRecord:
        """Run ``run_id`` with its metrics; a missing id is a clear error."""
        recs = self.runs(ids=[run_id])
        if not recs:
            raise StoreError(f"results store {self.path}: no run with id {run_id}")
        return recs[0]

    def runs(self, *, ids: Iterable[int] | None = None, command: str | None = None,
             where: str = "", since: str = "", sweep: str | None = None,
             status: str | None = None, parent: int | None = None,
             limit: int | None = None) -> list[RunRecord]:
        """Runs matching every filter given, oldest first, with their metrics.

        ``where``: conditions on metrics, run columns or config fields joined by ``and`` or
        commas, e.g. ``"accuracy>0.9, config.seed=0, command='tsc train'"`` (see
        :func:`parse_where`); ``since``: an ISO date/time or an age like ``2h``, ``3d``."""
        clauses, args = [], []
        if ids is not None:
            ids = [int(i) for i in ids]
            clauses.append(f"r.id IN ({','.join('?' * len(ids))})")
            args += ids
        if command:
            clauses.append("r.command = ?")
            args.append(command)
        if sweep:
            clauses.append("r.sweep = ?")
            args.append(sweep)
        if status:
            clauses.append("r.status = ?")
            args.append(status)
        if parent is not None:
            clauses.append("r.parent = ?")
            args.append(parent)
        if since:
            clauses.append("r.started >= ?")
            args.append(parse_since(since))
        if where:
            sql, a = parse_where(where)
            clauses.append(sql)
            args += a
        sql = (f"SELECT {', '.join('r.' + c for c in _COLUMNS)} FROM runs r"
               + (" WHERE " + " AND ".join(clauses) if clauses else "") + " ORDER BY r.id")
        if limit:
            # the newest ``limit``, still listed oldest first
            sql = f"SELECT * FROM ({sql} DESC LIMIT {int(limit)}) ORDER BY id"
        con = self._connect()
        try:
            rows = con.execute(sql, args).fetchall()
            recs = [_record(r) for r in rows]
            by_id = {r.id: r for r in recs}
            for i in range(0, len(recs), 500):
                chunk = [r.id for r in recs[i:i + 500]]
                for run, name, value, text in con.execute(
                        f"SELECT run, name, value, text FROM metrics WHERE run IN "
                        f"({','.join('?' * len(chunk))}) ORDER BY run, rowid", chunk):
                    by_id[run].metrics[name] = text if text is not None else (
                        float("nan") if value is None else value)
        except sqlite3.Error as exc:
            raise StoreError(f"results store {self.path}: {exc}") from None
        finally:
            con.close()
        return recs

    def count(self) -> int:
        return self._read("SELECT count(*) FROM runs")[0][0]


def _record(row) -> RunRecord:
    d = dict(zip(_COLUMNS, row))
    for c in _JSON_COLUMNS:
        d[c] = json.loads(d[c]) if d[c] else ({} if c in ("config", "data", "versions",
                                                          "machine") else [])
    return RunRecord(**d)


def _dumps(o) -> str:
    from kairo._io import jsonable

    return json.dumps(o, default=jsonable, sort_keys=False)


# ---------------------------------------------------------------------- metrics
# a results JSON bigger than this, with more leaves, or keyed by names that are not
# identifiers (a tool's report: "\\top", "clk$glb") is data (a netlist, a table), not metrics
MAX_RESULTS_BYTES = 256_000
MAX_LEAVES = 200
_PLAIN = re.compile(r"[A-Za-z_][\w.\-]*")


def read_results(folder, files=None) -> dict:
    """The metrics of a results folder, the one rule the run's record, the store and the
    report share: the scalar leaves (:func:`flatten_metrics`) of each top-level results JSON
    among ``files`` (default: every ``*.json`` in the folder) other than run.json,
    metrics.json's keys as they are and any other file's under its name
    (``verify.accuracy``); a file that is not a JSON object, cannot be read, or is data by
    the bounds above is left out."""
    folder = Path(folder)
    if files is None:
        files = sorted(p.name for p in folder.glob("*.json"))
    names = [f for f in files if f.endswith(".json") and "/" not in f and f != "run.json"]
    out: dict = {}
    for name in sorted(names, key=lambda n: n != "metrics.json"):     # metrics.json first
        p = folder / name
        try:
            if p.stat().st_size > MAX_RESULTS_BYTES:
                continue
            obj = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(obj, dict):
            continue
        flat = flatten_metrics(obj, "" if name == "metrics.json" else name[:-len(".json")])
        if len(flat) <= MAX_LEAVES and all(_PLAIN.fullmatch(k) for k in flat):
            out.update(flat)
    return out


def flatten_metrics(obj, prefix: str = "") -> dict:
    """The scalar leaves of a results JSON as ``{"a.b.c": value}``: numbers (booleans as
    0/1) and short strings; lists are tables, not metrics, and are left out."""
    out: dict = {}

    def walk(o, key):
        if isinstance(o, dict):
            for k, v in o.items():
                walk(v, f"{key}.{k}" if key else str(k))
        elif isinstance(o, bool):
            out[key] = int(o)
        elif isinstance(o, (int, float)):
            out[key] = o
        elif isinstance(o, str) and len(o) <= 200 and key:
            out[key] = o
        else:
            try:                        # NumPy scalars
                import numpy as np

                if isinstance(o, np.generic) and np.ndim(o) == 0:
                    walk(o.item(), key)
            except ImportError:
                pass

    walk(obj, prefix)
    return out


# ---------------------------------------------------------------------- queries
_RUN_FIELDS = {"id", "command", "seed", "status", "error", "started", "duration", "out",
               "sweep", "point", "parent", "host"}
_COND = re.compile(r"^\s*([A-Za-z_][\w.\-\[\]]*)\s*(>=|<=|!=|==|=|>|<|~)\s*(.+?)\s*$")


def _literal(text: str):
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    try:
        return int(t)
    except ValueError:
        pass
    try:
        return float(t)
    except ValueError:
        return t


def parse_where(text: str) -> tuple[str, list]:
    """``"accuracy>0.9, config.norm=row and command='tsc train'"`` as a SQL condition on runs
    ``r`` with its parameters (values are never pasted into the SQL).

    A name is a run column (id, command, seed, status, duration, sweep, …), ``config.X`` (a
    config field) or a metric name; operators ``= == != < <= > >=`` and ``~`` (contains)."""
    parts = [p for p in re.split(r"\s*,\s*|\s+and\s+", text.strip(), flags=re.I) if p]
    if not parts:
        raise ConfigError(f"where: no condition in {text!r}")
    clauses, args = [], []
    for part in parts:
        m = _COND.match(part)
        if not m:
            raise ConfigError(f"where: cannot read {part!r}; expected NAME OP VALUE with OP one "
                              f"of = != < <= > >= ~ (e.g. accuracy>0.9, config.norm=row)")
        name, op, value = m.group(1), m.group(2), _literal(m.group(3))
        op = "=" if op == "==" else op
        if op == "~":
            sql_op, value = "LIKE", f"%{value}%"
        else:
            sql_op = op
        if name in _RUN_FIELDS:
            clauses.append(f"r.{name} {sql_op} ?")
        elif name.startswith("config."):
            key = name[len("config."):]
            if not re.fullmatch(r"[A-Za-z_]\w*", key):
                raise ConfigError(f"where: {name!r} is not a config field name")
            clauses.append(f"json_extract(r.config, '$.{key}') {sql_op} ?")
        else:
            col = "text" if isinstance(value, str) else "value"
            clauses.append(f"EXISTS (SELECT 1 FROM metrics m WHERE m.run = r.id AND "
                           f"m.name = ? AND m.{col} {sql_op} ?)")
            args.append(name)
        args.append(value)
    return "(" + " AND ".join(clauses) + ")", args


_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h|d|w)\s*$")


def parse_since(text: str) -> str:
    """An ISO date/time (local time when it has no zone) or an age (``90m``, ``2h``, ``3d``,
    ``1w``) as the UTC ISO time the store compares ``started`` with."""
    m = _AGE.match(text)
    if m:
        secs = float(m.group(1)) * {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400,
                                    "w": 604800}[m.group(2)]
        t = _dt.datetime.now(_dt.timezone.utc) - _dt.timedelta(seconds=secs)
    else:
        try:
            t = _dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise ConfigError(f"since: expected an ISO date/time (2026-12-03, "
                              f"2026-12-03T18:00) or an age (90m, 2h, 3d, 1w), got "
                              f"{text!r}") from None
        if t.tzinfo is None:
            t = t.astimezone()
        t = t.astimezone(_dt.timezone.utc)
    return t.isoformat(timespec="milliseconds")
