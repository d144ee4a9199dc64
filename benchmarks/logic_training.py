"""Logic-gate network training speed on CPU: kairo vs torchlogix 0.2.2, same net, same batches.

The network is ``kairo logic train --classes 0,1 --kernels 4 --hidden 100``: Binarize (pixel >
127, one channel) → [LogicConv2d 3×3, tree depth 3, padding 1 → OR pooling 2×2] × 2 (4, then
8 kernels) → flatten (8·7·7 = 392) → LogicDense 392→100 → 100→100 → GroupSum (2 classes,
τ = 10); cross-entropy, Adam (lr 0.01), batches of 128 MNIST 0/1 training images.

* kairo      — ``kairo.logic.build_model`` (the code path of ``kairo logic train``,
               engine auto = the fused numba kernels) and the step of its ``train``:
               forward, loss, backward, Adam, inside ``fused_threads`` (torch single-threaded,
               the fused loops on T threads).
* torchlogix — its layers (FixedBinarization, LogicConv2d, OrPooling2d, LogicDense, GroupSum)
               in an ``nn.Sequential``, the same step with ``torch.set_num_threads(T)``.
               torchlogix 0.2.2 does not import on Python 3.11 (circuit.py has a 3.12-only
               nested f-string); training never uses it, so a stand-in ``torchlogix.circuit``
               module is put in ``sys.modules`` before the import.

Both train the same network from the same state on the same uint8 batches (one seeded index
sequence) with the same core budget T: the torchlogix layers are built by their constructors
(3×3, tree depth 3, padding 1, OR pooling 2×2; LogicDense 100; GroupSum τ = 10), then their
wiring buffers and logits are overwritten with those of kairo's freshly built model. Before
timing, one batch checks that relaxed outputs and logit gradients agree to float rounding and
discrete outputs exactly; the losses of the two runs are compared step by step. Differences
that could not be avoided:

* torchlogix's own wiring (a tree's leaves draw any channel, or sliding channel groups) and
  its residual initialization are not used: kairo's (two channels per tree, positions dealt
  from shuffled decks, N(0, 1) logits) are copied in. The work per step does not depend on
  the wiring.
* dense 392→100 — torchlogix's LogicDense asserts in_dim ≤ 2·out_dim; it is built for 200
  inputs, then given in_dim 392 and kairo's indices (its forward only gathers them).
* input — torchlogix gets the uint8 batch through ``nn.Unflatten`` (a channel axis) and
  ``FixedBinarization(127)``; kairo's Binarize reads (n, 28, 28). Both reduce the 16 relaxed
  gates to 4 coefficients per neuron.

Timing: warm-up steps, then each step timed alone (batch gather included, evaluation
excluded); both train on to a common step count and report relaxed and discrete test
accuracy there (the loss sits on a plateau for ~100 steps, hence 200). Load averages are
recorded; the machine may be shared, so the ratio matters more than the absolute numbers.

Threads: the headline gives both one core (``--threads 1``); torch's default count is timed
too. On shared cores torch's OpenMP threads wait on each other at every op: torchlogix took
~1.9 s per step with 2 threads at load 3–4 on 2 cores and ~0.09 s with 1, so one thread is
the comparison that is fairest to torchlogix there.

Usage::

    KAIRO_DATA_DIR=../shared/data python benchmarks/logic_training.py [--iters-kairo N]
        [--iters-torchlogix M] [--threads T] [--work DIR] [--quick] [--out PATH]

Writes benchmarks/results/logic_training.json (``_quick`` with --quick).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime as dt
import importlib
import os
import platform
import sys
import time
import types
from importlib.metadata import distributions, version
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kairo.results import cpu_model
from kairo.logic import LogicConv2d, LogicTrainConfig, build_model, fused_threads, load_data

from _common import atomic_write_json, loadavg, pip_install_no_deps

HERE = Path(__file__).resolve().parent
TORCHLOGIX = "torchlogix==0.2.2"
CFG = {"classes": (0, 1), "kernels": 4, "hidden": 100, "iters": 600}  # the issue's net
DIFFERENCES = {     # what the two networks do not share (see the module docstring)
    "wiring_and_init": "torchlogix's own random wiring and residual init are overwritten with "
                       "kairo's wiring (its index buffers) and kairo's N(0, 1) logits, so both "
                       "train the same network from the same state (checked: outputs and "
                       "gradients agree to float rounding)",
    "dense_392_to_100": "torchlogix's LogicDense asserts in_dim <= 2*out_dim; it is built for "
                        "200 inputs, then given in_dim 392 and kairo's indices",
    "circuit_module": "torchlogix.circuit replaced by a stand-in (3.12-only syntax; unused "
                      "in training)",
    "input": "torchlogix gets the same uint8 batch through nn.Unflatten (adds the channel "
             "axis) and FixedBinarization(127); kairo's Binarize reads (n, 28, 28) directly",
}


# ------------------------------------------------------------------------------ torchlogix
def import_torchlogix(tlx_dir: Path):
    """torchlogix's package from ``tlx_dir`` (installed there without deps when missing)."""
    if not (tlx_dir / "torchlogix" / "layers" / "conv.py").is_file():
        err = pip_install_no_deps(tlx_dir, TORCHLOGIX)
        if err:
            raise SystemExit(f"pip install --no-deps {TORCHLOGIX} failed: {err}")
    stub = types.ModuleType("torchlogix.circuit")   # 3.12-only syntax; unused in training
    stub.Circuit = type("Circuit", (), {})
    sys.modules["torchlogix.circuit"] = stub
    sys.path.insert(0, str(tlx_dir))
    tlx = importlib.import_module("torchlogix")
    if not Path(tlx.__file__).resolve().is_relative_to(tlx_dir.resolve()):
        raise SystemExit(f"imported torchlogix from {tlx.__file__}, not from {tlx_dir}")
    ver = next((d.version for d in distributions(path=[str(tlx_dir)])
                if d.metadata["Name"] == "torchlogix"), "unknown")
    return tlx, ver


