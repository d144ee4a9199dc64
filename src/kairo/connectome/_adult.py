"""The adult fly brain's files: Shiu et al.'s parquet, FlyWire Codex exports, neuPrint exports.

Each loader reads the files exactly as their publishers write them and returns a
:class:`Connectome` of signed synapse counts (pre → post) whose neuron table is indexed by the
file's 64-bit ids (root ids, body ids), kept as ``int64`` from the file to the table — never
through a float, which would merge ids above 2**53.

Transmitter signs are Shiu et al. 2024's: a presynaptic neuron whose (predicted) transmitter
is GABA or glutamate inhibits, every other one excites. A loader that applied them says so in
the connectome's ``history``.

Large files go through pyarrow's readers (multi-threaded CSV parsing, gzip by extension) and
NumPy, not pandas' object columns: the FlyWire connection table has ~17 million rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

from kairo._errors import DataError
from kairo.connectome._core import Connectome, read_id_file  # noqa: F401 (re-exported)

__all__ = ["load_shiu", "load_codex", "load_neuprint", "save_shiu", "transmitter_sign",
           "INHIBITORY_TRANSMITTERS", "adult_files", "read_id_file"]

#: Transmitters whose neurons inhibit (Shiu et al. 2024); every other transmitter excites.
INHIBITORY_TRANSMITTERS = ("gaba", "glut", "glutamate", "glu")

SHIU_COLUMNS = ("Presynaptic_ID", "Postsynaptic_ID", "Presynaptic_Index", "Postsynaptic_Index",
                "Connectivity", "Excitatory", "Excitatory x Connectivity")
CODEX_EDGE_COLUMNS = ("pre_root_id", "post_root_id", "neuropil", "syn_count", "nt_type")
CODEX_CLASSIFICATION = ("root_id", "flow", "super_class", "class", "sub_class", "hemilineage",
                        "side", "nerve")
CODEX_NEURONS = ("root_id", "group", "nt_type", "nt_type_score")
NEUPRINT_EDGE_COLUMNS = ("bodyId_pre", "bodyId_post", "weight")
NEUPRINT_NEURON_COLUMNS = ("bodyId", "type", "instance")

# the file names each publisher uses (first match wins), for finding a file's companions
_CODEX_CONNECTIONS = ("connections.csv.gz", "connections.csv",
                      "connections_no_threshold.csv.gz", "connections_no_threshold.csv",
                      "connections_princeton.csv.gz", "connections_princeton.csv",
                      "connections_princeton_no_threshold.csv.gz",
                      "connections_princeton_no_threshold.csv")
_CODEX_TABLES = {"classification": ("classification.csv.gz", "classification.csv"),
                 "neurons": ("neurons.csv.gz", "neurons.csv"),
                 "cell_types": ("consolidated_cell_types.csv.gz", "consolidated_cell_types.csv")}
_SIDES = {"left": "L", "right": "R", "center": "C", "l": "L", "r": "R", "c": "C"}


def transmitter_sign(nt) -> np.ndarray:
    """+1 or −1 per transmitter name (GABA and glutamate inhibit; any other name, or none,
    excites), for an array of names in any case (``GABA``, ``gaba``, ``GLUT``, ``glutamate``)."""
    names = pd.Series(np.asarray(nt, dtype=object)).fillna("").astype(str).str.strip().str.lower()
    return np.where(names.isin(INHIBITORY_TRANSMITTERS), -1, 1).astype(np.int64)


# ---------------------------------------------------------------------------- file helpers
def _first(folder: Path, names) -> Path | None:
    for name in names:
        if (folder / name).is_file():
            return folder / name
    return None


def _missing_columns(have, need, label: str, what: str) -> None:
    missing = [c for c in need if c not in have]
    if missing:
        raise DataError(f"{label}: missing column(s) {missing} of {what}; expected "
                        f"{list(need)}, found {list(have)}")


def _read_csv_table(path: Path, need, *, ints=(), strings=(), optional_strings=()):
    """A CSV (``.csv`` or ``.csv.gz``) through pyarrow: the ``ints`` columns as int64 (exact
    for 64-bit ids), the string columns as dictionary-encoded strings."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    label = str(path)
    try:
        head = pcsv.open_csv(path).schema.names
    except (pa.ArrowInvalid, OSError, EOFError) as exc:
        raise DataError(f"{label}: not a readable CSV file ({exc})") from exc
    _missing_columns(head, need, label, "this file")
    types = {c: pa.int64() for c in ints}
    types |= {c: pa.dictionary(pa.int32(), pa.string())
              for c in (*strings, *optional_strings) if c in head}
    try:
        return pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            column_types=types, strings_can_be_null=True,
            quoted_strings_can_be_null=True))
    except (pa.ArrowInvalid, OSError, EOFError) as exc:
        where = _bad_int(path, head, str(exc), ints)
        raise DataError(f"{label}: {where or exc} (a truncated or damaged file, or values of "
                        f"the wrong kind)") from exc


