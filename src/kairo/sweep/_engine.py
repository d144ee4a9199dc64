"""Running a sweep: every point is a normal run of its command (``execute``), recorded in the
results store with the sweep's id, in local worker processes or on Ray (``map_jobs``).

Resuming is by folders: a point whose folder holds a run.json is done (folders appear only
when a run succeeds), so running the same spec again runs only the missing points; a done
point whose store record was left unfinished (killed between the two) is finished from its
folder. A lock
file per point makes sure a point never runs twice at once, even when a killed driver's
orphaned worker is still finishing it while the sweep is resumed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import math
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from kairo._errors import ConfigError, KairoError
from kairo.sweep._spec import Point, SweepSpec, grid_points

__all__ = ["run_sweep", "run_point", "run_points", "point_key", "SweepResult"]

log = logging.getLogger("kairo.progress")


@dataclass
class SweepResult:
    """What a sweep left: its id and folder, and one row per point (key, status — done,
    skipped (done earlier), failed —, run id, seed, swept values, metric)."""

    id: str
    out: Path
    spec: SweepSpec
    points: list[dict] = field(default_factory=list)

    @property
    def failed(self) -> list[dict]:
        return [p for p in self.points if p["status"] == "failed"]

    def best(self, n: int = 5) -> list[dict]:
        """The ``n`` best configurations by the spec's metric (mean over seeds)."""
        groups: dict[str, dict] = {}
        for p in self.points:
            v = p.get("metric")
            if v is None or (isinstance(v, float) and math.isnan(v)):
                continue
            key = json.dumps(p["values"], sort_keys=True, default=str)
            g = groups.setdefault(key, {"values": p["values"], "metric": [], "runs": []})
            g["metric"].append(v)
            g["runs"].append(p["run_id"])
        rows = [{"values": g["values"], "mean": sum(g["metric"]) / len(g["metric"]),
                 "n": len(g["metric"]), "runs": g["runs"]} for g in groups.values()]
        rows.sort(key=lambda r: r["mean"], reverse=self.spec.goal == "max")
        return rows[:n]


