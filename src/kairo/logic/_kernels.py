"""Fused CPU forward/backward loops for the logic layers (numba, compiled on first use).

The pure-PyTorch layers spend their time in gathers ``x[:, ia]``, the scatter-adds of their
backward, and a temporary tensor per term of c₀ + c_a·a + c_b·b + c_ab·ab. Here each layer is
one ``torch.autograd.Function`` whose forward and backward are single fused loops:

- Layout is sample-minor: dense activations (n_neurons, n_samples), feature maps
  (C, H, W, n_samples), so a gather reads a contiguous row and the inner loop over samples
  vectorizes. The layers pass transposed/permuted views, which are free between fused layers.
  A conv input is also zero-padded and split by column phase (see :func:`conv`), so a leaf
  reads one contiguous span per output row and each gate is one loop of W'·n_samples.
- Forward: y = c₀ + c_a·a + c_b·b + c_ab·(a·b), in the reference's order of operations.
- Backward: ∂L/∂a = g·(c_a + c_ab·b), ∂L/∂b = g·(c_b + c_ab·a), ∂L/∂c = Σ_samples g·[1, a, b, ab]
  (summed in float64); autograd then takes c = softmax(w) @ COEFFS back to the logits.
  A conv tree's inner values are recomputed in the backward instead of stored.
- Input gradients are race-free: dense layers loop over inputs with a CSR list of the gates
  that read each one; a conv layer's kernels are split into one chunk per thread, each with
  a private input-gradient buffer (summed in chunk order, so the rounding of that gradient
  depends on the number of chunks and nothing else); pooling loops over channels and rows.

Three modules: this one, the autograd functions and how each layer's job is cut into parts;
:mod:`kairo.logic._kernel_loops`, the numba loops (compiled with ``cache=True``, so only the
first run on a machine pays the compile time); :mod:`kairo.logic._kernel_threads`, the
threads that run the parts (shared with torch, see ``training_threads``). Results never
depend on which thread ran a part, so training is reproducible.
"""

from __future__ import annotations

import numpy as np
import torch

from kairo.logic._kernel_loops import (_conv_bwd, _conv_fwd, _dense_bwd_c, _dense_bwd_x,
                                       _dense_fwd, _learned_bwd, _learned_bwd_x, _learned_fwd,
                                       _pool_bwd, _pool_bwd_overlap, _pool_fwd,
                                       _tree_bwd_leaves, _tree_fwd_leaves)
from kairo.logic._kernel_threads import _n_threads, _parallel, set_num_threads, training_threads

__all__ = ["dense", "dense_learned", "conv", "tree", "pool", "dense_users", "set_num_threads",
           "training_threads"]


# ---------------------------------------------------------------------------- parts
def _split(n_items: int, n_parts: int) -> np.ndarray:
    """Edges of ``n_parts`` near-equal contiguous ranges of ``n_items`` (no empty range)."""
    n_parts = max(1, min(n_items, n_parts))
    return np.linspace(0, n_items, n_parts + 1).round().astype(np.int64)


_SERIAL_WORK = 1 << 18              # values touched below which threads cost more than they save


def _parts(n_items: int, work: int) -> np.ndarray:
    """A few parts per thread, so a late thread leaves little to the others; one part (no
    hand-off at all) for small jobs. ``work``: roughly the values the job reads or writes."""
    return _split(n_items, 1 if work < _SERIAL_WORK else 4 * _n_threads())


# ---------------------------------------------------------------------------- autograd
def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().numpy()