def _tlx_conv(L, kc: LogicConv2d, side: int) -> nn.Module:
    """torchlogix's LogicConv2d with the wiring and logits of kairo's ``kc``."""
    tc = L.LogicConv2d(in_dim=side, channels=kc.in_channels, num_kernels=kc.out_channels,
                       tree_depth=kc.depth, receptive_field_size=kc.receptive,
                       stride=kc.stride, padding=kc.padding)
    ho, wo = kc.out_size(side, side)
    oy = (torch.arange(ho) * kc.stride).repeat_interleave(wo)             # (P,) row-major
    ox = (torch.arange(wo) * kc.stride).repeat(ho)
    chan = kc.channels[:, torch.arange(2 ** kc.depth) % 2]                # (K, S): ca, cb, …
    idx = torch.stack([oy[None, :, None] + kc.dy[:, None, :],             # (K, P, S, 3)
                       ox[None, :, None] + kc.dx[:, None, :],             # padded (h, w, c)
                       chan[:, None, :].expand(-1, ho * wo, -1)], -1)
    # its level-0 buffer is (2, K, P, leaves, 3): input a of every leaf, then input b
    tc.connections._indices_L0 = torch.stack([idx[:, :, 0::2], idx[:, :, 1::2]]).contiguous()
    lo = 0
    with torch.no_grad():
        for w in tc.tree_weights:                   # (nodes, K, 16), leaves first, as kairo
            w.copy_(kc.weight[:, lo:lo + w.shape[0]].transpose(0, 1))
            lo += w.shape[0]
    return tc