def _bad_int(path: Path, head, message: str, ints) -> str | None:
    """The column and data row of the value pyarrow could not read as an integer (its message
    gives only the column's number): a second pass over that column, only after a failure."""
    import re

    import pyarrow.csv as pcsv

    m = re.search(r"CSV column #(\d+)", message)
    if m is None or int(m.group(1)) >= len(head) or head[int(m.group(1))] not in ints:
        return None
    name = head[int(m.group(1))]
    try:
        col = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
            include_columns=[name], column_types={name: "string"})).column(name).to_pylist()
    except Exception:                              # noqa: BLE001 — only a better message
        return None
    for row, v in enumerate(col):
        if v is None or not re.fullmatch(r"\s*-?\d+\s*", v):
            return (f"column {name!r} must hold integers; data row {row + 1} has {v!r}")
    return None


def _int_column(table, name: str, label: str, *, nonnegative: bool = False) -> np.ndarray:
    col = table.column(name)
    if col.null_count:
        row = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise DataError(f"{label}: column {name!r} is empty in data row {row + 1} (a "
                        f"truncated file?)")
    values = col.to_numpy()
    if nonnegative and values.size and values.min() < 0:
        row = int(np.argmax(values < 0))
        raise DataError(f"{label}: column {name!r} has a negative value ({values[row]}) in "
                        f"data row {row + 1}; synapse counts are ≥ 0")
    return values.astype(np.int64, copy=False)


def _text(values) -> np.ndarray:
    """Strings as an object array, "" where missing (pandas 3 reads text as its own str
    dtype, whose missing values would otherwise come back as NaN after a join)."""
    return np.array(["" if v is None or (isinstance(v, float) and v != v) else str(v)
                     for v in values], dtype=object)


def _str_column(table, name: str) -> np.ndarray:
    if name not in table.column_names:
        return np.full(table.num_rows, "", dtype=object)
    col = table.column(name)
    return np.asarray(col.to_pandas().astype(object).fillna("").to_numpy(), dtype=object)


def _positions(ids: np.ndarray, index: np.ndarray, order: np.ndarray, label: str,
               column: str, table_label: str) -> np.ndarray:
    """Positions of ``ids`` in the neuron ids ``index`` (``order`` sorts it); every id must
    be there."""
    sorted_ids = index[order]
    at = np.searchsorted(sorted_ids, ids)
    at_c = np.minimum(at, sorted_ids.size - 1)
    bad = sorted_ids[at_c] != ids if sorted_ids.size else np.ones(ids.size, bool)
    if bad.any():
        row = int(np.argmax(bad))
        raise DataError(f"{label}: {int(np.unique(ids[bad]).size)} id(s) in column {column!r} "
                        f"are not in the neuron table {table_label}, e.g. {int(ids[row])} "
                        f"(data row {row + 1})")
    return order[at_c]


def _refuse_duplicates(key: np.ndarray, label: str, what: str) -> None:
    order = np.argsort(key, kind="stable")
    dup = np.flatnonzero(key[order][1:] == key[order][:-1])
    if dup.size:
        a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        raise DataError(f"{label}: {dup.size} duplicate {what}, e.g. data rows {a + 1} and "
                        f"{b + 1}; each must appear once")


def _unique_ids(ids: np.ndarray, label: str, column: str) -> None:
    s = np.sort(ids)
    dup = s[1:][s[1:] == s[:-1]]
    if dup.size:
        raise DataError(f"{label}: {np.unique(dup).size} duplicate id(s) in column "
                        f"{column!r}, e.g. {int(dup[0])}")