@contextlib.contextmanager
def _lock(path: Path):
    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)         # waits while another process runs the point
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_point(job: dict) -> dict:
    """Run one sweep point (module-level: worker processes and Ray call it). ``job``: command,
    config values, folder, store path (None: the store is off), sweep id, point key,
    fail_fast, threads."""
    from kairo._app import execute, make_config
    from kairo.runs import Store

    folder = Path(job["out"])
    row = {"key": job["key"], "run_id": None, "error": None}
    if job.get("threads"):
        # one point per core: the BLAS/OpenMP pools of each worker are sized before the
        # command imports them
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, str(job["threads"]))
    folder.parent.mkdir(parents=True, exist_ok=True)
    with _lock(folder.with_name(f".{folder.name}.lock")):
        store = Store(job["store"]) if job["store"] else None
        if (folder / "run.json").is_file():
            return {**row, "status": "skipped",
                    "run_id": store.finish_from_folder(folder) if store else None}
        # hidden folders of attempts killed midway (the lock says none is running)
        for stale in folder.parent.glob(f".{folder.name}.*"):
            if stale.is_dir():
                shutil.rmtree(stale, ignore_errors=True)
        if store is not None:
            store.mark_interrupted(job["sweep"], job["key"])
        try:
            cfg = make_config(job["command"], job["config"], source=f"sweep point {job['key']}")
            outcome = execute(job["command"], cfg, out=folder,
                              store=store if store is not None else "none",
                              sweep=job["sweep"], point=job["key"])
        except Exception as exc:
            if job.get("fail_fast"):
                raise
            return {**row, "status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    return {**row, "status": "done", "run_id": outcome.run_id}


def point_key(label: str, config: dict) -> str:
    """A grid point's folder name: ``label`` (what it is, for people) and a hash of its whole
    config, so a point whose settings changed is another point and never taken for done."""
    digest = hashlib.sha1(json.dumps(config, sort_keys=True, default=str).encode())
    return f"{label}-{digest.hexdigest()[:10]}"


def run_points(command: str, points, out, *, sweep: str = "", spec: dict | None = None,
               store="default", workers: int = 0, executor: str = "auto", address: str = "",
               fail_fast: bool = True, progress_bar: bool | None = None,
               desc: str = "runs") -> list[dict]:
    """Run ``points`` — (key, config values) pairs, each one normal run of ``command`` in
    ``out/<key>`` — as a sweep runs its grid: ``workers`` at a time through ``map_jobs``, each
    recorded in the results store (``store``: a path, a Store, ``"none"``, or by default
    ``$KAIRO_STORE`` else results/kairo.db) under sweep id ``sweep`` (default: the folder's
    name and a hash of its path; ``spec`` describes it there). A point whose folder holds a
    run.json is done and is not run again, so a stopped grid resumes where it was.
    ``fail_fast``: the first failing point stops the others and its error is raised here; else
    it is recorded and the grid goes on. One row per point, in order: key, status (done,
    skipped — done earlier — or failed), run_id, error."""
    from kairo._jobs import resolve_executor
    from kairo.runs import Store, open_store

    points = list(points)
    keys = [k for k, _ in points]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"run_points: point keys must differ; repeated: "
                          f"{sorted({k for k in keys if keys.count(k) > 1})}")
    st = store if isinstance(store, Store) else open_store(None if store == "default"
                                                           else store)
    out = Path(out).absolute()
    out.mkdir(parents=True, exist_ok=True)
    sweep = sweep or f"{out.name}-{hashlib.sha1(str(out).encode()).hexdigest()[:8]}"
    if st is not None:
        st.check()
        st.add_sweep(sweep, command, spec or {"points": len(points)}, out)
    kind, n_workers = resolve_executor(executor, workers, len(points))
    common = {"command": command, "store": str(st.path) if st is not None else None,
              "sweep": sweep, "fail_fast": fail_fast,
              "threads": max(1, (os.cpu_count() or 1) // n_workers)
              if kind == "processes" else 0}
    try:
        ran = _run_jobs([Point(k, {}, None, c) for k, c in points], common, out, st, kind,
                        n_workers, address, progress_bar, desc)
    except BaseException:
        if st is not None:
            _quiet_status(st, sweep, "stopped")
        raise
    rows = [ran[k] for k in keys]
    if st is not None:
        st.set_sweep_status(sweep, "failed" if any(r["status"] == "failed" for r in rows)
                            else "done")
    return rows


def _run_jobs(points, common, out, st, kind, n_workers, address, progress_bar, desc) -> dict:
    """The rows of ``points`` by key: those without a run.json run, the others are done."""
    todo = [p for p in points if not (out / p.key / "run.json").is_file()]
    if len(todo) < len(points):
        log.info("%s: %d of %d points done earlier (%s); running the other %d", desc,
                 len(points) - len(todo), len(points), out, len(todo))
    ran = dict(zip((p.key for p in todo),
                   _map([_job(common, out, p) for p in todo], kind, n_workers, address,
                        progress_bar, desc)))
    for p in points:
        if p.key not in ran:
            ran[p.key] = {"key": p.key, "status": "skipped", "error": None,
                          "run_id": st.finish_from_folder(out / p.key) if st else None}
    return ran


def _metric(store, run_id, name: str):
    """The point's value of the spec's metric (None when missing or not a number)."""
    if run_id is None or not name:
        return None
    try:
        v = store.get(run_id).metrics.get(name)
    except KairoError:
        return None
    return v if isinstance(v, (int, float)) else None


def _prepare_folder(spec: SweepSpec, out: Path) -> None:
    """The sweep folder, with the spec it runs; a folder holding another sweep is refused."""
    from kairo._io import atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    marker = out / "sweep.json"
    if marker.is_file():
        try:
            other = json.loads(marker.read_text()).get("id")
        except (OSError, ValueError):
            other = None
        if other != spec.id:
            raise KairoError(f"sweep folder {out} holds sweep {other!r}, not {spec.id!r} (the "
                             f"spec changed?); choose another --out")
        return
    if any(p for p in out.iterdir() if not p.name.startswith(".")):
        raise KairoError(f"sweep folder {out} exists and is not a sweep's; choose another --out")
    atomic_write_text(marker, json.dumps({"id": spec.id, "spec": spec.as_dict()}, indent=2,
                                         default=str) + "\n")


def run_sweep(spec: SweepSpec, *, out=None, store="default", workers: int = 0,
              executor: str = "auto", address: str = "", fail_fast: bool = False,
              progress_bar: bool | None = None) -> SweepResult:
    """Run (or resume) ``spec``: every missing point, ``workers`` at a time, through
    ``map_jobs`` (local processes, or Ray with ``executor="ray"`` / ``address`` /
    ``$RAY_ADDRESS``). A failing point is recorded and the sweep goes on, unless
    ``fail_fast``. Writes points.csv into the sweep folder."""
    from kairo._jobs import resolve_executor
    from kairo.runs import open_store

    st = open_store(None if store == "default" else store)
    if st is None:
        raise ConfigError("store: a sweep records its points in the results store; it cannot "
                          "run with the store switched off (--store none)")
    st.check()
    if address:
        executor = "ray" if executor == "auto" else executor
        if executor != "ray":
            raise ConfigError(f"address: a Ray address needs --executor ray (or auto), got "
                              f"{executor!r}")
    out = Path(out or Path("results") / "sweeps" / spec.id).absolute()
    _prepare_folder(spec, out)
    st.add_sweep(spec.id, spec.command, spec.as_dict(), out)
    n_points = len(grid_points(spec)) if spec.kind == "grid" else spec.trials * len(
        spec.seeds or (None,))
    kind, n_workers = resolve_executor(executor, workers, n_points)
    threads = max(1, (os.cpu_count() or 1) // n_workers) if kind == "processes" else 0
    common = {"command": spec.command, "store": str(st.path), "sweep": spec.id,
              "fail_fast": fail_fast, "threads": threads}
    result = SweepResult(spec.id, out, spec)
    try:
        if spec.kind == "grid":
            _grid(spec, out, st, common, kind, n_workers, address, progress_bar, result)
        else:
            _search(spec, out, st, common, kind, n_workers, address, progress_bar, result)
    except BaseException:
        _quiet_status(st, spec.id, "stopped")
        raise
    st.set_sweep_status(spec.id, "failed" if result.failed else "done")
    _write_points(out, spec, result)
    return result


def _quiet_status(st, sweep_id, status):
    from kairo.runs import StoreError

    try:
        st.set_sweep_status(sweep_id, status)
    except StoreError:
        pass


def _job(common: dict, out: Path, p: Point) -> dict:
    return {**common, "key": p.key, "config": p.config, "out": str(out / p.key)}


def _map(jobs, kind, n_workers, address, progress_bar, desc):
    from kairo._jobs import map_jobs

    if not jobs:
        return []
    return map_jobs(run_point, jobs, workers=n_workers, executor=kind, address=address or None,
                    desc=desc, progress_bar=progress_bar)


def _row(p: Point, res: dict, store, metric: str) -> dict:
    return {**res, "seed": p.seed, "values": p.values,
            "metric": _metric(store, res.get("run_id"), metric)}


def _grid(spec, out, st, common, kind, n_workers, address, progress_bar, result):
    points = grid_points(spec)
    ran = _run_jobs(points, common, out, st, kind, n_workers, address, progress_bar,
                    f"sweep {spec.name}")
    for p in points:
        result.points.append(_row(p, ran[p.key], st, spec.metric))


# ---------------------------------------------------------------------- search
def _distributions(spec):
    import optuna.distributions as d

    out = {}
    for s in spec.space:
        if s.choices is not None:
            out[s.name] = d.CategoricalDistribution(list(s.choices))
        elif s.integer:
            out[s.name] = d.IntDistribution(int(s.low), int(s.high), log=s.log,
                                            step=int(s.step or 1))
        else:
            out[s.name] = d.FloatDistribution(s.low, s.high, log=s.log, step=s.step)
    return out


def _sampler(spec):
    import optuna

    return {"tpe": optuna.samplers.TPESampler, "random": optuna.samplers.RandomSampler,
            "qmc": optuna.samplers.QMCSampler}[spec.sampler](seed=spec.sampler_seed)


def _trial_points(spec, number: int, params: dict) -> list[Point]:
    seeds = spec.seeds if spec.seeds is not None else (None,)
    base = f"t{number:03d}"
    return [Point(base + (f"-seed={s}" if s is not None else ""), dict(params), s,
                  {**spec.base, **params, **({"seed": s} if s is not None else {})})
            for s in seeds]


def _search(spec, out, st, common, kind, n_workers, address, progress_bar, result):
    import optuna

    from kairo._io import atomic_write_text

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = _distributions(spec)
    study = optuna.create_study(direction="maximize" if spec.goal == "max" else "minimize",
                                sampler=_sampler(spec))
    # trials asked before (a resumed search): their params are in tNNN.json
    asked = sorted(out.glob("t[0-9][0-9][0-9].json"))
    rows: dict[int, list[dict]] = {}

    def finish(number: int, params: dict, trial, res_by_key: dict) -> None:
        pts = _trial_points(spec, number, params)
        rs = []
        for p in pts:
            res = res_by_key.get(p.key) or {"key": p.key, "status": "skipped", "error": None,
                                            "run_id": st.finish_from_folder(out / p.key)}
            rs.append(_row(p, res, st, spec.metric))
        rows[number] = rs
        vals = [r["metric"] for r in rs]
        if any(v is None for v in vals):
            state = optuna.trial.TrialState.FAIL
            if trial is None:
                study.add_trial(optuna.trial.create_trial(params=params, distributions=dists,
                                                          state=state))
            else:
                study.tell(trial, state=state)
            missing = [r["key"] for r, v in zip(rs, vals) if v is None and
                       r["status"] != "failed"]
            if missing:
                log.warning("sweep %s: metric %r missing from %s", spec.id, spec.metric,
                            ", ".join(missing))
            return
        value = sum(vals) / len(vals)
        if trial is None:
            study.add_trial(optuna.trial.create_trial(params=params, distributions=dists,
                                                      value=value))
        else:
            study.tell(trial, value)

    pending = []           # (number, params) of resumed trials with points still to run
    for f in asked:
        number, params = int(f.stem[1:]), json.loads(f.read_text())["params"]
        if all((out / p.key / "run.json").is_file() for p in _trial_points(spec, number,
                                                                          params)):
            finish(number, params, None, {})
        else:
            pending.append((number, params))
    number = len(asked)
    per_batch = max(1, math.ceil(n_workers / len(spec.seeds or (None,))))
    while pending or number < spec.trials:
        batch = []
        for num, params in pending[:per_batch]:
            study.enqueue_trial(params)
            batch.append((num, params, study.ask(dists)))
        pending = pending[per_batch:]
        while len(batch) < per_batch and number < spec.trials:
            trial = study.ask(dists)
            atomic_write_text(out / f"t{number:03d}.json",
                              json.dumps({"params": trial.params}, default=str) + "\n")
            batch.append((number, trial.params, trial))
            number += 1
        points = [p for num, params, _ in batch for p in _trial_points(spec, num, params)]
        todo = [p for p in points if not (out / p.key / "run.json").is_file()]
        res = _map([_job(common, out, p) for p in todo], kind, n_workers, address,
                   progress_bar, f"sweep {spec.name}")
        by_key = {r["key"]: r for r in res}
        for num, params, trial in batch:
            finish(num, params, trial, by_key)
    result.points.extend(r for n in sorted(rows) for r in rows[n])


def _write_points(out: Path, spec: SweepSpec, result: SweepResult) -> None:
    import csv
    import io

    from kairo._io import atomic_write_text

    names = list(spec.grid) if spec.kind == "grid" else [s.name for s in spec.space]
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["point", "status", "run_id", "seed", *names, spec.metric or "metric", "error"])
    for p in result.points:
        w.writerow([p["key"], p["status"], p["run_id"], p["seed"],
                    *(p["values"].get(n) for n in names), p["metric"], p["error"] or ""])
    atomic_write_text(out / "points.csv", buf.getvalue())
