"""The reference simulator: a :class:`~kairo.reservoir.LIFNetwork` built and run in Brian2
(:func:`brian2_run`), to check kairo's spikes against (tests/reservoir/test_spiking.py) and
to time it (benchmarks/spiking_brian2.py)."""

from __future__ import annotations

import warnings

import numpy as np

from kairo._errors import KairoError
from kairo.reservoir._spiking import LIFNetwork, SpikeTrains

__all__ = ["brian2_run"]


def brian2_run(net: LIFNetwork, duration_ms: float, *, input_neurons=None, rate_hz=0.0,
               input_spikes=None, seed=None, target: str = "numpy",
               directory: str | None = None, repeats: int = 1) -> tuple[SpikeTrains, dict]:
    """The same network in Brian2 (the reference simulator), one trial.

    Returns the spikes and the timing: ``total_s``, the wall time of ``Network.run`` (with
    code generation and compilation; for ``target="cpp_standalone"`` also the build in
    ``directory`` and the binary's run), and ``run_s``, the simulation alone (the binary's
    own run time in standalone mode, else ``total_s``). ``target``: "numpy", "cython" or
    "cpp_standalone". ``repeats`` (standalone only): the built binary runs this many times,
    ``run_s`` is the fastest and ``runs_s`` lists them all. Poisson input uses Brian2's own random numbers, so only given
    ``input_spikes`` reproduce kairo's spikes exactly.
    """

    try:
        import brian2 as b2
    except ImportError as exc:
        raise KairoError("brian2_run needs the brian2 package (pip install brian2)") from exc
    p = net.params
    if target not in ("numpy", "cython", "cpp_standalone"):
        raise KairoError(f"target: expected numpy, cython or cpp_standalone, got {target!r}")
    standalone = target == "cpp_standalone"
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or repeats < 1:
        raise KairoError(f"repeats: expected an integer ≥ 1, got {repeats!r}")
    if repeats > 1 and not standalone:
        raise KairoError("repeats: only the cpp_standalone target re-runs its binary; call "
                         "brian2_run again for the runtime targets")
    with warnings.catch_warnings():
        return _brian2(b2, net, p, duration_ms, input_neurons, rate_hz, input_spikes, seed,
                       target, standalone, directory, int(repeats))


def _brian2(b2, net, p, duration_ms, input_neurons, rate_hz, input_spikes, seed, target,
            standalone, directory, repeats):
    import time

    if standalone:
        b2.set_device("cpp_standalone", directory=directory, build_on_run=False)
    else:
        b2.set_device("runtime")
        b2.prefs.codegen.target = target
    try:
        warnings.simplefilter("ignore", DeprecationWarning)   # brian2's pyparsing calls
        ms, mv, hz = b2.ms, b2.mV, b2.Hz
        b2.defaultclock.dt = p.dt * ms
        if seed is not None:
            b2.seed(int(seed))
        ns = {"v_rest": p.v_rest * mv, "v_reset": p.v_reset * mv, "v_th": p.v_threshold * mv,
              "tau_m": p.tau_m * ms, "tau_syn": p.tau_syn * ms, "w_in": p.input_weight * mv}
        eqs = """
        dv/dt = (v_rest - v + g) / tau_m : volt (unless refractory)
        dg/dt = -g / tau_syn : volt (unless refractory)
        rfc : second
        """
        # fixed names: the same network generates the same code, so Brian2's cache of
        # compiled code (cython) is hit on a second run
        neu = b2.NeuronGroup(net.n_neurons, eqs, method="exact", threshold="v > v_th",
                             reset="v = v_reset; g = 0*mV", refractory="rfc", namespace=ns,
                             name="lif")
        neu.v = p.v_rest * mv
        neu.g = 0 * mv
        rfc = np.full(net.n_neurons, p.refractory)
        objs = [neu]
        coo = net.weights.tocoo()
        syn = b2.Synapses(neu, neu, "w : volt", on_pre="g += w", delay=p.delay * ms,
                          name="lif_synapses")
        syn.connect(i=coo.row, j=coo.col)
        syn.w = coo.data * mv
        objs.append(syn)
        if input_spikes is not None:
            times, neurons = (np.asarray(a) for a in input_spikes)
            targets, src = np.unique(neurons, return_inverse=True)
            gen = b2.SpikeGeneratorGroup(targets.size, src, times * ms, name="lif_given")
            s_in = b2.Synapses(gen, neu, on_pre="v += w_in", namespace=ns,
                               name="lif_given_synapses")
            s_in.connect(i=np.arange(targets.size), j=targets)
            objs += [gen, s_in]
            rfc[targets] = p.input_refractory
        if input_neurons is not None:
            idx = np.asarray(input_neurons)
            rates = np.broadcast_to(np.asarray(rate_hz, float), idx.shape)
            pg = b2.PoissonGroup(idx.size, rates * hz, name="lif_poisson")
            s_p = b2.Synapses(pg, neu, on_pre="v += w_in", namespace=ns,
                              name="lif_poisson_synapses")
            s_p.connect(i=np.arange(idx.size), j=idx)
            objs += [pg, s_p]
            rfc[idx] = p.input_refractory
        neu.rfc = rfc * ms
        mon = b2.SpikeMonitor(neu, name="lif_spikes")
        network = b2.Network(objs + [mon])
        t0 = time.perf_counter()
        network.run(duration_ms * ms, namespace={})
        if standalone:
            b2.device.build(directory=directory, compile=True, run=True)
        timing = {"total_s": time.perf_counter() - t0}
        if standalone:
            runs = [float(b2.device._last_run_time)]
            for _ in range(repeats - 1):                # the same binary, its own timer
                b2.device.run(directory=directory, with_output=False)
                runs.append(float(b2.device._last_run_time))
            timing["run_s"], timing["runs_s"] = min(runs), runs
        else:
            timing["run_s"] = timing["total_s"]
        step = np.round(np.asarray(mon.t / ms) / p.dt).astype(np.int64)
        neuron = np.asarray(mon.i, dtype=np.int64)
    finally:
        if standalone:
            b2.device.reinit()
            b2.device.activate()
            b2.set_device("runtime")
    order = np.lexsort((neuron, step))
    trains = SpikeTrains(np.zeros(step.size, np.int64), step[order], neuron[order],
                         net.n_neurons, 1, p.steps(duration_ms), p.dt)
    return trains, timing
