"""Training a :class:`~kairo.logic._model.LogicNet` on MNIST: the data splits, the schedules
(learning rate, gate temperature, fixed layers; functions of the iteration alone, so a resumed
or branched run follows the same ones), resumable checkpoints and branches from snapshots.

The trainer hands each iteration's temperature and fixed layers to the model's forward; it
never sets attributes on the layers.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kairo._checkpoint import check_compatible, load_checkpoint as _load, save_checkpoint
from kairo._errors import ConfigError, DataError, KairoError
from kairo.logic._config import LogicTrainConfig
from kairo.logic._data import validation_split
from kairo.logic._layers import LogicDense, fused_threads
from kairo.logic._model import (LogicNet, build_model, expected_gates, image_shape, predict,
                                raw_gates, to_circuit)

__all__ = ["train", "load_data", "load_checkpoint", "model_from_checkpoint", "snapshot_path",
           "describe_branch", "lr_at", "gate_temperature_at", "fixed_layers", "random_shift",
           "random_affine", "affine_images", "val_seed", "CHECKPOINT_FORMAT"]

log = logging.getLogger(__name__)

CHECKPOINT_FORMAT = "kairo.logic.checkpoint"


def load_data(cfg: LogicTrainConfig) -> dict:
    """train / val / test splits (uint8 images [n, H, W, C], labels) of the chosen classes
    of ``cfg.dataset``, labels renumbered 0…k−1; ``"shape"``: one image's (H, W, C)."""
    from kairo.data import load_images

    images = load_images(cfg.dataset, cfg.data_dir)
    missing = [c for c in cfg.classes if c >= images.n_classes]
    if missing:
        raise ConfigError(f"classes: {', '.join(map(str, missing))} not among the labels of "
                          f"dataset {cfg.dataset} (0…{images.n_classes - 1})")
    out = {"shape": images.shape}
    lut = np.full(images.n_classes, -1)
    lut[list(cfg.classes)] = np.arange(len(cfg.classes))
    for split in ("train", "test"):
        x, y = getattr(images, f"x_{split}"), getattr(images, f"y_{split}")
        keep = lut[y] >= 0
        out[split] = (x[keep], lut[y[keep]].astype(np.int64))
    x, y = out["train"]
    val, kept = validation_split(len(y), val_seed(cfg), cfg.val_fraction)
    out["val"] = (x[val], y[val])
    out["train"] = (x[kept], y[kept])
    return out


def val_seed(cfg: LogicTrainConfig) -> int:
    """The seed of the run's validation split (``--val-seed``, else ``--seed``)."""
    return cfg.seed if cfg.val_seed < 0 else cfg.val_seed


def circuit_gates(model: LogicNet) -> int:
    """Gates of ``model``'s circuit after simplification (kairo's count, the vote not
    included): what ``max_gates`` budgets."""
    from kairo.logic._simplify import simplify

    was = model.training
    model.eval()
    try:
        return simplify(to_circuit(model))[0].n_gates
    finally:
        model.train(was)


@torch.no_grad()
def accuracy(model: LogicNet, x: np.ndarray, y: np.ndarray, *, discrete: bool,
             temperature: float = 1.0, fixed=(), batch: int | None = None) -> float:
    """Validation accuracy of the discrete network (eval mode) or of the relaxed one as it
    trains at this iteration (``temperature``, ``fixed``), without Gumbel noise."""
    was = model.training
    model.train(not discrete)
    gates = {} if discrete else {"temperature": temperature, "fixed": fixed, "mode": "soft"}
    try:
        hits = int((predict(model, x, batch=batch, **gates) == y).sum())
    finally:
        model.train(was)
    return hits / max(1, len(y))


