"""Training a time-series classifier: AdamW, a learning-rate schedule, a stratified validation
split with early stopping, resumable checkpoints, ensembles (saved models and inference:
``_inference``).

Reproducibility: the split, the batch order and every epoch's torch random stream derive from
``seed`` and the epoch number alone, so two runs, or a run resumed from a checkpoint, give the
same history and weights (on the same device and thread count).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kairo._checkpoint import check_compatible, load_checkpoint, save_checkpoint
from kairo._device import resolve_device
from kairo._errors import ConfigError, DataError, KairoError
from kairo.tsc._attention import MultiHeadAttention
from kairo.tsc._augment import augment, check_mask, cut_mix, is_active
from kairo.tsc._config import SCHEDULES, TrainConfig
from kairo.tsc._recipe import resolve_recipe, resolved_train, series_stats
from kairo.tsc._data import (TSData, channel_stats, standardize, stratified_split,
                                   znormalize)

__all__ = ["TrainConfig", "fit", "fit_ensemble", "ensemble_checkpoints", "recompute_bn_stats",
           "scale_input", "SCHEDULES", "param_groups", "n_epochs"]

log = logging.getLogger(__name__)

# the files' format names (the package's first name): model files already written keep loading
_CKPT_FORMAT = "kairo.attention.checkpoint"
_MODEL_FORMAT = "kairo.attention.classifier"
# options that do not change the training trajectory (bn_stats acts after the last epoch)
_RESUME_FREE = ("checkpoint_every", "threads", "device", "bn_stats")


# ---------------------------------------------------------------------------- helpers
def _build(model_cfg, n_channels: int, n_classes: int, max_len: int) -> nn.Module:
    from kairo.tsc._model import build_classifier

    return build_classifier(model_cfg, n_channels, n_classes, max_len)


def _model_config(fields: dict):
    from kairo.tsc._model import ModelConfig

    return ModelConfig(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()})


def _device(name: str) -> torch.device:
    return torch.device(resolve_device(name))


def _epoch_seed(seed: int, epoch: int) -> int:
    return int(np.random.SeedSequence([seed, epoch, 17]).generate_state(1)[0])


def _batches(n: int, batch: int) -> list[tuple[int, int]]:
    """[start, stop) slices of n items; a last batch of one joins the one before (BatchNorm
    cannot train on a single series)."""
    starts = list(range(0, n, batch))
    if len(starts) > 1 and n - starts[-1] == 1:
        starts.pop()
    return [(s, e) for s, e in zip(starts, starts[1:] + [n])]


def _scheduler(opt, cfg: TrainConfig, total: int):
    if cfg.schedule == "plateau":
        # stepped once per epoch with the epoch's monitored loss (see _fit), not per batch
        return torch.optim.lr_scheduler.ReduceLROnPlateau(
            opt, mode="min", factor=cfg.plateau_factor, patience=cfg.plateau_patience,
            min_lr=cfg.min_lr)
    if cfg.schedule == "onecycle":
        return torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=cfg.lr, total_steps=total,
                                                   pct_start=cfg.warmup)
    warm = int(round(cfg.warmup * total)) if cfg.schedule == "cosine" else 0

    def factor(step: int) -> float:
        if cfg.schedule == "constant":
            return 1.0
        if step < warm:
            return (step + 1) / warm                       # linear warm-up to lr
        done = min(1.0, (step - warm) / max(1, total - warm))
        return 0.5 * (1.0 + math.cos(math.pi * done))      # cosine to 0

    return torch.optim.lr_scheduler.LambdaLR(opt, factor)


def n_epochs(cfg: TrainConfig, n_train: int) -> int:
    """The epochs a run trains for: ``cfg.epochs``, or with 0 enough epochs of ``n_train``
    series in batches of ``cfg.batch`` for ``cfg.steps`` optimizer steps (at least one)."""
    return cfg.epochs or -(-cfg.steps // len(_batches(n_train, cfg.batch)))


def param_groups(model: nn.Module, weight_decay: float) -> list[dict]:
    """AdamW parameter groups: ``weight_decay`` on the weights of convolutions, linear layers
    and attention projections; none on biases, normalization parameters, pooling queries, CLS
    tokens and learned position tables, whose pull towards zero is a pull towards a different
    function rather than towards a smaller one (as timm and most Transformer recipes do).
    Every trainable parameter is in exactly one group."""
    from kairo.tsc._encodings import LearnedEncoding
    from kairo.tsc._pooling import ClsPool, MultiHeadAttentionPool

    exempt = set()
    for m in model.modules():
        if isinstance(m, (nn.LayerNorm, nn.GroupNorm, nn.modules.batchnorm._BatchNorm)):
            exempt.update(id(p) for p in m.parameters(recurse=False))
        elif isinstance(m, MultiHeadAttentionPool):
            exempt.add(id(m.query))
        elif isinstance(m, ClsPool):
            exempt.add(id(m.cls))
        elif isinstance(m, LearnedEncoding):
            exempt.add(id(m.weight))
        bias = getattr(m, "bias", None)
        if isinstance(bias, nn.Parameter):
            exempt.add(id(bias))
    params = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in params if id(p) not in exempt], "weight_decay": weight_decay},
            {"params": [p for p in params if id(p) in exempt], "weight_decay": 0.0}]


def _fingerprint(data: TSData) -> dict:
    h = hashlib.blake2b(digest_size=16)
    for a in (data.x, data.y, data.mask):
        if a is not None:
            h.update(np.ascontiguousarray(a).tobytes())
    return {"name": data.name, "shape": list(data.x.shape), "classes": list(data.classes),
            "digest": h.hexdigest()}


def _cpu_state(model: nn.Module) -> dict:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


# ---------------------------------------------------------------------------- training
def _bn_buffers(model: nn.Module) -> list[torch.Tensor]:
    return [b for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
            for b in m.buffers()]


def _sam_ascend(model: nn.Module, rho: float) -> list[tuple[nn.Parameter, torch.Tensor]]:
    """Move every parameter with a gradient by rho · g / ‖g‖ (the whole model's gradient
    norm); returns the moves so that they can be undone."""
    params = [p for p in model.parameters() if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in params]))
    scale = rho / (norm + 1e-12)
    moves = []
    with torch.no_grad():
        for p in params:
            e = p.grad * scale
            p.add_(e)
            moves.append((p, e))
    return moves


def _train_epoch(model, opt, sched, loss_fn, x, y, mask, order, cfg: TrainConfig) -> float:
    """One pass over the training series in ``order``; returns the mean training loss."""
    model.train()
    total, seen = 0.0, 0
    aug = is_active(cfg)
    # CutMix weighs each series' two labels on its own: the same loss, per series
    each_loss = nn.CrossEntropyLoss(reduction="none", label_smoothing=loss_fn.label_smoothing)
    for s, e in _batches(len(order), cfg.batch):
        idx = order[s:e]
        mb = None if mask is None else mask[idx]
        xb = augment(x[idx], mb, cfg) if aug else x[idx]                        # [b, C, T]
        if cfg.mixup == "on":     # "auto" is resolved by fit before the first epoch
            # one weight per batch from the epoch's seeded stream; a mixed series is valid
            # where either of its two is (padding is zero in both)
            lam = float(torch.distributions.Beta(cfg.mixup_alpha, cfg.mixup_alpha).sample())
            perm = torch.randperm(len(idx), device=xb.device)
            xb = lam * xb + (1 - lam) * xb[perm]
            mb = None if mb is None else mb | mb[perm]

            def batch_loss(xb=xb, mb=mb, lam=lam, perm=perm, yb=y[idx]):
                out = model(xb, mb)
                return lam * loss_fn(out, yb) + (1 - lam) * loss_fn(out, yb[perm])
        elif cfg.cutmix == "on":
            keep = float(torch.distributions.Beta(cfg.cutmix_alpha, cfg.cutmix_alpha).sample())
            perm = torch.randperm(len(idx), device=xb.device)
            xb, own = cut_mix(xb, mb, perm, keep, float(torch.rand(())))

            def batch_loss(xb=xb, mb=mb, own=own, perm=perm, yb=y[idx]):
                out = model(xb, mb)
                return (own * each_loss(out, yb) + (1 - own) * each_loss(out, yb[perm])).mean()
        else:
            def batch_loss(xb=xb, mb=mb, yb=y[idx]):
                return loss_fn(model(xb, mb), yb)                               # scalar
        loss = batch_loss()
        if not torch.isfinite(loss):
            raise KairoError(f"training diverged (loss {loss.item()}); lower lr (now {cfg.lr}) "
                             f"or raise max_grad_norm clipping (now {cfg.max_grad_norm})")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.sam == "on":       # "auto" is resolved by fit before the first epoch
            # the same batch again at the worst-case nearby weights; batch-norm running
            # statistics keep the first pass's update (they describe w, not w + e)
            kept = [b.clone() for b in _bn_buffers(model)]
            moves = _sam_ascend(model, cfg.sam_rho)
            opt.zero_grad(set_to_none=True)
            sharp = batch_loss()
            if not torch.isfinite(sharp):
                raise KairoError(f"training diverged at the sharpness-aware step (loss "
                                 f"{sharp.item()}); lower sam_rho (now {cfg.sam_rho}) or lr "
                                 f"(now {cfg.lr}), or turn sam off")
            sharp.backward()
            with torch.no_grad():
                for p, step in moves:
                    p.sub_(step)
                for b, k in zip(_bn_buffers(model), kept):
                    b.copy_(k)
        if cfg.max_grad_norm > 0:
            nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        if cfg.schedule != "plateau":
            sched.step()
        total += loss.item() * (e - s)
        seen += e - s
    return total / seen


@torch.no_grad()
def _validate(model, x, y, mask, batch: int = 256) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) in eval mode."""
    model.eval()
    loss, hits = 0.0, 0
    for s in range(0, len(y), batch):
        mb = None if mask is None else mask[s:s + batch]
        logits = model(x[s:s + batch], mb)                                      # [b, K]
        loss += nn.functional.cross_entropy(logits, y[s:s + batch], reduction="sum").item()
        hits += int((logits.argmax(1) == y[s:s + batch]).sum())
    return loss / len(y), hits / len(y)


