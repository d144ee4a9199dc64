"""kairo against Shiu et al.'s own code (philshiu/Drosophila_brain_model, ``model.py`` and
``utils.py``), on the same connectome files (issue 63).

Two graphs are written in Shiu's file format (``Connectivity_783.parquet``,
``Completeness_783.csv``) into a temporary folder and then read by BOTH simulators — Shiu's
``create_model`` / ``run_exp`` and kairo's ``load_shiu``:

* ``larval``    — the larval connectome (Winding et al. 2023, 2,952 neurons, all excitatory)
                  written with ``kairo.connectome.save_shiu``;
* ``synthetic`` — a signed adult-like graph (``synthetic_flywire``: 5,000 neurons, ~1.5M
                  synapses, GABA/glutamate neurons inhibitory, lognormal out-degrees).

Per graph:

1. given_train — Shiu's network built by HIS ``create_model`` (his ``default_params``); his
   PoissonInput replaced by a fixed input spike train (a ``SpikeGeneratorGroup`` and
   ``Synapses(on_pre="v += w_syn*f_poi")``, the input neurons' ``rfc = 0*ms`` as his ``poi()``
   sets it), 1 s, under Brian2's cython and numpy targets; kairo's
   ``LIFNetwork(load_shiu(...), LIFParams()).run(1000, input_spikes=...)`` on the same files
   with the same train. Expected: the same spikes (same neuron, same step).
2. poisson — HIS ``run_exp`` (30 trials, 150 Hz, default params, joblib/loky with
   ``--n-proc`` processes) activating neurons by root id, read back with HIS
   ``utils.load_exps`` + ``get_rate``; ``kairo reservoir screen`` (the command line, 30 trials,
   fixed seed) on the same files and neurons, whose ``spikes.parquet`` is also read with
   Shiu's ``load_exps`` + ``get_rate``. Test: for every neuron active in either simulator,
   z = (mean_kairo − mean_shiu) / sqrt(sd_k²/30 + sd_s²/30) (rates per 1 s trial, sd over
   trials, ddof 1); PASS when at most 1 % of neurons have |z| > 3 (≈ 0.27 % expected if they
   agree), the per-trial total spike counts do not differ (Welch t-test p ≥ 0.001), a
   permutation test that shuffles the 60 trials between the two simulators finds sum(z²) and
   max |z| over neurons ordinary (p ≥ 0.001 each), the mean rates over neurons do not differ
   in distribution (two-sample Kolmogorov–Smirnov p ≥ 0.001) and correlate (Pearson
   r ≥ 0.99). The same test on kairo against kairo with another seed (in process,
   ``screen_experiment``) calibrates it. A Wilcoxon signed-rank test of the paired mean rates
   over neurons, in the first version of the test, is reported but not judged: neurons are
   not independent (one trial's input drives them all), and it rejected kairo against kairo
   as firmly as kairo against Shiu (p = 5e-10 both, larval, first run).
3. timing — Shiu's ``run_exp`` wall time next to kairo's screen (command line, end to end;
   and in process) for the same 30 trials, the load average around each, the CPU model.

Brian2's code generation target for Shiu's ``run_exp`` (``--shiu-target``): ``numpy`` by
default, set through a ``brian_preferences`` file in the working directory of his joblib
workers. His code makes one ``PoissonInput`` per activated neuron and Brian2 names each one's
random function ``poissoninput_binomial_<k>`` with a counter; the name is part of the
generated code, so under the cython target (``--shiu-target default``: Brian2's own choice,
cython where a C++ compiler is found) the trials keep compiling new modules (counted as
``new_cython_modules``): on the 2-core machine of the first runs, 30 larval trials from an
empty cache compiled 199 modules in 396 s (138 s under numpy), 30 synthetic trials ~6 min
against ~2 min under numpy — too long for this benchmark's default.

Usage (a checkout of Shiu's repository, or a folder holding his model.py and utils.py)::

    KAIRO_DATA_DIR=../shared/data nice -n 10 python benchmarks/shiu_reference.py \\
        --shiu-repo /tmp/shiu_model

Results: ``benchmarks/results/shiu_reference.json``. Compare ratios, not absolute times.
Shiu's code under Brian2's own choice of target (cython) from an empty compile cache, the
larval graph only (``benchmarks/results/shiu_reference_cython_larval.json``)::

    KAIRO_DATA_DIR=../shared/data nice -n 10 python benchmarks/shiu_reference.py \\
        --shiu-repo /tmp/shiu_model --graphs larval --shiu-target default \\
        --fresh-cython-cache --out benchmarks/results/shiu_reference_cython_larval.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import gc
import hashlib
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from _common import atomic_write_json, loadavg, section

from kairo.connectome import load_connectome, load_shiu, save_shiu, synthetic_flywire
from kairo.reservoir import LIFNetwork, LIFParams, ScreenConfig, screen_experiment
from kairo.results import cpu_model

SEED = 63                       # the number: kairo's screen seed (the control: 64)
TRAIN_RATE_HZ = 150.0           # the given input train's rate (part 1)
N_TRIALS = 30
RATE_HZ = 150.0                 # Shiu's default r_poi
Z_LIMIT, Z_FRACTION_MAX, P_MIN, R_MIN = 3.0, 0.01, 1e-3, 0.99


# ---------------------------------------------------------------------------- helpers
def import_shiu(repo: Path):
    """Shiu's model.py and utils.py from ``repo`` (imported by name, so that joblib's worker
    processes, which get this process's sys.path, find ``model.run_trial`` too)."""
    for f in ("model.py", "utils.py"):
        if not (repo / f).is_file():
            raise SystemExit(f"--shiu-repo {repo}: no {f} there (a checkout of "
                             "philshiu/Drosophila_brain_model is expected)")
    sys.path.insert(0, str(repo))
    import model as shiu_model
    import utils as shiu_utils

    for m, f in ((shiu_model, "model.py"), (shiu_utils, "utils.py")):
        if Path(m.__file__).resolve() != (repo / f).resolve():
            raise SystemExit(f"imported {m.__file__}, not {repo / f}: another module of that "
                             "name is on sys.path first")
    info = {f: hashlib.sha256((repo / f).read_bytes()).hexdigest()[:16]
            for f in ("model.py", "utils.py")}
    r = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                       text=True, check=False)
    info["commit"] = r.stdout.strip() if r.returncode == 0 else None
    return shiu_model, shiu_utils, info


