"""Training and inference speed of kairo.tsc's classifiers against torch.nn.TransformerEncoder
and tsai's TST / ResNet, with a same-computation check and an optional equal-budget accuracy run.

Sections (each records the load average before and after, because the machine is shared):

1. equivalence — the weights of a ``torch.nn.TransformerEncoderLayer`` (d 64, 4 heads, FF 256,
                 gelu, batch_first) copied into kairo's ``TransformerBlock`` give the same
                 outputs (eval mode, post-LN and pre-LN, with and without a key-padding mask).
2. speed       — samples/s on x [64, 1, 700] (``--length`` T), 10 classes, 2 torch threads:
                 training (forward, cross-entropy, backward, AdamW step) and inference (eval,
                 no_grad). Models: kairo's default classifier (``ModelConfig()``, what ``kairo
                 tsc train`` builds: 3 stem blocks up to 512 steps, 1 beyond) and its one-block
                 variant, kairo Transformer (step tokens, pre-LN and post-LN, with dropout 0 for the
                 equal-computation ratio, and with attention dropout 0.1 for reference), kairo
                 patch-16 Transformer, kairo ResNet1D (kernels 8, 5, 3 as Fawaz et al.; and
                 7, 5, 3 as tsai's ResNet, for the equal-computation ratio);
                 ``nn.TransformerEncoder`` with its defaults (FF 2048, dropout 0.1 also on the
                 attention weights, relu, post-LN, sequence-first) and at kairo's size (FF 256,
                 gelu, batch_first; dropout 0.1 and 0), each wrapped in the same Linear(1 → 64)
                 embedding, sinusoidal positions, mean pooling and linear head.
3. tsai        — tsai's TST and ResNet timed by the same code in a subprocess run by the tsai
                 environment's Python (``--tsai-python``, default ../.tsai-venv/bin/python).
                 That environment has no torchvision (the only wheel is built for CUDA torch and
                 breaks the CPU torch), but fastai imports it, so the subprocess gets a minimal
                 stand-in ``torchvision`` package (empty ``models``, a placeholder
                 ``transforms.functional.pad``) written to a temporary folder on its PYTHONPATH
                 only; TST and ResNet never call it. Without tsai the section says so and the
                 run goes on.
4. accuracy    — (``--accuracy``) the same training loop, budget and seeds for kairo's
                 Transformer (pre-LN, the default, and post-LN) and ResNet, the same-size
                 torch encoder and tsai's TST and ResNet on GunPoint and MNIST-1D (length
                 40), z-normalized; test accuracy per seed.
                 ``--accuracy-only`` skips the timings (sections 2 and 3's speed part) and
                 writes ``attention_speed_accuracy.json``; ``--acc-seeds N`` runs seeds 0..N-1;
                 ``--resnet-ablation`` adds kairo ResNets changed in the ways tsai's differs,
                 and the default before 2026-12-02 with each half of that change alone;
                 ``--acc-models a,b`` runs only those models, ``--acc-datasets`` only those
                 datasets; ``--acc-epochs MNIST1D=40`` changes a dataset's budget.

Usage::

    python benchmarks/attention_speed.py [--quick] [--accuracy | --accuracy-only] [--acc-seeds N]
        [--resnet-ablation] [--acc-models NAMES] [--acc-datasets NAMES] [--acc-epochs NAME=N]

Results go to ``benchmarks/results/attention_speed.json`` (``attention_speed_quick.json`` with
``--quick``, a smoke run of under a minute on short series). Compare *ratios* within one run,
not absolute rates across runs: the load average next to each section says how busy the cores
were. Timed repeats of the in-process models are interleaved, so a burst of load from other
jobs hits them alike; ratios use the best repeat, the median is recorded too.

The module imports only the standard library, NumPy and torch at the top, so the tsai
environment can run it as the subprocess worker (``--tsai-worker``) and time tsai's models
with exactly the functions that time kairo's.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from _common import atomic_write_json, loadavg, section

THREADS = 2
SEED = 20240611
# the tsai environment of docs/benchmarks.md, beside the checkout
DEFAULT_TSAI_PYTHON = Path(__file__).resolve().parents[2] / ".tsai-venv" / "bin" / "python"
RESULTS = Path(__file__).resolve().parent / "results"

# accuracy runs use one thread: their times are not compared, and one thread keeps them
# reproducible and clear of OpenMP barrier stalls when other jobs hold the cores
FULL = dict(batch=64, length=700, n_classes=10, warmup_steps=2, repeats=3, repeat_s=3.0,
            max_steps=50, tsai_timeout_s=1800, acc_threads=1,
            acc_epochs={"GunPoint": 100, "MNIST1D": 5}, acc_batch=32,
            acc_seeds={"GunPoint": (0, 1), "MNIST1D": (0,)})
QUICK = dict(batch=8, length=64, n_classes=10, warmup_steps=1, repeats=1, repeat_s=0.1,
             max_steps=3, tsai_timeout_s=120, acc_threads=1,
             acc_epochs={"GunPoint": 2, "MNIST1D": 1}, acc_batch=32,
             acc_seeds={"GunPoint": (0,), "MNIST1D": (0,)})

TORCHVISION_STUB_NOTE = (
    "tsai runs in a subprocess of the tsai environment's Python. fastai imports torchvision, "
    "which that environment lacks (the only wheel is built for CUDA torch and breaks the CPU "
    "torch), so the subprocess gets a minimal stand-in torchvision package (empty models, a "
    "transforms.functional.pad placeholder that raises) in a temporary folder on its "
    "PYTHONPATH only; tsai's TST and ResNet never call it.")
_STUB_FILES = {
    "torchvision/__init__.py": '"""Stand-in for fastai\'s imports (benchmarks/attention_speed.py)'
                               '."""\n__version__ = "0.0.0+kairo.stub"\n'
                               "from . import models, transforms  # noqa: F401\n",
    "torchvision/models/__init__.py": "",
    "torchvision/transforms/__init__.py": "from . import functional  # noqa: F401\n",
    "torchvision/transforms/functional.py":
        "def pad(*args, **kwargs):\n"
        "    raise NotImplementedError('stand-in torchvision: pad is not available')\n",
}