def _csr(pre: np.ndarray, post: np.ndarray, w: np.ndarray, n: int) -> sp.csr_matrix:
    m = sp.coo_matrix((w.astype(np.float64), (pre.astype(np.int64), post.astype(np.int64))),
                      shape=(n, n)).tocsr()
    m.sum_duplicates()
    return m


# ---------------------------------------------------------------------------- Shiu et al.
def load_shiu(connectivity, completeness=None, *, classification=None, neurons=None,
              cell_types=None, name: str | None = None) -> Connectome:
    """Shiu et al. 2024's connectome files (philshiu/Drosophila_brain_model).

    Parameters
    ----------
    connectivity : path
        ``Connectivity_783.parquet`` (or the 630 version ``…connectivity_630_final.parquet``):
        one row per connected pair with ``Presynaptic_Index``/``Postsynaptic_Index`` (rows of
        the completeness file), ``Connectivity`` (synapses), ``Excitatory`` (±1, the
        presynaptic neuron's transmitter sign) and their product ``Excitatory x
        Connectivity``, the weight Shiu's ``model.py`` uses; ``Presynaptic_ID`` and
        ``Postsynaptic_ID`` are the FlyWire root ids. A folder holding both files may be given.
    completeness : path, optional
        ``Completeness_783.csv``: the neurons in index order (first column the root id, then
        ``Completed``). Default: the completeness file beside ``connectivity``.
    classification, neurons, cell_types : path, optional
        FlyWire Codex's annotation tables (see :func:`load_codex`), joined by root id: side,
        super class, class, transmitter, … for selectors. Default: those beside
        ``connectivity``, if any. Signs stay Shiu's.

    Every file is checked: the columns, ±1 signs, counts ≥ 0, their product, indices inside
    the neuron list, ids that agree with the indices, each pair once.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(connectivity)
    if path.is_dir():
        found = sorted(path.glob("*onnectivity*.parquet"))
        if not found:
            raise DataError(f"{path}: no Connectivity_*.parquet file in this folder")
        path = found[0]
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    comp = Path(completeness) if completeness is not None else _shiu_completeness(path)
    label = str(path)
    try:
        schema = pq.read_schema(path)
        need = [c for c in SHIU_COLUMNS if c in schema.names]
        _missing_columns(schema.names, ("Presynaptic_Index", "Postsynaptic_Index",
                                        "Excitatory x Connectivity"), label,
                         "Shiu's connectivity file")
        table = pq.read_table(path, columns=need)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"{label}: not a readable parquet file ({exc}; a truncated "
                        f"download?)") from exc
    for c in need:
        if not pa.types.is_integer(table.schema.field(c).type):
            raise DataError(f"{label}: column {c!r} must hold integers, found "
                            f"{table.schema.field(c).type}")
    ids, completed = _read_completeness(comp)
    n = ids.size
    pre = _int_column(table, "Presynaptic_Index", label)
    post = _int_column(table, "Postsynaptic_Index", label)
    w = _int_column(table, "Excitatory x Connectivity", label)
    for col, v in (("Presynaptic_Index", pre), ("Postsynaptic_Index", post)):
        bad = (v < 0) | (v >= n)
        if bad.any():
            row = int(np.argmax(bad))
            raise DataError(f"{label}: {col} {int(v[row])} in data row {row + 1} is outside "
                            f"the {n} neurons of {comp}")
    if "Connectivity" in need:
        count = _int_column(table, "Connectivity", label, nonnegative=True)
        if "Excitatory" in need:
            sign = _int_column(table, "Excitatory", label)
            bad = ~np.isin(sign, (-1, 1))
            if bad.any():
                row = int(np.argmax(bad))
                raise DataError(f"{label}: column 'Excitatory' must be 1 or -1, got "
                                f"{int(sign[row])} in data row {row + 1}")
            bad = sign * count != w
            if bad.any():
                row = int(np.argmax(bad))
                raise DataError(f"{label}: 'Excitatory x Connectivity' ({int(w[row])}) is not "
                                f"Excitatory × Connectivity ({int(sign[row])} × "
                                f"{int(count[row])}) in data row {row + 1}")
    for col, pos in (("Presynaptic_ID", pre), ("Postsynaptic_ID", post)):
        if col in need:
            bad = _int_column(table, col, label) != ids[pos]
            if bad.any():
                row = int(np.argmax(bad))
                raise DataError(f"{label}: {col} in data row {row + 1} is not the root id "
                                f"that {comp} lists at that index ({ids[pos[row]]})")
    del table
    _refuse_duplicates(pre * n + post, label, "(pre, post) pairs")
    table = pd.DataFrame({"completed": completed}, index=pd.Index(ids, name="id"))
    given = {"classification": classification, "neurons": neurons, "cell_types": cell_types}
    ann = _codex_neurons({k: Path(v) if v is not None else _first(path.parent, _CODEX_TABLES[k])
                          for k, v in given.items()})
    if ann is not None:
        ann = ann.reindex(table.index)
        for col in ann.columns:
            if col not in ("side", "celltype", "annotations") and \
                    not pd.api.types.is_numeric_dtype(ann[col]):
                ann[col] = ann[col].fillna("")
        table = table.join(ann)
    c = Connectome(_csr(pre, post, w, n), table,
                   name=name or path.stem.replace("Connectivity", "shiu").lower())
    return c.replace(step="signs: Shiu et al.'s Excitatory column (GABA, glutamate inhibit)")


def _shiu_completeness(path: Path) -> Path:
    stem = path.stem
    version = "".join(ch for ch in stem.split("_")[-1] if ch.isdigit()) or stem
    same = path.stem.replace("connectivity", "completeness").replace("Connectivity",
                                                                      "Completeness")
    candidates = [path.with_name(f"{same}.csv"), path.with_name(f"Completeness_{version}.csv"),
                  *sorted(path.parent.glob(f"*ompleteness*{version}*.csv")),
                  *sorted(path.parent.glob("*ompleteness*.csv"))]
    for cand in candidates:
        if cand.is_file():
            return cand
    raise DataError(f"{path}: Shiu's connectivity file needs its neuron list; put "
                    f"Completeness_{version}.csv beside it or pass completeness=")


def _read_completeness(path: Path) -> tuple[np.ndarray, np.ndarray]:
    label = str(path)
    if not path.is_file():
        raise DataError(f"{label}: no such file (Shiu's neuron list, Completeness_783.csv)")
    try:
        t = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise DataError(f"{label}: not a readable CSV file ({exc})") from exc
    if t.shape[1] < 1 or t.empty:
        raise DataError(f"{label}: no neurons; expected root ids in the first column")
    first = t.iloc[:, 0].str.strip()
    bad = ~first.str.fullmatch(r"-?\d+")
    if bad.any():
        row = int(np.argmax(bad.to_numpy()))
        raise DataError(f"{label}: the first column holds root ids (integers); data row "
                        f"{row + 1} has {first.iloc[row]!r}")
    ids = np.array([int(v) for v in first], dtype=np.int64)   # exact: no float on the way
    _unique_ids(ids, label, t.columns[0] or "(index)")
    completed = (t["Completed"].str.strip().str.lower() == "true").to_numpy() \
        if "Completed" in t.columns else np.ones(ids.size, bool)
    return ids, completed


def save_shiu(connectome: Connectome, folder, *, version: str = "783") -> tuple[Path, Path]:
    """Write a connectome as Shiu et al.'s two files, ``Connectivity_<version>.parquet`` and
    ``Completeness_<version>.csv``, so that his ``model.py`` runs it. Weights must be whole
    (signed) synapse counts; a negative count becomes ``Excitatory = -1``. Ids must be
    integers. Returns the two paths; both appear only once complete."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kairo._io import atomic_path

    ids = connectome.ids
    if ids.dtype.kind not in "iu":
        raise DataError(f"connectome {connectome.name!r}: Shiu's files need integer neuron "
                        f"ids, got {ids.dtype}")
    coo = connectome.weights.tocoo()
    if not np.all(coo.data == np.round(coo.data)):
        raise DataError(f"connectome {connectome.name!r}: Shiu's files hold whole synapse "
                        f"counts; these weights are not integers (normalized?)")
    order = np.lexsort((coo.col, coo.row))
    pre, post = coo.row[order].astype(np.int64), coo.col[order].astype(np.int64)
    signed = coo.data[order].astype(np.int64)
    sign = np.where(signed < 0, -1, 1).astype(np.int64)
    ids = ids.astype(np.int64)
    table = pa.table({"Presynaptic_ID": ids[pre], "Postsynaptic_ID": ids[post],
                      "Presynaptic_Index": pre, "Postsynaptic_Index": post,
                      "Connectivity": np.abs(signed), "Excitatory": sign,
                      "Excitatory x Connectivity": signed})
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    con, comp = folder / f"Connectivity_{version}.parquet", folder / f"Completeness_{version}.csv"
    with atomic_path(con) as tmp:
        pq.write_table(table, tmp)
    t = connectome.neurons
    completed = t["completed"].astype(bool) if "completed" in t else pd.Series(True, t.index)
    with atomic_path(comp) as tmp:
        pd.DataFrame({"Completed": completed.to_numpy()},
                     index=pd.Index(ids, name="")).to_csv(tmp)
    return con, comp


