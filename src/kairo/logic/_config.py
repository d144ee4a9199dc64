"""The configs of ``kairo logic …`` and the layer vocabulary (gate modes, pairings, engines).

A leaf module: it imports no torch (nor anything that does), so the command registry, the
CLI and the torch layers all read the same names from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from kairo._config import check_fields, option
from kairo._errors import ConfigError

__all__ = ["LogicTrainConfig", "ExportConfig", "VerifyConfig", "FpgaConfig", "BenchConfig",
           "ImportConfig", "EnsembleConfig", "IMPORT_FRAMEWORKS",
           "PAIRINGS", "WIRINGS", "GATE_MODES", "GATE_PARAMS", "ENGINES", "EXPORT_FORMATS", "BACKENDS", "SIMULATORS",
           "FPGA_TARGETS", "FPGA_ARCHS", "FPGA_INPUTS", "C_WIDTHS", "IMAGE_SIZE", "CONV_FIELDS"]

PAIRINGS = ("random", "unique")              # fixed wirings
WIRINGS = (*PAIRINGS, "learned")
GATE_MODES = ("soft", "gumbel", "hard")
GATE_PARAMS = ("softmax", "light")            # 16 logits per gate, or 4 (one per table entry)
ENGINES = ("auto", "torch", "fused")          # how the torch layers compute (see _layers)
EXPORT_FORMATS = ("json", "c", "verilog")
BACKENDS = ("numpy", "c", "verilog")          # the circuit back ends verify compares
SIMULATORS = ("auto", "iverilog", "verilator")
FPGA_TARGETS = ("ice40-up5k", "ice40-hx8k", "ice40-lp8k", "ice40-hx1k", "ice40-lp1k")
# the FPGA wrapper's vote: adder trees in one cycle, or counted over cycles
FPGA_ARCHS = ("combinational", "serial-vote", "folded")
# what the data port carries: the circuit's input bits, or 8-bit pixels thresholded on chip
FPGA_INPUTS = ("bits", "pixels")
C_WIDTHS = ("auto", "64", "256", "512")
IMPORT_FRAMEWORKS = ("auto", "difflogic", "torchlogix")    # kairo logic import reads these
IMAGE_SIZE = 28                               # MNIST: 28 × 28 pixels
CONV_FIELDS = ("conv_blocks", "conv_growth", "receptive", "conv_depth", "conv_stride",
               "padding", "conv_groups")

_DATA_DIR_HELP = "data directory (default: $KAIRO_DATA_DIR, else the user cache dir)"


_CIRCUIT_HELP = "circuit JSON written by kairo logic train"


@dataclass(frozen=True)
class LogicTrainConfig:
    """``kairo logic train``: a dense or convolutional logic-gate network on MNIST.

    ``kernels`` = 0: Binarize → LogicDense × layers → GroupSum. ``kernels`` > 0: Binarize (the
    thresholds are the channels) → [LogicConv2d → OrPooling2d 2×2] × conv_blocks (block i has
    kernels·conv_growth^i kernels) → flatten → LogicDense × layers → GroupSum.
    """

    dataset: str = option("mnist", "the images: mnist (from the data directory), an .npz file "
                          "(x_train, y_train, x_test, y_test; uint8 [N, H, W] or "
                          "[N, H, W, C], labels 0…K−1) or a folder of IDX files")
    classes: tuple[int, ...] = option((0, 1, 2, 3, 4, 5, 6, 7, 8, 9),
                                      "comma-separated labels to classify, e.g. 0,1 (MNIST: "
                                      "digits)", low=0)
    thresholds: tuple[int, ...] = option((127,), "pixel thresholds 0-255, increasing (one: a "
                                         "fixed binarization; several: a thermometer code)",
                                         low=0, high=255)
    kernels: int = option(0, "kernels of the first convolutional block (0: a dense network)",
                          low=0)
    conv_blocks: int = option(2, "LogicConv2d + 2x2 OR-pooling blocks", low=1)
    conv_growth: int = option(2, "kernels multiply by this from one block to the next", low=1)
    receptive: int = option(3, "receptive field (pixels per side) of each logic tree", low=1)
    conv_depth: int = option(3, "levels of gates in each kernel's logic tree", low=1, high=8)
    conv_stride: int = option(1, "stride of the logic convolutions", low=1)
    padding: int = option(1, "zero padding of the logic convolutions", low=0)
    conv_groups: int = option(1, "channel groups of the logic convolutions (divides the "
                              "thresholds and kernels)", low=1)
    hidden: int = option(1000, "logic neurons per dense layer", low=1)
    layers: int = option(2, "dense logic layers (the last feeds the class vote)", low=1)
    outputs: int = option(0, "neurons of the last dense layer, whose outputs are the class "
                          "votes (0: --hidden); fewer votes make a smaller vote circuit",
                          low=0)
    wiring: str = option("unique", "which inputs each gate reads: unique (every input used "
                         "before any twice) or random, fixed at the start; or learned: each "
                         "dense gate input learns which of --candidates sources to read, each "
                         "conv kernel which two channels of its group and each leaf input "
                         "which window position", choices=WIRINGS)
    candidates: int = option(8, "sources each dense gate input chooses among with --wiring "
                             "learned (a conv layer chooses among all channels and positions)",
                             low=2)
    rewire_every: int = option(0, "with --wiring learned: every this many iterations, the "
                               "least likely --rewire-fraction of each dense gate input's "
                               "candidates are replaced by sources drawn at random, until the "
                               "cosine phase starts (0: the candidates stay)", low=0)
    rewire_fraction: float = option(0.25, "share of a gate input's candidates replaced at each "
                                    "--rewire-every", above=0, high=0.99)
    residual_init: float = option(0.0, "> 0: the pass-through gate's logit starts at this "
                                  "value (deep stacks start as identity); 0: N(0, 1) logits",
                                  low=0)
    gate_mode: str = option("soft", "soft (softmax mixture), gumbel (straight-through sampled "
                            "gates) or hard (the argmax circuit forward, softmax gradients)",
                            choices=GATE_MODES)
    gate_param: str = option("softmax", "how a gate's function is learned: softmax (16 "
                             "logits, one per gate; Petersen et al.) or light (4 logits, one "
                             "per truth-table entry, each entry 1 with the sigmoid of its logit: "
                             "Light DLGN, arXiv 2510.03250)", choices=GATE_PARAMS)
    gumbel_tau: float = option(1.0, "temperature of the Gumbel softmax (gate_mode gumbel)",
                               above=0)
    tau: float = option(10.0, "GroupSum temperature (class score = group sum / tau)", above=0)
    lr: float = option(0.01, "Adam learning rate", above=0)
    lr_decay_from: int = option(-1, "-1: constant lr; else cosine decay of lr to 0 from this "
                                "iteration on (≥ iters: after the end)", low=-1)
    gate_temperature: float = option(
        1.0, "softmax temperature of the gate logits at the last iteration, reached "
             "geometrically from 1 from --gate-temperature-from on (1: off; e.g. 0.1 sharpens "
             "the relaxed network towards its circuit)", above=0, high=1)
    gate_temperature_from: int = option(-1, "iteration where --gate-temperature starts falling "
                                        "(-1: where the cosine phase starts, else 0)", low=-1)
    fix_at: tuple[int, ...] = option(
        (), "comma-separated iterations: from the i-th, the i-th gate layer (conv blocks, then "
            "dense layers) computes its argmax gates and stops learning, so later layers train "
            "on the circuit's own values of it", low=0)
    shift: int = option(0, "augmentation: move each training image by up to ±shift pixels "
                        "(0: off)", low=0, high=8)
    rotate: float = option(0.0, "augmentation: rotate each training image about its centre by "
                           "an angle drawn in ±rotate degrees (0: off)", low=0, high=45)
    scale: float = option(0.0, "augmentation: scale each training image about its centre by a "
                          "factor drawn in 1 ± scale (0: off)", low=0, high=0.5)
    batch: int = option(128, "training images per iteration", low=1)
    iters: int = option(1000, "training iterations (batches)", low=1)
    eval_every: int = option(200, "iterations between validation evaluations", low=1)
    max_gates: int = option(
        0, "gate budget of the circuit after simplification (kairo's count; the class vote "
           "not included), 0: none. Training adds a penalty on the expected gates that are "
           "not wires or constants, doubled at every evaluation over budget and halved under "
           "it; the run ends with the weights of the last evaluation within budget (the best "
           "one with --keep-best)", low=0)
    keep_best: bool = option(False, "end with the weights of the best discrete validation "
                             "accuracy instead of the last ones")
    checkpoint_every: int = option(200, "iterations between checkpoints (the run resumes from "
                                   "the last one)", low=1)
    snapshots: tuple[int, ...] = option(
        (), "comma-separated iterations whose checkpoints are kept in the results folder "
            "(checkpoint-<iteration>.pt), to branch later runs from with --init-from", low=1)
    init_from: str = option("", "start from this checkpoint (a snapshot or model.pt of a run "
                            "with the same architecture) at its iteration and go on with this "
                            "run's schedule")
    val_fraction: float = option(0.1, "share of the training images held out for validation "
                                 "(below 0.5)", above=0)
    val_seed: int = option(-1, "seed of the validation split (-1: --seed); runs given the same "
                           "one hold out the same images, so `kairo logic ensemble` can score "
                           "their join on them", low=-1)
    engine: str = option("auto", "how the layers compute: torch, fused (numba CPU kernels) or "
                         "auto (fused when numba imports)", choices=ENGINES)
    seed: int = option(0, "seed of the wiring, the initial logits, the batches and (without "
                       "--val-seed) the validation split")
    data_dir: str | None = option(None, _DATA_DIR_HELP)

    def __post_init__(self):
        check_fields(self)
        if not self.dataset.strip():
            raise ConfigError("dataset: name mnist, an .npz file or a folder of IDX files")
        if len(self.classes) < 2 or len(set(self.classes)) != len(self.classes):
            raise ConfigError(f"classes must be ≥ 2 distinct labels, got {self.classes}")
        if not isinstance(self.keep_best, bool):
            raise ConfigError(f"keep_best must be true or false, got {self.keep_best!r}")
        if self.outputs and self.outputs % len(self.classes):
            raise ConfigError(f"class groups do not divide the outputs: outputs={self.outputs} "
                              f"votes into {len(self.classes)} classes")
        if not self.outputs and self.hidden % len(self.classes):
            raise ConfigError(f"class groups do not divide the outputs: hidden={self.hidden} "
                              f"neurons into {len(self.classes)} classes")
        if self.gate_param == "light" and self.gate_mode == "gumbel":
            raise ConfigError("gate_mode gumbel samples one of 16 gate logits; gate_param light "
                              "has 4 per gate (use gate_mode soft or hard)")
        if self.rewire_every and self.wiring != "learned":
            raise ConfigError(f"rewire_every needs --wiring learned, got wiring={self.wiring}")
        if not self.val_fraction < 0.5:
            raise ConfigError(f"val_fraction must be in (0, 0.5), got {self.val_fraction}")
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
        if len(self.thresholds) == 0 or any(b <= a for a, b in zip(self.thresholds,
                                                                   self.thresholds[1:])):
            raise ConfigError(f"thresholds must be increasing values in 0…255, got "
                              f"{list(self.thresholds)}")
        if self.kernels and self.dataset.lower() == "mnist":
            self.feature_sizes()          # other image sizes are checked when the data is read

    def feature_sizes(self, height: int = IMAGE_SIZE, width: int | None = None,
                      channels: int = 1) -> list[tuple[int, int, int]]:
        """(channels, height, width) of the feature map after each conv block on images of
        ``height`` × ``width`` (default square) pixels with ``channels`` colour channels,
        checked as it goes."""
        width = height if width is None else width
        if not self.padding < self.receptive:
            raise ConfigError(f"padding must be in 0…receptive−1, got padding={self.padding} "
                              f"with receptive={self.receptive}")
        n_in = len(self.thresholds) * channels
        if n_in % self.conv_groups or self.kernels % self.conv_groups:
            raise ConfigError(f"conv_groups={self.conv_groups} must divide the input channels "
                              f"({len(self.thresholds)} thresholds × {channels} colour "
                              f"channels) and kernels={self.kernels}")
        h, w, out = height, width, []
        for i in range(self.conv_blocks):
            if min(h, w) + 2 * self.padding < self.receptive:
                raise ConfigError(
                    f"conv block {i + 1} of conv_blocks={self.conv_blocks} gets a {h}×{w} "
                    f"feature map, smaller than receptive={self.receptive} with "
                    f"padding={self.padding}; use fewer conv_blocks, a smaller receptive or "
                    f"conv_stride, or more padding")
            h, w = ((n + 2 * self.padding - self.receptive) // self.conv_stride + 1
                    for n in (h, w))
            if min(h, w) < 2:
                raise ConfigError(
                    f"conv block {i + 1} of conv_blocks={self.conv_blocks} leaves a {h}×{w} "
                    f"map, too small for its 2×2 OR pooling; use fewer conv_blocks or a smaller "
                    f"conv_stride or receptive")
            h, w = h // 2, w // 2
            out.append((self.kernels * self.conv_growth ** i, h, w))
        return out

    def arch(self) -> dict:
        """What a checkpoint must match to be loaded into this model."""
        return {"n_classes": len(self.classes), "thresholds": list(self.thresholds),
                "hidden": self.hidden, "layers": self.layers,
                **({"outputs": self.outputs} if self.outputs else {}), "wiring": self.wiring,
                **({"candidates": self.candidates} if self.wiring == "learned" else {}),
                **({"gate_param": self.gate_param} if self.gate_param != "softmax" else {}),
                "seed": self.seed, "kernels": self.kernels,
                **{k: getattr(self, k) for k in CONV_FIELDS}}


@dataclass(frozen=True)
class ExportConfig:
    """``kairo logic export``: a circuit as JSON, C or Verilog, in one file."""

    circuit: str = option("", _CIRCUIT_HELP, required=True)
    format: str = option("c", "json, c or verilog", choices=EXPORT_FORMATS)
    output: str = option("", "file to write (its folder must exist)", required=True)
    overwrite: bool = option(False, "replace an existing --output")
    pipeline: int = option(0, "Verilog: register stages cutting the gate core by logic depth",
                           low=0)
    pipeline_votes: int = option(0, "Verilog: register stages spread over the vote adder trees "
                                 "and the argmax", low=0)
    verify: bool = option(True, "check the written file against the reference before keeping "
                          "it: C compiled and run, Verilog simulated, JSON read back")
    verify_samples: int = option(1000, "test images of the circuit's dataset to check on (0: "
                                 "all; random inputs for a circuit that reads no images)",
                                 low=0)
    simulator: str = option("auto", "Verilog simulator for the check: auto, iverilog or "
                            "verilator", choices=SIMULATORS)
    dataset: str = option("", "the test images to check on (default: the dataset the circuit "
                          "was trained on)")
    data_dir: str | None = option(None, _DATA_DIR_HELP)

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class VerifyConfig:
    """``kairo logic verify``: every back end against the NumPy reference, bit for bit."""

    circuit: str = option("", _CIRCUIT_HELP, required=True)
    backends: tuple[str, ...] = option(BACKENDS, "comma-separated: numpy, c, verilog",
                                       choices=BACKENDS, required=True)
    dataset: str = option("", "the test images to check on: mnist, an .npz file or a folder "
                          "of IDX files (default: the dataset the circuit was trained on)")
    samples: int = option(0, "test images (of the circuit's classes) to check (0: all)",
                          low=0)
    verilog_samples: int = option(2000, "a prefix of them for the Verilog simulation, which is "
                                  "slow (0: all)", low=0)
    simulator: str = option("auto", "Verilog simulator: auto (Icarus Verilog if installed, else "
                            "Verilator), iverilog, or verilator (compiled: slower to build, "
                            "much faster on circuits of ~100k gates)", choices=SIMULATORS)
    data_dir: str | None = option(None, _DATA_DIR_HELP)

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class FpgaConfig:
    """``kairo logic fpga``: Yosys + nextpnr report of a circuit in its FPGA wrapper."""

    circuit: str = option("", _CIRCUIT_HELP, required=True)
    target: str = option("ice40-up5k", "FPGA part", choices=FPGA_TARGETS)
    pipeline: int = option(0, "register stages cutting the gate core by logic depth", low=0)
    pipeline_votes: int = option(0, "register stages spread over the vote adder trees and the "
                                 "argmax (at most their levels − 1; adds to the latency; for "
                                 "the fmax of circuits with many votes)", low=0)
    io_bits: int = option(8, "width of the data port: input bits (or with --input-stage "
                          "pixels 8 bits per pixel) loaded per clock", low=1)
    input_stage: str = option("bits", "what the data port carries: bits (the circuit's input "
                              "bits, shifted into a register of all of them) or pixels "
                              "(8-bit pixels, thresholded on chip as they arrive; only the "
                              "bits the gates read are stored)", choices=FPGA_INPUTS)
    arch: str = option("combinational", "how the class votes are counted: combinational "
                       "(adder trees, one image per load) or serial-vote (captured, then "
                       "one output per class per clock into small counters: a fraction of "
                       "the LUTs, one image per max(loads, outputs per class + pipeline + 2) "
                       "clocks; adds a ready pin) or folded (the circuit as a program in "
                       "SPRAM, one gate a clock: up to 16,384 instructions (gates and vote "
                       "copies) on a UP5K in a few hundred logic cells; the program is loaded "
                       "after configuration, see program.hex; adds prog and ready pins)",
                       choices=FPGA_ARCHS)
    freq: float = option(12.0, "clock (MHz) nextpnr aims for; the achieved fmax is reported",
                         above=0)
    seed: int = option(1, "seed of nextpnr's placement and of the simulated inputs")
    timeout: float = option(1800.0, "seconds allowed for each Yosys / nextpnr run", above=0)
    core_stats: bool = option(True, "also synthesize the core alone, to report the wrapper's "
                              "cost")
    pack_only: bool = option(False, "run only nextpnr's packer: the logic cells the design "
                             "takes, in seconds where placing and routing a nearly full part "
                             "takes tens of minutes (no fmax)")
    sim_vectors: int = option(64, "random inputs the wrapper is simulated on with iverilog "
                              "first (0: skip)", low=0)

    def __post_init__(self):
        check_fields(self)
        if self.arch == "serial-vote" and self.pipeline_votes:
            raise ConfigError("pipeline_votes: the serial-vote architecture has no vote adder "
                              "trees to cut; leave it at 0")


@dataclass(frozen=True)
class BenchConfig:
    """``kairo logic bench``: images/s of a circuit on one core, kairo vs the anchor's method."""

    circuit: str = option("", _CIRCUIT_HELP, required=True)
    images: int = option(100_000, "images per timed pass (the test images of the circuit's "
                         "dataset and classes, repeated)", low=1)
    repeats: int = option(5, "timed passes (the best counts)", low=1)
    width: str = option("auto", "C word width: auto, 64, 256 or 512", choices=C_WIDTHS)
    anchor: bool = option(True, "also time difflogic's method (NumPy packing + one C statement "
                          "per gate)")
    bits_path: bool = option(True, "also time NumPy thresholding + CompiledCircuit.predict")
    bandwidth_mib: int = option(512, "buffer for measuring the read-bandwidth bound (0: skip)",
                                low=0)
    seed: int = option(0, "seed of the random images for circuits that are not 28 × 28")
    data_dir: str | None = option(None, _DATA_DIR_HELP)

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class EnsembleConfig:
    """``kairo logic ensemble``: circuits side by side on the same inputs, votes summed."""

    circuits: tuple[str, ...] = option((), "comma-separated circuit files (circuit.json of "
                                       "kairo logic train or import), at least two, reading "
                                       "the same inputs and voting for the same classes",
                                       required=True)
    max_gates: int = option(0, "refuse an ensemble with more gates than this after "
                            "simplification (0: no limit)", low=0)
    dataset: str = option("", "the test images to score it on (default: the dataset the "
                          "circuits were trained on)")
    data_dir: str | None = option(None, _DATA_DIR_HELP)

    def __post_init__(self):
        check_fields(self)


