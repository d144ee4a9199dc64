"""The adult brain's numbers in docs/ are the numbers of their committed result files: change
one, change both.

The numbers themselves are claims in docs/claims.yaml (tests/test_claims.py); what the pages
say of them in words (the same spikes, the test passes, the targets met) is checked here, as
asserts on the files' `identical`, `verdict` and `met`."""

from __future__ import annotations

import json
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _json(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def _text(name: str) -> str:
    return " ".join((ROOT / name).read_text().split())   # line breaks as spaces


def test_the_result_files_behind_docs_reservoir_md_hold_what_it_reads_into_them():
    """docs/reservoir.md's numbers are claims in docs/claims.yaml; what it says of them in words
    (the same spikes, the test passes, the same graph, the targets met) is checked here."""
    r = _json("shiu_reference.json")["graphs"]
    lar, syn = r["larval"], r["synthetic"]
    for graph in (lar, syn):
        assert graph["given_train"]["brian2_numpy"]["identical"]
        assert graph["given_train"]["brian2_cython"]["identical"]
        assert graph["poisson"]["kairo_vs_shiu"]["verdict"] == "pass"
    assert lar["poisson"]["control_kairo_vs_kairo_other_seed"]["verdict"] == "pass"
    agreement = _json("spiking_brian2.json")["sections"]["agreement"]
    for target in ("brian2_numpy", "brian2_cython", "brian2_cpp_standalone"):
        assert agreement[target]["identical"]
    load = _json("flywire_load.json")
    assert load["same_graph"] and load["targets"]["met"]
    lif = _json("lif_adult.json")["sections"]
    assert lif["one_trial"]["2_threads"]["identical_to_1_thread"] and lif["trials"]["identical"]