# ---------------------------------------------------------------------------- FlyWire Codex
def load_codex(connections, *, classification=None, neurons=None, cell_types=None,
               min_synapses: int = 1, name: str | None = None) -> Connectome:
    """FlyWire Codex's downloads (codex.flywire.ai, "Download" → connections and neurons).

    Parameters
    ----------
    connections : path
        ``connections.csv.gz`` (or ``connections_no_threshold.csv.gz``, ``.csv``): columns
        ``pre_root_id, post_root_id, neuropil, syn_count, nt_type``, one row per pair and
        neuropil. Rows of one pair are summed; a (pair, neuropil) twice is refused. A folder
        holding the files may be given; the annotation files are then found in it.
    classification : path, optional
        ``classification.csv.gz``: ``root_id, flow, super_class, class, sub_class,
        hemilineage, side, nerve`` (extra columns such as ``cell_type`` are kept).
    neurons : path, optional
        ``neurons.csv.gz``: ``root_id, group, nt_type, nt_type_score, …`` — the predicted
        transmitter per neuron, which then signs the neuron's outputs.
    cell_types : path, optional
        ``consolidated_cell_types.csv.gz``: ``root_id, primary_type, additional_type(s)``.
    min_synapses : int
        Keep a pair only if its synapses over all neuropils reach this (Codex's own downloads
        use 5; 1 keeps every pair).

    The neuron set is the annotation tables' (every edge id must be in them) or, without
    them, the ids of the edges. ``side`` is L/R/C (left/right/center), ``celltype`` the
    super class (``sensory``, ``descending``, …), ``annotations`` the class, sub class and
    cell type; every column of the tables stays in the neuron table for selectors
    (``'class=olfactory;side=left'``). Signs: the presynaptic neuron's ``nt_type`` (from
    ``neurons``, else the connection rows), GABA and glutamate inhibitory.
    """
    path = Path(connections)
    folder = path if path.is_dir() else path.parent
    if path.is_dir():
        found = _first(path, _CODEX_CONNECTIONS)
        if found is None:
            raise DataError(f"{path}: no FlyWire Codex connections file here (expected one of "
                            f"{', '.join(_CODEX_CONNECTIONS[:3])}, …)")
        path = found
    if not path.is_file():
        raise DataError(f"{path}: no such file")
    if isinstance(min_synapses, bool) or int(min_synapses) != min_synapses or min_synapses < 1:
        raise DataError(f"min_synapses: expected a whole number ≥ 1, got {min_synapses!r}")
    given = {"classification": classification, "neurons": neurons, "cell_types": cell_types}
    tables = {k: Path(v) if v is not None else _first(folder, _CODEX_TABLES[k])
              for k, v in given.items()}
    label = str(path)
    edges = _read_csv_table(path, ("pre_root_id", "post_root_id", "syn_count"),
                            ints=("pre_root_id", "post_root_id", "syn_count"),
                            strings=("neuropil",), optional_strings=("nt_type",))
    pre_id = _int_column(edges, "pre_root_id", label)
    post_id = _int_column(edges, "post_root_id", label)
    count = _int_column(edges, "syn_count", label, nonnegative=True)
    # chunks parsed in parallel carry their own dictionaries: one dictionary, then one array
    neuropil = (edges.unify_dictionaries().column("neuropil").combine_chunks()
                if "neuropil" in edges.column_names else None)
    row_nt = _str_column(edges, "nt_type") if "nt_type" in edges.column_names else None
    del edges
    table = _codex_neurons(tables)
    if table is None:
        ids = np.unique(np.concatenate([pre_id, post_id]))
        table = pd.DataFrame(index=pd.Index(ids, name="id"))
        src = "the edges"
    else:
        ids = table.index.to_numpy()
        src = ", ".join(str(p) for p in tables.values() if p is not None)
    order = np.argsort(ids, kind="stable")
    pre = _positions(pre_id, ids, order, label, "pre_root_id", src)
    post = _positions(post_id, ids, order, label, "post_root_id", src)
    del pre_id, post_id
    n = ids.size
    pair = pre * n + post
    if neuropil is not None:
        codes = neuropil.indices.to_numpy(zero_copy_only=False).astype(np.int64) \
            if hasattr(neuropil, "indices") else np.zeros(pair.size, np.int64)
        _refuse_duplicates(pair * (int(codes.max(initial=0)) + 1) + codes, label,
                           "(pre_root_id, post_root_id, neuropil) rows")
    else:
        _refuse_duplicates(pair, label, "(pre_root_id, post_root_id) rows")
    if "nt_type" in table.columns and table["nt_type"].astype(str).str.strip().ne("").any():
        sign_of = transmitter_sign(table["nt_type"].to_numpy())
        sign = sign_of[pre]
        how = f"the nt_type of {tables['neurons']}"
    elif row_nt is not None:
        sign = transmitter_sign(row_nt)
        how = f"the nt_type of {path.name}"
    else:
        sign, how = None, ""
    w = count if sign is None else count * sign
    m = _csr(pre, post, w, n)
    if min_synapses > 1:
        total = _csr(pre, post, count, n)
        m = m.multiply(total >= min_synapses).tocsr()
    c = Connectome(m, table, name=name or "flywire")
    if sign is not None:
        c = c.replace(step=f"signs: transmitters ({how}; GABA, glutamate inhibit)")
    if min_synapses > 1:
        c = c.replace(step=f"min_synapses({min_synapses})")
    return c