@dataclass(frozen=True)
class ImportConfig:
    """``kairo logic import``: a network trained with difflogic or torchlogix as a circuit."""

    model: str = option("", "the trained model: torch.save of the whole nn.Sequential, of its "
                        "state_dict (with --layout), or of {'state_dict', 'layout'}",
                        required=True)
    layout: str = option("", "layout JSON of a bare state_dict: framework, each layer's key, "
                         "in_dim and out_dim, GroupSum k and tau, the input binarization "
                         "(docs/notes/logic_import.md)")
    framework: str = option("auto", "the framework that trained it (auto: from the file)",
                            choices=IMPORT_FRAMEWORKS)
    thresholds: tuple[float, ...] = option(
        (), "input thresholds on the framework's input scale (bit = x > t), for a model that "
            "does not binarize its input itself (difflogic: e.g. 0.5 for x.round() of "
            "ToTensor images); none: the model's own or the layout's, else the circuit reads "
            "bits")
    input_scale: float = option(0.0, "the framework's input is uint8 pixel / this (255: "
                                "ToTensor; 1: raw pixels; 0: 255 when every threshold is in "
                                "[0, 1], else 1)", low=0)
    image_shape: tuple[int, ...] = option((), "H,W or H,W,C of the images (default: square, "
                                          "one channel)", low=1)
    bit_order: str = option("auto", "order of the input bits: threshold-major (bit t·P + p), "
                            "pixel-major (bit p·T + t; torchlogix binarization layers) or auto",
                            choices=("auto", "threshold-major", "pixel-major"))
    channels: str = option("auto", "colour images: pixels in (c, h, w) order (first, "
                           "torchvision tensors) or (h, w, c) (last); auto: first",
                           choices=("auto", "first", "last"))
    classes: tuple[int, ...] = option((), "the labels of the model's classes, in order "
                                      "(default 0…k−1)", low=0)
    dataset: str = option("mnist", "the test images: mnist, an .npz file or a folder of IDX "
                          "files (for a model that reads images)")
    samples: int = option(1000, "test images the framework's own forward is compared on "
                          "(0: all)", low=0)
    reference: str = option("", "reference.npz written by an earlier import where the "
                            "framework was installed: verify against it")
    verify: bool = option(True, "refuse to write an import that could not be checked against "
                          "the framework's forward or a --reference")
    seed: int = option(0, "seed of the random inputs a model that reads bits is checked on")
    data_dir: str | None = option(None, _DATA_DIR_HELP)

    def __post_init__(self):
        check_fields(self)
        if self.image_shape and len(self.image_shape) not in (2, 3):
            raise ConfigError(f"image_shape must be H,W or H,W,C, got "
                              f"{','.join(map(str, self.image_shape))}")
        if not isinstance(self.verify, bool):
            raise ConfigError(f"verify must be true or false, got {self.verify!r}")
