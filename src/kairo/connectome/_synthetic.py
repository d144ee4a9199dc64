"""Synthetic adult-brain files in the exact schemas of FlyWire Codex, Shiu et al. and neuPrint.

The FlyWire connectome cannot be downloaded on an offline machine, so its loaders are tested
(and benchmarked at full size) on files of the same columns, types and id range made here.
The numbers are FlyWire 783's where they are public: 139,255 neurons whose super classes
count as in Codex's classification table, ~50 million synapses in ~15 million connected
pairs, 18-digit root ids (above 2**53, so a float anywhere would merge them). The wiring is
random (lognormal out-degrees, uniform targets): it has the brain's size, not its structure.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from kairo._errors import KairoError

__all__ = ["synthetic_flywire", "SUPER_CLASSES", "TRANSMITTERS"]

#: Codex 783's super classes and how many neurons each has (classification.csv.gz).
SUPER_CLASSES = {"optic": 77_536, "central": 32_388, "sensory": 16_903,
                 "visual_projection": 8_053, "ascending": 2_362, "descending": 1_303,
                 "visual_centrifugal": 524, "motor": 106, "endocrine": 80}
#: Predicted transmitters and their approximate shares among FlyWire neurons.
TRANSMITTERS = {"ACH": 0.56, "GABA": 0.19, "GLUT": 0.17, "DA": 0.05, "SER": 0.015,
                "OCT": 0.015}
_CLASSES = {"sensory": ["olfactory", "visual", "mechanosensory", "gustatory", "thermosensory",
                        "hygrosensory", "ocellar"],
            "central": ["", "ALPN", "ALLN", "Kenyon_Cell", "MBON", "DAN", "LHLN", "CX"],
            "optic": ["", "L1-5", "Mi", "Tm", "T4", "T5"],
            "descending": ["", "DNa", "DNb", "DNp"], "ascending": ["", "AN"]}
_NEUROPILS = ["AL_L", "AL_R", "MB_CA_L", "MB_CA_R", "LH_L", "LH_R", "ME_L", "ME_R", "LO_L",
              "LO_R", "LOP_L", "LOP_R", "GNG", "SPS_L", "SPS_R", "FB", "EB", "PB", "SMP_L",
              "SMP_R"]
_FLOW = {"sensory": "afferent", "ascending": "afferent", "descending": "efferent",
         "motor": "efferent", "endocrine": "efferent"}


def _choice(rng, names, p, n):
    p = np.asarray(p, float)
    return np.asarray(names, dtype=object)[rng.choice(len(names), size=n, p=p / p.sum())]


def synthetic_flywire(folder, *, n_neurons: int = 139_255, n_synapses: int = 50_000_000,
                      seed: int = 0, formats=("codex", "shiu")) -> dict[str, Path]:
    """Write a synthetic adult fly brain into ``folder`` in the files the field uses.

    ``formats``: any of ``codex`` (``connections.csv.gz`` — one row per pair and neuropil,
    ~15 % of pairs split over two neuropils —, ``classification.csv.gz``,
    ``neurons.csv.gz``), ``shiu`` (``Connectivity_783.parquet``, ``Completeness_783.csv``)
    and ``neuprint`` (``traced-neurons.csv``, ``traced-total-connections.csv``). All formats
    hold the same graph; synapse counts are 1 + geometric(0.3) per pair (mean 3.3), signs
    follow the presynaptic transmitter. Returns ``{file name: path}``; each file appears only
    when complete.
    """
    unknown = set(formats) - {"codex", "shiu", "neuprint"}
    if unknown:
        raise KairoError(f"formats: unknown {sorted(unknown)}; expected codex, shiu, neuprint")
    if n_neurons < 2 or n_synapses < 1:
        raise KairoError(f"n_neurons must be ≥ 2 and n_synapses ≥ 1, got {n_neurons}, "
                         f"{n_synapses}")
    rng = np.random.default_rng(seed)
    neurons = _neurons(rng, int(n_neurons))
    pairs = _pairs(rng, int(n_neurons), n_synapses)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    if "codex" in formats:
        out.update(_write_codex(folder, rng, neurons, pairs))
    if "shiu" in formats:
        out.update(_write_shiu(folder, neurons, pairs))
    if "neuprint" in formats:
        out.update(_write_neuprint(folder, neurons, pairs))
    return out


def _neurons(rng, n: int) -> dict[str, np.ndarray]:
    """The neurons' root ids, super classes, classes, sides and transmitters (``ids``,
    ``super``, ``class``, ``side``, ``nt``), drawn from ``rng``."""
    ids = 720_575_940_600_000_000 + rng.choice(60_000_000, size=n, replace=False).astype(
        np.int64)
    supers = list(SUPER_CLASSES)
    sc = _choice(rng, supers, list(SUPER_CLASSES.values()), n)
    cls = np.full(n, "", dtype=object)
    for s, options in _CLASSES.items():
        at = np.flatnonzero(sc == s)
        cls[at] = _choice(rng, options, np.ones(len(options)), at.size)
    side = _choice(rng, ["left", "right", "center"], [0.49, 0.49, 0.02], n)
    nt = _choice(rng, list(TRANSMITTERS), list(TRANSMITTERS.values()), n)
    nt[sc == "sensory"] = "ACH"                    # receptor neurons are cholinergic
    return {"ids": ids, "super": sc, "class": cls, "side": side, "nt": nt}


def _pairs(rng, n: int, n_synapses: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The graph as (pre, post, synapse count) positions, each pair once, sorted by (pre,
    post): lognormal out-degrees, uniform targets, 1 + geometric(0.3) synapses a pair."""
    n_pairs = max(1, int(round(n_synapses / (1 / 0.3))))
    raw = rng.lognormal(0.0, 1.2, size=n)
    deg = np.clip(np.rint(raw * (n_pairs / raw.sum())), 0, n // 4).astype(np.int64)
    pre = np.repeat(np.arange(n, dtype=np.int64), deg)
    post = rng.integers(0, n, size=pre.size, dtype=np.int64)
    key = np.unique(pre * n + post)                # each pair once, sorted by (pre, post)
    pre, post = key // n, key % n
    del key
    count = rng.geometric(0.3, size=pre.size).astype(np.int64)
    return pre, post, count


def _write_csv(folder: Path, name: str, table, gz: bool) -> dict[str, Path]:
    """``table`` (pyarrow) as ``folder/name``, gzip-compressed with ``gz``, written
    atomically; ``{name: path}``."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    from kairo._io import atomic_path

    with atomic_path(folder / name) as tmp:
        if gz:
            with pa.CompressedOutputStream(str(tmp), "gzip") as f:
                pcsv.write_csv(table, f)
        else:
            pcsv.write_csv(table, str(tmp))
    return {name: folder / name}


def _write_codex(folder: Path, rng, neurons: dict, pairs) -> dict[str, Path]:
    """FlyWire Codex's ``connections.csv.gz`` (a pair of ≥ 2 synapses split over two
    neuropils 15 % of the time), ``classification.csv.gz`` and ``neurons.csv.gz``."""
    import pandas as pd
    import pyarrow as pa

    ids, sc, cls, side, nt = (neurons[k] for k in ("ids", "super", "class", "side", "nt"))
    pre, post, count = pairs
    n = ids.size
    out: dict[str, Path] = {}
    split = (count >= 2) & (rng.random(pre.size) < 0.15)
    first = count.copy()
    first[split] = rng.integers(1, count[split])
    P = len(_NEUROPILS)
    np1 = rng.integers(0, P, size=pre.size)
    np2 = (np1[split] + 1 + rng.integers(0, P - 1, size=int(split.sum()))) % P
    r_pre = np.concatenate([pre, pre[split]])
    r_post = np.concatenate([post, post[split]])
    r_count = np.concatenate([first, count[split] - first[split]])
    r_np = np.concatenate([np1, np2]).astype(np.int32)
    nt_codes, nt_names = pd.factorize(nt)
    edges = pa.table({
        "pre_root_id": ids[r_pre], "post_root_id": ids[r_post],
        "neuropil": pa.DictionaryArray.from_arrays(r_np, _NEUROPILS).cast(pa.string()),
        "syn_count": r_count,
        "nt_type": pa.DictionaryArray.from_arrays(nt_codes[r_pre].astype(np.int32),
                                                  list(nt_names)).cast(pa.string())})
    del r_pre, r_post, r_count, r_np
    out.update(_write_csv(folder, "connections.csv.gz", edges, True))
    del edges
    sub = np.where(cls == "", "", cls + "_" + rng.integers(1, 9, size=n).astype(str))
    out.update(_write_csv(folder, "classification.csv.gz", pa.table({
        "root_id": ids, "flow": [_FLOW.get(s, "intrinsic") for s in sc],
        "super_class": sc.astype(str), "class": cls.astype(str),
        "sub_class": sub.astype(str), "hemilineage": np.full(n, ""),
        "side": side.astype(str),
        "nerve": np.where(sc == "sensory", "AN", "")}), True))
    score = np.round(rng.uniform(0.4, 1.0, size=n), 2)
    avgs = {f"{t.lower()}_avg": np.where(nt == t, score, np.round(
        (1 - score) / 5, 3)) for t in ("DA", "SER", "GABA", "GLUT", "ACH", "OCT")}
    out.update(_write_csv(folder, "neurons.csv.gz", pa.table({
        "root_id": ids, "group": _choice(rng, _NEUROPILS, np.ones(P), n).astype(str),
        "nt_type": nt.astype(str), "nt_type_score": score, **avgs}), True))
    return out


def _write_shiu(folder: Path, neurons: dict, pairs) -> dict[str, Path]:
    """Shiu et al.'s ``Connectivity_783.parquet`` and ``Completeness_783.csv``: his neuron
    list is in root-id order, his index the position in that list."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kairo._io import atomic_path
    from kairo.connectome._adult import transmitter_sign

    ids = neurons["ids"]
    pre, post, count = pairs
    n = ids.size
    order = np.argsort(ids)
    index_of = np.empty(n, np.int64)
    index_of[order] = np.arange(n)
    s_pre, s_post = index_of[pre], index_of[post]
    exc = transmitter_sign(neurons["nt"])[pre]
    table = pa.table({"Presynaptic_ID": ids[pre], "Postsynaptic_ID": ids[post],
                      "Presynaptic_Index": s_pre, "Postsynaptic_Index": s_post,
                      "Connectivity": count, "Excitatory": exc,
                      "Excitatory x Connectivity": exc * count})
    with atomic_path(folder / "Connectivity_783.parquet") as tmp:
        pq.write_table(table, str(tmp))
    del table
    with atomic_path(folder / "Completeness_783.csv") as tmp:
        pd.DataFrame({"Completed": np.ones(n, bool)},
                     index=pd.Index(ids[order], name="")).to_csv(tmp)
    return {name: folder / name for name in ("Connectivity_783.parquet",
                                             "Completeness_783.csv")}


def _write_neuprint(folder: Path, neurons: dict, pairs) -> dict[str, Path]:
    """neuPrint's ``traced-neurons.csv`` and ``traced-total-connections.csv``."""
    import pyarrow as pa

    ids, sc, cls, side = (neurons[k] for k in ("ids", "super", "class", "side"))
    pre, post, count = pairs
    inst = [f"{t}_{s[0].upper()}" if s != "center" else str(t)
            for t, s in zip(np.where(cls == "", sc, cls), side)]
    out = _write_csv(folder, "traced-neurons.csv", pa.table({
        "bodyId": ids, "type": cls.astype(str), "instance": inst}), False)
    out.update(_write_csv(folder, "traced-total-connections.csv", pa.table({
        "bodyId_pre": ids[pre], "bodyId_post": ids[post], "weight": count}), False))
    return out
