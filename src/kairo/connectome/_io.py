"""Loading and saving connectomes: Winding 2023 and generic CSV / NPZ formats."""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path, PurePosixPath

import numpy as np
import pandas as pd
import scipy.sparse as sp

from kairo._errors import DataError
from kairo.connectome._core import Connectome
from kairo.data import fetch

__all__ = ["load_connectome", "load_winding2023", "load_adjacency_csv", "load_edge_list_csv",
           "load_npz", "save_npz", "REGISTERED", "WINDING_COMPARTMENTS"]

WINDING_FOLDER = "Supplementary-Data-S1"
WINDING_COMPARTMENTS = {"all": "all-all", "aa": "aa", "ad": "ad", "da": "da", "dd": "dd"}
_WINDING_REQUIRED = ("all-all_connectivity_matrix.csv", "annotations.csv", "inputs.csv",
                     "outputs.csv")


# ---------------------------------------------------------------------------- CSV helpers
def _read_csv(src, label: str, **kw) -> pd.DataFrame:
    try:
        return pd.read_csv(src, **kw)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError,
            ValueError) as exc:
        raise DataError(f"{label}: not a readable CSV file ({exc})") from exc


def _check_weights(values: np.ndarray, label: str, *, counts: bool) -> None:
    if not np.issubdtype(values.dtype, np.number):
        raise DataError(f"{label}: weights must be numbers, found non-numeric entries")
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = np.argwhere(bad)[0] if values.ndim == 2 else (np.flatnonzero(bad)[0], 0)
        raise DataError(f"{label}: {int(bad.sum())} missing/NaN/infinite weight(s), first at "
                        f"row {r}, column {c} (a truncated or damaged file?)")
    if counts and (values < 0).any():
        n = int((values < 0).sum())
        raise DataError(f"{label}: {n} negative weight(s) where synapse counts (≥ 0) are "
                        f"expected; pass signed=True for a signed matrix")


def _convert_ids(labels) -> pd.Index:
    """Neuron ids as int64 when every label is an integer (``"7"``, ``7.0``), else as
    stripped strings — one rule for headers, index columns and edge lists alike."""
    text = pd.Index(labels).astype(str).str.strip()
    num = pd.to_numeric(pd.Series(text), errors="coerce")
    if num.notna().all() and (num == np.floor(num)).all() and np.isfinite(num).all():
        return pd.Index(num.astype(np.int64))
    return text


def _parse_ids(labels, label: str, what: str) -> pd.Index:
    idx = _convert_ids(labels)
    if not idx.is_unique:
        dup = idx[idx.duplicated()][:5].tolist()
        raise DataError(f"{label}: duplicate {what} ids, e.g. {dup}")
    return idx


def _matrix_frame(df: pd.DataFrame, label: str, *, counts: bool) -> tuple[pd.Index, np.ndarray]:
    """Validate an adjacency frame (index = row ids, columns = header ids) and align it."""
    if df.shape[0] == 0 or df.shape[1] == 0:
        raise DataError(f"{label}: the matrix is empty")
    if df.shape[0] != df.shape[1]:
        raise DataError(f"{label}: the matrix is not square: {df.shape[0]} rows × "
                        f"{df.shape[1]} columns (expected the first row and the first column "
                        f"to hold the same neuron ids)")
    rows = _parse_ids(df.index, label, "row")
    cols = _parse_ids(df.columns, label, "column")
    if set(rows) != set(cols):
        only_r = list(set(rows) - set(cols))[:3]
        only_c = list(set(cols) - set(rows))[:3]
        raise DataError(f"{label}: header ids do not match row ids (rows only: {only_r}, "
                        f"header only: {only_c})")
    df = df.copy()
    df.index, df.columns = rows, cols
    df = df.reindex(columns=rows)  # column order may differ from row order
    try:
        values = df.to_numpy(dtype=np.float64, na_value=np.nan)
    except (ValueError, TypeError) as exc:
        raise DataError(f"{label}: weights must be numbers ({exc})") from exc
    _check_weights(values, label, counts=counts)
    return rows, values


