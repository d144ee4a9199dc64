"""Logic-gate networks on MNIST: config, model, training with resumable checkpoints, and the
discrete circuit a trained model becomes."""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kairo._errors import DataError, KairoError
from kairo.logic._circuit import Circuit
from kairo.logic._commands import LogicTrainConfig
from kairo.logic._layers import Binarize, GroupSum, LogicDense

__all__ = ["LogicTrainConfig", "LogicNet", "build_model", "load_data", "train", "to_circuit",
           "save_checkpoint", "load_checkpoint"]


class LogicNet(nn.Module):
    """Binarize → LogicDense × layers → GroupSum."""

    def __init__(self, n_pixels: int, cfg: LogicTrainConfig):
        super().__init__()
        self.binarize = Binarize(cfg.thresholds)
        rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 11]))
        sizes = [n_pixels * self.binarize.n_levels] + [cfg.hidden] * cfg.layers
        self.logic = nn.Sequential(*[
            LogicDense(i, o, pairing=cfg.pairing, residual_init=cfg.residual_init,
                       mode=cfg.gate_mode, tau=cfg.gumbel_tau, seed=rng)
            for i, o in zip(sizes[:-1], sizes[1:])])
        self.head = GroupSum(len(cfg.classes), cfg.tau)
        self.n_pixels = n_pixels

    def bits(self, images: torch.Tensor) -> torch.Tensor:
        return self.binarize(images)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.logic(self.bits(images)))


def build_model(cfg: LogicTrainConfig, n_pixels: int = 784) -> LogicNet:
    torch.manual_seed(cfg.seed)
    return LogicNet(n_pixels, cfg)


def load_data(cfg: LogicTrainConfig) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """train / val / test splits of the chosen classes, labels renumbered 0…k−1."""
    from kairo.data import load_mnist

    out = {}
    lut = np.full(10, -1)
    lut[list(cfg.classes)] = np.arange(len(cfg.classes))
    for split in ("train", "test"):
        x, y = load_mnist(split, cfg.data_dir)
        keep = lut[y] >= 0
        out[split] = (x[keep], lut[y[keep]].astype(np.int64))
    x, y = out["train"]
    perm = np.random.default_rng(np.random.SeedSequence([cfg.seed, 12])).permutation(len(y))
    n_val = int(round(cfg.val_fraction * len(y)))
    out["val"] = (x[perm[:n_val]], y[perm[:n_val]])
    out["train"] = (x[perm[n_val:]], y[perm[n_val:]])
    return out


def check_images(x, n_pixels: int = 784) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype != np.uint8:
        raise DataError(f"images must be uint8 (0–255), got dtype {x.dtype}")
    if x.ndim not in (2, 3) or int(np.prod(x.shape[1:])) != n_pixels:
        raise DataError(f"images must have shape (n, 28, 28) or (n, {n_pixels}), got {x.shape}")
    return x.reshape(x.shape[0], -1)


@torch.no_grad()
def accuracy(model: LogicNet, x: np.ndarray, y: np.ndarray, *, discrete: bool,
             batch: int = 2000) -> float:
    was = model.training
    model.train(not discrete)
    if not discrete:                       # the relaxed model, without Gumbel noise
        modes = [(m, m.mode) for m in model.logic]
        for m, _ in modes:
            m.mode = "soft"
    try:
        hits = 0
        for s in range(0, len(y), batch):
            xb = torch.from_numpy(x[s:s + batch])
            hits += int((model(xb).argmax(1).numpy() == y[s:s + batch]).sum())
    finally:
        model.train(was)
        if not discrete:
            for m, mode in modes:
                m.mode = mode
    return hits / max(1, len(y))


