r"""The compiled kernels of the reservoir's ``numba`` engine (:mod:`kairo.reservoir._esn`).

One call runs a whole chunk of steps of x(t) = (1 − a) x(t−1) + a f(x(t−1) W + u(t) W_in + b)
for a block of streams, so Python is out of the loop, and each step is one pass over the
neurons that does the row's sparse product, the input, the bias, ``tanh`` and the leak, then
one pass that writes the step's states into the output.

Two layouts, because one stream and a batch are limited by different things:

- **A batch** (:func:`batch_steps`). The states of a block of streams are stored
  ``[neuron, stream]``, padded to whole 64-byte vectors (16 float32 or 8 float64 streams), so
  each synapse of a row of Wᵀ (CSR, in the neurons' order) multiplies one contiguous vector of
  streams: one index, one weight and one vector load per 16 (8) streams. A block holds 1, 2 or
  4 vectors per neuron; with 2 × 16 float32 streams the block's two state buffers (2 × 378 kB
  for the larval connectome) and the matrix (664 kB with 16-bit indices) stay near a core's
  L2. The sum of each vector is one chain of additions in the order of the row's synapses
  (SciPy's order, two synapses per turn of the loop), so in float64 the product is bit for bit
  SciPy's. The row's epilogue (input, bias, tanh, leak) runs on the sums while they are in
  registers, where the out-of-order core overlaps it with the next row's loads. The output
  (step, stream, neuron) is written by transposing lanes × lanes tiles of states in registers,
  so it is written in whole vectors along the neurons.
- **One stream** (:func:`single_steps`). A vector of streams would be one lane wide, so the
  product is a sparse matrix × vector, limited by the loads of a weight and of a state per
  synapse. Rows are sorted by length and cut into slices of one vector of rows (SELL: per
  slice, the synapses stored column by column, short rows padded with zero weights pointing at
  a slot that stays zero), so a slice's 8 (float64) or 16 (float32) rows advance together as
  the lanes of one vector: one vector load of weights, a lane-by-lane load of the states, one
  multiply and one add per column, each row's sum still in its own order. The neurons are
  kept in that sorted order throughout (:func:`sell`); the caller maps inputs, readouts and
  states.

Vectors are explicit (the ``Vec`` type and its intrinsics below) because numba's loop
vectorizer cannot keep a row's accumulators in registers (it must assume the output may
overlap the state it reads) and its SLP vectorizer is off. ``tanh`` is computed here, in
vectors, from an expm1 (a 2ᵏ scaling and a polynomial on |r| ≤ ln2/2), within 3 ulp of the
correctly rounded value, so the states match SciPy's to rounding, not bit for bit.

Threads: these kernels are serial and release the GIL; the caller runs independent blocks of
streams on its own threads (never numba's threading layer, which must not be entered from two
Python threads at once).
"""

from __future__ import annotations

import math
import operator

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic, models, overload, register_model

__all__ = ["lanes", "batch_steps", "single_steps", "sell", "tanh"]

VEC_BYTES = 64          # one AVX-512 register; LLVM splits it in two on AVX2-only CPUs
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


def lanes(dtype) -> int:
    """Streams per vector for states of ``dtype``."""
    return VEC_BYTES // np.dtype(dtype).itemsize