def torchlogix_net(tlx, kairo_model: nn.Module) -> nn.Module:
    """torchlogix's layers in kairo's architecture, holding ``kairo_model``'s wiring and logits."""
    L = tlx.layers
    side = kairo_model.image_shape[0]              # MNIST: square, one channel
    layers = [nn.Unflatten(1, (1, side)),           # (n, 28, 28) uint8 → (n, 1, 28, 28)
              L.FixedBinarization(kairo_model.binarize.t.clone(), feature_dim=1)]
    for m in kairo_model.features:
        if isinstance(m, LogicConv2d):
            layers.append(_tlx_conv(L, m, side))
        else:
            layers.append(L.OrPooling2d(kernel_size=m.kernel, stride=m.stride))
        side = m.out_size(side, side)[0]
    layers.append(nn.Flatten())                     # channel-major, as kairo's flatten(1)
    for kd in kairo_model.logic:
        td = L.LogicDense(min(kd.n_in, 2 * kd.n_out), kd.n_out)   # it asserts in ≤ 2·out
        td.in_dim = td.connections.in_dim = kd.n_in
        td.connections.indices = torch.stack(kd.sources()).clone()   # (2, n_out)
        with torch.no_grad():
            td.weight.copy_(kd.weight)
        layers.append(td)
    return nn.Sequential(*layers, L.GroupSum(kairo_model.head.k, kairo_model.head.tau))


def logits(model: nn.Module, grad: bool = False) -> list[torch.Tensor]:
    """Every gate layer's logits (or their gradients) in kairo's layout: (K, 2^d − 1, 16) or
    (n_out, 16)."""
    out = []
    for m in model.modules():
        kind = type(m).__name__
        if kind == "LogicDense":
            out.append(m.weight.grad if grad else m.weight)
        elif kind == "LogicConv2d" and hasattr(m, "tree_weights"):
            out.append(torch.cat([(w.grad if grad else w).transpose(0, 1)
                                  for w in m.tree_weights], 1))
        elif kind == "LogicConv2d":
            out.append(m.weight.grad if grad else m.weight)
    return [t.detach() for t in out]