# ------------------------------------------------------------------------------- helpers
def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())




# ------------------------------------------------------------------------------- timing
# Shared by this process and the tsai worker: every model is timed by the same code.
class Timer:
    """Train and inference steps of one model on one fixed batch x [B, C, T], y [B]."""

    def __init__(self, name: str, model: nn.Module, x: torch.Tensor, y: torch.Tensor):
        self.name, self.model, self.x, self.y = name, model, x, y
        self.opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        self.steps = {"train": 1, "infer": 1}
        self.times = {"train": [], "infer": []}

    def train_step(self) -> None:
        self.model.train()
        loss = F.cross_entropy(self.model(self.x), self.y)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        self.opt.step()

    @torch.no_grad()
    def infer_step(self) -> None:
        self.model.eval()
        self.model(self.x)

    def _run(self, kind: str, n: int) -> float:
        step = self.train_step if kind == "train" else self.infer_step
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        return time.perf_counter() - t0

    def warm_up(self, cfg: dict) -> None:
        """Untimed steps; the last one sizes the timed repeats to about ``repeat_s`` each."""
        for kind in ("train", "infer"):
            for _ in range(cfg["warmup_steps"] - 1):
                self._run(kind, 1)
            per_step = self._run(kind, 1)
            self.steps[kind] = max(1, min(cfg["max_steps"], round(cfg["repeat_s"] / per_step)))

    def repeat(self) -> None:
        gc.collect()
        for kind in ("train", "infer"):
            self.times[kind].append(self._run(kind, self.steps[kind]))

    def record(self) -> dict:
        b = self.x.shape[0]
        rec = {"params": n_params(self.model)}
        for kind in ("train", "infer"):
            rates = [b * self.steps[kind] / t for t in self.times[kind]]
            rec[kind] = {"steps_per_repeat": self.steps[kind],
                         "times_s": [round(t, 4) for t in self.times[kind]],
                         "samples_per_s_best": round(max(rates), 2),
                         "samples_per_s_median": round(statistics.median(rates), 2)}
        return rec


def time_models(builders: dict, cfg: dict, log=print) -> dict:
    """Samples/s of every model: warm up each, then interleave the timed repeats."""
    g = torch.Generator().manual_seed(SEED)
    x = torch.randn(cfg["batch"], 1, cfg["length"], generator=g)                  # [B,1,T]
    y = torch.randint(0, cfg["n_classes"], (cfg["batch"],), generator=g)          # [B]
    timers = []
    for name, build in builders.items():
        torch.manual_seed(SEED)
        t = Timer(name, build(), x, y)
        t0 = time.perf_counter()
        t.warm_up(cfg)
        log(f"   warm {name:<36} {time.perf_counter() - t0:6.1f} s  steps/repeat "
            f"{t.steps}", flush=True)
        timers.append(t)
    for r in range(cfg["repeats"]):
        for t in timers:
            t.repeat()
        log(f"   repeat {r + 1}/{cfg['repeats']} done (loadavg {loadavg()})", flush=True)
    out = {}
    for t in timers:
        out[t.name] = t.record()
        log(f"   {t.name:<38} train {out[t.name]['train']['samples_per_s_best']:>9.1f}  "
            f"infer {out[t.name]['infer']['samples_per_s_best']:>9.1f} samples/s", flush=True)
    return out


def thread_probe(steps: int = 3) -> dict:
    """ms per training step of a small kairo Transformer (x [16, 1, 128]) at 1 and 2 threads.

    On an idle machine 2 threads are faster; when other jobs hold the cores, OpenMP barriers
    stall and 2 threads can be many times slower, which makes every 2-thread figure here
    contention-bound (compare ratios only)."""
    from kairo.tsc import ModelConfig, build_classifier

    before = torch.get_num_threads()
    rec = {}
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            torch.manual_seed(SEED)
            x, y = torch.randn(16, 1, 128), torch.randint(0, 10, (16,))
            t = Timer(f"probe_{n}", build_classifier(ModelConfig(pool="mean"), 1, 10, 128), x, y)
            t._run("train", 1)
            rec[f"ms_per_step_{n}_thread{'s' * (n > 1)}"] = round(
                1e3 * statistics.median(t._run("train", 1) for _ in range(steps)), 2)
    finally:
        torch.set_num_threads(before)
    rec["two_over_one"] = round(rec["ms_per_step_2_threads"] / rec["ms_per_step_1_thread"], 3)
    return rec


# ------------------------------------------------------------------------------- accuracy
def _batches(n: int, batch: int) -> list[tuple[int, int]]:
    """[start, stop) slices; a last batch of one joins the one before (batch norm needs 2)."""
    starts = list(range(0, n, batch))
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    return list(zip(starts, starts[1:] + [n]))


def train_and_test(build, data: dict, *, epochs: int, batch: int, seed: int) -> dict:
    """AdamW (lr 1e-3, weight decay 0.01, constant), ``epochs`` shuffled passes, then test
    accuracy in eval mode. ``data`` holds z-normalized float32 x_train/x_test [N, C, T] and
    int64 y_train/y_test. The same function trains every model, tsai's included."""
    torch.manual_seed(seed)
    model = build()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    xtr, ytr = torch.from_numpy(data["x_train"]), torch.from_numpy(data["y_train"])
    xte, yte = torch.from_numpy(data["x_test"]), torch.from_numpy(data["y_test"])
    g = torch.Generator().manual_seed(seed)
    t0 = time.perf_counter()
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(ytr), generator=g)
        for s, e in _batches(len(order), batch):
            idx = order[s:e]
            loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    train_s = time.perf_counter() - t0
    model.eval()
    hits = 0
    with torch.no_grad():
        for s in range(0, len(yte), 256):
            hits += int((model(xte[s:s + 256]).argmax(1) == yte[s:s + 256]).sum())
    return {"test_accuracy": round(hits / len(yte), 4), "final_train_loss": round(loss.item(), 4),
            "train_s": round(train_s, 2), "params": n_params(model)}


