"""Learned wiring, fused kernels vs the torch reference: one training step of a dense layer.

A ``LogicDense(n_in, n_out, wiring="learned", candidates=K)`` in training mode, engine
"fused" (numba loops: the mixed inputs, the gate, and in the backward ∂L/∂x through a CSR of
the candidate slots) against engine "torch" (the reference: a gather (n, n_out, K), a
weighted sum, autograd). Both layers hold the same candidates and logits; before timing, one
step checks that outputs and the gradients of x, the gate logits and the wiring logits agree to
float32 rounding. Timed: forward + backward of a batch, each step alone, median of the steps,
with torch's default threads for the torch path and ``fused_threads`` (the trainer's context)
for the fused one, so both use the same cores; every timing is taken in ``--rounds`` rounds
that take turns between the engines, and the best round counts (a shared machine's slow
spells then fall on every engine alike). Also timed: the same layer with fixed (unique)
wiring, fused — what learned wiring costs over it.

Sizes: the first layer of an MNIST network with 3 thresholds (2,352 bits → 4,000 gates) and a
hidden layer (4,000 → 4,000), K = 8 and 16, batch 128.

The read floor (the roofline of this step on this machine): a step must read each gate's 2K
candidate rows (``batch`` floats each) three times — to mix the inputs, for ∂L/∂p (a dot with
each candidate) and for ∂L/∂x (the gate's gradient row scattered into each candidate's row, a
read and a write). A numba loop that only sums those rows, three passes, on the same threads
and parts as the fused loops, is timed as ``floor_s``: no kernel with this access pattern can
be faster, so ``torch_s / floor_s`` bounds the speedup any fused step could reach.

Where a fused step's time goes: ``loops_s`` is the time per step inside the layer's fused
forward and backward (torch's profiler: the autograd nodes ``_DenseLearned`` and
``_DenseLearnedBackward``, which run the numba loops on tensors already in their neuron-major
layout); the rest of ``fused_s`` is torch around them — the softmaxes of the logits, the
transposes of a batch-major input and gradient into that layout and back, the loss — which
does not grow with K.

Usage::

    python benchmarks/logic_learned_wiring.py [--steps N] [--quick] [--out PATH]

Writes benchmarks/results/logic_learned_wiring.json (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atomic_write_json, loadavg  # noqa: E402

import torch  # noqa: E402

import numpy as np  # noqa: E402
from numba import njit  # noqa: E402

from kairo.results import cpu_model  # noqa: E402
from kairo.logic import LogicDense, fused_available, fused_threads  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

SIZES = [(2352, 4000, 8), (2352, 4000, 16), (4000, 4000, 8)]


def _layers(n_in, n_out, k):
    out = {}
    for name, kw in (("torch", dict(wiring="learned", candidates=k, engine="torch")),
                     ("fused", dict(wiring="learned", candidates=k, engine="fused")),
                     ("fused_unique", dict(wiring="unique", engine="fused"))):
        m = LogicDense(n_in, n_out, seed=1, **kw)
        with torch.no_grad():
            torch.manual_seed(2)
            m.weight.normal_()
            if m.learned:
                m.wire_a.normal_()
                m.wire_b.normal_()
        out[name] = m
    return out


@njit(nogil=True, cache=True)
def _read_rows(part, lo, hi, x, ca, cb, acc):
    """acc[part] += every candidate row of gates lo … hi−1: the reads of one pass, no more."""
    out = acc[part]
    for i in range(lo, hi):
        for k in range(ca.shape[1]):
            row = x[ca[i, k]]
            for t in range(out.shape[0]):
                out[t] += row[t]
        for k in range(cb.shape[1]):
            row = x[cb[i, k]]
            for t in range(out.shape[0]):
                out[t] += row[t]


def _floor(m, x, steps):
    """Median time of three read passes over the candidate rows (see the module doc), on as
    many threads as the fused loops use (torch's): one equal share of the gates each, all
    three passes in one task, so thread hand-offs cost as little as they can."""
    xt = np.ascontiguousarray(x.detach().numpy().T)            # (n_in, batch), as the loops
    ca, cb = m.ca.numpy(), m.cb.numpy()
    n_threads = torch.get_num_threads()
    edges = np.linspace(0, ca.shape[0], n_threads + 1).astype(np.int64)
    acc = np.zeros((n_threads, xt.shape[1]), dtype=xt.dtype)

    def share(p):
        for _ in range(3):
            _read_rows(p, edges[p], edges[p + 1], xt, ca, cb, acc)

    ts = []
    with ThreadPoolExecutor(n_threads) as pool:
        for i in range(steps + 2):
            t0 = time.perf_counter()
            list(pool.map(share, range(n_threads)))
            if i >= 2:
                ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


LOOP_NODES = ("_DenseLearned", "_DenseLearnedBackward")


def _loops(m, x, w, steps):
    """Mean time per step inside the fused layer's forward and backward (see the module
    doc), from torch's profiler over ``steps`` steps after two warm-up steps."""
    with fused_threads(m):
        for _ in range(2):
            _step(m, x, w)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for _ in range(steps):
                _step(m, x, w)
    total = {e.key: e.cpu_time_total for e in prof.key_averages()}
    missing = [k for k in LOOP_NODES if k not in total]
    if missing:
        raise SystemExit(f"the profiler recorded no {', '.join(missing)}: the fused layer's "
                         f"autograd nodes are named otherwise now; update LOOP_NODES")
    return sum(total[k] for k in LOOP_NODES) / 1e6 / steps