def _codex_neurons(tables: dict) -> pd.DataFrame | None:
    """The neuron table from Codex's annotation files (None if none is given)."""
    import pyarrow as pa

    frames = []
    spec = {"classification": (CODEX_CLASSIFICATION[:1], ()),
            "neurons": (("root_id",), ("nt_type_score",)),
            "cell_types": (("root_id",), ())}
    for key, path in tables.items():
        if path is None:
            continue
        if not path.is_file():
            raise DataError(f"{path}: no such file (FlyWire Codex {key} table)")
        need, floats = spec[key]
        t = _read_csv_table(path, need, ints=("root_id",))
        label = str(path)
        ids = _int_column(t, "root_id", label)
        _unique_ids(ids, label, "root_id")
        cols = {}
        for col in t.column_names:
            if col == "root_id":
                continue
            typ = t.schema.field(col).type
            values = t.column(col).to_pandas()
            numeric = pa.types.is_integer(typ) or pa.types.is_floating(typ) or col in floats
            cols[col] = (pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
                         if numeric else _text(values))
        frames.append(pd.DataFrame(cols, index=pd.Index(ids, name="id")))
    if not frames:
        return None
    table = frames[0]
    for f in frames[1:]:
        extra = f.index.difference(table.index)
        if len(extra):
            table = table.reindex(table.index.append(extra))
        table = table.join(f, how="left", rsuffix="_2")
    if "primary_type" in table and "cell_type" not in table:
        table["cell_type"] = table["primary_type"]
    for col in table.columns:
        if not pd.api.types.is_numeric_dtype(table[col]):
            table[col] = _text(table[col])
    out = table.copy()
    if "side" in table:
        out["side_name"] = table["side"]
        out["side"] = [_SIDES.get(str(s).strip().lower(), "unknown") for s in table["side"]]
    if "super_class" in table:
        out["celltype"] = table["super_class"].replace("", "unannotated")
    parts = [table[c] for c in ("class", "sub_class", "cell_type", "hemibrain_type")
             if c in table]
    if parts:
        out["annotations"] = ["; ".join(v for v in vals if v) for vals in zip(*parts)]
    return out


