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

Threads: the loops are serial numba functions that release the GIL. ``_parallel`` hands
their chunks to as many threads as torch uses, the caller included, which take chunks from
a shared counter: a thread the OS does not schedule in time takes no chunk and leaves its
share to the others. (numba's ``parallel=True`` would bring a second OpenMP runtime beside
torch's, whose spinning workers fight torch's for shared cores.) During training
``training_threads`` also runs torch single-threaded: all it has left are tiny ops whose
OpenMP barriers dominate on a loaded machine. Results never depend on which thread ran a
chunk, so training is reproducible. Small helpers are inlined into the loops
(``inline="always"``, which speeds up the conv backward).

Numba compiles with ``cache=True`` (the machine's LLVM, from source; nothing downloaded), so
only the first run on a machine pays the compile time (seconds of CPU per dtype).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from numba import njit

__all__ = ["dense", "dense_learned", "conv", "tree", "pool", "dense_users", "set_num_threads",
           "training_threads"]

_JIT = {"fastmath": False, "cache": True, "nogil": True}
_INL = {**_JIT, "inline": "always"}


# ---------------------------------------------------------------------------- loops
@njit(**_INL)
def _gate(a, b, cc, out):
    c0, ca, cb, cab = cc[0], cc[1], cc[2], cc[3]
    for t in range(out.shape[0]):
        out[t] = c0 + ca * a[t] + cb * b[t] + cab * (a[t] * b[t])


@njit(**_INL)
def _gate_back(a, b, cc, g, acc, ga, gb):
    """acc[0..3] += g·[1, a, b, ab] per sample; ga = ∂/∂a, gb = ∂/∂b (overwritten).

    One short loop per output keeps each loop simple enough for LLVM to vectorize.
    """
    ca, cb, cab = cc[1], cc[2], cc[3]
    n = g.shape[0]
    for t in range(n):
        ga[t] = g[t] * (ca + cab * b[t])
    for t in range(n):
        gb[t] = g[t] * (cb + cab * a[t])
    _acc(acc[0], g, g, False)
    _acc(acc[1], g, a, True)
    _acc(acc[2], g, b, True)
    _acc_ab(acc[3], g, a, b)


@njit(**_INL)
def _acc(acc, g, v, use_v):
    if use_v:
        for t in range(g.shape[0]):
            acc[t] += g[t] * v[t]
    else:
        for t in range(g.shape[0]):
            acc[t] += g[t]


@njit(**_INL)
def _acc_ab(acc, g, a, b):
    for t in range(g.shape[0]):
        acc[t] += g[t] * (a[t] * b[t])


@njit(**_INL)
def _add(dst, src):
    for t in range(dst.shape[0]):
        dst[t] += src[t]


@njit(**_JIT)
def _dense_fwd(part, lo, hi, x, ia, ib, c, y):
    for i in range(lo, hi):
        _gate(x[ia[i]], x[ib[i]], c[i], y[i])


@njit(**_JIT)
def _dense_bwd_c(part, lo, hi, x, ia, ib, g, dc):
    n = g.shape[1]
    for i in range(lo, hi):
        a, b, gi = x[ia[i]], x[ib[i]], g[i]
        s0 = s1 = s2 = s3 = 0.0
        for t in range(n):
            s0 += gi[t]
            s1 += gi[t] * a[t]
            s2 += gi[t] * b[t]
            s3 += gi[t] * (a[t] * b[t])
        dc[i, 0], dc[i, 1], dc[i, 2], dc[i, 3] = s0, s1, s2, s3


@njit(**_JIT)
def _dense_bwd_x(part, lo, hi, x, ia, ib, c, g, ptr, users, gx):
    n = g.shape[1]
    for j in range(lo, hi):
        row = gx[j]
        row[:] = 0
        for u in range(ptr[j], ptr[j + 1]):
            i = users[u] >> 1
            if users[u] & 1:                   # j is input b of gate i
                other, cj = x[ia[i]], c[i, 2]
            else:
                other, cj = x[ib[i]], c[i, 1]
            cab, gi = c[i, 3], g[i]
            for t in range(n):
                row[t] += gi[t] * (cj + cab * other[t])


@njit(**_INL)
def _mix(x, cand, p, out):
    """out = Σ_k p[k]·x[cand[k]]: a gate input's relaxed choice among its candidates (a
    candidate of weight 0 — a hard or Gumbel one-hot — is not read)."""
    out[:] = 0
    for k in range(cand.shape[0]):
        pk = p[k]
        if pk != 0.0:
            row = x[cand[k]]
            for t in range(out.shape[0]):
                out[t] += pk * row[t]


@njit(**_JIT)
def _learned_fwd(part, lo, hi, x, ca, cb, pa, pb, c, a, b, y):
    for i in range(lo, hi):
        _mix(x, ca[i], pa[i], a[i])
        _mix(x, cb[i], pb[i], b[i])
        _gate(a[i], b[i], c[i], y[i])


# The learned-wiring backward is mostly dot products of length n_samples (∂L/∂p of every
# candidate). A running sum is vectorized only when the compiler may reassociate it: without
# that it was 5× slower. The summation order is then the compiler's (by vector width), so the
# rounding of these gradients is the same on every run on a machine, not across CPU types.
_REASSOC = {**_JIT, "fastmath": {"reassoc", "nsz"}}


@njit(**_INL)
def _dot(u, v, z):
    """Σ u·v, accumulated in ``z``'s type (the data's dtype)."""
    s = z
    for t in range(u.shape[0]):
        s += u[t] * v[t]
    return float(s)


@njit(**_REASSOC)
def _learned_bwd(part, lo, hi, x, ca, cb, a, b, c, g, ga, gb, dc, dpa, dpb, ab, ones):
    """Per gate: ∂L/∂(mixed a, b) into ga, gb; ∂L/∂c and ∂L/∂p (Σ_t ∂L/∂a·x[candidate])
    summed in the data's dtype, stored as float64 (``ab``: a scratch row per part, ``ones``: a
    row of ones)."""
    n = g.shape[1]
    z = ones[0] - ones[0]                   # zero of the data's dtype
    for i in range(lo, hi):
        ai, bi, gi, gai, gbi, abi = a[i], b[i], g[i], ga[i], gb[i], ab[part]
        ca_, cb_, cab = c[i, 1], c[i, 2], c[i, 3]
        for t in range(n):
            gai[t] = gi[t] * (ca_ + cab * bi[t])
        for t in range(n):
            gbi[t] = gi[t] * (cb_ + cab * ai[t])
        for t in range(n):
            abi[t] = ai[t] * bi[t]
        dc[i, 0] = _dot(gi, ones, z)
        dc[i, 1] = _dot(gi, ai, z)
        dc[i, 2] = _dot(gi, bi, z)
        dc[i, 3] = _dot(gi, abi, z)
        for k in range(ca.shape[1]):
            dpa[i, k] = _dot(gai, x[ca[i, k]], z)
        for k in range(cb.shape[1]):
            dpb[i, k] = _dot(gbi, x[cb[i, k]], z)


@njit(**_JIT)
def _learned_bwd_x(part, lo, hi, pa, pb, ga, gb, ptr, users, gx):
    """∂L/∂x[j] = Σ over the candidate slots naming input j of p·∂L/∂(mixed input); ``users``
    codes slot (gate·K + k) as 2·slot (+1 for input b); pa, pb are flat (n_out·K)."""
    k = pa.shape[0] // ga.shape[0]
    n = gx.shape[1]
    for j in range(lo, hi):
        row = gx[j]
        row[:] = 0
        for u in range(ptr[j], ptr[j + 1]):
            slot = users[u] >> 1
            if users[u] & 1:
                p, gi = pb[slot], gb[slot // k]
            else:
                p, gi = pa[slot], ga[slot // k]
            if p != 0.0:
                for t in range(n):
                    row[t] += p * gi[t]


@njit(**_INL)
def _span(xq, geom, ch, y, x):
    """Input pixel (ch, y, x + stride·ox) for every output column ox: W'·n contiguous values.

    ``xq`` is the padded input with its columns split by phase x mod stride (see ``conv``),
    so pixels x, x + stride, x + 2·stride, … are neighbours in memory;
    geom = (Hp, stride, Wq, n, H', W').
    """
    hp, s, wq, n, wo = geom[0], geom[1], geom[2], geom[3], geom[5]
    start = (((ch * hp + y) * s + x % s) * wq + x // s) * n
    return xq[start:start + wo * n]


@njit(**_INL)
def _levels_fwd(ck, vals, n_leaf):
    """A tree's inner levels over its leaf gates' values vals[0 … n_leaf−1]: each level
    combines pairs of the level below, the root last (ck: the tree's gate coefficients)."""
    lo, size = 0, n_leaf
    while size > 1:
        for j in range(size // 2):
            _gate(vals[lo + 2 * j], vals[lo + 2 * j + 1], ck[lo + size + j], vals[lo + size + j])
        lo += size
        size //= 2


@njit(**_INL)
def _levels_bwd(ck, vals, grads, acc, n_leaf):
    """Root first: each inner gate's gradient (grads[q]) to its two children, its
    coefficients' into acc[q]; leaves the leaf gates' gradients in grads[0 … n_leaf−1]."""
    top, size = ck.shape[0] - 1, 1
    while size < n_leaf:
        below = top - 2 * size                 # first gate of the level below
        for j in range(size):
            _gate_back(vals[below + 2 * j], vals[below + 2 * j + 1], ck[top + j],
                       grads[top + j], acc[top + j], grads[below + 2 * j],
                       grads[below + 2 * j + 1])
        top, size = below, 2 * size


@njit(**_INL)
def _tree_fwd(xq, geom, k, oy, ch, dy, dx, c, vals):
    """vals[q] = gate q of kernel k's tree (leaves first, root last) along output row oy."""
    n_leaf = dy.shape[1] // 2
    y0 = oy * geom[1]
    for j in range(n_leaf):
        _gate(_span(xq, geom, ch[k, 0], y0 + dy[k, 2 * j], dx[k, 2 * j]),
              _span(xq, geom, ch[k, 1], y0 + dy[k, 2 * j + 1], dx[k, 2 * j + 1]),
              c[k, j], vals[j])
    _levels_fwd(c[k], vals, n_leaf)


@njit(**_JIT)
def _conv_fwd(part, lo, hi, xq, geom, ch, dy, dx, c, y):
    """Rows lo…hi−1 of the output (row = kernel · H' + oy); y flat (K·H'·W'·n)."""
    row = geom[5] * geom[3]                    # W'·n values per output row
    n_gates = c.shape[1]
    vals = np.empty((n_gates, row), dtype=xq.dtype)
    for item in range(lo, hi):
        _tree_fwd(xq, geom, item // geom[4], item % geom[4], ch, dy, dx, c, vals)
        y[item * row:(item + 1) * row] = vals[n_gates - 1]


@njit(**_JIT)
def _conv_bwd(part, lo, hi, xq, geom, ch, dy, dx, c, g, need_x, gx_parts, dc):
    """Kernels lo…hi−1; their input gradient goes to gx_parts[part], theirs alone.

    ∂L/∂c sums per (column, sample): over the rows in the input's dtype (≤ H' terms, fast
    vector adds), then over columns and samples in float64.
    """
    ho, n = geom[4], geom[3]
    row = geom[5] * n
    n_gates = c.shape[1]
    n_leaf = dy.shape[1] // 2
    gx = gx_parts[part]
    if need_x:
        gx[:] = 0
    vals = np.empty((n_gates, row), dtype=xq.dtype)
    grads = np.empty((n_gates, row), dtype=xq.dtype)
    ga = np.empty(row, dtype=xq.dtype)
    gb = np.empty(row, dtype=xq.dtype)
    acc = np.empty((n_gates, 4, row), dtype=xq.dtype)
    lanes = np.empty(n, dtype=np.float64)
    for k in range(lo, hi):
        acc[:] = 0
        for oy in range(ho):
            _tree_fwd(xq, geom, k, oy, ch, dy, dx, c, vals)
            item = k * ho + oy
            grads[n_gates - 1] = g[item * row:(item + 1) * row]
            _levels_bwd(c[k], vals, grads, acc, n_leaf)
            y0 = oy * geom[1]
            for j in range(n_leaf):
                ya, xa = y0 + dy[k, 2 * j], dx[k, 2 * j]
                yb, xb = y0 + dy[k, 2 * j + 1], dx[k, 2 * j + 1]
                _gate_back(_span(xq, geom, ch[k, 0], ya, xa), _span(xq, geom, ch[k, 1], yb, xb),
                           c[k, j], grads[j], acc[j], ga, gb)
                if need_x:
                    _add(_span(gx, geom, ch[k, 0], ya, xa), ga)
                    _add(_span(gx, geom, ch[k, 1], yb, xb), gb)
        for q in range(n_gates):
            for m in range(4):
                lanes[:] = 0
                for col in range(0, row, n):
                    _add(lanes, acc[q, m, col:col + n])
                dc[k, q, m] = lanes.sum()


@njit(**_INL)
def _leaf_tree(lk, ck, vals):
    """vals[q] = gate q of one tree (leaves first, root last) over the columns of its leaf
    inputs ``lk`` (2^depth, P), slot 2j leaf j's a."""
    n_leaf = lk.shape[0] // 2
    for j in range(n_leaf):
        _gate(lk[2 * j], lk[2 * j + 1], ck[j], vals[j])
    _levels_fwd(ck, vals, n_leaf)


@njit(**_JIT)
def _tree_fwd_leaves(part, lo, hi, leaves, c, y):
    """Trees lo…hi−1 of every sample: y[i, k] = the root of tree k over leaves[i, k]
    (2^depth, P); one sample's P positions at a time, so the tree's values stay in cache."""
    n_gates = c.shape[1]
    vals = np.empty((n_gates, leaves.shape[3]), dtype=leaves.dtype)
    for k in range(lo, hi):
        for i in range(leaves.shape[0]):
            _leaf_tree(leaves[i, k], c[k], vals)
            y[i, k] = vals[n_gates - 1]


@njit(**_JIT)
def _tree_bwd_leaves(part, lo, hi, leaves, c, g, gl, dc):
    """Trees lo…hi−1: ∂L/∂leaves into gl (every value written) and ∂L/∂c into dc, summed
    per position over the samples in the leaves' dtype, then over positions in float64."""
    n_gates, n_pos = c.shape[1], leaves.shape[3]
    n_leaf = leaves.shape[2] // 2
    vals = np.empty((n_gates, n_pos), dtype=leaves.dtype)
    grads = np.empty((n_gates, n_pos), dtype=leaves.dtype)
    acc = np.empty((n_gates, 4, n_pos), dtype=leaves.dtype)
    for k in range(lo, hi):
        acc[:] = 0
        for i in range(leaves.shape[0]):
            lk = leaves[i, k]
            _leaf_tree(lk, c[k], vals)
            grads[n_gates - 1] = g[i, k]
            _levels_bwd(c[k], vals, grads, acc, n_leaf)
            for j in range(n_leaf):
                _gate_back(lk[2 * j], lk[2 * j + 1], c[k, j], grads[j], acc[j],
                           gl[i, k, 2 * j], gl[i, k, 2 * j + 1])
        for q in range(n_gates):
            for m in range(4):
                total = 0.0
                for col in range(n_pos):
                    total += acc[q, m, col]
                dc[k, q, m] = total


@njit(**_JIT)
def _pool_fwd(part, lo, hi, x, kernel, stride, y):
    _, ho, wo, n = y.shape
    for item in range(lo, hi):                 # item = channel · H' + output row
        ci, oy = item // ho, item % ho
        for ox in range(wo):
            row = y[ci, oy, ox]
            row[:] = x[ci, oy * stride, ox * stride]
            for e in range(1, kernel * kernel):
                v = x[ci, oy * stride + e // kernel, ox * stride + e % kernel]
                for t in range(n):                # strict >: the first maximum wins, as torch
                    row[t] = v[t] if v[t] > row[t] else row[t]


@njit(**_JIT)
def _pool_bwd(part, lo, hi, x, kernel, stride, y, g, gx):
    """Windows that do not overlap (kernel ≤ stride): each input gets its window's gradient
    if it is the window's first maximum, else 0 (written, not added: no zeroing pass)."""
    _, ho, wo, n = g.shape
    found = np.empty(n, dtype=np.bool_)
    for item in range(lo, hi):                 # item = channel · H' + output row
        ci, oy = item // ho, item % ho
        for ox in range(wo):
            ym, gi = y[ci, oy, ox], g[ci, oy, ox]
            found[:] = False
            for e in range(kernel * kernel):
                v = x[ci, oy * stride + e // kernel, ox * stride + e % kernel]
                out = gx[ci, oy * stride + e // kernel, ox * stride + e % kernel]
                for t in range(n):
                    hit = v[t] == ym[t] and not found[t]
                    out[t] = gi[t] if hit else 0.0
                    found[t] = found[t] or hit


@njit(**_JIT)
def _pool_bwd_overlap(part, lo, hi, x, kernel, stride, g, gx):
    """Overlapping windows (kernel > stride): a channel's windows add into shared inputs."""
    _, ho, wo, n = g.shape
    best = np.empty(n, dtype=x.dtype)
    arg = np.empty(n, dtype=np.int64)
    for ci in range(lo, hi):
        gx[ci] = 0
        for oy in range(ho):
            for ox in range(wo):
                y0, x0 = oy * stride, ox * stride
                best[:] = x[ci, y0, x0]
                arg[:] = 0
                for e in range(1, kernel * kernel):
                    v = x[ci, y0 + e // kernel, x0 + e % kernel]
                    for t in range(n):
                        take = v[t] > best[t]
                        best[t] = v[t] if take else best[t]
                        arg[t] = e if take else arg[t]
                gi = g[ci, oy, ox]
                for e in range(kernel * kernel):
                    row = gx[ci, y0 + e // kernel, x0 + e % kernel]
                    for t in range(n):
                        row[t] += gi[t] if arg[t] == e else 0.0


# ---------------------------------------------------------------------------- threads
_POOL: list = []                     # [(n_workers, ThreadPoolExecutor)], grown on demand
_THREADS = [0]                       # 0: as many as torch uses


def set_num_threads(n: int) -> None:
    """Threads for the fused loops (0: follow ``torch.get_num_threads()``)."""
    _THREADS[0] = max(0, int(n))


def _n_threads() -> int:
    return max(1, _THREADS[0] or torch.get_num_threads())


@contextlib.contextmanager
def training_threads():
    """Inside: torch runs single-threaded and the fused loops take torch's threads.

    With the fused layers torch is left only tiny ops (softmax of the logits, Adam), whose
    OpenMP barriers would dominate a step when the cores are shared. Restored on exit.
    """
    n, old = torch.get_num_threads(), _THREADS[0]
    _THREADS[0] = old or n
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)
        _THREADS[0] = old


def _executor(n_workers: int) -> ThreadPoolExecutor:
    if not _POOL or _POOL[0][0] < n_workers:
        if _POOL:
            _POOL.pop()[1].shutdown(wait=False)
        _POOL.append((n_workers, ThreadPoolExecutor(n_workers,
                                                    thread_name_prefix="kairo-logic")))
    return _POOL[0][1]


def _parallel(kernel, edges: np.ndarray, *args) -> None:
    """kernel(part, edges[part], edges[part + 1], *args) for every part, on shared threads.

    The caller works too and returns once every part is done; a worker that starts late
    finds no part left and returns at once.
    """
    n_parts = len(edges) - 1
    n_threads = min(_n_threads(), n_parts)
    if n_threads <= 1:
        for p in range(n_parts):
            kernel(p, edges[p], edges[p + 1], *args)
        return
    parts = itertools.count()                  # next() is atomic under the GIL
    done = threading.Semaphore(0)
    errors: list = []

    def work():
        while (p := next(parts)) < n_parts:
            try:
                kernel(p, edges[p], edges[p + 1], *args)
            except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
                errors.append(exc)
            finally:
                done.release()

    ex = _executor(n_threads - 1)
    for _ in range(n_threads - 1):
        ex.submit(work)
    work()
    for _ in range(n_parts):
        done.acquire()
    if errors:
        raise errors[0]


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
