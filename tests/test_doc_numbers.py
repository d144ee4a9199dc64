"""The adult brain's numbers in docs/ are the numbers of their committed result files: change
one, change both.

README.md's and docs/reservoir.md's numbers, the adult brain's size among them, are in
docs/claims.yaml (tests/test_claims.py). The pages here move there as each is covered whole,
and their claims with them; the asserts on `identical`, `verdict` and `met` stay here as tests
of the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def _engines() -> list[tuple[str, str]]:
    lif = _json("lif_adult.json")["sections"]
    one, two = lif["one_trial"]["1_thread"], lif["one_trial"]["2_threads"]
    assert two["identical_to_1_thread"] and lif["trials"]["identical"]
    trials, brk = lif["trials"], lif["breakdown"]["1_thread"]
    claims = [
        ("docs/benchmarks.md", f"| **kairo, numba, 2 threads** | 2 vCPUs | **{two['s']:.3f}** | "
                               f"**{two['realtime_factor']:.2f}** |"),
        ("docs/benchmarks.md", f"| kairo, numba, 1 thread | 1 vCPU | {one['s']:.3f} | "
                               f"{one['realtime_factor']:.2f} |"),
        ("docs/benchmarks.md", f"side by side, one thread each, "
                               f"{trials['side_by_side']['s']:.2f} s; one after another on 2 "
                               f"threads, {trials['one_after_another']['s']:.2f} s"),
        ("docs/benchmarks.md", f"neuron update {brk['neuron_update_s']:.3f} s"),
        ("docs/benchmarks.md", f"synaptic delivery {brk['synaptic_delivery_s']:.3f} s"),
    ]
    return claims


@pytest.mark.parametrize("claims", [_engines], ids=["lif_adult"])
def test_the_docs_state_the_numbers_of_the_result_files(claims):
    for doc, phrase in claims():
        assert phrase in _text(doc), f"{doc} does not say {phrase!r} (its result file does)"