def dense_users(ia: torch.Tensor, ib: torch.Tensor, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the gates reading each input: users[ptr[j]:ptr[j+1]] = 2·gate + (1 if b)."""
    src = np.concatenate([ia.numpy(), ib.numpy()])
    code = np.concatenate([2 * np.arange(ia.numel()), 2 * np.arange(ib.numel()) + 1])
    order = np.argsort(src, kind="stable")
    ptr = np.searchsorted(src[order], np.arange(n_in + 1)).astype(np.int64)
    return ptr, code[order].astype(np.int64)


class _Dense(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xt, c, ia, ib, users):
        # xt: (n_in, n) contiguous, c: (n_out, 4) → (n_out, n)
        y = torch.empty(ia.numel(), xt.shape[1], dtype=xt.dtype)
        _parallel(_dense_fwd, _parts(ia.numel(), y.numel()), _np(xt), ia.numpy(), ib.numpy(),
                  _np(c), y.numpy())
        ctx.save_for_backward(xt, c, ia, ib)
        ctx.users = users
        return y

    @staticmethod
    def backward(ctx, g):
        xt, c, ia, ib = ctx.saved_tensors
        g = g.contiguous()
        xn, gn, ian, ibn = _np(xt), _np(g), ia.numpy(), ib.numpy()
        dc = None
        if ctx.needs_input_grad[1]:
            dc64 = np.empty((ian.size, 4), dtype=np.float64)
            _parallel(_dense_bwd_c, _parts(ian.size, gn.size), xn, ian, ibn, gn, dc64)
            dc = torch.from_numpy(dc64).to(c.dtype)
        gx = None
        if ctx.needs_input_grad[0]:
            ptr, users = ctx.users
            gx = torch.empty_like(xt)
            _parallel(_dense_bwd_x, _parts(xt.shape[0], 2 * gn.size), xn, ian, ibn, _np(c), gn, ptr,
                      users, gx.numpy())
        return gx, dc, None, None, None


def dense(xt: torch.Tensor, c: torch.Tensor, ia: torch.Tensor, ib: torch.Tensor,
          users: tuple[np.ndarray, np.ndarray]) -> torch.Tensor:
    """Dense gate layer, neuron-major: xt (n_in, n_samples), c (n_out, 4) → (n_out, n_samples).

    ``users`` is ``dense_users(ia, ib, n_in)``, which the caller keeps with the wiring.
    """
    return _Dense.apply(xt.contiguous(), c.contiguous(), ia, ib, users)


class _DenseLearned(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xt, c, ca, cb, pa, pb, users):
        # xt: (n_in, n), ca/cb/pa/pb: (n_out, K) → (n_out, n); the mixed inputs are kept
        n_out, n = ca.shape[0], xt.shape[1]
        y = torch.empty(n_out, n, dtype=xt.dtype)
        a, b = torch.empty_like(y), torch.empty_like(y)
        _parallel(_learned_fwd, _parts(n_out, y.numel() * (ca.shape[1] + 1)), _np(xt),
                  ca.numpy(), cb.numpy(), _np(pa), _np(pb), _np(c), a.numpy(), b.numpy(),
                  y.numpy())
        ctx.save_for_backward(xt, c, ca, cb, pa, pb, a, b)
        ctx.users = users
        return y

    @staticmethod
    def backward(ctx, g):
        xt, c, ca, cb, pa, pb, a, b = ctx.saved_tensors
        g = g.contiguous()
        gn = _np(g)
        ga, gb = np.empty_like(gn), np.empty_like(gn)
        dc = np.empty((ca.shape[0], 4), dtype=np.float64)
        dpa = np.empty(ca.shape, dtype=np.float64)
        dpb = np.empty(cb.shape, dtype=np.float64)
        edges = _parts(ca.shape[0], gn.size * (ca.shape[1] + 2))
        scratch = np.empty((len(edges) - 1, gn.shape[1]), dtype=gn.dtype)
        _parallel(_learned_bwd, edges, _np(xt), ca.numpy(), cb.numpy(), _np(a), _np(b), _np(c),
                  gn, ga, gb, dc, dpa, dpb, scratch, np.ones(gn.shape[1], dtype=gn.dtype))
        gx = None
        if ctx.needs_input_grad[0]:
            ptr, users = ctx.users
            gx = torch.empty_like(xt)
            _parallel(_learned_bwd_x, _parts(xt.shape[0], 2 * gn.size * ca.shape[1]),
                      _np(pa).reshape(-1), _np(pb).reshape(-1), ga, gb, ptr, users, gx.numpy())
        return (gx, torch.from_numpy(dc).to(c.dtype), None, None,
                torch.from_numpy(dpa).to(pa.dtype), torch.from_numpy(dpb).to(pb.dtype), None)


def dense_learned(xt: torch.Tensor, c: torch.Tensor, ca: torch.Tensor, cb: torch.Tensor,
                  pa: torch.Tensor, pb: torch.Tensor,
                  users: tuple[np.ndarray, np.ndarray]) -> torch.Tensor:
    """Dense gate layer with learned wiring, neuron-major: xt (n_in, n_samples), c (n_out, 4),
    candidates ca, cb (n_out, K) and their weights pa, pb (n_out, K) → (n_out, n_samples);
    gate i reads a = Σ_k pa[i,k]·xt[ca[i,k]] (likewise b). ``users`` is
    ``dense_users(ca.reshape(-1), cb.reshape(-1), n_in)``."""
    return _DenseLearned.apply(xt.contiguous(), c.contiguous(), ca.contiguous(),
                               cb.contiguous(), pa.contiguous(), pb.contiguous(), users)


class _Conv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xq, c, ch, dy, dx, geom):
        # xq: padded, phase-split input (C, Hp, stride, Wq, n) contiguous; c: (K, G, 4)
        # → (K, H', W', n)
        n_k, (_, _, _, n, ho, wo) = c.shape[0], geom
        y = torch.empty(n_k, ho, wo, n, dtype=xq.dtype)
        g = np.asarray(geom, dtype=np.int64)
        _parallel(_conv_fwd, _parts(n_k * ho, y.numel() * c.shape[1]), _np(xq).reshape(-1), g,
                  ch.numpy(), dy.numpy(), dx.numpy(), _np(c), y.numpy().reshape(-1))
        ctx.save_for_backward(xq, c, ch, dy, dx)
        ctx.geom = g
        return y

    @staticmethod
    def backward(ctx, g):
        xq, c, ch, dy, dx = ctx.saved_tensors
        # kernels in one contiguous chunk per thread, each with a private input-gradient
        # buffer (summed in chunk order: the same result whichever thread ran a chunk)
        edges = _split(c.shape[0], 1 if g.numel() * c.shape[1] < _SERIAL_WORK else _n_threads())
        n_parts = len(edges) - 1
        need_x = bool(ctx.needs_input_grad[0])
        xn = _np(xq).reshape(-1)
        parts = np.empty((n_parts, xn.size if need_x else 1), dtype=xn.dtype)
        dc = np.empty(c.shape, dtype=np.float64)
        _parallel(_conv_bwd, edges, xn, ctx.geom, ch.numpy(), dy.numpy(), dx.numpy(), _np(c),
                  _np(g.contiguous()).reshape(-1), need_x, parts, dc)
        gx = None
        if need_x:
            gx = torch.from_numpy(parts[0] if n_parts == 1 else parts.sum(0)).view(xq.shape)
        return gx, torch.from_numpy(dc).to(c.dtype), None, None, None, None


def conv(x: torch.Tensor, c: torch.Tensor, ch: torch.Tensor, dy: torch.Tensor,
         dx: torch.Tensor, stride: int, pad: int, ho: int, wo: int) -> torch.Tensor:
    """LogicConv2d, sample-minor: x (C, H, W, n_samples), c (K, 2^depth − 1, 4) →
    (K, H', W', n_samples); ``ch`` (K, 2) channels, ``dy``/``dx`` (K, 2^depth) offsets.

    The input is zero-padded and its columns split by phase x mod stride, (C, Hp, stride,
    Wq, n) with Wq = ⌈Wp / stride⌉, in differentiable torch ops: then the pixels one leaf reads
    along an output row are contiguous, and each gate is one loop of W'·n iterations.
    """
    n_c, h, w, n = x.shape
    hp, wp = h + 2 * pad, w + 2 * pad
    wq = -(-wp // stride)
    if pad or wq * stride != wp:
        x = torch.nn.functional.pad(x, (0, 0, pad, pad + wq * stride - wp, pad, pad))
    xq = x.reshape(n_c, hp, wq, stride, n).permute(0, 1, 3, 2, 4).contiguous()
    geom = (hp, int(stride), wq, n, int(ho), int(wo))
    return _Conv.apply(xq, c.contiguous(), ch, dy, dx, geom)


class _Tree(torch.autograd.Function):
    @staticmethod
    def forward(ctx, leaves, c):
        n, n_k, _, n_pos = leaves.shape
        y = torch.empty(n, n_k, n_pos, dtype=leaves.dtype)
        _parallel(_tree_fwd_leaves, _parts(n_k, leaves.numel() * 2), _np(leaves), _np(c),
                  y.numpy())
        ctx.save_for_backward(leaves, c)
        return y

    @staticmethod
    def backward(ctx, g):
        leaves, c = ctx.saved_tensors
        gl = torch.empty_like(leaves)
        dc = np.empty(c.shape, dtype=np.float64)
        _parallel(_tree_bwd_leaves, _parts(c.shape[0], leaves.numel() * 4), _np(leaves),
                  _np(c), _np(g.contiguous()), gl.numpy(), dc)
        return gl, torch.from_numpy(dc).to(c.dtype)


def tree(leaves: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Trees of gates over given leaf inputs (a learned conv layer's mixtures): leaves
    (n_samples, K, 2^depth, P) — slot 2j is leaf j's a, 2j + 1 its b — and c
    (K, 2^depth − 1, 4) → the roots (n_samples, K, P). Each tree is one thread's: no two
    threads write one value."""
    return _Tree.apply(leaves.contiguous(), c.contiguous())


class _Pool(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, kernel, stride, ho, wo):
        y = torch.empty(x.shape[0], ho, wo, x.shape[3], dtype=x.dtype)
        _parallel(_pool_fwd, _parts(x.shape[0] * ho, x.numel()), _np(x), kernel, stride, y.numpy())
        ctx.save_for_backward(x, y)
        ctx.geom = (kernel, stride)
        return y

    @staticmethod
    def backward(ctx, g):
        x, y = ctx.saved_tensors
        kernel, stride = ctx.geom
        g = _np(g.contiguous())
        n_c, h, w, _ = x.shape
        if kernel > stride:
            gx = torch.empty_like(x)
            _parallel(_pool_bwd_overlap, _parts(n_c, x.numel()), _np(x), kernel, stride, g,
                      gx.numpy())
            return gx, None, None, None, None
        ho, wo = y.shape[1], y.shape[2]
        covered = kernel == stride and h == ho * stride and w == wo * stride
        gx = torch.empty_like(x) if covered else torch.zeros_like(x)
        _parallel(_pool_bwd, _parts(n_c * ho, x.numel()), _np(x), kernel, stride, _np(y), g,
                  gx.numpy())
        return gx, None, None, None, None


def pool(x: torch.Tensor, kernel: int, stride: int, ho: int, wo: int) -> torch.Tensor:
    """Max (relaxed OR) pooling, sample-minor: x (C, H, W, n_samples) → (C, H', W', n)."""
    return _Pool.apply(x.contiguous(), int(kernel), int(stride), int(ho), int(wo))
