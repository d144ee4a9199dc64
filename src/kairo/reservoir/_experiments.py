"""Reservoir experiments behind ``kairo reservoir …``: run, compare, sweep, propagate.

Every experiment takes one frozen config and returns plain results (dicts and DataFrames);
writing and plotting are the commands' (:mod:`kairo.reservoir._commands`). ``compare`` and
``sweep`` score their conditions (the real connectome and every null replicate; a sweep is a
comparison at every swept value) in parallel through :func:`kairo._jobs.map_jobs`, with the
same numbers as one by one: each condition draws from its own seed stream and is scored on one
BLAS thread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from kairo._errors import ConfigError
from kairo._jobs import map_jobs, resolve_executor
from kairo._stats import null_stats, wilcoxon_p
from kairo.connectome import Connectome, load_connectome, null_model, prepare
from kairo.connectome._io import REGISTERED
from kairo.data import REGISTRY, data_dir
from kairo.reservoir._config import (CompareConfig, PropagateConfig, ReservoirSettings,
                                     RunConfig, ScreenConfig, SweepConfig)
from kairo.reservoir._esn import Reservoir
from kairo.reservoir._readout import StreamingRidgeCV
from kairo.reservoir._tasks import HEADLINE, TaskData, accuracy, make_task, memory_capacity, \
    nrmse, r2, trial_accuracy

__all__ = ["load_for", "connectome_inputs", "build_reservoir", "build_spiking_reservoir",
           "evaluate", "run_experiment", "compare_experiment", "sweep_experiment",
           "compare_at", "sweep_result", "propagate_experiment", "screen_experiment",
           "shiu_spike_table"]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- building
# the last connectome loaded, by what was read: a series of runs in one process (the demo, the
# tests) parses the archive once (connectomes never change, so sharing one is safe)
_LOADED: dict = {}


def load_for(cfg) -> Connectome:
    """The connectome a config names (``connectome``, ``compartment``, ``data_dir``)."""
    try:
        stamp = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns)
                      for p in map(Path, connectome_inputs(cfg).values()))
    except OSError:                               # not there yet: the loader fetches it
        stamp = None
    key = (cfg.connectome, cfg.compartment, cfg.data_dir, cfg.min_synapses, stamp)
    if stamp is None or key not in _LOADED:
        c = load_connectome(cfg.connectome, data_dir=cfg.data_dir or None,
                            compartment=cfg.compartment, min_synapses=cfg.min_synapses)
        if stamp is None:
            return c
        _LOADED.clear()
        _LOADED[key] = c
    return _LOADED[key]


def connectome_inputs(cfg) -> dict[str, Path]:
    """``{label: path}`` of the files the config's connectome is read from (for run.json)."""
    if cfg.connectome in REGISTERED and cfg.connectome in REGISTRY:
        return {cfg.connectome: data_dir(cfg.data_dir or None) / REGISTRY[cfg.connectome].relpath}
    from kairo.connectome import adult_files

    p = Path(cfg.connectome)
    adult = adult_files(p) if p.exists() else None
    if adult is not None:
        return {str(f): f for f in adult[1].values()}
    files = sorted(p.rglob("*.csv")) if p.is_dir() else [p]
    return {str(f): f for f in files if f.is_file()}


def _prepared(raw: Connectome, cfg: ReservoirSettings, *, signs: str | None = None,
              **override) -> Connectome:
    s = dataclasses.replace(cfg, **override) if override else cfg
    return prepare(raw, norm=s.norm, spectral_radius_target=s.spectral_radius, alpha=s.alpha,
                   signs=signs or s.signs, inhibitory_fraction=s.inhibitory_fraction,
                   inhibitory_types=s.inhibitory_types, seed=_seed(s.seed, "signs"))


_STREAMS = {"input": 0, "task": 1, "signs": 2, "nulls": 3}


def _seed(seed: int, purpose: str) -> np.random.SeedSequence:
    """Independent, reproducible seed streams per purpose (input weights, task, nulls…)."""
    return np.random.SeedSequence([int(seed), _STREAMS[purpose]])


