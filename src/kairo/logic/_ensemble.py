"""Several circuits as one: the members side by side on the same inputs, their class votes
summed.

Independently trained networks err on different images, so the sum of their votes is more
accurate than any one of them; as one netlist the ensemble is simplified, exported, verified
and synthesized like any circuit, and gates the members share are hashed into one.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from kairo._errors import KairoError
from kairo.logic._circuit import Circuit

__all__ = ["ensemble"]

_MISSING = object()


def _contract(c: Circuit) -> tuple:
    spec = c.image_input
    return None if spec is None else (spec.thresholds, spec.n_pixels)


def _check_members(circuits: Sequence[Circuit], names: Sequence[str]) -> None:
    if len(circuits) < 2:
        raise KairoError(f"an ensemble needs at least two circuits, got {len(circuits)}")
    for name, c in zip(names, circuits):
        if not isinstance(c, Circuit):
            raise KairoError(f"{name}: expected a kairo.logic.Circuit, got "
                             f"{type(c).__name__}")
    first, n0 = circuits[0], names[0]
    for name, c in zip(names[1:], circuits[1:]):
        if c.n_inputs != first.n_inputs:
            raise KairoError(f"{name} reads {c.n_inputs} input bits but {n0} reads "
                             f"{first.n_inputs}: members must read the same inputs")
        if c.n_classes != first.n_classes:
            raise KairoError(f"{name} votes for {c.n_classes} classes but {n0} for "
                             f"{first.n_classes}")
        if _contract(c) != _contract(first):
            raise KairoError(f"{name} reads its inputs as {_describe(c)} but {n0} as "
                             f"{_describe(first)}: members must threshold the same pixels "
                             f"at the same levels")
        ca, cb = c.meta.get("classes"), first.meta.get("classes")
        if ca is not None and cb is not None and list(ca) != list(cb):
            raise KairoError(f"{name} has classes {list(ca)} but {n0} has {list(cb)}")


def _describe(c: Circuit) -> str:
    spec = c.image_input
    if spec is None:
        return "bits (no pixel thresholds)"
    return f"{spec.n_pixels} pixels at thresholds {list(spec.thresholds)}"


def ensemble(circuits: Sequence[Circuit], names: Sequence[str] | None = None) -> Circuit:
    """One circuit computing every member on the same inputs; class ``c``'s outputs are the
    members' class-``c`` outputs in member order, so its vote is the sum of theirs (a member
    with more outputs per class weighs more, as its votes count more in its own argmax).

    Members must read the same inputs (count and pixel thresholds) and vote for the same
    classes; ``names`` label them in errors (default ``circuit 0``, ``circuit 1``, …). The
    result is not simplified (:func:`kairo.logic.simplify` merges the gates members share);
    its meta holds the entries every member's meta agrees on (thresholds, classes, dataset, a
    shared validation split), and ``ensemble``: each member's gates and outputs per class.
    """
    circuits = list(circuits)
    names = list(names) if names is not None else [f"circuit {i}" for i in range(len(circuits))]
    if len(names) != len(circuits):
        raise KairoError(f"{len(names)} names for {len(circuits)} circuits")
    _check_members(circuits, names)
    k, n_cls = circuits[0].n_inputs, circuits[0].n_classes
    ops, a, b, groups = [], [], [], []
    offset = 0                      # gates of the members before this one
    for c in circuits:
        def shift(ids, off=offset):
            return np.where(ids < k, ids, ids + off)
        ops.append(c.ops)
        a.append(shift(c.a))
        b.append(shift(c.b))
        groups.append(shift(c.outputs).reshape(n_cls, -1))
        offset += c.n_gates
    meta = {key: v for key, v in circuits[0].meta.items()
            if key != "ensemble" and all(c.meta.get(key, _MISSING) == v for c in circuits)}
    meta["ensemble"] = {"members": len(circuits),
                        "gates": [c.n_gates for c in circuits],
                        "outputs_per_class": [g.shape[1] for g in groups]}
    return Circuit(n_inputs=k, ops=np.concatenate(ops), a=np.concatenate(a),
                   b=np.concatenate(b), outputs=np.concatenate(groups, axis=1).ravel(),
                   n_classes=n_cls, meta=meta)