# ---------------------------------------------------------------------------- Winding 2023
class _Source:
    """Read members of the Winding archive from a zip or an unpacked folder."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = None
        if path.is_dir():
            inner = path / WINDING_FOLDER
            self.root = inner if inner.is_dir() else path
            missing = [m for m in _WINDING_REQUIRED if not (self.root / m).is_file()]
        else:
            try:
                self.zip = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError) as exc:
                raise DataError(f"{path}: not a readable zip archive ({exc})") from exc
            names = self.zip.namelist()
            for n in names:
                p = PurePosixPath(n)
                if p.is_absolute() or ".." in p.parts or "\\" in n:
                    raise DataError(f"{path}: archive entry {n!r} points outside its folder; "
                                    f"refusing to read this archive")
            members = {n for n in names if not n.startswith("__MACOSX/")}
            missing = [m for m in _WINDING_REQUIRED if f"{WINDING_FOLDER}/{m}" not in members]
        if missing:
            raise DataError(f"{path}: not the expected Winding 2023 Supplementary Data S1 "
                            f"archive: missing {', '.join(missing)} under {WINDING_FOLDER}/")

    def open(self, member: str):
        label = f"{self.path}:{member}"
        if self.zip is not None:
            return io.BytesIO(self.zip.read(f"{WINDING_FOLDER}/{member}")), label
        return self.root / member, label


def _winding_neurons(src: _Source, ids: pd.Index) -> pd.DataFrame:
    f, label = src.open("annotations.csv")
    ann = _read_csv(f, label, dtype=str)
    need = ["left_id", "right_id", "celltype", "additional_annotations", "level_7_cluster"]
    missing = [c for c in need if c not in ann.columns]
    if missing:
        raise DataError(f"{label}: missing column(s) {missing}; expected {need}")
    rows = []
    for side, own, other in (("L", "left_id", "right_id"), ("R", "right_id", "left_id")):
        part = ann[ann[own].str.strip() != "no pair"]
        try:
            own_ids = part[own].astype(np.int64)
        except ValueError as exc:
            raise DataError(f"{label}: column {own} must hold integer skeleton ids or "
                            f"'no pair' ({exc})") from exc
        partner = pd.to_numeric(part[other].where(part[other].str.strip() != "no pair"),
                                errors="coerce").astype("Int64")
        rows.append(pd.DataFrame({"side": side, "celltype": part["celltype"].to_numpy(),
                                  "annotations": part["additional_annotations"].to_numpy(),
                                  "cluster": part["level_7_cluster"].to_numpy(),
                                  "partner_id": partner.to_numpy()},
                                 index=pd.Index(own_ids.to_numpy(), name="id")))
    table = pd.concat(rows)
    table = table[~table.index.duplicated()]
    table = table.reindex(ids)  # neurons absent from annotations.csv get defaults in Connectome
    for fname, cols in (("inputs.csv", ("axon_input", "dendrite_input")),
                        ("outputs.csv", ("axon_output", "dendrite_output"))):
        f, label = src.open(fname)
        tot = _read_csv(f, label, index_col=0)
        missing = [c for c in cols if c not in tot.columns]
        if missing:
            raise DataError(f"{label}: missing column(s) {missing}")
        tot.index = _parse_ids(tot.index, label, "row")
        for c in cols:
            table[c] = tot[c].reindex(ids).to_numpy(dtype=float)
    return table


def load_winding2023(source: str | os.PathLike | None = None, *, data_dir=None,
                     compartment: str = "all", download: bool | None = None) -> Connectome:
    """Load the larval *Drosophila* connectome of Winding et al. (2023).

    Parameters
    ----------
    source : path, optional
        ``Supplementary-Data-S1.zip`` or the folder it unpacks to. Default: fetched through
        the data directory (``connectome/winding2023/Supplementary-Data-S1.zip``).
    compartment : {"all", "aa", "ad", "da", "dd"}
        ``all`` is the all-all matrix; the others split synapses by pre/post compartment
        (axon/dendrite). Compartment files are stored in a different row order; they are
        reindexed by skeleton id to the all-all order, so all five share one neuron table.

    Returns
    -------
    Connectome
        2,952 neurons; ``weights[i, j]`` = synapses from neuron i onto neuron j. The neuron
        table has side (L/R from the annotation column the id is listed in; ``unknown`` for
        the 346 neurons without annotation), cell type, additional annotations, level-7
        cluster, bilateral partner id (NA for neurons listed with ``no pair``) and the
        per-neuron axon/dendrite input/output totals of inputs.csv / outputs.csv.
    """
    if compartment not in WINDING_COMPARTMENTS:
        raise DataError(f"unknown compartment {compartment!r}; expected one of "
                        f"{', '.join(WINDING_COMPARTMENTS)}")
    path = Path(source) if source is not None else fetch("winding2023", data_dir,
                                                         download=download)
    if not path.exists():
        raise DataError(f"{path}: no such file or folder")
    src = _Source(path)
    f, label = src.open("all-all_connectivity_matrix.csv")
    ids, values = _matrix_frame(_read_csv(f, label, index_col=0), label, counts=True)
    if compartment != "all":
        f, label = src.open(f"{WINDING_COMPARTMENTS[compartment]}_connectivity_matrix.csv")
        cids, cvalues = _matrix_frame(_read_csv(f, label, index_col=0), label, counts=True)
        if set(cids) != set(ids):
            raise DataError(f"{label}: neuron ids differ from the all-all matrix")
        order = pd.Index(cids).get_indexer(ids)
        values = cvalues[np.ix_(order, order)]
    neurons = _winding_neurons(src, ids)
    name = "winding2023" + ("" if compartment == "all" else f"-{compartment}")
    return Connectome(sp.csr_matrix(values), neurons, name=name)


# ---------------------------------------------------------------------------- generic formats
def _read_neuron_table(path) -> pd.DataFrame:
    """A neuron table CSV (an ``id`` column plus optional side, celltype, annotations, cluster,
    partner_id), indexed by parsed id."""
    label = str(path)
    t = _read_csv(path, label)
    if "id" not in t.columns:
        raise DataError(f"{label}: a neuron table needs an 'id' column (plus optional side, "
                        f"celltype, annotations, cluster, partner_id)")
    t.index = _parse_ids(t.pop("id"), label, "neuron")
    return t


def _neuron_table(path, ids: pd.Index, table: pd.DataFrame | None = None
                  ) -> pd.DataFrame | None:
    """The neuron table aligned to the connectome's ids (read from ``path`` unless given)."""
    if path is None:
        return None
    t = _read_neuron_table(path) if table is None else table
    extra = pd.Index(t.index).difference(ids)
    if len(extra):
        raise DataError(f"{path}: {len(extra)} id(s) not in the connectome, e.g. "
                        f"{extra[:5].tolist()}")
    return t.reindex(ids)


