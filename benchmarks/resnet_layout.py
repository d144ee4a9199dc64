"""Does kairo's channels-last ResNet pay on this CPU? Times its training step against the same
network in PyTorch's plain [B, C, T] layout (Conv1d / BatchNorm1d, weights copied from kairo's,
outputs checked equal first), interleaved, on [64, 1, 700] inputs.

kairo's ResNet computes on channels-last [B, C, 1, T] activations because oneDNN ran its
convolutions faster that way on the machine measured on 2026-11-30; on an AVX2-only EPYC
(2026-12-02) kairo's ResNet fell to 0.75× tsai's in training. This probe separates the layout
from everything else that differs from tsai's model.

Usage::

    python benchmarks/resnet_layout.py [--repeats 5] [--steps 4] [--threads 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import atomic_write_json, loadavg  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


class PlainBlock(nn.Module):
    """kairo's residual block in [B, C, T]: conv→BN→ReLU ×2, conv→BN, + shortcut, ReLU."""

    def __init__(self, kairo_block):
        super().__init__()
        self.kernel_sizes = kairo_block.kernel_sizes
        self.convs = nn.ModuleList(nn.Conv1d(c.in_channels, c.out_channels, c.kernel_size[0],
                                             bias=False) for c in kairo_block.convs)
        self.norms = nn.ModuleList(nn.BatchNorm1d(n.num_features) for n in kairo_block.norms)
        sc = kairo_block.shortcut
        if isinstance(sc, nn.Sequential):
            self.shortcut = nn.Sequential(
                nn.Conv1d(sc[0].in_channels, sc[0].out_channels, 1, bias=False),
                nn.BatchNorm1d(sc[1].num_features))
        else:
            self.shortcut = nn.BatchNorm1d(sc.num_features)
        self.load_state_dict(kairo_block.state_dict())

    def forward(self, x):
        h = x
        for i, (conv, norm, k) in enumerate(zip(self.convs, self.norms, self.kernel_sizes)):
            h = norm(conv(F.pad(h, ((k - 1) // 2, k // 2))))     # 'same', one more on the right
            if i < len(self.convs) - 1:
                h = F.relu(h)
        return F.relu(h + self.shortcut(x))


class PlainResNet(nn.Module):
    def __init__(self, kairo_model):
        super().__init__()
        self.blocks = nn.Sequential(*(PlainBlock(b) for b in kairo_model.encoder.blocks))
        self.head = nn.Linear(kairo_model.head[-1].in_features, kairo_model.head[-1].out_features)
        self.head.load_state_dict(kairo_model.head[-1].state_dict())

    def forward(self, x):
        return self.head(self.blocks(x).mean(dim=2))


def rate(model, opt, x, y, steps):
    t0 = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        opt.step()
    return len(x) * steps / (time.perf_counter() - t0)


def main(argv=None) -> int:
    from kairo._runs import cpu_model, environment
    from kairo.attention import ModelConfig, build_classifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=4, help="training steps per timed repeat")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "resnet_layout.json")
    args = parser.parse_args(argv)
    for name in ("repeats", "steps", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be ≥ 1, got {getattr(args, name)}")
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    x, y = torch.randn(64, 1, 700), torch.randint(0, 10, (64,))
    kairo = build_classifier(ModelConfig(encoder="resnet", layers=3, pool="mean"), 1, 10, 700)
    plain = PlainResNet(kairo)
    if any(isinstance(m, nn.LayerNorm) for m in kairo.head.modules()):
        parser.error("this probe mirrors the default head (no LayerNorm)")
    kairo.train(), plain.train()
    with torch.no_grad():
        diff = (kairo(x) - plain(x)).abs().max().item()
    if diff > 1e-4:
        print(f"the [B, C, T] copy does not compute kairo's function: max |Δ| {diff:.2e}",
              file=sys.stderr)
        return 1
    models = {"kairo_channels_last": kairo, "same_net_bct": plain}
    opts = {k: torch.optim.AdamW(m.parameters(), 1e-3) for k, m in models.items()}
    res = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": "python benchmarks/resnet_layout.py " + " ".join(argv or sys.argv[1:]),
           "machine": {**environment(), "cpu_model": cpu_model(),
                       "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                       "torch_num_threads": torch.get_num_threads()},
           "setup": "kairo ResNet (default config, 3 blocks, kernels 8-5-3) and a [B, C, T] "
                    "copy with its weights; x [64, 1, 700]; train step = forward + "
                    "cross-entropy + backward + AdamW; repeats interleaved",
           "max_abs_diff_train_forward": diff, "loadavg_start": loadavg(),
           "samples_per_s": {k: [] for k in models}}
    for k, m in models.items():                                     # warm-up, untimed
        rate(m, opts[k], x, y, 2)
    for r in range(args.repeats):
        for k, m in models.items():
            res["samples_per_s"][k].append(round(rate(m, opts[k], x, y, args.steps), 2))
        print(f"repeat {r + 1}/{args.repeats}: " + ", ".join(
            f"{k} {v[-1]}" for k, v in res["samples_per_s"].items()), flush=True)
    best = {k: max(v) for k, v in res["samples_per_s"].items()}
    med = {k: statistics.median(v) for k, v in res["samples_per_s"].items()}
    res["ratio_kairo_over_bct"] = {"best": round(best["kairo_channels_last"]
                                                 / best["same_net_bct"], 3),
                                   "median": round(med["kairo_channels_last"]
                                                   / med["same_net_bct"], 3)}
    res["loadavg_end"] = loadavg()
    atomic_write_json(args.out, res)
    ratio = res["ratio_kairo_over_bct"]
    print(f"kairo channels-last / same net in [B, C, T]: best ×{ratio['best']}, median "
          f"×{ratio['median']} ({res['machine']['cpu_capability']}); wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