def build_reservoir(c: Connectome, cfg: ReservoirSettings, n_inputs: int, **override
                    ) -> Reservoir:
    s = dataclasses.replace(cfg, **override) if override else cfg
    return Reservoir(c, input_neurons=c.group(s.input_group),
                     readout_neurons=c.group(s.readout_group), n_inputs=n_inputs,
                     activation=s.activation, leak=s.leak, input_gain=s.input_gain,
                     bias=s.bias, input_weights=s.input_weights,
                     seed=np.random.default_rng(_seed(s.seed, "input")), engine=s.engine,
                     dtype=s.dtype, device=s.device)


def build_spiking_reservoir(raw: Connectome, cfg: ReservoirSettings, n_inputs: int, *,
                            signs: str | None = None, strength_of: Connectome | None = None):
    """The liquid state machine of a config (``dynamics="lif"``): a LIF network on the
    signed synapse counts (no normalization), the input group's Poisson rates coding the
    task input. ``strength_of``: rescale the weights so their mean magnitude equals that
    connectome's (the Gaussian null's N(0, 1) weights would otherwise be far weaker than
    synapse counts)."""
    from kairo.reservoir._spiking import LIFNetwork
    from kairo.reservoir._spiking_online import SpikingReservoir

    c = prepare(raw, norm="none", signs=signs or cfg.signs,
                inhibitory_fraction=cfg.inhibitory_fraction,
                inhibitory_types=cfg.inhibitory_types, seed=_seed(cfg.seed, "signs"))
    w = c.weights
    if strength_of is not None and w.nnz:
        w = w * (abs(strength_of.weights.data).mean() / abs(w.data).mean())
    net = LIFNetwork(w, cfg.lif_params(), engine="numba")
    return SpikingReservoir(net, input_neurons=c.group(cfg.input_group),
                            readout_neurons=c.group(cfg.readout_group), n_inputs=n_inputs,
                            input_weights=cfg.input_weights, input_gain=cfg.input_gain,
                            rate_hz=cfg.input_rate, rate_gain=cfg.rate_gain,
                            step_ms=cfg.step_ms, states=cfg.lsm_states,
                            trace_tau_ms=cfg.trace_tau,
                            seed=np.random.default_rng(_seed(cfg.seed, "input"))), c


def _resolved(res) -> dict:
    """What the config's "auto" engine and device became (for run.json)."""
    from kairo.reservoir._spiking_online import SpikingReservoir

    if isinstance(res, SpikingReservoir):
        return {"engine": "numba (LIF)"}
    engine = res.resolve_engine(1)
    return {"engine": engine, **({"device": res.resolve_device()} if engine == "torch" else {})}


def task_for(cfg: RunConfig) -> TaskData:
    extra = {} if cfg.horizon is None else {"horizon": cfg.horizon}
    if cfg.task.startswith("ngym:"):
        extra.update(dt=cfg.ngym_dt, timing=cfg.ngym_timing, sigma=cfg.ngym_sigma,
                     cohs=cfg.ngym_cohs)
    return make_task(cfg.task, n_train=cfg.n_train, n_test=cfg.n_test, washout=cfg.washout,
                     max_delay=cfg.max_delay, period=cfg.period, **extra,
                     seed=np.random.default_rng(_seed(cfg.seed, "task")))