# ---------------------------------------------------------------------------- neuPrint
def load_neuprint(connections, *, neurons=None, name: str | None = None) -> Connectome:
    """A neuPrint export (the hemibrain's ``exported-traced-adjacencies``).

    ``connections``: ``traced-total-connections.csv`` (``bodyId_pre, bodyId_post, weight``)
    or the folder holding it; ``neurons``: ``traced-neurons.csv`` (``bodyId, type,
    instance``; default: beside the connections). ``celltype`` is ``type``, ``side`` is read
    from the instance's ``_L``/``_R`` or ``(L)``/``(R)`` suffix, ``annotations`` is the
    instance. Weights stay unsigned unless the neuron table has a transmitter column
    (``predictedNt`` or ``consensusNt``), which then signs them as Shiu's rule does.
    """
    path = Path(connections)
    if path.is_dir():
        path = path / "traced-total-connections.csv"
    if not path.is_file():
        raise DataError(f"{path}: no such file (neuPrint's traced-total-connections.csv)")
    npath = Path(neurons) if neurons is not None else path.with_name("traced-neurons.csv")
    if not npath.is_file():
        raise DataError(f"{npath}: no such file (neuPrint's traced-neurons.csv, the neuron "
                        f"table for {path})")
    label = str(path)
    e = _read_csv_table(path, NEUPRINT_EDGE_COLUMNS, ints=NEUPRINT_EDGE_COLUMNS)
    pre_id = _int_column(e, "bodyId_pre", label)
    post_id = _int_column(e, "bodyId_post", label)
    weight = _int_column(e, "weight", label, nonnegative=True)
    del e
    nt = _read_csv_table(npath, NEUPRINT_NEURON_COLUMNS, ints=("bodyId",))
    nlabel = str(npath)
    ids = _int_column(nt, "bodyId", nlabel)
    _unique_ids(ids, nlabel, "bodyId")
    cols = {c: _text(nt.column(c).to_pandas()) for c in nt.column_names if c != "bodyId"}
    table = pd.DataFrame(cols, index=pd.Index(ids, name="id"))
    table["celltype"] = table["type"].replace("", "unannotated")
    table["annotations"] = table["instance"]
    inst = table["instance"].str.strip()
    table["side"] = np.select([inst.str.contains(r"(?:_L|\(L\))$"),
                               inst.str.contains(r"(?:_R|\(R\))$")], ["L", "R"], "unknown")
    order = np.argsort(ids, kind="stable")
    pre = _positions(pre_id, ids, order, label, "bodyId_pre", nlabel)
    post = _positions(post_id, ids, order, label, "bodyId_post", nlabel)
    n = ids.size
    _refuse_duplicates(pre * n + post, label, "(bodyId_pre, bodyId_post) pairs")
    nt_col = next((c for c in ("predictedNt", "consensusNt") if c in table), None)
    w = weight if nt_col is None else weight * transmitter_sign(table[nt_col].to_numpy())[pre]
    c = Connectome(_csr(pre, post, w, n), table, name=name or "neuprint")
    if nt_col is not None:
        c = c.replace(step=f"signs: transmitters ({nt_col}; GABA, glutamate inhibit)")
    return c