def cython_modules(d: Path | None = None) -> int:
    """Compiled modules in Brian2's cython cache (their number grows by each new compile)."""
    from brian2.codegen.runtime.cython_rt.extension_manager import get_cython_cache_dir

    d = Path(d or get_cython_cache_dir())
    return len(list(d.glob("*.so"))) if d.is_dir() else 0


def sorted_spikes(step, neuron) -> tuple[np.ndarray, np.ndarray]:
    step, neuron = np.asarray(step, np.int64), np.asarray(neuron, np.int64)
    o = np.lexsort((neuron, step))
    return step[o], neuron[o]


def compare_spikes(kairo, step, neuron, n) -> dict:
    """kairo's SpikeTrains against (step, neuron) arrays of one trial."""
    ks, kn = sorted_spikes(kairo.step, kairo.neuron)
    ss, sn = sorted_spikes(step, neuron)
    ck, cs = np.bincount(kn, minlength=n), np.bincount(sn, minlength=n)
    out = {"spikes_kairo": int(ks.size), "spikes_shiu": int(ss.size),
           "active_neurons": int((ck > 0).sum()),
           "neurons_with_other_counts": int((ck != cs).sum()),
           "identical": bool(ks.size == ss.size and np.array_equal(ks, ss)
                             and np.array_equal(kn, sn))}
    if not out["identical"]:
        m = min(ks.size, ss.size)
        diff = np.flatnonzero((ks[:m] != ss[:m]) | (kn[:m] != sn[:m]))
        first = int(diff[0]) if diff.size else m
        s0 = int(min(ks[first] if first < ks.size else 1 << 62,
                     ss[first] if first < ss.size else 1 << 62))
        out["first_difference"] = {"step": s0,
                                   "kairo_neurons": kn[ks == s0].tolist()[:20],
                                   "shiu_neurons": sn[ss == s0].tolist()[:20]}
    return out