# ---------------------------------------------------------------------------- evaluation
def evaluate(res: Reservoir, data: TaskData, *, cv: int = 5, readout: str = "ridge",
             keep_predictions: bool = False) -> dict:
    """Train the readout on the training span and score the test span.

    States are streamed: ridge statistics accumulate chunk by chunk, so memory does not grow
    with the run length (the logistic readout is the exception: it keeps training states).
    """
    train, test = data.train, data.test
    # contiguous K-fold over the training span (folds of ceil(n_train / cv) steps)
    # trial-structured tasks (NeuroGym) train the readout on the decision periods only
    mask = data.meta.get("mask")
    n_fit = data.n_train if mask is None else int(mask[train].sum())
    ridge = StreamingRidgeCV(cv=cv, block=-(-n_fit // cv),
                             alpha_per_target=data.name == "memory-capacity")
    logistic_x, logistic_y = [], []
    labels = data.meta.get("labels")
    preds = []
    fitted = None
    for s, states in res.stream(data.u[:test.stop]):
        e = s + states.shape[0]
        a, b = max(s, train.start), min(e, train.stop)
        if a < b and (mask is None or mask[a:b].any()):
            # the chunk's training rows: all of the span (a view), or its decision steps
            if mask is None:
                x, rows = states[a - s:b - s], slice(a, b)
            else:
                rows = np.flatnonzero(mask[a:b]) + a
                x = states[rows - s]
            if readout == "ridge":
                ridge.partial_fit(x, data.y[rows])
            else:
                logistic_x.append(x)
                logistic_y.append(labels[rows])
        a, b = max(s, test.start), min(e, test.stop)
        if a < b:
            if fitted is None:
                fitted = ridge.finalize() if readout == "ridge" else _fit_logistic(
                    np.concatenate(logistic_x), np.concatenate(logistic_y))
            chunk = states[a - s:b - s]
            preds.append(fitted.predict(chunk) if readout == "ridge" else
                         fitted.predict_proba(chunk))
    y_hat = np.concatenate(preds)
    y_hat = y_hat[:, None] if y_hat.ndim == 1 else y_hat
    y = data.y[test]
    out: dict = {"task": data.name, "n_train": data.n_train, "n_test": data.n_test,
                 "n_features": int(res.n_readout)}
    if readout == "ridge":
        alpha = np.atleast_1d(ridge.alpha_)
        out["ridge_alpha"] = float(np.median(alpha))
    if data.name == "memory-capacity":
        mc, curve = memory_capacity(y, y_hat)
        out.update(mc=mc, mc_curve=curve.tolist())
    elif "trial" in data.meta:
        acc, n_trials = trial_accuracy(data, y_hat, test)
        dec = data.meta["mask"][test]
        out.update(trial_accuracy=acc, n_test_trials=n_trials,
                   decision_step_accuracy=accuracy(labels[test][dec], y_hat[dec]))
    elif data.kind == "classification":
        out.update(accuracy=accuracy(labels[test], y_hat))
    else:
        out.update(nrmse=nrmse(y, y_hat), r2=r2(y, y_hat),
                   rmse=float(np.sqrt(np.mean((y - y_hat) ** 2))))
    if keep_predictions:
        out["_y"], out["_y_hat"] = y, y_hat
    return out


def _fit_logistic(x, labels):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000)).fit(x, labels)


def headline(task: str) -> tuple[str, bool]:
    if task.startswith("ngym:"):
        return "trial_accuracy", True
    return HEADLINE[task]


def run_experiment(cfg: RunConfig, raw: Connectome | None = None) -> dict:
    """One reservoir on one task: its metrics, plus the test targets and predictions under
    ``_y``/``_y_hat`` and what "auto" resolved to under ``_resolved``."""
    raw = raw if raw is not None else load_for(cfg)
    data = task_for(cfg)
    if cfg.dynamics == "lif":
        res, c = build_spiking_reservoir(raw, cfg, n_inputs=data.u.shape[1])
    else:
        c = _prepared(raw, cfg)
        res = build_reservoir(c, cfg, n_inputs=data.u.shape[1])
    m = evaluate(res, data, cv=cfg.cv, readout=cfg.readout, keep_predictions=True)
    m["connectome"] = repr(c)
    m["n_input_neurons"] = int(res.input_neurons.size)
    m["_resolved"] = _resolved(res)
    return m


# ---------------------------------------------------------------------------- nulls
def _null_seeds(seed: int, kinds, n: int) -> dict[str, list[np.random.SeedSequence]]:
    base = _seed(seed, "nulls").spawn(len(kinds))
    return {k: s.spawn(n) for k, s in zip(kinds, base)}


@dataclass(frozen=True)
class _Condition:
    """The real connectome or one null replicate. ``seed`` set: the null is drawn from
    ``graph`` (the raw connectome) inside the job; else ``graph`` is scored as it is."""

    kind: str
    replicate: int
    graph: Connectome
    seed: np.random.SeedSequence | None = None

    def drawn(self) -> _Condition:
        if self.seed is None:
            return self
        return _Condition(self.kind, self.replicate,
                          null_model(self.graph, self.kind, np.random.default_rng(self.seed)))


def _conditions(raw: Connectome, cfg: CompareConfig) -> list[_Condition]:
    """The real connectome, then every null replicate (each from its own seed stream, drawn
    where it is scored)."""
    seeds = _null_seeds(cfg.seed, cfg.null_models, cfg.nulls)
    return [_Condition("real", 0, raw),
            *(_Condition(kind, i, raw, ss) for kind in cfg.null_models
              for i, ss in enumerate(seeds[kind]))]


