"""``kairo reservoir propagate | screen | run | compare | sweep``: each command's experiment and
what it writes (tables, figures, metrics) into its results folder.

Importable without NumPy, pandas or Matplotlib: the run functions import them.
"""

from __future__ import annotations

from kairo._command import Command
from kairo.reservoir._config import (CompareConfig, PropagateConfig, RunConfig, ScreenConfig,
                                     SweepConfig)

__all__ = ["COMMANDS"]

_COLORS = {"real": "black", "rewire": "tab:blue", "weight-shuffle": "tab:orange",
           "random-topology": "tab:green", "gaussian": "tab:red"}


def _figure(**kw):
    # a bare Figure needs no pyplot backend (nothing is shown, so no display is needed)
    from matplotlib.figure import Figure

    return Figure(**kw)


def _inputs(cfg) -> dict:
    from kairo.reservoir import connectome_inputs

    return connectome_inputs(cfg)


def _record(rd, resolved: dict) -> None:
    for name, value in resolved.items():
        rd.resolve(name, value)


# ---------------------------------------------------------------------------- run
def _run(cfg: RunConfig, rd) -> str:
    import numpy as np
    import pandas as pd

    from kairo.reservoir import run_experiment

    m = run_experiment(cfg)
    _record(rd, m["_resolved"])
    rd.add("metrics.json", {k: v for k, v in m.items() if not k.startswith("_")})
    y, y_hat = m["_y"], m["_y_hat"]
    if cfg.task == "memory-capacity":
        fig = _figure(figsize=(6, 3.5))
        ax = fig.subplots()
        curve = np.asarray(m["mc_curve"])
        ax.plot(np.arange(1, curve.size + 1), curve, "k.-", ms=3)
        ax.set(xlabel="delay k", ylabel="r²(u(t−k), ŷ_k(t))",
               title=f"memory capacity MC = {m['mc']:.2f} ({cfg.norm} norm)")
        rd.add("memory_curve.png", fig)
        rd.add("memory_curve.csv", pd.DataFrame({"delay": np.arange(1, curve.size + 1),
                                                 "r2": curve}))
        text = f"MC = {m['mc']:.3f}"
    else:
        n = min(300, y.shape[0])
        cols = {f"y{j}": y[:n, j] for j in range(y.shape[1])}
        cols.update({f"y_hat{j}": y_hat[:n, j] for j in range(y_hat.shape[1])})
        rd.add("test_predictions.csv", pd.DataFrame(cols))
        fig = _figure(figsize=(8, 3.5))
        ax = fig.subplots()
        ax.plot(y[:n, 0], "k-", lw=1.2, label="target")
        ax.plot(y_hat[:n, 0], "-", color="tab:red", lw=1, label="readout")
        key = next(k for k in ("trial_accuracy", "accuracy", "nrmse") if k in m)
        ax.set(xlabel="test step", title=f"{cfg.task}: {key} = {m[key]:.4g} ({cfg.norm} norm)")
        ax.legend(loc="upper right")
        rd.add("test_predictions.png", fig)
        text = f"{key} = {m[key]:.4g}" + (f", R² = {m['r2']:.4f}" if "r2" in m else "")
        if "n_test_trials" in m:
            text += (f" over {m['n_test_trials']} test trials (decision steps "
                     f"{m['decision_step_accuracy']:.4g})")
    return f"{cfg.task} on {m['connectome']}: {text}"