def load_adjacency_csv(path, *, neurons=None, signed: bool = False,
                       name: str | None = None) -> Connectome:
    """Load a square CSV matrix whose first row and first column are neuron ids (pre → post)."""
    label = str(path)
    ids, values = _matrix_frame(_read_csv(path, label, index_col=0), label, counts=not signed)
    return Connectome(sp.csr_matrix(values), _neuron_table(neurons, ids),
                      name=name or Path(path).stem)


def load_edge_list_csv(path, *, neurons=None, signed: bool = False,
                       name: str | None = None) -> Connectome:
    """Load a CSV edge list with columns ``pre, post[, weight]`` (weight defaults to 1).

    Neurons are the ids in the edge list plus any in the optional neuron table (CSV with an
    ``id`` column), in first-appearance order. Repeated edges are summed.
    """
    label = str(path)
    e = _read_csv(path, label)
    cols = {c.strip().lower(): c for c in e.columns}
    if "pre" not in cols or "post" not in cols:
        raise DataError(f"{label}: an edge list needs columns 'pre' and 'post' (and optionally "
                        f"'weight'); found {list(e.columns)}")
    if e.empty:
        raise DataError(f"{label}: the edge list has no rows")
    pre, post = e[cols["pre"]], e[cols["post"]]
    if pre.isna().any() or post.isna().any():
        row = int(np.flatnonzero(pre.isna() | post.isna())[0])
        raise DataError(f"{label}: missing pre/post id in data row {row + 1} (truncated file?)")
    if "weight" in cols:
        w = pd.to_numeric(e[cols["weight"]], errors="coerce").to_numpy(dtype=float)
        if np.isnan(w).any():
            row = int(np.flatnonzero(np.isnan(w))[0])
            raise DataError(f"{label}: weight in data row {row + 1} is missing or not a number")
    else:
        w = np.ones(len(e))
    _check_weights(w, label, counts=not signed)
    # convert pre and post together so "2" and "2.0" name the same neuron in both columns
    both = _convert_ids(pd.concat([pre, post], ignore_index=True))
    all_ids = pd.Index(pd.unique(both))
    table = None
    if neurons is not None:
        table = _read_neuron_table(neurons)
        if table.index.dtype != all_ids.dtype:
            raise DataError(f"{neurons}: neuron ids ({table.index.dtype}) are not of the same "
                            f"kind as the edge list's ids ({all_ids.dtype})")
        # isolated neurons from the table follow, in the table's order
        all_ids = all_ids.append(table.index[~table.index.isin(all_ids)])
    pos = all_ids.get_indexer(both)
    r, c = pos[:len(pre)], pos[len(pre):]
    n = len(all_ids)
    m = sp.coo_matrix((w, (r, c)), shape=(n, n)).tocsr()
    table = (pd.DataFrame(index=all_ids) if neurons is None else
             _neuron_table(neurons, all_ids, table))
    return Connectome(m, table, name=name or Path(path).stem)