# ---------------------------------------------------------------------------- dispatch
def adult_files(path) -> tuple[str, dict[str, Path]] | None:
    """Which adult-brain format a path holds and the files a loader reads from it:
    ``("shiu" | "codex" | "neuprint", {role: path})``, or None for another kind of path."""
    p = Path(path)
    folder = p if p.is_dir() else p.parent
    name = p.name.lower()
    if p.is_dir():
        shiu = sorted(p.glob("*onnectivity*.parquet"))
        if shiu:
            p, name = shiu[0], shiu[0].name.lower()
        elif _first(p, _CODEX_CONNECTIONS):
            p = _first(p, _CODEX_CONNECTIONS)
            name = p.name.lower()
        elif (p / "traced-total-connections.csv").is_file():
            p = p / "traced-total-connections.csv"
            name = p.name
        else:
            return None
    if name.endswith(".parquet"):
        files = {"connectivity": p}
        try:
            files["completeness"] = _shiu_completeness(p)
        except DataError:
            pass
        files |= {k: f for k in _CODEX_TABLES if (f := _first(folder, _CODEX_TABLES[k]))}
        return "shiu", files
    if p.name in _CODEX_CONNECTIONS:
        files = {"connections": p}
        files |= {k: f for k in _CODEX_TABLES if (f := _first(folder, _CODEX_TABLES[k]))}
        return "codex", files
    if p.name == "traced-total-connections.csv":
        files = {"connections": p}
        if (folder / "traced-neurons.csv").is_file():
            files["neurons"] = folder / "traced-neurons.csv"
        return "neuprint", files
    return None