def fit(model_cfg, train_cfg: TrainConfig, data: TSData, *, checkpoint=None,
        progress_bar: bool | None = None) -> dict:
    """Train a classifier on ``data`` (the training split; validation is held out from it).

    Parameters
    ----------
    model_cfg : ModelConfig
    train_cfg : TrainConfig
    data : TSData
    checkpoint : path, optional
        Saved every ``checkpoint_every`` epochs and at the end (atomically). If the file
        already holds an earlier state of the same run (same configs and data), training
        resumes from it; a finished run is returned as it was. Resume, early stop and the
        summary are logged (``logging``, this module's logger).
    progress_bar : bool, optional
        None shows a bar on a terminal and a log line every few seconds otherwise (see
        `kairo._progress.progress`); False shows nothing.

    Returns
    -------
    dict with ``model`` (the weights of the lowest validation loss, or of the lowest training
    loss when ``val_fraction`` is 0; eval mode, ``model.fit_meta`` set),
    ``history`` (per epoch: epoch, train_loss, val_loss, val_acc, lr — val_* None without a
    validation set), ``best_epoch``, ``stopped_early``, ``resumed_from`` (epoch or None),
    ``seconds``, ``samples_per_s`` (training series per second), ``meta`` (with the resolved
    ``znorm``, ``sam`` and ``mixup`` ("on"/"off"), ``time_warp`` (the sd), ``head_norm``,
    ``weight_init`` and ResNet ``layout``) and ``fit_index`` (the indices of ``data`` trained
    on: all but the validation hold-out).
    """
    if not isinstance(train_cfg, TrainConfig):
        raise ConfigError(f"train_cfg must be a TrainConfig, got {type(train_cfg).__name__}")
    if not isinstance(data, TSData):
        raise KairoError(f"data must be a TSData (see load_dataset / from_arrays), got "
                         f"{type(data).__name__}")
    if train_cfg.time_warp not in ("auto", 0) or train_cfg.crop or train_cfg.cutmix == "on":
        why = check_mask(data.mask)               # time_warp "auto" never asks it
        if why:
            raise DataError(f"{data.name}: {why}")
    device = _device(train_cfg.device)
    old_threads = torch.get_num_threads()
    if train_cfg.threads:
        torch.set_num_threads(train_cfg.threads)
    try:
        # the caller's global torch random state is left as it was
        gpus = [device.index if device.index is not None else torch.cuda.current_device()] \
            if device.type == "cuda" else []
        with torch.random.fork_rng(devices=gpus):
            return _fit(model_cfg, train_cfg, data, device,
                        Path(checkpoint) if checkpoint else None, progress_bar)
    finally:
        torch.set_num_threads(old_threads)