# ---------------------------------------------------------------------------- checkpoints
def _save(path, model, optimizer, cfg: LogicTrainConfig, it: int, history: list, rng_state,
          best: dict | None, branch: dict | None, budget_weight: float = 0.0) -> None:
    """``best`` ({"iter", "val_discrete", "model"}): with ``keep_best``, the weights of the
    best discrete validation accuracy so far; ``model`` stays the latest (resuming continues
    it)."""
    save_checkpoint(path, {"version": 1, "iter": it, "arch": cfg.arch(),
                           "config": dataclasses.asdict(cfg), "model": model.state_dict(),
                           "image_shape": list(model.image_shape),
                           "optimizer": optimizer.state_dict(), "history": history,
                           "torch_rng": rng_state, "best": best, "branch": branch,
                           "budget_weight": budget_weight},
                    kind=CHECKPOINT_FORMAT)


def load_checkpoint(path, cfg: LogicTrainConfig | None = None) -> dict:
    """A logic checkpoint (``weights_only``: no code runs); with ``cfg``, refused unless it
    was saved for the same architecture."""
    state = _load(path, kind=CHECKPOINT_FORMAT)
    if cfg is not None:
        check_compatible(state["arch"], cfg.arch(), path,
                         hint="the architecture must match to resume or branch from it")
    return state


def _config_of(state: dict, path) -> LogicTrainConfig:
    try:
        return LogicTrainConfig(**{k: tuple(v) if isinstance(v, list) else v
                                   for k, v in state["config"].items()})
    except (TypeError, KairoError) as exc:
        raise DataError(f"checkpoint {path}: its training config is not one this kairo reads "
                        f"({exc})") from None


def snapshot_path(checkpoint, it: int) -> Path:
    """Where the kept checkpoint of iteration ``it`` goes: ``<out>.checkpoint-<it>.pt``."""
    checkpoint = Path(checkpoint)
    return checkpoint.with_name(f"{checkpoint.name.removesuffix('.pt')}-{it}.pt")


def _image_shape_of(state: dict, path) -> tuple[int, int, int]:
    shape = state.get("image_shape")
    if not isinstance(shape, (list, tuple)) or len(shape) != 3:
        raise DataError(f"checkpoint {path}: no image shape (H, W, C) recorded; it was not "
                        f"written by this kairo: train the run again")
    return tuple(int(v) for v in shape)


def model_from_checkpoint(path) -> tuple[LogicNet, LogicTrainConfig]:
    """The model a checkpoint (or a run's model.pt) holds, in eval mode, and its config."""
    state = load_checkpoint(path)
    cfg = _config_of(state, path)
    model = build_model(cfg, _image_shape_of(state, path))
    best = state.get("best")
    try:                    # a keep_best run's model is its best-validation weights
        model.load_state_dict(best["model"] if (cfg.keep_best or cfg.max_gates) and best
                              else state["model"])
    except RuntimeError as exc:
        raise DataError(f"checkpoint {path}: weights do not fit the architecture ({exc})") \
            from None
    model.eval()
    return model, cfg


# what, besides the iteration schedules, makes a run's first iterations what they were
_HISTORY_FIELDS = ("dataset", "classes", "tau", "gate_mode", "gumbel_tau", "shift", "rotate",
                   "scale", "batch", "residual_init", "val_fraction")


def branch_info(old: LogicTrainConfig, new: LogicTrainConfig, start: int) -> dict:
    """Which settings differ between the run a checkpoint came from and the run branching
    from it, over the iterations before ``start``. None differing: a single run of ``new``
    from scratch replays the branched one exactly (the schedules are functions of the
    iteration alone)."""
    differs = [f for f in _HISTORY_FIELDS if getattr(old, f) != getattr(new, f)]
    if val_seed(old) != val_seed(new):
        differs.append("validation split")
    if any(lr_at(old, i) != lr_at(new, i) for i in range(start)):
        differs.append("learning-rate schedule")
    if any(gate_temperature_at(old, i) != gate_temperature_at(new, i) for i in range(start)):
        differs.append("gate-temperature schedule")
    if any(fixed_layers(old, i) != fixed_layers(new, i) for i in range(start)):
        differs.append("fixed-layer schedule")
    done = range(1, start + 1)              # a rewiring follows the step of iteration done
    if any(rewire_at(old, d) != rewire_at(new, d) for d in done) or (
            old.rewire_fraction != new.rewire_fraction and any(rewire_at(old, d) for d in done)):
        differs.append("rewiring schedule")
    return {"iter": start, "same_as_single_run": not differs, "differs_before": differs}


