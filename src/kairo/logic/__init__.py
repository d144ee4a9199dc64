"""Logic-gate networks: differentiable gates, training, circuits and their back ends.

The pipeline: :func:`train` a :class:`LogicNet` (configured by :class:`LogicTrainConfig`),
:func:`to_circuit`, :func:`simplify`, then run the circuit in NumPy (:class:`Circuit`), as C
(:func:`compile_c`, :func:`write_c`) or Verilog (:func:`write_verilog`,
:func:`simulate_verilog`). The netlist, its back ends and the configs need only NumPy; the
trainable parts (PyTorch) are imported on first use, so ``kairo logic export`` and ``verify``
start without loading torch.
"""

from kairo._lazy import lazy_exports
from kairo.logic._circuit import Circuit, pack_bits, unpack_bits
from kairo.logic._config import (BenchConfig, EnsembleConfig, ExportConfig, FpgaConfig,
                                 ImportConfig, LogicTrainConfig, VerifyConfig)
from kairo.logic._gates import COEFFS, GATE_NAMES, N_GATES, TRUTH
from kairo.logic._data import circuit_images, validation_split
from kairo.logic._ensemble import ensemble
from kairo.logic._simplify import simplify
from kairo.logic._votes import vote_circuit, vote_gates
from kairo.logic.backends import (compile_c, find_simulator, run_portable_c, simulate_verilog,
                                  write_c, write_verilog)

# imported on first use (torch, the FPGA tool chain's module, the throughput benchmark's
# ctypes code): name → (module, its name)
_LAZY = {
    **{n: ("kairo.logic._layers", n) for n in (
        "Binarize", "GroupSum", "LogicDense", "LogicConv2d", "OrPooling2d", "pairings",
        "fused_available", "fused_threads")},
    **{n: ("kairo.logic._model", n) for n in (
        "LogicNet", "build_model", "image_shape", "predict", "layer_report", "to_circuit")},
    **{n: ("kairo.logic._train", n) for n in (
        "train", "load_data", "model_from_checkpoint", "snapshot_path", "describe_branch",
        "random_shift", "random_affine", "affine_images", "val_seed")},
    "find_fpga_tools": ("kairo.logic._fpga", "find_tools"),
    # `kairo logic fpga` as functions: the wrapped design synthesized, simulated, and the
    # folded architecture's program
    "synthesize_fpga": ("kairo.logic._fpga", "synthesize"),
    "simulate_fpga": ("kairo.logic._fpga_wrapper", "simulate_wrapper"),
    "fpga_design_shape": ("kairo.logic._fpga_wrapper", "design_shape"),
    **{n: ("kairo.logic._fpga_folded", n) for n in (
        "folded_program", "execute_program", "program_hex", "FoldedProgram")},
    # networks trained with difflogic or torchlogix (torch is imported when a file is read)
    **{n: ("kairo.logic._import", n) for n in (
        "import_model", "read_model", "InputBinarization", "ImportedModel", "ImportedLayer",
        "gate_ops", "DIFFLOGIC_OPS", "framework_status", "framework_module",
        "framework_forward",
        "scores_from_counts", "verify_import", "write_reference", "read_reference")},
    # torchlogix's 4- and 6-input LUTs as two-input gates
    **{n: ("kairo.logic._luts", n) for n in ("LUT_RANKS", "lut_tables", "lut_gates")},
    # the pieces of `kairo logic bench` that benchmarks/logic_inference.py reuses
    **{n: ("kairo.logic._bench", n) for n in (
        "read_bandwidth", "bench_images", "bench_circuit", "AnchorCircuit", "time_calls",
        "ANCHOR_FLAGS", "ANCHOR_BATCH")},
}

__all__ = ["Circuit", "circuit_images", "validation_split", "ensemble", "pack_bits", "unpack_bits", "COEFFS", "GATE_NAMES",
           "N_GATES", "TRUTH", "simplify", "vote_circuit", "vote_gates", "compile_c", "find_simulator", "run_portable_c",
           "simulate_verilog", "write_c", "write_verilog", "LogicTrainConfig", "ExportConfig", "VerifyConfig", "FpgaConfig",
           "BenchConfig", "ImportConfig", "EnsembleConfig", *_LAZY]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