def _step(m, x, w):
    m.zero_grad(set_to_none=True)
    x.grad = None
    (m(x) * w).sum().backward()


def _check(layers, x, w):
    got = {}
    for name in ("torch", "fused"):
        m = layers[name]
        _step(m, x, w)
        got[name] = [m(x).detach(), x.grad.clone(), m.weight.grad.clone(),
                     m.wire_a.grad.clone(), m.wire_b.grad.clone()]
    err = {}
    for label, a, b in zip(["y", "x", "gates", "wire_a", "wire_b"], got["torch"], got["fused"]):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-5)
        err[label] = float((a - b).abs().max())
    return err


def _time(m, x, w, steps, fused):
    ts = []
    ctx = fused_threads(m) if fused else contextlib.nullcontext()
    with ctx:
        for i in range(steps + 2):
            t0 = time.perf_counter()
            _step(m, x, w)
            if i >= 2:                                     # two warm-up steps
                ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--quick", action="store_true", help="a small size, 3 steps")
    ap.add_argument("--out", default="")
    args = ap.parse_args(argv)
    if not fused_available():
        sys.exit("numba is not installed: the fused kernels cannot run")
    sizes = [(300, 200, 8)] if args.quick else SIZES
    steps = 3 if args.quick else args.steps
    res = {"script": "benchmarks/logic_learned_wiring.py",
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "cpu": cpu_model(), "cpu_count": os.cpu_count(),
           "torch_threads": torch.get_num_threads(), "python": platform.python_version(),
           "torch": torch.__version__, "batch": args.batch, "steps": steps,
           "rounds": 1 if args.quick else args.rounds,
           "loadavg_before": loadavg(), "rows": []}
    for n_in, n_out, k in sizes:
        torch.manual_seed(0)
        x = torch.rand(args.batch, n_in, requires_grad=True)
        w = torch.randn(args.batch, n_out)
        layers = _layers(n_in, n_out, k)
        err = _check(layers, x, w)
        row = {"n_in": n_in, "n_out": n_out, "candidates": k, "max_abs_diff": err,
               "loadavg": loadavg()}
        timers = {f"{name}_s": (lambda m=m, f=name != "torch": _time(m, x, w, steps, f))
                  for name, m in layers.items()}
        timers["loops_s"] = lambda: _loops(layers["fused"], x, w, steps)
        timers["floor_s"] = lambda: _floor(layers["fused"], x, steps)
        rounds = {key: [] for key in timers}
        for _ in range(res["rounds"]):
            for key, timer in timers.items():
                rounds[key].append(timer())
        for key, ts in rounds.items():
            row[key] = round(min(ts), 5)
            row[key.replace("_s", "_rounds_s")] = [round(t, 5) for t in ts]
        row["speedup_fused_vs_torch"] = round(row["torch_s"] / row["fused_s"], 2)
        row["learned_vs_unique_fused"] = round(row["fused_s"] / row["fused_unique_s"], 2)
        # the rows a step must read (3 passes of 2K rows per gate) and the bound they set
        row["candidate_row_bytes"] = 3 * n_out * 2 * k * args.batch * x.element_size()
        row["floor_gb_per_s"] = round(row["candidate_row_bytes"] / row["floor_s"] / 1e9, 1)
        row["fused_gb_per_s"] = round(row["candidate_row_bytes"] / row["fused_s"] / 1e9, 1)
        row["fused_vs_floor"] = round(row["fused_s"] / row["floor_s"], 2)
        row["loops_vs_floor"] = round(row["loops_s"] / row["floor_s"], 2)
        row["torch_around_loops_s"] = round(row["fused_s"] - row["loops_s"], 5)
        row["max_speedup_at_floor"] = round(row["torch_s"] / row["floor_s"], 2)
        print(f"{n_in}→{n_out} K={k}: torch {row['torch_s'] * 1e3:.1f} ms, fused "
              f"{row['fused_s'] * 1e3:.1f} ms ({row['speedup_fused_vs_torch']}×), unique fused "
              f"{row['fused_unique_s'] * 1e3:.1f} ms, loops {row['loops_s'] * 1e3:.1f} ms, read "
              f"floor {row['floor_s'] * 1e3:.1f} ms "
              f"(fused {row['fused_vs_floor']}× it; at most {row['max_speedup_at_floor']}× "
              f"torch)", flush=True)
        res["rows"].append(row)
    res["loadavg_after"] = loadavg()
    out = Path(args.out or Path(__file__).parent / "results" /
               f"logic_learned_wiring{'_quick' if args.quick else ''}.json")
    atomic_write_json(out, res)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