# ---------------------------------------------------------------------------- checkpoints
def save_checkpoint(path, model, optimizer, cfg: LogicTrainConfig, it: int, history: list,
                    rng_state) -> None:
    """Atomic: write a temp file in the same folder, then rename over the old checkpoint."""
    path = Path(path)
    state = {"format": "kairo.logic.checkpoint", "version": 1, "iter": it,
             "arch": cfg.arch(), "config": dataclasses.asdict(cfg),
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "history": history, "torch_rng": rng_state}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        torch.save(state, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_checkpoint(path, cfg: LogicTrainConfig | None = None) -> dict:
    """Load with ``weights_only=True`` (no arbitrary code); check the architecture."""
    path = Path(path)
    if not path.is_file():
        raise KairoError(f"checkpoint {path} does not exist")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - torch raises many types for a bad file
        raise DataError(f"checkpoint {path}: cannot be read safely — corrupt, truncated or not "
                        f"a kairo checkpoint ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(state, dict) or state.get("format") != "kairo.logic.checkpoint":
        raise DataError(f"checkpoint {path}: not a kairo logic checkpoint")
    if cfg is not None and state["arch"] != cfg.arch():
        diff = {k: (state["arch"].get(k), v) for k, v in cfg.arch().items()
                if state["arch"].get(k) != v}
        raise DataError(f"checkpoint {path} was saved for a different architecture "
                        f"(checkpoint vs now: {diff})")
    return state


def model_from_checkpoint(path) -> tuple[LogicNet, LogicTrainConfig]:
    state = load_checkpoint(path)
    cfg = LogicTrainConfig(**{k: tuple(v) if isinstance(v, list) else v
                              for k, v in state["config"].items()})
    model = build_model(cfg)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        raise DataError(f"checkpoint {path}: weights do not fit the architecture ({exc})") \
            from None
    model.eval()
    return model, cfg


# ---------------------------------------------------------------------------- training
def train(cfg: LogicTrainConfig, *, checkpoint=None, data=None, log=print,
          progress_bar: bool | None = None) -> dict:
    """Train; resume from ``checkpoint`` when it holds an earlier state of the same run.

    Returns {"model", "history" (iter, loss, relaxed/discrete validation accuracy),
    "resumed_from", "seconds", "iters_per_s"}.
    """
    from kairo._progress import progress

    data = data or load_data(cfg)
    xtr, ytr = data["train"]
    model = build_model(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    start, history, resumed = 0, [], None
    gen = torch.Generator().manual_seed(cfg.seed)
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt is not None and ckpt.is_file():
        state = load_checkpoint(ckpt, cfg)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start, history, resumed = int(state["iter"]), list(state["history"]), int(state["iter"])
        gen.set_state(state["torch_rng"])
        log(f"resumed from {ckpt} at iteration {start}")
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    bar = progress(range(start, cfg.iters), total=cfg.iters - start, desc="train",
                   enabled=progress_bar)
    for it in bar:
        idx = torch.randint(0, len(ytr), (cfg.batch,), generator=gen).numpy()
        xb, yb = torch.from_numpy(xtr[idx]), torch.from_numpy(ytr[idx])
        loss = loss_fn(model(xb), yb)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        done = it + 1
        if done % cfg.eval_every == 0 or done == cfg.iters:
            xv, yv = data["val"]
            history.append({"iter": done, "loss": loss.item(),
                            "val_relaxed": accuracy(model, xv, yv, discrete=False),
                            "val_discrete": accuracy(model, xv, yv, discrete=True)})
        if ckpt is not None and (done % cfg.checkpoint_every == 0 or done == cfg.iters):
            save_checkpoint(ckpt, model, opt, cfg, done, history, gen.get_state())
    secs = time.perf_counter() - t0
    model.eval()
    return {"model": model, "history": history, "resumed_from": resumed, "seconds": secs,
            "iters_per_s": (cfg.iters - start) / secs if secs > 0 else float("nan")}


# ---------------------------------------------------------------------------- circuits
def to_circuit(model: LogicNet, meta: dict | None = None) -> Circuit:
    """The discrete network as a netlist: input bits (threshold-major) → gates → outputs."""
    n_in = model.logic[0].n_in
    ops, a, b = [], [], []
    offset = 0                # node id of the first output of the previous layer
    n_prev = n_in
    for layer in model.logic:
        base = n_in + sum(len(o) for o in ops)
        ops.append(layer.ops())
        a.append(layer.ia.numpy() + offset)
        b.append(layer.ib.numpy() + offset)
        offset, n_prev = base, layer.n_out
    outputs = offset + np.arange(n_prev)
    return Circuit(n_inputs=n_in, ops=np.concatenate(ops), a=np.concatenate(a),
                   b=np.concatenate(b), outputs=outputs, n_classes=model.head.k,
                   meta={"thresholds": model.binarize.t.numpy().astype(int).tolist(),
                         "n_pixels": model.n_pixels, **(meta or {})})


def image_bits(circuit_or_thresholds, images: np.ndarray) -> np.ndarray:
    """uint8 images → the circuit's input bits (threshold-major, as ``Binarize``)."""
    th = circuit_or_thresholds.meta["thresholds"] if isinstance(circuit_or_thresholds, Circuit) \
        else circuit_or_thresholds
    x = check_images(images)
    return (x[:, None, :] > np.asarray(th)[None, :, None]).reshape(x.shape[0], -1)
