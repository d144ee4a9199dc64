"""``kairo logic train | export | verify | import | fpga | bench``: what each command computes and
writes. Torch-free at import: the heavy modules are imported inside the run functions."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from kairo._command import Command
from kairo._errors import KairoError
from kairo.logic._config import (BenchConfig, EnsembleConfig, ExportConfig, FpgaConfig,
                                 ImportConfig, LogicTrainConfig, VerifyConfig)

__all__ = ["COMMANDS"]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- inputs
def _circuit(path: str) -> dict:
    if not Path(path).is_file():
        raise KairoError(f"circuit file {path} does not exist")
    return {"circuit": path}


def _images(dataset: str, data_dir) -> dict:
    from kairo.data import image_files

    return image_files(dataset, data_dir)


def _train_inputs(cfg: LogicTrainConfig) -> dict:
    files = _images(cfg.dataset, cfg.data_dir)
    if cfg.init_from and Path(cfg.init_from).is_file():
        files["init_from"] = cfg.init_from
    return files


def _verify_inputs(cfg: VerifyConfig) -> dict:
    from kairo.logic import Circuit

    files = _circuit(cfg.circuit)
    dataset = cfg.dataset or Circuit.load(cfg.circuit).meta.get("dataset") or "mnist"
    return {**files, **_images(dataset, cfg.data_dir)}


def _ensemble_inputs(cfg: EnsembleConfig) -> dict:
    from kairo.logic import Circuit

    files = {}
    for i, path in enumerate(cfg.circuits):
        files[f"circuit_{i}"] = _circuit(path)["circuit"]
    first = Circuit.load(cfg.circuits[0])
    if first.image_input is None:
        return files
    dataset = cfg.dataset or first.meta.get("dataset") or "mnist"
    return {**files, **_images(dataset, cfg.data_dir)}


def _fpga_inputs(cfg: FpgaConfig) -> dict:
    return _circuit(cfg.circuit)


def _import_inputs(cfg: ImportConfig) -> dict:
    files = {"model": cfg.model}
    for label in ("layout", "reference"):
        if getattr(cfg, label) and Path(getattr(cfg, label)).is_file():
            files[label] = getattr(cfg, label)
    return {**files, **(_images(cfg.dataset, cfg.data_dir) if cfg.dataset else {})}


def _bench_inputs(cfg: BenchConfig) -> dict:
    from kairo.logic import Circuit

    files = _circuit(cfg.circuit)
    circ = Circuit.load(cfg.circuit)           # timed on its dataset's test images, if known
    dataset = circ.meta.get("dataset") or (
        "mnist" if circ.image_input and circ.image_input.n_pixels == 784 else None)
    return {**files, **(_images(dataset, cfg.data_dir) if dataset else {})}


# ---------------------------------------------------------------------------- train
def _train(cfg: LogicTrainConfig, rd) -> str:
    """Train (resumable through ``rd.checkpoint``), extract, simplify, save, score."""
    import numpy as np
    import pandas as pd

    from kairo.logic import (describe_branch, fused_available, layer_report, load_data,
                             predict, simplify, snapshot_path, to_circuit, train, val_seed,
                             vote_gates)

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
    raw = to_circuit(model, meta={"classes": list(cfg.classes), "dataset": cfg.dataset,
                                  "validation": {"seed": val_seed(cfg),
                                                 "fraction": cfg.val_fraction}})
    circ, report = simplify(raw)
    bits = circ.image_bits(xt)
    pred_circ = circ.predict(bits)
    if not np.array_equal(pred_circ, raw.predict(bits)):
        raise KairoError("internal error: the simplified circuit disagrees with the raw one")
    metrics = {"test_accuracy_discrete": float((pred_model == yt).mean()),
               "test_accuracy_circuit": float((pred_circ == yt).mean()),
               "circuit_matches_model": bool(np.array_equal(pred_circ, pred_model)),
               "n_test": int(len(yt)), "gates_before": raw.n_gates,
               "gates_after": circ.n_gates, "vote_gates": vote_gates(circ),
               "depth_before": report["before"]["depth"],
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
            + (f"; weights of iteration {kept}, " + (
                "the best discrete validation" if cfg.keep_best else "the last") +
               (f" within {cfg.max_gates} gates" if cfg.max_gates else "") if kept else "")
            + ")\n" + branch_line +
            f"gates {raw.n_gates} → {circ.n_gates} after simplification, depth "
            f"{report['before']['depth']} → {report['after']['depth']}; the class vote "
            f"{metrics['vote_gates']['total']} gates more (popcounts "
            f"{metrics['vote_gates']['popcount']}, argmax {metrics['vote_gates']['argmax']})\n"
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
    # written beside the target and checked there; renamed over it only once it agrees
    tmp = out.with_name(f".{out.name}.kairo-export")
    try:
        if cfg.format == "json":
            circ.save(tmp)
        elif cfg.format == "c":
            write_c(circ, tmp)
        else:
            write_verilog(circ, tmp, pipeline=cfg.pipeline, pipeline_votes=cfg.pipeline_votes)
        checked = _check_export(cfg, circ, tmp) if cfg.verify else "not checked (--no-verify)"
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return f"wrote {out} ({cfg.format}, {circ.n_gates} gates); {checked}"


def _check_export(cfg: ExportConfig, circ, path: Path) -> str:
    """Run the written file on test images (or random inputs) and compare it with the NumPy
    reference, bit for bit; KairoError naming what disagrees."""
    import numpy as np

    from kairo.logic import (Circuit, circuit_images, find_simulator, run_portable_c,
                             simulate_verilog)

    n = cfg.verify_samples
    if circ.image_input is not None:
        try:
            x, _, name = circuit_images(circ, cfg.dataset, cfg.data_dir)
        except KairoError as exc:
            raise type(exc)(f"{exc}\n(or export unchecked with --no-verify)") from None
        bits, what = circ.image_bits(x[:n] if n else x), f"{name} test images"
    else:
        rng = np.random.default_rng(0)
        bits = rng.integers(0, 2, (n or 1000, circ.n_inputs)).astype(bool)
        what = "random inputs"
    ref_out, ref_pred = circ.evaluate(bits), circ.predict(bits)
    if cfg.format == "json":
        back = Circuit.load(path)
        out, pred = back.evaluate(bits), back.predict(bits)
    elif cfg.format == "c":
        out, pred = run_portable_c(circ, path.read_text(), bits)
    else:
        try:
            sim = find_simulator(cfg.simulator)
        except KairoError as exc:
            raise KairoError(f"{exc}\n(or export unchecked with --no-verify)") from None
        out, pred = simulate_verilog(circ, bits, simulator=sim, pipeline=cfg.pipeline,
                                     pipeline_votes=cfg.pipeline_votes, source=path.read_text())
    if not (np.array_equal(out, ref_out) and np.array_equal(pred, ref_pred)):
        bad = int(np.flatnonzero((out != ref_out).any(1) | (pred != ref_pred))[0])
        raise KairoError(f"the exported {cfg.format} file disagrees with the reference on "
                         f"sample {bad} of {len(bits)} {what}; nothing was written to "
                         f"{cfg.output}")
    return f"bit-exact with the reference on {len(bits)} {what}"


# ---------------------------------------------------------------------------- verify
def _verify(cfg: VerifyConfig, rd) -> str:
    """Every back end against the NumPy reference on the test images of the circuit's
    dataset, bit for bit; ``verify.json`` in the folder, and an error naming the back ends
    that disagree."""
    import numpy as np

    from kairo.logic import Circuit, circuit_images, compile_c, find_simulator, simulate_verilog

    circ = Circuit.load(cfg.circuit)
    if circ.image_input is None:
        raise KairoError(f"circuit {cfg.circuit} has no input thresholds in its meta; verify "
                         f"needs a circuit made by `kairo logic train`")
    x, y, dataset = circuit_images(circ, cfg.dataset, cfg.data_dir)
    if cfg.samples:
        x, y = x[:cfg.samples], y[:cfg.samples]
    bits = circ.image_bits(x)
    ref_out = circ.evaluate(bits)
    ref_pred = circ.predict(bits)
    res = {"dataset": dataset, "n_samples": int(len(y)),
           "accuracy": float((ref_pred == y).mean()), "backends": {}}
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


# ---------------------------------------------------------------------------- ensemble
def _ensemble(cfg: EnsembleConfig, rd) -> str:
    """The members joined (:func:`kairo.logic.ensemble`), simplified, checked against the raw
    join and scored with each member on the test images."""
    import numpy as np

    from kairo.logic import Circuit, circuit_images, ensemble, simplify, vote_gates

    members = [Circuit.load(p) for p in cfg.circuits]
    splits = [c.meta.get("validation") for c in members]
    raw = ensemble(members, names=[f"circuit {p}" for p in cfg.circuits])
    circ, report = simplify(raw)
    if cfg.max_gates and circ.n_gates > cfg.max_gates:
        raise KairoError(f"the ensemble has {circ.n_gates} gates after simplification, more "
                         f"than --max-gates {cfg.max_gates}; nothing was written")
    rows = [{"circuit": p, "gates": c.n_gates, "outputs_per_class": c.n_outputs // c.n_classes}
            for p, c in zip(cfg.circuits, members)]
    metrics = {"members": rows, "gates_before": raw.n_gates, "gates_after": circ.n_gates,
               "vote_gates": vote_gates(circ), "depth_after": report["after"]["depth"],
               "simplify": report}
    line = ""
    if circ.image_input is not None:
        x, y, name = circuit_images(circ, cfg.dataset, cfg.data_dir)
        bits = circ.image_bits(x)
        pred = circ.predict(bits)
        if not np.array_equal(pred, raw.predict(bits)):
            raise KairoError("internal error: the simplified ensemble disagrees with the join")
        for row, c in zip(rows, members):
            row["test_accuracy"] = float((c.predict(bits) == y).mean())
        metrics.update(dataset=name, n_test=int(len(y)),
                       test_accuracy_circuit=float((pred == y).mean()))
        metrics["val_accuracy"] = _ensemble_validation(cfg, circ, members, rows, splits)
        line = (f"test accuracy {metrics['test_accuracy_circuit']:.2%} on {len(y)} {name} "
                f"images (members: " + ", ".join(f"{r['test_accuracy']:.2%}" for r in rows)
                + ")\n")
        if metrics["val_accuracy"] is not None:
            line += (f"validation accuracy {metrics['val_accuracy']:.2%} on the training "
                     f"images the members held out (members: " +
                     ", ".join(f"{r['val_accuracy']:.2%}" for r in rows) + ")\n")
    rd.add("metrics.json", metrics)
    circ.save(rd.path / "circuit.json")
    rd.add("circuit.json")
    return (line + f"{len(members)} circuits, {raw.n_gates} gates → {circ.n_gates} after "
            f"simplification, depth {report['after']['depth']}; the class vote "
            f"{metrics['vote_gates']['total']} gates more")


def _ensemble_validation(cfg, circ, members, rows, splits) -> float | None:
    """The join's and each member's accuracy on the training images every member held out
    (members trained with one ``--val-seed``), else None with the reason logged."""
    from kairo.logic import circuit_images, validation_split

    split = splits[0]
    if not (isinstance(split, dict) and isinstance(split.get("seed"), int)
            and isinstance(split.get("fraction"), float) and 0 < split["fraction"] < 0.5
            and all(s == split for s in splits)):
        log.info("no validation score: the members do not record one shared validation split "
                 "(train them with the same --val-seed)")
        return None
    if cfg.dataset and cfg.dataset != circ.meta.get("dataset"):
        return None                 # the held-out images are those of the members' dataset
    x, y, _ = circuit_images(circ, "", cfg.data_dir, split="train")
    held, _ = validation_split(len(y), split["seed"], split["fraction"])
    bits, y = circ.image_bits(x[held]), y[held]
    for row, c in zip(rows, members):
        row["val_accuracy"] = float((c.predict(bits) == y).mean())
    return float((circ.predict(bits) == y).mean())


# ---------------------------------------------------------------------------- import
def _import(cfg: ImportConfig, rd) -> str:
    from kairo.logic._import import run_import

    return run_import(cfg, rd)


# ---------------------------------------------------------------------------- fpga | bench
def _fpga(cfg: FpgaConfig, rd) -> str:
    from kairo.logic._fpga import run_fpga

    return run_fpga(cfg, rd)


def _bench(cfg: BenchConfig, rd) -> str:
    from kairo.logic._bench import run_bench

    return run_bench(cfg, rd)


COMMANDS = [
    Command("logic train", LogicTrainConfig, _train,
            "train a logic-gate network on MNIST (or an .npz / IDX image set) and extract its "
            "circuit",
            description="train a logic-gate network on MNIST or an image set, make it a "
                        "circuit, simplify and score it; a stopped run resumes from "
                        "<out>.checkpoint.pt",
            inputs=_train_inputs, headline=("test_accuracy_circuit", "gates_after")),
    Command("logic export", ExportConfig, _export, "write a circuit as JSON, C or Verilog",
            description="write a circuit (circuit.json of kairo logic train) as one JSON, C or "
                        "Verilog file, kept only once it agrees bit for bit with the reference "
                        "on test images (C compiled and run, Verilog simulated; --no-verify "
                        "skips the check)", folder=False),
    Command("logic verify", VerifyConfig, _verify,
            "check every back end bit-exactly against the reference on its test images",
            description="run the circuit's C and Verilog back ends on the test images of its "
                        "dataset (MNIST unless it records another, or --dataset) and "
                        "compare them bit for bit with the NumPy reference",
            inputs=_verify_inputs, headline=("verify.accuracy", "verify.all_bit_exact")),
    Command("logic import", ImportConfig, _import,
            "import a network trained with difflogic or torchlogix as a verified circuit",
            description="read a difflogic or torchlogix model file (torch.save of the module, "
                        "or a state_dict with a layout), write its circuit (circuit.json, "
                        "simplified; circuit_raw.json) and check it bit for bit against the "
                        "framework's own discrete forward when installed, else a --reference",
            inputs=_import_inputs, headline=("test_accuracy_circuit", "gates_after")),
    Command("logic ensemble", EnsembleConfig, _ensemble,
            "join circuits into one whose class votes are the sum of theirs",
            description="run several circuits side by side on the same inputs as one circuit "
                        "(their class votes summed), simplified and scored with each member on "
                        "the test images; export, verify and fpga take it like any circuit",
            inputs=_ensemble_inputs, headline=("test_accuracy_circuit", "gates_after")),
    Command("logic fpga", FpgaConfig, _fpga,
            "synthesize, place and route a circuit for an iCE40 FPGA (Yosys + nextpnr): LUTs, "
            "fit, fmax",
            description="Yosys + nextpnr report of a circuit inside a top-level wrapper that "
                        "loads its input bits (or thresholds 8-bit pixels) over a narrow port "
                        "(system tools or the YoWASP builds: pip install "
                        "'kairo-circuits[fpga]')",
            inputs=_fpga_inputs, headline=("fpga.synthesis.lut4", "fpga.fits", "fpga.fmax_mhz")),
    Command("logic bench", BenchConfig, _bench,
            "inference images/s on one core: kairo's compiled C against the anchor's method",
            description="uint8 images in memory → classes on one core, with the "
                        "memory-bandwidth bound",
            inputs=_bench_inputs),
]