@dataclass(frozen=True)
class _Job:
    """One scoring: a condition on the task, optionally at a swept parameter value."""

    cfg: RunConfig
    data: TaskData
    condition: _Condition
    override: tuple[tuple[str, float], ...] = ()


# Every condition is scored on one BLAS/torch thread, wherever it runs: the parallelism is
# across conditions (several workers each using every core would only contend for them), and a
# multi-threaded BLAS sums in another order, so one thread also makes the numbers the same for
# any number of workers and on any machine.
_JOB_THREADS = 1


@contextlib.contextmanager
def _thread_limit(threads: int):
    import sys

    torch = sys.modules.get("torch")
    before = torch.get_num_threads() if torch is not None else None
    if torch is not None:
        torch.set_num_threads(threads)
    try:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=threads):
            yield
    finally:
        if torch is not None:
            torch.set_num_threads(before)


def _score_job(job: _Job) -> dict:
    """Score one condition (module-level, so worker processes can run it)."""
    cond = job.condition.drawn()
    # the Gaussian ESN is signed by construction; everything else gets cfg.signs
    signs = "keep" if cond.kind == "gaussian" else None
    override = dict(job.override)
    if job.cfg.dynamics == "lif":
        res, c = build_spiking_reservoir(
            cond.graph, job.cfg, job.data.u.shape[1], signs=signs,
            strength_of=job.condition.graph if cond.kind == "gaussian" else None)
        with _thread_limit(_JOB_THREADS):
            m = evaluate(res, job.data, cv=job.cfg.cv, readout=job.cfg.readout)
        return {**m, "connectome": repr(c), "_resolved": _resolved(res)}
    c = _prepared(cond.graph, job.cfg, signs=signs, **override)
    res = build_reservoir(c, job.cfg, n_inputs=job.data.u.shape[1], **override)
    if res.resolve_engine(1) == "torch":
        import torch  # noqa: F401  (imported before the limit, so the limit covers it)
    with _thread_limit(_JOB_THREADS):
        m = evaluate(res, job.data, cv=job.cfg.cv, readout=job.cfg.readout)
    return {**m, "connectome": repr(c), "_resolved": _resolved(res)}


def _score_all(cfg: CompareConfig, jobs: list[_Job], desc: str) -> list[dict]:
    kind, workers = resolve_executor(cfg.executor, cfg.workers, len(jobs))
    log.info("%s: %d conditions, %s with %d worker(s)", desc, len(jobs), kind, workers)
    return map_jobs(_score_job, jobs, workers=workers, executor=kind, desc=desc)


def compare_experiment(cfg: CompareConfig, raw: Connectome | None = None) -> dict:
    """The real connectome against ``cfg.nulls`` replicates of each null model on one task:
    a row per condition (``table``) and the real value against each null (``summary``)."""
    raw = raw if raw is not None else load_for(cfg)
    data = task_for(cfg)
    metric, higher = headline(cfg.task)
    conds = _conditions(raw, cfg)
    scores = _score_all(cfg, [_Job(cfg, data, c) for c in conds], "compare")
    table = pd.DataFrame([{"model": c.kind, "replicate": c.replicate, metric: m[metric],
                           "ridge_alpha": m.get("ridge_alpha")} for c, m in zip(conds, scores)])
    real = float(table.loc[table.model == "real", metric].iloc[0])
    summary = {kind: null_stats(real, table.loc[table.model == kind, metric].to_numpy(), higher)
               for kind in cfg.null_models}
    return {"metric": metric, "higher_is_better": higher, "real": real, "table": table,
            "summary": summary, "connectome": scores[0]["connectome"],
            "resolved": scores[0]["_resolved"]}


def compare_at(cfg: SweepConfig, value: float) -> CompareConfig:
    """The comparison ``cfg`` makes at one swept value: its CompareConfig with ``cfg.param``
    set to ``value``."""
    names = {f.name for f in dataclasses.fields(CompareConfig)}
    return CompareConfig(**{**{n: getattr(cfg, n) for n in names}, cfg.param: value})