def describe_branch(branch: dict) -> str:
    """One line on where a branched run started and whether a single run replays it."""
    return (f"branched from {branch['from']} at iteration {branch['iter']} ("
            + ("a single run of this config replays it" if branch["same_as_single_run"]
               else "before it the runs differ in " + ", ".join(branch["differs_before"]))
            + ")")


# ---------------------------------------------------------------------------- schedules
def lr_at(cfg: LogicTrainConfig, it: int) -> float:
    """Learning rate of iteration ``it`` (0-based): constant, then with ``lr_decay_from`` ≥ 0
    a cosine from ``lr`` down to 0 over the remaining iterations."""
    k = cfg.lr_decay_from
    if k < 0 or it < k:
        return cfg.lr
    return cfg.lr * 0.5 * (1.0 + math.cos(math.pi * (it - k) / (cfg.iters - k)))


def gate_temperature_at(cfg: LogicTrainConfig, it: int) -> float:
    """Softmax temperature of the gate logits at iteration ``it``: 1, then falling geometrically
    to ``gate_temperature`` at the last iteration, from ``gate_temperature_from`` (default: the
    start of the cosine phase, ``lr_decay_from``; without one, the start of the run). Lower
    temperatures concentrate each mixture on its argmax gate, so the relaxed network the
    optimizer sees approaches the discrete circuit that is exported."""
    if cfg.gate_temperature == 1.0:
        return 1.0
    k = cfg.gate_temperature_from if cfg.gate_temperature_from >= 0 else max(cfg.lr_decay_from, 0)
    frac = min(max((it - k) / max(cfg.iters - k, 1), 0.0), 1.0)
    return cfg.gate_temperature ** frac


def fixed_layers(cfg: LogicTrainConfig, it: int) -> tuple[int, ...]:
    """Indices of the leading gate layers fixed to their argmax gates at iteration ``it``
    (``fix_at``). A fixed layer's relaxed output is its circuit's output, so the layers after
    it learn on the values the exported circuit will feed them (the first conv block
    otherwise ends with a share of near-tied gates whose mixtures the circuit cannot
    compute)."""
    return tuple(i for i, k in enumerate(cfg.fix_at) if it >= k)


def rewire_at(cfg: LogicTrainConfig, done: int) -> bool:
    """Whether the candidates are redrawn after iteration ``done`` (every ``rewire_every``
    iterations until the cosine phase starts, or the run ends)."""
    end = cfg.lr_decay_from if 0 <= cfg.lr_decay_from < cfg.iters else cfg.iters
    return bool(cfg.rewire_every) and done % cfg.rewire_every == 0 and done < end


def rewire(model: nn.Module, opt: torch.optim.Optimizer, fraction: float,
           rng: np.random.Generator) -> int:
    """Redraw the least likely candidates of every learned dense layer
    (:meth:`LogicDense.redraw`) and zero the optimizer's moments of the replaced logits, so
    that nothing of the source that was there carries over (Adam's step count runs on, so a
    new candidate's first steps are a few times the learning rate). Returns the number
    replaced."""
    n = 0
    for m in model.modules():
        if isinstance(m, LogicDense) and m.learned:
            for w, mask in m.redraw(fraction, rng):
                for v in opt.state.get(w, {}).values():
                    if torch.is_tensor(v) and v.shape == w.shape:
                        v[mask] = 0
                n += int(mask.sum())
    return n


def _image_hwc(x: np.ndarray) -> tuple[int, int, int]:
    """(H, W, C) of one image of a batch [n, H, W], [n, H, W, C] or [n, H·W] (square, one
    channel)."""
    if x.ndim >= 3:
        return x.shape[1], x.shape[2], int(np.prod(x.shape[3:]))
    return image_shape(int(np.prod(x.shape[1:])), conv=True)