# ------------------------------------------------------------------------------- vectors
class Vec(types.Type):
    """A vector of ``VEC_BYTES`` of float32 or float64, held in a register."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.lanes = VEC_BYTES * 8 // dtype.bitwidth
        super().__init__(name=f"Vec({dtype}x{self.lanes})")


@register_model(Vec)
class _VecModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        be = ir.VectorType(dmm.lookup(fe_type.dtype).get_value_type(), fe_type.lanes)
        super().__init__(dmm, fe_type, be)


_I32 = ir.IntType(32)


def _vptr(context, builder, arrty, arr, off):
    a = context.make_array(arrty)(context, builder, arr)
    ptr = builder.gep(a.data, [off])
    vt = ir.VectorType(context.get_value_type(arrty.dtype),
                       VEC_BYTES * 8 // arrty.dtype.bitwidth)
    return builder.bitcast(ptr, ir.PointerType(vt))


def _splat(builder, vt, value):
    v = builder.insert_element(ir.Constant(vt, ir.Undefined), value, ir.Constant(_I32, 0))
    return builder.shuffle_vector(v, ir.Constant(vt, ir.Undefined),
                                  ir.Constant(ir.VectorType(_I32, vt.count), [0] * vt.count))


def _call(builder, name, ret, args):
    fn = cgutils.get_or_insert_function(builder.module,
                                        ir.FunctionType(ret, [a.type for a in args]), name)
    return builder.call(fn, args)


def _suffix(llty) -> str:
    if isinstance(llty, ir.VectorType):
        return f"v{llty.count}{_suffix(llty.element)}"
    return "f32" if isinstance(llty, ir.FloatType) else "f64"


@intrinsic
def vload(typingctx, arr, off):
    """The vector at ``arr[off:off + lanes]`` (any alignment)."""
    if not isinstance(arr, types.Array) or arr.dtype not in (types.float32, types.float64):
        return None
    sig = Vec(arr.dtype)(arr, off)

    def codegen(context, builder, sig, args):
        return builder.load(_vptr(context, builder, sig.args[0], args[0], args[1]),
                            align=sig.args[0].dtype.bitwidth // 8)
    return sig, codegen


@intrinsic
def vstore(typingctx, arr, off, v):
    """``arr[off:off + lanes] = v``."""
    if not isinstance(v, Vec):
        return None
    sig = types.none(arr, off, v)

    def codegen(context, builder, sig, args):
        builder.store(args[2], _vptr(context, builder, sig.args[0], args[0], args[1]),
                      align=sig.args[0].dtype.bitwidth // 8)
        return context.get_dummy_value()
    return sig, codegen


@intrinsic
def vzero(typingctx, arr):
    """A zero vector of ``arr``'s dtype."""
    vt = Vec(arr.dtype)
    sig = vt(arr)

    def codegen(context, builder, sig, args):
        return ir.Constant(context.get_value_type(vt), None)
    return sig, codegen


@intrinsic
def vaxpy(typingctx, acc, w, v):
    """``acc + w * v`` for a scalar ``w``: a multiply, then an add (two roundings, as SciPy)."""
    if not isinstance(acc, Vec):
        return None
    sig = acc(acc, acc.dtype, v)

    def codegen(context, builder, sig, args):
        vt = context.get_value_type(sig.args[0])
        return builder.fadd(args[0], builder.fmul(_splat(builder, vt, args[1]), args[2]))
    return sig, codegen


@intrinsic
def vgather(typingctx, arr, idx, off):
    """The vector of ``arr[idx[off + l]]``, from one scalar load per lane: faster here than
    a gather instruction, which AMD CPUs run slowly."""
    if not isinstance(arr, types.Array) or arr.dtype not in (types.float32, types.float64):
        return None
    vt = Vec(arr.dtype)
    sig = vt(arr, idx, off)

    def codegen(context, builder, sig, args):
        a = context.make_array(sig.args[0])(context, builder, args[0])
        ia = context.make_array(sig.args[1])(context, builder, args[1])
        i64 = ir.IntType(64)
        v = ir.Constant(context.get_value_type(vt), ir.Undefined)
        for lane in range(vt.lanes):
            pos = builder.add(args[2], ir.Constant(i64, lane))
            j = builder.load(builder.gep(ia.data, [pos]))
            xv = builder.load(builder.gep(a.data, [builder.zext(j, i64)]))
            v = builder.insert_element(v, xv, ir.Constant(_I32, lane))
        return v
    return sig, codegen


def _binop(op):
    @intrinsic
    def vop(typingctx, a, b):
        vt = a if isinstance(a, Vec) else b
        sig = vt(a, b)

        def codegen(context, builder, sig, args):
            llvt = context.get_value_type(vt)
            x, y = (arg if isinstance(t, Vec) else _splat(builder, llvt, arg)
                    for t, arg in zip(sig.args, args))
            return getattr(builder, op)(x, y)
        return sig, codegen
    return vop


_VOPS = {operator.add: _binop("fadd"), operator.sub: _binop("fsub"),
         operator.mul: _binop("fmul"), operator.truediv: _binop("fdiv")}