def _record_epoch(state: dict, model, sched, cfg: TrainConfig, epoch: int, epochs: int,
                  train_loss: float, val_loss, val_acc, lr: float) -> None:
    """Add an epoch to the training state ``state``: its history row, the kept weights (the
    lowest validation loss, or training loss without a hold-out: the protocol of Fawaz et al.
    2019, where nothing stops early), the plateau schedule's step and early stopping."""
    state["history"].append({"epoch": epoch, "train_loss": train_loss, "val_loss": val_loss,
                          "val_acc": val_acc, "lr": lr})
    state["epoch"] = epoch
    score = train_loss if val_loss is None else val_loss
    if cfg.schedule == "plateau":
        sched.step(score)
    if score < state["best_loss"]:
        state["best_loss"] = score
        state["best_epoch"], state["best_state"], state["bad"] = epoch, _cpu_state(model), 0
    else:
        state["bad"] += 1
    if cfg.patience and val_loss is not None and state["bad"] >= cfg.patience:
        state["stopped_early"] = True
        log.info("early stop at epoch %d: no lower validation loss for %d epochs (best "
                 "%.4f at epoch %d)", epoch, cfg.patience, state["best_loss"], state["best_epoch"])
    state["finished"] = state["stopped_early"] or epoch == epochs


def _inputs(model_cfg, cfg: TrainConfig, data: TSData, device):
    """The split, the recipe and the scaled tensors of a run: (cfg with "auto" resolved,
    stats, scaling, train and hold-out indices, tensors x, y, mask on ``device``)."""
    cfg, stats, scaling, tr, va, xt, yt, mt = _inputs(model_cfg, cfg, data, device)
    return cfg, stats, scaling, tr, va, xt, yt, mt