def sweep_result(cfg: SweepConfig, tables: list[pd.DataFrame]) -> dict:
    """The sweep from its comparisons' tables (one per value of ``cfg.values``, in order):
    a row per (value, condition) (``table``) and mean ± sd per value and model (``curves``)."""
    metric, higher = headline(cfg.task)
    table = pd.concat([t.assign(**{cfg.param: v}) for v, t in zip(cfg.values, tables)],
                      ignore_index=True)
    table = table[[cfg.param, "model", "replicate", metric, "ridge_alpha"]]
    curves = (table.groupby([cfg.param, "model"])[metric]
              .agg(["mean", "std", "count"]).reset_index())
    return {"metric": metric, "higher_is_better": higher, "param": cfg.param, "table": table,
            "curves": curves}


def sweep_experiment(cfg: SweepConfig, raw: Connectome | None = None) -> dict:
    """A metric against ``cfg.param`` at each of ``cfg.values``, for the real connectome and
    the null replicates: at each value the comparison :func:`compare_experiment` makes
    (:func:`compare_at`; its nulls come from the same seeds at every value, so the curves
    differ only by the parameter). ``kairo reservoir sweep`` runs each value as a stored
    ``reservoir compare`` run instead, which resumes."""
    raw = raw if raw is not None else load_for(cfg)
    runs = [compare_experiment(compare_at(cfg, v), raw) for v in cfg.values]
    return {**sweep_result(cfg, [r["table"] for r in runs]), "resolved": runs[0]["resolved"]}


# ---------------------------------------------------------------------------- propagate
def propagate_experiment(cfg: PropagateConfig, raw: Connectome | None = None) -> dict:
    """Drive the left or the right stimulation group with a constant input and record the
    mean activity of each record group per side over time, under each normalization.

    Dynamics: x(t) = f(x(t−1) W + s·1_stim), x(0) = 0, f = tanh (or identity), with W
    pre → post (``convention="reversed"`` uses Wᵀ, i.e. signals flowing post → pre).
    With ``dynamics="lif"``: :func:`_propagate_lif`.
    """
    raw = raw if raw is not None else load_for(cfg)
    if cfg.dynamics == "lif":
        return _propagate_lif(cfg, raw)
    stim = {side: raw.select(**_group_kw(cfg.stim_group), side=side) for side in ("L", "R")}
    rec = {(g, side): raw.select(**_group_kw(g), side=side)
           for g in cfg.record_groups for side in ("L", "R")}
    rows, final = [], {}
    for norm in cfg.norms:
        c = prepare(raw, norm=norm, spectral_radius_target=cfg.spectral_radius,
                    signs=cfg.signs, inhibitory_fraction=cfg.inhibitory_fraction,
                    inhibitory_types=cfg.inhibitory_types, seed=_seed(cfg.seed, "signs"))
        w = c.weights if cfg.convention == "pre-to-post" else c.weights.T.tocsr()
        # two streams: stimulate left, stimulate right; input channel k drives side k's group
        inp = np.concatenate([stim["L"], stim["R"]])
        win = np.zeros((2, inp.size))
        win[0, :stim["L"].size] = 1.0
        win[1, stim["L"].size:] = 1.0
        res = Reservoir(w, input_neurons=inp, n_inputs=2, activation=cfg.activation,
                        input_weights=win, engine="scipy")
        u = np.zeros((cfg.steps, 2, 2))
        u[:, 0, 0] = cfg.stimulus
        u[:, 1, 1] = cfg.stimulus
        states = res.run(u)                                   # (steps, 2 streams, n)
        for si, sside in enumerate(("L", "R")):
            for (g, side), idx in rec.items():
                act = states[:, si, idx]                      # (steps, n_group)
                for t in range(cfg.steps):
                    rows.append({"norm": norm, "stimulated": sside, "step": t + 1, "group": g,
                                 "side": side, "mean_activity": float(act[t].mean())})
                final[norm, sside, g, side] = act[-1]
    table = pd.DataFrame(rows)
    return {"table": table, "hypotheses": _propagate_hypotheses(cfg, raw, table, final, rec),
            "convention": ("pre → post (rows presynaptic): biological signal flow"
                           if cfg.convention == "pre-to-post" else
                           "REVERSED post → pre (Wᵀ): NOT the biological direction")}


def _group_kw(spec: str) -> dict:
    from kairo.connectome import parse_group

    kw = parse_group(spec)
    if kw is None or "side" in kw:
        raise ConfigError(f"group {spec!r}: propagate needs a group without a side (it "
                          f"selects L and R itself)")
    return kw