def random_shift(x: np.ndarray, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """Each image of ``x`` (uint8 [n, H, W], [n, H, W, C], or [n, H·W] of square one-channel
    images) moved by its own random (dy, dx) in −max_shift…max_shift, zeros shifted in."""
    n = x.shape[0]
    h, w, c = _image_hwc(x)
    img = x.reshape(n, h, w, c)
    p = max_shift
    padded = np.zeros((n, h + 2 * p, w + 2 * p, c), np.uint8)
    padded[:, p:p + h, p:p + w] = img
    dy, dx = rng.integers(0, 2 * p + 1, size=(2, n))
    # window origins per image; a gather of rows then columns
    rows = (dy[:, None] + np.arange(h))[:, :, None]                          # [n, H, 1]
    cols = (dx[:, None] + np.arange(w))[:, None, :]                          # [n, 1, W]
    return padded[np.arange(n)[:, None, None], rows, cols].reshape(x.shape)


def random_affine(x: np.ndarray, rotate: float, scale: float,
                  rng: np.random.Generator) -> np.ndarray:
    """Each image of ``x`` (as :func:`random_shift` takes them) rotated about its centre by
    its own angle in ±``rotate`` degrees and scaled by its own factor in 1 ± ``scale``."""
    n = x.shape[0]
    return affine_images(x, rng.uniform(-rotate, rotate, n), rng.uniform(1 - scale, 1 + scale, n))


def affine_images(x: np.ndarray, degrees: np.ndarray, factors: np.ndarray) -> np.ndarray:
    """Image i of ``x`` turned by ``degrees[i]`` (counter-clockwise as displayed, rows down)
    and scaled by ``factors[i]`` about its centre, sampled bilinearly with zeros outside and
    rounded back to uint8, so the thresholds see the grey edges a real stroke at that angle
    would have."""
    n = x.shape[0]
    h, w, c = _image_hwc(x)
    angle = np.deg2rad(np.asarray(degrees, float))
    # affine_grid maps each output position to where it reads the input, in coordinates
    # normalised per axis: the inverse motion, with the axes' scales put back
    cos, sin = np.cos(angle) / factors, np.sin(angle) / factors
    theta = np.zeros((n, 2, 3), np.float32)
    theta[:, 0, 0], theta[:, 0, 1] = cos, -sin * h / w
    theta[:, 1, 0], theta[:, 1, 1] = sin * w / h, cos
    img = torch.as_tensor(np.ascontiguousarray(x).reshape(n, h, w, c), dtype=torch.float32)
    grid = torch.nn.functional.affine_grid(torch.from_numpy(theta), [n, c, h, w],
                                           align_corners=False)
    out = torch.nn.functional.grid_sample(img.permute(0, 3, 1, 2), grid, mode="bilinear",
                                          padding_mode="zeros", align_corners=False)
    out = out.round_().clamp_(0, 255).to(torch.uint8).permute(0, 2, 3, 1)
    return out.numpy().reshape(x.shape)


# ---------------------------------------------------------------------------- training
def _start_state(cfg: LogicTrainConfig, ckpt: Path | None, model, opt, gen) -> dict:
    """Load where the run starts: its own checkpoint (resume), else ``init_from`` (a branch),
    else nothing. Returns {"start", "history", "best", "branch", "resumed"}."""
    out = {"start": 0, "history": [], "best": None, "branch": None, "resumed": None,
           "budget_weight": 0.0}
    source = ckpt if ckpt is not None and ckpt.is_file() else None
    if source is None and cfg.init_from:
        source = Path(cfg.init_from)
    if source is None:
        return out
    state = load_checkpoint(source, cfg)
    start = int(state["iter"])
    branch = state.get("branch")
    if source != ckpt:                          # a branch from another run
        if start >= cfg.iters:
            raise ConfigError(f"init_from {source} is at iteration {start}; iters "
                              f"({cfg.iters}) must be larger to train on from it")
        info = branch_info(_config_of(state, source), cfg, start)
        if branch and not branch["same_as_single_run"]:      # the source was no single run
            info["differs_before"].append(f"the branch at iteration {branch['iter']} that "
                                          f"made {source}")
            info["same_as_single_run"] = False
        branch = {"from": str(source), **info}
    if _image_shape_of(state, source) != model.image_shape:
        raise ConfigError(f"{source} was trained on images of shape "
                          f"{_image_shape_of(state, source)} (H, W, C); these are "
                          f"{model.image_shape}")
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["optimizer"])
    gen.set_state(state["torch_rng"])
    if source == ckpt:
        log.info("resumed from %s at iteration %d", ckpt, start)
    else:
        log.info("%s", describe_branch(branch))
    return {"start": start, "history": list(state["history"]), "branch": branch,
            "resumed": start, "budget_weight": float(state.get("budget_weight", 0.0)),
            "best": state.get("best") if source == ckpt else None}  # the old run's best is not ours


