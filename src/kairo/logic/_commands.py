"""``kairo logic train | export | verify``: what each command computes and writes."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kairo._errors import ConfigError, KairoError
from kairo.logic._circuit import Circuit

__all__ = ["LogicTrainConfig", "ExportConfig", "VerifyConfig", "run_train", "run_export",
           "run_verify", "EXPORT_FORMATS", "BACKENDS"]

PAIRINGS = ("random", "unique")       # kept equal to kairo.logic._layers (torch-free here)
GATE_MODES = ("soft", "gumbel")
EXPORT_FORMATS = ("json", "c", "verilog")
BACKENDS = ("numpy", "c", "verilog")


@dataclass(frozen=True)
class LogicTrainConfig:
    """``kairo logic train``: a dense logic-gate network on MNIST."""

    dataset: str = "mnist"
    classes: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)
    thresholds: tuple[int, ...] = (127,)      # one: fixed binarization; several: thermometer
    kernels: int = 0                          # convolutional kernels (not implemented yet)
    hidden: int = 1000                        # neurons per logic layer
    layers: int = 2                           # logic layers (the last feeds GroupSum)
    pairing: str = "unique"
    residual_init: float = 0.0                # > 0: pass-through logit starts at this value
    gate_mode: str = "soft"                   # soft, gumbel (straight-through)
    gumbel_tau: float = 1.0
    tau: float = 10.0                         # GroupSum temperature
    lr: float = 0.01
    batch: int = 128
    iters: int = 1000
    eval_every: int = 200
    checkpoint_every: int = 200
    val_fraction: float = 0.1
    seed: int = 0
    data_dir: str | None = None

    def __post_init__(self):
        if self.dataset != "mnist":
            raise ConfigError(f"dataset must be 'mnist' (the only one so far), got "
                              f"{self.dataset!r}")
        if len(self.classes) < 2 or len(set(self.classes)) != len(self.classes) or \
                any(not 0 <= c <= 9 for c in self.classes):
            raise ConfigError(f"classes must be ≥ 2 distinct digits 0–9, got {self.classes}")
        if self.kernels:
            raise ConfigError("convolutional logic layers (--kernels) are not implemented yet; "
                              "train a dense network with --kernels 0 (see docs/logic.md)")
        if self.pairing not in PAIRINGS or self.gate_mode not in GATE_MODES:
            raise ConfigError(f"pairing must be one of {PAIRINGS} and gate_mode one of "
                              f"{GATE_MODES}")
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

    def arch(self) -> dict:
        """What a checkpoint must match to be loaded into this model."""
        return {"n_classes": len(self.classes), "thresholds": list(self.thresholds),
                "hidden": self.hidden, "layers": self.layers, "pairing": self.pairing,
                "seed": self.seed, "kernels": self.kernels}


@dataclass(frozen=True)
class ExportConfig:
    circuit: str = ""                 # circuit.json (from kairo logic train)
    format: str = "c"                 # json, c, verilog
    output: str = ""                  # file to write (its folder must exist)
    pipeline: int = 0                 # Verilog register stages

    def __post_init__(self):
        if not self.circuit or not self.output:
            raise ConfigError("--circuit and --output are required")
        if self.format not in EXPORT_FORMATS:
            raise ConfigError(f"format must be one of {', '.join(EXPORT_FORMATS)}; got "
                              f"{self.format!r}")
        if self.pipeline < 0:
            raise ConfigError(f"pipeline must be ≥ 0, got {self.pipeline}")


@dataclass(frozen=True)
class VerifyConfig:
    circuit: str = ""
    backends: tuple[str, ...] = BACKENDS
    samples: int = 0                  # MNIST test images to check (0: all 10,000)
    verilog_samples: int = 2000       # the event-driven simulator is slow; a prefix of them
    data_dir: str | None = None

    def __post_init__(self):
        if not self.circuit:
            raise ConfigError("--circuit is required")
        for b in self.backends:
            if b not in BACKENDS:
                raise ConfigError(f"unknown back end {b!r}; expected any of {', '.join(BACKENDS)}")
        if self.samples < 0 or self.verilog_samples < 0:
            raise ConfigError("samples must be ≥ 0")


def run_train(cfg, rd, out: Path, log=print) -> str:
    """Train (resumable through ``<out>.checkpoint.pt``), extract, simplify, save, score."""
    import torch

    from kairo.logic._model import image_bits, load_data, to_circuit, train
    from kairo.logic._simplify import simplify

    ckpt = out.with_name(out.name + ".checkpoint.pt")
    data = load_data(cfg)
    res = train(cfg, checkpoint=ckpt, data=data, log=log)
    model = res["model"]
    xt, yt = data["test"]
    with torch.no_grad():
        pred_model = model(torch.from_numpy(xt)).argmax(1).numpy()
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
               "iters_per_s": res["iters_per_s"], "resumed_from": res["resumed_from"]}
    rd.write_json("metrics.json", metrics)
    circ.save(rd.path / "circuit.json")
    raw.save(rd.path / "circuit_raw.json")
    rd.files += ["circuit.json", "circuit_raw.json"]
    shutil.copyfile(ckpt, rd.path / "model.pt")
    rd.files.append("model.pt")
    import pandas as pd

    rd.write_table("history.csv", pd.DataFrame(res["history"]))
    last = res["history"][-1] if res["history"] else {}
    acc = metrics["test_accuracy_circuit"]
    text = (f"classes {','.join(map(str, cfg.classes))}: test accuracy {acc:.2%} "
            f"(discrete circuit; relaxed val {last.get('val_relaxed', float('nan')):.2%}, "
            f"discrete val {last.get('val_discrete', float('nan')):.2%})\n"
            f"gates {raw.n_gates} → {circ.n_gates} after simplification, depth "
            f"{report['before']['depth']} → {report['after']['depth']}\n"
            f"training {res['seconds']:.1f} s ({res['iters_per_s']:.1f} it/s)")
    return text


def _done_checkpoint(out: Path) -> None:
    ckpt = out.with_name(out.name + ".checkpoint.pt")
    if ckpt.exists():
        ckpt.unlink()


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
        be.write_verilog(circ, out, pipeline=cfg.pipeline)
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
            out, pred = be.simulate_verilog(circ, bits[:n])
            extra = {"simulator": be.find_simulator()}
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



