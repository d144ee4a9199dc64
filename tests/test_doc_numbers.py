"""The adult brain's numbers in docs/ are the numbers of their committed result files: change
one, change both.

README.md's numbers, the adult brain's size among them, are in docs/claims.yaml
(tests/test_claims.py). The pages here move there as each is covered whole, and their claims
with them; the asserts on `identical`, `verdict` and `met` stay here as tests of the files."""

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


def _shiu() -> list[tuple[str, str]]:
    r = _json("shiu_reference.json")["graphs"]
    lar, syn = r["larval"], r["synthetic"]
    lz, sz = lar["poisson"]["kairo_vs_shiu"], syn["poisson"]["kairo_vs_shiu"]
    assert lar["given_train"]["brian2_numpy"]["identical"]
    assert lar["given_train"]["brian2_cython"]["identical"]
    assert syn["given_train"]["brian2_numpy"]["identical"]
    assert lz["verdict"] == sz["verdict"] == "pass"
    t = lar["poisson"]["timing"]
    return [
        ("docs/reservoir.md", f"{lar['given_train']['brian2_numpy']['spikes_kairo']:,} larval"),
        ("docs/reservoir.md", f"{syn['given_train']['brian2_numpy']['spikes_kairo']:,} "
                              f"synthetic"),
        ("docs/reservoir.md", f"{lz['z_abs_gt_3']} of {lz['neurons_active_in_either']} neurons "
                              f"beyond 3, r {lz['pearson_r_mean_rates']:.4f}"),
        ("docs/reservoir.md", f"{sz['z_abs_gt_3']} of {sz['neurons_active_in_either']:,} "
                              f"({100 * sz['fraction_z_abs_gt_3']:.2f} %), r "
                              f"{sz['pearson_r_mean_rates']:.4f}"),
        ("docs/reservoir.md", f"his `run_exp` {t['shiu_run_exp_s']:.0f} s"),
        ("docs/reservoir.md", f"`kairo reservoir screen` {t['kairo_screen_cli_s']:.1f} s"),
    ]


def _load() -> list[tuple[str, str]]:
    r = _json("flywire_load.json")
    assert r["same_graph"] and r["targets"]["met"]
    codex, shiu = r["sections"]["load_codex"], r["sections"]["load_shiu"]
    screen = r["sections"]["screen"]
    size = (f"{codex['n_neurons']:,} neurons, {codex['n_synapses'] / 1e6:.1f} M synapses in "
            f"{codex['n_pairs'] / 1e6:.1f} M pairs")
    return [
        ("docs/reservoir.md", size),
        ("docs/reservoir.md", f"loads in {codex['wall_s']:.1f} s from Codex's CSV (peak "
                              f"{codex['peak_rss_mb'] / 1024:.1f} GB)"),
        ("docs/reservoir.md", f"{shiu['wall_s']:.1f} s from Shiu's parquet with Codex's "
                              f"annotations ({shiu['peak_rss_mb'] / 1024:.1f} GB)"),
        ("docs/reservoir.md", f"30 trials, takes {screen['wall_s']:.1f} s end to end "
                              f"({screen['peak_rss_mb'] / 1024:.1f} GB)"),
    ]


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


@pytest.mark.parametrize("claims", [_shiu, _load, _engines],
                         ids=["shiu_reference", "flywire_load", "lif_adult"])
def test_the_docs_state_the_numbers_of_the_result_files(claims):
    for doc, phrase in claims():
        assert phrase in _text(doc), f"{doc} does not say {phrase!r} (its result file does)"
