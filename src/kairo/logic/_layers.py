"""Differentiable logic-gate layers (Petersen et al., NeurIPS 2022 and 2024) in PyTorch.

A neuron reads two fixed inputs a, b ∈ [0, 1] and holds 16 logits, one per Boolean function.
Training mixes the 16 relaxed gates with softmax weights p; because every relaxed gate is
affine in {1, a, b, ab} (see ``_gates``), the mixture is c₀ + c_a·a + c_b·b + c_ab·ab with
c = p @ COEFFS — four fused multiply-adds per neuron and sample instead of sixteen gates, and
autograd's backward is just as small. After training each neuron is fixed to its most likely
gate and the network is a Boolean circuit (``to_circuit``).

``LogicConv2d`` shares one small tree of gates per kernel over all positions of a feature map
(the convolutional paper), ``OrPooling2d`` is max pooling (a relaxed OR). Every layer has two
implementations of the same arithmetic: pure PyTorch (the reference) and fused CPU loops in
``_kernels`` (numba), chosen by ``engine``: "torch", "fused" or "auto" (fused when numba
imports and the input is a float32/float64 CPU tensor).

What changes during training is passed to ``forward`` by the trainer, never set on a layer:
``temperature`` (the gate softmax is taken of logits / temperature), ``fixed`` (the layer
computes its argmax gates in training too, and its logits get no gradient) and ``mode``
(override the layer's gate mode, e.g. "soft" to evaluate the relaxed network without
Gumbel noise).
"""

from __future__ import annotations

import contextlib

import numpy as np
import torch
from torch import nn

from kairo._errors import ConfigError, KairoError
from kairo.logic._config import ENGINES, GATE_PARAMS, PAIRINGS, WIRINGS
from kairo.logic._gate_params import (_OP_OF_TABLE, _check_mode, _init_weight, _light_probs,
                                      _relaxed)
from kairo.logic._gates import COEFFS, N_GATES

__all__ = ["LogicDense", "LogicConv2d", "OrPooling2d", "GroupSum", "Binarize", "pairings",
           "candidate_sets",
           "conv_out_size", "fused_available", "fused_threads"]

_KERNELS: list = []                             # [module or None], filled on first use
# a learned conv wiring's drawn channel / position starts this many logits ahead of the rest
LEARNED_START = 1.0


def _load_kernels():
    """The ``_kernels`` module, or None when numba is not installed (imported once)."""
    if not _KERNELS:
        try:
            from kairo.logic import _kernels
        except ImportError:
            _kernels = None
        _KERNELS.append(_kernels)
    return _KERNELS[0]


def fused_available() -> bool:
    """True when the fused CPU kernels (numba) can be used."""
    return _load_kernels() is not None


def fused_threads(model: nn.Module):
    """Context for a training loop: :func:`_kernels.training_threads` when any layer of
    ``model`` runs fused, else nothing."""
    if fused_available() and any(getattr(m, "engine", "torch") != "torch"
                                 for m in model.modules()):
        return _load_kernels().training_threads()
    return contextlib.nullcontext()


def _check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ConfigError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}")
    if engine == "fused" and not fused_available():
        raise ConfigError("engine='fused' needs numba (pip install numba); use "
                          "engine='torch' or 'auto' to run without it")
    return engine


def _use_fused(engine: str, x: torch.Tensor) -> bool:
    if engine == "torch":
        return False
    ok = x.device.type == "cpu" and x.dtype in (torch.float32, torch.float64)
    if engine == "fused" and not ok:
        raise KairoError(f"the fused kernels run on float32/float64 CPU tensors, got "
                         f"{x.dtype} on {x.device}; use engine='torch' or 'auto'")
    return ok and fused_available()


