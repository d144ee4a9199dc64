"""Logic-gate networks on MNIST: config, model, training with resumable checkpoints, and the
discrete circuit a trained model becomes."""

from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from kairo._errors import ConfigError, DataError, KairoError
from kairo._runs import atomic_write
from kairo.logic._circuit import Circuit
from kairo.logic._commands import LogicTrainConfig
from kairo.logic._gates import GATE_NAMES, N_GATES
from kairo.logic._layers import (Binarize, GroupSum, LogicConv2d, LogicDense, OrPooling2d,
                                  fused_threads)

__all__ = ["LogicTrainConfig", "LogicNet", "build_model", "load_data", "train", "to_circuit",
           "predict", "save_checkpoint", "load_checkpoint"]

OR = GATE_NAMES.index("OR")


class LogicNet(nn.Module):
    """Binarize → [LogicConv2d → OrPooling2d] × conv_blocks → LogicDense × layers → GroupSum.

    Without kernels (``cfg.kernels`` = 0) ``features`` is empty and the dense layers read the
    bits directly. With kernels the thresholds are the channels of the first convolution:
    bits (n, T·784) threshold-major → (n, T, 28, 28); the last feature map is flattened
    channel-major (torch's ``flatten``) for the dense layers.
    """

    def __init__(self, n_pixels: int, cfg: LogicTrainConfig):
        super().__init__()
        self.binarize = Binarize(cfg.thresholds)
        rng = np.random.default_rng(np.random.SeedSequence([cfg.seed, 11]))
        n_levels = self.binarize.n_levels
        side = math.isqrt(n_pixels)
        blocks = []
        if cfg.kernels:
            if side * side != n_pixels:
                raise ConfigError(f"convolutional models need square images, got {n_pixels} "
                                  f"pixels")
            c_in = n_levels
            for i in range(cfg.conv_blocks):
                c_out = cfg.kernels * cfg.conv_growth ** i
                conv = LogicConv2d(c_in, c_out, receptive=cfg.receptive, depth=cfg.conv_depth,
                                   stride=cfg.conv_stride, padding=cfg.padding,
                                   groups=cfg.conv_groups, pairing=cfg.pairing,
                                   residual_init=cfg.residual_init, mode=cfg.gate_mode,
                                   tau=cfg.gumbel_tau, seed=rng, backend=cfg.backend)
                blocks += [conv, OrPooling2d(2, 2, backend=cfg.backend)]
                c_in = c_out
            h = side
            for m in blocks:
                h = m.out_size(h, h)[0]
            n_flat = c_in * h * h
        else:
            n_flat = n_pixels * n_levels
        self.features = nn.Sequential(*blocks)
        sizes = [n_flat] + [cfg.hidden] * cfg.layers
        self.logic = nn.Sequential(*[
            LogicDense(i, o, pairing=cfg.pairing, residual_init=cfg.residual_init,
                       mode=cfg.gate_mode, tau=cfg.gumbel_tau, seed=rng, backend=cfg.backend)
            for i, o in zip(sizes[:-1], sizes[1:])])
        self.head = GroupSum(len(cfg.classes), cfg.tau)
        self.n_pixels, self.side = n_pixels, side

    def bits(self, images: torch.Tensor) -> torch.Tensor:
        return self.binarize(images)

    def gate_layers(self) -> list[nn.Module]:
        """Every layer with trainable gates, in order."""
        return [m for m in self.modules() if isinstance(m, (LogicConv2d, LogicDense))]

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.bits(images)                                        # (n, T·784)
        if len(self.features):
            x = x.reshape(x.shape[0], -1, self.side, self.side)      # (n, T, 28, 28)
            x = self.features(x).flatten(1)                          # (n, K·h·w)
        return self.head(self.logic(x))


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


def _eval_batch(model: LogicNet) -> int:
    # the torch conv path gathers (n, K, 2^(depth−1), H·W) per input side: keep it bounded
    return 2000 if not len(model.features) else 256