def check_same(km: nn.Module, tm: nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict:
    """Relaxed outputs, gradients and discrete outputs of the two networks on one batch."""
    diff = {}
    for name, m in (("kairo", km), ("torchlogix", tm)):
        m.train()
        m.zero_grad()
        with fused_threads(km) if m is km else contextlib.nullcontext():
            out = m(x)
            nn.functional.cross_entropy(out, y).backward()
        diff[name] = (out.detach(), logits(m, grad=True))
        with torch.no_grad():
            diff[name] += (m.eval()(x),)
        m.zero_grad()
    (ko, kg, kd), (to, tg, td) = diff["kairo"], diff["torchlogix"]
    res = {"relaxed_outputs_max_abs_diff": float((ko - to).abs().max()),
           "grad_max_rel_diff": max(float((a - b).abs().max() / b.abs().max())
                                    for a, b in zip(kg, tg)),
           "discrete_outputs_equal": bool(torch.equal(kd, td))}
    if not (res["relaxed_outputs_max_abs_diff"] < 1e-4 and res["grad_max_rel_diff"] < 1e-3
            and res["discrete_outputs_equal"]):
        raise SystemExit(f"kairo and torchlogix compute different things: {res}")
    return res


def gate_layers(model: nn.Module) -> list[dict]:
    """Trainable gates (a conv tree once, not per position) and logits of each gate layer."""
    out = []
    for m in model.modules():
        kind = type(m).__name__
        if kind not in ("LogicConv2d", "LogicDense"):
            continue
        n_par = sum(p.numel() for p in m.parameters())
        out.append({"layer": kind, "gates": n_par // 16, "parameters": n_par})
    return out


# ------------------------------------------------------------------------------ training
@torch.no_grad()
def accuracy(model, x: np.ndarray, y: np.ndarray, discrete: bool, batch: int = 256) -> float:
    was = model.training
    model.train(not discrete)                       # train mode: the relaxed (soft) network
    hits = sum(int((model(torch.from_numpy(x[s:s + batch])).argmax(1).numpy()
                    == y[s:s + batch]).sum()) for s in range(0, len(y), batch))
    model.train(was)
    return hits / len(y)


def run(model, ctx, data, cfg, *, threads: int, warmup: int, timed: int, acc_at: int) -> dict:
    """Train ``warmup + timed`` steps (and on to ``acc_at`` when > 0); time each step."""
    torch.set_num_threads(threads)
    xtr, ytr = data["train"]
    gen = torch.Generator().manual_seed(cfg.seed)   # the same batches for every model
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    loss_fn = nn.CrossEntropyLoss()
    model.train()
    secs, losses, acc = [], [], {}
    lb = loadavg()
    with ctx(model):
        for it in range(max(warmup + timed, acc_at)):
            t0 = time.perf_counter()
            idx = torch.randint(0, len(ytr), (cfg.batch,), generator=gen).numpy()
            xb, yb = torch.from_numpy(xtr[idx]), torch.from_numpy(ytr[idx])
            loss = loss_fn(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            secs.append(time.perf_counter() - t0)
            losses.append(loss.item())
            if it + 1 == acc_at:
                xt, yt = data["test"]
                acc = {"at_iter": acc_at, "n_test": len(yt),
                       "test_relaxed": accuracy(model, xt, yt, discrete=False),
                       "test_discrete": accuracy(model, xt, yt, discrete=True)}
    la = loadavg()
    win = np.array(secs[warmup:warmup + timed])
    return {"threads": threads, "warmup_iters": warmup, "timed_iters": timed,
            "iters_per_s": timed / win.sum(), "ms_per_iter_mean": 1e3 * win.mean(),
            "ms_per_iter_median": 1e3 * float(np.median(win)),
            "ms_per_iter_min": 1e3 * win.min(), "ms_first_iter": 1e3 * secs[0],
            "loss_first": losses[0], "loss_last": losses[-1], "iters_run": len(losses),
            "loss_mean_first10": float(np.mean(losses[:10])),
            "loss_mean_last10": float(np.mean(losses[-10:])),
            "loss_every_20": [round(v, 4) for v in losses[::20]],
            **({"accuracy": acc} if acc else {}), "loadavg_before": lb, "loadavg_after": la,
            "_losses": losses}


# ------------------------------------------------------------------------------ main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iters-kairo", type=int, default=200, help="timed kairo steps")
    ap.add_argument("--iters-torchlogix", type=int, default=50, help="timed torchlogix steps")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--acc-iters", type=int, default=200,
                    help="steps after which both report test accuracy (0: skip); the loss "
                         "sits on a plateau for the first ~100")
    ap.add_argument("--threads", type=int, default=1,
                    help="core budget of both in the headline; torch's default thread count "
                         "is also timed (without --quick)")
    ap.add_argument("--work", default="/tmp/kairo-logic-bench",
                    help="where torchlogix is installed (pip --no-deps --target WORK/torchlogix)")
    ap.add_argument("--quick", action="store_true",
                    help="50/5 timed steps, accuracy at 20, headline threads only")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.quick:
        args.iters_kairo, args.iters_torchlogix, args.acc_iters = 50, 5, 20
    cfg = LogicTrainConfig(**CFG, data_dir=os.environ.get("KAIRO_DATA_DIR"))
    tlx, tlx_version = import_torchlogix(Path(args.work) / "torchlogix")
    data = load_data(cfg)
    # [n, 28, 28, 1] → [n, 28, 28]: the layout torchlogix's Unflatten reads (kairo takes both)
    data = {k: (v[0][..., 0], v[1]) if k != "shape" else v for k, v in data.items()}
    arch = {k: v for k, v in dataclasses.asdict(cfg).items() if k in (
        "classes", "thresholds", "kernels", "conv_blocks", "conv_growth", "receptive",
        "conv_depth", "padding", "hidden", "layers", "wiring", "tau", "lr", "batch", "seed")}
    res = {"script": "benchmarks/logic_training.py",
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "cpu": cpu_model(), "cpu_count": os.cpu_count(),
           "python": platform.python_version(),
           "versions": {**{p: version(p) for p in ("kairo", "torch", "numpy", "numba")},
                        "torchlogix": tlx_version},
           "torch_default_threads": torch.get_num_threads(),
           "headline_threads": args.threads,
           "command": "kairo logic train --classes 0,1 --kernels 4 --hidden 100 --iters 600",
           "architecture": {**arch, "feature_sizes": cfg.feature_sizes(),
                            "n_train": len(data["train"][1])},
           "threads_note": "kairo: fused_threads — torch single-threaded, its fused numba loops "
                           "on T Python threads; torchlogix: torch.set_num_threads(T)",
           "differences": DIFFERENCES,
           "runs": {}}
    default_threads = torch.get_num_threads()
    thread_list = [args.threads] + ([default_threads] if default_threads != args.threads
                                    and not args.quick else [])
    nets = {"kairo": (lambda: build_model(cfg), fused_threads, args.iters_kairo),
            "torchlogix": (lambda: torchlogix_net(tlx, build_model(cfg)),
                           lambda m: contextlib.nullcontext(), args.iters_torchlogix)}
    km, tm = (make() for make, _, _ in nets.values())
    layers = {"kairo": gate_layers(km), "torchlogix": gate_layers(tm)}
    if layers["kairo"] != layers["torchlogix"]:
        raise SystemExit(f"gate layers differ: {layers}")
    res["architecture"]["gate_layers"] = layers["kairo"]
    idx = np.arange(cfg.batch)
    res["same_network_check"] = check_same(km, tm, torch.from_numpy(data["train"][0][idx]),
                                           torch.from_numpy(data["train"][1][idx]))
    print(f"gates per layer (both): {[g['gates'] for g in layers['kairo']]}; "
          f"same network: {res['same_network_check']}; load {loadavg()}")
    for threads in thread_list:
        key = f"threads_{threads}"
        res["runs"][key] = {}
        for name, (make, ctx, n) in nets.items():
            acc_at = args.acc_iters if threads == args.threads else 0
            r = run(make(), ctx, data, cfg, threads=threads, warmup=args.warmup, timed=n,
                    acc_at=acc_at)
            res["runs"][key][name] = r
            acc = r.get("accuracy", {})
            print(f"T={threads} {name:10s} {r['iters_per_s']:8.2f} it/s "
                  f"{r['ms_per_iter_median']:8.1f} ms/it (median)  loss {r['loss_first']:.3f}"
                  f" → {r['loss_last']:.3f}  acc@{acc.get('at_iter', '-')} relaxed "
                  f"{acc.get('test_relaxed', float('nan')):.2%} discrete "
                  f"{acc.get('test_discrete', float('nan')):.2%}  load {r['loadavg_before']}"
                  f" → {r['loadavg_after']}")
        rr = res["runs"][key]
        lk, lt = rr["kairo"].pop("_losses"), rr["torchlogix"].pop("_losses")
        n = min(len(lk), len(lt))              # same start, same batches: the losses track
        rr["loss_max_abs_diff"] = {"iters": n, "value": float(np.abs(
            np.subtract(lk[:n], lt[:n])).max())}
        rr["ratio_kairo_over_torchlogix"] = (rr["kairo"]["iters_per_s"]
                                             / rr["torchlogix"]["iters_per_s"])
        print(f"T={threads} kairo / torchlogix: {rr['ratio_kairo_over_torchlogix']:.1f}×")
    head = res["runs"][f"threads_{args.threads}"]
    res["headline"] = {"threads": args.threads,
                       **{f"{n}_iters_per_s": head[n]["iters_per_s"] for n in nets},
                       "ratio_kairo_over_torchlogix": head["ratio_kairo_over_torchlogix"]}
    print(f"\n{'threads':>7} {'kairo it/s':>11} {'torchlogix it/s':>16} {'ratio':>7}")
    for key, rr in res["runs"].items():
        print(f"{rr['kairo']['threads']:>7} {rr['kairo']['iters_per_s']:>11.1f} "
              f"{rr['torchlogix']['iters_per_s']:>16.2f} "
              f"{rr['ratio_kairo_over_torchlogix']:>6.1f}×")
    out = Path(args.out) if args.out else \
        HERE / "results" / f"logic_training{'_quick' if args.quick else ''}.json"
    atomic_write_json(out, res)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