def _propagate_hypotheses(cfg, raw, table, final, rec) -> dict:
    out: dict = {}
    g0 = cfg.record_groups[0]
    t_end = table[table.step == cfg.steps]

    def mean_at(norm, sstim, g, side):
        r = t_end[(t_end.norm == norm) & (t_end.stimulated == sstim) & (t_end.group == g)
                  & (t_end.side == side)]
        return float(r.mean_activity.iloc[0])

    if {"spectral", "row"} <= set(cfg.norms):
        reach = {norm: float(np.mean([mean_at(norm, s, g0, side) for s in "LR"
                                      for side in "LR"])) for norm in ("spectral", "row")}
        stim_mean = {norm: float(table[(table.norm == norm) & (table.step == cfg.steps)]
                                 .mean_activity.max()) for norm in ("spectral", "row")}
        ratio = reach["row"] / reach["spectral"] if reach["spectral"] > 0 else float("inf")
        out["row_reaches_dn_better_than_spectral"] = {
            "claim": f"row normalization lets the signal reach {g0} where spectral-radius "
                     f"normalization buries it",
            f"{g0}_mean_activity_final_step": reach, "ratio_row_over_spectral": ratio,
            "max_group_mean_final_step": stim_mean,
            "supported": bool(ratio > 10.0),
            "criterion": "row/spectral ratio of final-step mean activity > 10"}
    lat, supported = _lateralization(raw, g0, rec, final, cfg.norms)
    out["right_stim_drives_left_dn_more"] = {
        "claim": f"right-side stimulation drives left {g0} more than right {g0}",
        "results": lat, "supported_per_norm": supported,
        "criterion": f"mean left {g0} > mean right {g0} under right stimulation, and paired "
                     f"Wilcoxon over bilateral pairs p < 0.05"}
    return out


def _lateralization(raw, g0, rec, final, labels) -> tuple[dict, dict]:
    """Left vs right activity of ``g0`` per label (a normalization, or a Poisson rate) and
    stimulated side: means, contra/ipsi ratio, paired Wilcoxon over bilateral pairs."""
    lat = {}
    pairs = _partner_pairs(raw, g0)   # (left id, right id) bilateral partners in the group
    ids = raw.ids
    for label in labels:
        for sstim in "LR":
            left, right = final[label, sstim, g0, "L"], final[label, sstim, g0, "R"]
            value = {**dict(zip(ids[rec[g0, "L"]], left)), **dict(zip(ids[rec[g0, "R"]], right))}
            diff = np.array([value[a] - value[b] for a, b in pairs])
            p = wilcoxon_p(diff) if np.any(diff != 0) else 1.0
            contra = "L" if sstim == "R" else "R"
            cm = float(left.mean() if contra == "L" else right.mean())
            im = float(right.mean() if contra == "L" else left.mean())
            lat[f"{label}/stim-{sstim}"] = {
                f"{g0}_L_mean": float(left.mean()), f"{g0}_R_mean": float(right.mean()),
                "contralateral_over_ipsilateral": (cm / im if im > 0 else
                                                   float("inf") if cm > 0 else float("nan")),
                "n_pairs": len(pairs), "wilcoxon_p_left_vs_right": p}
    supported = {
        label: bool(lat[f"{label}/stim-R"][f"{g0}_L_mean"] > lat[f"{label}/stim-R"][f"{g0}_R_mean"]
                    and lat[f"{label}/stim-R"]["wilcoxon_p_left_vs_right"] < 0.05)
        for label in labels}
    return lat, supported


# ---------------------------------------------------------------------------- spiking
def _lif_network(raw: Connectome, cfg, weights=None):
    """The LIF network of a config: synapse counts with the config's signs, no
    normalization (w_syn sets the scale)."""
    from kairo.reservoir._spiking import LIFNetwork

    c = prepare(raw, norm="none", signs=cfg.signs, inhibitory_fraction=cfg.inhibitory_fraction,
                inhibitory_types=cfg.inhibitory_types, seed=_seed(cfg.seed, "signs"))
    w = c.weights if weights is None else weights(c)
    return LIFNetwork(w, cfg.lif_params(), engine=cfg.spiking_engine, device=cfg.device)