# ---------------------------------------------------------------------------- compare
def _compare(cfg: CompareConfig, rd) -> str:
    import numpy as np
    import pandas as pd

    from kairo.reservoir import compare_experiment

    r = compare_experiment(cfg)
    _record(rd, r["resolved"])
    metric, table = r["metric"], r["table"]
    rd.add("runs.csv", table)
    rd.add("summary.csv", pd.DataFrame([{"null_model": k, **v} for k, v in r["summary"].items()]))
    rd.add("metrics.json", {"metric": metric, "higher_is_better": r["higher_is_better"],
                            "real": r["real"], "summary": r["summary"],
                            "connectome": r["connectome"]})
    fig = _figure(figsize=(7, 4))
    ax = fig.subplots()
    kinds = list(r["summary"])
    rng = np.random.default_rng(0)
    for i, k in enumerate(kinds):
        v = table.loc[table.model == k, metric].to_numpy()
        ax.scatter(i + rng.uniform(-0.15, 0.15, v.size), v, s=14, color=_COLORS.get(k),
                   alpha=0.7)
        ax.errorbar(i + 0.3, v.mean(), yerr=v.std(ddof=1), fmt="o", color="k", capsize=3)
    ax.axhline(r["real"], color="black", ls="--", label=f"real connectome ({r['real']:.4g})")
    ax.set_xticks(range(len(kinds)),
                  [f"{k}\nz = {r['summary'][k]['z']:.2f}\np(real better) = "
                   f"{r['summary'][k]['p_better']:.3f}" for k in kinds], fontsize=8)
    ax.set(ylabel=metric, title=f"{cfg.task}: real connectome vs null models "
                                f"({cfg.nulls} each, {cfg.norm} norm)")
    ax.legend(loc="best", fontsize=8)
    rd.add("compare.png", fig)
    lines = [f"{cfg.task} ({metric}, {'higher' if r['higher_is_better'] else 'lower'} is "
             f"better): real = {r['real']:.4g}"]
    for k, s in r["summary"].items():
        lines.append(f"  vs {k:16s} null {s['null_mean']:.4g} ± {s['null_sd']:.3g}  "
                     f"z = {s['z']:+.2f}  p(real better) = {s['p_better']:.3f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- sweep
def _sweep(cfg: SweepConfig, rd) -> str:
    import json

    import pandas as pd

    from kairo._config import config_to_dict
    from kairo.reservoir import compare_at, sweep_result
    from kairo.sweep import point_key, run_points

    # each value is a stored `reservoir compare` run in rd.points (its nulls drawn from the
    # same seeds at every value): a stopped sweep runs only the values it has not finished
    configs = [config_to_dict(compare_at(cfg, v)) for v in cfg.values]
    points = [(point_key(f"{cfg.param}={v:g}", c), c) for v, c in zip(cfg.values, configs)]
    run_points("reservoir compare", points, rd.points, workers=1, desc="sweep")
    folders = [rd.points / key for key, _ in points]
    r = sweep_result(cfg, [pd.read_csv(f / "runs.csv", float_precision="round_trip")
                           for f in folders])
    _record(rd, json.loads((folders[0] / "run.json").read_text())["resolved"])
    metric, param, curves = r["metric"], r["param"], r["curves"]
    rd.add("runs.csv", r["table"])
    rd.add("curves.csv", curves)
    rd.add("metrics.json", {"metric": metric, "param": param,
                            "curves": curves.to_dict(orient="records")})
    fig = _figure(figsize=(7, 4))
    ax = fig.subplots()
    for model, g in curves.groupby("model", sort=False):
        g = g.sort_values(param)
        c = _COLORS.get(model)
        ax.plot(g[param], g["mean"], "o-", color=c, label=model, lw=2 if model == "real" else 1)
        if model != "real":
            sd = g["std"].fillna(0)
            ax.fill_between(g[param], g["mean"] - sd, g["mean"] + sd, color=c, alpha=0.15)
    ax.set(xlabel=param, ylabel=metric, title=f"{cfg.task}: {metric} vs {param} "
                                              f"({cfg.norm} norm; bands ±1 sd of nulls)")
    ax.legend(fontsize=8)
    rd.add("sweep.png", fig)
    real = curves[curves.model == "real"].sort_values(param)
    best = real.loc[real["mean"].idxmax() if r["higher_is_better"] else real["mean"].idxmin()]
    return (f"{metric} vs {param}: best real value {best['mean']:.4g} at {param} = "
            f"{best[param]:g}")


# ---------------------------------------------------------------------------- propagate
def _propagate(cfg: PropagateConfig, rd) -> str:
    from kairo.reservoir import propagate_experiment

    r = propagate_experiment(cfg)
    if cfg.dynamics == "lif":
        return _propagate_lif(cfg, rd, r)
    table = r["table"]
    rd.add("activity.csv", table)
    rd.add("hypotheses.json", {"convention": r["convention"], **r["hypotheses"]})
    wide = table.pivot_table(index=["norm", "stimulated", "step"], columns=["group", "side"],
                             values="mean_activity")
    wide.columns = [f"{g}_{s}" for g, s in wide.columns]
    rd.add("activity_wide.csv", wide.reset_index())
    norms = list(dict.fromkeys(table.norm))
    fig = _figure(figsize=(10, 3.2 * len(norms)))
    axes = fig.subplots(len(norms), 2, squeeze=False, sharex=True)
    styles = {"L": "-", "R": "--"}
    for i, norm in enumerate(norms):
        for j, stim in enumerate(("L", "R")):
            ax = axes[i, j]
            sub = table[(table.norm == norm) & (table.stimulated == stim)]
            for (g, side), d in sub.groupby(["group", "side"]):
                ax.plot(d.step, d.mean_activity, styles[side],
                        color="tab:blue" if g == cfg.record_groups[0] else "tab:gray",
                        label=f"{g} {side}")
            ax.set(title=f"{norm} norm, stimulate {cfg.stim_group} {stim}", xlabel="step",
                   ylabel="mean activity")
            ax.legend(fontsize=7)
    fig.suptitle(f"direction convention: {r['convention']}", fontsize=9)
    rd.add("propagate.png", fig)
    h = r["hypotheses"]
    lines = [f"convention: {r['convention']}"]
    if "row_reaches_dn_better_than_spectral" in h:
        a = h["row_reaches_dn_better_than_spectral"]
        lines.append(f"H1 '{a['claim']}': row/spectral = {a['ratio_row_over_spectral']:.1f}× "
                     f"→ {'supported' if a['supported'] else 'not supported'}")
    b = h["right_stim_drives_left_dn_more"]
    g0 = cfg.record_groups[0]
    for key, v in b["results"].items():
        lines.append(f"  {key:20s} {g0} L {v[f'{g0}_L_mean']:.4g}  R {v[f'{g0}_R_mean']:.4g}"
                     f"  contra/ipsi {v['contralateral_over_ipsilateral']:.3f}"
                     f"  Wilcoxon p {v['wilcoxon_p_left_vs_right']:.2g}")
    lines.append(f"H2 '{b['claim']}': " + ", ".join(
        f"{n}: {'supported' if s else 'not supported'}"
        for n, s in b["supported_per_norm"].items()))
    rd.add("summary.txt", "\n".join(lines) + "\n")
    return "\n".join(lines)


def _raster(ax, times, neurons, rows, labels=None):
    """Spikes of the neurons at positions ``rows`` (one line each, top to bottom)."""
    import numpy as np

    where = {int(i): k for k, i in enumerate(rows)}
    keep = np.isin(neurons, rows)
    y = np.array([where[int(i)] for i in neurons[keep]])
    ax.scatter(times[keep], y, s=1.5, c="k", marker="|", linewidths=0.6)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    if labels is not None and len(labels) <= 60:
        ax.set_yticks(range(len(rows)), labels, fontsize=5)


def _propagate_lif(cfg: PropagateConfig, rd, r) -> str:
    import numpy as np

    table, course = r["table"], r["timecourse"]
    rd.add("rates.csv", table)
    rd.add("timecourse.csv", course)
    rd.add("hypotheses.json", {"convention": r["convention"], **r["hypotheses"]})
    g0 = cfg.record_groups[0]
    fig = _figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2, sharey=True)
    styles = {"L": "-", "R": "--"}
    for ax, stim in zip(axes, ("L", "R")):
        sub = table[(table.stimulated == stim) & (table.group != "stimulated")]
        for (g, side), d in sub.groupby(["group", "side"]):
            ax.errorbar(d.rate_hz, d.mean_rate_hz, yerr=d.sd_over_trials, fmt=styles[side],
                        marker="o", ms=3, capsize=2,
                        color="tab:blue" if g == g0 else "tab:gray", label=f"{g} {side}")
        ax.set(title=f"LIF: Poisson into {cfg.stim_group} {stim}", xlabel="input rate (Hz)",
               ylabel="mean firing rate (Hz)")
        ax.legend(fontsize=7)
    rd.add("rates.png", fig)
    fig = _figure(figsize=(10, 3.4))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, stim in zip(axes, ("L", "R")):
        sub = course[course.stimulated == stim]
        for (g, side), d in sub.groupby(["group", "side"]):
            if g == "stimulated":
                continue
            ax.plot(d.t_ms, d.rate_hz, styles[side],
                    color="tab:blue" if g == g0 else "tab:gray", label=f"{g} {side}")
        ax.set(title=f"{max(cfg.rates):g} Hz into {cfg.stim_group} {stim}", xlabel="time (ms)",
               ylabel="group rate (Hz, 10-ms bins)")
        ax.legend(fontsize=7)
    rd.add("timecourse.png", fig)
    groups = r["groups"]
    order = [("stimulated", "L"), ("stimulated", "R")] + [
        (g, s) for g in cfg.record_groups for s in ("L", "R")]
    rows = np.concatenate([groups[k] for k in order])
    fig = _figure(figsize=(10, 6))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, stim in zip(axes, ("L", "R")):
        times, neurons = r["rasters"][stim]
        _raster(ax, times, neurons, rows)
        edges = np.cumsum([groups[k].size for k in order])
        for e in edges[:-1]:
            ax.axhline(e - 0.5, color="tab:red", lw=0.4)
        ax.set(title=f"trial 0, {max(cfg.rates):g} Hz into {cfg.stim_group} {stim}",
               xlabel="time (ms)")
    starts = np.concatenate([[0], edges[:-1]])
    axes[0].set_yticks((starts + edges) / 2 - 0.5, [f"{g} {s}" for g, s in order], fontsize=7)
    rd.add("raster.png", fig)
    h = r["hypotheses"]
    b = h["right_stim_drives_left_dn_more"]
    lines = [f"convention: {r['convention']}", f"LIF ({cfg.signs} signs), {cfg.trials} trials "
             f"of {cfg.duration_ms:g} ms per rate and side"]
    for key, v in b["results"].items():
        lines.append(f"  {key:22s} {g0} L {v[f'{g0}_L_mean']:.3g} Hz  R {v[f'{g0}_R_mean']:.3g} "
                     f"Hz  contra/ipsi {v['contralateral_over_ipsilateral']:.3f}  Wilcoxon p "
                     f"{v['wilcoxon_p_left_vs_right']:.2g}")
    lines.append(f"H2 with spikes '{b['claim']}': " + ", ".join(
        f"{k}: {'supported' if s else 'not supported'}" for k, s in
        b["supported_per_rate"].items()))
    ru = h["rate_units"]["right_stim_drives_left_dn_more"]["supported_per_norm"]
    lines.append("H2 with rate units: " + ", ".join(
        f"{k}: {'supported' if s else 'not supported'}" for k, s in ru.items()))
    rd.add("summary.txt", "\n".join(lines) + "\n")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- screen