def _resume(ckpt, run: dict, model, opt, sched, state: dict) -> tuple[dict, int | None]:
    """(training state, epoch resumed from) from ``ckpt`` when it holds an earlier state of
    this run (model, optimizer and schedule loaded in place); (``state``, None) otherwise."""
    if ckpt is None or not ckpt.is_file():
        return state, None
    saved = load_checkpoint(ckpt, kind=_CKPT_FORMAT)
    _check_resume(ckpt, saved["run"], run)
    model.load_state_dict(saved["model"])
    opt.load_state_dict(saved["optimizer"])
    sched.load_state_dict(saved["scheduler"])
    state = {k: saved[k] for k in state}
    log.info("resumed from %s at epoch %d", ckpt, state["epoch"])
    return state, state["epoch"]


def _fit(model_cfg, cfg: TrainConfig, data: TSData, device, ckpt, progress_bar) -> dict:
    from kairo._progress import progress

    if cfg.val_fraction > 0:
        tr, va = stratified_split(data.y, cfg.val_fraction, cfg.seed)
    else:
        tr, va = np.arange(len(data)), np.arange(0)
    # the recipe ("auto" decided) from the series trained on, not the hold-out; run.json, the
    # checkpoint and the model record it
    stats = series_stats(data, tr)
    recipe = resolve_recipe(stats, model_cfg, cfg)
    cfg = resolved_train(cfg, recipe)
    scaling = {"znorm": recipe["znorm"]}
    if scaling["znorm"] == "channel":
        mean, std = channel_stats(data.x[tr], None if data.mask is None else data.mask[tr])
        scaling.update(znorm_mean=mean.tolist(), znorm_std=std.tolist())
    x = scale_input(data.x, data.mask, scaling)
    xt = torch.from_numpy(x).to(device)                                         # [N, C, T]
    yt = torch.from_numpy(data.y).to(device)                                    # [N]
    mt = None if data.mask is None else torch.from_numpy(data.mask).to(device)  # [N, T]
    va_t = torch.from_numpy(va).to(device)
    tr_t = torch.from_numpy(tr).to(device)
    xv, yv = xt[va_t], yt[va_t]
    mv = None if mt is None else mt[va_t]

    smooth = stats.smoothness
    torch.manual_seed(cfg.seed)
    model = _build(model_cfg, data.n_channels, data.n_classes, data.n_steps).to(device)
    opt = torch.optim.AdamW(param_groups(model, cfg.weight_decay), lr=cfg.lr)
    epochs = n_epochs(cfg, len(tr))
    sched = _scheduler(opt, cfg, epochs * len(_batches(len(tr), cfg.batch)))
    loss_fn = nn.CrossEntropyLoss(label_smoothing=cfg.label_smoothing)
    # the resolved scaling and head, so that "auto" and what it chose are the same run
    run = {"train_config": dataclasses.asdict(cfg),
           "model_config": dataclasses.asdict(model_cfg),
           "arch": {**model.arch, **model.resolved}, "data": _fingerprint(data)}
    state = {"epoch": 0, "history": [], "best_loss": math.inf, "best_epoch": 0, "best_state": None,
          "bad": 0, "finished": False, "stopped_early": False,
          # training time and series over every process that worked on this run, so a
          # resumed run reports its whole training, not the few seconds after the resume
          "train_seconds": 0.0, "n_trained": 0}
    state, resumed = _resume(ckpt, run, model, opt, sched, state)

    def save():
        save_checkpoint(ckpt, {"version": 1, "run": run, "model": _cpu_state(model),
                               "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                               **state}, kind=_CKPT_FORMAT)

    t0 = time.perf_counter()
    seconds_before = state["train_seconds"]
    start = state["epoch"]
    bar = progress(range(start, epochs), total=epochs - start, desc="train",
                   enabled=progress_bar)
    for epoch in bar:
        if state["finished"]:
            break
        torch.manual_seed(_epoch_seed(cfg.seed, epoch))     # dropout etc., epoch by epoch
        order = torch.from_numpy(
            np.random.default_rng(_epoch_seed(cfg.seed, epoch)).permutation(tr)).to(device)
        lr = opt.param_groups[0]["lr"]
        train_loss = _train_epoch(model, opt, sched, loss_fn, xt, yt, mt, order, cfg)
        state["n_trained"] += len(tr)
        val_loss, val_acc = _validate(model, xv, yv, mv) if len(va) else (None, None)
        _record_epoch(state, model, sched, cfg, epoch + 1, epochs, train_loss, val_loss, val_acc,
                      lr)
        if hasattr(bar, "set_postfix"):
            shown = {"loss": f"{train_loss:.4f}"}
            if val_loss is not None:
                shown.update(val_loss=f"{val_loss:.4f}", val_acc=f"{val_acc:.3f}")
            bar.set_postfix(refresh=False, **shown)
        state["train_seconds"] = seconds_before + time.perf_counter() - t0
        if ckpt is not None and (state["finished"] or (epoch + 1) % cfg.checkpoint_every == 0):
            save()
    if hasattr(bar, "close"):
        bar.close()
    secs = state["train_seconds"] = seconds_before + time.perf_counter() - t0
    n_trained = state["n_trained"]
    if state["best_state"] is not None:
        model.load_state_dict(state["best_state"])
    if cfg.bn_stats == "recompute":
        recompute_bn_stats(model, xt[tr_t], None if mt is None else mt[tr_t])
    model.eval()
    meta = {"dataset": data.name, "classes": list(data.classes),
            "n_channels": data.n_channels, "max_len": data.n_steps, **scaling,
            "sam": cfg.sam, "mixup": cfg.mixup, "cutmix": cfg.cutmix,
            "time_warp": cfg.time_warp,
            "smoothness": None if math.isnan(smooth) else smooth,
            **model.resolved, **_layout(model, device),
            "best_epoch": state["best_epoch"], "epochs_run": state["epoch"],
            "train_config": run["train_config"], "model_config": run["model_config"]}
    model.fit_meta = meta
    best = state["history"][state["best_epoch"] - 1] if state["best_epoch"] else {}
    log.info("trained %d epoch%s in %.1f s; best epoch %d%s", state["epoch"],
             "s" * (state["epoch"] != 1), secs, state["best_epoch"],
             f" (val loss {best['val_loss']:.4f}, val acc {best['val_acc']:.3f})"
             if best.get("val_loss") is not None else "")
    return {"model": model, "history": state["history"], "best_epoch": state["best_epoch"],
            "stopped_early": state["stopped_early"], "resumed_from": resumed, "seconds": secs,
            "samples_per_s": n_trained / secs if secs > 0 and n_trained else None,
            "meta": meta, "fit_index": tr}


@torch.no_grad()
def recompute_bn_stats(model: nn.Module, x: torch.Tensor, mask: torch.Tensor | None = None,
                       batch: int = 256) -> int:
    """Replace every batch norm's running mean and variance by their values over ``x``
    ([N, C, T], already scaled as the model sees it; ``mask`` [N, T]) and leave the model in
    eval mode. Returns the number of batch-norm layers recomputed (0: nothing to do).

    The running averages left by training weight the last ~10 batches (momentum 0.1); on the
    small UCR sets (batches of 8 series) they are noisy, and they lag the weights they are
    used with. Here each layer sees the whole split ("precise BN", Wu & Johnson 2021): one
    pass in ceil(N / ``batch``) chunks of nearly equal size, averaged with equal weights
    (``momentum=None``); with N ≤ batch the statistics are those of the split itself.
    """
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)
           and m.track_running_stats]
    if not bns:
        model.eval()
        return 0
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ConfigError(f"batch must be an integer ≥ 1, got {batch!r}")
    if x.ndim != 3 or len(x) == 0:
        raise DataError(f"recompute_bn_stats needs series [N, C, T] with N ≥ 1, got shape "
                        f"{tuple(x.shape)}")
    momenta = [m.momentum for m in bns]
    # train mode makes the blocks use batch statistics (and not their fused eval path); the
    # dropout layers stay off, so the pass is deterministic
    model.train()
    for m in model.modules():
        if isinstance(m, (nn.Dropout, MultiHeadAttention)):
            m.eval()
    try:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None
        # chunks of (nearly) equal size, so that their equal weights are the split's
        for idx in torch.arange(len(x), device=x.device).tensor_split(-(-len(x) // batch)):
            model(x[idx], None if mask is None else mask[idx])
    finally:
        for m, mom in zip(bns, momenta):
            m.momentum = mom
        model.eval()
    return len(bns)


def _layout(model: nn.Module, device) -> dict:
    """The memory layout a ResNet encoder computes in on ``device`` (none for others)."""
    from kairo.tsc._encoders import ResNet1D, resnet_layout

    enc = getattr(model, "encoder", None)
    return ({"layout": resnet_layout(enc.layout, device)} if isinstance(enc, ResNet1D) else {})


def _check_resume(path: Path, saved: dict, now: dict) -> None:
    """The checkpoint's run must be this one: same training options (those that change the
    trajectory), architecture and data."""
    def free(tc):
        return {k: v for k, v in tc.items() if k not in _RESUME_FREE}

    hint = ("delete it to start afresh, or use another checkpoint path (with kairo tsc train: "
            "another --out)")
    for what, a, b in (("training options", free(saved["train_config"]),
                        free(now["train_config"])),
                       ("architecture", saved["arch"], now["arch"]),
                       ("data", saved["data"], now["data"])):
        check_compatible(a, b, path, what=f"checkpoint ({what})", hint=hint)


# ---------------------------------------------------------------------------- ensembles
def ensemble_checkpoints(checkpoint, n: int) -> list[Path]:
    """Where each of ``n`` members of `fit_ensemble` keeps its checkpoint: member 0 in
    ``checkpoint`` itself (it is the model a one-model run with that seed trains, so either
    resumes the other), member i in ``<checkpoint without .pt>-member<i>.pt``."""
    p = Path(checkpoint)
    return [p] + [p.with_name(f"{p.name.removesuffix('.pt')}-member{i}.pt") for i in range(1, n)]


def _fit_member(job: dict) -> dict:
    """One member of `fit_ensemble` (in a worker process): `fit`'s result with the weights
    as a CPU state dict, which crosses processes without the module."""
    res = fit(job["model_cfg"], job["train_cfg"], job["data"], checkpoint=job["checkpoint"],
              progress_bar=False)
    return {**res, "model": _cpu_state(res["model"])}


def fit_ensemble(model_cfg, train_cfg: TrainConfig, data: TSData, n: int, *, workers: int = 0,
                 executor: str = "auto", checkpoint=None,
                 progress_bar: bool | None = None) -> dict:
    """Train ``n`` classifiers with seeds ``train_cfg.seed`` … ``seed + n − 1`` through
    `kairo._jobs.map_jobs` and average them in a :class:`TSEnsemble`.

    Member i is the model ``fit(model_cfg, replace(train_cfg, seed=seed + i), data)`` gives,
    weight for weight (same device and thread count): its own validation hold-out, batch
    order and input statistics. With ``n`` > 1, ``threads`` 0 is read as one torch thread per
    member, so the members do not depend on ``workers`` or the executor.

    Parameters
    ----------
    model_cfg : ModelConfig
    train_cfg : TrainConfig
    data : TSData
    n : int
        Members, ≥ 1.
    workers, executor
        As for `kairo._jobs.map_jobs`: members trained at once (0 = one per core) and where
        (auto, processes, ray, serial).
    checkpoint : path, optional
        Each member checkpoints to its own file (`ensemble_checkpoints`) and resumes from it
        as `fit` does.
    progress_bar : bool, optional
        One bar over the members (None: on a terminal; False: none).

    Returns
    -------
    dict with ``model`` (the TSEnsemble in eval mode, ``fit_meta`` set: member 0's, with a
    ``members`` list of each member's seed and epochs),
    ``members`` (per member: `fit`'s dict with ``model`` the member inside the ensemble, and
    ``seed``), ``seeds``, ``seconds`` (wall clock), ``executor`` and ``workers`` (as
    resolved).
    """
    from kairo._jobs import map_jobs, resolve_executor
    from kairo.tsc._model import TSEnsemble

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError(f"ensemble must be an integer ≥ 1 (members), got {n!r}")
    if not isinstance(train_cfg, TrainConfig):
        raise ConfigError(f"train_cfg must be a TrainConfig, got {type(train_cfg).__name__}")
    if not isinstance(data, TSData):
        raise KairoError(f"data must be a TSData (see load_dataset / from_arrays), got "
                         f"{type(data).__name__}")
    kind, n_workers = resolve_executor(executor, workers, n)
    threads = train_cfg.threads or (1 if n > 1 else 0)
    seeds = [train_cfg.seed + i for i in range(n)]
    paths = ensemble_checkpoints(checkpoint, n) if checkpoint else [None] * n
    jobs = [{"model_cfg": model_cfg, "data": data, "checkpoint": paths[i],
             "train_cfg": dataclasses.replace(train_cfg, seed=s, threads=threads)}
            for i, s in enumerate(seeds)]
    t0 = time.perf_counter()
    results = map_jobs(_fit_member, jobs, workers=n_workers, executor=kind, desc="members",
                       progress_bar=progress_bar)
    secs = time.perf_counter() - t0
    device = _device(train_cfg.device)
    members = []
    # the caller's torch random stream is left as it was (building draws initial weights,
    # which the trained ones replace)
    with torch.random.fork_rng(devices=[]):
        for res in results:
            m = _build(model_cfg, data.n_channels, data.n_classes, data.n_steps)
            m.load_state_dict(res["model"])
            m.to(device).eval()
            m.fit_meta = res["meta"]
            members.append(m)
    model = TSEnsemble(members).to(device).eval()
    log.info("trained an ensemble of %d (seeds %d…%d) in %.1f s", n, seeds[0], seeds[-1], secs)
    return {"model": model,
            "members": [{**res, "model": m, "seed": s}
                        for res, m, s in zip(results, members, seeds)],
            "seeds": seeds, "seconds": secs, "executor": kind,
            "workers": n_workers if kind != "serial" else 1}


# ---------------------------------------------------------------------------- input scaling
def scale_input(x: np.ndarray, mask: np.ndarray | None, meta: dict) -> np.ndarray:
    """Scale series [n, C, T] as a model was trained to see them.

    ``meta["znorm"]``: "series" (each series and channel z-normalized on its own), "channel"
    (each channel with the training split's ``znorm_mean`` / ``znorm_std``), "none" or absent
    (unchanged).
    """
    mode = meta.get("znorm", "none")
    if mode == "series":
        return znormalize(x, mask)
    if mode == "channel":
        if not {"znorm_mean", "znorm_std"} <= set(meta):
            raise DataError("the model was trained with znorm='channel' but its metadata lacks "
                            "the channel statistics (znorm_mean, znorm_std); the file is "
                            "incomplete: train it again")
        return standardize(x, meta["znorm_mean"], meta["znorm_std"], mask)
    if mode == "none":
        return x
    raise DataError(f"the model's metadata names an unknown input scaling znorm={mode!r}; "
                    f"expected series, channel or none")