def save_npz(connectome: Connectome, path) -> None:
    """Save a connectome (weights, ids and neuron table) to a NumPy ``.npz`` file, atomically."""
    w = connectome.weights
    t = connectome.neurons
    ids = t.index.to_numpy()
    arrays = {"format": np.array("csr"), "shape": np.array(w.shape), "data": w.data,
              "indices": w.indices, "indptr": w.indptr,
              "ids": ids if ids.dtype.kind in "iuf" else np.asarray(ids, dtype=str),
              "name": np.array(connectome.name),
              "neuron_columns": np.asarray(list(t.columns), dtype=str)}
    for col in t.columns:
        vals = t[col]
        arrays[f"neurons/{col}"] = (vals.astype("float64").to_numpy(na_value=np.nan)
                                    if col == "partner_id" or vals.dtype.kind in "fiu"
                                    else np.asarray(vals.astype(str), dtype=str))
    path = Path(path)
    tmp = path.with_name(path.name + ".part.npz")
    try:
        np.savez_compressed(tmp, **arrays)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def load_npz(path, *, signed: bool = True, name: str | None = None) -> Connectome:
    """Load an ``.npz``: kairo's own format (see :func:`save_npz`), a SciPy ``save_npz``
    sparse matrix, or a dense square array under the key ``weights`` (optional ``ids``)."""
    label = str(path)
    try:
        z = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise DataError(f"{label}: not a readable .npz file ({exc})") from exc
    with z:
        keys = set(z.files)
        try:
            if {"data", "indices", "indptr", "shape"} <= keys:
                fmt = z["format"].item() if "format" in keys else "csr"
                fmt = fmt.decode() if isinstance(fmt, bytes) else str(fmt)
                if fmt not in ("csr", "csc"):
                    raise DataError(f"{label}: sparse format {fmt!r} not supported (csr/csc)")
                cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
                m = cls((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
            elif "weights" in keys:
                m = z["weights"]
            else:
                raise DataError(f"{label}: expected arrays data/indices/indptr/shape (sparse) "
                                f"or 'weights' (dense); found {sorted(keys)}")
            if sp.issparse(m):
                m.check_format(full_check=True)  # indices inside the shape, indptr monotone
        except DataError:
            raise
        except (ValueError, IndexError) as exc:
            raise DataError(f"{label}: inconsistent sparse arrays ({exc})") from exc
        n = m.shape[0]
        vals = m.data if sp.issparse(m) else np.asarray(m)
        if vals.dtype.kind not in "fiu":
            raise DataError(f"{label}: weights must be numeric, got dtype {vals.dtype}")
        if m.ndim != 2 or m.shape[0] != m.shape[1]:
            raise DataError(f"{label}: weights must be square, got shape {m.shape}")
        _check_weights(np.asarray(vals, dtype=float).reshape(-1), label, counts=not signed)
        ids = pd.Index(z["ids"]) if "ids" in keys else pd.RangeIndex(n)
        if len(ids) != n:
            raise DataError(f"{label}: {len(ids)} ids for a {n}-neuron matrix")
        table = pd.DataFrame(index=ids)
        order = (list(z["neuron_columns"]) if "neuron_columns" in keys else
                 sorted(k.split("/", 1)[1] for k in keys if k.startswith("neurons/")))
        for col in order:
            table[col] = z[f"neurons/{col}"]
        cname = name or (str(z["name"]) if "name" in keys else Path(path).stem)
    if "partner_id" in table:
        table["partner_id"] = pd.array(np.where(np.isnan(table["partner_id"]), None,
                                                table["partner_id"]), dtype="Int64")
    return Connectome(m, table, name=cname)


# ---------------------------------------------------------------------------- dispatch
REGISTERED = {"winding2023": load_winding2023}


def load_connectome(name_or_path: str | os.PathLike = "winding2023", *, data_dir=None,
                    compartment: str = "all", download: bool | None = None,
                    neurons=None, min_synapses: int = 1) -> Connectome:
    """Load a connectome by registered name or from a file.

    ``name_or_path`` is a registered name (``winding2023``) or a path: an adult-brain file or
    the folder holding it — Shiu et al.'s ``Connectivity_783.parquet`` (:func:`load_shiu`),
    FlyWire Codex's ``connections.csv.gz`` with its annotation tables (:func:`load_codex`),
    neuPrint's ``traced-total-connections.csv`` (:func:`load_neuprint`) —, a Winding-style
    zip or folder, an ``.npz``, or a ``.csv`` that is an edge list (header has ``pre`` and
    ``post``) or else a square adjacency matrix with an id header. ``neurons`` is an optional
    CSV neuron table for the CSV formats; ``min_synapses`` thresholds FlyWire Codex pairs.
    """
    from kairo.connectome._adult import adult_files, load_codex, load_neuprint, load_shiu

    key = str(name_or_path)
    if key in REGISTERED:
        return REGISTERED[key](data_dir=data_dir, compartment=compartment, download=download)
    path = Path(key)
    if not path.exists():
        raise DataError(f"connectome {key!r} is neither a registered name "
                        f"({', '.join(REGISTERED)}) nor an existing file")
    adult = adult_files(path)
    if adult is not None:
        if compartment != "all":
            raise DataError(f"compartment {compartment!r} is only available for Winding 2023 "
                            f"data")
        kind, files = adult
        if min_synapses != 1 and kind != "codex":
            raise DataError(f"min_synapses: only FlyWire Codex connections are thresholded "
                            f"here; {path} is a {kind} file")
        if kind == "shiu":
            return load_shiu(files["connectivity"], files.get("completeness"),
                             classification=files.get("classification"),
                             neurons=files.get("neurons"), cell_types=files.get("cell_types"))
        if kind == "codex":
            return load_codex(files["connections"], classification=files.get("classification"),
                              neurons=files.get("neurons"), cell_types=files.get("cell_types"),
                              min_synapses=min_synapses)
        return load_neuprint(files["connections"], neurons=files.get("neurons"))
    if min_synapses != 1:
        raise DataError(f"min_synapses: only FlyWire Codex connections are thresholded here; "
                        f"{path} is not one")
    if path.is_dir() or path.suffix.lower() == ".zip":
        return load_winding2023(path, compartment=compartment)
    if compartment != "all":
        raise DataError(f"compartment {compartment!r} is only available for Winding 2023 data")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        return load_npz(path)
    if suffix in (".csv", ".txt", ".tsv"):
        head = _read_csv(path, str(path), nrows=0)
        cols = {c.strip().lower() for c in head.columns}
        if {"pre", "post"} <= cols:
            return load_edge_list_csv(path, neurons=neurons)
        return load_adjacency_csv(path, neurons=neurons)
    raise DataError(f"{path}: unknown connectome format {suffix!r}; expected .zip, folder, "
                    f".npz, .csv, Shiu's .parquet, FlyWire Codex's connections.csv.gz or "
                    f"neuPrint's traced-total-connections.csv")