def _screen(cfg: ScreenConfig, rd) -> str:
    from kairo.reservoir import screen_experiment

    from kairo.reservoir import shiu_spike_table

    r = screen_experiment(cfg)
    rd.resolve("signs", r["signs"])
    table, by_type = r["table"], r["by_celltype"]
    rd.add("screen.csv", table)
    rd.add("spikes.parquet", shiu_spike_table(r["spikes"], r["ids"], cfg.exp_name))
    rd.add("celltypes.csv", by_type)
    fig = _figure(figsize=(10, max(3.0, 0.12 * len(r["raster_rows"]) + 1)))
    ax = fig.subplots()
    times, neurons = r["raster"]
    _raster(ax, times, neurons, r["raster_rows"], r["raster_labels"])
    ax.set(title=f"top {len(r['raster_rows'])} responders, trial 0: {cfg.rate:g} Hz into "
                 f"{cfg.stimulate}", xlabel="time (ms)")
    rd.add("raster_top.png", fig)
    fig = _figure(figsize=(8, 0.22 * len(by_type) + 1.2))
    ax = fig.subplots()
    ax.barh(by_type.celltype, by_type.mean_increase_hz, color="tab:blue")
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=6)
    ax.set(xlabel="mean rate increase (Hz)", title="by cell type (stimulated neurons excluded)")
    rd.add("celltypes.png", fig)
    resp = table[table.responds & ~table.stimulated]
    metrics = {"n_stimulated": r["n_stimulated"], "n_stimulated2": r["n_stimulated2"],
               "n_silenced": r["n_silenced"], "n_responding": int(len(resp)),
               "n_responding_up": int((resp.increase_hz > 0).sum()),
               "n_responding_down": int((resp.increase_hz < 0).sum()),
               "top": table[~table.stimulated].head(10)[
                   ["neuron_id", "celltype", "side", "increase_hz", "q"]].to_dict("records")}
    rd.add("metrics.json", metrics)
    also = "".join([f", {r['n_stimulated2']} ({cfg.stimulate2}) at {cfg.rate2:g} Hz"
                    if r["n_stimulated2"] else "",
                    f", {r['n_silenced']} silenced ({cfg.silence})" if r["n_silenced"] else ""])
    lines = [f"{r['n_stimulated']} neurons stimulated ({cfg.stimulate}) at {cfg.rate:g} Hz"
             f"{also}, {cfg.trials} trials of {cfg.duration_ms:g} ms, {r['signs']} signs: "
             f"{len(resp)} other neurons respond (q < {cfg.alpha_fdr:g}; "
             f"{metrics['n_responding_up']} up, {metrics['n_responding_down']} down)"]
    for row in metrics["top"][:5]:
        lines.append(f"  {row['neuron_id']} {row['celltype']} {row['side']}: "
                     f"+{row['increase_hz']:.1f} Hz (q {row['q']:.2g})")
    rd.add("summary.txt", "\n".join(lines) + "\n")
    return "\n".join(lines)


