"""Does `torch.compile` speed up training the default time-series Transformer on the CPU?
One training step (batch 16, one channel, 10 classes, AdamW, one thread) of
`build_classifier(ModelConfig())`, eager against `torch.compile(model)` (inductor): the first
step (which compiles) and the mean of 20 steps after 3 warm-up steps, for each length.

Usage::

    python benchmarks/studies/tsc_compile.py [--lengths 150,1460] --out F.json
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def step_times(length: int, compiled: bool, steps: int = 20) -> dict:
    import torch
    from torch import nn

    from kairo.tsc import ModelConfig, build_classifier

    torch._dynamo.reset()         # each length compiled afresh, as in its own process
    torch.manual_seed(0)
    model = build_classifier(ModelConfig(), 1, 10, length)
    x, y = torch.randn(16, 1, length), torch.randint(0, 10, (16,))
    opt = torch.optim.AdamW(model.parameters(), 1e-3)
    f = torch.compile(model) if compiled else model
    loss_fn = nn.CrossEntropyLoss()

    def step():
        loss = loss_fn(f(x, None), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    t0 = time.perf_counter()
    step()
    first = time.perf_counter() - t0
    for _ in range(3):
        step()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return {"first_step_s": first, "ms_per_step": 1000 * (time.perf_counter() - t0) / steps,
            "load": os.getloadavg()[0]}


def main(argv=None) -> int:
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lengths", default="150,1460")
    ap.add_argument("--out", required=True, type=Path)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for length in map(int, args.lengths.split(",")):
        for compiled in (False, True):
            r = {"length": length, "mode": "compile" if compiled else "eager",
                 **step_times(length, compiled)}
            rows.append(r)
            print(f"length {length} {r['mode']:7s}: first step {r['first_step_s']:.1f} s, then "
                  f"{r['ms_per_step']:.1f} ms/step (load {r['load']:.2f})")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps({"torch": torch.__version__, "runs": rows}, indent=2) + "\n")
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
