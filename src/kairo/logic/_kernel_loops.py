"""The numba loops of the fused logic layers (:mod:`kairo.logic._kernels` wraps them in
autograd functions and describes the layout and the arithmetic).

Every top-level loop has the signature ``loop(part, lo, hi, *arrays)``: it does items
lo … hi−1 of a job (gates, output rows, kernels, channels) and writes only what those items
own (``part`` picks a per-part scratch or gradient buffer), so
``kairo.logic._kernel_threads._parallel`` may run the parts on any threads in any
order. The loops release the GIL; small helpers are inlined into them
(``inline="always"``, which speeds up the conv backward).

Numba compiles with ``cache=True`` (the machine's LLVM, from source; nothing downloaded), so
only the first run on a machine pays the compile time (seconds of CPU per dtype).
"""

from __future__ import annotations

import numpy as np
from numba import njit

_JIT = {"fastmath": False, "cache": True, "nogil": True}
_INL = {**_JIT, "inline": "always"}


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