@torch.no_grad()
def predict(model: LogicNet, x: np.ndarray, *, batch: int | None = None) -> np.ndarray:
    """Class predictions of ``model`` as it is (train or eval mode), in memory-bounded batches."""
    batch = batch or _eval_batch(model)
    with fused_threads(model):
        out = [model(torch.from_numpy(np.array(x[s:s + batch]))).argmax(1).numpy()
               for s in range(0, len(x), batch)]
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


@torch.no_grad()
def accuracy(model: LogicNet, x: np.ndarray, y: np.ndarray, *, discrete: bool,
             batch: int | None = None) -> float:
    was = model.training
    model.train(not discrete)
    modes = [(m, m.mode) for m in model.gate_layers()]
    if not discrete:                       # the relaxed model, without Gumbel noise
        for m, _ in modes:
            m.mode = "soft"
    try:
        hits = int((predict(model, x, batch=batch) == y).sum())
    finally:
        model.train(was)
        for m, mode in modes:
            m.mode = mode
    return hits / max(1, len(y))


# ---------------------------------------------------------------------------- checkpoints
def save_checkpoint(path, model, optimizer, cfg: LogicTrainConfig, it: int, history: list,
                    rng_state, best: dict | None = None, branch: dict | None = None) -> None:
    """Atomic: write a temp file in the same folder, then rename over the old checkpoint.

    ``best`` ({"iter", "val_discrete", "model"}): with ``keep_best``, the weights of the best
    discrete validation accuracy so far; ``model`` stays the latest (resuming continues it)."""
    path = Path(path)
    state = {"format": "kairo.logic.checkpoint", "version": 1, "iter": it,
             "arch": cfg.arch(), "config": dataclasses.asdict(cfg),
             "model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "history": history, "torch_rng": rng_state, "best": best, "branch": branch}
    atomic_write(path, lambda tmp: torch.save(state, tmp))


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


# what, besides the iteration schedules, makes a run's first iterations what they were
_HISTORY_FIELDS = ("classes", "tau", "gate_mode", "gumbel_tau", "shift", "batch",
                   "residual_init", "val_fraction")


def branch_info(old: LogicTrainConfig, new: LogicTrainConfig, start: int) -> dict:
    """Which settings differ between the run a checkpoint came from and the run branching
    from it, over the iterations before ``start``. None differing: a single run of ``new``
    from scratch replays the branched one exactly (the schedules are functions of the
    iteration alone)."""
    differs = [f for f in _HISTORY_FIELDS if getattr(old, f) != getattr(new, f)]
    if any(lr_at(old, i) != lr_at(new, i) for i in range(start)):
        differs.append("learning-rate schedule")
    if any(gate_temperature_at(old, i) != gate_temperature_at(new, i) for i in range(start)):
        differs.append("gate-temperature schedule")
    if any(fixed_layers(old, i) != fixed_layers(new, i) for i in range(start)):
        differs.append("fixed-layer schedule")
    return {"iter": start, "same_as_single_run": not differs, "differs_before": differs}


def describe_branch(branch: dict) -> str:
    """One line on where a branched run started and whether a single run replays it."""
    return (f"branched from {branch['from']} at iteration {branch['iter']} ("
            + ("a single run of this config replays it" if branch["same_as_single_run"]
               else "before it the runs differ in " + ", ".join(branch["differs_before"]))
            + ")")


def model_from_checkpoint(path) -> tuple[LogicNet, LogicTrainConfig]:
    state = load_checkpoint(path)
    cfg = _config_of(state, path)
    model = build_model(cfg)
    best = state.get("best")
    try:                    # a keep_best run's model is its best-validation weights
        model.load_state_dict(best["model"] if cfg.keep_best and best else state["model"])
    except RuntimeError as exc:
        raise DataError(f"checkpoint {path}: weights do not fit the architecture ({exc})") \
            from None
    model.eval()
    return model, cfg


# ---------------------------------------------------------------------------- training
def lr_at(cfg: LogicTrainConfig, it: int) -> float:
    """Learning rate of iteration ``it`` (0-based): constant, then with ``lr_decay_from`` ≥ 0
    a cosine from ``lr`` down to 0 over the remaining iterations. A function of the iteration
    alone, so a resumed run follows the same schedule."""
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


def random_shift(x: np.ndarray, max_shift: int, rng: np.random.Generator) -> np.ndarray:
    """Each image of ``x`` (n, 784 or 28×28, uint8) moved by its own random (dy, dx) in
    −max_shift…max_shift, zeros shifted in."""
    n = x.shape[0]
    img = x.reshape(n, 28, 28)
    p = max_shift
    padded = np.zeros((n, 28 + 2 * p, 28 + 2 * p), np.uint8)
    padded[:, p:p + 28, p:p + 28] = img
    dy, dx = rng.integers(0, 2 * p + 1, size=(2, n))
    # window origins per image; a gather of rows then columns
    rows = (dy[:, None] + np.arange(28))[:, :, None]                        # [n, 28, 1]
    cols = (dx[:, None] + np.arange(28))[:, None, :]                        # [n, 1, 28]
    return padded[np.arange(n)[:, None, None], rows, cols].reshape(x.shape)


def train(cfg: LogicTrainConfig, *, checkpoint=None, data=None, log=print,
          progress_bar: bool | None = None) -> dict:
    """Train; resume from ``checkpoint`` when it holds an earlier state of the same run.

    Returns {"model", "history" (iter, loss, relaxed/discrete validation accuracy),
    "resumed_from", "seconds", "iters_per_s", "kept_iter"}. With ``cfg.keep_best`` the model
    ends with the weights of the evaluation with the highest discrete validation accuracy
    (the first of equals; ``kept_iter``), else with the last ones (``kept_iter`` None).
    """
    from kairo._progress import progress

    data = data or load_data(cfg)
    xtr, ytr = data["train"]
    model = build_model(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    start, history, resumed, best, branch = 0, [], None, None, None
    gen = torch.Generator().manual_seed(cfg.seed)
    ckpt = Path(checkpoint) if checkpoint else None
    source = ckpt if ckpt is not None and ckpt.is_file() else None
    if source is None and cfg.init_from:
        source = Path(cfg.init_from)
    if source is not None:
        state = load_checkpoint(source, cfg)
        start, history = int(state["iter"]), list(state["history"])
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
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        gen.set_state(state["torch_rng"])
        resumed = start
        best = state.get("best") if source == ckpt else None   # the old run's best is not ours
        log(f"resumed from {ckpt} at iteration {start}" if source == ckpt
            else describe_branch(branch))
    model.train()
    gate_layers = model.gate_layers()
    loss_fn = nn.CrossEntropyLoss()
    t0 = time.perf_counter()
    bar = progress(range(start, cfg.iters), total=cfg.iters - start, desc="train",
                   enabled=progress_bar)
    with fused_threads(model):
        for it in bar:
            idx = torch.randint(0, len(ytr), (cfg.batch,), generator=gen).numpy()
            xb = xtr[idx]
            if cfg.shift:
                # seeded by (seed, iteration): a resumed run draws the same shifts
                xb = random_shift(xb, cfg.shift,
                                  np.random.default_rng(np.random.SeedSequence([cfg.seed, it])))
            xb, yb = torch.from_numpy(xb), torch.from_numpy(ytr[idx])
            for group in opt.param_groups:
                group["lr"] = lr_at(cfg, it)
            temperature = gate_temperature_at(cfg, it)
            fixed = fixed_layers(cfg, it)
            for i, layer in enumerate(gate_layers):
                layer.temperature = temperature
                layer.fixed = i in fixed
            loss = loss_fn(model(xb), yb)
            if loss.requires_grad:              # not when every gate layer is fixed
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
            done = it + 1
            if done % cfg.eval_every == 0 or done == cfg.iters:
                xv, yv = data["val"]
                history.append({"iter": done, "loss": loss.item(),
                                "val_relaxed": accuracy(model, xv, yv, discrete=False),
                                "val_discrete": accuracy(model, xv, yv, discrete=True)})
                if cfg.keep_best and (best is None or
                                      history[-1]["val_discrete"] > best["val_discrete"]):
                    best = {"iter": done, "val_discrete": history[-1]["val_discrete"],
                            "model": {k: v.detach().clone()
                                      for k, v in model.state_dict().items()}}
            if ckpt is not None and (done % cfg.checkpoint_every == 0 or done == cfg.iters):
                save_checkpoint(ckpt, model, opt, cfg, done, history, gen.get_state(),
                                best if cfg.keep_best else None, branch)
            if ckpt is not None and done in cfg.snapshots:
                save_checkpoint(snapshot_path(ckpt, done), model, opt, cfg, done, history,
                                gen.get_state(), best if cfg.keep_best else None, branch)
    secs = time.perf_counter() - t0
    kept = None
    if cfg.keep_best and best is not None:
        model.load_state_dict(best["model"])
        kept = int(best["iter"])
        log(f"kept the weights of iteration {kept} (discrete validation "
            f"{best['val_discrete']:.2%}, the best of {len(history)} evaluations)")
    model.eval()
    return {"model": model, "history": history, "resumed_from": resumed, "seconds": secs,
            "iters_per_s": (cfg.iters - start) / secs if secs > 0 else float("nan"),
            "kept_iter": kept, "branch": branch}


WIRE_OPS = (GATE_NAMES.index("A"), GATE_NAMES.index("B"))      # gates that are wires


def layer_report(model: LogicNet, cfg: LogicTrainConfig, tie: float = 0.05) -> list[dict]:
    """Per gate layer: its gates, how many are wires (A or B: the simplifier removes them),
    how many copies of each the circuit holds (positions of a conv layer), and the share whose
    two largest logits lie within ``tie`` (undecided gates: the relaxed network mixes two
    gates there that the circuit cannot). The last is where a discretization gap comes from."""
    names = {m: n for n, m in model.named_modules()}
    copies, side = {}, model.side
    for m in model.features:                 # conv → pooling blocks, sizes as they go
        if isinstance(m, LogicConv2d):
            ho, wo = m.out_size(side, side)
            copies[m] = ho * wo
        side = m.out_size(side, side)[0]
    out = []
    for i, layer in enumerate(model.gate_layers()):
        top = layer.weight.detach().reshape(-1, N_GATES).topk(2, dim=-1).values
        ops = layer.ops().reshape(-1)
        out.append({"layer": names[layer], "gates": int(ops.size),
                    "copies": int(copies.get(layer, 1)),
                    "wires": int(np.isin(ops, WIRE_OPS).sum()),
                    "near_tie_share": int(((top[:, 0] - top[:, 1]) < tie).sum()) / len(top),
                    "fixed_from": int(cfg.fix_at[i]) if i < len(cfg.fix_at) else None})
    return out


# ---------------------------------------------------------------------------- circuits
class _Netlist:
    """Gates appended in topological order; ``add`` returns the new gates' node ids."""

    def __init__(self, n_inputs: int):
        self.n_inputs, self.n_nodes = n_inputs, n_inputs
        self.ops: list[np.ndarray] = []
        self.a: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        self._zero: int | None = None

    def add(self, ops, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64))
        ops = np.broadcast_to(np.asarray(ops, dtype=np.uint8), a.shape)
        self.ops.append(ops.ravel())
        self.a.append(a.ravel())
        self.b.append(b.ravel())
        ids = self.n_nodes + np.arange(a.size, dtype=np.int64).reshape(a.shape)
        self.n_nodes += a.size
        return ids

    def zero(self) -> int:
        """A constant-0 node (FALSE gate on input 0; ``simplify`` folds it away)."""
        if self._zero is None:
            self._zero = int(self.add(0, 0, 0))
        return self._zero

    def circuit(self, outputs: np.ndarray, n_classes: int, meta: dict) -> Circuit:
        def cat(v, dt):
            return np.concatenate(v) if v else np.zeros(0, dtype=dt)

        return Circuit(n_inputs=self.n_inputs, ops=cat(self.ops, np.uint8),
                       a=cat(self.a, np.int64), b=cat(self.b, np.int64),
                       outputs=np.asarray(outputs, dtype=np.int64).ravel(),
                       n_classes=n_classes, meta=meta)


def _conv_circuit(net: _Netlist, layer: LogicConv2d, nodes: np.ndarray) -> np.ndarray:
    """Every position of every kernel instantiates its own tree: (C, H, W) → (K, H', W')."""
    _, h, w = nodes.shape
    ho, wo = layer.out_size(h, w)
    p, s = layer.padding, layer.stride
    if p:
        nodes = np.pad(nodes, ((0, 0), (p, p), (p, p)), constant_values=net.zero())
    ch = layer.channels.numpy()[:, np.arange(2 ** layer.depth) % 2]        # (K, S)
    dy, dx = layer.dy.numpy(), layer.dx.numpy()
    ys = (np.arange(ho) * s)[None, None, :, None] + dy[:, :, None, None]     # (K, S, H', 1)
    xs = (np.arange(wo) * s)[None, None, None, :] + dx[:, :, None, None]     # (K, S, 1, W')
    inp = nodes[ch[:, :, None, None], ys, xs]                                 # (K, S, H', W')
    ops = layer.ops()[:, :, None, None]                                       # (K, G, 1, 1)
    a, b, lo = inp[:, 0::2], inp[:, 1::2], 0
    while True:
        size = a.shape[1]
        out = net.add(ops[:, lo:lo + size], a, b)                             # (K, size, H', W')
        lo += size
        if size == 1:
            return out[:, 0]
        a, b = out[:, 0::2], out[:, 1::2]


def _pool_circuit(net: _Netlist, layer: OrPooling2d, nodes: np.ndarray) -> np.ndarray:
    """OR over each window as a balanced tree of two-input OR gates: (C, H, W) → (C, H', W')."""
    _, h, w = nodes.shape
    ho, wo = layer.out_size(h, w)
    k, s = layer.kernel, layer.stride
    terms = [nodes[:, dy:dy + s * (ho - 1) + 1:s, dx:dx + s * (wo - 1) + 1:s]
             for dy in range(k) for dx in range(k)]
    while len(terms) > 1:
        nxt = [net.add(OR, terms[i], terms[i + 1]) for i in range(0, len(terms) - 1, 2)]
        terms = nxt + terms[len(nxt) * 2:]
    return terms[0]


def to_circuit(model: LogicNet, meta: dict | None = None) -> Circuit:
    """The discrete network as a netlist: input bits (threshold-major) → gates → outputs.

    Layer by layer in the model's order; conv trees are instantiated at every position,
    padding reads one constant-0 node, OR pooling becomes OR gates.
    """
    n_in = model.binarize.n_levels * model.n_pixels
    net = _Netlist(n_in)
    nodes = np.arange(n_in, dtype=np.int64)
    if len(model.features):
        nodes = nodes.reshape(model.binarize.n_levels, model.side, model.side)
        for layer in model.features:
            if isinstance(layer, LogicConv2d):
                nodes = _conv_circuit(net, layer, nodes)
            elif isinstance(layer, OrPooling2d):
                nodes = _pool_circuit(net, layer, nodes)
            else:
                raise KairoError(f"to_circuit: no circuit for layer {type(layer).__name__}")
        nodes = nodes.reshape(-1)                    # channel-major, as torch's flatten
    for layer in model.logic:
        nodes = net.add(layer.ops(), nodes[layer.ia.numpy()], nodes[layer.ib.numpy()])
    return net.circuit(nodes, model.head.k,
                       {"thresholds": model.binarize.t.numpy().astype(int).tolist(),
                        "n_pixels": model.n_pixels, **(meta or {})})


def image_bits(circuit_or_thresholds, images: np.ndarray) -> np.ndarray:
    """uint8 images → the circuit's input bits (threshold-major, as ``Binarize``)."""
    th = circuit_or_thresholds.meta["thresholds"] if isinstance(circuit_or_thresholds, Circuit) \
        else circuit_or_thresholds
    x = check_images(images)
    return (x[:, None, :] > np.asarray(th)[None, :, None]).reshape(x.shape[0], -1)
