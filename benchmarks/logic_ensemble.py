"""MNIST within 32,000 gates: independently trained 8k circuits joined into one.

    python benchmarks/logic_ensemble.py --work /tmp/ens --groups 3 --members 4 --jobs 2

trains seeds 0 … groups·members − 1 with the 8k recipe of docs/logic.md (light gates, learned
wiring, rotations, ``--max-gates 8000``; one thread each, ``--jobs`` at a time; a seed whose
folder holds metrics.json is kept, a killed run resumes from its checkpoint), joins each group
of ``members`` consecutive seeds with ``kairo logic ensemble --max-gates 32000``, checks each
join with ``kairo logic verify`` (C on all test images, Verilator on ``--verilog-samples``) and
writes one CSV row per member and per ensemble (``--out``). Nothing is chosen here: the
recipe is the committed 8k one and the group size is the budget over 8,000.

About 20 minutes per member with two sharing 2 cores, so 3 groups of 4 take about 2 hours.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

RECIPE = ("--thresholds 64,128,192 --hidden 6600 --layers 2 --wiring learned --candidates 16 "
          "--rewire-every 100 --shift 1 --rotate 8 --scale 0.08 --iters 28000 "
          "--lr-decay-from 20000 --gate-temperature 0.05 --max-gates 8000 --gate-param light")
BUDGET = 32000
FIELDS = ("config", "seed", "members", "test_circuit", "val_relaxed", "val_discrete",
          "gates_raw", "gates", "vote_gates", "depth", "train_s", "it_per_s",
          "circuit_matches_model", "c_bit_exact", "verilog_bit_exact", "verilog_samples",
          "loadavg")


def _kairo(argv: list[str]) -> None:
    from kairo.cli import main

    rc = main(["--store", "none", *argv])
    if rc != 0:
        raise SystemExit(f"kairo {' '.join(argv)} failed (exit {rc})")


def _train(work: Path, seed: int) -> Path:
    out = work / f"s{seed}"
    if not (out / "metrics.json").is_file():
        _kairo(["logic", "train", *RECIPE.split(), "--seed", str(seed), "--out", str(out)])
    return out


def _member_row(folder: Path, seed: int) -> dict:
    m = json.loads((folder / "metrics.json").read_text())
    run = json.loads((folder / "run.json").read_text())
    last = m["history"][-1] if m["history"] else {}
    return {"config": "light8k_member", "seed": seed, "members": "",
            "test_circuit": m["test_accuracy_circuit"],
            "val_relaxed": last.get("val_relaxed", ""),
            "val_discrete": last.get("val_discrete", ""),
            "gates_raw": m["gates_before"], "gates": m["gates_after"],
            "vote_gates": m["vote_gates"]["total"], "depth": m["depth_after"],
            "train_s": round(m["train_seconds"], 1), "it_per_s": round(m["iters_per_s"], 1),
            "circuit_matches_model": m["circuit_matches_model"],
            "loadavg": run["environment"]["loadavg"][0]}


def _ensemble(work: Path, group: int, seeds: list[int], verilog_samples: int) -> dict:
    out, ver = work / f"ensemble{group}", work / f"ensemble{group}_verify"
    circuits = ",".join(str(work / f"s{s}" / "circuit.json") for s in seeds)
    if not (out / "metrics.json").is_file():
        _kairo(["logic", "ensemble", "--circuits", circuits, "--max-gates", str(BUDGET),
                "--out", str(out)])
    if not (ver / "verify.json").is_file():
        # Icarus Verilog's time grows with the outputs squared (docs/notes/logic.md)
        _kairo(["logic", "verify", "--circuit", str(out / "circuit.json"),
                "--simulator", "verilator",
                "--verilog-samples", str(verilog_samples), "--out", str(ver)])
    m = json.loads((out / "metrics.json").read_text())
    v = json.loads((ver / "verify.json").read_text())
    trained = [json.loads((work / f"s{s}" / "metrics.json").read_text()) for s in seeds]
    run = json.loads((out / "run.json").read_text())
    return {"config": f"ensemble{len(seeds)}", "seed": group,
            "members": " ".join(map(str, seeds)), "test_circuit": m["test_accuracy_circuit"],
            "gates_raw": m["gates_before"], "gates": m["gates_after"],
            "vote_gates": m["vote_gates"]["total"], "depth": m["depth_after"],
            "train_s": round(sum(t["train_seconds"] for t in trained), 1),
            "c_bit_exact": v["backends"]["c"]["bit_exact"],
            "verilog_bit_exact": v["backends"]["verilog"]["bit_exact"],
            "verilog_samples": v["backends"]["verilog"]["samples"],
            "loadavg": run["environment"]["loadavg"][0]}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="folder of the runs")
    ap.add_argument("--groups", type=int, default=3)
    ap.add_argument("--members", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=2, help="trainings at a time")
    ap.add_argument("--verilog-samples", type=int, default=2000)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "logic_ensemble.csv")
    args = ap.parse_args(argv)
    if args.groups < 1 or args.members < 2 or args.jobs < 1:
        ap.error("--groups ≥ 1, --members ≥ 2 and --jobs ≥ 1")
    os.environ["OMP_NUM_THREADS"] = "1"           # one core per training, as the 8k rows
    args.work.mkdir(parents=True, exist_ok=True)
    seeds = list(range(args.groups * args.members))
    with ProcessPoolExecutor(args.jobs) as pool:
        folders = list(pool.map(_train, [args.work] * len(seeds), seeds))
    rows = [_member_row(f, s) for f, s in zip(folders, seeds)]
    for g in range(args.groups):
        rows.append(_ensemble(args.work, g, seeds[g * args.members:(g + 1) * args.members],
                              args.verilog_samples))
    tmp = args.out.with_name(f".{args.out.name}.tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, FIELDS)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(args.out)
    for r in rows[len(seeds):]:
        print(f"{r['config']} of seeds {r['members']}: {r['test_circuit']:.2%} with "
              f"{r['gates']} gates", file=sys.stderr)


if __name__ == "__main__":
    main()
