"""`Connectome`: an immutable sparse weighted directed graph with a neuron table.

Orientation, everywhere in kairo: ``weights[i, j]`` is the strength of the connection from
presynaptic neuron ``i`` onto postsynaptic neuron ``j`` (rows are pre, columns are post). A
neuron's total input is therefore a column sum and its total output a row sum; for a state
row-vector ``x`` the input each neuron receives is ``x @ weights``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from kairo._errors import DataError, SelectionError

__all__ = ["Connectome", "NEURON_COLUMNS", "parse_group", "read_id_file"]

#: Columns every neuron table has (loaders may add more, e.g. synapse totals).
NEURON_COLUMNS = ("side", "celltype", "annotations", "cluster", "partner_id")
SIDES = ("L", "R", "C", "unknown")          # C: FlyWire's "center" (midline neurons)
_SIDE_NAMES = {"left": "L", "right": "R", "center": "C", "centre": "C", "l": "L", "r": "R",
               "c": "C", "unknown": "unknown"}


def _frozen_csr(m) -> sp.csr_matrix:
    m = sp.csr_matrix(m, dtype=np.float64, copy=True)
    m.sum_duplicates()
    m.eliminate_zeros()
    m.sort_indices()
    for arr in (m.data, m.indices, m.indptr):
        arr.flags.writeable = False
    return m


class Connectome:
    """A connectome: ``weights`` (SciPy CSR, pre → post) and ``neurons`` (pandas, one row each).

    Parameters
    ----------
    weights : sparse or dense array, shape (n_neurons, n_neurons)
        ``weights[i, j]`` = connection strength from neuron ``i`` (pre) onto ``j`` (post).
    neurons : DataFrame, optional
        Indexed by neuron id (the skeleton id for Winding 2023), same order as ``weights``.
        Missing standard columns are filled (side ``"unknown"``, cell type ``"unannotated"``).
    name : str
        Human-readable name, recorded with results.
    history : tuple of str
        The transformations that produced this object (normalizations, null models), oldest
        first; every method that returns a new connectome appends to it.

    Instances never change: arrays are read-only and every transformation returns a new object.
    """

    __slots__ = ("_w", "_neurons", "name", "history")

    def __init__(self, weights, neurons: pd.DataFrame | None = None, *, name: str = "",
                 history: tuple[str, ...] = ()):
        if sp.issparse(weights):
            shape = weights.shape
        else:
            weights = np.asarray(weights)
            shape = weights.shape
        if len(shape) != 2 or shape[0] != shape[1]:
            raise DataError(f"connectome {name or ''} weights must be a square matrix, got "
                            f"shape {shape}")
        w = _frozen_csr(weights)
        if not np.all(np.isfinite(w.data)):
            raise DataError(f"connectome {name!r}: weights contain NaN or infinite values")
        n = shape[0]
        if neurons is None:
            neurons = pd.DataFrame(index=pd.Index(np.arange(n), name="id"))
        if len(neurons) != n:
            raise DataError(f"connectome {name!r}: neuron table has {len(neurons)} rows but the "
                            f"matrix has {n} neurons")
        if not neurons.index.is_unique:
            dup = neurons.index[neurons.index.duplicated()][:5].tolist()
            raise DataError(f"connectome {name!r}: neuron ids are not unique (e.g. {dup})")
        neurons = neurons.copy()
        neurons.index.name = "id"
        defaults = {"side": "unknown", "celltype": "unannotated", "annotations": "",
                    "cluster": "", "partner_id": pd.NA}
        for col, val in defaults.items():
            if col not in neurons:
                neurons[col] = val
        neurons["partner_id"] = neurons["partner_id"].astype("Int64")
        for col in ("side", "celltype", "annotations", "cluster"):
            col_values = neurons[col].astype(object)
            neurons[col] = col_values.where(col_values.notna(), defaults[col]).astype(str)
        bad_sides = sorted(set(neurons["side"]) - set(SIDES))
        if bad_sides:
            raise DataError(f"connectome {name!r}: side must be one of {SIDES}, got {bad_sides}")
        self._w = w
        self._neurons = neurons
        self.name = name
        self.history = tuple(history)

    # ------------------------------------------------------------------ basic properties
    @property
    def weights(self) -> sp.csr_matrix:
        """The weight matrix (read-only CSR, pre → post)."""
        return self._w

    @property
    def neurons(self) -> pd.DataFrame:
        """A copy of the neuron table (index: neuron id)."""
        return self._neurons.copy()

    @property
    def ids(self) -> np.ndarray:
        return self._neurons.index.to_numpy()

    @property
    def n_neurons(self) -> int:
        return self._w.shape[0]

    @property
    def n_edges(self) -> int:
        return self._w.nnz

    @property
    def density(self) -> float:
        n = self.n_neurons
        return self.n_edges / (n * n) if n else 0.0

    def in_strength(self) -> np.ndarray:
        """Total input weight per neuron (column sums)."""
        return np.asarray(self._w.sum(axis=0)).ravel()

    def out_strength(self) -> np.ndarray:
        """Total output weight per neuron (row sums)."""
        return np.asarray(self._w.sum(axis=1)).ravel()

    def __repr__(self) -> str:
        hist = " → ".join(self.history) if self.history else "raw"
        return (f"Connectome({self.name!r}, n_neurons={self.n_neurons}, n_edges={self.n_edges},"
                f" total_weight={self._w.sum():.6g}, {hist})")

    def replace(self, weights=None, *, step: str, neurons: pd.DataFrame | None = None,
                name: str | None = None) -> Connectome:
        """A new connectome with other weights (same neurons), recording ``step`` in history."""
        return Connectome(self._w if weights is None else weights,
                          self._neurons if neurons is None else neurons,
                          name=self.name if name is None else name,
                          history=self.history + (step,))

    # ------------------------------------------------------------------ selections
    def select(self, celltype: str | Sequence[str] | None = None,
               side: str | Sequence[str] | None = None, annotation: str | None = None,
               ids: Iterable | None = None, paired: bool | None = None,
               where: dict | None = None) -> np.ndarray:
        """Positions (sorted int array) of the neurons matching every given criterion.

        Parameters
        ----------
        celltype : str or list of str
            Exact cell type(s), e.g. ``"sensory"``, ``["DN-VNC", "DN-SEZ"]``.
        side : ``"L"``, ``"R"``, ``"C"``, ``"unknown"`` or a list of them (``left``, ``right``
            and ``center`` name L, R and C)
        annotation : str
            Case-insensitive substring of the additional annotations (e.g. ``"olfactory"``).
        ids : iterable of neuron ids
        paired : bool
            Only neurons with (``True``) or without (``False``) a bilateral partner.
        where : dict
            ``{column: value or list of values}``: exact matches in any other column of the
            neuron table (FlyWire's ``class``, ``super_class``, ``nt_type``, …).

        Raises
        ------
        SelectionError
            For an unknown cell type, side or id, or when nothing matches.
        """
        t = self._neurons
        mask = np.ones(len(t), dtype=bool)
        crit = []
        if celltype is not None:
            types = [celltype] if isinstance(celltype, str) else list(celltype)
            known = set(t["celltype"])
            unknown = [c for c in types if c not in known]
            if unknown:
                raise SelectionError(
                    f"unknown cell type(s) {unknown} in connectome {self.name!r}; known: "
                    f"{', '.join(sorted(known))}")
            mask &= t["celltype"].isin(types).to_numpy()
            crit.append(f"celltype={types}")
        if side is not None:
            sides = [side] if isinstance(side, str) else list(side)
            sides = [_SIDE_NAMES.get(str(v).strip().lower(), v) for v in sides]
            unknown = [s for s in sides if s not in SIDES]
            if unknown:
                raise SelectionError(f"unknown side(s) {unknown}; expected one of {SIDES}")
            mask &= t["side"].isin(sides).to_numpy()
            crit.append(f"side={sides}")
        if annotation is not None:
            if not str(annotation).strip():
                raise SelectionError("annotation text for a selection must not be empty")
            mask &= t["annotations"].str.contains(str(annotation), case=False,
                                                  regex=False).to_numpy()
            crit.append(f"annotation~{annotation!r}")
        if ids is not None:
            ids = list(ids)
            index = t.index
            try:
                wanted = pd.Index(ids).astype(index.dtype)
            except (TypeError, ValueError) as exc:
                raise SelectionError(f"neuron ids {ids[:5]} cannot be read as the "
                                     f"connectome's id type {index.dtype}") from exc
            missing = wanted.difference(index)
            if len(missing):
                raise SelectionError(f"{len(missing)} neuron id(s) not in connectome "
                                     f"{self.name!r}, e.g. {missing[:5].tolist()}")
            mask &= index.isin(wanted)
            crit.append(f"ids=[{len(ids)} ids]")
        if paired is not None:
            mask &= (t["partner_id"].notna() == bool(paired)).to_numpy()
            crit.append(f"paired={bool(paired)}")
        for col, values in (where or {}).items():
            if col not in t.columns:
                raise SelectionError(
                    f"{col!r} is not a column of connectome {self.name!r}'s neuron table; "
                    f"columns: {', '.join(map(str, t.columns))}")
            values = [values] if isinstance(values, str) else list(values)
            have = t[col].astype(str)
            unknown = [v for v in values if not have.eq(str(v)).any()]
            if unknown:
                some = sorted(set(have))[:12]
                raise SelectionError(f"no neuron has {col}={unknown[0]!r} in connectome "
                                     f"{self.name!r}; values include: {', '.join(some)}")
            mask &= have.isin([str(v) for v in values]).to_numpy()
            crit.append(f"{col}={values}")
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            raise SelectionError(f"selection {' & '.join(crit) or '(all)'} matches no neuron "
                                 f"in connectome {self.name!r}")
        return idx

    def group(self, spec: str) -> np.ndarray:
        """Positions of the neurons named by a group string (see :func:`parse_group`)."""
        kw = parse_group(spec)
        if kw is None:
            return np.arange(self.n_neurons)
        return self.select(**kw)

    def subgraph(self, idx: np.ndarray) -> Connectome:
        """The connectome induced on positions ``idx`` (order kept)."""
        idx = np.asarray(idx)
        w = self._w[idx][:, idx]
        return Connectome(w, self._neurons.iloc[idx], name=self.name,
                          history=self.history + (f"subgraph({len(idx)})",))


def parse_group(spec: str) -> dict | None:
    """Parse a neuron-group string into :meth:`Connectome.select` keywords.

    Forms: ``"all"`` (every neuron, returns None); ``"sensory"`` (a cell type);
    ``"sensory:L"`` (cell type and side); ``"DN-VNC+DN-SEZ:R"`` (several types);
    ``"@ids.txt"`` (the neuron ids listed in a file, one per line or a CSV column);
    or explicit ``key=value`` pairs joined by ``;`` with keys ``celltype`` (``+``-separated),
    ``side`` (L, R, C or left, right, center), ``annotation``, ``ids`` (``+``-separated, or
    ``@file``), ``paired`` (true/false) and any other column of the neuron table (exact
    values, ``+``-separated), e.g. ``"celltype=sensory;annotation=olfactory;side=L"`` or, on
    FlyWire, ``"class=olfactory;side=left"``.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise SelectionError(f"neuron group must be a non-empty string, got {spec!r}")
    spec = spec.strip()
    if spec == "all":
        return None
    if spec.startswith("@"):
        return {"ids": _id_file(spec[1:])}
    if "=" not in spec:
        typ, _, side = spec.partition(":")
        kw: dict = {"celltype": typ.split("+")}
        if side:
            kw["side"] = side
        return kw
    kw = {}
    for part in spec.split(";"):
        key, eq, val = part.partition("=")
        key = key.strip()
        val = val.strip()
        if not eq or not val or not key:
            raise SelectionError(f"group {spec!r}: part {part!r} is not key=value")
        if key == "celltype":
            kw[key] = val.split("+")
        elif key == "side":
            kw[key] = val.split("+")
        elif key == "annotation":
            kw[key] = val
        elif key == "ids":
            kw[key] = (_id_file(val[1:]) if val.startswith("@") else
                       [int(v) if v.lstrip("-").isdigit() else v for v in val.split("+")])
        elif key == "paired":
            if val.lower() not in ("true", "false"):
                raise SelectionError(f"group {spec!r}: paired must be true or false")
            kw[key] = val.lower() == "true"
        else:
            kw.setdefault("where", {})[key] = val.split("+")
    return kw


def _id_file(path: str) -> list:
    try:
        return read_id_file(path)
    except DataError as exc:
        raise SelectionError(str(exc)) from exc


def read_id_file(path) -> list[int]:
    """Neuron ids from a text file: one per line (``#`` comments and blank lines skipped), or
    a CSV whose first column (or ``root_id``/``bodyId``/``id`` column) holds them."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError(f"{p}: no such id file")
    lines = [ln.split("#", 1)[0].strip() for ln in p.read_text().splitlines()]
    lines = [ln for ln in lines if ln]
    if not lines:
        raise DataError(f"{p}: the id file lists no ids")
    header = [h.strip() for h in lines[0].split(",")]
    col = next((header.index(h) for h in ("root_id", "bodyId", "id", "flywire_id")
                if h in header), None)
    rows = lines[1:] if col is not None or not header[0].lstrip("-").isdigit() else lines
    col = col or 0
    out = []
    for k, ln in enumerate(rows):
        v = ln.split(",")[col].strip() if "," in ln else ln
        if not v.lstrip("-").isdigit():
            raise DataError(f"{p}: line {k + 1 + (len(lines) - len(rows))} is not an integer "
                            f"neuron id: {ln!r}")
        out.append(int(v))
    return out
