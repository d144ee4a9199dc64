"""Logic-gate networks: differentiable gates, training, circuits and their back ends.

The netlist and its back ends need only NumPy; the trainable layers (PyTorch) are imported on
first use, so ``kairo logic export`` and ``verify`` start without loading torch.
"""

from kairo.logic._circuit import Circuit, pack_bits, unpack_bits
from kairo.logic._gates import COEFFS, GATE_NAMES, N_GATES, TRUTH

__all__ = ["Circuit", "pack_bits", "unpack_bits", "COEFFS", "GATE_NAMES", "N_GATES", "TRUTH",
           "Binarize", "GroupSum", "LogicDense", "LogicConv2d", "OrPooling2d", "pairings"]

_LAZY = {"Binarize", "GroupSum", "LogicDense", "LogicConv2d", "OrPooling2d", "pairings"}


def __getattr__(name):
    if name in _LAZY:
        from kairo.logic import _layers

        return getattr(_layers, name)
    raise AttributeError(f"module 'kairo.logic' has no attribute {name!r}")
