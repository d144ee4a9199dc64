"""What the results store and the sweep engine cost, against running the same points by hand.

1. Store: one run's record (start + finish with its metrics, as ``execute`` writes them)
   against a 10-s run (goal ≤ 1 %).
2. Sweep engine, serial: ``kairo sweep --workers 1`` against calling ``execute`` on the same
   configs in a loop with no store (goal ≤ 5 % per point for points of ≥ 10 s).
3. Two local workers: parallel efficiency T(1 worker) / (2 · T(2 workers)) on 2 cores, each
   ``kairo sweep`` run as a user runs it, in a fresh process (goal ≥ 85 %).
4. Ray: the 2-worker sweep on a local Ray runtime against local processes (reported).

Every variant runs one BLAS thread per point and must give the same metric per point (same
computation); the script checks it. The in-process variants run after an untimed warm-up
point; worker processes start cold, and that is part of their cost.

Usage: python benchmarks/sweep_overhead.py [--points 6] [--n-train 2000]
Writes benchmarks/results/sweep_overhead.json.
"""

from __future__ import annotations

import os

# one BLAS/OpenMP thread per point in every variant, as the sweep gives each of 2 workers on
# 2 cores: the same computation everywhere, and serial against parallel compares like with
# like (set before NumPy is imported)
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kairo.cli import execute, make_config
from kairo.results import environment
from kairo.runs import Store
from kairo.sweep import grid_points, run_sweep, spec_from_dict

from _common import atomic_write_json, loadavg

OUT = Path(__file__).resolve().parent / "results" / "sweep_overhead.json"


def store_cost(tmp: Path, reps: int = 50) -> dict:
    """Median seconds of one run's record: start_run + finish_run with 40 metrics."""
    st = Store(tmp / "cost.db")
    st.check()
    env = environment()
    metrics = {f"m{i}": i * 0.5 for i in range(40)}
    times = []
    for i in range(reps):
        t0 = time.perf_counter()
        rid = st.start_run("reservoir run", {"alpha": i, "task": "narma10"}, seed=i,
                           versions=env["packages"], machine={"cpu": env["cpu"]})
        st.finish_run(rid, status="done", duration=10.0, metrics=metrics,
                      artifacts=["metrics.json", "fit.png"], data={})
        times.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    for _ in range(10):
        environment()
    env_s = (time.perf_counter() - t0) / 10
    rec = statistics.median(times) + env_s
    return {"record_s_median": round(statistics.median(times), 5),
            "environment_s": round(env_s, 5), "total_s": round(rec, 5),
            "share_of_10s_run": round(rec / 10.0, 6), "goal": "≤ 0.01"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--points", type=int, default=6)
    ap.add_argument("--n-train", type=int, default=2000, help="sizes a point (≈10 s here)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    res = {"benchmark": "sweep_overhead", "date": dt.date.today().isoformat(),
           "environment": environment(), "sections": {}}
    alphas = [round(0.5 + 0.25 * i, 2) for i in range(args.points)]
    body = {"name": "bench", "command": "reservoir run",
            "base": {"task": "narma10", "norm": "row", "n_train": args.n_train, "n_test": 500,
                     "washout": 200, "cv": 3},
            "grid": {"alpha": alphas}, "metric": "nrmse", "goal": "min"}
    spec = spec_from_dict(body)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        res["store"] = store_cost(tmp)
        print("store:", res["store"], flush=True)

        values: dict[str, list] = {}
        # imports and the connectome's cache warmed once, untimed, for the in-process variants
        first = grid_points(spec)[0]
        execute("reservoir run", make_config("reservoir run", first.config),
                out=tmp / "warmup", store="none")
        t0, la = time.perf_counter(), loadavg()
        direct = []
        for p in grid_points(spec):
            cfg = make_config("reservoir run", p.config)
            o = execute("reservoir run", cfg, out=tmp / "direct" / p.key, store="none")
            direct.append(o)
        t_direct = time.perf_counter() - t0
        values["direct"] = [json.loads((o.out / "metrics.json").read_text())["nrmse"]
                            for o in direct]
        res["sections"]["direct"] = {"wall_s": round(t_direct, 2), "loadavg_before": la,
                                     "loadavg_after": loadavg()}
        print(f"direct: {t_direct:.1f} s", flush=True)

        runs = {}
        st = Store(tmp / "serial.db")
        la, t0 = loadavg(), time.perf_counter()
        r = run_sweep(spec, out=tmp / "serial", store=st, workers=1, progress_bar=False)
        runs["serial"] = time.perf_counter() - t0
        assert all(p["status"] == "done" for p in r.points), r.failed
        values["serial"] = [p["metric"] for p in r.points]
        res["sections"]["serial"] = {"wall_s": round(runs["serial"], 2), "loadavg_before": la,
                                     "loadavg_after": loadavg()}
        print(f"serial sweep in this process: {runs['serial']:.1f} s", flush=True)

        # 1 worker against 2 (and Ray), each as a user runs it: `kairo sweep` in a fresh
        # process, so every variant pays its imports and connectome loading once per process
        spec_file = tmp / "bench.yaml"
        spec_file.write_text(json.dumps(body))
        variants = [("cli_1", ["--workers", "1"]),
                    ("cli_processes_2", ["--workers", "2", "--executor", "processes"])]
        try:
            import ray  # noqa: F401
            variants.append(("cli_ray_2", ["--workers", "2", "--executor", "ray"]))
        except ImportError:
            print("ray: not installed, skipped", flush=True)
        for name, flags in variants:
            db = tmp / f"{name}.db"
            la, t0 = loadavg(), time.perf_counter()
            subprocess.run([sys.executable, "-m", "kairo.cli", "--store", str(db), "sweep",
                            str(spec_file), "--out", str(tmp / name), *flags], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            runs[name] = time.perf_counter() - t0
            recs = Store(db).runs(status="done")
            values[name] = [r.metrics["nrmse"] for r in sorted(recs, key=lambda r: r.point)]
            res["sections"][name] = {"wall_s": round(runs[name], 2), "loadavg_before": la,
                                     "loadavg_after": loadavg()}
            print(f"{name}: {runs[name]:.1f} s", flush=True)

    ref = values["direct"]
    diff = max(abs(a - b) / abs(a) for v in values.values() for a, b in zip(ref, v))
    res["same_computation"] = {"nrmse_per_point": values, "max_rel_diff": diff,
                               "ok": diff <= 1e-9}
    res["point_s"] = round(t_direct / len(ref), 2)
    res["serial_overhead"] = round(runs["serial"] / t_direct - 1, 4)
    res["parallel_efficiency_2"] = round(runs["cli_1"] / (2 * runs["cli_processes_2"]), 4)
    if "cli_ray_2" in runs:
        res["ray_vs_processes"] = round(runs["cli_ray_2"] / runs["cli_processes_2"], 3)
    res["goals"] = {"store_share": "≤ 0.01", "serial_overhead": "≤ 0.05 for points ≥ 10 s",
                    "parallel_efficiency_2": "≥ 0.85"}
    atomic_write_json(args.out, res)
    print({k: res[k] for k in ("point_s", "serial_overhead", "parallel_efficiency_2",
                               "ray_vs_processes") if k in res},
          "same computation:", res["same_computation"]["ok"])
    if not res["same_computation"]["ok"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
