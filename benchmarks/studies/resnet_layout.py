"""Which memory layout should kairo's ResNet compute in on this CPU? Times its training and
inference steps in both layouts (``layout="channels_last"``, [B, C, 1, T], and ``"bct"``,
[B, C, T]) next to the same network written plainly in [B, C, T] (Conv1d / BatchNorm1d, weights
copied from kairo's, outputs checked equal first), interleaved, on [64, 1, 700] inputs, and
says which layout ``layout="auto"`` picks here.

Channels-last was the faster layout on an AVX-512 EPYC (2026-11-30); on an AVX2-only EPYC
(2026-12-02) kairo's channels-last ResNet fell to 0.75× tsai's in training. This probe separates
the layout from everything else that differs from tsai's model, and is the evidence behind
``kairo.tsc._encoders.resnet_layout``'s rule.

Usage::

    python benchmarks/studies/resnet_layout.py [--repeats 5] [--threads 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, timezone
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # benchmarks/: _common
from _common import atomic_write_json, loadavg  # noqa: E402

RESULTS = Path(__file__).resolve().parents[1] / "results"


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


def main(argv=None) -> int:
    from attention_speed import FULL, SEED, time_models
    from kairo.results import environment
    from kairo.tsc import ModelConfig, build_classifier

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats per model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS / "resnet_layout.json")
    args = parser.parse_args(argv)
    for name in ("repeats", "threads"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be ≥ 1, got {getattr(args, name)}")
    torch.set_num_threads(args.threads)
    cfg = dict(FULL, repeats=args.repeats)

    def build_kairo(layout="auto"):
        model = build_classifier(ModelConfig(encoder="resnet", blocks=3, pool="mean"), 1,
                                 cfg["n_classes"], cfg["length"])
        model.encoder.layout = layout
        return model

    # the same function first: the timing compares layouts only if the copy is kairo's model
    torch.manual_seed(SEED)
    kairo = build_kairo()
    if any(isinstance(m, nn.LayerNorm) for m in kairo.head.modules()):
        parser.error("this probe mirrors the default head (no LayerNorm)")
    plain = PlainResNet(kairo)
    x = torch.randn(cfg["batch"], 1, cfg["length"])
    diff = {}
    with torch.no_grad():
        ref = plain.train()(x)
        for layout in ("channels_last", "bct"):
            kairo.encoder.layout = layout
            diff[layout] = (kairo.train()(x) - ref).abs().max().item()
    if max(diff.values()) > 1e-4:
        print(f"kairo's layouts and the [B, C, T] copy differ: max |Δ| {diff}", file=sys.stderr)
        return 1
    from kairo.tsc._encoders import resnet_layout

    env = environment()          # torch is imported: its kernels are recorded
    res = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
           "command": "python benchmarks/studies/resnet_layout.py "
                      + " ".join(argv or sys.argv[1:]),
           "machine": {**env, "cpu_model": env["cpu"],
                       "cpu_capability": env["torch_cpu_capability"],
                       "torch_num_threads": torch.get_num_threads()},
           "auto_layout": resnet_layout("auto"),
           "setup": "kairo ResNet (default config, 3 blocks, kernels 8-5-3) with layout "
                    "channels_last and bct, and a plain [B, C, T] copy with its weights; "
                    "attention_speed.py's timer (x [64, 1, 700], train and inference steps, "
                    "repeats interleaved, best and median)",
           "max_abs_diff_train_forward_vs_copy": diff, "loadavg_start": loadavg()}
    # time_models seeds each build alike, so the copy gets the weights of the kairo it times
    res["models"] = time_models({"kairo_channels_last": lambda: build_kairo("channels_last"),
                                 "kairo_bct": lambda: build_kairo("bct"),
                                 "same_net_bct": lambda: PlainResNet(build_kairo())}, cfg)
    m = res["models"]

    def ratio(a, b):
        return {step: {stat: round(m[a][step][f"samples_per_s_{stat}"]
                                   / m[b][step][f"samples_per_s_{stat}"], 3)
                       for stat in ("best", "median")} for step in ("train", "infer")}

    res["ratio_channels_last_over_bct"] = ratio("kairo_channels_last", "kairo_bct")
    res["ratio_kairo_bct_over_copy"] = ratio("kairo_bct", "same_net_bct")
    res["loadavg_end"] = loadavg()
    atomic_write_json(args.out, res)
    r = res["ratio_channels_last_over_bct"]
    print(f"kairo channels-last / kairo [B, C, T] ({res['machine']['cpu_capability']}, auto "
          f"picks {res['auto_layout']}): train ×{r['train']['best']} (median "
          f"×{r['train']['median']}), infer ×{r['infer']['best']} (median "
          f"×{r['infer']['median']}); kairo [B, C, T] / plain copy: train "
          f"×{res['ratio_kairo_bct_over_copy']['train']['best']}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