# ---------------------------------------------------------------------------- graphs
def write_graphs(results, names, tmp: Path, args) -> dict:
    """Each graph's folder of Shiu's files, the kairo connectome read back from them, and the
    neurons to drive (positions in the files' neuron order)."""
    graphs = {}
    if "larval" in names:
        with section(results, "larval.write"):
            src = load_connectome("winding2023")
            folder = tmp / "larval"
            save_shiu(src, folder)
            conn = load_shiu(folder)
            assert np.array_equal(conn.ids, src.ids)
            same = (conn.weights != src.weights.tocsr()).nnz == 0
            t = src.neurons
            sensory = src.group("sensory")
            orn = np.flatnonzero(((t.celltype == "sensory")
                                  & t.annotations.str.contains("olfactory")
                                  & (t.side == "L")).to_numpy())
        graphs["larval"] = {
            "folder": folder, "conn": conn, "train_neurons": sensory, "poisson_neurons": orn,
            "info": {"source": "Winding et al. 2023 (kairo load_connectome('winding2023')), "
                               "written with save_shiu",
                     "files_read_back_identical": bool(same),
                     "train_neurons": f"the {sensory.size} sensory neurons",
                     "poisson_neurons": "the 21 left olfactory receptor neurons (sensory, "
                                        "annotation olfactory, side L)"}}
    if "synthetic" in names:
        with section(results, "synthetic.write"):
            folder = tmp / "synthetic"
            synthetic_flywire(folder, n_neurons=args.synthetic_neurons,
                              n_synapses=args.synthetic_synapses, seed=SEED, formats=("shiu",))
            conn = load_shiu(folder)
            w = conn.weights.tocsr()
            row_min = np.asarray(w.min(axis=1).todense()).ravel()
            out_syn = np.asarray(abs(w).sum(axis=1)).ravel()
            exc = np.flatnonzero((row_min >= 0) & (np.diff(w.indptr) > 0))
            hubs = np.sort(exc[np.argsort(-out_syn[exc], kind="stable")[:args.synthetic_inputs]])
        graphs["synthetic"] = {
            "folder": folder, "conn": conn, "train_neurons": hubs, "poisson_neurons": hubs,
            "info": {"source": f"synthetic_flywire(n_neurons={args.synthetic_neurons}, "
                               f"n_synapses={args.synthetic_synapses}, seed={SEED}, "
                               "formats=('shiu',))",
                     "inhibitory_presynaptic_fraction": round(float((row_min < 0).mean()), 4),
                     "train_neurons": f"the {hubs.size} excitatory neurons with the most "
                                      "output synapses",
                     "poisson_neurons": "the same"}}
    for g in graphs.values():
        w = g["conn"].weights
        g["info"].update({"n_neurons": int(g["conn"].n_neurons), "n_connections": int(w.nnz),
                          "n_synapses": int(abs(w).sum()),
                          "inhibitory_connections": int((w.data < 0).sum()),
                          "self_connections": int((w.diagonal() != 0).sum())})
    return graphs


# ---------------------------------------------------------------------------- part 1
def given_train(results, name, g, shiu_model, targets) -> dict:
    """Shiu's create_model driven by a fixed spike train, against kairo on the same files."""
    import brian2 as b2

    conn, idx = g["conn"], g["train_neurons"]
    params = shiu_model.default_params
    rng = np.random.default_rng(SEED)
    n_steps = int(round(float(params["t_run"] / b2.ms) / 0.1))
    ks, js = np.nonzero(rng.random((n_steps, idx.size)) < TRAIN_RATE_HZ * 1e-4)
    times_ms, neurons = ks * 0.1, idx[js]
    path_comp = g["folder"] / "Completeness_783.csv"
    path_con = g["folder"] / "Connectivity_783.parquet"
    out = {"input_neurons": int(idx.size), "input_spikes": int(ks.size),
           "input_rate_hz": TRAIN_RATE_HZ}
    with section(results, f"{name}.given_train.kairo") as rec:
        kairo = LIFNetwork(load_shiu(g["folder"]), LIFParams()).run(
            1000.0, input_spikes=(times_ms, neurons))
        rec["spikes"] = int(kairo.step.size)
    old_target = b2.prefs.codegen.target
    b2.set_device("runtime")
    try:
        for target in targets:
            b2.prefs.codegen.target = target
            with section(results, f"{name}.given_train.shiu_{target}") as rec:
                before = cython_modules()
                neu, syn, spk_mon = shiu_model.create_model(str(path_comp), str(path_con),
                                                            params)
                assert len(neu) == conn.n_neurons
                targets_, src = np.unique(neurons, return_inverse=True)
                gen = b2.SpikeGeneratorGroup(targets_.size, src, times_ms * b2.ms)
                s_in = b2.Synapses(gen, neu, on_pre="v += w_syn*f_poi", namespace=params)
                s_in.connect(i=np.arange(targets_.size), j=targets_)
                for i in targets_:                     # as his poi() does, neuron by neuron
                    neu[int(i)].rfc = 0 * b2.ms
                net = b2.Network(neu, syn, spk_mon, gen, s_in)
                net.run(params["t_run"])
                step = np.round(np.asarray(spk_mon.t / b2.ms) / 0.1).astype(np.int64)
                cmp = compare_spikes(kairo, step, np.asarray(spk_mon.i), conn.n_neurons)
                rec["new_cython_modules"] = cython_modules() - before
                del neu, syn, spk_mon, gen, s_in, net
                gc.collect()                 # his objects have fixed names: free them first
            out[f"brian2_{target}"] = cmp
            print(f"   {name} given train, brian2 {target}: {cmp}", flush=True)
    finally:
        b2.prefs.codegen.target = old_target
    return out