def _register_operator(pyop, vop):
    @overload(pyop)
    def _ol(a, b):
        va, vb = isinstance(a, Vec), isinstance(b, Vec)
        if va and vb and a == b or va and b == a.dtype or vb and a == b.dtype:
            return lambda a, b: vop(a, b)
        return None


for _pyop, _vop in _VOPS.items():
    _register_operator(_pyop, _vop)


def _float_or_vec(t) -> bool:
    return isinstance(t, Vec) or t in (types.float32, types.float64)


def _unary(name):
    """An LLVM intrinsic applied to a scalar or a vector (``llvm.<name>.<type>``)."""
    @intrinsic
    def f(typingctx, v):
        if not _float_or_vec(v):
            return None
        sig = v(v)

        def codegen(context, builder, sig, args):
            llt = args[0].type
            return _call(builder, f"llvm.{name}.{_suffix(llt)}", llt, [args[0]])
        return sig, codegen
    return f


_fabs, _floor = _unary("fabs"), _unary("floor")


@intrinsic
def _minc(typingctx, v, c):
    """min(v, c) for a scalar constant ``c`` (``v`` never NaN here)."""
    if not _float_or_vec(v):
        return None
    sig = v(v, v.dtype if isinstance(v, Vec) else v)

    def codegen(context, builder, sig, args):
        x = args[0]
        c = _splat(builder, x.type, args[1]) if isinstance(x.type, ir.VectorType) else args[1]
        return builder.select(builder.fcmp_ordered("<", x, c), x, c)
    return sig, codegen


@intrinsic
def _copysign(typingctx, mag, sgn):
    if not _float_or_vec(mag) or mag != sgn:
        return None
    sig = mag(mag, sgn)

    def codegen(context, builder, sig, args):
        llt = args[0].type
        return _call(builder, f"llvm.copysign.{_suffix(llt)}", llt, list(args))
    return sig, codegen


@intrinsic
def _fmuladd(typingctx, a, b, c):
    """a·b + c, fused where the CPU has FMA (``llvm.fmuladd``); scalars are broadcast."""
    ts = (a, b, c)
    vt = next((t for t in ts if isinstance(t, Vec)), None)
    el = vt.dtype if vt is not None else a
    if el not in (types.float32, types.float64) or any(
            t != el and t != vt for t in ts):
        return None
    rt = vt if vt is not None else el
    sig = rt(a, b, c)

    def codegen(context, builder, sig, args):
        llt = context.get_value_type(rt)
        vals = [_splat(builder, llt, v) if isinstance(llt, ir.VectorType)
                and not isinstance(v.type, ir.VectorType) else v for v in args]
        return _call(builder, f"llvm.fmuladd.{_suffix(llt)}", llt, vals)
    return sig, codegen


@intrinsic
def _pow2(typingctx, k):
    """2**k, exactly, for an integral float k in [0, 62] (float64) or [0, 30] (float32)."""
    if not _float_or_vec(k):
        return None
    sig = k(k)

    def codegen(context, builder, sig, args):
        llt = args[0].type
        vec = isinstance(llt, ir.VectorType)
        elt = llt.element if vec else llt
        it = ir.IntType(64 if isinstance(elt, ir.DoubleType) else 32)
        ity = ir.VectorType(it, llt.count) if vec else it
        one = ir.Constant(ity, [1] * llt.count if vec else 1)
        return builder.sitofp(builder.shl(one, builder.fptosi(args[0], ity)), llt)
    return sig, codegen