def _propagate_lif(cfg: PropagateConfig, raw: Connectome) -> dict:
    """Poisson spikes at each rate into the left or the right stimulation group of a LIF
    network; firing rates of the record groups per side, a time course and a raster at the
    highest rate, the lateralization question with spikes next to the rate units' answer."""
    stim = {side: raw.select(**_group_kw(cfg.stim_group), side=side) for side in ("L", "R")}
    rec = {(g, side): raw.select(**_group_kw(g), side=side)
           for g in cfg.record_groups for side in ("L", "R")}
    groups = {("stimulated", side): idx for side, idx in stim.items()} | rec
    flip = cfg.convention != "pre-to-post"
    net = _lif_network(raw, cfg, (lambda c: c.weights.T.tocsr()) if flip else None)
    p = net.params
    bin_steps = max(1, p.steps(10.0))
    rows, course, final, rasters = [], [], {}, {}
    top = max(cfg.rates)
    labels = [f"lif {r:g} Hz" for r in cfg.rates]
    for ri, (rate, label) in enumerate(zip(cfg.rates, labels)):
        for si, sside in enumerate(("L", "R")):
            out = net.run(cfg.duration_ms, input_neurons=stim[sside], rate_hz=rate,
                          trials=cfg.trials, seed=[cfg.seed, 5, ri, si])
            r = out.rates_hz()                                    # (trials, n)
            for (g, side), idx in groups.items():
                per_trial = r[:, idx].mean(1)
                rows.append({"rate_hz": rate, "stimulated": sside, "group": g, "side": side,
                             "n_neurons": idx.size, "mean_rate_hz": float(per_trial.mean()),
                             "sd_over_trials": float(per_trial.std(ddof=1))
                             if cfg.trials > 1 else 0.0,
                             "active_fraction": float((r[:, idx] > 0).mean())})
                final[label, sside, g, side] = r[:, idx].mean(0)
            if rate == top:
                b = out.binned(bin_steps)                            # (trials, bins, n)
                hz = 1000.0 / (bin_steps * p.dt)
                for (g, side), idx in groups.items():
                    curve = b[:, :, idx].mean(axis=(0, 2)) * hz
                    course += [{"stimulated": sside, "group": g, "side": side,
                                "t_ms": (k + 1) * bin_steps * p.dt, "rate_hz": float(v)}
                               for k, v in enumerate(curve)]
                first = out.trial == 0
                rasters[sside] = (out.step[first] * p.dt, out.neuron[first])
    g0 = cfg.record_groups[0]
    lat, supported = _lateralization(raw, g0, rec, final, labels)
    rate_units = propagate_experiment(dataclasses.replace(cfg, dynamics="rate"), raw)
    hyp = {"right_stim_drives_left_dn_more": {
        "claim": f"right-side stimulation drives left {g0} more than right {g0} (spikes)",
        "results": lat, "supported_per_rate": supported,
        "criterion": f"mean left {g0} rate > mean right {g0} rate under right stimulation, "
                     f"and paired Wilcoxon over bilateral pairs (trial-mean rates) p < 0.05"},
        "rate_units": rate_units["hypotheses"]}
    return {"table": pd.DataFrame(rows), "timecourse": pd.DataFrame(course),
            "rasters": rasters, "groups": groups, "hypotheses": hyp,
            "convention": rate_units["convention"]}