# ---------------------------------------------------------------------------- part 2
def rate_matrix(trial, ids, n_trials: int) -> pd.DataFrame:
    """Spikes (trial, root id per spike) as rates in Hz per trial (rows) and neuron (columns,
    neurons that spiked), 1 s trials."""
    df = pd.DataFrame({"trial": np.asarray(trial, np.int64), "id": np.asarray(ids, np.int64)})
    m = df.groupby(["trial", "id"]).size().unstack("id", fill_value=0)
    return m.reindex(range(n_trials), fill_value=0).astype(float)


def _z(x: np.ndarray, n_a: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows 0 … n_a−1 against the rest: per column the difference of means and its z."""
    a, b = x[:n_a], x[n_a:]
    d = a.mean(0) - b.mean(0)
    se = np.sqrt(a.var(0, ddof=1) / a.shape[0] + b.var(0, ddof=1) / b.shape[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, d / np.where(se > 0, se, 1.0), np.where(d == 0, 0.0, np.inf))
    return d, z


def agreement(ma: pd.DataFrame, mb: pd.DataFrame, stimulated, *, n_perm: int = 4999,
              seed: int = SEED) -> dict:
    """``ma``, ``mb``: rates per trial and neuron (``rate_matrix``) of two simulators. The test
    of the module docstring, plus a permutation test that keeps trials as the independent
    units: the 2·30 trials' labels are shuffled ``n_perm`` times, and sum(z²) and max |z| over
    neurons are compared with their values under shuffling."""
    from scipy import stats

    ids = ma.columns.union(mb.columns)
    ma, mb = ma.reindex(columns=ids, fill_value=0.0), mb.reindex(columns=ids, fill_value=0.0)
    x = np.vstack([ma.to_numpy(), mb.to_numpy()])
    n_a = len(ma)
    d, z = _z(x, n_a)
    big = np.abs(z) > Z_LIMIT
    stim = np.isin(ids, stimulated)
    ra, rb = ma.to_numpy().mean(0), mb.to_numpy().mean(0)
    tot_a, tot_b = ma.to_numpy().sum(1), mb.to_numpy().sum(1)
    welch = stats.ttest_ind(tot_a, tot_b, equal_var=False)
    wil = stats.wilcoxon(ra, rb) if np.any(d != 0) else None
    ks = stats.ks_2samp(ra, rb)
    rng = np.random.default_rng(seed)
    t_obs = (float(np.sum(np.minimum(z ** 2, 1e12))), float(np.max(np.abs(z))))
    ge = np.zeros(2, np.int64)
    frac_perm = np.empty(n_perm)
    for k in range(n_perm):
        _, zp = _z(x[rng.permutation(x.shape[0])], n_a)
        ge += [np.sum(np.minimum(zp ** 2, 1e12)) >= t_obs[0], np.max(np.abs(zp)) >= t_obs[1]]
        frac_perm[k] = np.mean(np.abs(zp) > Z_LIMIT)
    p_perm = (1 + ge) / (1 + n_perm)
    order = np.argsort(-np.abs(z))[:5]
    out = {
        "neurons_active_in_either": int(ids.size),
        "neurons_active": [int((ra > 0).sum()), int((rb > 0).sum())],
        "stimulated_neurons_among_them": int(stim.sum()),
        "z_abs_gt_3": int(big.sum()),
        "fraction_z_abs_gt_3": round(float(big.mean()), 5),
        "fraction_z_abs_gt_3_unstimulated": round(float(big[~stim].mean()), 5)
        if (~stim).any() else None,
        "expected_fraction_if_equal": round(float(2 * stats.norm.sf(Z_LIMIT)), 5),
        "z_mean": round(float(np.mean(z[np.isfinite(z)])), 4),
        "z_sd": round(float(np.std(z[np.isfinite(z)], ddof=1)), 4),
        "largest_z": [{"id": int(ids[k]), "z": round(float(z[k]), 2),
                       "rates_hz": [round(float(ra[k]), 3), round(float(rb[k]), 3)]}
                      for k in order],
        "pearson_r_mean_rates": round(float(np.corrcoef(ra, rb)[0, 1]), 5),
        "spearman_rho_mean_rates": round(float(stats.spearmanr(ra, rb).statistic), 5),
        "spikes_total": [int(np.sum(tot_a)), int(np.sum(tot_b))],
        "spikes_per_trial_mean": [round(float(np.mean(tot_a)), 1),
                                  round(float(np.mean(tot_b)), 1)],
        "spikes_per_trial_sd": [round(float(np.std(tot_a, ddof=1)), 1),
                                round(float(np.std(tot_b, ddof=1)), 1)],
        "welch_t_per_trial_totals": {"t": round(float(welch.statistic), 3),
                                     "p": float(welch.pvalue)},
        "ks_2samp_mean_rates": {"D": round(float(ks.statistic), 4), "p": float(ks.pvalue)},
        "trial_permutation": {"n_perm": n_perm, "sum_z2": round(t_obs[0], 1),
                              "p_sum_z2": float(p_perm[0]), "max_abs_z": round(t_obs[1], 2),
                              "p_max_abs_z": float(p_perm[1]),
                              # the |z| > 3 fraction when the labels mean nothing: low
                              # counts and whole-network fluctuations make it exceed 0.27 %
                              "fraction_z_abs_gt_3_mean": round(float(frac_perm.mean()), 5),
                              "fraction_z_abs_gt_3_p99": round(float(
                                  np.quantile(frac_perm, 0.99)), 5),
                              "p_fraction_z_abs_gt_3": float(
                                  (1 + np.sum(frac_perm >= big.mean())) / (1 + n_perm))},
        "wilcoxon_signed_rank_mean_rates": {
            "p": float(wil.pvalue) if wil else 1.0,
            "in_verdict": False,
            "why": "neurons are not independent samples: one trial's input drives them all, "
                   "so a chance difference in the total input shifts every downstream "
                   "neuron the same way; it rejects kairo against kairo with another seed too "
                   "(first run, larval: p = 5e-10 for both comparisons)"},
    }
    checks = {"fraction_z_abs_gt_3 <= 0.01": out["fraction_z_abs_gt_3"] <= Z_FRACTION_MAX,
              "welch p >= 0.001": out["welch_t_per_trial_totals"]["p"] >= P_MIN,
              "trial permutation p (sum z², max |z|) >= 0.001": bool(min(p_perm) >= P_MIN),
              "ks p >= 0.001": out["ks_2samp_mean_rates"]["p"] >= P_MIN,
              "pearson r >= 0.99": out["pearson_r_mean_rates"] >= R_MIN}
    out["checks"] = checks
    out["verdict"] = "pass" if all(checks.values()) else "fail"
    return out


def shiu_rates(shiu_utils, parquet: Path, n_trials: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """His load_exps + get_rate: per neuron mean and sd (his sd has ddof 0; ddof 1 here)."""
    df = shiu_utils.load_exps([str(parquet)])
    rate, std = shiu_utils.get_rate(df, 1.0, n_trials)
    col = rate.columns[0]
    out = pd.DataFrame({"mean": rate[col], "sd": std[col] * np.sqrt(n_trials / (n_trials - 1))})
    out.index = out.index.astype(np.int64)
    return out, df


def poisson(results, name, g, shiu_model, shiu_utils, args, tmp: Path) -> dict:
    conn, idx = g["conn"], g["poisson_neurons"]
    ids = conn.ids[idx]
    path_comp = g["folder"] / "Completeness_783.csv"
    path_con = g["folder"] / "Connectivity_783.parquet"
    out = {"stimulated_neurons": int(idx.size), "rate_hz": RATE_HZ, "trials": N_TRIALS}

    # Shiu's run_exp, as a user calls it
    res = tmp / f"{name}_shiu_results"
    res.mkdir()
    params = dict(shiu_model.default_params)
    assert params["n_run"] == N_TRIALS and abs(float(params["r_poi"]) - RATE_HZ) < 1e-9
    cache = tmp / "cython_cache" if args.fresh_cython_cache else None
    with section(results, f"{name}.shiu_run_exp") as rec:
        before = cython_modules(cache)
        shiu_model.run_exp(f"shiu_{name}", [int(i) for i in ids], str(res), str(path_comp),
                           str(path_con), params=params, n_proc=args.n_proc,
                           force_overwrite=True)
        rec["new_cython_modules"] = cython_modules(cache) - before
        rec["n_proc"] = args.n_proc
        rec["brian2_target"] = args.shiu_target
    shiu, shiu_df = shiu_rates(shiu_utils, res / f"shiu_{name}.parquet", N_TRIALS)

    # kairo's screen, the command line, on the same files and neurons
    idfile = tmp / f"{name}_ids.txt"
    idfile.write_text("\n".join(str(int(i)) for i in ids) + "\n")
    kout = tmp / f"{name}_kairo_screen"
    cmd = [sys.executable, "-m", "kairo.cli", "reservoir", "screen",
           "--connectome", str(g["folder"]), "--stimulate", f"@{idfile}",
           "--rate", str(RATE_HZ), "--trials", str(N_TRIALS), "--seed", str(SEED),
           "--exp-name", f"kairo_{name}", "--out", str(kout)]
    with section(results, f"{name}.kairo_screen_cli") as rec:
        r = subprocess.run(cmd, capture_output=True, text=True, check=False)
        rec["returncode"] = r.returncode
    if r.returncode != 0:
        raise SystemExit(f"kairo reservoir screen failed:\n{r.stdout[-2000:]}\n"
                         f"{r.stderr[-2000:]}")
    out["kairo_command"] = " ".join(cmd[1:]).replace(str(tmp), "$TMP")
    table = pd.read_csv(kout / "screen.csv")
    kairo = pd.DataFrame({"mean": table.rate_hz.to_numpy(), "sd": table.rate_sd.to_numpy()},
                         index=table.neuron_id.astype(np.int64).to_numpy())
    # Shiu's analysis code on kairo's spikes.parquet
    k_rates, k_df = shiu_rates(shiu_utils, kout / "spikes.parquet", N_TRIALS)
    active = kairo[kairo["mean"] > 0]
    common = active.index.intersection(k_rates.index)
    out["shiu_utils_read_kairo_spikes_parquet"] = {
        "rows": int(len(k_df)), "columns": list(k_df.columns),
        "neurons": int(len(k_rates)), "neurons_active_in_screen_csv": int(len(active)),
        "same_neurons": bool(len(common) == len(active) == len(k_rates)),
        "max_abs_rate_difference_hz": float(np.max(np.abs(
            k_rates.loc[common, "mean"] - active.loc[common, "mean"]))) if len(common) else 0.0,
        "max_abs_sd_difference_hz": float(np.max(np.abs(
            k_rates.loc[common, "sd"] - active.loc[common, "sd"]))) if len(common) else 0.0}

    # the control: kairo against kairo with another seed, in process
    with section(results, f"{name}.kairo_screen_in_process") as rec:
        cfg = ScreenConfig(connectome=str(g["folder"]), stimulate=f"@{idfile}", rate=RATE_HZ,
                           trials=N_TRIALS, seed=SEED + 1)
        ctrl = screen_experiment(cfg)
        rec["seed"] = SEED + 1
    sp_k = pd.read_parquet(kout / "spikes.parquet")
    m_k = rate_matrix(sp_k.trial, sp_k.flywire_id, N_TRIALS)
    m_s = rate_matrix(shiu_df.trial, shiu_df.flywire_id, N_TRIALS)
    cs = ctrl["spikes"]
    m_k2 = rate_matrix(cs.trial, np.asarray(ctrl["ids"])[cs.neuron], N_TRIALS)
    # the matrices are what screen.csv and Shiu's get_rate report
    out["rates_consistent"] = {
        "kairo_screen_csv_vs_matrix_max_abs_hz": float(np.max(np.abs(
            kairo.loc[m_k.columns, "mean"].to_numpy() - m_k.mean(0).to_numpy()))),
        "shiu_get_rate_vs_matrix_max_abs_hz": float(np.max(np.abs(
            shiu.loc[m_s.columns, "mean"].to_numpy() - m_s.mean(0).to_numpy()))),
        "shiu_get_rate_sd_vs_matrix_max_abs_hz": float(np.max(np.abs(
            shiu.loc[m_s.columns, "sd"].to_numpy() - m_s.std(0, ddof=1).to_numpy())))}
    out["kairo_vs_shiu"] = agreement(m_k, m_s, ids)
    out["control_kairo_vs_kairo_other_seed"] = agreement(m_k, m_k2, ids)
    s = results["sections"]
    out["timing"] = {
        "shiu_run_exp_s": s[f"{name}.shiu_run_exp"]["wall_s"],
        "kairo_screen_cli_s": s[f"{name}.kairo_screen_cli"]["wall_s"],
        "kairo_screen_in_process_s": s[f"{name}.kairo_screen_in_process"]["wall_s"],
        "ratio_shiu_over_kairo_cli": round(s[f"{name}.shiu_run_exp"]["wall_s"]
                                           / s[f"{name}.kairo_screen_cli"]["wall_s"], 1),
        "note": f"Shiu: Brian2 target {args.shiu_target}, joblib/loky processes (n_proc "
                f"{args.n_proc}), each trial re-reads the files and rebuilds the Brian2 "
                "network; kairo command line: process start, loading, "
                "30 stimulated trials (the baseline trials have no input and are not run), "
                "screen.csv, spikes.parquet, figures"}
    kv = out["kairo_vs_shiu"]
    print(f"   {name}: |z|>3 in {kv['z_abs_gt_3']}/{kv['neurons_active_in_either']} neurons, "
          f"r {kv['pearson_r_mean_rates']}, spikes {kv['spikes_total']} → {kv['verdict']}; "
          f"control {out['control_kairo_vs_kairo_other_seed']['fraction_z_abs_gt_3']}",
          flush=True)
    return out


# ---------------------------------------------------------------------------- main
def summary(results) -> str:
    lines = []
    for name, g in results["graphs"].items():
        i = g["info"]
        lines.append(f"{name}: {i['n_neurons']} neurons, {i['n_connections']} connections")
        for key, v in g.get("given_train", {}).items():
            if key.startswith("brian2_"):
                lines.append(f"  given train, Shiu's create_model ({key}): "
                             f"{'identical' if v['identical'] else 'DIFFERENT'} "
                             f"({v['spikes_shiu']} vs kairo {v['spikes_kairo']} spikes)")
        p = g.get("poisson")
        if p:
            kv, c = p["kairo_vs_shiu"], p["control_kairo_vs_kairo_other_seed"]
            lines.append(f"  Poisson, 30 trials: {kv['verdict'].upper()} — |z|>3 in "
                         f"{100 * kv['fraction_z_abs_gt_3']:.2f} % of "
                         f"{kv['neurons_active_in_either']} neurons (control kairo/kairo "
                         f"{100 * c['fraction_z_abs_gt_3']:.2f} %), r = "
                         f"{kv['pearson_r_mean_rates']}, spikes {kv['spikes_total']}")
            t = p["timing"]
            lines.append(f"  time: Shiu run_exp {t['shiu_run_exp_s']} s, kairo screen "
                         f"{t['kairo_screen_cli_s']} s (command line; in process "
                         f"{t['kairo_screen_in_process_s']} s)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shiu-repo", type=Path, required=True,
                    help="a folder holding Shiu's model.py and utils.py")
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "shiu_reference.json")
    ap.add_argument("--graphs", default="larval,synthetic")
    ap.add_argument("--n-proc", type=int, default=2, help="Shiu's run_exp processes")
    ap.add_argument("--targets", default="cython,numpy",
                    help="Brian2 targets of the given-train check")
    ap.add_argument("--synthetic-neurons", type=int, default=5000)
    ap.add_argument("--synthetic-synapses", type=int, default=1_500_000)
    ap.add_argument("--synthetic-inputs", type=int, default=30)
    ap.add_argument("--shiu-target", choices=("numpy", "default"), default="numpy",
                    help="Brian2 target of Shiu's run_exp (default: Brian2's own choice)")
    ap.add_argument("--fresh-cython-cache", action="store_true",
                    help="with --shiu-target default: Shiu's workers compile into an empty "
                         "cython cache (a new user's first run)")
    ap.add_argument("--skip-poisson", action="store_true")
    args = ap.parse_args(argv)
    args.out = args.out.resolve()
    if os.environ.get("KAIRO_DATA_DIR"):          # the working directory changes below
        os.environ["KAIRO_DATA_DIR"] = str(Path(os.environ["KAIRO_DATA_DIR"]).resolve())
    warnings.simplefilter("ignore", DeprecationWarning)
    shiu_model, shiu_utils, shiu_info = import_shiu(args.shiu_repo.resolve())
    import brian2
    import numba

    t_start = time.perf_counter()
    results = {"benchmark": "shiu_reference", "issue": 63, "date": dt.date.today().isoformat(),
               "machine": {"cpu_model": cpu_model(), "cpus": os.cpu_count(),
                           "python": sys.version.split()[0], "brian2": brian2.__version__,
                           "numba": numba.__version__, "loadavg": loadavg(),
                           "nice": os.nice(0)},
               "shiu": shiu_info | {"run_exp_brian2_target": args.shiu_target,
                                    "run_exp_n_proc": args.n_proc,
                                    "run_exp_fresh_cython_cache": bool(
                                        args.fresh_cython_cache
                                        and args.shiu_target == "default"),
                                    "seeded": "no: his run_exp sets no Brian2 seed, so each "
                                              "run draws other Poisson input"},
               "shiu_default_params": {k: str(v).strip() for k, v in
                                       shiu_model.default_params.items()},
               "kairo_params": {k: getattr(LIFParams(), k) for k in
                                LIFParams.__dataclass_fields__},
               "test": {"z": "(mean_kairo - mean_shiu) / sqrt(sd_k^2/30 + sd_s^2/30), sd over "
                             "trials with ddof 1, over neurons active in either",
                        "pass_when": [f"fraction |z| > {Z_LIMIT:g} <= {Z_FRACTION_MAX:g}",
                                      f"Welch t-test of per-trial total spikes p >= {P_MIN:g}",
                                      "trial-label permutation test of sum z^2 and max |z| "
                                      f"over neurons p >= {P_MIN:g}",
                                      f"KS two-sample of mean rates p >= {P_MIN:g}",
                                      f"Pearson r of mean rates >= {R_MIN:g}"]},
               "graphs": {}, "sections": {}}
    names = [n for n in args.graphs.split(",") if n]
    targets = [t for t in args.targets.split(",") if t]
    with tempfile.TemporaryDirectory(prefix="shiu_reference_") as tmp:
        tmp = Path(tmp)
        graphs = write_graphs(results, names, tmp, args)
        for name, g in graphs.items():
            rec = results["graphs"][name] = {"info": g["info"]}
            rec["given_train"] = given_train(results, name, g, shiu_model, targets)
        cwd = Path.cwd()
        prefs = []
        if args.shiu_target == "numpy":
            prefs.append("codegen.target = 'numpy'")
        elif args.fresh_cython_cache:
            prefs.append(f"codegen.runtime.cython.cache_dir = '{tmp / 'cython_cache'}'")
        if prefs:
            # read by Brian2 in each of Shiu's worker processes, which start in this folder
            (tmp / "brian2_cwd").mkdir()
            (tmp / "brian2_cwd" / "brian_preferences").write_text("\n".join(prefs) + "\n")
            os.chdir(tmp / "brian2_cwd")
        try:
            for name, g in graphs.items():
                if not args.skip_poisson:
                    results["graphs"][name]["poisson"] = poisson(
                        results, name, g, shiu_model, shiu_utils, args, tmp)
        finally:
            os.chdir(cwd)
    identical = [v["identical"] for g in results["graphs"].values()
                 for k, v in g["given_train"].items() if k.startswith("brian2_")]
    verdicts = [g["poisson"]["kairo_vs_shiu"]["verdict"] for g in results["graphs"].values()
                if "poisson" in g]
    results["verdict"] = {"given_train_identical": all(identical),
                          "poisson_rates_agree": all(v == "pass" for v in verdicts)
                          if verdicts else None}
    results["machine"]["loadavg_end"] = loadavg()
    results["wall_s"] = round(time.perf_counter() - t_start, 1)
    results["summary"] = summary(results)
    print(results["summary"])
    atomic_write_json(args.out, results)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