def train(cfg: LogicTrainConfig, *, checkpoint=None, data=None,
          progress_bar: bool | None = None) -> dict:
    """Train; resume from ``checkpoint`` when it holds an earlier state of the same run
    (saved there every ``checkpoint_every`` iterations, with ``snapshots`` kept beside it as
    :func:`snapshot_path`), or branch from ``cfg.init_from``.

    Returns {"model", "history" (iter, loss, relaxed/discrete validation accuracy),
    "resumed_from", "seconds", "iters_per_s", "kept_iter", "branch"}. With ``cfg.keep_best``
    the model ends with the weights of the evaluation with the highest discrete validation
    accuracy (the first of equals; ``kept_iter``), else with the last ones (``kept_iter``
    None).
    """
    from kairo._progress import progress

    data = data or load_data(cfg)
    xtr, ytr = data["train"]
    shape = data.get("shape") or (xtr.shape[1:] if xtr.ndim >= 3 else
                                  int(np.prod(xtr.shape[1:])))
    model = build_model(cfg, shape)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)
    ckpt = Path(checkpoint) if checkpoint else None
    st = _start_state(cfg, ckpt, model, opt, gen)
    start, history, best, branch = st["start"], st["history"], st["best"], st["branch"]
    select = cfg.keep_best or cfg.max_gates > 0          # the run ends with kept weights
    budget_w = st["budget_weight"]
    n_raw = float(raw_gates(model))
    model.train()
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    bar = progress(range(start, cfg.iters), total=cfg.iters - start, desc="train",
                   enabled=progress_bar)
    with fused_threads(model):
        for it in bar:
            loss, gates = _train_step(model, opt, loss_fn, cfg, xtr, ytr, gen, it, budget_w,
                                      n_raw)
            done = it + 1
            if rewire_at(cfg, done):
                rewire(model, opt, cfg.rewire_fraction,
                       np.random.default_rng(np.random.SeedSequence([cfg.seed, done, 1])))
            if done % cfg.eval_every == 0 or done == cfg.iters:
                budget_w, best = _evaluate(model, cfg, data["val"], loss, gates, done,
                                           history, budget_w, best, select)
            keep = best if select else None
            if ckpt is not None and (done % cfg.checkpoint_every == 0 or done == cfg.iters):
                _save(ckpt, model, opt, cfg, done, history, gen.get_state(), keep, branch,
                      budget_w)
            if ckpt is not None and done in cfg.snapshots:
                _save(snapshot_path(ckpt, done), model, opt, cfg, done, history,
                      gen.get_state(), keep, branch, budget_w)
    secs = time.perf_counter() - t0
    kept = _restore_kept(model, cfg, history, best, select)
    model.eval()
    return {"model": model, "history": history, "resumed_from": st["resumed"],
            "seconds": secs,
            "iters_per_s": (cfg.iters - start) / secs if secs > 0 else float("nan"),
            "kept_iter": kept, "branch": branch}


