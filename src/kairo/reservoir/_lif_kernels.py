r"""The numba kernels of the LIF network's event-driven engine (``kairo.reservoir._spiking``).

One trial advances window by window: no spike reaches another neuron sooner than the delay
``d``, so within a window of up to ``d`` steps every neuron's trajectory depends only on its
own state and on events from spikes before the window. The neurons are cut into blocks
(``2**shift`` neurons); each block runs through all of the window's steps while its state
stays in cache, where stepping all neurons once per step would stream every neuron's state
through memory once per step.

The window's events are placed by target block first (a stable counting sort), as
(step of the window, neuron of the block), and summed per step and neuron in the order of
the spiking neurons and their synapses. A block's integration loop then updates every
neuron without a branch (it vectorizes) and puts the v and g of its few refractory neurons
back afterwards, instead of testing every neuron at every step. Each neuron gets the
operations of step-by-step integration in the same order, so the spikes are the same.

Blocks are independent within a window, so they are also cut into *parts*, runs of
consecutive blocks that run at the same time (:func:`_advance_threads`: Python threads that
take parts from a shared counter and run them in a kernel that releases the GIL; numba's
``parallel=True`` would bring a threading layer whose workers spin between windows, which
stalls a run on a shared machine, and whose default layer aborts when two threads start
kernels at once). A part takes the stretch of each spiking neuron's synapses (sorted by
target) onto its own neurons, and writes its spikes into its own stretch of the history row
(its neurons, which spike at most once each per step); the parts are then merged in part
order. So the spikes come out in the order of one part (:func:`_advance`), and they are the
same for any number of threads.
"""

from __future__ import annotations

import itertools
import os
import threading
import time

import numpy as np
from numba import njit

__all__ = ["_advance", "_advance_threads", "_by_step", "_team"]


# a block whose refractory neurons at the start of a window are more than 1 in this many
# tests every neuron in its integration loop through the window; fewer are put back after
# a loop without a test (putting one back costs about what the test costs for this many)
_HELD_SHARE = 64


@njit(cache=True, nogil=True)
def _window_sources(s1, w, hist, hcount, indptr):
    """The neurons whose spikes reach steps s1 … s1+w−1 (they spiked d steps earlier): their
    positions, per step of the window where its sources start (``ptr``), and the number of
    their synapses. Their history slots are emptied for the window's own spikes."""
    d = hist.shape[0]
    total = 0
    for k in range(w):
        if s1 + k - d >= 0:
            total += hcount[(s1 + k) % d]
    src = np.empty(total, np.int64)
    ptr = np.empty(w + 1, np.int64)
    m = 0
    n_ev = 0
    for k in range(w):
        ptr[k] = m
        h = (s1 + k) % d
        if s1 + k - d >= 0:
            for q in range(hcount[h]):
                i = hist[h, q]
                src[m] = i
                n_ev += indptr[i + 1] - indptr[i]
                m += 1
        hcount[h] = 0
    ptr[w] = m
    return src, ptr, n_ev


@njit(cache=True, nogil=True)
def _scratch(n_parts, shift, n_blocks, d, n_src, n_ev):
    """Each part's scratch (a row per part) for windows of up to ``n_src`` sources and
    ``n_ev`` events (delay ``d`` steps), allocated once and not per window and part: threads
    that allocate and free big arrays map and unmap memory, which stops every thread of the
    process. Rows are padded by 128 bytes: two threads that write to one cache line wait for
    each other."""
    pad = 16
    return (np.zeros((n_parts, 32 + pad), np.int64),
            np.zeros((n_parts, (min(d, 32) << shift) + pad)),
            np.empty((n_parts, n_src + pad), np.int64),
            np.empty((n_parts, n_src + pad), np.int64),
            np.empty((n_parts, n_blocks + 1 + pad), np.int64),
            np.empty((n_parts, n_ev + pad), np.int32), np.empty((n_parts, n_ev + pad)),
            np.empty((n_parts, 32 + pad), np.int64),
            np.empty((n_parts, (1 << shift) + pad), np.int64),
            np.empty((n_parts, (2 << shift) + pad)))