@intrinsic
def _store_transposed(typingctx, out, out_off, stride, count, src, rowoff, r0, lane0):
    """Transposes a lanes × lanes tile of states into the output.

    Row j of the tile is the vector at ``src[rowoff[r0 + j] + lane0]`` (the states of readout
    neuron r0 + j for lanes lane0 …); row s of its transpose (that neuron range for one
    stream) goes to ``out[out_off + s·stride:]``, for s < ``count``. The transpose is
    log2(lanes) rounds of interleaving pairs of rows.
    """
    if not isinstance(src, types.Array) or src.dtype not in (types.float32, types.float64) \
            or any(not isinstance(t, types.Integer) or t.bitwidth != 64
                   for t in (out_off, stride, count, r0, lane0, rowoff.dtype)):
        return None
    sig = types.none(out, out_off, stride, count, src, rowoff, r0, lane0)
    n_lanes = VEC_BYTES * 8 // src.dtype.bitwidth

    def codegen(context, builder, sig, args):
        out_a, out_off, stride, count, src_a, rowoff_a, r0, lane0 = args   # all 64-bit
        i64 = ir.IntType(64)
        L = n_lanes
        align = sig.args[4].dtype.bitwidth // 8
        ro = context.make_array(sig.args[5])(context, builder, rowoff_a)
        rows = []
        for j in range(L):
            off = builder.load(builder.gep(ro.data, [builder.add(r0, ir.Constant(i64, j))]))
            rows.append(builder.load(
                _vptr(context, builder, sig.args[4], src_a, builder.add(off, lane0)),
                align=align))
        h = L // 2
        lo = ir.Constant(ir.VectorType(_I32, L), [m for i in range(h) for m in (i, L + i)])
        hi = ir.Constant(ir.VectorType(_I32, L),
                         [m for i in range(h, L) for m in (i, L + i)])
        for _ in range(L.bit_length() - 1):
            nxt = []
            for j in range(h):
                nxt.append(builder.shuffle_vector(rows[j], rows[j + h], lo))
                nxt.append(builder.shuffle_vector(rows[j], rows[j + h], hi))
            rows = nxt
        for s_ in range(L):
            with builder.if_then(builder.icmp_signed(">", count, ir.Constant(i64, s_))):
                off = builder.add(out_off, builder.mul(stride, ir.Constant(i64, s_)))
                builder.store(rows[s_], _vptr(context, builder, sig.args[0], out_a, off),
                              align=align)
        return context.get_dummy_value()
    return sig, codegen


# ------------------------------------------------------------------------------- tanh
def tanh(v):  # pragma: no cover - replaced by the overload in compiled code
    raise NotImplementedError


# expm1(r)/r on |r| ≤ ln2/2 as c₁ + c₂r + …: float64 by its Taylor series (relative error
# below 1e-17); float32 by a least-squares fit with Lawson reweighting toward equal ripple
# (relative error 1.1e-8, a fifth of float32's half ulp), two terms fewer than Taylor's.
_EXPM1_64 = tuple(1.0 / math.factorial(k) for k in range(1, 15))
_EXPM1_32 = (1.00000001062794, 0.4999999812454229, 0.16666506219726251, 0.041667136293413495,
             0.008369068547927946, 0.0013888867135749888)


@overload(tanh, inline="always")
def _tanh_impl(v):
    """tanh(v) = copysign(e / (e + 2), v) with e = expm1(2|v|), for a scalar or a vector.

    expm1(y) = 2ᵏ(1 + q) − 1 = (2ᵏ − 1) + 2ᵏq with k = round(y / ln 2), r = y − k ln 2
    (ln 2 in two parts, so k·ln2_hi is exact) and q = expm1(r) = r·P(r): for k = 0 that is
    q itself, so small |v| keep their relative accuracy. |v| is capped where tanh rounds to
    ±1 (20 in float64, 9.5 in float32), which keeps 2ᵏ an exact integer.
    """
    dt = v.dtype if isinstance(v, Vec) else v
    if dt not in (types.float32, types.float64):
        return None
    f = np.float32 if dt == types.float32 else np.float64
    if f is np.float64:
        cap, hi, lo = f(20.0), f(6.93147180369123816490e-01), f(1.90821492927058770002e-10)
        c = tuple(f(x) for x in _EXPM1_64)
    else:
        cap, hi, lo = f(9.5), f(0.693145751953125), f(1.428606765330187e-06)
        c = tuple(f(x) for x in _EXPM1_32)
    log2e, half, one, two = f(1.4426950408889634), f(0.5), f(1.0), f(2.0)

    @njit(inline="always")
    def reduce(v):
        y = _minc(_fabs(v), cap)
        y = y + y
        k = _floor(_fmuladd(y, log2e, half))
        return k, (y - k * hi) - k * lo

    @njit(inline="always")
    def finish(v, k, r, poly):
        p = _pow2(k)
        e = _fmuladd(p, poly * r, p - one)
        return _copysign(e / (e + two), v)

    if f is np.float64:
        def impl(v):
            k, r = reduce(v)
            q = _fmuladd(r, c[13], c[12])
            q = _fmuladd(q, r, c[11])
            q = _fmuladd(q, r, c[10])
            q = _fmuladd(q, r, c[9])
            q = _fmuladd(q, r, c[8])
            q = _fmuladd(q, r, c[7])
            q = _fmuladd(q, r, c[6])
            q = _fmuladd(q, r, c[5])
            q = _fmuladd(q, r, c[4])
            q = _fmuladd(q, r, c[3])
            q = _fmuladd(q, r, c[2])
            q = _fmuladd(q, r, c[1])
            q = _fmuladd(q, r, c[0])
            return finish(v, k, r, q)
    else:
        def impl(v):
            k, r = reduce(v)
            q = _fmuladd(r, c[5], c[4])
            q = _fmuladd(q, r, c[3])
            q = _fmuladd(q, r, c[2])
            q = _fmuladd(q, r, c[1])
            q = _fmuladd(q, r, c[0])
            return finish(v, k, r, q)
    return impl


