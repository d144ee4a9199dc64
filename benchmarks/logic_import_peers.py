"""Circuits trained elsewhere, end to end: one dense MNIST network trained with difflogic and
one with torchlogix (their own layers and training, on all 60,000 training images), each
imported by ``kairo logic import`` (checked bit for bit against the framework's own discrete
forward on all 10,000 test images, simplified), then verified in C and placed and routed on an
iCE40 by ``kairo logic fpga`` (the wrapper simulated in Icarus Verilog first).

The peers are not kairo dependencies; install them beside it (docs/notes/logic_import.md):

    pip install --no-deps --target /tmp/peers torchlogix==0.2.2   # + difflogic's python files
    PYTHONPATH=/tmp/peers python benchmarks/logic_import_peers.py --frameworks difflogic \\
        --out benchmarks/results/logic_import_peers/difflogic.json     # and torchlogix

Writes one JSON: per framework the network, its training (steps, seconds), the framework's
test accuracy, the import (gates raw → simplified, depth, bit-exact images), the C check and
the FPGA report of each wrapper architecture (LUT4, flip-flops, fits, fmax, images/s at fmax),
with the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "logic"))     # the peers' model builders
sys.path.insert(0, str(Path(__file__).resolve().parent))

NETWORKS = {
    # x/255 > 0.5 → four LogicLayers → GroupSum(10): difflogic's own MNIST recipe, narrowed
    # to fit the UP5K (two layers of 1,000 reach 76 %: each output sees at most 4 pixels)
    "difflogic": {"widths": (1000, 1000, 1000, 1000), "tau": 10.0, "lr": 0.01},
    # FixedBinarization(0.3, 0.6) → raw × 3 → light (learnable, 2 candidates) → GroupSum(10)
    "torchlogix": {"widths": (1000, 1000, 1000, 1000), "tau": 10.0, "lr": 0.01},
}


def train(framework: str, steps: int, seed: int, path: Path) -> dict:
    import torch

    from import_peers import difflogic_model, mnist_subset, torchlogix_model
    from kairo.logic import framework_module

    # one thread: these layers gain nothing from more, and on a shared machine more threads
    # only oversubscribe the cores (a run took 3.6× as long)
    torch.set_num_threads(1)
    xtr, ytr, xte, yte = mnist_subset(60000)
    net = NETWORKS[framework]
    t0 = time.perf_counter()
    if framework == "difflogic":
        model = difflogic_model(framework_module("difflogic"), xtr, ytr, widths=net["widths"],
                                tau=net["tau"], steps=steps, seed=seed, lr=net["lr"],
                                cuda_attrs=False)
    else:
        framework_module("torchlogix")
        model = torchlogix_model(xtr, ytr, tau=net["tau"], steps=steps, seed=seed,
                                 widths=net["widths"], lr=net["lr"])
    seconds = time.perf_counter() - t0
    torch.save(model, path)
    return {"network": {k: list(v) if isinstance(v, tuple) else v for k, v in net.items()},
            "steps": steps, "batch": 100, "seed": seed, "train_seconds": round(seconds, 1),
            "file_kib": round(path.stat().st_size / 1024, 1)}


def run(argv: list[str]) -> None:
    from kairo.cli import main

    code = main(argv)
    if code != 0:
        raise SystemExit(f"kairo {' '.join(argv)} exited {code}")


def one(framework: str, args, work: Path) -> dict:
    model, trained = work / f"{framework}.pt", work / f"{framework}.train.json"
    if model.is_file() and trained.is_file() and \
            json.loads(trained.read_text())["steps"] == args.steps:
        row = json.loads(trained.read_text())          # trained by an earlier run in --work
    else:
        row = train(framework, args.steps, args.seed, model)
        trained.write_text(json.dumps(row))
    extra = ["--thresholds", "0.5"] if framework == "difflogic" else []
    run(["logic", "import", "--model", str(model), *extra, "--samples", "0",
         "--data-dir", args.data_dir, "--overwrite",
         "--out", str(work / f"{framework}-import")])
    imp = json.loads((work / f"{framework}-import" / "metrics.json").read_text())
    row["import"] = imp
    circuit = work / f"{framework}-import" / "circuit.json"
    run(["logic", "verify", "--circuit", str(circuit), "--data-dir", args.data_dir,
         "--overwrite", "--out", str(work / f"{framework}-verify")])
    row["verify"] = json.loads((work / f"{framework}-verify" / "verify.json").read_text())
    row["fpga"] = {}
    for arch in args.archs.split(","):
        out = work / f"{framework}-fpga-{arch}"
        try:
            run(["logic", "fpga", "--circuit", str(circuit), "--target", args.target,
                 "--arch", arch, "--overwrite", "--out", str(out)])
            row["fpga"][arch] = json.loads((out / "fpga.json").read_text())
        except SystemExit as exc:
            row["fpga"][arch] = {"target": args.target, "error": str(exc)}
    return row


def main(argv=None) -> int:
    from _common import atomic_write_json

    from kairo.results import cpu_model

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--frameworks", default="difflogic,torchlogix")
    ap.add_argument("--steps", type=int, default=20000, help="Adam steps of batch 100")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", default="ice40-up5k")
    ap.add_argument("--archs", default="combinational,serial-vote",
                    help="the FPGA wrapper architectures to place (kairo logic fpga --arch)")
    ap.add_argument("--data-dir", default=os.environ.get("KAIRO_DATA_DIR", ""))
    ap.add_argument("--work", type=Path, default=None,
                    help="keep the runs here (a model trained there before is reused)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    load0 = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kairo-import-peers-") as tmp:
        work = args.work or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        rows = {fw: one(fw, args, work) for fw in args.frameworks.split(",")}
    atomic_write_json(args.out, {"benchmark": "logic_import_peers", "cpu": cpu_model(),
                                 "cores": os.cpu_count(), "loadavg_before": load0,
                                 "loadavg_after": os.getloadavg(), "runs": rows})
    print(json.dumps({fw: {k: r[k] for k in ("train_seconds",)} for fw, r in rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