def _train_step(model, opt, loss_fn, cfg: LogicTrainConfig, xtr, ytr, gen, it: int,
                budget_w: float, n_raw: float):
    """Iteration ``it``: one optimizer step on a batch drawn with ``gen`` (shifted when
    ``cfg.shift``), the gate budget's penalty added with weight ``budget_w``. Returns the
    batch's loss and the gate settings (temperature, fixed layers) it ran with."""
    idx = torch.randint(0, len(ytr), (cfg.batch,), generator=gen).numpy()
    xb = xtr[idx]
    # seeded by (seed, iteration): a resumed run draws the same augmentation
    if cfg.rotate or cfg.scale:
        xb = random_affine(xb, cfg.rotate, cfg.scale,
                           np.random.default_rng(np.random.SeedSequence([cfg.seed, it, 1])))
    if cfg.shift:
        xb = random_shift(xb, cfg.shift,
                          np.random.default_rng(np.random.SeedSequence([cfg.seed, it])))
    xb, yb = torch.from_numpy(xb), torch.from_numpy(ytr[idx])
    for group in opt.param_groups:
        group["lr"] = lr_at(cfg, it)
    gates = {"temperature": gate_temperature_at(cfg, it), "fixed": fixed_layers(cfg, it)}
    loss = loss_fn(model(xb, **gates), yb)
    if cfg.max_gates and budget_w > 0:
        loss = loss + budget_w * expected_gates(model, **gates) / n_raw
    if loss.requires_grad:              # not when every gate layer is fixed
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return loss, gates


def _evaluate(model, cfg: LogicTrainConfig, val, loss, gates: dict, done: int,
              history: list, budget_w: float, best: dict | None, select: bool):
    """Append the evaluation after iteration ``done`` to ``history`` (loss, relaxed and
    discrete validation accuracy; with a gate budget the circuit's gates). Returns the gate
    budget's new penalty weight and the weights to keep (``best``, replaced by these when
    they are within budget and, with ``keep_best``, better)."""
    xv, yv = val
    history.append({"iter": done, "loss": loss.item(),
                    "val_relaxed": accuracy(model, xv, yv, discrete=False, **gates),
                    "val_discrete": accuracy(model, xv, yv, discrete=True)})
    within = True
    if cfg.max_gates:
        n = circuit_gates(model)
        within = n <= cfg.max_gates
        history[-1].update(gates=n, budget_weight=budget_w)
        # a controller on the penalty: up while over budget, down while under
        budget_w = max(2 * budget_w, 0.05) if not within else budget_w / 2
    if select and within and (
            best is None or not cfg.keep_best or
            history[-1]["val_discrete"] > best["val_discrete"]):
        best = {"iter": done, "val_discrete": history[-1]["val_discrete"],
                "model": {k: v.detach().clone() for k, v in model.state_dict().items()}}
    return budget_w, best


def _restore_kept(model, cfg: LogicTrainConfig, history: list, best: dict | None,
                  select: bool) -> int | None:
    """At the end of training: load the kept weights (``best``) when the run selects them;
    their iteration, or None. With a gate budget and no evaluation within it, an error."""
    if cfg.max_gates and best is None:
        smallest = min(history, key=lambda h: h["gates"])
        raise KairoError(f"max_gates: no evaluation was within the budget of {cfg.max_gates} "
                         f"gates (the smallest circuit had {smallest['gates']}, at iteration "
                         f"{smallest['iter']}); train longer, evaluate more often or start "
                         f"from a smaller network")
    if not (select and best is not None):
        return None
    model.load_state_dict(best["model"])
    kept = int(best["iter"])
    log.info("kept the weights of iteration %d (discrete validation %.2f%%, %s of %d "
             "evaluations)", kept, 100 * best["val_discrete"],
             "the best" + (" within budget" if cfg.max_gates else "") if cfg.keep_best
             else "the last within budget", len(history))
    return kept