# ------------------------------------------------------------------------------- kernels
# Offsets are unsigned in the loops: numba adds a negative-index fix-up to signed ones.
_U = np.uint64


@njit(inline="always", **_JIT)
def _finish(acc, x_old, bias, a, oma, use_tanh, leaky):
    """Bias, activation and leak of one vector of sums (input included), in SciPy's order of
    operations. Takes no arrays: an array argument would cost reference counting per row."""
    acc = acc + bias
    if use_tanh:
        acc = tanh(acc)
    if leaky:
        acc = acc * a + x_old * oma
    return acc


@njit(inline="always", **_JIT)
def _drive(win, k, u, c, u_t, like):
    """u(t) W_in for input neuron ``k`` and one vector of streams (``u``'s flat position
    ``c`` on, channels ``u_t`` apart), summed over the channels in order."""
    d = vzero(like)
    for ch in range(win.shape[0]):
        d = vaxpy(d, win[ch, k], vload(u, c + _U(ch * u_t)))
    return d


@njit(**_JIT)
def batch_steps(indptr, indices, data, in_row, win, u, rd, x, xn, out, b0, nb, nvec,
                bias, a, oma, use_tanh, leaky):
    """Steps ``u.shape[0]`` times on one block of streams; True when the final state is in
    ``xn`` (an odd number of steps), else in ``x``.

    x, xn : flat (n_neurons × W) state buffers, W = ``nvec`` × lanes streams; lanes from
        ``nb`` on are padding (no input, never written out).
    win : (n_inputs, n_input_neurons) input weights.
    u : (T, n_inputs, ≥ b0 + W) inputs, zero past the real streams.
    out : (T, n_streams, n_readout); lane ``s`` of the block is stream ``b0 + s``.
    in_row : per neuron, its column of ``win``, or −1.
    rd : the readout neurons (columns of ``out``).
    a, oma, bias : the leak a, 1 − a and the bias, in the states' dtype.
    """
    n = indptr.shape[0] - 1
    L = _U(VEC_BYTES // x.itemsize)
    W = L * _U(nvec)
    n_ch, u_t = u.shape[1], u.shape[2]
    rowoff = rd * np.int64(W)
    flip = False
    for t in range(u.shape[0]):
        for i in range(n):
            p0, p1 = _U(indptr[i]), _U(indptr[i + 1])
            k = in_row[i]
            c = _U(t * n_ch * u_t + b0)                   # u[t, 0, b0], flat
            o = _U(i) * W
            # two synapses per turn (less loop overhead), each sum still in the row's order
            if nvec == 1:
                s0 = vzero(x)
                jj = p0
                while jj + _U(1) < p1:
                    q, w = _U(indices[jj]) * W, data[jj]
                    q2, w2 = _U(indices[jj + _U(1)]) * W, data[jj + _U(1)]
                    s0 = vaxpy(vaxpy(s0, w, vload(x, q)), w2, vload(x, q2))
                    jj += _U(2)
                if jj < p1:
                    s0 = vaxpy(s0, data[jj], vload(x, _U(indices[jj]) * W))
                if k >= 0:
                    s0 = s0 + _drive(win, k, u, c, u_t, x)
                vstore(xn, o, _finish(s0, vload(x, o), bias, a, oma, use_tanh, leaky))
            elif nvec == 2:
                s0 = vzero(x)
                s1 = vzero(x)
                jj = p0
                while jj + _U(1) < p1:
                    q, w = _U(indices[jj]) * W, data[jj]
                    q2, w2 = _U(indices[jj + _U(1)]) * W, data[jj + _U(1)]
                    s0 = vaxpy(vaxpy(s0, w, vload(x, q)), w2, vload(x, q2))
                    s1 = vaxpy(vaxpy(s1, w, vload(x, q + L)), w2, vload(x, q2 + L))
                    jj += _U(2)
                if jj < p1:
                    q, w = _U(indices[jj]) * W, data[jj]
                    s0 = vaxpy(s0, w, vload(x, q))
                    s1 = vaxpy(s1, w, vload(x, q + L))
                if k >= 0:
                    s0 = s0 + _drive(win, k, u, c, u_t, x)
                    s1 = s1 + _drive(win, k, u, c + L, u_t, x)
                vstore(xn, o, _finish(s0, vload(x, o), bias, a, oma, use_tanh, leaky))
                vstore(xn, o + L, _finish(s1, vload(x, o + L), bias, a, oma, use_tanh, leaky))
            else:
                s0 = vzero(x)
                s1 = vzero(x)
                s2 = vzero(x)
                s3 = vzero(x)
                jj = p0
                while jj + _U(1) < p1:
                    q, w = _U(indices[jj]) * W, data[jj]
                    q2, w2 = _U(indices[jj + _U(1)]) * W, data[jj + _U(1)]
                    s0 = vaxpy(vaxpy(s0, w, vload(x, q)), w2, vload(x, q2))
                    s1 = vaxpy(vaxpy(s1, w, vload(x, q + L)), w2, vload(x, q2 + L))
                    s2 = vaxpy(vaxpy(s2, w, vload(x, q + _U(2) * L)), w2,
                               vload(x, q2 + _U(2) * L))
                    s3 = vaxpy(vaxpy(s3, w, vload(x, q + _U(3) * L)), w2,
                               vload(x, q2 + _U(3) * L))
                    jj += _U(2)
                if jj < p1:
                    q, w = _U(indices[jj]) * W, data[jj]
                    s0 = vaxpy(s0, w, vload(x, q))
                    s1 = vaxpy(s1, w, vload(x, q + L))
                    s2 = vaxpy(s2, w, vload(x, q + _U(2) * L))
                    s3 = vaxpy(s3, w, vload(x, q + _U(3) * L))
                if k >= 0:
                    s0 = s0 + _drive(win, k, u, c, u_t, x)
                    s1 = s1 + _drive(win, k, u, c + L, u_t, x)
                    s2 = s2 + _drive(win, k, u, c + _U(2) * L, u_t, x)
                    s3 = s3 + _drive(win, k, u, c + _U(3) * L, u_t, x)
                o2, o3 = o + _U(2) * L, o + _U(3) * L
                vstore(xn, o, _finish(s0, vload(x, o), bias, a, oma, use_tanh, leaky))
                vstore(xn, o + L, _finish(s1, vload(x, o + L), bias, a, oma, use_tanh, leaky))
                vstore(xn, o2, _finish(s2, vload(x, o2), bias, a, oma, use_tanh, leaky))
                vstore(xn, o3, _finish(s3, vload(x, o3), bias, a, oma, use_tanh, leaky))
        _write_states(out, t, b0, nb, xn, rowoff, np.int64(L))
        x, xn = xn, x
        flip = not flip
    return flip


@njit(inline="always", **_JIT)
def _write_states(out, t, b0, nb, xn, rowoff, L):
    """out[t, b0 + s, r] = lane s of readout neuron r, by transposed tiles of lanes × lanes
    (whole vectors written along the neurons), the last partial tile one by one."""
    n_rd = rowoff.shape[0]
    n_st = out.shape[1]
    full = n_rd - n_rd % L
    for lane0 in range(0, nb, L):
        cnt = min(L, nb - lane0)
        for r0 in range(0, full, L):
            _store_transposed(out, _U((t * n_st + b0 + lane0) * n_rd + r0), _U(n_rd), cnt, xn,
                              rowoff, r0, _U(lane0))
        for r in range(full, n_rd):
            for s in range(cnt):
                out[t, b0 + lane0 + s, r] = xn[rowoff[r] + lane0 + s]


@njit(**_JIT)
def single_steps(sl_ptr, sidx, sdata, in_pos, win, u, rd, x, xn, dvec, out, bias, a, oma,
                 use_tanh, leaky):
    """:func:`batch_steps` for one stream, on the SELL matrix of :func:`sell`.

    x, xn : states in the sorted order, of length n_slices × lanes + lanes; slot
        n_slices × lanes is the padding's zero.
    dvec : scratch of the same length, zero (the input is scattered into it each step).
    in_pos, rd : sorted positions of the input neurons (columns of ``win``) and of the
        readout neurons (columns of ``out``).
    u : (T, n_inputs) inputs.
    """
    C = _U(VEC_BYTES // x.itemsize)
    flip = False
    zero = dvec[dvec.shape[0] - 1]
    for t in range(u.shape[0]):
        for j in range(in_pos.shape[0]):
            d = zero
            for ch in range(win.shape[0]):
                d += win[ch, j] * u[t, ch]
            dvec[in_pos[j]] = d
        for s in range(sl_ptr.shape[0] - 1):
            acc = vzero(x)
            p, end = _U(sl_ptr[s]), _U(sl_ptr[s + 1])
            while p + C < end:                  # two columns per turn, in the rows' order
                acc = acc + vload(sdata, p) * vgather(x, sidx, p)
                acc = acc + vload(sdata, p + C) * vgather(x, sidx, p + C)
                p += C + C
            if p < end:
                acc = acc + vload(sdata, p) * vgather(x, sidx, p)
            o = _U(s) * C
            acc = acc + vload(dvec, o)
            vstore(xn, o, _finish(acc, vload(x, o), bias, a, oma, use_tanh, leaky))
        for r in range(rd.shape[0]):
            out[t, 0, r] = xn[rd[r]]
        x, xn = xn, x
        flip = not flip
    return flip


@njit(cache=True)
def _sell_fill(indptr, indices, data, order, inv, C, sl_ptr, sidx, sdata):
    for s in range(sl_ptr.shape[0] - 1):
        for lane in range(C):
            pos = s * C + lane
            if pos >= order.shape[0]:
                break
            row = order[pos]
            q = sl_ptr[s] + lane
            for jj in range(indptr[row], indptr[row + 1]):
                sidx[q] = inv[indices[jj]]
                sdata[q] = data[jj]
                q += C


def sell(wt):
    """The SELL form of a CSR matrix (rows = post-synaptic neurons of x ↦ x W), with slices
    of C = :func:`lanes` rows.

    Returns ``(sl_ptr, sidx, sdata, order)``: rows sorted by decreasing length (stable, so
    ties keep the neurons' order), ``order[p]`` the neuron at sorted position ``p``; slice
    ``s`` holds rows sC … sC + C − 1, its entries at ``sl_ptr[s]`` + C·j + lane, column
    indices already in sorted positions. Padding has weight 0 and points at position
    C × n_slices, a slot that stays zero.
    """
    n = wt.shape[0]
    C = lanes(wt.dtype)
    lens = np.diff(wt.indptr)
    order = np.argsort(-lens, kind="stable")
    inv = np.empty(n, np.int64)
    inv[order] = np.arange(n)
    n_sl = -(-n // C)
    padded = np.zeros(n_sl * C, np.int64)
    padded[:n] = lens[order]
    sl_len = padded.reshape(n_sl, C).max(axis=1)
    sl_ptr = np.zeros(n_sl + 1, np.int64)
    np.cumsum(sl_len * C, out=sl_ptr[1:])
    zero_slot = n_sl * C
    idx_t = np.uint16 if zero_slot < 2 ** 16 else np.uint32
    sidx = np.full(int(sl_ptr[-1]), zero_slot, idx_t)
    sdata = np.zeros(int(sl_ptr[-1]), wt.dtype)
    _sell_fill(wt.indptr.astype(np.int64), wt.indices.astype(np.int64), wt.data, order,
               inv, C, sl_ptr, sidx, sdata)
    return sl_ptr, sidx, sdata, order