def accuracy_runs(builders: dict, datasets: dict, cfg: dict, log=print) -> dict:
    """{dataset: {model: {"per_seed": [...], "mean_accuracy": ..}}}, the same budget for all."""
    before = torch.get_num_threads()
    torch.set_num_threads(cfg["acc_threads"])
    try:
        return _accuracy_runs(builders, datasets, cfg, log)
    finally:
        torch.set_num_threads(before)


def _accuracy_runs(builders, datasets, cfg, log):
    if cfg.get("acc_models"):
        builders = {k: v for k, v in builders.items() if k in cfg["acc_models"]}
    out = {}
    for dname, data in datasets.items():
        n_classes = int(max(data["y_train"].max(), data["y_test"].max())) + 1
        shape = data["x_train"].shape
        out[dname] = {}
        for name, make in builders.items():
            def build(make=make, c=shape[1], k=n_classes, t=shape[2]):
                return make(c, k, t)

            runs = [train_and_test(build, data,
                                   epochs=cfg["acc_epochs"][dname], batch=cfg["acc_batch"],
                                   seed=s) for s in cfg["acc_seeds"][dname]]
            accs = [r["test_accuracy"] for r in runs]
            out[dname][name] = {"per_seed": runs, "seeds": list(cfg["acc_seeds"][dname]),
                                "mean_accuracy": round(float(np.mean(accs)), 4),
                                "std_accuracy": round(float(np.std(accs)), 4)}
            log(f"   {dname:<9} {name:<28} acc {np.mean(accs):.3f} ± {np.std(accs):.3f}  "
                f"({sum(r['train_s'] for r in runs):.0f} s)", flush=True)
    return out


