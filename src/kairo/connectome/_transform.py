"""Normalizations, signs and null models. Each returns a new `Connectome`; none mutates.

Null models keep the raw (count-level) weights so that the same normalization pipeline can be
applied to the real connectome and to every null — a comparison is only fair when both went
through identical preprocessing.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse import csgraph
import scipy.sparse.linalg as spla

from kairo._errors import KairoError
from kairo.connectome._core import Connectome

__all__ = ["spectral_radius", "normalize", "scale", "apply_signs", "NORMALIZATIONS",
           "NULL_MODELS", "SIGN_MODES", "resolve_signs", "null_model", "degree_preserving_rewire", "weight_shuffle",
           "random_topology", "gaussian_esn", "costi_design", "prepare"]

NORMALIZATIONS = ("none", "spectral", "row", "column")
SIGN_MODES = ("auto", "excitatory", "dale", "given", "keep")


def spectral_radius(w, *, tol: float = 1e-10) -> float:
    """Largest eigenvalue modulus of a directed (non-symmetric) sparse matrix.

    Uses ARPACK (``scipy.sparse.linalg.eigs``) on the matrix itself — not ``eigh``, which
    assumes symmetry and on the Winding matrix returns 417 (the largest |eigenvalue| of the
    matrix read as symmetric) instead of its true Perron root 297.1. Small matrices and ARPACK
    non-convergence fall back to a dense solver.
    """
    w = sp.csr_matrix(w, dtype=np.float64)
    n = w.shape[0]
    if w.nnz == 0 or not _has_cycle(w):
        return 0.0  # nilpotent: every eigenvalue is 0 (ARPACK would return noise)
    if n <= 500:
        return float(np.max(np.abs(scipy.linalg.eigvals(w.toarray()))))
    try:
        vals = spla.eigs(w, k=1, which="LM", tol=tol, return_eigenvectors=False,
                         v0=np.ones(n), maxiter=max(10000, 20 * n))
        return float(np.abs(vals[0]))
    except spla.ArpackNoConvergence:
        if n > 20000:
            raise
        return float(np.max(np.abs(scipy.linalg.eigvals(w.toarray()))))


def _has_cycle(w: sp.csr_matrix) -> bool:
    """True if the directed graph has a self-loop or a strongly connected component of ≥ 2."""
    if np.any(w.diagonal() != 0):
        return True
    n_comp, labels = csgraph.connected_components(w != 0, directed=True, connection="strong")
    return n_comp < w.shape[0]


def _abs_sums(w: sp.csr_matrix, axis: int) -> np.ndarray:
    return np.asarray(abs(w).sum(axis=axis)).ravel()


def normalize(c: Connectome, method: str = "spectral", *, target: float = 0.9) -> Connectome:
    """Return ``c`` normalized.

    method:
      ``spectral`` — scaled so its spectral radius equals ``target``;
      ``row`` — each neuron's out-weights (a row, pre → post) divided by their absolute sum, so
      every neuron with outputs sends a total weight of 1;
      ``column`` — each neuron's in-weights divided by their absolute sum;
      ``none`` — unchanged.
    Neurons with no outputs (row) or inputs (column) keep their zero rows/columns.
    """
    w = c.weights
    if method == "none":
        return c
    if method == "spectral":
        if not np.isfinite(target) or target <= 0:
            raise KairoError(f"spectral radius target must be > 0, got {target}")
        rho = spectral_radius(w)
        if rho == 0:
            raise KairoError(f"connectome {c.name!r} has spectral radius 0 (no cycles); "
                             f"spectral normalization is undefined — use row or column")
        return c.replace(w * (target / rho), step=f"spectral(ρ={target:g}; raw ρ={rho:.6g})")
    if method in ("row", "column"):
        axis = 1 if method == "row" else 0
        s = _abs_sums(w, axis)
        inv = np.divide(1.0, s, out=np.zeros_like(s), where=s > 0)
        d = sp.diags(inv)
        return c.replace(d @ w if method == "row" else w @ d, step=method)
    raise KairoError(f"unknown normalization {method!r}; expected one of "
                     f"{', '.join(NORMALIZATIONS)}")


def scale(c: Connectome, alpha: float) -> Connectome:
    """Multiply all weights by the global gain ``alpha``."""
    if not np.isfinite(alpha):
        raise KairoError(f"gain alpha must be finite, got {alpha}")
    if alpha == 1.0:
        return c
    return c.replace(c.weights * float(alpha), step=f"gain(α={alpha:g})")


def apply_signs(c: Connectome, mode: str = "excitatory", *, inhibitory_fraction: float = 0.0,
                inhibitory_types=(), seed=None) -> Connectome:
    """Give the connectome signs.

    ``keep`` leaves signs as they are (e.g. for the signed Gaussian null); ``given`` does too,
    but refuses a connectome without a negative weight (signs were asked of the data and the
    data have none). ``excitatory`` makes
    every weight positive (absolute value). ``dale`` applies Dale's law by
    neuron: every out-weight of an inhibitory neuron (its row) is negative. Inhibitory neurons
    are the cell types named in ``inhibitory_types`` plus a seeded random ``inhibitory_fraction``
    of the remaining neurons.
    ``auto`` is ``given`` for a connectome with negative weights (transmitter signs from its
    files, e.g. FlyWire's or Shiu's) and ``excitatory`` for one without (synapse counts).
    """
    mode = resolve_signs(mode, c)
    if mode == "keep":
        return c
    if mode == "given":
        if not (c.weights.data < 0).any():
            raise KairoError(f"signs 'given' needs a connectome with signed weights (negative "
                             f"entries for inhibitory synapses); {c.name or 'this one'} has "
                             f"none: use excitatory, or dale with inhibitory types or a "
                             f"fraction")
        return c
    w = abs(sp.csr_matrix(c.weights))
    if mode == "excitatory":
        return c if (c.weights.data >= 0).all() else c.replace(w, step="excitatory")
    if mode != "dale":
        raise KairoError(f"unknown sign mode {mode!r}; expected one of {', '.join(SIGN_MODES)}")
    if not 0.0 <= inhibitory_fraction <= 1.0:
        raise KairoError(f"inhibitory_fraction must be in [0, 1], got {inhibitory_fraction}")
    inh = np.zeros(c.n_neurons, dtype=bool)
    types = [inhibitory_types] if isinstance(inhibitory_types, str) else list(inhibitory_types)
    if types:
        inh[c.select(celltype=types)] = True
    rest = np.flatnonzero(~inh)
    k = int(round(inhibitory_fraction * rest.size))
    if k:
        rng = np.random.default_rng(seed)
        inh[rng.choice(rest, size=k, replace=False)] = True
    if not inh.any():
        raise KairoError("Dale's law needs inhibitory neurons: give inhibitory_fraction > 0 "
                         "or inhibitory_types")
    sign = np.where(inh, -1.0, 1.0)
    return c.replace(sp.diags(sign) @ w,
                     step=f"dale({int(inh.sum())} inhibitory: types={types}, "
                          f"fraction={inhibitory_fraction:g})")


def resolve_signs(mode: str, c: Connectome) -> str:
    """What a sign mode means for ``c``: ``auto`` becomes ``given`` or ``excitatory``."""
    if mode != "auto":
        return mode
    return "given" if (c.weights.data < 0).any() else "excitatory"


def prepare(c: Connectome, *, norm: str = "spectral", spectral_radius_target: float = 0.9,
            alpha: float = 1.0, signs: str = "excitatory", inhibitory_fraction: float = 0.0,
            inhibitory_types=(), seed=None) -> Connectome:
    """The preprocessing pipeline, in its fixed order: signs → normalization → gain α."""
    c = apply_signs(c, signs, inhibitory_fraction=inhibitory_fraction,
                    inhibitory_types=inhibitory_types, seed=seed)
    c = normalize(c, norm, target=spectral_radius_target)
    return scale(c, alpha)


# ---------------------------------------------------------------------------- null models
def _edges(c: Connectome):
    coo = c.weights.tocoo()
    return coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data.copy()


def degree_preserving_rewire(c: Connectome, seed=None, *, swaps_per_edge: float = 10.0
                             ) -> Connectome:
    """Directed double-edge swaps (Maslov & Sneppen 2002) keeping every in- and out-degree.

    Two edges a→b, c→d become a→d, c→b unless that creates a self-loop or an existing edge.
    Weights stay with their presynaptic neuron, so out-strengths are preserved too. Self-loops
    in the input stay in place (swapping them would change the self-loop count).

    Swaps are proposed in vectorized rounds of disjoint edge pairs rather than one at a time
    (networkx's ``directed_edge_swap`` is a Python loop, minutes for 10⁶ swaps): a proposal is
    rejected if either new edge already exists or appears twice in the round, so the graph
    stays simple.
    """
    rng = np.random.default_rng(seed)
    r, col, w = _edges(c)
    n = c.n_neurons
    loop = r == col
    movable = np.flatnonzero(~loop)
    m = movable.size
    if m < 2:
        return c.replace(c.weights, step="rewire(degree-preserving, nothing to swap)")
    target = int(swaps_per_edge * m)
    done = 0
    rounds = 0
    while done < target and rounds < 200:
        rounds += 1
        current = np.sort(r * n + col)
        perm = movable[rng.permutation(m)]
        half = m // 2
        e1, e2 = perm[:half], perm[half:2 * half]
        a, b, cc, d = r[e1], col[e1], r[e2], col[e2]
        k1, k2 = a * n + d, cc * n + b
        ok = (a != d) & (cc != b)
        ok &= ~_contains(current, k1) & ~_contains(current, k2)
        new_keys = np.concatenate([k1[ok], k2[ok]])
        uniq, counts = np.unique(new_keys, return_counts=True)
        dup = uniq[counts > 1]
        if dup.size:
            ok[ok] &= ~(np.isin(k1[ok], dup) | np.isin(k2[ok], dup))
        # a→b, c→d  ⇒  a→d, c→b (sources keep their weights)
        col[e1[ok]], col[e2[ok]] = d[ok], b[ok]
        done += int(ok.sum())
    m_new = sp.csr_matrix((w, (r, col)), shape=(n, n))
    return c.replace(m_new, step=f"rewire(degree-preserving, {done} swaps)")


def _contains(sorted_keys: np.ndarray, q: np.ndarray) -> np.ndarray:
    pos = np.searchsorted(sorted_keys, q)
    pos = np.minimum(pos, sorted_keys.size - 1)
    return sorted_keys[pos] == q


def weight_shuffle(c: Connectome, seed=None) -> Connectome:
    """Real topology, weights permuted among the existing edges."""
    rng = np.random.default_rng(seed)
    r, col, w = _edges(c)
    m = sp.csr_matrix((rng.permutation(w), (r, col)), shape=c.weights.shape)
    return c.replace(m, step="weight-shuffle")


def _random_edges(n: int, n_edges: int, rng, *, self_loops: bool) -> tuple[np.ndarray, ...]:
    """``n_edges`` distinct directed edges drawn uniformly (a G(n, m) random digraph)."""
    space = n * n - (0 if self_loops else n)
    if n_edges > space:
        raise KairoError(f"cannot place {n_edges} edges among {n} neurons")
    keys = np.empty(0, dtype=np.int64)
    while keys.size < n_edges:
        draw = rng.integers(0, n * n, size=int((n_edges - keys.size) * 1.1) + 16)
        if not self_loops:
            draw = draw[draw // n != draw % n]
        keys = np.unique(np.concatenate([keys, draw]))
    keys = rng.permutation(keys)[:n_edges]
    return keys // n, keys % n


def random_topology(c: Connectome, seed=None) -> Connectome:
    """Real weights (shuffled) on a uniformly random directed graph of the same density.

    The random graph has the same number of edges and the same number of self-loops.
    """
    rng = np.random.default_rng(seed)
    r, col, w = _edges(c)
    n = c.n_neurons
    n_loops = int((r == col).sum())
    rr, cc = _random_edges(n, r.size - n_loops, rng, self_loops=False)
    loops = rng.choice(n, size=n_loops, replace=False)
    rr, cc = np.concatenate([rr, loops]), np.concatenate([cc, loops])
    m = sp.csr_matrix((rng.permutation(w), (rr, cc)), shape=(n, n))
    return c.replace(m, step="random-topology(real weights)")


def gaussian_esn(c: Connectome, seed=None) -> Connectome:
    """A classic random ESN of the same size and density: random topology, N(0, 1) weights."""
    rng = np.random.default_rng(seed)
    n = c.n_neurons
    rr, cc = _random_edges(n, c.n_edges, rng, self_loops=True)
    m = sp.csr_matrix((rng.standard_normal(rr.size), (rr, cc)), shape=(n, n))
    return c.replace(m, step="gaussian-esn")


NULL_MODELS = {
    "rewire": degree_preserving_rewire,
    "weight-shuffle": weight_shuffle,
    "random-topology": random_topology,
    "gaussian": gaussian_esn,
}


def null_model(c: Connectome, kind: str, seed=None) -> Connectome:
    """Dispatch to a null model by name (see ``NULL_MODELS``)."""
    if kind not in NULL_MODELS:
        raise KairoError(f"unknown null model {kind!r}; expected one of {', '.join(NULL_MODELS)}")
    return NULL_MODELS[kind](c, seed=seed)


def costi_design(c: Connectome, seed=None) -> dict[tuple[str, str], Connectome]:
    """The 2×2 design of Costi et al. (2025): topology (real/random) × weights (real/random).

    Returns ``{("real", "real"): c, ("real", "random"): weight shuffle,
    ("random", "real"): real weights on random topology, ("random", "random"): Gaussian ESN}``,
    keys as (topology, weights). Seeds for the three nulls are independent streams.
    """
    s = np.random.SeedSequence(seed).spawn(3)
    return {("real", "real"): c,
            ("real", "random"): weight_shuffle(c, np.random.default_rng(s[0])),
            ("random", "real"): random_topology(c, np.random.default_rng(s[1])),
            ("random", "random"): gaussian_esn(c, np.random.default_rng(s[2]))}
