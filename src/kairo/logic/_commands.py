"""``kairo logic train | export | verify | fpga | bench``: what each command computes and
writes. Torch-free at import: the heavy modules are imported inside the run functions."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from kairo._app import Command
from kairo._errors import KairoError
from kairo.logic._config import (BenchConfig, ExportConfig, FpgaConfig, LogicTrainConfig,
                                 VerifyConfig)

__all__ = ["COMMANDS"]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- inputs
def _mnist(data_dir, *splits: str) -> dict:
    from kairo.data import mnist_files

    return {k: v for s in splits for k, v in mnist_files(s, data_dir).items()}


def _circuit(path: str) -> dict:
    if not Path(path).is_file():
        raise KairoError(f"circuit file {path} does not exist")
    return {"circuit": path}


def _train_inputs(cfg: LogicTrainConfig) -> dict:
    files = _mnist(cfg.data_dir, "train", "test")
    if cfg.init_from and Path(cfg.init_from).is_file():
        files["init_from"] = cfg.init_from
    return files


def _verify_inputs(cfg: VerifyConfig) -> dict:
    return {**_circuit(cfg.circuit), **_mnist(cfg.data_dir, "test")}


def _fpga_inputs(cfg: FpgaConfig) -> dict:
    return _circuit(cfg.circuit)


def _bench_inputs(cfg: BenchConfig) -> dict:
    from kairo.logic import Circuit

    files = _circuit(cfg.circuit)
    spec = Circuit.load(cfg.circuit).image_input       # 784 pixels: timed on MNIST test images
    return {**files, **(_mnist(cfg.data_dir, "test") if spec and spec.n_pixels == 784 else {})}


# ---------------------------------------------------------------------------- train
def _train(cfg: LogicTrainConfig, rd) -> str:
    """Train (resumable through ``rd.checkpoint``), extract, simplify, save, score."""
    import numpy as np
    import pandas as pd

    from kairo.logic import (describe_branch, fused_available, layer_report, load_data,
                             predict, simplify, snapshot_path, to_circuit, train)

    engine = cfg.engine if cfg.engine != "auto" else (
        "fused" if fused_available() else "torch")
    rd.resolve("engine", engine)
    for it in cfg.snapshots:            # copied into the folder below, then not needed beside it
        rd.discard_on_success(snapshot_path(rd.checkpoint, it))
    data = load_data(cfg)
    res = train(cfg, checkpoint=rd.checkpoint, data=data)
    model = res["model"]
    kept = res["kept_iter"]
    xt, yt = data["test"]
    pred_model = predict(model, xt)
    raw = to_circuit(model, meta={"classes": list(cfg.classes)})
    circ, report = simplify(raw)
    bits = circ.image_bits(xt)
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
               "layers": layer_report(model, cfg), "engine": engine}
    rd.add("metrics.json", metrics)
    circ.save(rd.path / "circuit.json")
    raw.save(rd.path / "circuit_raw.json")
    rd.add("circuit.json")
    rd.add("circuit_raw.json")
    shutil.copyfile(rd.checkpoint, rd.path / "model.pt")
    rd.add("model.pt")
    for it in cfg.snapshots:
        if snapshot_path(rd.checkpoint, it).is_file():
            shutil.copyfile(snapshot_path(rd.checkpoint, it), rd.path / f"checkpoint-{it}.pt")
            rd.add(f"checkpoint-{it}.pt")
    rd.add("history.csv", pd.DataFrame(res["history"]))
    last = res["history"][-1] if res["history"] else {}
    if kept is not None:            # the numbers of the weights that were kept
        last = next((h for h in res["history"] if h["iter"] == kept), last)
    acc = metrics["test_accuracy_circuit"]
    branch_line = describe_branch(res["branch"]) + "\n" if res["branch"] else ""
    return (f"classes {','.join(map(str, cfg.classes))}: test accuracy {acc:.2%} "
            f"(discrete circuit; relaxed val {last.get('val_relaxed', float('nan')):.2%}, "
            f"discrete val {last.get('val_discrete', float('nan')):.2%}"
            + (f"; weights of iteration {kept}, the best discrete validation" if kept else "")
            + ")\n" + branch_line +
            f"gates {raw.n_gates} → {circ.n_gates} after simplification, depth "
            f"{report['before']['depth']} → {report['after']['depth']}\n"
            f"training {res['seconds']:.1f} s ({res['iters_per_s']:.1f} it/s, "
            f"{engine} engine)")


# ---------------------------------------------------------------------------- export
def _export(cfg: ExportConfig, rd) -> str:
    """One file, ``cfg.output``, written atomically; never the input, never over an existing
    file without ``overwrite``."""
    from kairo.logic import Circuit, write_c, write_verilog

    out, src = Path(cfg.output), Path(cfg.circuit)
    if out.is_dir():
        raise KairoError(f"output {out} is a folder; name the file to write")
    if out.exists() and src.exists() and out.resolve() == src.resolve():
        raise KairoError(f"output {out} is the input circuit; name another file")
    if out.exists() and not cfg.overwrite:
        raise KairoError(f"output {out} already exists; choose another --output or pass "
                         f"--overwrite")
    if not out.parent.is_dir():
        raise KairoError(f"output {out}: folder {out.parent} does not exist")
    circ = Circuit.load(src)
    if cfg.format == "json":
        circ.save(out)
    elif cfg.format == "c":
        write_c(circ, out)
    else:
        write_verilog(circ, out, pipeline=cfg.pipeline, pipeline_votes=cfg.pipeline_votes)
    return f"wrote {out} ({cfg.format}, {circ.n_gates} gates)"


# ---------------------------------------------------------------------------- verify
def _verify(cfg: VerifyConfig, rd) -> str:
    """Every back end against the NumPy reference on MNIST test images, bit for bit;
    ``verify.json`` in the folder, and an error naming the back ends that disagree."""
    import numpy as np

    from kairo.data import load_mnist
    from kairo.logic import Circuit, compile_c, find_simulator, simulate_verilog

    circ = Circuit.load(cfg.circuit)
    if circ.image_input is None:
        raise KairoError(f"circuit {cfg.circuit} has no input thresholds in its meta; verify "
                         f"needs a circuit made by `kairo logic train`")
    classes = circ.meta.get("classes")
    x, y = load_mnist("test", cfg.data_dir)
    if classes is not None:
        lut = np.full(10, -1)
        lut[classes] = np.arange(len(classes))
        keep = lut[y] >= 0
        x, y = x[keep], lut[y[keep]]
    if cfg.samples:
        x, y = x[:cfg.samples], y[:cfg.samples]
    bits = circ.image_bits(x)
    ref_out = circ.evaluate(bits)
    ref_pred = circ.predict(bits)
    res = {"n_samples": int(len(y)), "accuracy": float((ref_pred == y).mean()), "backends": {}}
    for name in cfg.backends:
        if name == "numpy":
            continue
        if name == "c":
            comp = compile_c(circ)
            out, pred = comp.evaluate(bits), comp.predict(bits)
            n = len(y)
            extra = {"width": comp.width}
        else:
            n = min(len(y), cfg.verilog_samples or len(y))
            sim = find_simulator(cfg.simulator)
            out, pred = simulate_verilog(circ, bits[:n], simulator=sim)
            extra = {"simulator": sim}
        ok = bool(np.array_equal(out, ref_out[:n]) and np.array_equal(pred, ref_pred[:n]))
        res["backends"][name] = {"samples": int(n), "bit_exact": ok, **extra}
        log.info("%s: %d samples, %s", name, n, "bit-exact" if ok else "MISMATCH")
    res["all_bit_exact"] = all(v["bit_exact"] for v in res["backends"].values())
    rd.add("verify.json", res)
    lines = [f"reference (NumPy) accuracy {res['accuracy']:.2%} on {res['n_samples']} images"]
    for k, v in res["backends"].items():
        lines.append(f"  {k}: {v['samples']} samples "
                     f"{'bit-exact' if v['bit_exact'] else 'MISMATCH'}")
    if not res["all_bit_exact"]:
        raise KairoError("back ends disagree with the reference:\n" + "\n".join(lines))
    return "\n".join(lines)


# ---------------------------------------------------------------------------- fpga | bench
def _fpga(cfg: FpgaConfig, rd) -> str:
    from kairo.logic._fpga import run_fpga

    return run_fpga(cfg, rd)


def _bench(cfg: BenchConfig, rd) -> str:
    from kairo.logic._bench import run_bench

    return run_bench(cfg, rd)


COMMANDS = [
    Command("logic train", LogicTrainConfig, _train,
            "train a logic-gate network on MNIST and extract its circuit",
            description="train a logic-gate network on MNIST, make it a circuit, simplify and "
                        "score it; a stopped run resumes from <out>.checkpoint.pt",
            inputs=_train_inputs),
    Command("logic export", ExportConfig, _export, "write a circuit as JSON, C or Verilog",
            description="write a circuit (circuit.json of kairo logic train) as one JSON, C or "
                        "Verilog file", folder=False),
    Command("logic verify", VerifyConfig, _verify,
            "check every back end bit-exactly against the reference on MNIST",
            description="run the circuit's C and Verilog back ends on MNIST test images and "
                        "compare them bit for bit with the NumPy reference",
            inputs=_verify_inputs),
    Command("logic fpga", FpgaConfig, _fpga,
            "synthesize, place and route a circuit for an iCE40 FPGA (Yosys + nextpnr): LUTs, "
            "fit, fmax",
            description="Yosys + nextpnr report of a circuit inside a shift-register wrapper "
                        "(system tools or the YoWASP builds: pip install "
                        "'kairo-circuits[fpga]')",
            inputs=_fpga_inputs),
    Command("logic bench", BenchConfig, _bench,
            "inference images/s on one core: kairo's compiled C against the anchor's method",
            description="uint8 images in memory → classes on one core, with the "
                        "memory-bandwidth bound",
            inputs=_bench_inputs),
]