# ------------------------------------------------------------------------------- torch peer
def _sinusoids(n_pos: int, d: int) -> torch.Tensor:
    """The Vaswani et al. table [n_pos, d]: sin on even, cos on odd features."""
    pos = torch.arange(n_pos, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    table = torch.zeros(n_pos, d)
    table[:, 0::2], table[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return table


class TorchEncoderClassifier(nn.Module):
    """Linear(C → d) per step + sinusoidal positions → ``nn.TransformerEncoder`` → mean over
    steps → Linear(d, n_classes). ``forward(x [B, C, T]) → logits [B, n_classes]``."""

    def __init__(self, n_channels: int, n_classes: int, max_len: int, *, layers: int = 2,
                 **layer_kwargs):
        super().__init__()
        d = layer_kwargs["d_model"]
        self.batch_first = layer_kwargs.get("batch_first", False)
        self.embed = nn.Linear(n_channels, d)
        self.register_buffer("pos", _sinusoids(max_len, d), persistent=False)
        with warnings.catch_warnings():
            # nested tensors only help with padding masks, which this benchmark has none of
            warnings.filterwarnings("ignore", message=".*enable_nested_tensor.*")
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer_kwargs),
                                                 layers)
        self.head = nn.Linear(d, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tok = self.embed(x.transpose(1, 2)) + self.pos[:x.shape[2]]                  # [B,T,d]
        if self.batch_first:
            return self.head(self.encoder(tok).mean(1))
        return self.head(self.encoder(tok.transpose(0, 1)).mean(0))               # [T,B,d]


TORCH_DEFAULTS = dict(d_model=64, nhead=4)         # FF 2048, dropout 0.1, relu, post-LN, seq-first
TORCH_SAME_SIZE = dict(d_model=64, nhead=4, dim_feedforward=256, activation="gelu",
                       batch_first=True)


# ------------------------------------------------------------------------------- equivalence
def copy_torch_layer(src: nn.TransformerEncoderLayer, block) -> None:
    """Copy a torch encoder layer's weights into a kairo ``TransformerBlock`` in place.

    torch stacks q, k, v in ``in_proj_weight`` [3D, D]; kairo's ``kv_proj`` [2D, D] holds the
    k rows then the v rows (its forward views the output as [.., 2, H, hd]), so rows D:3D map
    across unchanged. norm1/norm2 → ln1/ln2, linear1/linear2 → mlp.0/mlp.3.
    """
    from kairo import ConfigError

    sa = src.self_attn
    d = sa.embed_dim
    if block.pre != src.norm_first:
        raise ConfigError(f"norm mismatch: torch norm_first={src.norm_first} needs a kairo "
                          f"block with norm={'pre' if src.norm_first else 'post'}")
    pairs = [(block.attn.q_proj.weight, sa.in_proj_weight[:d]),
             (block.attn.q_proj.bias, sa.in_proj_bias[:d]),
             (block.attn.kv_proj.weight, sa.in_proj_weight[d:]),
             (block.attn.kv_proj.bias, sa.in_proj_bias[d:]),
             (block.attn.out_proj.weight, sa.out_proj.weight),
             (block.attn.out_proj.bias, sa.out_proj.bias),
             (block.ln1.weight, src.norm1.weight), (block.ln1.bias, src.norm1.bias),
             (block.ln2.weight, src.norm2.weight), (block.ln2.bias, src.norm2.bias),
             (block.mlp[0].weight, src.linear1.weight), (block.mlp[0].bias, src.linear1.bias),
             (block.mlp[3].weight, src.linear2.weight), (block.mlp[3].bias, src.linear2.bias)]
    for dst, val in pairs:        # check every shape before changing anything
        if dst.shape != val.shape:
            raise ConfigError(f"layer sizes differ: kairo {tuple(dst.shape)}, torch "
                              f"{tuple(val.shape)}; build both with the same d_model, heads "
                              f"and feed-forward width")
    with torch.no_grad():
        for dst, val in pairs:
            dst.copy_(val)


def paired_layers(norm_first: bool, seed: int = SEED, dropout: float = 0.1):
    """A torch layer at kairo's size and a kairo block holding its weights, both in eval mode."""
    from kairo.tsc import TransformerBlock

    torch.manual_seed(seed)
    ref = nn.TransformerEncoderLayer(dropout=dropout, norm_first=norm_first, **TORCH_SAME_SIZE)
    block = TransformerBlock(64, 4, mlp_ratio=4, dropout=dropout,
                             norm="pre" if norm_first else "post")
    copy_torch_layer(ref, block)
    return ref.eval(), block.eval()


def equivalence_check(seed: int = SEED, b: int = 4, t: int = 50) -> dict:
    """Max |Δ| between torch's layer and kairo's block on random input, eval mode.

    Under no_grad torch takes its fused fast path; with a key-padding mask the comparison is
    over valid positions (torch's mask is True = PAD, kairo's True = VALID)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, t, 64, generator=g)                                          # [B,T,D]
    lengths = torch.tensor([t, t - 7, t // 2, 3])[:b]
    valid = torch.arange(t)[None, :] < lengths[:, None]                             # [B,T]
    rec = {}
    for norm_first in (False, True):
        ref, block = paired_layers(norm_first, seed)
        with torch.no_grad():
            for masked in (False, True):
                want = ref(x, src_key_padding_mask=~valid if masked else None)
                got, _ = block(x, key_padding_mask=valid if masked else None)
                keep = valid if masked else torch.ones_like(valid)
                key = f"{'pre' if norm_first else 'post'}_ln_{'mask' if masked else 'no_mask'}"
                rec[key] = float((want - got)[keep].abs().max())
    rec["passed"] = all(v < 1e-5 for v in rec.values())
    rec["setup"] = ("torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=256, "
                    "activation='gelu', batch_first=True, norm_first=False/True) → kairo "
                    f"TransformerBlock(64, 4, mlp_ratio=4); x [{b}, {t}, 64], eval, no_grad; "
                    "masked rows compared at valid positions; threshold 1e-5")
    return rec


# ------------------------------------------------------------------------------- kairo models
def kairo_builders(length: int, n_classes: int) -> dict:
    from kairo.tsc import ModelConfig, build_classifier

    def kairo(attn_dropout: float = 0.0, **kw):
        def build():
            m = build_classifier(ModelConfig(pool="mean", **kw), 1, n_classes, length)
            for blk in getattr(m.encoder, "blocks", []):
                if hasattr(blk, "attn"):
                    blk.attn.dropout = attn_dropout
            return m
        return build

    def torch_enc(**kw):
        return lambda: TorchEncoderClassifier(1, n_classes, length, **kw)

    return {
        # `kairo tsc train`'s model as it comes (its recipe: conv tokens, its pooling head)
        "kairo_default": lambda: build_classifier(ModelConfig(), 1, n_classes, length),
        # the default's stem depth follows the length (3 blocks up to 512 steps): the one-block
        # model beside it shows what the depth costs
        "kairo_default_stem1": lambda: build_classifier(ModelConfig(stem_blocks=1), 1,
                                                        n_classes, length),
        "kairo_transformer_step": kairo(encoder="transformer", tokens="step", norm_position="pre"),
        "kairo_transformer_step_post_ln": kairo(encoder="transformer", tokens="step",
                                                norm_position="post"),
        "kairo_transformer_step_attn_dropout_0.1": kairo(0.1, encoder="transformer",
                                                         tokens="step", norm_position="pre"),
        "kairo_transformer_patch16": kairo(encoder="transformer", tokens="patch", patch=16),
        "kairo_transformer_step_dropout0": kairo(encoder="transformer", tokens="step",
                                                 norm_position="pre", dropout=0.0),
        "kairo_resnet": kairo(encoder="resnet", blocks=3),
        "kairo_resnet_k753": kairo(encoder="resnet", blocks=3, kernel_sizes=(7, 5, 3)),
        "torch_encoder_defaults": torch_enc(**TORCH_DEFAULTS),
        "torch_encoder_same_size": torch_enc(**TORCH_SAME_SIZE, dropout=0.1),
        "torch_encoder_same_size_dropout0": torch_enc(**TORCH_SAME_SIZE, dropout=0.0),
    }


def _he_init(model: nn.Module) -> nn.Module:
    """Kaiming-uniform (gain √2) convolution weights, as fastai/tsai initialize theirs."""
    for mod in model.modules():
        if isinstance(mod, nn.Conv1d):
            nn.init.kaiming_uniform_(mod.weight, nonlinearity="relu")
    return model


def _no_head_norm(model: nn.Module) -> nn.Module:
    """Drop the LayerNorm before the linear head (Fawaz's and tsai's ResNets have none)."""
    model.head[0] = nn.Identity()
    return model


def kairo_acc_builders(resnet_ablation: bool = False) -> dict:
    """(n_channels, n_classes, length) → model, for the accuracy runs. ``resnet_ablation`` adds
    kairo ResNets that differ from the default in one or all of the ways tsai's ResNet does."""
    from kairo.tsc import ModelConfig, build_classifier

    def kairo(*edits, **kw):
        def build(c, k, t):
            model = build_classifier(ModelConfig(pool="mean", **kw), c, k, t)
            for edit in edits:          # after the seeded build: its own draws are unchanged
                model = edit(model)
            return model
        return build

    out = {
        "kairo_default": lambda c, k, t: build_classifier(ModelConfig(), c, k, t),
        "kairo_transformer_step": kairo(encoder="transformer", tokens="step"),
        "kairo_transformer_step_post": kairo(encoder="transformer", tokens="step", norm_position="post"),
        "kairo_resnet": kairo(encoder="resnet", blocks=3),
        "torch_encoder_same_size": lambda c, k, t: TorchEncoderClassifier(
            c, k, t, **TORCH_SAME_SIZE, dropout=0.1),
    }
    if resnet_ablation:
        # edits of the ResNet this ablation was measured on (2026-11-30): the LayerNorm head
        # and PyTorch's initialisation, the default until 2026-12-02
        base = dict(encoder="resnet", blocks=3, head_norm="true", weight_init="torch")
        out.update({
            "kairo_resnet_k753": kairo(**base, kernel_sizes=(7, 5, 3)),
            "kairo_resnet_no_head_norm": kairo(_no_head_norm, **base),
            "kairo_resnet_he_init": kairo(_he_init, **base),
            "kairo_resnet_k753_no_head_norm_he_init": kairo(
                _no_head_norm, _he_init, **base, kernel_sizes=(7, 5, 3)),
            # which half of the 2026-12-02 default change does the work: the old default,
            # and each of the two changes alone (the default itself is kairo_resnet)
            "kairo_resnet_before_keras": kairo(**base),
            "kairo_resnet_glorot_head_norm": kairo(**{**base, "weight_init": "glorot"}),
            "kairo_resnet_torch_init_no_head_norm": kairo(**{**base, "head_norm": "false"}),
        })
    return out


def accuracy_data(quick: bool, names=None) -> dict:
    """GunPoint (50 train / 150 test, length 150) and MNIST-1D (4000 / 1000, length 40),
    z-normalized per series (``names``: only these)."""
    from kairo.tsc import load_dataset, znormalize

    out = {}
    for name in names or ("GunPoint", "MNIST1D"):
        tr, te = load_dataset(name, "train"), load_dataset(name, "test")
        if quick:
            tr, te = tr.subset(np.arange(min(64, len(tr)))), te.subset(np.arange(64))
        out[name] = {"x_train": znormalize(tr.x, tr.mask), "y_train": tr.y.astype(np.int64),
                     "x_test": znormalize(te.x, te.mask), "y_test": te.y.astype(np.int64)}
    return out


# ------------------------------------------------------------------------------- tsai
def tsai_builders(length: int, n_classes: int) -> dict:
    from tsai.models.ResNet import ResNet
    from tsai.models.TST import TST

    return {
        "tsai_tst": lambda: TST(c_in=1, c_out=n_classes, seq_len=length, d_model=64, n_heads=4,
                                n_layers=2, d_ff=256, dropout=0.1),
        "tsai_resnet": lambda: ResNet(c_in=1, c_out=n_classes),
    }


def tsai_acc_builders() -> dict:
    from tsai.models.ResNet import ResNet
    from tsai.models.TST import TST

    return {
        "tsai_tst": lambda c, k, t: TST(c_in=c, c_out=k, seq_len=t, d_model=64, n_heads=4,
                                        n_layers=2, d_ff=256, dropout=0.1),
        "tsai_resnet": lambda c, k, t: ResNet(c_in=c, c_out=k),
    }


def tsai_worker(spec_path: str) -> int:
    """Run inside the tsai environment: time (and optionally train) tsai's models."""
    spec = json.loads(Path(spec_path).read_text())
    torch.set_num_threads(spec["threads"])
    from importlib.metadata import version

    cfg = spec["cfg"]
    res = {"torch": torch.__version__, "torch_num_threads": torch.get_num_threads(),
           "python": sys.version.split()[0],
           "versions": {p: version(p) for p in ("tsai", "fastai", "fastcore", "numpy",
                                                "scikit-learn")},
           "loadavg_before": loadavg()}
    if spec.get("speed", True):
        t0 = time.perf_counter()
        builders = tsai_builders(cfg["length"], cfg["n_classes"])
        if spec.get("models"):                          # resnet_vs_tsai.py times one model
            builders = {k: v for k, v in builders.items() if k in spec["models"]}
        res["speed"] = time_models(builders, cfg)
        res["speed_wall_s"] = round(time.perf_counter() - t0, 2)
        res["loadavg_after_speed"] = loadavg()
    if spec.get("accuracy_npz"):
        with np.load(spec["accuracy_npz"]) as z:
            names = sorted({k.split("/")[0] for k in z.files})
            datasets = {n: {f: z[f"{n}/{f}"] for f in ("x_train", "y_train", "x_test",
                                                        "y_test")} for n in names}
        res["accuracy"] = accuracy_runs(tsai_acc_builders(), datasets, cfg)
        res["loadavg_after_accuracy"] = loadavg()
    atomic_write_json(Path(spec["out"]), res)
    return 0


def run_tsai(python: Path | None, cfg: dict, accuracy: dict | None, speed: bool = True,
             models=None) -> dict:
    """Time (``speed``; only ``models`` if given) and/or train (``accuracy``: the datasets)
    tsai's models in a subprocess of ``python``; a dict with "status" either way."""
    if python is None or not Path(python).exists():
        return {"status": "tsai: not available", "python": str(python) if python else None}
    with tempfile.TemporaryDirectory(prefix="kairo-tsai-") as tmp:
        tmp = Path(tmp)
        for rel, text in _STUB_FILES.items():
            (tmp / "stub" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "stub" / rel).write_text(text)
        spec = {"cfg": cfg, "threads": cfg["threads"], "speed": speed,
                "out": str(tmp / "out.json"), "accuracy_npz": None,
                "models": list(models) if models else None}
        if accuracy:
            np.savez(tmp / "data.npz", **{f"{n}/{f}": a for n, d in accuracy.items()
                                          for f, a in d.items()})
            spec["accuracy_npz"] = str(tmp / "data.npz")
        (tmp / "spec.json").write_text(json.dumps(spec))
        env = dict(os.environ, PYTHONPATH=str(tmp / "stub"), OMP_NUM_THREADS=str(cfg["threads"]),
                   MKL_NUM_THREADS=str(cfg["threads"]))
        cmd = [str(python), str(Path(__file__).resolve()), "--tsai-worker", str(tmp / "spec.json")]
        t0 = time.perf_counter()
        try:
            # stdout streams through (progress lines); stderr is kept for the record
            proc = subprocess.run(cmd, env=env, stderr=subprocess.PIPE, text=True, check=False,
                                  timeout=cfg["tsai_timeout_s"])
        except subprocess.TimeoutExpired:
            return {"status": f"tsai: failed (timed out after {cfg['tsai_timeout_s']} s)",
                    "python": str(python)}
        if proc.returncode != 0 or not (tmp / "out.json").is_file():
            return {"status": f"tsai: failed (exit {proc.returncode})", "python": str(python),
                    "stderr_tail": proc.stderr[-2000:]}
        res = json.loads((tmp / "out.json").read_text())
    res.update(status="ok", python=str(python), wall_s=round(time.perf_counter() - t0, 1),
               torchvision=TORCHVISION_STUB_NOTE)
    # an unconstrained `pip install tsai` upgrades that venv's torch (to a CUDA build): then the
    # ratios compare two torch versions, not two libraries, so say so in the status and the JSON
    res["same_torch"] = res.get("torch") == torch.__version__
    if not res["same_torch"]:
        res["status"] = (f"ok, but tsai ran on torch {res.get('torch')} and kairo on "
                         f"{torch.__version__}: ratios compare torch versions too "
                         f"(docs/benchmarks.md says how to pin it)")
    return res


# ------------------------------------------------------------------------------- ratios
RATIOS = {  # name: (kairo model, peer model)
    "default_vs_torch_defaults": ("kairo_default", "torch_encoder_defaults"),
    "default_vs_torch_same_size": ("kairo_default", "torch_encoder_same_size"),
    "default_vs_tsai_tst": ("kairo_default", "tsai_tst"),
    "default_stem1_vs_default": ("kairo_default_stem1", "kairo_default"),
    "transformer_vs_torch_defaults": ("kairo_transformer_step", "torch_encoder_defaults"),
    "transformer_vs_torch_same_size": ("kairo_transformer_step", "torch_encoder_same_size"),
    "transformer_vs_torch_same_size_dropout0": ("kairo_transformer_step",
                                                "torch_encoder_same_size_dropout0"),
    "transformer_vs_tsai_tst": ("kairo_transformer_step", "tsai_tst"),
    "transformer_dropout0_vs_torch_same_size_dropout0": ("kairo_transformer_step_dropout0",
                                                         "torch_encoder_same_size_dropout0"),
    "resnet_vs_tsai_resnet": ("kairo_resnet", "tsai_resnet"),
    "resnet_k753_vs_tsai_resnet": ("kairo_resnet_k753", "tsai_resnet"),
    "patch16_vs_torch_defaults": ("kairo_transformer_patch16", "torch_encoder_defaults"),
    "patch16_vs_torch_same_size": ("kairo_transformer_patch16", "torch_encoder_same_size"),
    "patch16_vs_tsai_tst": ("kairo_transformer_patch16", "tsai_tst"),
    "post_ln_vs_pre_ln": ("kairo_transformer_step_post_ln", "kairo_transformer_step"),
    "attn_dropout_0.1_vs_0": ("kairo_transformer_step_attn_dropout_0.1",
                              "kairo_transformer_step"),
}


def ratios(models: dict) -> dict:
    """kairo / peer samples/s (best repeats) for training and inference; ≥ 1 = kairo faster."""
    out = {}
    for name, (a, b) in RATIOS.items():
        if a in models and b in models:
            out[name] = {"kairo": a, "peer": b, **{
                kind: round(models[a][kind]["samples_per_s_best"]
                            / models[b][kind]["samples_per_s_best"], 3)
                for kind in ("train", "infer")}}
    return out


# ------------------------------------------------------------------------------- main
def summary(res: dict) -> str:
    lines = [f"attention_speed ({'quick' if res['quick'] else 'full'}) — {res['date']}"]
    eq = res["equivalence"]
    lines.append("equivalence torch layer → kairo block: " + ", ".join(
        f"{k} {v:.1e}" for k, v in eq.items() if isinstance(v, float))
        + f"  {'OK' if eq['passed'] else 'FAILED'}")
    lines.append(f"{'model':<40} {'params':>9} {'train/s':>9} {'infer/s':>9}")
    for name, m in res["models"].items():
        lines.append(f"{name:<40} {m['params']:>9,} {m['train']['samples_per_s_best']:>9.1f} "
                     f"{m['infer']['samples_per_s_best']:>9.1f}")
    status = res["tsai"]["status"]
    lines.append(status if status.startswith("tsai:") else f"tsai: {status}")
    for name, r in res["ratios"].items():
        lines.append(f"  {name:<40} train ×{r['train']:<7} infer ×{r['infer']}")
    for dname, models in res.get("accuracy", {}).items():
        lines.append(f"accuracy {dname}: " + ", ".join(
            f"{k} {v['mean_accuracy']:.3f}" for k, v in models.items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run of under a minute")
    parser.add_argument("--accuracy", action="store_true",
                        help="also train every model with the same budget and report accuracy")
    parser.add_argument("--accuracy-only", action="store_true",
                        help="only the equivalence check and the accuracy runs (no timings)")
    parser.add_argument("--resnet-ablation", action="store_true",
                        help="accuracy runs add kairo ResNets with tsai's kernels, no head "
                             "LayerNorm, He initialization, and all three; and the ResNet "
                             "default before 2026-12-02 with each half of that change alone")
    parser.add_argument("--acc-models", default=None,
                        help="comma-separated model names: only these in the accuracy runs "
                             "(default: all)")
    parser.add_argument("--acc-seeds", type=int, default=None,
                        help="accuracy runs use seeds 0..N-1 on every dataset (default: 2 on "
                             "GunPoint, 1 on MNIST-1D)")
    parser.add_argument("--acc-datasets", default=None,
                        help="comma-separated datasets of the accuracy runs: GunPoint, MNIST1D "
                             "(default: both)")
    parser.add_argument("--acc-epochs", default=None,
                        help="epochs per dataset of the accuracy runs, e.g. MNIST1D=40 "
                             "(default: GunPoint=100,MNIST1D=5)")
    parser.add_argument("--tsai-python", type=Path,
                        default=DEFAULT_TSAI_PYTHON if DEFAULT_TSAI_PYTHON.exists() else None,
                        help="Python of an environment with tsai (default: "
                             f"{DEFAULT_TSAI_PYTHON} if it exists; none: tsai is skipped)")
    parser.add_argument("--out", type=Path, default=None,
                        help="JSON output (default: benchmarks/results/attention_speed"
                             "[_quick].json)")
    parser.add_argument("--threads", type=int, default=THREADS,
                        help=f"torch threads for the timings, here and in the tsai subprocess "
                             f"(default {THREADS})")
    parser.add_argument("--length", type=int, default=None,
                        help="series length of the speed section (default 700; the default "
                             "classifier builds 3 stem blocks up to 512 steps, 1 beyond)")
    parser.add_argument("--tsai-worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.tsai_worker:
        return tsai_worker(args.tsai_worker)

    if args.threads < 1:
        parser.error(f"--threads must be ≥ 1, got {args.threads}")
    if args.acc_seeds is not None and args.acc_seeds < 1:
        parser.error(f"--acc-seeds must be ≥ 1, got {args.acc_seeds}")
    args.accuracy = args.accuracy or args.accuracy_only
    if not args.accuracy and (args.acc_models or args.acc_seeds is not None
                              or args.resnet_ablation or args.acc_datasets or args.acc_epochs):
        parser.error("--acc-models, --acc-seeds, --acc-datasets, --acc-epochs and "
                     "--resnet-ablation shape the accuracy runs: add --accuracy or "
                     "--accuracy-only")
    torch.set_num_threads(args.threads)
    cfg = dict(QUICK if args.quick else FULL, threads=args.threads)
    if args.length is not None:
        if args.length < 8:
            parser.error(f"--length must be ≥ 8 steps, got {args.length}")
        cfg["length"] = args.length
    if args.acc_seeds is not None:
        cfg["acc_seeds"] = {name: tuple(range(args.acc_seeds)) for name in cfg["acc_seeds"]}
    if args.acc_epochs:
        for item in args.acc_epochs.split(","):
            name, _, n = item.partition("=")
            if name.strip() not in cfg["acc_epochs"] or not n.strip().isdigit() or int(n) < 1:
                parser.error(f"--acc-epochs: expected NAME=N with NAME in "
                             f"{', '.join(cfg['acc_epochs'])} and N ≥ 1, got {item!r}")
            cfg["acc_epochs"] = {**cfg["acc_epochs"], name.strip(): int(n)}
    if args.acc_datasets:
        names = [d.strip() for d in args.acc_datasets.split(",") if d.strip()]
        unknown = sorted(set(names) - set(cfg["acc_epochs"]))
        if unknown or not names:
            parser.error(f"--acc-datasets: unknown dataset(s) {', '.join(unknown) or '(none)'}; "
                         f"known: {', '.join(cfg['acc_epochs'])}")
        cfg["acc_datasets"] = names
    if args.acc_models:
        cfg["acc_models"] = [m.strip() for m in args.acc_models.split(",") if m.strip()]
        known = set(kairo_acc_builders(True)) | {"tsai_tst", "tsai_resnet"}
        unknown = sorted(set(cfg["acc_models"]) - known)
        if unknown:
            parser.error(f"--acc-models: unknown model(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(known))}")
        # naming an ablation model asks for it
        args.resnet_ablation |= bool(set(cfg["acc_models"]) - set(kairo_acc_builders(False))
                                     - {"tsai_tst", "tsai_resnet"})
    stem = "attention_speed" + ("_accuracy" if args.accuracy_only else "")
    out = args.out or RESULTS / f"{stem}{'_quick' if args.quick else ''}.json"

    from kairo.results import cpu_model, environment

    res = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "command": " ".join(["python"] + sys.argv), "quick": args.quick,
           "config": {**{k: v for k, v in cfg.items() if not k.startswith("acc_")},
                      "seed": SEED, "input": f"x [{cfg['batch']}, 1, "
                      f"{cfg['length']}] ~ N(0, 1), {cfg['n_classes']} classes",
                      "train_step": "forward + cross-entropy + backward + AdamW(lr 1e-3) step",
                      "infer_step": "eval mode, torch.no_grad",
                      "rate": "samples/s over a timed repeat; warm-up steps untimed; repeats "
                              "interleaved across models; ratios use the best repeat"},
           # the CPU capability decides oneDNN's kernels: the ResNet's channels-last lead over
           # tsai's measured on 2026-11-30 became a deficit on an AVX2-only machine (2026-12-02)
           "machine": {**environment(), "cpu_model": cpu_model(),
                       "cpu_capability": torch.backends.cpu.get_cpu_capability(),
                       "torch_num_threads": torch.get_num_threads(),
                       "torch": torch.__version__},
           "loadavg_start": loadavg(), "sections": {}}
    with section(res, "equivalence"):
        res["equivalence"] = equivalence_check()
        print(f"   {res['equivalence']}", flush=True)
    res["models"] = {}
    if not args.accuracy_only:
        with section(res, "speed"):
            res["thread_probe_start"] = thread_probe()
            print(f"   thread probe {res['thread_probe_start']}", flush=True)
            res["models"] = time_models(kairo_builders(cfg["length"], cfg["n_classes"]), cfg)
            res["thread_probe_end"] = thread_probe()
            print(f"   thread probe {res['thread_probe_end']}", flush=True)
    res["models_notes"] = {
        "kairo_*": "build_classifier(ModelConfig(pool='mean', d_model=64, n_heads=4, blocks=2, "
                   "dropout=0.1)); attention dropout 0 (kairo's default) unless named; head "
                   "LayerNorm + Linear (the Transformers)",
        "kairo_resnet": "ModelConfig(encoder='resnet', d_model=64, blocks=3, pool='mean'): "
                        "kernels 8, 5, 3 as in Fawaz et al. 2019; today's defaults (since "
                        "2026-12-02: no head LayerNorm, Glorot-uniform weights, zero biases)",
        "kairo_resnet_k753": "the same with kernel_sizes=(7, 5, 3), the kernels tsai's ResNet "
                             "uses: the equal-computation comparison",
        "kairo_transformer_step_post": "ModelConfig(norm_position='post'): LayerNorm after each "
                                       "residual branch, as nn.TransformerEncoderLayer's default",
        "kairo_transformer_step_dropout0": "dropout=0 everywhere, the equal-computation "
                                           "comparison with torch_encoder_same_size_dropout0",
        "torch_encoder_defaults": "nn.TransformerEncoderLayer(d_model=64, nhead=4) otherwise "
                                  "default (FF 2048, dropout 0.1 incl. attention weights, relu, "
                                  "post-LN, batch_first=False) × 2 in nn.TransformerEncoder",
        "torch_encoder_same_size": "d_model=64, nhead=4, dim_feedforward=256, gelu, "
                                   "batch_first=True, post-LN; dropout 0.1 (torch applies it to "
                                   "the attention weights too) or 0",
        "torch_wrapper": "Linear(1 → 64) per step + sinusoidal positions → encoder → mean over "
                         "steps → Linear(64, 10)",
        "tsai_tst": "TST(c_in=1, c_out=10, seq_len=T, d_model=64, n_heads=4, n_layers=2, "
                    "d_ff=256, dropout=0.1): batch norm, flatten head",
        "tsai_resnet": "ResNet(c_in=1, c_out=10)",
        "kairo_resnet_no_head_norm / _he_init / _k753_no_head_norm_he_init": "(--resnet-ablation)"
            " kairo_resnet without the LayerNorm before the linear head, with Kaiming-uniform "
            "(gain √2) convolution weights, and both with kernels 7-5-3: the ways tsai's ResNet "
            "still differs; edits of the ResNet before 2026-12-02 (LayerNorm head, PyTorch "
            "init)",
        "kairo_resnet_before_keras / _glorot_head_norm / _torch_init_no_head_norm":
            "(--resnet-ablation) the ResNet default before 2026-12-02 (head_norm='true', "
            "weight_init='torch'), and each of the two changes that made today's default alone"}

    acc_data = accuracy_data(args.quick, cfg.get("acc_datasets")) if args.accuracy else None
    with section(res, "tsai"):
        if args.accuracy_only and cfg.get("acc_models") and not any(
                m.startswith("tsai_") for m in cfg["acc_models"]):
            res["tsai"] = {"status": "tsai: no tsai model selected (--acc-models)"}
        else:
            res["tsai"] = run_tsai(args.tsai_python, cfg, acc_data, speed=not args.accuracy_only)
        print(f"   {res['tsai']['status']}", flush=True)
    tsai_ran = res["tsai"]["status"].startswith("ok")
    res["torchvision_stub"] = TORCHVISION_STUB_NOTE if tsai_ran else None
    models = dict(res["models"])
    models.update(res["tsai"].get("speed", {}))
    res["models"] = models
    res["ratios"] = ratios(models)
    res["ratios_note"] = ("kairo samples/s ÷ peer samples/s (best repeats); ≥ 1 means kairo is "
                          "at least as fast. Target: ≥ each peer at equal accuracy.")

    if args.accuracy:
        with section(res, "accuracy"):
            acc = accuracy_runs(kairo_acc_builders(args.resnet_ablation), acc_data, cfg)
            for dname, per_model in res["tsai"].get("accuracy", {}).items():
                acc[dname].update(per_model)
            res["accuracy"] = acc
            res["accuracy_setup"] = {
                "datasets": {n: {"train": list(d["x_train"].shape), "test":
                                 list(d["x_test"].shape)} for n, d in acc_data.items()},
                "epochs": {n: cfg["acc_epochs"][n] for n in acc_data},
                "batch": cfg["acc_batch"],
                "seeds": {n: cfg["acc_seeds"][n] for n in acc_data},
                "torch_threads": cfg["acc_threads"],
                "models": cfg.get("acc_models", "all"),
                "optimizer": "AdamW(lr 1e-3, weight_decay 0.01), constant lr, no clipping, "
                             "same loop for every model (tsai's too, not fastai's fit)",
                "data": "z-normalized per series (kairo.tsc.znormalize); MNIST1D length "
                        "40, generated with seed 0; models use mean pooling (kairo) as above"}

    res["loadavg_end"] = loadavg()
    atomic_write_json(out, res)
    print(summary(res))
    print(f"wrote {out}")
    return 0 if res["equivalence"]["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