COMMANDS = [
    Command("reservoir propagate", PropagateConfig, _propagate,
            "stimulate sensory L/R, watch DN activity",
            description="Stimulate the left or the right sensory neurons and record the "
                        "left/right activity of descending neurons: rate units under each "
                        "normalization, or (--dynamics lif) spiking neurons driven by Poisson "
                        "input at each rate.",
            inputs=_inputs,
            headline=("hypotheses.row_reaches_dn_better_than_spectral.supported",
                      "hypotheses.row_reaches_dn_better_than_spectral.ratio_row_over_spectral")),
    Command("reservoir screen", ScreenConfig, _screen,
            "spiking activation screen of one group",
            description="Activate one neuron group of a LIF network with Poisson spikes (and "
                        "a second at another rate, optionally with a group silenced) and "
                        "rank every neuron by its rate increase over baseline (Mann–Whitney "
                        "test per neuron, Benjamini–Hochberg q values), as in Shiu et al. "
                        "2024; spikes.parquet holds the spikes as Shiu's code writes them.",
            inputs=_inputs, headline=("n_stimulated", "n_responding")),
    Command("reservoir run", RunConfig, _run, "one reservoir, one task, its metrics",
            description="One connectome reservoir on one task: its metrics, test predictions "
                        "and figure.", inputs=_inputs, headline=("task", "nrmse", "mc", "r2")),
    Command("reservoir compare", CompareConfig, _compare, "real connectome vs null models",
            description="The real connectome against replicates of each null model on one "
                        "task, conditions scored in parallel (--workers).", inputs=_inputs,
            headline=("metric", "real")),
    Command("reservoir sweep", SweepConfig, _sweep,
            "a metric against a parameter, real vs nulls",
            description="A task metric against one parameter for the real connectome and null "
                        "replicates (drawn from the same seeds at every value): one reservoir "
                        "compare run per value in <out>.runs/ (moved into the folder as runs/; "
                        "the same command after a stop runs only the missing values), each "
                        "in parallel (--workers).", inputs=_inputs,
            headline=("metric", "param")),
]