def screen_experiment(cfg: ScreenConfig, raw: Connectome | None = None) -> dict:
    """An activation screen in the style of Shiu et al. 2024: ``trials`` trials with Poisson
    input into the activated group (and the second group at its own rate, if any) and as many
    baseline trials without it (both with the background input, if any, and both with the
    silenced neurons' out-synapses removed); every neuron's rate increase, a two-sided
    Mann–Whitney test per neuron over trials, Benjamini–Hochberg q values, a raster of the top
    responders, and the activated trials' spikes (``spikes``: trial, step, neuron)."""
    import scipy.sparse as sp
    from scipy.stats import false_discovery_control, mannwhitneyu

    from kairo.connectome import resolve_signs

    raw = raw if raw is not None else load_for(cfg)
    stim = raw.group(cfg.stimulate)
    stim2 = raw.group(cfg.stimulate2) if cfg.stimulate2 else np.zeros(0, np.int64)
    both = np.intersect1d(stim, stim2)
    if both.size:
        raise ConfigError(f"stimulate and stimulate2 share {both.size} neuron(s) (e.g. "
                          f"{raw.ids[both[0]]}); a neuron gets one rate")
    silenced = raw.group(cfg.silence) if cfg.silence else np.zeros(0, np.int64)

    def silence(c: Connectome):
        if not silenced.size:
            return c.weights
        keep = np.ones(c.n_neurons)
        keep[silenced] = 0.0
        return (sp.diags(keep) @ c.weights).tocsr()

    net = _lif_network(raw, cfg, silence)
    n = raw.n_neurons
    rate = np.zeros(n)
    if cfg.background_group and cfg.background_rate > 0:
        rate[raw.group(cfg.background_group)] = cfg.background_rate
    base_rate = rate.copy()
    rate[stim] = cfg.rate
    rate[stim2] = cfg.rate2

    def simulate(r, tag):
        idx = np.flatnonzero(r > 0)
        if idx.size == 0:                  # no input: the network stays at rest
            return np.zeros((cfg.trials, n)), None
        out = net.run(cfg.duration_ms, input_neurons=idx, rate_hz=r[idx], trials=cfg.trials,
                      seed=[cfg.seed, 6, tag])
        return out.rates_hz(), out

    on, out = simulate(rate, 0)
    off, _ = simulate(base_rate, 1)
    with np.errstate(all="ignore"):
        p = np.asarray(mannwhitneyu(on, off, alternative="two-sided", axis=0).pvalue, float)
    p = np.where(np.isfinite(p), p, 1.0)          # identical samples (e.g. silent in both)
    q = false_discovery_control(p)
    t = raw.neurons
    table = pd.DataFrame({
        "neuron_id": raw.ids, "celltype": t["celltype"].to_numpy(),
        "side": t["side"].to_numpy(), "annotations": t["annotations"].to_numpy(),
        "stimulated": np.isin(np.arange(n), np.concatenate([stim, stim2])),
        "silenced": np.isin(np.arange(n), silenced),
        "rate_hz": on.mean(0), "rate_sd": on.std(0, ddof=1),
        "baseline_hz": off.mean(0), "increase_hz": on.mean(0) - off.mean(0), "p": p, "q": q})
    table["responds"] = table.q < cfg.alpha_fdr
    table = table.sort_values(["increase_hz", "neuron_id"], ascending=[False, True],
                              kind="stable").reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, n + 1))
    by_type = (table[~table.stimulated].groupby("celltype")
               .agg(n_neurons=("rank", "size"), n_responding=("responds", "sum"),
                    mean_increase_hz=("increase_hz", "mean"),
                    max_increase_hz=("increase_hz", "max"))
               .sort_values("mean_increase_hz", ascending=False).reset_index())
    pos = pd.Index(raw.ids)
    shown = table[~table.stimulated].head(cfg.top)
    rows = pos.get_indexer(shown.neuron_id).astype(np.int64)
    first = out.trial == 0
    return {"table": table, "by_celltype": by_type, "n_stimulated": int(stim.size),
            "n_stimulated2": int(stim2.size), "n_silenced": int(silenced.size),
            "signs": resolve_signs(cfg.signs, raw), "spikes": out, "ids": raw.ids,
            "raster": (out.step[first] * net.params.dt, out.neuron[first]),
            "raster_rows": rows, "raster_labels": [f"{c} {s}" for c, s in
                                                   zip(shown.celltype, shown.side)]}


def shiu_spike_table(spikes, ids, exp_name: str) -> pd.DataFrame:
    """Spikes as Shiu et al.'s ``model.py`` stores them (one row a spike: ``t`` in seconds,
    ``trial``, ``flywire_id``, ``exp_name``), which his ``utils.load_exps`` and ``get_rate``
    read."""
    ids = np.asarray(ids)
    return pd.DataFrame({"t": spikes.step * (spikes.dt / 1000.0),
                         "trial": spikes.trial.astype(np.int64),
                         "flywire_id": ids[spikes.neuron],
                         "exp_name": exp_name})


def _partner_pairs(raw: Connectome, group: str) -> list[tuple[int, int]]:
    t = raw.neurons
    right = t[(t.celltype == group) & (t.side == "R")].index
    t = t[(t.celltype == group) & (t.side == "L") & t.partner_id.notna()]
    return [(a, int(b)) for a, b in zip(t.index, t.partner_id) if int(b) in right]
