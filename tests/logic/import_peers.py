"""Small real models trained with difflogic and torchlogix themselves, for
tests/logic/test_import.py, and the script that writes the committed fixtures.

The peers are not kairo dependencies. With them importable (docs/notes/logic_import.md: a
``pip install --no-deps --target`` folder on ``PYTHONPATH``), the tests train these models on
the spot; the fixtures in tests/logic/data/ let the tests without them read real files too:

    PYTHONPATH=/tmp/peers python tests/logic/import_peers.py --out tests/logic/data

writes ``difflogic_mnist.pt`` / ``torchlogix_mnist.pt`` / ``torchlogix_lut_mnist.pt`` (4- and
6-input LUTs) / ``torchlogix_conv_mnist.pt`` (``torch.save(model)`` of the trained
``nn.Sequential``) and ``*_reference.npz`` (the framework's own eval forward on the first
MNIST test images, :func:`kairo.logic.write_reference`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

N_TRAIN, N_TEST = 600, 100


def mnist_subset(n_train: int = N_TRAIN):
    """The first ``n_train`` MNIST training images and all test images, uint8 (n, 784)."""
    from kairo.data import load_images

    m = load_images("mnist")
    return (m.x_train[:n_train].reshape(n_train, -1), m.y_train[:n_train],
            m.x_test.reshape(len(m.x_test), -1), m.y_test)


def _train(model, x, y, steps: int, lr: float, batch: int = 100, seed: int = 0):
    import contextlib
    import io

    import torch

    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    y = torch.as_tensor(np.array(y), dtype=torch.int64)
    model.train()
    with contextlib.redirect_stdout(io.StringIO()):     # difflogic prints index dtypes
        for _ in range(steps):
            i = torch.randint(0, len(x), (batch,), generator=g)
            loss = torch.nn.functional.cross_entropy(model(x[i]), y[i])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return model.eval()


def difflogic_model(dl, x: np.ndarray, y: np.ndarray, widths=(400, 200), k: int = 10,
                    tau: float = 10.0, steps: int = 300, seed: int = 0, cuda_attrs: bool = True,
                    lr: float = 0.05):
    """difflogic's own nn.Sequential(Flatten, LogicLayer…, GroupSum), trained with its
    pure-python implementation on ``x / 255 > 0.5`` (``x.round()`` of ToTensor images, as its
    MNIST experiments binarize). ``cuda_attrs``: afterwards the layers carry ``device="cuda"``
    and ``implementation="cuda"`` as a GPU-trained model does (the tensors stay on the CPU)."""
    import torch

    torch.manual_seed(seed)
    layers, n = [torch.nn.Flatten()], x.shape[1]
    for w in widths:
        layers.append(dl.LogicLayer(n, w, device="cpu", implementation="python",
                                    connections="unique" if n <= 2 * w else "random"))
        n = w
    model = torch.nn.Sequential(*layers, dl.GroupSum(k, tau, device="cpu"))
    bits = (torch.from_numpy(np.array(x)).float().div(255) > 0.5).float()
    _train(model, bits, y, steps, lr=lr, seed=seed)
    if cuda_attrs:
        for m in model:
            if isinstance(m, dl.LogicLayer):
                m.device, m.implementation = "cuda", "cuda"
    return model


def torchlogix_model(x: np.ndarray, y: np.ndarray, k: int = 10, tau: float = 10.0,
                     steps: int = 300, seed: int = 0, widths=(800, 400, 200),
                     lr: float = 0.05):
    """torchlogix's own layers: FixedBinarization (two thresholds on ToTensor's [0, 1] values),
    Flatten, LogicDense raw → warp → light with learnable connections (three ``widths``; with
    another count, raw … raw → light), GroupSum(β = 0.5)."""
    import torch
    from torchlogix.layers import FixedBinarization, GroupSum, LogicDense

    torch.manual_seed(seed)
    kinds = (["raw", "warp", "light"] if len(widths) == 3 else
             ["raw"] * (len(widths) - 1) + ["light"])
    layers, n = [], 1568
    for w, kind in zip(widths, kinds):
        extra = ({"connections": "learnable", "connections_kwargs": {"num_candidates": 2}}
                 if kind == "light" else {})
        layers.append(LogicDense(n, w, parametrization=kind, **extra))
        n = w
    model = torch.nn.Sequential(FixedBinarization(torch.tensor([0.3, 0.6])),
                                torch.nn.Flatten(), *layers, GroupSum(k, tau, beta=0.5))
    values = torch.from_numpy(np.array(x).reshape(-1, 1, 28, 28)).float().div(255)
    return _train(model, values, y, steps, lr=lr, seed=seed)


def torchlogix_lut_model(x: np.ndarray, y: np.ndarray, steps: int = 300, seed: int = 0,
                         lr: float = 0.05):
    """torchlogix's multi-input LUTs: FixedBinarization(0.5), Flatten, LogicDense lut_rank 4
    warp 784 → 400, lut_rank 6 light 400 → 200 with learnable connections, GroupSum(10, 10)."""
    import torch
    from torchlogix.layers import FixedBinarization, GroupSum, LogicDense

    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        FixedBinarization(torch.tensor([0.5])), torch.nn.Flatten(),
        LogicDense(784, 400, lut_rank=4, parametrization="warp"),
        LogicDense(400, 200, lut_rank=6, parametrization="light", connections="learnable",
                   connections_kwargs={"num_candidates": 2}),
        GroupSum(10, 10.0))
    values = torch.from_numpy(np.array(x).reshape(-1, 1, 28, 28)).float().div(255)
    return _train(model, values, y, steps, lr=lr, seed=seed)


def torchlogix_conv_model(x: np.ndarray, y: np.ndarray, steps: int = 300, seed: int = 0,
                          lr: float = 0.05):
    """torchlogix's convolutions: FixedBinarization(0.5), LogicConv2d (6 kernels, trees of
    depth 2 on 5×5 fields, stride 2, padding 1) → 13×13, OrPooling2d(2, 2) → 6×6, LogicConv2d
    (12 kernels, warp, 3×3) → 4×4, OrPooling2d(2, 2, padding 1) → 3×3, Flatten, LogicDense
    108 → 200, GroupSum(10, 10). Small enough to commit: the conv's index tensors list every
    position."""
    import torch
    from torchlogix.layers import (FixedBinarization, GroupSum, LogicConv2d, LogicDense,
                                   OrPooling2d)

    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        FixedBinarization(torch.tensor([0.5])),
        LogicConv2d(in_dim=28, channels=1, num_kernels=6, tree_depth=2, receptive_field_size=5,
                    stride=2, padding=1),
        OrPooling2d(2, 2),
        LogicConv2d(in_dim=6, channels=6, num_kernels=12, tree_depth=2, receptive_field_size=3,
                    parametrization="warp"),
        OrPooling2d(2, 2, 1), torch.nn.Flatten(),
        LogicDense(108, 200), GroupSum(10, 10.0))
    values = torch.from_numpy(np.array(x).reshape(-1, 1, 28, 28)).float().div(255)
    return _train(model, values, y, steps, lr=lr, seed=seed)


def import_torchlogix():
    """torchlogix as kairo imports it (torchlogix.circuit needs Python ≥ 3.12)."""
    from kairo.logic import framework_module

    return framework_module("torchlogix")


def main(argv=None) -> int:
    import torch

    from kairo.logic import framework_forward, read_model, write_reference
    from kairo.logic import framework_module

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "data")
    ap.add_argument("--models", default="difflogic,torchlogix,torchlogix_lut,torchlogix_conv",
                    help="which fixtures to write (retraining one changes its bytes)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    xtr, ytr, xte, yte = mnist_subset()
    for name, make in (("difflogic",
                        lambda: difflogic_model(framework_module("difflogic"), xtr, ytr)),
                       ("torchlogix", lambda: (import_torchlogix(),
                                               torchlogix_model(xtr, ytr))[1]),
                       ("torchlogix_lut", lambda: (import_torchlogix(),
                                                   torchlogix_lut_model(xtr, ytr))[1]),
                       ("torchlogix_conv", lambda: (import_torchlogix(),
                                                    torchlogix_conv_model(xtr, ytr))[1])):
        if name not in args.models.split(","):
            continue
        path = args.out / f"{name}_mnist.pt"
        torch.save(make(), path)
        model = read_model(path, input={"thresholds": (0.5,)} if name == "difflogic" else None)
        ref = framework_forward(model, xte[:N_TEST])
        write_reference(args.out / f"{name}_mnist_reference.npz", model, xte[:N_TEST], ref)
        acc = float((ref["scores"].argmax(1) == yte[:N_TEST]).mean())
        print(f"{path}: {path.stat().st_size / 1024:.0f} KiB, {model.n_gates} gates, "
              f"accuracy {acc:.2%} on {N_TEST} test images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
