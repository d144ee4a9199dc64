"""Knowledge distillation for logic-gate networks: a small CNN teacher whose softened class
probabilities the logic network also learns from (``LogicTrainConfig.distill``).

Two dense logic layers fit MNIST's training split almost exactly (loss ≈ 0.01) and then stop
improving on images they have not seen; a teacher's soft targets say how much each wrong
class resembles the image, which one-hot labels do not. The teacher is trained first, on the
same training split (never the validation or test images); its scores of the training
images are computed once and each batch's are looked up.
"""

from __future__ import annotations

import time

import numpy as np
import torch
from torch import nn

__all__ = ["Teacher", "train_teacher", "teacher_scores", "distill_loss"]


class Teacher(nn.Module):
    """Two 3 × 3 convolutions (32, 64 channels) each followed by 2 × 2 max-pooling, a
    128-unit hidden layer: about 99 % on MNIST after a few epochs on a CPU, and a forward on a
    batch of 128 that costs a fraction of a logic training step. Takes uint8 images
    [n, H, W, C] (or flat square one-channel ones) and returns class logits."""

    def __init__(self, shape, n_classes: int):
        super().__init__()
        h, w, c = _hwc(shape)
        self.shape = (h, w, c)
        self.features = nn.Sequential(
            nn.Conv2d(c, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        self.head = nn.Sequential(nn.Dropout(0.25), nn.Linear(64 * (h // 4) * (w // 4), 128),
                                  nn.ReLU(), nn.Dropout(0.5), nn.Linear(128, n_classes))

    def forward(self, x) -> torch.Tensor:
        h, w, c = self.shape
        x = torch.as_tensor(x).reshape(-1, h, w, c).permute(0, 3, 1, 2)
        return self.head(self.features(x.float() / 255.0))


def _hwc(shape) -> tuple[int, int, int]:
    if isinstance(shape, (int, np.integer)):
        side = int(round(float(shape) ** 0.5))
        return side, side, 1
    shape = tuple(int(s) for s in shape)
    return shape if len(shape) == 3 else (shape[0], shape[1], 1)


def train_teacher(x: np.ndarray, y: np.ndarray, shape, n_classes: int, *, epochs: int,
                  seed: int, val=None, batch: int = 128, lr: float = 1e-3) -> dict:
    """Train a :class:`Teacher` on uint8 images ``x`` and labels ``y`` (Adam, ``epochs``
    passes in a seeded order). Returns {"model" (in eval mode), "seconds", "val_accuracy"
    (on ``val`` = (x, y) when given)}."""
    torch.manual_seed(seed)
    model = Teacher(shape, n_classes)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 31]))
    t0 = time.perf_counter()
    model.train()
    for _ in range(epochs):
        order = rng.permutation(len(y))
        for i in range(0, len(order), batch):
            idx = order[i:i + batch]
            loss = nn.functional.cross_entropy(model(torch.from_numpy(x[idx])),
                                               torch.from_numpy(y[idx]))
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
    model.eval()
    out = {"model": model, "seconds": time.perf_counter() - t0, "val_accuracy": None}
    if val is not None:
        pred = teacher_scores(model, val[0]).argmax(1).numpy()
        out["val_accuracy"] = float((pred == val[1]).mean())
    return out


def teacher_scores(model: Teacher, x: np.ndarray, chunk: int = 1000) -> torch.Tensor:
    """The teacher's class logits of the uint8 images ``x``, [n, classes] float32."""
    with torch.no_grad():
        return torch.cat([model(torch.from_numpy(np.ascontiguousarray(x[i:i + chunk])))
                          for i in range(0, len(x), chunk)])


def distill_loss(student_logits: torch.Tensor, teacher_logits: torch.Tensor, y: torch.Tensor,
                 weight: float, temperature: float) -> torch.Tensor:
    """(1 − weight) · cross-entropy to the labels + weight · T² · KL(teacher ‖ student) at
    temperature T (Hinton et al. 2015; T² keeps the soft term's gradients at the hard
    term's scale)."""
    hard = nn.functional.cross_entropy(student_logits, y)
    t = temperature
    soft = nn.functional.kl_div(nn.functional.log_softmax(student_logits / t, dim=1),
                                nn.functional.log_softmax(teacher_logits / t, dim=1),
                                reduction="batchmean", log_target=True)
    return (1 - weight) * hard + weight * t * t * soft
