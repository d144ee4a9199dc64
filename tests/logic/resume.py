"""The learned-wiring tests' shared checks: a run killed at its checkpoint resumes to the
uninterrupted run's weights, and a trained model equals its circuit on every test image."""

from __future__ import annotations

import numpy as np
import torch

from kairo.logic import LogicTrainConfig, to_circuit, train


def train_killed_and_resumed(cfg: LogicTrainConfig, data: dict, tmp_path, stop: int) -> dict:
    """Train ``cfg`` whole into tmp_path/full.pt, and again killed after ``stop`` iterations
    (its checkpoint) then resumed to the end; assert the two end on identical weights. The
    whole run's result."""
    quiet = dict(data=data, progress_bar=False)
    full = train(cfg, checkpoint=tmp_path / "full.pt", **quiet)
    train(LogicTrainConfig(**{**cfg.__dict__, "iters": stop}), checkpoint=tmp_path / "part.pt",
          **quiet)
    resumed = train(cfg, checkpoint=tmp_path / "part.pt", **quiet)
    assert resumed["resumed_from"] == stop
    for (name, p), q in zip(full["model"].named_parameters(), resumed["model"].parameters()):
        torch.testing.assert_close(p, q, rtol=0, atol=0, msg=name)
    return full


def assert_circuit_is_model(model, data: dict) -> None:
    """The model's predictions on every test image equal its circuit's."""
    circ = to_circuit(model)
    xt, _ = data["test"]
    with torch.no_grad():
        pm = model(torch.from_numpy(xt)).argmax(1).numpy()
    np.testing.assert_array_equal(circ.predict(circ.image_bits(xt)), pm)