class _GateLayer(nn.Module):
    """What dense and convolutional gate layers share: logits → mixture, modes, ops."""

    weight: nn.Parameter          # (..., 16) logits, or (..., 4) with param "light"

    def _setup(self, mode: str, tau: float, engine: str, param: str = "softmax") -> None:
        _check_mode(mode)
        if tau <= 0:
            raise ConfigError(f"gumbel temperature must be > 0, got {tau}")
        if param not in GATE_PARAMS:
            raise ConfigError(f"gate parametrization must be one of {', '.join(GATE_PARAMS)}; "
                              f"got {param!r}")
        if param == "light" and mode == "gumbel":
            raise ConfigError("gate mode gumbel samples one of 16 logits; the light "
                              "parametrization has 4 (use soft or hard)")
        self.mode, self.tau, self.engine = mode, float(tau), _check_engine(engine)
        self.param = param
        self.register_buffer("coeffs", torch.tensor(COEFFS, dtype=torch.float32))

    def op_probs(self, *, temperature: float = 1.0) -> torch.Tensor:
        """(..., 16): each gate's probability of each of the 16 functions, by op code: the
        softmax of its logits, or (light) the product of its four entry probabilities."""
        if self.param == "light":
            return _light_probs(self.weight, temperature)
        return torch.softmax(self.weight / temperature, dim=-1)

    def gate_probs(self, *, temperature: float = 1.0, fixed: bool = False,
                   mode: str | None = None) -> torch.Tensor:
        """(..., 16): the mixture used in training mode, one-hot in eval mode or when
        ``fixed``; ``temperature`` divides the logits, ``mode`` overrides the layer's."""
        if not self.training or fixed:
            return nn.functional.one_hot(self._op_tensor(), N_GATES).to(self.weight.dtype)
        mode = _check_mode(mode) if mode is not None else self.mode
        if self.param == "softmax":
            return _relaxed(self.weight, mode, temperature, self.tau)
        if mode == "gumbel":
            raise ConfigError("gate mode gumbel needs the softmax parametrization")
        soft = _light_probs(self.weight, temperature)
        if mode == "hard":                  # the discrete forward, the entries' gradients back
            hard = nn.functional.one_hot(self._op_tensor(), N_GATES).to(soft.dtype)
            return hard + soft - soft.detach()
        return soft

    def _op_tensor(self) -> torch.Tensor:
        w = self.weight.detach()
        if self.param == "light":           # entry i is 1 where its logit is > 0
            table = ((w > 0).to(torch.int64) << torch.arange(4, device=w.device)).sum(-1)
            return _OP_OF_TABLE.to(w.device)[table]
        return w.argmax(-1)

    def near_ties(self, tie: float) -> torch.Tensor:
        """Per gate, whether its decision is within ``tie`` of another: the two largest
        logits (softmax), or an entry's two outcomes, logits ±w apart (light)."""
        w = self.weight.detach().reshape(-1, self.weight.shape[-1])
        if self.param == "light":
            return (2 * w.abs().min(-1).values) < tie
        top = w.topk(2, dim=-1).values
        return (top[:, 0] - top[:, 1]) < tie

    def gate_coeffs(self, dtype: torch.dtype, **gates) -> torch.Tensor:
        """(..., 4): the affine coefficients (c₀, c_a, c_b, c_ab) of every gate
        (``gates``: the arguments of :meth:`gate_probs`)."""
        return self.gate_probs(**gates).to(dtype) @ self.coeffs.to(dtype)

    def ops(self) -> np.ndarray:
        """The discrete gate of every neuron (argmax of its logits; light: the truth table
        of its positive entries)."""
        return self._op_tensor().cpu().numpy().astype(np.uint8)


