"""Print the Markdown tables of docs/benchmarks.md from benchmarks/results/*.json.

Usage: python benchmarks/render.py [benchmarks/results/reservoir_speed.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(path: str = "benchmarks/results/reservoir_speed.json") -> None:
    d = json.loads(Path(path).read_text())
    sec = d["sections"]
    print(f"Run: `{d['command']}` on {d['date']}, {d['machine']['cpu_count']} CPUs, "
          f"versions {json.dumps(d['versions'])}.\n")
    a = d["agreement"]
    print(f"Agreement with reservoirpy over {a['n_steps']} steps (leak {a['leak']}, "
          f"{a['activation']}): max |Δstate| SciPy {a['max_abs_diff_scipy_float64']:.2g}, "
          f"torch {a['max_abs_diff_torch_float64']:.2g}.\n")
    s = d["speed"]
    print(f"Speed, {s['n_steps']} steps, {s['repeats']}; load average "
          f"{sec['speed']['loadavg_before']} → {sec['speed']['loadavg_after']}:\n")
    print("| configuration | backend | stream-steps/s | µs/step | × reservoirpy |")
    print("|---|---|---|---|---|")
    for k, v in s["configs"].items():
        print(f"| {k} | {v.get('resolved_backend') or '—'} | {v['stream_steps_per_s']:,.0f} | "
              f"{v['us_per_step']:,.1f} | {v.get('ratio_vs_reservoirpy') or 1.0} |")
    r = d["ridge"]
    print(f"\nRidge, {r['n_rows']:,} × {r['n_features']:,} states, {r['n_targets']} targets; "
          f"load {sec['ridge']['loadavg_before']} → {sec['ridge']['loadavg_after']}:\n")
    print("| fit | seconds |\n|---|---|")
    print(f"| reservoirpy `Ridge` | {r['reservoirpy_fit_s']} |")
    print(f"| kairo `StreamingRidgeCV`, one alpha, chunks of {r['chunk_rows']} | "
          f"{r['kairo_single_alpha_fit_s']} (× {r['ratio_kairo_vs_reservoirpy']}) |")
    print(f"| kairo default CV (5 folds × 7 alphas) | {r['kairo_default_cv_fit_s']} |")
    print(f"\nPredictions agree to {r['prediction_rel_diff']:.1e} (relative).\n")
    sc = d["scale"]
    m = sc["matrix"]
    print(f"Scale: {m['n_neurons']:,} neurons, {m['nnz']:,} synapses (out-degree mean "
          f"{m['out_degree']['mean']}, median {m['out_degree']['median']}, max "
          f"{m['out_degree']['max']}), {sc['dtype']}, built in {m['build_s']} s; load "
          f"{sec['scale_run']['loadavg_before']}:\n")
    print("| configuration | ms/step | synapse-updates/s | auto picks |\n|---|---|---|---|")
    for k, v in sc["configs"].items():
        print(f"| {k} | {v['ms_per_step']} | {v['synapse_updates_per_s']:.3g} | "
              f"{v['auto_would_pick']} |")


if __name__ == "__main__":
    main(*sys.argv[1:])
