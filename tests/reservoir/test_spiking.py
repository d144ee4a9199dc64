"""The LIF network: exact single-neuron values, refractoriness and delays, the two engines
against each other, Brian2 against both on the larval connectome, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.sparse as sp

from kairo import ConfigError, KairoError, SelectionError
from kairo.reservoir import LIFNetwork, LIFParams, brian2_run


def _one(w=None, **kw) -> LIFNetwork:
    return LIFNetwork(sp.csr_matrix(np.zeros((1, 1)) if w is None else w),
                      LIFParams(**kw), engine="numba")


def test_propagator_is_the_exact_solution():
    p = LIFParams()
    a_m, a_s, c = p.propagator()
    # v(t) − v_rest = g0 τs / (τs − τm) (e^{−t/τs} − e^{−t/τm}) from v = v_rest, g = g0
    t = p.dt
    want = p.tau_syn / (p.tau_syn - p.tau_m) * (math.exp(-t / p.tau_syn)
                                                 - math.exp(-t / p.tau_m))
    assert c == pytest.approx(want, rel=1e-12)
    assert a_m == pytest.approx(math.exp(-t / 20.0)) and a_s == pytest.approx(math.exp(-t / 5))
    # equal time constants: the limit t/τ · e^{−t/τ}
    q = LIFParams(tau_m=5.0, tau_syn=5.0)
    assert q.propagator()[2] == pytest.approx(0.1 / 5 * math.exp(-0.1 / 5), rel=1e-12)


def test_input_spike_fires_the_next_step_and_refractoriness_holds():
    # one neuron, given input spikes at 0.0, 0.5 and 1.0 ms; refractory period 2.2 ms for
    # the target (input_refractory=2.2): a spike at step 1, then input during refractoriness
    # is ignored, so exactly one spike
    net = _one(input_refractory=2.2)
    out = net.run(5.0, input_spikes=([0.0, 0.5, 1.0], [0, 0, 0]))
    assert out.step.tolist() == [1]
    # without a refractory period every input spike makes one spike, a step later
    net = _one()
    out = net.run(5.0, input_spikes=([0.0, 0.5, 1.0], [0, 0, 0]))
    assert out.step.tolist() == [1, 6, 11]


@pytest.mark.parametrize("engine", ["numba", "torch"])
@pytest.mark.parametrize("delay", [0.1, 0.3, 1.8])
def test_synaptic_delay_and_the_first_spike_time_of_a_driven_neuron(engine, delay):
    # 0 → 1 with 200 synapses of 0.275 mV: g jumps by 55 mV one delay after neuron 0 spikes
    # (the kernel's peak is 0.157 g, so ≥ 45 mV of g are needed to gain the 7 mV to threshold)
    w = sp.csr_matrix(np.array([[0.0, 200.0], [0.0, 0.0]]))
    p = LIFParams(delay=delay)
    net = LIFNetwork(w, p, engine=engine, device="cpu")
    out = net.run(20.0, input_spikes=([0.0], [0]))
    s0 = out.step[out.neuron == 0].tolist()
    s1 = out.step[out.neuron == 1].tolist()
    assert s0 == [1]
    # neuron 1's g arrives at step 1 + delay and its v crosses −45 mV when
    # 55 · τs/(τs−τm) · (e^{−t/τs} − e^{−t/τm}) > 7 mV: solve on the step grid
    a_m, a_s, c = p.propagator()
    v, g, k = 0.0, 55.0, 0
    while v <= 7.0 and k < 200:
        v, g, k = a_m * v + c * g, a_s * g, k + 1
    assert k < 200
    assert s1 == [1 + p.delay_steps + k]


def test_counts_rates_and_bins():
    net = _one()
    out = net.run(10.0, input_spikes=([0.0, 0.5, 1.0], [0, 0, 0]))
    assert out.counts().tolist() == [[3]]
    assert out.rates_hz()[0, 0] == pytest.approx(300.0)
    assert out.binned(50)[0, :, 0].tolist() == [3, 0]
    assert out.times_ms.tolist() == pytest.approx([0.1, 0.6, 1.1])


def test_poisson_rate_and_seeds():
    net = LIFNetwork(sp.csr_matrix((50, 50)), engine="numba")
    a = net.run(1000, input_neurons=np.arange(50), rate_hz=40.0, trials=2, seed=3)
    b = net.run(1000, input_neurons=np.arange(50), rate_hz=40.0, trials=2, seed=3)
    assert np.array_equal(a.neuron, b.neuron) and np.array_equal(a.step, b.step)
    r = a.rates_hz()
    assert r.mean() == pytest.approx(40.0, rel=0.1)             # 4,000 spikes: ±1.6 %
    assert not np.array_equal(r[0], r[1])                       # trials draw their own
    c = net.run(1000, input_neurons=np.arange(50), rate_hz=40.0, trials=2, seed=4)
    assert not np.array_equal(c.counts(), a.counts())


@pytest.mark.parametrize("delay", [0.1, 1.8, 5.0])
def test_engines_agree_on_a_random_signed_network(delay):
    rng = np.random.default_rng(0)
    n = 300
    w = sp.random(n, n, density=0.05, random_state=rng,
                  data_rvs=lambda k: rng.integers(1, 12, k).astype(float))
    w = sp.diags(np.where(rng.random(n) < 0.2, -1.0, 1.0)) @ w     # 20 % inhibitory rows
    kw = dict(input_neurons=np.arange(40), rate_hz=120.0, trials=3, seed=7)
    p = LIFParams(delay=delay)
    a = LIFNetwork(w, p, engine="numba").run(200, **kw)
    b = LIFNetwork(w, p, engine="torch", device="cpu").run(200, **kw)
    assert a.step.size > 1000
    for f in ("trial", "step", "neuron"):
        assert np.array_equal(getattr(a, f), getattr(b, f))


@pytest.mark.parametrize("delay", [0.1, 1.8, 5.0])       # 5 ms: windows shorter than the delay
def test_blocks_and_windows_do_not_change_the_spikes(monkeypatch, delay):
    # the kernel runs windows of up to `delay` steps block by block of neurons: blocks of 32
    # (the last one partial) and windows cut by 7-step chunks must give the spikes of the
    # one-block run, input events and synaptic events included
    import kairo.reservoir._spiking as m

    rng = np.random.default_rng(3)
    n = 300
    w = sp.random(n, n, density=0.05, random_state=rng,
                  data_rvs=lambda k: rng.integers(1, 12, k).astype(float))
    w = sp.diags(np.where(rng.random(n) < 0.2, -1.0, 1.0)) @ w
    # a given input train (Poisson draws depend on how the run is cut into chunks)
    k = rng.random((1500, 43)) < 0.015
    steps, which = np.nonzero(k)
    kw = dict(input_spikes=(steps * 0.1, np.arange(5, 300, 7)[which]))
    p = LIFParams(delay=delay)
    one = LIFNetwork(w, p, engine="numba").run(150, **kw)
    assert one.step.size > 1000
    monkeypatch.setattr(m, "_ONE_BLOCK", 0)
    monkeypatch.setattr(m, "_BLOCK_SHIFT", 5)
    blocks = LIFNetwork(w, p, engine="numba").run(150, **kw)
    monkeypatch.setattr(m, "_CHUNK", 7)
    chunks = LIFNetwork(w, p, engine="numba").run(150, **kw)
    for out in (blocks, chunks):
        assert np.array_equal(out.step, one.step) and np.array_equal(out.neuron, one.neuron)


def test_input_events_are_grouped_by_step_and_sorted_by_neuron():
    from kairo.reservoir._spiking import _by_step

    rng = np.random.default_rng(2)
    for n_steps, n_events in ((50, 300), (3, 500), (10, 0)):   # short and long segments
        ks = rng.integers(0, n_steps, n_events)
        js = rng.integers(0, 40, n_events)                    # with repeats
        ptr, neurons = _by_step(ks, js, n_steps)
        assert np.array_equal(ptr, np.r_[0, np.cumsum(np.bincount(ks, minlength=n_steps))])
        assert np.array_equal(neurons, js[np.lexsort((js, ks))])


def test_the_spike_buffer_grows_without_losing_spikes(monkeypatch):
    # every neuron driven at every step: more spikes than the kernel's first buffer holds
    import kairo.reservoir._spiking as m

    n = 20
    net = LIFNetwork(sp.csr_matrix((n, n)), engine="numba")
    steps = np.repeat(np.arange(100), n)
    neurons = np.tile(np.arange(n), 100)
    out = net.run(10.0, input_spikes=(steps * 0.1, neurons))
    # inputs at steps 0…99: spikes at 1…100 except where the spike step drops the input
    # (a spiking neuron ignores input in its own step), so every second step
    assert out.counts()[0].tolist() == [50] * n
    monkeypatch.setattr(m, "_CHUNK", 7)
    again = net.run(10.0, input_spikes=(steps * 0.1, neurons))
    assert np.array_equal(again.step, out.step) and np.array_equal(again.neuron, out.neuron)


def test_brian2_gives_the_same_spikes_on_the_larval_connectome(winding):
    """The same network, weights, delays, dt and a given input spike train over 1 s: Brian2
    (its numpy target) and kairo fire the same spikes, neuron by neuron and step by step."""
    pytest.importorskip("brian2")
    sens = winding.select(celltype="sensory")
    rng = np.random.default_rng(1)
    ks, js = np.nonzero(rng.random((10_000, sens.size)) < 0.015)     # ≈ 150 Hz per neuron
    spikes = (ks * 0.1, sens[js])
    net = LIFNetwork(winding, engine="numba")
    ours = net.run(1000.0, input_spikes=spikes)
    ref, _ = brian2_run(net, 1000.0, input_spikes=spikes, target="numpy")
    assert ours.step.size > 50_000
    assert np.array_equal(ours.counts(), ref.counts())
    assert np.array_equal(ours.step, ref.step) and np.array_equal(ours.neuron, ref.neuron)


@pytest.mark.parametrize("kw, text", [
    ({"tau_m": -1.0}, "tau_m"), ({"dt": 0.0}, "dt"), ({"refractory": 0.05}, "refractory"),
    ({"delay": 0.05}, "delay"), ({"v_threshold": -60.0}, "v_threshold"),
    ({"w_syn": float("nan")}, "w_syn"), ({"refractory": -2.0}, "refractory")])
def test_bad_parameters_name_the_field(kw, text):
    with pytest.raises(ConfigError, match=text):
        LIFParams(**kw)


def test_bad_run_arguments():
    net = LIFNetwork(sp.csr_matrix((5, 5)), engine="numba")
    with pytest.raises(KairoError, match="rate_hz"):
        net.run(10, input_neurons=[0, 1], rate_hz=-5.0)
    with pytest.raises(KairoError, match="rate_hz"):
        net.run(10, input_neurons=[0, 1], rate_hz=20_000.0)
    with pytest.raises(KairoError, match="rate_hz"):
        net.run(10, input_neurons=[0, 1], rate_hz=[1.0, 2.0, 3.0])
    with pytest.raises(KairoError, match="input_neurons"):
        net.run(10, input_neurons=[7], rate_hz=5.0)
    with pytest.raises(KairoError, match="input_spikes"):
        net.run(10, input_spikes=([12.0], [0]))
    with pytest.raises(KairoError, match="input_spikes"):
        net.run(10, input_spikes=([1.0, 2.0], [0]))
    with pytest.raises(KairoError, match="duration_ms"):
        net.run(0)
    with pytest.raises(KairoError, match="trials"):
        net.run(10, trials=0)
    with pytest.raises(KairoError, match="square"):
        LIFNetwork(sp.csr_matrix((5, 4)))
    with pytest.raises(KairoError, match="engine"):
        LIFNetwork(sp.csr_matrix((5, 5)), engine="nest")


def test_brian2_run_refuses_bad_repeats():
    pytest.importorskip("brian2")
    net = LIFNetwork(sp.csr_matrix((5, 5)), engine="numba")
    for bad in (0, 1.5, True):
        with pytest.raises(KairoError, match="repeats"):
            brian2_run(net, 10.0, target="cpp_standalone", repeats=bad)
    with pytest.raises(KairoError, match="repeats.*cpp_standalone"):
        brian2_run(net, 10.0, target="numpy", repeats=2)


# ---------------------------------------------------------------------------- experiments
def test_propagate_lif_on_the_larval_connectome(winding):
    from kairo.reservoir import PropagateConfig, propagate_experiment

    cfg = PropagateConfig(dynamics="lif", rates=(100.0, 200.0), duration_ms=200.0, trials=2,
                          steps=4)
    r = propagate_experiment(cfg, winding)
    t = r["table"]
    stim = t[(t.group == "stimulated") & (t.side == t.stimulated)]
    # Poisson input with one spike per input spike: the stimulated side fires at the input
    # rate (±10 %), the other side much less
    for rate, row in zip(stim.rate_hz, stim.mean_rate_hz):
        assert row == pytest.approx(rate, rel=0.1)
    other = t[(t.group == "stimulated") & (t.side != t.stimulated)]
    assert (other.mean_rate_hz < 0.1 * other.rate_hz).all()
    # more input, more DN-SEZ output on the stimulated side
    sez = t[(t.group == "DN-SEZ") & (t.side == t.stimulated)].set_index(
        ["stimulated", "rate_hz"]).mean_rate_hz
    assert sez["L", 200.0] > sez["L", 100.0] > 0
    h = r["hypotheses"]
    assert set(h["right_stim_drives_left_dn_more"]["supported_per_rate"]) == {
        "lif 100 Hz", "lif 200 Hz"}
    assert "right_stim_drives_left_dn_more" in h["rate_units"]
    assert set(r["timecourse"].t_ms) == {10.0 * k for k in range(1, 21)}
    # same seed, same spikes
    again = propagate_experiment(cfg, winding)
    pd_equal = (again["table"].mean_rate_hz.to_numpy() == t.mean_rate_hz.to_numpy()).all()
    assert pd_equal


def test_screen_ranks_the_olfactory_pathway(winding):
    from kairo.reservoir import ScreenConfig, screen_experiment

    # 8 trials: the smallest two-sided Mann–Whitney p is 2 / C(16, 8) = 1.6e-4
    r = screen_experiment(ScreenConfig(trials=8, duration_ms=200.0), winding)
    t = r["table"]
    assert r["n_stimulated"] == 21        # left olfactory sensory neurons
    assert t["rank"].tolist() == list(range(1, len(t) + 1))
    assert (t.increase_hz.diff().dropna() <= 0).all()
    assert (t.baseline_hz == 0).all()     # no background: the network rests
    top = t[~t.stimulated].head(20)
    # the antennal lobe answers first: local neurons and projection neurons
    assert set(top.celltype) <= {"LN", "PN", "LHN", "DN-SEZ", "MBIN", "pre-DN-SEZ"}
    assert top.responds.sum() >= 10
    assert ((t.q >= t.p) | np.isclose(t.q, t.p)).all()
    assert not t[~t.responds].increase_hz.gt(50).any()


def test_screen_with_background_and_dale_signs(winding):
    from kairo.reservoir import ScreenConfig, screen_experiment

    cfg = ScreenConfig(trials=3, duration_ms=150.0, background_group="sensory",
                       background_rate=20.0, signs="dale", inhibitory_types=("LN",))
    t = screen_experiment(cfg, winding)["table"]
    assert (t.baseline_hz > 0).any()
    assert (t.increase_hz < 0).any() or (t.increase_hz > 0).any()


@pytest.mark.parametrize("kw, text", [
    ({"tau_m": -1.0}, "tau_m"), ({"rates": (-5.0,)}, "rates"), ({"dt": 3.0}, "refractory"),
    ({"dt": 2.0}, "delay"),
    ({"trials": 0}, "trials"), ({"spiking_engine": "nest"}, "spiking_engine")])
def test_propagate_config_errors(kw, text):
    from kairo.reservoir import PropagateConfig

    with pytest.raises(ConfigError, match=text):
        PropagateConfig(dynamics="lif", **kw)


def test_screen_config_and_input_errors(winding):
    from kairo.reservoir import ScreenConfig, screen_experiment

    with pytest.raises(ConfigError, match="background_rate"):
        ScreenConfig(background_rate=5.0)
    with pytest.raises(ConfigError, match="rate"):
        ScreenConfig(rate=0.0)
    with pytest.raises(SelectionError, match="matches no neuron"):
        screen_experiment(ScreenConfig(stimulate="celltype=sensory;annotation=olfactory;"
                                                 "side=unknown", trials=2), winding)
    with pytest.raises(KairoError, match="signs 'given'"):
        screen_experiment(ScreenConfig(signs="given", trials=2, duration_ms=10.0), winding)


def test_the_commands_write_their_files(tmp_path, data_dir):
    import json

    from kairo.cli import main

    out = tmp_path / "screen"
    assert main(["reservoir", "screen", "--trials", "3", "--duration-ms", "100", "--out",
                 str(out)]) == 0
    for f in ("screen.csv", "celltypes.csv", "raster_top.png", "celltypes.png",
              "metrics.json", "summary.txt"):
        assert (out / f).stat().st_size > 0, f
    m = json.loads((out / "metrics.json").read_text())
    assert m["n_stimulated"] == 21 and len(m["top"]) == 10
    out = tmp_path / "prop"
    assert main(["reservoir", "propagate", "--dynamics", "lif", "--rates", "150",
                 "--trials", "2", "--duration-ms", "100", "--out", str(out)]) == 0
    for f in ("rates.csv", "timecourse.csv", "hypotheses.json", "rates.png",
              "timecourse.png", "raster.png", "summary.txt"):
        assert (out / f).stat().st_size > 0, f
    h = json.loads((out / "hypotheses.json").read_text())
    assert "rate_units" in h
    # a bad option is refused before anything runs, naming the option
    assert main(["reservoir", "propagate", "--dynamics", "lif", "--tau-m", "-3", "--out",
                 str(tmp_path / "bad")]) == 2
    assert not (tmp_path / "bad").exists()


# ---------------------------------------------------------------------------- LSM
def test_lsm_counts_and_traces_read_the_same_spikes(winding):
    from kairo.reservoir import SpikingReservoir

    net = LIFNetwork(winding, engine="numba")
    sens = winding.select(celltype="sensory")
    u = np.random.default_rng(0).uniform(-0.5, 0.5, 120)
    kw = dict(input_neurons=sens, rate_hz=100.0, rate_gain=200.0, step_ms=5.0, seed=3)
    counts = SpikingReservoir(net, states="counts", **kw).run(u)
    trace = SpikingReservoir(net, states="trace", trace_tau_ms=20.0, **kw).run(u)
    again = SpikingReservoir(net, states="counts", **kw).run(u)
    assert counts.shape == trace.shape == (120, winding.n_neurons)
    assert np.array_equal(counts, again)                      # seeded
    assert np.array_equal(counts, np.round(counts)) and counts.min() >= 0
    assert counts[:, sens].sum() > 0.5 * 100 * 0.005 * sens.size * 120
    # each step: trace = decayed trace + this step's spikes, each weighted by e^(−age/τ) with
    # age in (0, 5 ms]
    d = np.exp(-5.0 / 20.0)
    prev = np.vstack([np.zeros(winding.n_neurons), trace[:-1]]) * d
    assert np.all(trace <= prev + counts + 1e-9)
    assert np.all(trace >= prev + counts * d - 1e-9)


def test_lsm_input_rates_and_errors(winding):
    from kairo.reservoir import SpikingReservoir

    net = LIFNetwork(winding, engine="numba")
    res = SpikingReservoir(net, input_neurons=[0, 1, 2], n_inputs=2,
                           input_weights=np.array([[1.0, -1.0, 0.5], [0.0, 0.0, 1.0]]),
                           rate_hz=50.0, rate_gain=100.0)
    r = res.rates(np.array([[1.0, 0.0], [0.0, -1.0]]))
    assert r.tolist() == [[150.0, 0.0, 100.0], [50.0, 50.0, 0.0]]    # clipped at 0
    with pytest.raises(KairoError, match="shape"):
        res.rates(np.zeros((4, 3)))
    with pytest.raises(KairoError, match="NaN"):
        res.rates(np.full((4, 2), np.nan))
    with pytest.raises(KairoError, match="input_weights"):
        SpikingReservoir(net, input_neurons=[0, 1], input_weights=np.ones((1, 3)))
    with pytest.raises(KairoError, match="step_ms"):
        SpikingReservoir(net, input_neurons=[0], step_ms=0.01)
    with pytest.raises(KairoError, match="states"):
        SpikingReservoir(net, input_neurons=[0], states="voltage")


def test_lsm_tasks_and_nulls(winding):
    """The spiking reservoir runs the rate units' tasks, readouts and null comparison."""
    from kairo.reservoir import (CompareConfig, RunConfig, build_spiking_reservoir,
                                 compare_experiment, run_experiment)
    from kairo.connectome import null_model

    # projection neurons read out: 206 features keep the ridge cheap, and they fire
    small = dict(dynamics="lif", n_train=400, n_test=150, washout=50, cv=3, readout_group="PN")
    m = run_experiment(RunConfig(task="memory-capacity", max_delay=10, **small), winding)
    assert 0.1 < m["mc"] < 10 and m["_resolved"] == {"engine": "numba (LIF)"}
    m2 = run_experiment(RunConfig(task="memory-capacity", max_delay=10, **small), winding)
    assert m2["mc"] == m["mc"]
    r = compare_experiment(CompareConfig(task="narma10", nulls=2, workers=1,
                                         null_models=("rewire", "gaussian"), **small), winding)
    assert set(r["table"].model) == {"real", "rewire", "gaussian"}
    assert np.isfinite(r["table"].nrmse).all()
    # the Gaussian null's weights are rescaled to the synapse counts' mean magnitude
    g = null_model(winding, "gaussian", seed=0)
    res, c = build_spiking_reservoir(g, RunConfig(**small), 1, signs="keep",
                                     strength_of=winding)
    w = res.network.weights.data / res.network.params.w_syn
    assert abs(w).mean() == pytest.approx(winding.weights.data.mean())


def test_reservoir_sweep_refuses_lif_and_the_lsm_runs_on_numba():
    from kairo.reservoir import RunConfig, SweepConfig

    with pytest.raises(ConfigError, match="dynamics"):
        SweepConfig(dynamics="lif")
    with pytest.raises(ConfigError, match="spiking_engine"):
        RunConfig(dynamics="lif", spiking_engine="torch")
