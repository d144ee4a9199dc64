"""kairo's LIF network (numba engine) on an adult-fly-size graph: one trial on 1 and 2 threads,
Shiu's 30-trial experiment two ways, where the time goes, and the memory-bandwidth bound.

The graph is ``spiking_brian2.adult_graph`` (140,000 neurons, ~50M synapses, lognormal
out-degrees, 30 % inhibitory); the input is Poisson 150 Hz into 500 random neurons, as in
``spiking_brian2.py --adult``. Sections (each records the load average before and after: the
machine is shared, so compare the ratios of one run):

1. build      — the graph.
2. one_trial  — 1 s simulated, 1 thread and ``--threads`` threads (default: every core),
                ``--repeats`` runs each, interleaved, the best counting; the spikes must be
                identical (steps, neurons, order). Peak memory of the process so far.
                Each timed run waits (up to ``--quiet-wait-s``) for a moment when the
                machine's other users leave the cores idle, and records how busy they were.
3. trials     — ``--trials`` trials of 1 s: side by side (one thread each, as many at once
                as threads) against one after another on all threads; identical spikes.
4. breakdown  — neuron update against synaptic delivery: the same run on a graph without
                synapses (integration, threshold, input; the input neurons still spike) and
                on the graph, one thread and all threads; delivery is the difference.
5. bandwidth  — a NumPy copy of a 256 MB array (DRAM) and a copy of a 16 kB array kept in
                the L1 cache (numba), against the bytes the integration loop touches per
                neuron and step.

Usage::

    python benchmarks/lif_adult.py [--threads N] [--repeats 3] [--trials 30] [--out PATH]

Results: ``benchmarks/results/lif_adult.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import resource
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from _common import atomic_write_json, loadavg, section
from spiking_brian2 import SEED, adult_graph

from kairo.reservoir import LIFNetwork, LIFParams

RATE_HZ = 150.0
N_INPUTS = 500
# bytes per neuron and step of the integration loop: v, g and the summed events read (8
# bytes each), v and g written (refractory neurons are put back after the loop)
LOOP_BYTES = 3 * 8 + 2 * 8


def cpu_model() -> str:
    """The model name in /proc/cpuinfo, with the family and model numbers (a virtual
    machine's name may be as short as "AMD EPYC"; family 26 is Zen 5)."""
    try:
        fields = {}
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
        return (f"{fields['model name']} (family {fields.get('cpu family', '?')}, model "
                f"{fields.get('model', '?')}, {fields.get('cache size', '?')} cache)")
    except (OSError, KeyError):
        return platform.processor()


def max_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def identical(a, b) -> bool:
    return all(np.array_equal(getattr(a, f), getattr(b, f))
               for f in ("trial", "step", "neuron"))


def _cpu_ticks() -> tuple[int, int]:
    with open("/proc/stat") as fh:
        f = [int(x) for x in fh.readline().split()[1:]]
    return sum(f), f[3] + f[4]                    # all, idle + iowait


def busy_fraction(interval: float = 0.3) -> float:
    """The share of all cores busy (with anything) over ``interval`` seconds."""
    a, ia = _cpu_ticks()
    time.sleep(interval)
    b, ib = _cpu_ticks()
    return 1.0 - (ib - ia) / max(b - a, 1)


def wait_quiet(limit_s: float) -> float:
    """Wait (up to ``limit_s``) for a moment when the other users of the machine leave the
    cores idle (busy < 15 %), so that a run on every core gets them; returns the busy share
    seen last (recorded with each run)."""
    t_end = time.monotonic() + limit_s
    while True:
        busy = busy_fraction()
        if busy < 0.15 or time.monotonic() > t_end:
            return round(busy, 3)
        time.sleep(1.0)


def timed(fn) -> tuple[float, float, object]:
    """Wall and CPU seconds of ``fn()`` (CPU: all threads of the process), and its result."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


QUIET = {"wait_s": 60.0}


def best_of(nets: dict, run, repeats: int) -> tuple[dict, dict]:
    """``run(net)`` ``repeats`` times per network, interleaved (a change of the machine's
    load hits all alike), each after waiting for idle cores (``busy_before``: the share of
    the cores busy just before); per network the runs and the last result."""
    rows = {k: {"runs_s": [], "cpu_s": [], "busy_before": []} for k in nets}
    outs = {}
    for _ in range(repeats):
        for k, net in nets.items():
            rows[k]["busy_before"].append(wait_quiet(QUIET["wait_s"]))
            wall, cpu, outs[k] = timed(lambda: run(net))
            rows[k]["runs_s"].append(round(wall, 3))
            rows[k]["cpu_s"].append(round(cpu, 3))
    for r in rows.values():
        r["s"] = min(r["runs_s"])
    return rows, outs


def run_one_trial(results, w, inputs, duration_ms, threads, repeats):
    nets = {"1_thread": LIFNetwork(w, engine="numba", threads=1),
            f"{threads}_threads": LIFNetwork(w, engine="numba", threads=threads)}
    for net in nets.values():                                    # compile, first touch
        net.run(10.0, input_neurons=inputs, rate_hz=RATE_HZ, seed=0)
    run = lambda net: net.run(duration_ms, input_neurons=inputs,   # noqa: E731
                              rate_hz=RATE_HZ, seed=1)
    with section(results, "one_trial") as rec:
        rows, outs = best_of(nets, run, repeats)
        one = outs["1_thread"]
        for k, row in rows.items():
            row["s_per_simulated_s"] = round(row["s"] / (duration_ms / 1000), 3)
            row["realtime_factor"] = round(duration_ms / 1000 / row["s"], 2)
            row["identical_to_1_thread"] = identical(outs[k], one)
            rec[k] = row
            print(f"   {k}: {row['s']:.3f} s (×{row['realtime_factor']} real time), runs "
                  f"{row['runs_s']}, identical {row['identical_to_1_thread']}", flush=True)
        assert all(r["identical_to_1_thread"] for r in rows.values()), "spikes differ"
        rec["spikes"] = int(one.step.size)
        rec["mean_rate_hz"] = round(float(one.rates_hz().mean()), 3)
        rec["speedup"] = round(rows["1_thread"]["s"] / rows[f"{threads}_threads"]["s"], 2)
        # the graph, both networks' kernel arrays, the runs: the one-trial process
        rec["max_rss_mb"] = max_rss_mb()
    return nets


def run_trials(results, net, inputs, trials, threads, repeats):
    modes = {"side_by_side": "trials", "one_after_another": "neurons"}

    def run(mode):
        net.parallel = modes[mode]
        try:
            return net.run(1000.0, input_neurons=inputs, rate_hz=RATE_HZ, trials=trials,
                           seed=3)
        finally:
            net.parallel = "auto"

    with section(results, "trials") as rec:
        rec["trials"] = trials
        rec["threads"] = threads
        rows, outs = best_of({m: m for m in modes}, run, repeats)
        for k, row in rows.items():
            row["s_per_trial"] = round(row["s"] / trials, 3)
            rec[k] = row
            print(f"   {trials} trials {k}: {row['s']:.2f} s (runs {row['runs_s']})",
                  flush=True)
        rec["identical"] = identical(outs["side_by_side"], outs["one_after_another"])
        assert rec["identical"], "spikes differ"
        rec["spikes"] = int(outs["side_by_side"].step.size)
        rec["side_by_side_speedup"] = round(rows["one_after_another"]["s"]
                                            / rows["side_by_side"]["s"], 2)
        # LIFNetwork(parallel="auto"): side by side when trials ≥ threads (a split graph)
        rec["default"] = "side_by_side" if trials >= threads else "one_after_another"
        rec["max_rss_mb"] = max_rss_mb()


def run_breakdown(results, w, inputs, nets, duration_ms, threads, repeats):
    n = w.shape[0]
    empty = {k: LIFNetwork(sp.csr_matrix((n, n)), engine="numba", threads=net.threads)
             for k, net in nets.items()}
    for net in empty.values():
        net.run(10.0, input_neurons=inputs, rate_hz=RATE_HZ, seed=0)
    run = lambda net: net.run(duration_ms, input_neurons=inputs,   # noqa: E731
                              rate_hz=RATE_HZ, seed=1)
    with section(results, "breakdown") as rec:
        both = {**{f"graph_{k}": v for k, v in nets.items()},
                **{f"no_synapses_{k}": v for k, v in empty.items()}}
        rows, outs = best_of(both, run, repeats)
        rec["runs"] = rows
        steps = int(round(duration_ms / nets["1_thread"].params.dt))
        rec["neuron_steps"] = n * steps
        full = outs["graph_1_thread"]
        deg = np.diff(w.indptr)
        rec["synaptic_events"] = int(deg[full.neuron].sum())
        rec["spikes"] = {"graph": int(full.step.size),
                         "no_synapses": int(outs["no_synapses_1_thread"].step.size)}
        for k in nets:
            t_all, t_upd = rows[f"graph_{k}"]["s"], rows[f"no_synapses_{k}"]["s"]
            rec[k] = {"total_s": t_all, "neuron_update_s": t_upd,
                      "synaptic_delivery_s": round(t_all - t_upd, 3),
                      "neuron_update_fraction": round(t_upd / t_all, 3),
                      "ns_per_neuron_step": round(t_upd / (n * steps) * 1e9, 4),
                      "ns_per_event": round((t_all - t_upd) / max(rec["synaptic_events"], 1)
                                            * 1e9, 2)}
            print(f"   {k}: update {t_upd:.3f} s, delivery {t_all - t_upd:.3f} s of "
                  f"{t_all:.3f} s", flush=True)


def _l1_copy_gbs() -> float:
    from numba import njit

    @njit(cache=False)
    def copy(dst, src, reps):
        for _ in range(reps):
            for i in range(src.size):
                dst[i] = src[i]
            src[0] += 1.0                       # each repetition depends on the last
        return dst[0]

    a, b = np.ones(2048), np.empty(2048)        # 16 kB each: both in the 48 kB L1 cache
    copy(b, a, 10)
    reps = 100_000
    best = min(timed(lambda: copy(b, a, reps))[0] for _ in range(5))
    return 2 * a.nbytes * reps / best / 1e9


def run_bandwidth(results, n_neurons, duration_ms):
    with section(results, "bandwidth") as rec:
        a = np.ones(256 * 2**20 // 8)
        b = np.empty_like(a)
        np.copyto(b, a)
        best = min(timed(lambda: np.copyto(b, a))[0] for _ in range(5))
        dram = 2 * a.nbytes / best / 1e9                    # read + write
        del a, b
        l1 = _l1_copy_gbs()
        rec["dram_copy_gb_s"] = round(dram, 1)
        rec["l1_copy_gb_s"] = round(l1, 1)
        bd = results["sections"]["breakdown"]
        steps = bd["neuron_steps"] // n_neurons
        d = LIFParams().delay_steps                         # steps per window
        t_upd = bd["1_thread"]["neuron_update_s"]
        touched = LOOP_BYTES * n_neurons * steps
        rec["loop_bytes_per_neuron_step"] = LOOP_BYTES
        rec["loop_gb_s_achieved_1_thread"] = round(touched / t_upd / 1e9, 1)
        # every neuron's state from memory at every step (no windows): the DRAM bound
        rec["stepwise_dram_bound_s"] = round(touched / (dram * 1e9), 3)
        # state (v, g, first free step: 24 bytes read, v and g written) once per window of
        # d steps, the rest in cache
        rec["windowed_dram_bound_s"] = round(40 * n_neurons * steps / d / (dram * 1e9), 4)
        rec["l1_bound_s"] = round(touched / (l1 * 1e9), 3)
        rec["neuron_update_s_1_thread"] = t_upd
        rec["update_over_l1_bound"] = round(t_upd / rec["l1_bound_s"], 2)
        rec["update_over_windowed_dram_bound"] = round(t_upd / rec["windowed_dram_bound_s"], 1)
        rec["stepwise_dram_bound_over_update"] = round(rec["stepwise_dram_bound_s"] / t_upd, 1)
        print(f"   DRAM copy {dram:.1f} GB/s, L1 copy {l1:.1f} GB/s; the loop moves "
              f"{rec['loop_gb_s_achieved_1_thread']} GB/s", flush=True)


def summary(results) -> str:
    s = results["sections"]
    one, tr, bd = s["one_trial"], s.get("trials"), s.get("breakdown")
    keys = [k for k in one if k.endswith("thread") or k.endswith("threads")]
    lines = [f"one trial, 1 s simulated: " + ", ".join(
        f"{k} {one[k]['s']} s (×{one[k]['realtime_factor']} real time)" for k in keys)
        + f"; speedup {one['speedup']}, identical spikes; peak {one['max_rss_mb']} MB"]
    if tr:
        lines.append(f"{tr['trials']} trials: side by side {tr['side_by_side']['s']} s, one "
                     f"after another {tr['one_after_another']['s']} s (default "
                     f"{tr['default']})")
    if bd:
        lines.append("breakdown: " + "; ".join(
            f"{k} update {bd[k]['neuron_update_s']} s + delivery "
            f"{bd[k]['synaptic_delivery_s']} s" for k in keys))
    bw = s.get("bandwidth")
    if bw:
        lines.append(f"bandwidth: DRAM {bw['dram_copy_gb_s']} GB/s, L1 {bw['l1_copy_gb_s']} "
                     f"GB/s; stepwise DRAM bound {bw['stepwise_dram_bound_s']} s, windowed "
                     f"{bw['windowed_dram_bound_s']} s, L1 bound {bw['l1_bound_s']} s vs "
                     f"update {bw['neuron_update_s_1_thread']} s")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "lif_adult.json")
    ap.add_argument("--duration-ms", type=float, default=1000.0)
    ap.add_argument("--threads", type=int, default=0, help="0: every core")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--trials", type=int, default=30)
    ap.add_argument("--trial-repeats", type=int, default=1)
    ap.add_argument("--quiet-wait-s", type=float, default=QUIET["wait_s"],
                    help="before each run, wait up to this long for idle cores")
    args = ap.parse_args(argv)
    QUIET["wait_s"] = args.quiet_wait_s
    import numba

    threads = args.threads or len(os.sched_getaffinity(0))
    results = {"benchmark": "lif_adult", "date": dt.date.today().isoformat(),
               "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(),
                           "affinity": len(os.sched_getaffinity(0)),
                           "python": sys.version.split()[0], "numba": numba.__version__,
                           "numpy": np.__version__, "loadavg": loadavg()},
               "rate_hz": RATE_HZ, "input_neurons": N_INPUTS, "threads": threads,
               "sections": {}}
    with section(results, "build") as rec:
        w = adult_graph(140_000, 50_000_000, SEED)
        rec["n_neurons"], rec["n_synapses"] = int(w.shape[0]), int(w.nnz)
    inputs = np.sort(np.random.default_rng(SEED).choice(w.shape[0], N_INPUTS, replace=False))
    nets = run_one_trial(results, w, inputs, args.duration_ms, threads, args.repeats)
    if args.trials:
        run_trials(results, nets[f"{threads}_threads"], inputs, args.trials, threads,
                   args.trial_repeats)
    run_breakdown(results, w, inputs, nets, args.duration_ms, threads, args.repeats)
    run_bandwidth(results, w.shape[0], args.duration_ms)
    results["machine"]["loadavg_end"] = loadavg()
    results["summary"] = summary(results)
    print(results["summary"])
    atomic_write_json(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
