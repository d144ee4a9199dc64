"""The ``kairo`` command: one sub-command per family (``kairo reservoir …``) plus ``demo``
and ``data``. Flags are generated from the config dataclasses, so a flag, a key in a
YAML/TOML ``--config`` file and a key in a results folder's ``config.yaml`` are the same name.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from kairo import __version__
from kairo._config import build_config, field_kind, load_config_file
from kairo._errors import KairoError

__all__ = ["main"]

_HELP = {
    "connectome": "registered name (winding2023) or path to a .csv/.npz/.zip/folder",
    "compartment": "Winding 2023 compartment matrix: all, aa, ad, da, dd",
    "data_dir": "data directory (default: $KAIRO_DATA_DIR, else the user cache dir)",
    "norm": "normalization: none, spectral, row (out-weights sum to 1), column",
    "spectral_radius": "target spectral radius for --norm spectral",
    "alpha": "global gain applied after normalization",
    "signs": "excitatory (all positive) or dale (inhibitory neurons by row)",
    "input_group": "neurons receiving input, e.g. sensory, sensory:L, 'celltype=PN;side=R'",
    "readout_group": "neurons the readout reads (all, DN-VNC, …)",
    "task": "memory-capacity, narma10, mackey-glass, lorenz, sine-square",
    "horizon": "prediction horizon in steps (default: 84 for mackey-glass, 25 for lorenz)",
    "nulls": "null-model replicates per null model",
    "null_models": "comma-separated: rewire, weight-shuffle, random-topology, gaussian",
    "param": "parameter to sweep: alpha, spectral_radius, leak, input_gain, bias",
    "values": "comma-separated parameter values",
    "norms": "comma-separated normalizations to compare",
    "convention": "pre-to-post (biological) or reversed (post → pre, labelled as such)",
    "record_groups": "comma-separated cell types whose L/R activity is reported",
    "controller": "connectome, braitenberg, constant, rewired, weight-shuffle, "
                  "random-topology, gaussian",
    "controllers": "comma-separated controllers (see --controller)",
    "wiring": "ipsilateral (left DN → left legs) or crossed",
    "wirings": "comma-separated wirings to run each controller with",
    "video": "write an mp4 of the trial here (its folder must exist)",
    "sensory_left": "neuron group driven by the left odor reading",
    "sensory_right": "neuron group driven by the right odor reading",
    "descending_left": "neuron group whose mean activity is the left motor signal",
    "descending_right": "neuron group whose mean activity is the right motor signal",
    "brain_steps": "reservoir steps per decision interval",
    "decision_interval": "seconds between controller decisions",
    "timestep": "physics timestep in seconds (2e-4 is ~2x faster and close; 5e-4 diverges)",
    "workers": "parallel worker processes (0: one per core)",
    "executor": "auto (Ray when RAY_ADDRESS is set, else processes), processes, ray, serial",
    "motor_scale": "divide DN activity changes by this (0: the settled activity's mean)",
    "classes": "comma-separated digits to classify, e.g. 0,1",
    "thresholds": "pixel thresholds 0-255 (several: thermometer code)",
    "kernels": "kernels of the first convolutional block (0: a dense network)",
    "conv_blocks": "LogicConv2d + 2x2 OR-pooling blocks",
    "conv_growth": "kernels multiply by this from one block to the next",
    "receptive": "receptive field (pixels per side) of each logic tree",
    "conv_depth": "levels of gates in each kernel's logic tree",
    "conv_stride": "stride of the logic convolutions",
    "padding": "zero padding of the logic convolutions",
    "conv_groups": "channel groups of the logic convolutions",
    "backend": "torch, fused (numba CPU kernels) or auto",
    "hidden": "logic neurons per layer",
    "layers": "logic layers",
    "gate_mode": "soft (softmax mixture) or gumbel (straight-through hard gates)",
    "tau": "GroupSum temperature",
    "lr_decay_from": "-1: constant lr; else cosine decay of lr to 0 from this iteration on",
    "gate_temperature": "softmax temperature of the gate logits at the last iteration, "
                        "reached geometrically from 1 from --gate-temperature-from on (1: off; "
                        "e.g. 0.1 sharpens the relaxed network towards its circuit)",
    "gate_temperature_from": "iteration where --gate-temperature starts falling (-1: where the "
                             "cosine phase starts, else 0)",
    "fix_at": "comma-separated iterations: from the i-th, the i-th gate layer (conv blocks, then "
              "dense layers) computes its argmax gates and stops learning, so later layers "
              "train on the circuit's own values of it",
    "shift": "augmentation: move each training image by up to ±shift pixels (0: off)",
    "iters": "training iterations (batches)",
    "snapshots": "comma-separated iterations whose checkpoints are kept in the results folder "
                 "(checkpoint-<iteration>.pt), to branch later runs from with --init-from",
    "init_from": "start from this checkpoint (a snapshot or model.pt of a run with the same "
                 "architecture) at its iteration and go on with this run's schedule",
    "circuit": "circuit JSON written by kairo logic train",
    "format": "json, c or verilog",
    "output": "file to write (its folder must exist)",
    "backends": "comma-separated: numpy, c, verilog",
    "simulator": "Verilog simulator: auto (Icarus Verilog if installed, else Verilator), "
                 "iverilog, or verilator (compiled: slower to build, much faster on circuits "
                 "of ~100k gates)",
}


_TSC_HELP = {
    # training (kairo.attention.TrainConfig)
    "epochs": "training epochs (the most, with early stopping)",
    "batch": "series per training batch",
    "lr": "peak learning rate (AdamW)",
    "weight_decay": "AdamW's decoupled weight decay",
    "warmup": "fraction of all steps spent rising to --lr (cosine, onecycle)",
    "plateau_patience": "plateau schedule: epochs without a lower loss before lr × factor",
    "plateau_factor": "plateau schedule: the learning-rate multiplier",
    "min_lr": "plateau schedule: the learning-rate floor",
    "val_fraction": "stratified validation hold-out of the training split for early stopping; "
                    "0 = none (then the weights of the lowest training loss are kept)",
    "patience": "epochs without a lower validation loss before stopping; 0 = never stop early",
    "seed": "seed of the weights, the hold-out and the batch order",
    "label_smoothing": "label smoothing of the cross-entropy loss",
    "max_grad_norm": "clip the gradient norm to this; 0 = no clipping",
    "checkpoint_every": "epochs between checkpoints (<out>.checkpoint.pt; a rerun resumes)",
    "threads": "torch CPU threads; 0 = torch's default",
    "device": "cpu, cuda or auto (cuda when available)",
    # the model (kairo.attention.ModelConfig)
    "d_model": "width: Transformer token size; ResNet first-block channels (then 2×)",
    "n_heads": "Transformer attention heads",
    "dropout": "dropout on the Transformer's residual and MLP paths (never inside attention)",
    "patch": "steps per token with --tokens patch",
    "pool_heads": "heads of the mha pooling head",
    "pool_queries": "learned queries per head of the mha pooling head",
    # data and figures
    "mnist1d_length": "length of the generated MNIST-1D series",
    "split": "the dataset split to score: train or test",
    "d": "encoding width (even)",
    "positions": "positions drawn (≥ 2)",
    "base": "the sinusoid base C in pos / C^(2i/d)",
    "dataset": "an aeon-shipped UCR/UEA set or MNIST1D (kairo tsc list)",
    "datasets": "comma-separated dataset names (kairo tsc list)",
    "train_file": "your training series: .ts, .csv (label first) or .npz (x, y, mask)",
    "test_file": "your test series (same formats)",
    "pad": "allow series of different lengths (padded at the end and masked)",
    "encoder": "resnet (residual 1D-CNN) or transformer",
    "pool": "pooling head: mean, max, cls, attention, mha",
    "pools": "comma-separated pooling heads",
    "encoders": "comma-separated encoders",
    "norm": "Transformer layer norm placement: pre or post",
    "tokens": "Transformer tokens: step (one per time step) or patch",
    "positional": "positional encoding: sinusoidal, learned, rope, none",
    "n_kv_heads": "key/value heads: 0 = n_heads (MHA), 1 = MQA, else GQA",
    "layers": "Transformer blocks or ResNet blocks",
    "kernel_sizes": "ResNet: comma-separated kernel sizes of each block's convolutions",
    "shortcut": "ResNet: shortcut of a block that keeps its width: bn (batch norm, as in Fawaz "
                "et al. 2019) or identity",
    "length_feature": "append each series' valid length (a fraction of the longest training "
                      "series) to the pooled features, for padded sets whose length may "
                      "carry the class (no gain on PickupGestureWiimoteZ: docs/attention.md)",
    "head_norm": "LayerNorm between the pooled features and the linear layer: true, false "
                 "(none, as in Fawaz et al.'s ResNet) or auto (false for resnet, true for "
                 "transformer)",
    "weight_init": "torch (PyTorch's per-module defaults), glorot (Glorot-uniform weights and "
                   "zero biases for every convolution and linear layer: Keras's defaults, those "
                   "of the published ResNet runs) or auto (glorot for resnet, torch for "
                   "transformer)",
    "model": "a model.pt written by kairo tsc train",
    "input": "series to classify: .ts, .csv (one series per row, no label column unless "
             "--labelled) or .npz (array x)/.npy",
    "overwrite": "replace an existing --output file",
    "labelled": "the input carries labels as a training file does (.csv: first column; .ts: "
                "class labels; .npz: array y): they are checked, written next to the "
                "predictions and scored",
    "seeds": "training seeds per configuration",
    "first_seed": "the first training seed (seeds run first_seed, first_seed+1, …)",
    "reuse": "runs.csv of an earlier compare-pooling/benchmark run, or with --select cv the "
             "cv_runs.csv of an earlier benchmark (the grid is not retrained)",
    "select": "benchmark: how a configuration is chosen on the training split: holdout (the "
              "best validation accuracy) or cv (stratified k-fold cross-validation, each fold "
              "trained like the refit)",
    "folds": "benchmark --select cv: number of stratified folds",
    "cv_repeats": "benchmark --select cv: repeats of the k-fold split (seeds first_seed, …)",
    "time_warps": "benchmark: comma-separated time-warp candidates to choose from (e.g. 0,0.2); "
                  "empty = just --time-warp",
    "refit": "train the chosen configuration again on the whole training split (no hold-out, "
             "all epochs) and report those runs",
    "samples": "comma-separated series indices",
    "znorm": "input scaling: series (each series and channel z-normalized on its own, the UCR "
             "convention), channel (each channel with the training split's mean and sd, kept "
             "with the model; keeps levels that differ between classes), none; true/false = "
             "series/none",
    "jitter": "augmentation: sd of Gaussian noise added to each training batch (z units); 0 = off",
    "scaling": "augmentation: sd of a per-series, per-channel amplitude factor around 1; 0 = off",
    "time_warp": "augmentation: sd of the log speed of a random smooth time map per series "
                 "(Um et al. 2017); 0 = off",
    "crop": "augmentation: window slicing, the fraction of each series cut off before it is "
            "stretched back to full length (Le Guennec et al. 2016); 0 = off",
    "bn_stats": "batch-norm statistics of the trained model (ResNet): running (the averages "
                "left by training) or recompute (over the whole training split after "
                "training, one pass, no augmentation)",
    "schedule": "learning rate: cosine (after warm-up), onecycle, constant, or plateau (× "
                "plateau_factor after plateau_patience epochs without a lower loss: validation "
                "loss, or training loss when there is no hold-out; floor min_lr)",
}


_LOGIC_HW_HELP = {
    "target": "FPGA part: ice40-up5k, ice40-hx8k, ice40-lp8k, ice40-hx1k, ice40-lp1k",
    "pipeline": "register stages cutting the gate core by logic depth",
    "pipeline_votes": "register stages spread over the vote adder trees and the argmax "
                      "(at most their levels − 1; adds to the latency; for the fmax of "
                      "circuits with many votes)",
    "io_bits": "input bits loaded per clock through the shift register",
    "freq": "clock (MHz) nextpnr aims for; the achieved fmax is reported",
    "seed": "seed of nextpnr and the simulated inputs (fpga), of random images (bench)",
    "timeout": "seconds allowed for each Yosys / nextpnr run",
    "core_stats": "also synthesize the core alone, to report the wrapper's cost",
    "sim_vectors": "random inputs the wrapper is simulated on with iverilog first (0: skip)",
    "images": "images per timed pass (MNIST test images of the circuit's classes, repeated)",
    "repeats": "timed passes (the best counts)",
    "width": "C word width: auto, 64, 256 or 512",
    "anchor": "also time difflogic's method (NumPy packing + one C statement per gate)",
    "bits_path": "also time NumPy thresholding + CompiledCircuit.predict",
    "bandwidth_mib": "buffer for measuring the read-bandwidth bound (0: skip)",
}


def _add_config_flags(p: argparse.ArgumentParser, cls, results: bool = True,
                      helps: dict | None = None) -> None:
    p.add_argument("--config", help="YAML or TOML file with options (flags override it)")
    if results:
        p.add_argument("--out", help="results folder (default: results/<command>-<time>)")
        p.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    for f in dataclasses.fields(cls):
        base, is_tuple = field_kind(cls, f.name)
        default = f.default
        show = ",".join(map(str, default)) if is_tuple else default
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, default=argparse.SUPPRESS,
                       type=str if is_tuple else (base if base in (int, float) else str),
                       help=f"{(helps or {}).get(f.name, _HELP.get(f.name, ''))} "
                            f"{f'(default: {show})' if show != '' else ''}".strip())


def _resolve(cls, args) -> object:
    flags = {f.name: getattr(args, f.name) for f in dataclasses.fields(cls)
             if hasattr(args, f.name)}
    file_values = load_config_file(args.config) if args.config else {}
    cfg = build_config(cls, file_values, flags, source=args.config or "config")
    if hasattr(cfg, "data_dir"):
        from kairo.data import data_dir

        cfg = dataclasses.replace(cfg, data_dir=str(data_dir(cfg.data_dir or args.data_dir)))
    return cfg


def _run_reservoir(cmd: str, args) -> int:
    from kairo._runs import ResultsDir, default_out
    from kairo.reservoir import _experiments as ex
    from kairo.reservoir import _report as rp

    cls, fn, writer = {
        "run": (ex.RunConfig, ex.run_experiment, rp.write_run),
        "compare": (ex.CompareConfig, ex.compare_experiment, rp.write_compare),
        "sweep": (ex.SweepConfig, ex.sweep_experiment, rp.write_sweep),
        "propagate": (ex.PropagateConfig, ex.propagate_experiment, rp.write_propagate),
    }[cmd]
    cfg = _resolve(cls, args)
    out = Path(args.out) if args.out else default_out(f"reservoir {cmd}")
    with ResultsDir(out, command=f"reservoir {cmd}", config=cfg, overwrite=args.overwrite) as rd:
        for label, info in ex.data_provenance(cfg).items():
            rd.record_data(label, info["path"], info["sha256"])
        result = fn(cfg)
        text = writer(rd, cfg, result)
    print(text)
    print(f"results: {out}")
    return 0


def _run_fly(cmd: str, args) -> int:
    from kairo._runs import ResultsDir, default_out
    from kairo.embodied import _experiments as ex
    from kairo.embodied import _report as rp
    from kairo.reservoir._experiments import data_provenance

    if cmd == "view":
        from kairo.embodied._viewer import run_viewer

        res = run_viewer(_resolve(ex.ViewConfig, args))
        if res is not None:
            m = res.metrics
            print(f"{m['simulated_s']:.2f} s simulated; distance {m['initial_distance']:.1f} → "
                  f"{m['final_distance']:.1f} mm; turning index {m['turning_index']:+.3f}")
        return 0
    cls = ex.FlyConfig if cmd == "run" else ex.TrialsConfig
    cfg = _resolve(cls, args)
    video = ex.check_output_path(cfg.video, "video") if cmd == "run" else None
    if video is not None and video.exists() and not args.overwrite:
        raise KairoError(f"video {video} already exists; choose another --video or pass "
                         f"--overwrite")
    out = Path(args.out) if args.out else default_out(f"fly {cmd}")
    with ResultsDir(out, command=f"fly {cmd}", config=cfg, overwrite=args.overwrite) as rd:
        if cfg.controller != "constant" or cmd == "trials":
            for label, info in data_provenance(cfg).items():
                rd.record_data(label, info["path"], info["sha256"])
        if cmd == "run":
            text = rp.run_and_write(cfg, rd, video)
        else:
            text = rp.write_trials(rd, cfg, ex.run_trials(cfg, progress_bar=None))
    print(text)
    print(f"results: {out}")
    return 0


def _run_logic(cmd: str, args) -> int:
    from kairo._runs import ResultsDir, default_out
    from kairo.logic import _commands as lc

    if cmd == "export":
        print(lc.run_export(_resolve(lc.ExportConfig, args)))
        return 0
    if cmd in ("fpga", "bench"):
        if cmd == "fpga":
            from kairo.logic._fpga import run_fpga_command as run
        else:
            from kairo.logic._bench import run_bench_command as run
        cfg = _resolve(lc.FpgaConfig if cmd == "fpga" else lc.BenchConfig, args)
        out = Path(args.out) if args.out else default_out(f"logic {cmd}")
        with ResultsDir(out, command=f"logic {cmd}", config=cfg, overwrite=args.overwrite) as rd:
            text = run(cfg, rd)
        print(text)
        print(f"results: {out}")
        return 0
    if cmd == "train":
        cfg = _resolve(lc.LogicTrainConfig, args)
        out = Path(args.out) if args.out else default_out("logic train")
        with ResultsDir(out, command="logic train", config=cfg, overwrite=args.overwrite) as rd:
            text = lc.run_train(cfg, rd, out)
        lc._done_checkpoint(out, cfg)
    else:
        cfg = _resolve(lc.VerifyConfig, args)
        out = Path(args.out) if args.out else default_out("logic verify")
        with ResultsDir(out, command="logic verify", config=cfg, overwrite=args.overwrite) as rd:
            text = lc.write_verify(rd, lc.run_verify(cfg))
    print(text)
    print(f"results: {out}")
    return 0


def _run_tsc(cmd: str, args) -> int:
    from kairo._runs import ResultsDir, default_out
    from kairo.attention import _commands as tc

    if cmd == "list":
        from kairo.attention._data import list_datasets

        print("\n".join(list_datasets()))
        return 0
    if cmd == "predict":
        print(tc.run_predict(_resolve(tc.PredictConfig, args)))
        return 0
    from kairo.attention import _compare as tm

    cls, run = {"train": (tc.TscTrainConfig, None),
                "evaluate": (tc.EvaluateConfig, tc.run_evaluate),
                "compare-pooling": (tm.CompareConfig, tm.run_compare),
                "benchmark": (tm.BenchmarkConfig, tm.run_benchmark),
                "maps": (tc.MapsConfig, tc.run_maps),
                "encodings": (tc.EncodingsConfig, tc.run_encodings)}[cmd]
    cfg = _resolve(cls, args)
    if cmd in ("evaluate", "maps"):
        cfg = tc.model_dataset(cfg)            # recorded as the set scored, not as ""
    out = Path(args.out) if args.out else default_out(f"tsc {cmd}")
    ckpt = tc.checkpoint_path(out)
    before = _mtime(ckpt)
    try:
        with ResultsDir(out, command=f"tsc {cmd}", config=cfg, overwrite=args.overwrite) as rd:
            from kairo.data._store import sha256sum

            for label, path in tc.data_files(cfg).items():    # the run record's checksums
                rd.record_data(label, path, sha256sum(path))
            text = tc.run_train(cfg, rd, out) if cmd == "train" else run(cfg, rd)
    except BaseException:
        # a run that stopped after saving epochs says where they are, so nobody is surprised
        # that the next run resumes (or wonders what the file next to --out is)
        if cmd == "train" and _mtime(ckpt) not in (None, before):
            print(f"kairo: training stopped; its checkpoint {ckpt} is kept: the same command "
                  f"resumes from it (delete it to start over)", file=sys.stderr)
        raise
    if cmd == "train":
        ckpt.unlink(missing_ok=True)
    print(text)
    print(f"results: {out}")
    return 0


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


def _run_demo(args) -> int:
    from kairo.demo import run_demo

    out = Path(args.out) if args.out else Path("results") / "demo"
    run_demo(out, data_dir=args.data_dir, quick=args.quick, overwrite=args.overwrite)
    print(f"report: {out / 'report.md'}")
    return 0


def _run_data(args) -> int:
    from kairo.data import REGISTRY, data_dir, fetch

    if args.data_cmd == "path":
        print(data_dir(args.data_dir))
        return 0
    names = [args.name] if getattr(args, "name", None) else list(REGISTRY)
    for name in names:
        path = fetch(name, args.data_dir, download=args.data_cmd == "fetch")
        print(f"{name}: {path} (checksum ok)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from kairo.reservoir import _experiments as ex

    p = argparse.ArgumentParser(prog="kairo", description="Computing with circuits.")
    p.add_argument("--version", action="version", version=f"kairo {__version__}")
    p.add_argument("--data-dir", dest="data_dir_global", default=None,
                   help="data directory for every sub-command (else $KAIRO_DATA_DIR)")
    p.add_argument("-v", "--verbose", action="store_true")
    sub = p.add_subparsers(dest="command", required=True)

    d = sub.add_parser("demo", help="run every family end to end and write a report")
    d.add_argument("--out", help="report folder (default: results/demo)")
    d.add_argument("--quick", action="store_true", help="tiny sizes (a smoke test)")
    d.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    d.add_argument("--data-dir", dest="data_dir_local", default=None)

    r = sub.add_parser("reservoir", help="connectome reservoir computing")
    rs = r.add_subparsers(dest="reservoir_cmd", required=True)
    for name, cls, text in (
            ("propagate", ex.PropagateConfig, "stimulate sensory L/R, watch DN activity"),
            ("run", ex.RunConfig, "one reservoir, one task, its metrics"),
            ("compare", ex.CompareConfig, "real connectome vs null models"),
            ("sweep", ex.SweepConfig, "a metric against a parameter, real vs nulls")):
        _add_config_flags(rs.add_parser(name, help=text, description=text), cls)

    from kairo.embodied import _experiments as fx

    f = sub.add_parser("fly", help="the embodied fly: the connectome steers NeuroMechFly")
    fs = f.add_subparsers(dest="fly_cmd", required=True)
    _add_config_flags(fs.add_parser("run", help="one closed-loop trial (optionally a video)",
                                    description="one closed-loop trial"), fx.FlyConfig)
    _add_config_flags(fs.add_parser("trials", help="many trials in parallel, with statistics",
                                    description="many trials in parallel"), fx.TrialsConfig)
    _add_config_flags(fs.add_parser("view", help="the live MuJoCo viewer on the closed loop",
                                    description="the live MuJoCo viewer (needs a display)"),
                      fx.ViewConfig, results=False)

    from kairo.logic import _commands as lcmd

    lg = sub.add_parser("logic", help="logic-gate networks: train, export, verify, "
                        "fpga, bench")
    ls = lg.add_subparsers(dest="logic_cmd", required=True)
    _add_config_flags(ls.add_parser("train", help="train a logic-gate network on MNIST and "
                                    "extract its circuit", description="train a logic-gate "
                                    "network; a killed run resumes from <out>.checkpoint.pt"),
                      lcmd.LogicTrainConfig)
    _add_config_flags(ls.add_parser("export", help="write a circuit as JSON, C or Verilog"),
                      lcmd.ExportConfig, results=False, helps=_LOGIC_HW_HELP)
    _add_config_flags(ls.add_parser("verify", help="check every back end bit-exactly against "
                                    "the reference on MNIST"), lcmd.VerifyConfig)
    _add_config_flags(ls.add_parser("fpga", help="synthesize, place and route a circuit for "
                                    "an iCE40 FPGA (Yosys + nextpnr): LUTs, fit, fmax",
                                    description="Yosys + nextpnr report of a circuit inside a "
                                    "shift-register wrapper (system tools or the YoWASP builds: "
                                    "pip install 'kairo[fpga]')"),
                      lcmd.FpgaConfig, helps=_LOGIC_HW_HELP)
    _add_config_flags(ls.add_parser("bench", help="inference images/s on one core: kairo's "
                                    "compiled C against the anchor's method",
                                    description="uint8 images in memory → classes on one "
                                    "core, with the memory-bandwidth bound"),
                      lcmd.BenchConfig, helps=_LOGIC_HW_HELP)

    from kairo.attention import _commands as tcmd
    from kairo.attention import _compare as tcmp

    ts = sub.add_parser("tsc", help="attention models for time-series classification")
    tss = ts.add_subparsers(dest="tsc_cmd", required=True)
    tss.add_parser("list", help="datasets available offline")
    for name, cls, text, results in (
            ("train", tcmd.TscTrainConfig, "train a classifier (encoder + pooling head) and "
             "score it on the test split", True),
            ("evaluate", tcmd.EvaluateConfig, "metrics of a trained model on a dataset", True),
            ("predict", tcmd.PredictConfig, "classes and probabilities for your series (CSV)",
             False),
            ("compare-pooling", tcmp.CompareConfig, "every pooling head × encoder × dataset × "
             "seed, with paired tests against mean pooling", True),
            ("benchmark", tcmp.BenchmarkConfig, "the best configuration per dataset (chosen on "
             "the training split: validation hold-out or k-fold CV) next to published results",
             True),
            ("maps", tcmd.MapsConfig, "pooling weights and self-attention of a trained model "
             "for chosen series (figures)", True),
            ("encodings", tcmd.EncodingsConfig, "heatmap of the sinusoidal positional encoding",
             True)):
        helps = _TSC_HELP if name not in ("evaluate", "maps") else {
            **_TSC_HELP, "dataset": "an aeon-shipped UCR/UEA set or MNIST1D (kairo tsc list); "
                                    "empty: the set the model was trained on"}
        _add_config_flags(tss.add_parser(name, help=text, description=text), cls, results,
                          helps)

    da = sub.add_parser("data", help="the data directory: path, fetch, verify")
    ds = da.add_subparsers(dest="data_cmd", required=True)
    ds.add_parser("path", help="print the data directory")
    for name in ("fetch", "verify"):
        q = ds.add_parser(name, help=f"{name} registered data files")
        q.add_argument("name", nargs="?", help="data set (default: all)")
    return p


class _Terminated(BaseException):
    """SIGTERM raised in the main thread, so results folders and temp files unwind as they do
    for Ctrl-C (a killed run leaves no hidden half-written folder; its checkpoint stays)."""


def _on_sigterm(signum, frame):
    raise _Terminated()


def main(argv=None) -> int:
    # only take SIGTERM over where nobody else has (not in a thread, not under a host's handler)
    own_term = threading.current_thread() is threading.main_thread() and \
        signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    if own_term:
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        return _main(argv)
    except _Terminated:         # caught here so a SIGTERM at any point (parsing too) unwinds
        print("kairo: terminated (SIGTERM); a checkpointed run resumes when started again",
              file=sys.stderr)
        return 143
    finally:
        if own_term:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    args.data_dir = getattr(args, "data_dir_local", None) or args.data_dir_global
    try:
        if args.command == "demo":
            return _run_demo(args)
        if args.command == "data":
            return _run_data(args)
        if args.command == "reservoir":
            return _run_reservoir(args.reservoir_cmd, args)
        if args.command == "fly":
            return _run_fly(args.fly_cmd, args)
        if args.command == "logic":
            return _run_logic(args.logic_cmd, args)
        if args.command == "tsc":
            return _run_tsc(args.tsc_cmd, args)
    except KairoError as exc:
        print(f"kairo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("kairo: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into e.g. `head`: results are already written
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