def pairings(n_in: int, n_out: int, kind: str, rng: np.random.Generator
             ) -> tuple[np.ndarray, np.ndarray]:
    """Input indices (a, b) for ``n_out`` neurons over ``n_in`` inputs, a ≠ b when n_in > 1.

    ``random``: independent uniform draws. ``unique``: inputs are dealt from shuffled decks
    so every input is used before any is used twice (all of them when 2·n_out ≥ n_in; a random
    subset when n_in > 2·n_out — allowed, unlike implementations that refuse it).
    """
    if n_in < 1 or n_out < 1:
        raise ConfigError(f"layer sizes must be ≥ 1, got in={n_in}, out={n_out}")
    if kind not in PAIRINGS:
        raise ConfigError(f"pairing must be one of {', '.join(PAIRINGS)}; got {kind!r}")
    if kind == "random":
        a = rng.integers(0, n_in, n_out)
        b = rng.integers(0, n_in, n_out)
    else:
        reps = -(-2 * n_out // n_in)
        deck = np.concatenate([rng.permutation(n_in) for _ in range(reps)])[:2 * n_out]
        a, b = deck[:n_out].copy(), deck[n_out:].copy()
    if n_in > 1:                                   # a gate reading one input twice is wasted
        same = np.flatnonzero(a == b)
        while same.size:
            b[same] = rng.integers(0, n_in, same.size)
            same = same[a[same] == b[same]]
    return a.astype(np.int64), b.astype(np.int64)


def candidate_sets(n_in: int, n_out: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """(2, n_out, k) candidate sources of each gate input for learned wiring: dealt from
    shuffled decks of the ``n_in`` inputs, so every input is some input's candidate before any
    is twice (all of them when 2·n_out·k ≥ n_in), with no source twice in one set when
    k ≤ n_in."""
    if n_in < 1 or n_out < 1 or k < 1:
        raise ConfigError(f"learned wiring needs layer sizes and candidates ≥ 1, got in={n_in}, "
                          f"out={n_out}, candidates={k}")
    k_eff = min(k, n_in)
    reps = -(-2 * n_out * k_eff // n_in)
    deck = np.concatenate([rng.permutation(n_in) for _ in range(reps)])[:2 * n_out * k_eff]
    cand = deck.reshape(2 * n_out, k_eff)
    # a set holding a source twice (a deck boundary inside it) draws its repeats again
    for r in np.flatnonzero([len(set(row)) < k_eff for row in cand]):
        row = cand[r]
        keep = np.unique(row, return_index=True)[1]
        free = np.setdiff1d(np.arange(n_in), row)
        extra = rng.choice(free, k_eff - keep.size, replace=False)
        cand[r] = np.concatenate([row[np.sort(keep)], extra])
    if k_eff < k:                          # fewer inputs than candidates: some sets repeat
        cand = np.concatenate([cand, cand[:, rng.integers(0, k_eff, k - k_eff)]], axis=1)
    return cand.reshape(2, n_out, k).astype(np.int64)


class LogicDense(_GateLayer):
    """``n_out`` logic neurons, each reading two of ``n_in`` inputs.

    Input (n_samples, n_in) in [0, 1] → output (n_samples, n_out).

    Parameters
    ----------
    wiring : "random" or "unique" (inputs fixed at construction, see :func:`pairings`), or
        "learned": each input of each gate holds logits over ``candidates`` sources
        (:func:`candidate_sets`) and reads their relaxed mixture in training (softmax, or a
        Gumbel/argmax straight-through one-hot as ``mode`` says), its argmax source in eval
        mode or when ``fixed`` — the circuit's wiring (:meth:`sources`).
    candidates : sources per gate input with learned wiring
    residual_init : float
        If > 0, the logit of the pass-through gate A starts at this value and the others at 0
        (the convolutional paper's residual initialization: deep stacks start as identity).
        0 draws all logits from N(0, 1) as in the original paper.
    mode : "soft" (softmax mixture), "gumbel" (Gumbel-softmax with a straight-through
        hard gate in the forward pass: a sampled circuit) or "hard" (straight-through with
        the argmax gate forward: training sees exactly the discrete circuit it will become;
        meant for fine-tuning a soft-trained network, resumed with ``--gate-mode hard``).
    engine : "auto", "torch" or "fused" (see the module docstring)
    param : "softmax" (16 logits per gate) or "light" (4 logits per gate, one per truth-table
        entry 2a + b, each entry 1 with the sigmoid of its logit; the mixture is their
        multilinear interpolation, the circuit's gate the table of the positive logits).
        ``residual_init`` then sets the entries of A to ±residual_init.

    ``forward(x, temperature=1.0, fixed=False, mode=None)``: see the module docstring.
    """

    def __init__(self, n_in: int, n_out: int, *, wiring: str = "unique", candidates: int = 8,
                 residual_init: float = 0.0, mode: str = "soft", tau: float = 1.0,
                 seed: int | np.random.Generator = 0, engine: str = "auto",
                 param: str = "softmax"):
        super().__init__()
        self._setup(mode, tau, engine, param)
        if wiring not in WIRINGS:
            raise ConfigError(f"wiring must be one of {', '.join(WIRINGS)}; got {wiring!r}")
        if isinstance(candidates, bool) or not isinstance(candidates, (int, np.integer)) \
                or candidates < 1:
            raise ConfigError(f"candidates must be an integer ≥ 1, got {candidates!r}")
        rng = np.random.default_rng(seed)
        self.n_in, self.n_out, self.wiring = n_in, n_out, wiring
        if wiring == "learned":
            cand = torch.from_numpy(candidate_sets(n_in, n_out, int(candidates), rng))
            self.register_buffer("ca", cand[0].contiguous())
            self.register_buffer("cb", cand[1].contiguous())
            # equal logits: every candidate starts as likely; the gradient breaks the tie
            self.wire_a = nn.Parameter(torch.zeros(n_out, int(candidates)))
            self.wire_b = nn.Parameter(torch.zeros(n_out, int(candidates)))
        else:
            a, b = pairings(n_in, n_out, wiring, rng)
            self.register_buffer("ia", torch.from_numpy(a))
            self.register_buffer("ib", torch.from_numpy(b))
        self.weight = _init_weight((n_out,), residual_init, rng, param)
        self._users: tuple = ((), None)         # (wiring key, CSR) for the fused backward

    @property
    def learned(self) -> bool:
        return self.wiring == "learned"

    def extra_repr(self) -> str:
        k = f", candidates={self.ca.shape[1]}" if self.learned else ""
        light = ", param=light" if self.param == "light" else ""
        return (f"{self.n_in} → {self.n_out}, wiring={self.wiring}{k}, mode={self.mode}"
                f"{light}, engine={self.engine}")

    def sources(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(ia, ib): the input each gate reads as its a and b in the circuit (for learned
        wiring the most likely candidate of each)."""
        if not self.learned:
            return self.ia, self.ib
        pick = lambda cand, w: cand.gather(1, w.detach().argmax(1, keepdim=True))[:, 0]  # noqa: E731
        return pick(self.ca, self.wire_a), pick(self.cb, self.wire_b)

    @torch.no_grad()
    def redraw(self, fraction: float, rng: np.random.Generator
               ) -> list[tuple[nn.Parameter, torch.Tensor]]:
        """Learned wiring: replace the ``fraction`` least likely candidates of every gate
        input (at least one, never the most likely) with sources drawn at random among the
        inputs not in its set; a new candidate's logit starts at the lowest logit its set
        keeps, so the mixture barely moves and the gradient decides whether it rises.

        Returns (logits, mask of the replaced entries) per input, for resetting the
        optimizer's state there."""
        if not self.learned:
            raise ConfigError("redraw needs a layer with wiring='learned'")
        if not 0 < fraction < 1:
            raise ConfigError(f"fraction must be in (0, 1), got {fraction!r}")
        k = self.ca.shape[1]
        r = min(max(1, int(round(fraction * k))), k - 1)
        if self.n_in <= k or r < 1:                   # nothing outside the sets to draw
            return []
        out = []
        for cand, w in ((self.ca, self.wire_a), (self.cb, self.wire_b)):
            c, lw = cand.cpu().numpy().copy(), w.detach().cpu().numpy().copy()
            key = lw.copy()
            key[np.arange(key.shape[0]), lw.argmax(1)] = np.inf  # the circuit's source stays
            order = np.argsort(key, axis=1, kind="stable")
            drop, keep = order[:, :r], order[:, r:]
            new = rng.integers(0, self.n_in, size=drop.shape)
            # a drawn source already in the set, or drawn twice, leaves its slot as it was
            clash = (new[:, :, None] == c[:, None, :]).any(-1)
            clash |= np.triu(new[:, :, None] == new[:, None, :], 1).any(1)
            ri = np.broadcast_to(np.arange(c.shape[0])[:, None], drop.shape)[~clash]
            ci = drop[~clash]
            floor = np.take_along_axis(lw, keep, 1).min(1)
            c[ri, ci] = new[~clash]
            lw[ri, ci] = floor[ri]
            mask = np.zeros(c.shape, bool)
            mask[ri, ci] = True
            cand.copy_(torch.from_numpy(c))             # new versions: fused CSRs rebuild
            w.copy_(torch.from_numpy(lw))
            out.append((w, torch.from_numpy(mask).to(w.device)))
        return out

    def wire_probs(self, *, temperature: float = 1.0, mode: str | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """(n_out, candidates) × 2: the relaxed choice of each gate input among its
        candidates in training (learned wiring only)."""
        mode = _check_mode(mode) if mode is not None else self.mode
        return tuple(_relaxed(w, mode, temperature, self.tau) for w in (self.wire_a,
                                                                        self.wire_b))

    def _csr(self, kernels, key_a: torch.Tensor, key_b: torch.Tensor,
             ia: torch.Tensor | None = None, ib: torch.Tensor | None = None):
        """The CSR of ``ia``/``ib`` (default: ``key_a``/``key_b`` themselves), rebuilt when
        the tensors it derives from change (an optimizer step, load_state_dict, .to()):
        their versions and storage."""
        ia, ib = (key_a, key_b) if ia is None else (ia, ib)
        key = (key_a._version, key_b._version, key_a.data_ptr(), key_b.data_ptr())
        if self._users[0] != key:
            self._users = (key, kernels.dense_users(ia.reshape(-1), ib.reshape(-1),
                                                    self.n_in))
        return self._users[1]

    def forward(self, x: torch.Tensor, *, temperature: float = 1.0, fixed: bool = False,
                mode: str | None = None) -> torch.Tensor:
        c = self.gate_coeffs(x.dtype, temperature=temperature, fixed=fixed,
                             mode=mode)                             # (n_out, 4)
        fused = _use_fused(self.engine, x)
        if self.learned and self.training and not fixed:
            pa, pb = (p.to(x.dtype) for p in self.wire_probs(temperature=temperature,
                                                             mode=mode))
            if fused:
                kernels = _load_kernels()
                users = self._csr(kernels, self.ca, self.cb)
                return kernels.dense_learned(x.t(), c, self.ca, self.cb, pa, pb, users).t()
            a = (x[:, self.ca] * pa).sum(-1)                        # (n_samples, n_out)
            b = (x[:, self.cb] * pb).sum(-1)
            return c[:, 0] + c[:, 1] * a + c[:, 2] * b + c[:, 3] * (a * b)
        ia, ib = self.sources()
        if fused:
            kernels = _load_kernels()
            # learned wiring: the CSR of the chosen sources, cached while the logits stay
            users = self._csr(kernels, *((self.wire_a, self.wire_b) if self.learned
                                         else (self.ia, self.ib)), ia, ib)
            # neuron-major inside: x.t() of the previous fused layer's output is contiguous
            return kernels.dense(x.t(), c, ia, ib, users).t()
        a, b = x[:, ia], x[:, ib]                                   # (n_samples, n_out)
        return c[:, 0] + c[:, 1] * a + c[:, 2] * b + c[:, 3] * (a * b)


def conv_out_size(size: int, receptive: int, stride: int, padding: int) -> int:
    """Output length of a convolution (or pooling window) along one axis; < 1 if none fits."""
    return (size + 2 * padding - receptive) // stride + 1


def _deal_positions(n_slots: int, n_pos: int, kind: str, rng: np.random.Generator
                    ) -> np.ndarray:
    """``n_slots`` window positions: uniform draws, or dealt from shuffled decks."""
    if kind == "random":
        return rng.integers(0, n_pos, n_slots)
    reps = -(-n_slots // n_pos)
    return np.concatenate([rng.permutation(n_pos) for _ in range(reps)])[:n_slots]


class LogicConv2d(_GateLayer):
    """Convolutional logic layer: ``out_channels`` kernels, each a binary tree of gates.

    Input (n_samples, in_channels, H, W) in [0, 1] → output (n_samples, out_channels, H', W')
    with H' = ⌊(H + 2·padding − receptive) / stride⌋ + 1 (likewise W'). Zero padding: outside
    the image a kernel reads the constant bit 0.

    A kernel is a tree of ``depth`` levels: 2^(depth−1) leaf gates read 2^depth inputs from
    its receptive × receptive window, each level combines pairs of the level below, and the
    root is the kernel's output at that position. The tree's 2^depth − 1 gates (16 logits
    each, ``weight`` (out_channels, 2^depth − 1, 16), leaves first then level by level) are
    shared over all positions, like a convolution's weights.

    Wiring: as in the paper, a tree sees at most two input channels — each kernel draws a
    channel pair (ca, cb) from its group (``pairings``: ca ≠ cb when the group has two or more
    channels) and every leaf reads its input a from channel ca and its input b from channel
    cb, at window positions drawn per leaf (``unique``: dealt from shuffled decks so a tree
    covers the window before it repeats a position; ``random``: uniform). A leaf never reads
    one bit twice when the window offers another. ``learned``: the same structure, learned —
    each kernel holds logits over its group's channels for ca and for cb (``wire_chan``,
    (K, 2, channels per group)) and each leaf input logits over the window's positions
    (``wire_pos``, (K, 2^depth, receptive²)); in training a leaf input reads the product
    mixture (a convolution whose kernel is the outer product of the two relaxed choices),
    in eval mode or when ``fixed`` the argmax channel and position (:meth:`sources`), so the
    circuit keeps the paper's shape. The drawn unique wiring starts one logit ahead: with
    equal logits every leaf of a tree would read the same mixture and get the same gradient.

    groups must divide in_channels and out_channels: kernel k of group g reads only the
    channels of group g (a grouped convolution). ``residual_init``, ``mode``, ``tau``,
    ``seed``, ``engine`` and the forward arguments as for :class:`LogicDense`; the torch path
    gathers (n_samples, K, 2^(depth−1), H'·W') values per leaf input, the fused one streams
    rows. Learned wiring in training mixes the leaves with torch's convolution on either
    engine (a dense convolution, which oneDNN computes better than a hand-written loop
    would); the fused engine then runs the trees over them in numba (``kernels.tree``).
    """

    def __init__(self, in_channels: int, out_channels: int, *, receptive: int = 3,
                 depth: int = 3, stride: int = 1, padding: int = 1, groups: int = 1,
                 wiring: str = "unique", residual_init: float = 0.0, mode: str = "soft",
                 tau: float = 1.0, seed: int | np.random.Generator = 0,
                 engine: str = "auto", param: str = "softmax"):
        super().__init__()
        self._setup(mode, tau, engine, param)
        for name, v, lo in (("in_channels", in_channels, 1), ("out_channels", out_channels, 1),
                            ("receptive", receptive, 1), ("depth", depth, 1),
                            ("stride", stride, 1), ("groups", groups, 1),
                            ("padding", padding, 0)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ConfigError(f"LogicConv2d {name} must be an integer ≥ {lo}, got {v!r}")
        if depth > 8:
            raise ConfigError(f"LogicConv2d depth must be ≤ 8 (a tree of 2^depth − 1 gates), "
                              f"got {depth}")
        if padding >= receptive:
            raise ConfigError(f"LogicConv2d padding must be < receptive (else some outputs "
                              f"read only padding), got padding={padding}, "
                              f"receptive={receptive}")
        if in_channels % groups or out_channels % groups:
            raise ConfigError(f"LogicConv2d groups={groups} must divide in_channels="
                              f"{in_channels} and out_channels={out_channels}")
        if wiring not in WIRINGS:
            raise ConfigError(f"wiring must be one of {', '.join(WIRINGS)}; got {wiring!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.receptive, self.depth, self.stride = receptive, depth, stride
        self.padding, self.groups, self.wiring = padding, groups, wiring
        draw = "unique" if wiring == "learned" else wiring
        rng = np.random.default_rng(seed)
        n_ch, n_k = in_channels // groups, out_channels // groups
        n_slots, n_pos = 2 ** depth, receptive * receptive
        chans = np.zeros((out_channels, 2), dtype=np.int64)
        pos = np.zeros((out_channels, n_slots), dtype=np.int64)   # slot 2j: leaf j's a
        for g in range(groups):
            ca, cb = pairings(n_ch, n_k, draw, rng)
            chans[g * n_k:(g + 1) * n_k] = np.stack([ca, cb], 1) + g * n_ch
        for k in range(out_channels):
            if chans[k, 0] == chans[k, 1]:       # one channel: the whole tree shares a deck
                pos[k] = _deal_positions(n_slots, n_pos, draw, rng)
            else:
                pos[k, 0::2] = _deal_positions(n_slots // 2, n_pos, draw, rng)
                pos[k, 1::2] = _deal_positions(n_slots // 2, n_pos, draw, rng)
            if chans[k, 0] == chans[k, 1] and n_pos > 1:
                same = np.flatnonzero(pos[k, 0::2] == pos[k, 1::2])
                while same.size:
                    pos[k, 2 * same + 1] = rng.integers(0, n_pos, same.size)
                    same = same[pos[k, 2 * same] == pos[k, 2 * same + 1]]
        if wiring == "learned":
            local = torch.from_numpy(chans % n_ch)[:, :, None]
            self.wire_chan = nn.Parameter(torch.zeros(out_channels, 2, n_ch).scatter_(
                2, local, LEARNED_START))
            self.wire_pos = nn.Parameter(torch.zeros(out_channels, n_slots, n_pos).scatter_(
                2, torch.from_numpy(pos)[:, :, None], LEARNED_START))
        else:
            self.register_buffer("channels", torch.from_numpy(chans))      # (K, 2): ca, cb
            self.register_buffer("dy", torch.from_numpy(pos // receptive))  # (K, 2^depth)
            self.register_buffer("dx", torch.from_numpy(pos % receptive))
        self.weight = _init_weight((out_channels, n_slots - 1), residual_init, rng, param)
        self._index_cache: dict = {}
        self._argmax: tuple = ((), None)        # (logits key, sources) for learned wiring

    @property
    def n_tree_gates(self) -> int:
        return 2 ** self.depth - 1

    @property
    def learned(self) -> bool:
        return self.wiring == "learned"

    def extra_repr(self) -> str:
        return (f"{self.in_channels} → {self.out_channels}, receptive={self.receptive}, "
                f"depth={self.depth}, stride={self.stride}, padding={self.padding}, "
                f"groups={self.groups}, wiring={self.wiring}, mode={self.mode}, "
                f"engine={self.engine}")

    def _wiring_key(self) -> tuple:
        """Changes whenever the wiring may have (an optimizer step, load_state_dict, .to())."""
        held = (self.wire_chan, self.wire_pos) if self.learned else (self.channels, self.dy,
                                                                     self.dx)
        return tuple((t._version, t.data_ptr()) for t in held)

    def sources(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(channels (K, 2): each kernel's ca and cb; dy, dx (K, 2^depth): each leaf input's
        offset in the window, slot 2j leaf j's a) — for learned wiring the most likely choice
        of each, cached while the logits stay."""
        if not self.learned:
            return self.channels, self.dy, self.dx
        key = self._wiring_key()
        if self._argmax[0] != key:
            n_ch, n_k = self.in_channels // self.groups, self.out_channels // self.groups
            first = (torch.arange(self.out_channels, device=self.wire_chan.device) // n_k) * n_ch
            pos = self.wire_pos.detach().argmax(-1)
            self._argmax = (key, (self.wire_chan.detach().argmax(-1) + first[:, None],
                                  pos // self.receptive, pos % self.receptive))
        return self._argmax[1]

    def wire_probs(self, *, temperature: float = 1.0, mode: str | None = None
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """(K, 2, channels per group) and (K, 2^depth, receptive²): the relaxed choice of
        each tree side's channel and of each leaf input's position (learned wiring only)."""
        mode = _check_mode(mode) if mode is not None else self.mode
        return tuple(_relaxed(w, mode, temperature, self.tau) for w in (self.wire_chan,
                                                                        self.wire_pos))

    def out_size(self, h: int, w: int) -> tuple[int, int]:
        ho = conv_out_size(h, self.receptive, self.stride, self.padding)
        wo = conv_out_size(w, self.receptive, self.stride, self.padding)
        if ho < 1 or wo < 1:
            raise ConfigError(f"LogicConv2d input {h}×{w} is smaller than its receptive field "
                              f"(receptive={self.receptive}, padding={self.padding})")
        return ho, wo

    def _check_input(self, x: torch.Tensor) -> tuple[int, int]:
        if x.ndim != 4 or x.shape[1] != self.in_channels:
            raise KairoError(f"LogicConv2d expects input (n_samples, {self.in_channels}, H, W), "
                             f"got {tuple(x.shape)}")
        return self.out_size(x.shape[2], x.shape[3])

    def gather_index(self, h: int, w: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Flat indices into the zero-padded input (C·Hp·Wp) of every leaf's a and b input.

        Two (K, 2^(depth−1), H'·W') int64 tensors; cached per input size and wiring.
        """
        key = (h, w) + self._wiring_key()
        hit = self._index_cache.get(key)
        if hit is not None:
            return hit
        channels, dy, dx = self.sources()
        ho, wo = self.out_size(h, w)
        hp, wp = h + 2 * self.padding, w + 2 * self.padding
        dev = dy.device
        oy = torch.arange(ho, device=dev) * self.stride
        ox = torch.arange(wo, device=dev) * self.stride
        start = (oy[:, None] * wp + ox[None, :]).reshape(-1)                    # (P,)
        off = dy * wp + dx                                                      # (K, S)
        chan = channels[:, torch.arange(2 ** self.depth, device=dev) % 2]       # (K, S)
        idx = (chan * (hp * wp) + off)[:, :, None] + start[None, None, :]       # (K, S, P)
        hit = (idx[:, 0::2].contiguous(), idx[:, 1::2].contiguous())
        self._index_cache = {key: hit}
        return hit

    def forward(self, x: torch.Tensor, *, temperature: float = 1.0, fixed: bool = False,
                mode: str | None = None) -> torch.Tensor:
        ho, wo = self._check_input(x)
        c = self.gate_coeffs(x.dtype, temperature=temperature, fixed=fixed,
                             mode=mode)                              # (K, G, 4)
        n = x.shape[0]
        if self.learned and self.training and not fixed:
            leaves = self._mixed_leaves(x, temperature, mode)        # (n, K, 2^depth, P)
            if _use_fused(self.engine, x):
                return _load_kernels().tree(leaves, c).view(n, self.out_channels, ho, wo)
            a, b = leaves[:, :, 0::2], leaves[:, :, 1::2]             # (n, K, L, P)
        elif _use_fused(self.engine, x):
            # sample-minor inside: (C, H, W, n_samples); the permutes are free between layers
            y = _load_kernels().conv(x.permute(1, 2, 3, 0), c, *self.sources(), self.stride,
                                     self.padding, ho, wo)
            return y.permute(3, 0, 1, 2)
        else:
            p = self.padding
            xf = nn.functional.pad(x, (p, p, p, p)).reshape(n, -1)  # (n, C·Hp·Wp)
            ia, ib = self.gather_index(x.shape[2], x.shape[3])
            a, b = xf[:, ia], xf[:, ib]                              # (n, K, L, P)
        lo, size = 0, a.shape[2]
        while True:
            cl = c[:, lo:lo + size, :, None]                         # (K, size, 4, 1)
            y = cl[:, :, 0] + cl[:, :, 1] * a + cl[:, :, 2] * b + cl[:, :, 3] * (a * b)
            lo += size
            if size == 1:
                break
            a, b, size = y[:, :, 0::2], y[:, :, 1::2], size // 2
        return y.reshape(n, self.out_channels, ho, wo)              # root: (n, K, H', W')

    def _mixed_leaves(self, x: torch.Tensor, temperature: float, mode: str | None
                      ) -> torch.Tensor:
        """Learned wiring in training: every leaf input's value is the mixture of the window
        under its relaxed channel × position choice. (n, K, 2^depth, H'·W'), slot 2j leaf
        j's a input."""
        pc, pp = (q.to(x.dtype) for q in self.wire_probs(temperature=temperature, mode=mode))
        n_slots, r = 2 ** self.depth, self.receptive
        side = torch.arange(n_slots, device=pc.device) % 2
        # one dense grouped convolution: its kernel is channel ⊗ position (factoring it into
        # a 1×1 and a depthwise convolution measured slower on the CPU)
        kernel = (pc[:, side, :, None] * pp[:, :, None, :]).reshape(
            self.out_channels * n_slots, -1, r, r)                  # (K·S, C/groups, r, r)
        y = nn.functional.conv2d(x, kernel, stride=self.stride, padding=self.padding,
                                 groups=self.groups)
        return y.reshape(x.shape[0], self.out_channels, n_slots, -1)


class OrPooling2d(nn.Module):
    """Relaxed OR over ``kernel`` × ``kernel`` windows: the maximum (as the paper).

    Input (n_samples, C, H, W) → (n_samples, C, H', W'), H' = ⌊(H − kernel) / stride⌋ + 1.
    On bits the maximum is the OR, which the circuit builds from two-input OR gates.
    """

    def __init__(self, kernel: int = 2, stride: int = 2, *, engine: str = "auto"):
        super().__init__()
        for name, v in (("kernel", kernel), ("stride", stride)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f"OrPooling2d {name} must be an integer ≥ 1, got {v!r}")
        self.kernel, self.stride, self.engine = int(kernel), int(stride), _check_engine(engine)

    def extra_repr(self) -> str:
        return f"kernel={self.kernel}, stride={self.stride}"

    def out_size(self, h: int, w: int) -> tuple[int, int]:
        ho, wo = (conv_out_size(s, self.kernel, self.stride, 0) for s in (h, w))
        if ho < 1 or wo < 1:
            raise ConfigError(f"OrPooling2d input {h}×{w} is smaller than its window "
                              f"(kernel={self.kernel})")
        return ho, wo

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4:
            raise KairoError(f"OrPooling2d expects input (n_samples, C, H, W), got "
                             f"{tuple(x.shape)}")
        ho, wo = self.out_size(x.shape[2], x.shape[3])
        if _use_fused(self.engine, x):
            y = _load_kernels().pool(x.permute(1, 2, 3, 0), self.kernel, self.stride, ho, wo)
            return y.permute(3, 0, 1, 2)
        return nn.functional.max_pool2d(x, self.kernel, self.stride)


class GroupSum(nn.Module):
    """Split the outputs into ``k`` equal groups; class score = group sum / τ."""

    def __init__(self, k: int, tau: float = 1.0):
        super().__init__()
        if k < 1 or tau <= 0:
            raise ConfigError(f"GroupSum needs k ≥ 1 and τ > 0, got k={k}, τ={tau}")
        self.k, self.tau = int(k), float(tau)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] % self.k:
            raise ConfigError(f"class groups do not divide the outputs: {x.shape[-1]} outputs "
                              f"into {self.k} classes")
        if x.ndim == 2 and not x.is_contiguous() and x.t().is_contiguous():
            # neuron-major (a fused layer's output): sum the groups without transposing
            return x.t().reshape(self.k, -1, x.shape[0]).sum(1).t() / self.tau
        return x.reshape(*x.shape[:-1], self.k, -1).sum(-1) / self.tau


class Binarize(nn.Module):
    """uint8 images → bits: one bit per pixel and threshold (``thresholds`` in 0…255).

    ``thresholds=(127,)`` is a fixed binarization; several thresholds are a thermometer code
    (bit t is pixel > thresholds[t]). Bits are ordered threshold-major: [t][pixel].
    """

    def __init__(self, thresholds=(127,)):
        super().__init__()
        t = np.asarray(thresholds, dtype=float).ravel()
        if t.size == 0 or np.any((t < 0) | (t > 255)) or np.any(np.diff(t) <= 0):
            raise ConfigError(f"thresholds must be increasing values in 0…255, got "
                              f"{list(thresholds)}")
        self.register_buffer("t", torch.tensor(t, dtype=torch.float32))

    @property
    def n_levels(self) -> int:
        return int(self.t.numel())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], -1).to(torch.float32)
        return (x[:, None, :] > self.t[None, :, None]).reshape(x.shape[0], -1).to(torch.float32)
