"""``kairo logic train | export | verify``: what each command computes and writes."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from kairo._errors import ConfigError, KairoError
from kairo.logic._circuit import Circuit

__all__ = ["LogicTrainConfig", "ExportConfig", "VerifyConfig", "run_train", "run_export",
           "run_verify", "EXPORT_FORMATS", "BACKENDS"]

PAIRINGS = ("random", "unique")       # kept equal to kairo.logic._layers (torch-free here)
GATE_MODES = ("soft", "gumbel", "hard")
EXPORT_FORMATS = ("json", "c", "verilog")
BACKENDS = ("numpy", "c", "verilog")
SIMULATORS = ("auto", "iverilog", "verilator")


@dataclass(frozen=True)
class LogicTrainConfig:
    """``kairo logic train``: a dense or convolutional logic-gate network on MNIST.

    ``kernels`` = 0: Binarize → LogicDense × layers → GroupSum. ``kernels`` > 0: Binarize (the
    thresholds are the channels) → [LogicConv2d → OrPooling2d 2×2] × conv_blocks (block i has
    kernels·conv_growth^i kernels) → flatten → LogicDense × layers → GroupSum.
    """

    BACKENDS: ClassVar[tuple[str, ...]] = ("auto", "torch", "fused")
    IMAGE_SIZE: ClassVar[int] = 28

    dataset: str = "mnist"
    classes: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    thresholds: tuple[int, ...] = (127,)      # one: fixed binarization; several: thermometer
    kernels: int = 0                          # 0: dense only; > 0: first conv block's kernels
    conv_blocks: int = 2                      # LogicConv2d + OR pooling 2×2 blocks
    conv_growth: int = 2                      # kernels multiply by this from block to block
    receptive: int = 3                        # conv window receptive × receptive
    conv_depth: int = 3                       # levels of each kernel's gate tree
    conv_stride: int = 1
    padding: int = 1                          # zero padding of each conv
    conv_groups: int = 1                      # grouped convs (divides thresholds and kernels)
    hidden: int = 1000                        # neurons per logic layer
    layers: int = 2                           # logic layers (the last feeds GroupSum)
    pairing: str = "unique"
    residual_init: float = 0.0                # > 0: pass-through logit starts at this value
    gate_mode: str = "soft"                   # soft; gumbel, hard (straight-through)
    gumbel_tau: float = 1.0
    tau: float = 10.0                         # GroupSum temperature
    lr: float = 0.01
    lr_decay_from: int = -1                   # ≥ 0: cosine decay of lr to 0 from this iteration
    gate_temperature: float = 1.0             # < 1: gate softmaxes sharpen to this by the end
    gate_temperature_from: int = -1           # where the sharpening starts (-1: lr_decay_from)
    fix_at: tuple[int, ...] = ()              # gate layer i is fixed to its argmax from fix_at[i]
    shift: int = 0                            # augment: random translation by up to ±shift px
    batch: int = 128
    iters: int = 1000
    eval_every: int = 200
    keep_best: bool = False                   # end with the best-discrete-validation weights
    checkpoint_every: int = 200
    snapshots: tuple[int, ...] = ()           # keep these iterations' checkpoints (branch points)
    init_from: str = ""                       # start from another run's checkpoint / model.pt
    val_fraction: float = 0.1
    backend: str = "auto"                     # torch, fused (numba CPU kernels), auto
    seed: int = 0
    data_dir: str | None = None

    def __post_init__(self):
        if self.dataset != "mnist":
            raise ConfigError(f"dataset must be 'mnist' (the only one so far), got "
                              f"{self.dataset!r}")
        if len(self.classes) < 2 or len(set(self.classes)) != len(self.classes) or \
                any(not 0 <= c <= 9 for c in self.classes):
            raise ConfigError(f"classes must be ≥ 2 distinct digits 0–9, got {self.classes}")
        if self.pairing not in PAIRINGS or self.gate_mode not in GATE_MODES:
            raise ConfigError(f"pairing must be one of {PAIRINGS} and gate_mode one of "
                              f"{GATE_MODES}")
        if self.backend not in self.BACKENDS:
            raise ConfigError(f"backend must be one of {', '.join(self.BACKENDS)}; got "
                              f"{self.backend!r}")
        if not isinstance(self.keep_best, bool):
            raise ConfigError(f"keep_best must be true or false, got {self.keep_best!r}")
        for name in ("hidden", "layers", "batch", "iters", "eval_every", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be ≥ 1, got {getattr(self, name)}")
        if self.hidden % len(self.classes):
            raise ConfigError(f"class groups do not divide the outputs: hidden={self.hidden} "
                              f"neurons into {len(self.classes)} classes")
        if not 0 < self.val_fraction < 0.5:
            raise ConfigError(f"val_fraction must be in (0, 0.5), got {self.val_fraction}")
        if self.lr <= 0 or self.tau <= 0:
            raise ConfigError("lr and tau must be > 0")
        if not 0 < self.gate_temperature <= 1:
            raise ConfigError(f"gate_temperature must be in (0, 1] (1: no annealing), got "
                              f"{self.gate_temperature}")
        if self.gate_temperature_from < -1:
            raise ConfigError(f"gate_temperature_from must be -1 (with the cosine phase) or an "
                              f"iteration ≥ 0, got {self.gate_temperature_from}")
        if self.lr_decay_from < -1:        # ≥ iters is allowed: the decay starts after the end
            raise ConfigError(f"lr_decay_from must be -1 (constant lr) or an iteration ≥ 0, got "
                              f"{self.lr_decay_from}")
        if any(not 0 < k < self.iters for k in self.snapshots):
            raise ConfigError(f"snapshots must be iterations in 1…iters−1 ({self.iters - 1}), got "
                              f"{list(self.snapshots)}")
        if any(not 0 <= k < self.iters for k in self.fix_at):
            raise ConfigError(f"fix_at must be iterations in 0…iters−1 ({self.iters - 1}), one per "
                              f"leading gate layer; got {list(self.fix_at)}")
        n_gate = self.layers + (self.conv_blocks if self.kernels else 0)
        if len(self.fix_at) > n_gate:
            raise ConfigError(f"fix_at has {len(self.fix_at)} iterations but the network has "
                              f"{n_gate} gate layers")
        if not 0 <= self.shift <= 8:
            raise ConfigError(f"shift must be 0–8 pixels, got {self.shift}")
        if self.kernels < 0:
            raise ConfigError(f"kernels must be ≥ 0 (0: a dense network), got {self.kernels}")
        if self.kernels:
            self.feature_sizes()

    def feature_sizes(self) -> list[tuple[int, int]]:
        """(channels, side) of the feature map after each conv block, checked as it goes."""
        for name in ("conv_blocks", "conv_growth", "receptive", "conv_depth", "conv_stride",
                     "conv_groups"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be ≥ 1, got {getattr(self, name)}")
        if not 1 <= self.conv_depth <= 8:
            raise ConfigError(f"conv_depth must be 1–8, got {self.conv_depth}")
        if not 0 <= self.padding < self.receptive:
            raise ConfigError(f"padding must be in 0…receptive−1, got padding={self.padding} "
                              f"with receptive={self.receptive}")
        n_th = len(self.thresholds)
        if n_th % self.conv_groups or self.kernels % self.conv_groups:
            raise ConfigError(f"conv_groups={self.conv_groups} must divide the input channels "
                              f"(thresholds: {n_th}) and kernels={self.kernels}")
        side, out = self.IMAGE_SIZE, []
        for i in range(self.conv_blocks):
            if side + 2 * self.padding < self.receptive:
                raise ConfigError(
                    f"conv block {i + 1} of conv_blocks={self.conv_blocks} gets a {side}×{side} "
                    f"feature map, smaller than receptive={self.receptive} with "
                    f"padding={self.padding}; use fewer conv_blocks, a smaller receptive or "
                    f"conv_stride, or more padding")
            side = (side + 2 * self.padding - self.receptive) // self.conv_stride + 1
            if side < 2:
                raise ConfigError(
                    f"conv block {i + 1} of conv_blocks={self.conv_blocks} leaves a {side}×{side} "
                    f"map, too small for its 2×2 OR pooling; use fewer conv_blocks or a smaller "
                    f"conv_stride or receptive")
            side //= 2
            out.append((self.kernels * self.conv_growth ** i, side))
        return out

    def arch(self) -> dict:
        """What a checkpoint must match to be loaded into this model."""
        a = {"n_classes": len(self.classes), "thresholds": list(self.thresholds),
             "hidden": self.hidden, "layers": self.layers, "pairing": self.pairing,
             "seed": self.seed, "kernels": self.kernels}
        if self.kernels:              # dense checkpoints keep their old arch dict
            a.update({k: getattr(self, k) for k in (
                "conv_blocks", "conv_growth", "receptive", "conv_depth", "conv_stride",
                "padding", "conv_groups")})
        return a


@dataclass(frozen=True)
class ExportConfig:
    circuit: str = ""                 # circuit.json (from kairo logic train)
    format: str = "c"                 # json, c, verilog
    output: str = ""                  # file to write (its folder must exist)
    pipeline: int = 0                 # Verilog register stages
    pipeline_votes: int = 0           # Verilog register stages in the vote and argmax trees

    def __post_init__(self):
        if not self.circuit or not self.output:
            raise ConfigError("--circuit and --output are required")
        if self.format not in EXPORT_FORMATS:
            raise ConfigError(f"format must be one of {', '.join(EXPORT_FORMATS)}; got "
                              f"{self.format!r}")
        if self.pipeline < 0 or self.pipeline_votes < 0:
            raise ConfigError(f"pipeline and pipeline_votes must be ≥ 0, got "
                              f"{self.pipeline} and {self.pipeline_votes}")


@dataclass(frozen=True)
class VerifyConfig:
    circuit: str = ""
    backends: tuple[str, ...] = BACKENDS
    samples: int = 0                  # MNIST test images to check (0: all 10,000)
    verilog_samples: int = 2000       # the event-driven simulator is slow; a prefix of them
    simulator: str = "auto"           # auto (Icarus first), iverilog, verilator
    data_dir: str | None = None

    def __post_init__(self):
        if not self.circuit:
            raise ConfigError("--circuit is required")
        for b in self.backends:
            if b not in BACKENDS:
                raise ConfigError(f"unknown back end {b!r}; expected any of {', '.join(BACKENDS)}")
        if self.samples < 0 or self.verilog_samples < 0:
            raise ConfigError("samples must be ≥ 0")
        if self.simulator not in SIMULATORS:
            raise ConfigError(f"simulator must be one of {', '.join(SIMULATORS)}; got "
                              f"{self.simulator!r}")


def _checkpoint_of(out: Path) -> Path:
    """The rolling checkpoint of a run whose results go to ``out``."""
    return out.with_name(out.name + ".checkpoint.pt")


def run_train(cfg, rd, out: Path, log=print) -> str:
    """Train (resumable through ``<out>.checkpoint.pt``), extract, simplify, save, score."""
    from kairo.logic._layers import fused_available
    from kairo.logic._model import (describe_branch, image_bits, layer_report, load_data,
                                    predict, snapshot_path, to_circuit, train)
    from kairo.logic._simplify import simplify

    ckpt = _checkpoint_of(out)
    data = load_data(cfg)
    res = train(cfg, checkpoint=ckpt, data=data, log=log)
    model = res["model"]
    kept = res.get("kept_iter")
    xt, yt = data["test"]
    pred_model = predict(model, xt)
    raw = to_circuit(model, meta={"classes": list(cfg.classes)})
    circ, report = simplify(raw)
    bits = image_bits(circ, xt)
    pred_circ = circ.predict(bits)
    if not np.array_equal(pred_circ, raw.predict(bits)):
        raise KairoError("internal error: the simplified circuit disagrees with the raw one")
    metrics = {"test_accuracy_discrete": float((pred_model == yt).mean()),
               "test_accuracy_circuit": float((pred_circ == yt).mean()),
               "circuit_matches_model": bool(np.array_equal(pred_circ, pred_model)),
               "n_test": int(len(yt)), "gates_before": raw.n_gates,
               "gates_after": circ.n_gates, "depth_before": report["before"]["depth"],
               "depth_after": report["after"]["depth"], "simplify": report,
               "history": res["history"], "train_seconds": res["seconds"],
               "iters_per_s": res["iters_per_s"], "resumed_from": res["resumed_from"],
               "kept_iter": kept, "branch": res["branch"],
               "layers": layer_report(model, cfg),
               "backend": ("fused" if cfg.backend == "fused" or
                           (cfg.backend == "auto" and fused_available()) else "torch")}
    rd.write_json("metrics.json", metrics)
    circ.save(rd.path / "circuit.json")
    raw.save(rd.path / "circuit_raw.json")
    rd.files += ["circuit.json", "circuit_raw.json"]
    shutil.copyfile(ckpt, rd.path / "model.pt")
    rd.files.append("model.pt")
    for it in cfg.snapshots:                 # removed next to the checkpoint once committed
        if snapshot_path(ckpt, it).is_file():
            shutil.copyfile(snapshot_path(ckpt, it), rd.path / f"checkpoint-{it}.pt")
            rd.files.append(f"checkpoint-{it}.pt")
    import pandas as pd

    rd.write_table("history.csv", pd.DataFrame(res["history"]))
    last = res["history"][-1] if res["history"] else {}
    if kept is not None:            # the numbers of the weights that were kept
        last = next((h for h in res["history"] if h["iter"] == kept), last)
    acc = metrics["test_accuracy_circuit"]
    branch_line = describe_branch(res["branch"]) + "\n" if res["branch"] else ""
    text = (f"classes {','.join(map(str, cfg.classes))}: test accuracy {acc:.2%} "
            f"(discrete circuit; relaxed val {last.get('val_relaxed', float('nan')):.2%}, "
            f"discrete val {last.get('val_discrete', float('nan')):.2%}"
            + (f"; weights of iteration {kept}, the best discrete validation" if kept else "")
            + ")\n" + branch_line +
            f"gates {raw.n_gates} → {circ.n_gates} after simplification, depth "
            f"{report['before']['depth']} → {report['after']['depth']}\n"
            f"training {res['seconds']:.1f} s ({res['iters_per_s']:.1f} it/s, "
            f"{metrics['backend']} kernels)")
    return text


def _done_checkpoint(out: Path, cfg: LogicTrainConfig | None = None) -> None:
    """After a committed run: its rolling checkpoint and the snapshots (copied into it) go."""
    from kairo.logic._model import snapshot_path

    ckpt = _checkpoint_of(out)
    for p in [ckpt] + [snapshot_path(ckpt, it) for it in (cfg.snapshots if cfg else ())]:
        p.unlink(missing_ok=True)


def run_export(cfg: ExportConfig) -> str:
    from kairo.logic import _backends as be

    circ = Circuit.load(cfg.circuit)
    out = Path(cfg.output)
    if not out.parent.is_dir():
        raise KairoError(f"output {out}: folder {out.parent} does not exist")
    if cfg.format == "json":
        circ.save(out)
    elif cfg.format == "c":
        be.write_c(circ, out)
    else:
        be.write_verilog(circ, out, pipeline=cfg.pipeline, pipeline_votes=cfg.pipeline_votes)
    return f"wrote {out} ({cfg.format}, {circ.n_gates} gates)"


def run_verify(cfg: VerifyConfig, log=print) -> dict:
    """Every back end against the NumPy reference on MNIST test images, bit for bit."""
    from kairo.data import load_mnist
    from kairo.logic import _backends as be
    from kairo.logic._model import image_bits

    circ = Circuit.load(cfg.circuit)
    classes = circ.meta.get("classes")
    if "thresholds" not in circ.meta:
        raise KairoError(f"circuit {cfg.circuit} has no input thresholds in its meta; verify "
                         f"needs a circuit made by `kairo logic train`")
    x, y = load_mnist("test", cfg.data_dir)
    if classes is not None:
        lut = np.full(10, -1)
        lut[classes] = np.arange(len(classes))
        keep = lut[y] >= 0
        x, y = x[keep], lut[y[keep]]
    if cfg.samples:
        x, y = x[:cfg.samples], y[:cfg.samples]
    bits = image_bits(circ, x)
    ref_out = circ.evaluate(bits)
    ref_pred = circ.predict(bits)
    res = {"n_samples": int(len(y)), "accuracy": float((ref_pred == y).mean()), "backends": {}}
    for name in cfg.backends:
        if name == "numpy":
            continue
        if name == "c":
            comp = be.compile_c(circ)
            out, pred = comp.evaluate(bits), comp.predict(bits)
            n = len(y)
            extra = {"width": comp.width}
        else:
            n = min(len(y), cfg.verilog_samples or len(y))
            sim = be.find_simulator(cfg.simulator)
            out, pred = be.simulate_verilog(circ, bits[:n], simulator=sim)
            extra = {"simulator": sim}
        ok = bool(np.array_equal(out, ref_out[:n]) and np.array_equal(pred, ref_pred[:n]))
        res["backends"][name] = {"samples": int(n), "bit_exact": ok, **extra}
        log(f"{name}: {n} samples, {'bit-exact' if ok else 'MISMATCH'}")
    res["all_bit_exact"] = all(v["bit_exact"] for v in res["backends"].values())
    return res


def write_verify(rd, res: dict) -> str:
    rd.write_json("verify.json", res)
    lines = [f"reference (NumPy) accuracy {res['accuracy']:.2%} on {res['n_samples']} images"]
    for k, v in res["backends"].items():
        verdict = "bit-exact" if v["bit_exact"] else "MISMATCH"
        lines.append(f"  {k}: {v['samples']} samples {verdict}")
    if not res["all_bit_exact"]:
        raise KairoError("back ends disagree with the reference:\n" + "\n".join(lines))
    return "\n".join(lines)


# ---------------------------------------------------------------- kairo logic fpga | bench
__all__ += ["FpgaConfig", "BenchConfig"]


@dataclass(frozen=True)
class FpgaConfig:
    """``kairo logic fpga``: Yosys + nextpnr report of a circuit in a shift-register wrapper."""

    circuit: str = ""                 # circuit.json
    target: str = "ice40-up5k"        # see kairo.logic._fpga.TARGETS
    pipeline: int = 0                 # register stages in the gate core
    pipeline_votes: int = 0           # register stages in the vote and argmax trees
    io_bits: int = 8                  # input bits loaded per clock
    freq: float = 12.0                # MHz nextpnr aims for (fmax is reported either way)
    seed: int = 1                     # nextpnr placement seed
    timeout: float = 1800.0           # seconds per tool run
    core_stats: bool = True           # also synthesize the core alone (wrapper cost)
    sim_vectors: int = 64             # random vectors to simulate the wrapper with (0: skip)

    def __post_init__(self):
        from kairo.logic._fpga import get_target

        if not self.circuit:
            raise ConfigError("--circuit is required")
        get_target(self.target)
        if min(self.pipeline, self.pipeline_votes, self.sim_vectors) < 0 or self.io_bits < 1:
            raise ConfigError(f"pipeline, pipeline_votes and sim_vectors must be ≥ 0 and "
                              f"io_bits ≥ 1, got pipeline={self.pipeline}, pipeline_votes="
                              f"{self.pipeline_votes}, io_bits={self.io_bits}, "
                              f"sim_vectors={self.sim_vectors}")
        if not self.freq > 0 or not self.timeout > 0:
            raise ConfigError(f"freq (MHz) and timeout (s) must be > 0, got freq={self.freq}, "
                              f"timeout={self.timeout}")


@dataclass(frozen=True)
class BenchConfig:
    """``kairo logic bench``: images/s of a circuit on one core, kairo vs the anchor's method."""

    circuit: str = ""
    images: int = 100_000             # MNIST test images (of the circuit's classes) repeated
    repeats: int = 5                  # timed passes; the best one counts
    width: str = "auto"               # C word width: auto, 64, 256, 512
    anchor: bool = True               # also time difflogic's method
    bits_path: bool = True            # also time NumPy thresholding + CompiledCircuit.predict
    bandwidth_mib: int = 512          # buffer for the read-bandwidth bound (0: skip)
    seed: int = 0                     # random images for circuits that are not 28 × 28
    data_dir: str | None = None

    def __post_init__(self):
        if not self.circuit:
            raise ConfigError("--circuit is required")
        if self.images < 1 or self.repeats < 1 or self.bandwidth_mib < 0:
            raise ConfigError(f"images and repeats must be ≥ 1 and bandwidth_mib ≥ 0, got "
                              f"images={self.images}, repeats={self.repeats}, "
                              f"bandwidth_mib={self.bandwidth_mib}")
        if self.width not in ("auto", "64", "256", "512"):
            raise ConfigError(f"width must be auto, 64, 256 or 512, got {self.width!r}")
