"""Print the Markdown tables of docs/benchmarks.md from benchmarks/results/*.json.

Usage: python benchmarks/render.py [benchmarks/results/reservoir_speed.json]
       python benchmarks/render.py benchmarks/results/attention_speed.json
       python benchmarks/render.py benchmarks/results/resnet_vs_tsai_intel_avx512.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _only(per_dataset: dict, acc: dict) -> dict:
    """The entries of the datasets that were run (--acc-datasets may leave some out)."""
    return {k: v for k, v in per_dataset.items() if k in acc}


def attention(d: dict) -> None:
    """Tables for attention_speed.json: models, kairo/peer ratios, equal-budget accuracy."""
    m = d["machine"]
    print(f"Run: `{d['command']}` on {d['date']}, {m.get('cpu_model')}, {m['cpu_count']} CPUs, "
          f"{d['config']['threads']} torch threads, torch {m['torch']} (tsai: "
          f"{d['tsai'].get('torch', '—')}, tsai {d['tsai'].get('versions', {}).get('tsai', '—')})"
          f"; load average {d['loadavg_start']} → {d['loadavg_end']}.\n")
    eq = d["equivalence"]
    diffs = {k: v for k, v in eq.items() if isinstance(v, float)}
    print(f"Same computation: torch `TransformerEncoderLayer` weights copied into kairo's "
          f"`TransformerBlock` agree to max |Δ| {max(diffs.values()):.1e} "
          f"(post-LN and pre-LN, with and without a padding mask).\n")
    p = d.get("thread_probe_start")
    if p:
        print(f"Thread probe (small model, ms/step): 1 thread {p['ms_per_step_1_thread']}, "
              f"2 threads {p['ms_per_step_2_threads']} at the start; "
              f"{d['thread_probe_end']['two_over_one']}× at the end.\n")
    if d["models"]:                       # empty for --accuracy-only runs
        _attention_speed(d)
    elif d["tsai"]["status"] != "ok":
        print(f"{d['tsai']['status']}\n")
    acc = d.get("accuracy")
    if acc:
        s = d["accuracy_setup"]
        names = list(dict.fromkeys(k for per in acc.values() for k in per))
        print(f"\nTest accuracy, same loop and budget for every model ({s['optimizer']}; "
              f"batch {s['batch']}; epochs {_only(s['epochs'], acc)}; "
              f"seeds {_only(s['seeds'], acc)}):\n")
        print("| model | " + " | ".join(acc) + " |")
        print("|---|" + "---|" * len(acc))
        for name in names:
            cells = [f"{acc[ds][name]['mean_accuracy']:.3f} ± {acc[ds][name]['std_accuracy']:.3f}"
                     if name in acc[ds] else "—" for ds in acc]
            print(f"| {name} | " + " | ".join(cells) + " |")


def _attention_speed(d: dict) -> None:
    """Model timings and kairo/peer ratios of an attention_speed run."""
    print(f"{d['config']['input']}; {d['config']['rate']}.\n")
    print("| model | parameters | train samples/s (median) | inference samples/s (median) |")
    print("|---|---|---|---|")
    for name, v in d["models"].items():
        t, i = v["train"], v["infer"]
        print(f"| {name} | {v['params']:,} | {t['samples_per_s_best']:,.1f} "
              f"({t['samples_per_s_median']:,.1f}) | {i['samples_per_s_best']:,.1f} "
              f"({i['samples_per_s_median']:,.1f}) |")
    if d["tsai"]["status"] != "ok":
        print(f"\n{d['tsai']['status']}")
    print("\n| kairo / peer | train | inference |\n|---|---|---|")
    for name, r in d["ratios"].items():
        print(f"| {r['kairo']} / {r['peer']} | {r['train']} | {r['infer']} |")


def paired_resnet(d: dict) -> None:
    """The table of a resnet_vs_tsai.py run: median kairo/tsai ratio over paired rounds."""
    m = d["machine"]
    env = {k: v for k, v in d.get("env", {}).items() if v}
    print(f"Run: `{d['command']}` on {d['date']}, {m.get('cpu')}, torch "
          f"{m['packages'].get('torch')} ({m['torch_cpu_capability']} kernels, "
          f"{m['resnet_auto_layout']} layout; tsai: "
          f"{d['tsai_torch']}), {m['torch_num_threads']} threads"
          + (f", with {' '.join(f'{k}={v}' for k, v in env.items())}" if env else "")
          + f"; {len(d['rounds'])} rounds.\n")
    print("| kairo / tsai ResNet, median over rounds (range; rounds ahead, sign test p) | "
          "training | inference |\n|---|---|---|")
    for name, per in d["summary"].items():
        cells = [f"{s['median_ratio']:.2f}× ({s['min']:.2f}–{s['max']:.2f}; "
                 f"{s['rounds_ahead']} of {len(d['rounds'])}, p {s['sign_test_p']:.2g})"
                 for s in (per["train"], per["infer"])]
        print(f"| {name} ({d['params'][name]:,} parameters) | " + " | ".join(cells) + " |")


def main(path: str = "benchmarks/results/reservoir_speed.json") -> None:
    d = json.loads(Path(path).read_text())
    if "equivalence" in d:                # an attention_speed run, whatever the file name
        return attention(d)
    if "rounds" in d and "summary" in d:  # a resnet_vs_tsai run
        return paired_resnet(d)
    if d.get("benchmark") == "spiking_brian2":
        return print(d["summary"])
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
