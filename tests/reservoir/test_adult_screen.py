"""Shiu et al.'s experiments on adult-brain files: activation, a second group at another
rate, silencing, and the spike table his analysis code reads."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from kairo import ConfigError
from kairo.cli import main
from kairo.connectome import load_connectome, synthetic_flywire
from kairo.reservoir import ScreenConfig, screen_experiment, shiu_spike_table


@pytest.fixture(scope="module")
def flywire(tmp_path_factory):
    folder = tmp_path_factory.mktemp("flywire")
    synthetic_flywire(folder, n_neurons=400, n_synapses=60_000, seed=5)
    return folder


def _screen(folder, **kw):
    cfg = ScreenConfig(connectome=str(folder), trials=3, duration_ms=200.0, **kw)
    return screen_experiment(cfg, load_connectome(folder))


def test_activation_two_rates_and_the_spike_table(flywire):
    c = load_connectome(flywire)
    r = _screen(flywire, stimulate="class=olfactory", stimulate2="class=gustatory",
                rate2=50.0)
    t = r["table"].set_index("neuron_id")
    one, two = c.ids[c.group("class=olfactory")], c.ids[c.group("class=gustatory")]
    assert r["n_stimulated"] == one.size and r["n_stimulated2"] == two.size
    assert t.loc[one, "stimulated"].all() and t.loc[two, "stimulated"].all()
    # every input spike makes a spike (Shiu's 250 · w_syn): the rates are the input rates
    assert t.loc[one, "rate_hz"].mean() == pytest.approx(150, rel=0.2)
    assert t.loc[two, "rate_hz"].mean() == pytest.approx(50, rel=0.3)
    assert r["signs"] == "given"                       # FlyWire's transmitters
    spikes = shiu_spike_table(r["spikes"], r["ids"], "olf")
    assert list(spikes.columns) == ["t", "trial", "flywire_id", "exp_name"]
    assert spikes.flywire_id.dtype == np.int64 and spikes.flywire_id.min() > 2**53
    assert set(spikes.trial) == {0, 1, 2} and spikes.t.max() < 0.2
    # Shiu's get_rate: spikes per trial / duration, averaged over trials
    per = spikes.groupby(["flywire_id", "trial"]).size().unstack(fill_value=0)
    per = per.reindex(columns=range(3), fill_value=0)
    rates = (per / 0.2).mean(axis=1)
    assert np.allclose(rates, t.loc[rates.index, "rate_hz"])


def test_silencing_removes_the_silenced_neurons_outputs(flywire):
    loud = _screen(flywire, stimulate="super_class=sensory")
    quiet = _screen(flywire, stimulate="super_class=sensory", silence="super_class=sensory")
    others = lambda r: r["table"].loc[~r["table"].stimulated, "rate_hz"]  # noqa: E731
    assert others(loud).sum() > 0
    assert others(quiet).sum() == 0                    # nothing reaches the rest
    assert quiet["n_silenced"] == quiet["n_stimulated"]


def test_overlapping_groups_and_half_given_second_group_are_refused(flywire):
    with pytest.raises(ConfigError, match="stimulate and stimulate2 share"):
        _screen(flywire, stimulate="class=olfactory", stimulate2="super_class=sensory",
                rate2=10.0)
    with pytest.raises(ConfigError, match="stimulate2 and rate2 go together"):
        ScreenConfig(stimulate2="class=olfactory")
    with pytest.raises(ConfigError, match="stimulate2 and rate2 go together"):
        ScreenConfig(rate2=20.0)


def test_the_command_on_codex_files_with_an_id_file(flywire, tmp_path, monkeypatch):
    monkeypatch.setenv("KAIRO_STORE", str(tmp_path / "store.db"))
    c = load_connectome(flywire / "connections.csv.gz")
    ids = c.ids[c.group("class=olfactory;side=left")]
    (tmp_path / "ids.txt").write_text("\n".join(map(str, ids)) + "\n")
    out = tmp_path / "screen"
    assert main(["reservoir", "screen", "--connectome", str(flywire / "connections.csv.gz"),
                 "--stimulate", f"@{tmp_path / 'ids.txt'}", "--trials", "2",
                 "--duration-ms", "100", "--exp-name", "orn", "--out", str(out)]) == 0
    run = json.loads((out / "run.json").read_text())
    assert run["resolved"]["signs"] == "given"
    assert any(k.endswith("connections.csv.gz") for k in run["data"])
    spikes = pd.read_parquet(out / "spikes.parquet")
    assert set(spikes.exp_name) == {"orn"} and set(ids) <= set(spikes.flywire_id)
    assert json.loads((out / "metrics.json").read_text())["n_stimulated"] == ids.size