@njit(cache=True, nogil=True)
def _first_at_least(a, lo, hi, x):
    """The first position p in lo … hi−1 with a[p] ≥ x (a sorted there), else hi."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, nogil=True)
def _first_target_at_least(a, lo, hi, x, n):
    """:func:`_first_at_least` for a row of targets in 0 … n−1: from where x would lie if
    they were spread evenly, in steps that double until they pass it (a few reads of one
    or two cache lines where a bisection of the row would read one line per halving)."""
    if lo >= hi:
        return lo
    p = min(lo + (hi - lo) * x // n, hi - 1)
    step = 1
    if a[p] < x:                                   # the answer is in p+1 … hi
        q = p + 1
        while q < hi and a[q] < x:
            p = q
            q = p + step
            step *= 2
        return _first_at_least(a, p + 1, min(q, hi), x)
    q = p                                          # a[q] ≥ x: the answer is in lo … q
    while p > lo and a[p - 1] >= x:
        q = p - 1
        p = max(q - step, lo)
        step *= 2
    return _first_at_least(a, p, q, x)


# Long on purpose (a numba kernel of about 150 lines): the engine's hot loop. Its two phases,
# placing the window's events by target block and then running each block through the
# window's steps, share the part's bounds and a dozen scratch arrays, which separate kernels
# would each take as some thirty arguments; and the block loop's integration, threshold,
# input and reset are tuned together (loops that vectorize, a block's state kept in cache)
# and timed as one (benchmarks/lif_adult.py).
@njit(cache=True, nogil=True)
def _part(b0, b1, shift, s1, w, k0, v, g, until, hist, ref, indptr, indices, wdata, src,
          src_ptr, ev_ptr, ev_idx, v_rest, v_th, v_reset, a_m, a_s, c, w_in, cnt, acc, first,
          last, start, e_at, e_w, icur, refr, held):
    """Blocks b0 … b1−1 through the window's w steps (s1 …). Spikes of step s1+k go to
    ``hist[(s1+k) % d, lo + x]`` for x < ``cnt[k]`` (lo: the part's first neuron), in order
    of neuron. The rest of the arguments after ``cnt`` are the part's scratch: ``acc`` (32
    steps of a block, zero), one place per source, per block, per event of the window, per
    step, per neuron of a block, two per neuron of a block."""
    n = v.shape[0]
    d = hist.shape[0]
    block = 1 << shift
    mask = block - 1
    lo_p = b0 << shift
    hi_p = min(b1 << shift, n)
    # the window's events onto the part, placed by target block (a stable counting sort:
    # counted, then placed), each as (step of the window) · block + the target's place; a
    # source's synapses onto the part are a stretch of its row, which is sorted by target.
    # A part of one block sums them at once.
    one = b1 - b0 == 1
    start[:b1 - b0 + 1] = 0
    for k in range(w):
        for q in range(src_ptr[k], src_ptr[k + 1]):
            i = src[q]
            a = indptr[i] if lo_p == 0 else _first_target_at_least(
                indices, indptr[i], indptr[i + 1], lo_p, n)
            e = indptr[i + 1] if hi_p == n else _first_target_at_least(
                indices, a, indptr[i + 1], hi_p, n)
            if one:
                for p in range(a, e):
                    acc[(k << shift) + indices[p] - lo_p] += wdata[p]
            else:
                first[q] = a
                last[q] = e
                for p in range(a, e):
                    start[(indices[p] >> shift) - b0 + 1] += 1
    if not one:
        for b in range(b1 - b0):
            start[b + 1] += start[b]
        pos = start[:b1 - b0].copy()
        for k in range(w):
            for q in range(src_ptr[k], src_ptr[k + 1]):
                for p in range(first[q], last[q]):
                    j = indices[p]
                    b = (j >> shift) - b0
                    x = pos[b]
                    pos[b] = x + 1
                    e_at[x] = (k << shift) | (j & mask)    # < 32 · block
                    e_w[x] = wdata[p]
    for k in range(w):
        cnt[k] = 0
        icur[k] = _first_at_least(ev_idx, ev_ptr[k0 + k], ev_ptr[k0 + k + 1], lo_p)
    for b in range(b0, b1):
        lo = b << shift
        hi = min(lo + block, n)
        # the block's events summed per step and neuron, in the order of the spiking
        # neurons and their synapses
        for x in range(start[b - b0], start[b - b0 + 1]):
            acc[e_at[x]] += e_w[x]
        vb, gb, ub = v[lo:hi], g[lo:hi], until[lo:hi]
        # the block's refractory neurons: a few are put back after an integration loop
        # that updates every neuron without a test; with many, the loop tests each neuron.
        # A part of one block (a small graph: events on many of its neurons) zeroes its
        # rows of events in that loop, the others zero the places of their events below.
        n_ref = 0
        for i in range(hi - lo):
            if ub[i] > s1:
                refr[n_ref] = i
                n_ref += 1
        test = one or n_ref * _HELD_SHARE > hi - lo
        for k in range(w):
            s = s1 + k
            spk = hist[s % d]
            row = acc[k << shift:(k << shift) + hi - lo]
            n_held = 0
            if not test:
                for x in range(n_ref):
                    i = refr[x]
                    if s < ub[i]:             # still refractory: keep it, save v and g
                        refr[n_held] = i
                        held[2 * n_held] = vb[i]
                        held[2 * n_held + 1] = gb[i]
                        n_held += 1
                n_ref = n_held
            # integrate (no branch, so that the loop vectorizes; indices from 0, which numba
            # knows are not negative); a refractory neuron's v and g are held, and its
            # events lost
            above = 0
            if test:
                for i in range(hi - lo):
                    r = row[i]
                    row[i] = 0.0
                    free = s >= ub[i]
                    gi = gb[i]
                    vi = vb[i]
                    v_new = v_rest + a_m * (vi - v_rest) + c * gi
                    g_new = a_s * gi + r
                    v_new = v_new if free else vi
                    vb[i] = v_new
                    gb[i] = g_new if free else gi
                    above += v_new > v_th
            else:                                      # a few: put them back afterwards
                for i in range(hi - lo):
                    r = row[i]
                    gi = gb[i]
                    vi = vb[i]
                    v_new = v_rest + a_m * (vi - v_rest) + c * gi
                    vb[i] = v_new
                    gb[i] = a_s * gi + r
                    above += v_new > v_th
                for x in range(n_held):
                    i = refr[x]
                    above += (held[2 * x] > v_th) - (vb[i] > v_th)
                    vb[i] = held[2 * x]
                    gb[i] = held[2 * x + 1]
            # threshold (a refractory v is held); most blocks have no candidate in most
            # steps, and counting them vectorizes where the scan's branches do not; the
            # scan stops at the last one
            m0 = lo_p + cnt[k]
            m = m0
            i = 0
            while above:                    # up to the last neuron above threshold
                if vb[i] > v_th:
                    above -= 1
                    if s >= ub[i]:
                        spk[m] = lo + i
                        m += 1
                        ub[i] = s + max(ref[lo + i], 1)
                        if not test:
                            refr[n_ref] = i
                            n_ref += 1
                i += 1
            cnt[k] = m - lo_p
            e = icur[k]
            e_end = ev_ptr[k0 + k + 1]
            while e < e_end and ev_idx[e] < hi:
                j = ev_idx[e]
                if s >= until[j]:
                    v[j] += w_in
                e += 1
            icur[k] = e
            for y in range(m0, m):                            # reset
                i = spk[y] - lo
                vb[i] = v_reset
                gb[i] = 0.0
        # zero the places of the events (a few of a block of many: zeroing whole rows would
        # add a store per neuron and step)
        if not one:
            for x in range(start[b - b0], start[b - b0 + 1]):
                acc[e_at[x]] = 0.0


@njit(cache=True, nogil=True)
def _window_end(s1, w, hist, hcount, bounds, shift, cnt, out_step, out_neuron, n_out):
    """Merge the parts' spikes in part order into each step's history row and append them to
    the output; returns the new output length."""
    d = hist.shape[0]
    for k in range(w):
        row = hist[(s1 + k) % d]
        m = 0
        for t in range(bounds.size - 1):
            lo_p = bounds[t] << shift
            for x in range(cnt[t, k]):     # m ≤ lo_p + x: no spike is overwritten uncopied
                row[m] = row[lo_p + x]
                m += 1
        hcount[(s1 + k) % d] = m
        for q in range(m):
            out_step[n_out] = s1 + k
            out_neuron[n_out] = row[q]
            n_out += 1
    return n_out


@njit(cache=True, nogil=True)
def _window_length(n_steps, k0, d, n, out_step, n_out):
    # long delays: windows of at most 32 steps bound the scratch memory; a window must fit
    # the spike buffer, every neuron spiking at every step
    return min(d, 32, n_steps - k0, (out_step.shape[0] - n_out) // max(n, 1))


@njit(cache=True, nogil=True)
def _advance(s0, n_steps, v, g, until, hist, hcount, ref, indptr, indices, wdata, ev_ptr,
             ev_idx, v_rest, v_reset, v_th, a_m, a_s, c, w_in, shift, bounds, out_step,
             out_neuron):
    """Steps s0 … s0+n_steps−1 of one trial on the calling thread, the blocks cut into the
    parts ``bounds`` (block numbers; the parts change nothing but where spikes are kept
    before the merge); returns (steps done, spikes written). Stops early when the spike
    buffer might overflow (the caller empties it and calls again). Input events (``ev_ptr``
    over steps, ``ev_idx``) must be sorted by neuron within each step.

    ``until[i]``: the first step at which neuron i is not refractory. Brian2's rule, free at
    step t after a spike at s when t − s ≥ refractory, becomes until = s + refractory; a
    neuron is never free in the step it spikes (its events and input that step are lost),
    hence s + max(refractory, 1).

    Delays: ``hist[s % d, :hcount[s % d]]`` holds the neurons that spiked at step s; their
    synaptic events reach the integration of step s + d."""
    n = v.shape[0]
    d = hist.shape[0]
    n_parts = bounds.size - 1
    n_blocks = bounds[n_parts]
    cnt, acc, first, last, start, e_at, e_w, icur, refr, held = _scratch(n_parts, shift,
                                                                         n_blocks, d, 0, 0)
    n_out = 0
    k0 = 0
    while k0 < n_steps:
        w = _window_length(n_steps, k0, d, n, out_step, n_out)
        if w < 1:
            return k0, n_out
        s1 = s0 + k0
        src, src_ptr, n_ev = _window_sources(s1, w, hist, hcount, indptr)
        if src.size > first.shape[1] or n_ev > e_at.shape[1]:
            cnt, acc, first, last, start, e_at, e_w, icur, refr, held = _scratch(
                n_parts, shift, n_blocks, d, src.size + src.size // 4, n_ev + n_ev // 4)
        for t in range(n_parts):
            _part(bounds[t], bounds[t + 1], shift, s1, w, k0, v, g, until, hist, ref, indptr,
                  indices, wdata, src, src_ptr, ev_ptr, ev_idx, v_rest, v_th, v_reset, a_m,
                  a_s, c, w_in, cnt[t], acc[t], first[t], last[t], start[t], e_at[t], e_w[t],
                  icur[t], refr[t], held[t])
        n_out = _window_end(s1, w, hist, hcount, bounds, shift, cnt, out_step, out_neuron,
                            n_out)
        k0 += w
    return n_steps, n_out


class _Team:
    """Worker threads that take the parts of a window together with the caller, from a
    shared counter: a thread that the OS does not run in time takes no part and leaves its
    share to the others, where a fixed share per thread would hold every window up until
    it ran (the machine may be shared). Idle workers sleep on a condition, they do not
    spin. One caller at a time.

    ``lead``: blocks that the caller's part (the first, which the caller takes while the
    workers wake up) gets beyond an even share, so that it finishes just after the others
    and does not sleep until they wake it; :func:`_advance_threads` adjusts it."""

    def __init__(self, n_workers: int):
        lock = threading.Lock()
        self.posted = threading.Condition(lock)       # a new job, for the workers
        self.finished = threading.Condition(lock)     # a job done, for its caller
        self.gen, self.job, self.lead = 0, None, 0
        self.pid = os.getpid()
        self.n_workers = n_workers
        for _ in range(n_workers):
            threading.Thread(target=self._work, daemon=True, name="kairo-lif").start()

    def _work(self) -> None:
        seen = 0
        while True:
            with self.posted:
                while self.gen == seen:
                    self.posted.wait()
                seen, job = self.gen, self.job
            self._take(job, worker=True)

    def _take(self, job: list, worker: bool = False) -> None:
        """Parts of ``job`` ([fn, counter, n, done, error, when the workers' last part
        ended]) until none is left; its count of parts done is the job's own, so a worker
        that finishes a part of an abandoned job (the caller interrupted) counts nothing
        towards the next."""
        fn, counter, n = job[0], job[1], job[2]
        did, error = 0, None
        for t in counter:                 # next() on one count is atomic under the GIL
            if t >= n:
                break
            try:
                fn(t)
            except BaseException as exc:  # noqa: BLE001 (re-raised by the caller)
                error = exc
            did += 1
        if did:
            with self.finished:
                job[3] += did
                job[4] = job[4] or error
                if worker:
                    job[5] = time.perf_counter()
                if job[3] == n:
                    self.finished.notify()

    def run(self, fn, n: int) -> tuple[float, float]:
        """``fn(t)`` for t < n, on the workers and the calling thread; returns when all
        are done, with when the caller's parts ended and when the workers' did (0: they
        took none)."""
        job = [fn, itertools.count(), n, 0, None, 0.0]
        with self.posted:
            self.job = job
            self.gen += 1
            self.posted.notify_all()
        self._take(job)
        mine = time.perf_counter()
        with self.finished:
            while job[3] < n:
                self.finished.wait()
        if job[4] is not None:
            raise job[4]
        return mine, job[5]


_TEAMS: list = []


def _team(n_threads: int) -> _Team:
    """A team of at least ``n_threads`` − 1 workers, made once (again in a forked child,
    which has none of its parent's threads)."""
    if not _TEAMS or _TEAMS[0].pid != os.getpid() or _TEAMS[0].n_workers < n_threads - 1:
        _TEAMS[:] = [_Team(n_threads - 1)]
    return _TEAMS[0]


def _split(n_blocks: int, n_parts: int, lead: int) -> np.ndarray:
    """Part boundaries (block numbers): the first part ``lead`` blocks beyond an even share
    (at least one block, and one for each other part), the others even."""
    if n_parts == 1:
        return np.array([0, n_blocks], np.int64)
    first = min(max(-(-n_blocks // n_parts) + lead, 1), n_blocks - n_parts + 1)
    rest = n_parts - 1
    return np.array([0] + [first + (n_blocks - first) * t // rest for t in range(rest + 1)],
                    np.int64)


_SLACK_S = 10e-6     # the caller's part may end this long after the others' without a change


def _advance_threads(team, s0, n_steps, v, g, until, hist, hcount, ref, indptr, indices,
                     wdata, ev_ptr, ev_idx, v_rest, v_reset, v_th, a_m, a_s, c, w_in, shift,
                     bounds, out_step, out_neuron):
    """:func:`_advance` with the parts of each window run by ``team`` (one synchronisation
    per window: the next window needs this one's spikes); the parts' kernel releases the
    GIL. ``bounds`` gives the number of parts and of blocks; the team's ``lead`` moves the
    first boundary, window by window, until the caller's part ends just after the others
    (the parts change nothing but the time)."""
    n = v.shape[0]
    d = hist.shape[0]
    n_parts = bounds.size - 1
    n_blocks = int(bounds[n_parts])
    scratch = rows = None
    n_out = 0
    k0 = 0
    while k0 < n_steps:
        w = _window_length(n_steps, k0, d, n, out_step, n_out)
        if w < 1:
            return k0, n_out
        s1 = s0 + k0
        src, src_ptr, n_ev = _window_sources(s1, w, hist, hcount, indptr)
        if scratch is None or src.size > scratch[2].shape[1] or n_ev > scratch[6].shape[1]:
            scratch = _scratch(n_parts, shift, n_blocks, d, src.size + src.size // 4,
                               n_ev + n_ev // 4)
            rows = [tuple(x[t] for x in scratch) for t in range(n_parts)]
        common = (shift, s1, w, k0, v, g, until, hist, ref, indptr, indices, wdata, src,
                  src_ptr, ev_ptr, ev_idx, v_rest, v_th, v_reset, a_m, a_s, c, w_in)
        parts = _split(n_blocks, n_parts, team.lead)
        lims = parts.tolist()
        mine, others = team.run(lambda t: _part(lims[t], lims[t + 1], *common, *rows[t]),
                                n_parts)
        # (a window whose parts the caller took all says nothing: a worker woke up late)
        if others > mine:                           # the caller waited: a larger first part
            team.lead = min(team.lead + 1, n_blocks)
        elif others and mine > others + _SLACK_S:
            team.lead = max(team.lead - 1, -n_blocks)
        n_out = _window_end(s1, w, hist, hcount, parts, shift, scratch[0], out_step,
                            out_neuron, n_out)
        k0 += w
    return n_steps, n_out


@njit(cache=True, nogil=True)
def _by_step(ks, js, n):
    """Input spikes (step ks[e] of n, neuron js[e]) as CSR over steps: (ptr, neurons), the
    neurons of each step in ascending order. A counting sort, linear in the events, where
    ``np.lexsort`` would sort them (notes/reservoir.md)."""
    ptr = np.zeros(n + 1, np.int64)
    for e in range(ks.size):
        ptr[ks[e] + 1] += 1
    for k in range(n):
        ptr[k + 1] += ptr[k]
    out = np.empty(js.size, np.int64)
    pos = ptr[:n].copy()
    for e in range(ks.size):
        out[pos[ks[e]]] = js[e]
        pos[ks[e]] += 1
    for k in range(n):
        a, b = ptr[k], ptr[k + 1]
        if b - a > 32:
            out[a:b] = np.sort(out[a:b])
        else:                                      # a few per step: insertion, no allocation
            for x in range(a + 1, b):
                y, z = out[x], x
                while z > a and out[z - 1] > y:
                    out[z] = out[z - 1]
                    z -= 1
                out[z] = y
    return ptr, out
