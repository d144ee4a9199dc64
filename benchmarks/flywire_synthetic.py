"""A full-size synthetic adult fly brain in the field's file formats, and kairo loading it.

Writes FlyWire Codex's downloads (``connections.csv.gz``, ``classification.csv.gz``,
``neurons.csv.gz``) and Shiu et al.'s files (``Connectivity_783.parquet``,
``Completeness_783.csv``) of one random graph of FlyWire 783's size (139,255 neurons, ~50
million synapses in ~15 million pairs; ``kairo.connectome.synthetic_flywire``), then loads
each format in a fresh process (so each peak memory is its own) and checks that both give the
same signed matrix. Targets (issue 63): load ≤ 60 s, peak ≤ 6 GB.

Usage::

    python benchmarks/flywire_synthetic.py [--folder results/flywire_synthetic] [--json PATH]
    kairo reservoir screen --connectome results/flywire_synthetic \\
        --stimulate 'class=olfactory;side=left' --trials 30

The files are not rewritten when they exist (``--force`` rewrites them). Results:
``benchmarks/results/flywire_load.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing as mp
import os
import resource
import time
from pathlib import Path

from _common import atomic_write_json, loadavg, section

from kairo.results import cpu_model

ROOT = Path(__file__).resolve().parent


def _load(path: str, queue) -> None:
    """One load in a fresh process: seconds, peak RSS, and a fingerprint of the matrix."""
    import numpy as np

    from kairo.connectome import load_connectome

    t0 = time.perf_counter()
    c = load_connectome(path)
    wall = time.perf_counter() - t0
    w = c.weights
    order = np.argsort(c.ids)
    # the same graph in another id order: compare in root-id order
    ws = w[order][:, order]
    queue.put({"wall_s": round(wall, 2),
               "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
               "n_neurons": int(c.n_neurons), "n_pairs": int(c.n_edges),
               "n_synapses": int(abs(w.data).sum()),
               "n_inhibitory_pairs": int((w.data < 0).sum()),
               "signed_sum": int(w.data.sum()),
               "fingerprint": float((ws.data * (ws.indices % 97 + 1)).sum()),
               "history": list(c.history)})


def load_in_child(path: Path) -> dict:
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=_load, args=(str(path), q))
    p.start()
    out = q.get()
    p.join()
    return out


def screen_in_child(folder: Path, stimulate: str) -> dict:
    """``kairo reservoir screen`` on the files (30 trials of 1 s at 150 Hz, Shiu's defaults)
    in a fresh process: wall time, its peak memory and what it found."""
    import json
    import subprocess
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-m", "kairo.cli", "--store", "none", "reservoir",
                            "screen", "--connectome", str(folder), "--stimulate", stimulate,
                            "--out", f"{tmp}/screen"], capture_output=True, text=True,
                           check=True)
        wall = time.perf_counter() - t0
        metrics = json.loads(Path(f"{tmp}/screen/metrics.json").read_text())
        run = json.loads(Path(f"{tmp}/screen/run.json").read_text())
    return {"command": f"kairo reservoir screen --connectome {folder} --stimulate "
                       f"'{stimulate}'",
            "wall_s": round(wall, 2),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
            "n_stimulated": metrics["n_stimulated"], "n_responding": metrics["n_responding"],
            "signs": run["resolved"]["signs"], "summary": r.stdout.splitlines()[0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", type=Path, default=Path("results/flywire_synthetic"))
    ap.add_argument("--json", type=Path, default=ROOT / "results" / "flywire_load.json")
    ap.add_argument("--neurons", type=int, default=139_255)
    ap.add_argument("--synapses", type=int, default=50_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--force", action="store_true", help="rewrite existing files")
    ap.add_argument("--stimulate", default="class=olfactory;side=left",
                    help="the screen's activated group")
    ap.add_argument("--no-screen", action="store_true", help="only write and load")
    args = ap.parse_args(argv)

    from kairo.connectome import synthetic_flywire

    results = {"script": "benchmarks/flywire_synthetic.py", "cpu": cpu_model(),
               "cpus": os.cpu_count(), "date": dt.datetime.now().isoformat(timespec="seconds"),
               "args": {k: str(v) for k, v in vars(args).items()}, "sections": {}}
    folder = args.folder
    need = ["connections.csv.gz", "classification.csv.gz", "neurons.csv.gz",
            "Connectivity_783.parquet", "Completeness_783.csv"]
    if args.force or not all((folder / f).is_file() for f in need):
        with section(results, "write") as rec:
            files = synthetic_flywire(folder, n_neurons=args.neurons, n_synapses=args.synapses,
                                      seed=args.seed)
        rec["files_mb"] = {k: round(v.stat().st_size / 2**20, 1) for k, v in files.items()}
    loads = {}
    for fmt, path in (("codex", folder / "connections.csv.gz"),
                      ("shiu", folder / "Connectivity_783.parquet")):
        with section(results, f"load_{fmt}") as rec:
            rec.update(load_in_child(path))
        loads[fmt] = results["sections"][f"load_{fmt}"]
        print(f"{fmt}: {loads[fmt]['wall_s']} s, peak {loads[fmt]['peak_rss_mb']} MB, "
              f"{loads[fmt]['n_neurons']} neurons, {loads[fmt]['n_pairs']} pairs, "
              f"{loads[fmt]['n_synapses']} synapses", flush=True)
    if not args.no_screen:
        # Shiu's activation experiment from the command line, as a user runs it
        with section(results, "screen") as rec:
            rec.update(screen_in_child(folder, args.stimulate))
        print(f"screen: {rec['wall_s']} s, peak {rec['peak_rss_mb']} MB, "
              f"{rec['summary']}", flush=True)
    keys = ("n_neurons", "n_pairs", "n_synapses", "n_inhibitory_pairs", "signed_sum",
            "fingerprint")
    results["same_graph"] = all(loads["codex"][k] == loads["shiu"][k] for k in keys)
    results["targets"] = {"load_s_max": 60, "peak_mb_max": 6144,
                          "met": all(r["wall_s"] <= 60 and r["peak_rss_mb"] <= 6144
                                     for r in loads.values())}
    results["loadavg_end"] = loadavg()
    atomic_write_json(args.json, results)
    print(f"same graph from both formats: {results['same_graph']}; targets met: "
          f"{results['targets']['met']}; {args.json}")
    return 0 if results["same_graph"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
