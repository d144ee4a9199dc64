"""``kairo tsc benchmark``: per dataset, the configuration chosen on the training split only
(:mod:`kairo.tsc._selection`), refit once per seed, next to aeon's MiniRocket and
MultiRocket-Hydra fitted on the same splits, the published results, and an earlier run paired
seed by seed; the table as markdown, with notes on what its columns are."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from kairo._jobs import map_jobs
from kairo.tsc._config import BenchmarkConfig
from kairo.tsc._grid import (MEMBER_PROBA, _data, _jobs, _record_resolved,
                                   canonical_datasets, ensemble_runs, run_grid)
from kairo.tsc._reference import (MIN_WILCOXON_PAIRS, _seed_text, read_reference,
                                        reference_test, resnet_test)
from kairo.tsc._selection import (_candidates, _check_selection, _describe_candidate,
                                        _select)


__all__ = ["run_benchmark", "benchmark_markdown", "PER_SEED_COLUMNS"]


def _peer_jobs(cfg, datasets) -> list[dict]:
    """One job per dataset × peer × seed (the seeds kairo's runs use); the set each peer is
    given is resolved here, so a set no peer can take is refused before anything trains."""
    from kairo.tsc._peers import peer_input

    if not cfg.peers:
        return []
    jobs = []
    for ds in datasets:
        given = peer_input(ds)
        for peer in cfg.peers:
            for i, seed in enumerate(range(cfg.seed, cfg.seed + cfg.seeds)):
                job = {"dataset": ds, "input": given, "peer": peer, "seed": seed,
                       "znorm": cfg.znorm, "mnist1d_length": cfg.mnist1d_length}
                if cfg.resamples:
                    job["resample"] = i
                jobs.append(job)
    return jobs


def _one_peer(job: dict) -> dict:
    """One peer fit (in a worker process): fit on the train split, score the test split."""
    from kairo.tsc._peers import PEER_NAMES, fit_peer

    train, test = _data(job["input"], job["mnist1d_length"], job.get("resample", 0))
    res = fit_peer(job["peer"], train, test, seed=job["seed"], znorm=job["znorm"])
    return {"dataset": job["dataset"], "method": PEER_NAMES[job["peer"]], "seed": job["seed"],
            "accuracy": res["accuracy"], "fit_seconds": res["fit_seconds"],
            "input": job["input"], "scaling": res["scaling"]}


PER_SEED_COLUMNS = ("dataset", "method", "seed", "accuracy", "fit_seconds", "input", "scaling")


def run_benchmark(cfg: BenchmarkConfig, rd, progress_bar=None) -> str:
    """``kairo tsc benchmark``: per dataset, the configuration chosen on the training split
    (none to choose with one candidate), refit once per seed, next to aeon's MiniRocket and
    MultiRocket-Hydra fitted on the same splits with the same seeds, the published figures,
    a Welch test against Fawaz et al.'s ResNet runs and, with ``reference``, a paired test
    against an earlier run's seeds. Writes benchmark.csv (one row per dataset), per_seed.csv,
    table.md and the runs it trained; returns the table as text."""
    from kairo.tsc._published import published_table
    from kairo.tsc._recipe import resolve_znorm

    if cfg.resamples:             # run i on resample i: the bake-off pairs them one to one
        cfg = dataclasses.replace(cfg, seeds=cfg.resamples)
        rd.resolve("seeds", cfg.resamples)
    cands = _candidates(cfg)
    datasets = canonical_datasets(cfg.datasets)
    # the reused runs, the folds, the reference and the peers' inputs are checked before
    # anything trains
    reused = _check_selection(cfg, cands, datasets)
    reference = read_reference(cfg.reference) if cfg.reference else None
    peer_jobs = _peer_jobs(cfg, datasets)
    _record_resolved(cfg, rd, datasets)
    # the peers first: they take seconds to minutes where kairo takes hours, and a peer
    # failing after those hours would take the whole results folder with it
    # (seeded and fast, they run again when a stopped benchmark resumes)
    peers = (pd.DataFrame(map_jobs(_one_peer, peer_jobs, workers=cfg.workers,
                                   executor=cfg.executor, desc="peers",
                                   progress_bar=progress_bar))
             if peer_jobs else pd.DataFrame(columns=list(PER_SEED_COLUMNS)))
    table, df, summary, cv, how = _select(cfg, cands, datasets, rd, progress_bar, reused)
    runs = _chosen_runs(cfg, table, df, rd, progress_bar)
    if cfg.refit and not cv:
        table["selection_test"] = table["kairo"]
    g = runs.groupby("dataset", sort=False)
    table["kairo"], table["kairo_sd"], table["n"] = (g.test_accuracy.mean(),
                                                     g.test_accuracy.std(), g.size())
    table["seeds"] = [_seed_text(runs.seed[runs.dataset == ds]) for ds in table.index]
    table["kairo_fit_seconds"] = g.fit_seconds.mean()
    per_seed = {ds: runs[runs.dataset == ds].set_index("seed").test_accuracy.to_dict()
                for ds in table.index}

    for name in dict.fromkeys(peers.method):
        part = peers[peers.method == name].groupby("dataset", sort=False)
        table[name], table[f"{name}_sd"] = part.accuracy.mean(), part.accuracy.std()
        table[f"{name}_fit_seconds"] = part.fit_seconds.mean()
    if len(peers):
        table["peer_input"] = peers.groupby("dataset", sort=False).input.first()

    table = table.join(published_table(list(table.index), resamples=cfg.resamples or 30))
    table["vs ResNet"] = table["kairo"] - table["ResNet (Fawaz 2019)"]
    table["p vs ResNet"] = [resnet_test(list(per_seed[ds].values()), ds) for ds in table.index]
    if reference is not None:
        ref = {ds.lower(): part.set_index("seed").test_accuracy.to_dict()
               for ds, part in reference.groupby("dataset")}
        tests = pd.DataFrame([reference_test(per_seed[ds], ref.get(ds.lower()), ds)
                              for ds in table.index], index=table.index)
        # counts stay integers beside the empty rows (blank in the CSV, not 2.0)
        tests = tests.astype({f"{k}_vs_reference": "Int64" for k in ("wins", "ties", "losses")})
        table = table.join(tests)
    rd.add("benchmark.csv", table.reset_index())

    scaling = {ds: resolve_znorm(cfg.znorm, _data(ds, cfg.mnist1d_length)[0].n_channels)
               for ds in table.index}
    ours = runs.assign(method="kairo", accuracy=runs.test_accuracy, input=runs.dataset,
                       scaling=runs.dataset.map(scaling))
    ours = ours[list(PER_SEED_COLUMNS)]
    rd.add("per_seed.csv", pd.concat([ours, peers], ignore_index=True) if len(peers) else ours)
    md = benchmark_markdown(table, reference=reference is not None, resamples=cfg.resamples)
    notes = _notes(cfg, table, peers, reference, cv)
    rd.add("table.md", md + "\n\n" + "\n".join(f"- {n}" for n in notes) + "\n")

    return _summary_text(table, summary, cv, how, md, notes)


def _chosen_runs(cfg, table, df, rd, progress_bar) -> pd.DataFrame:
    """The runs of each dataset's chosen configuration (``table``, from :func:`_select`) whose
    test accuracy the benchmark reports: with ``refit`` the configuration trained again (and
    written: refit_runs.csv, with --ensemble N member_runs.csv and member_proba.npz), else its
    selection runs ``df``."""
    if cfg.refit:
        # the chosen configuration is trained again on the whole training split for the full
        # epochs (no hold-out, weights of the lowest training loss): a few held-out series are
        # a noisy early-stopping signal on small sets and cost the model a fifth of its data
        chosen = {ds: [(r.encoder, r["pool"], r.time_warp)] for ds, r in table.iterrows()}
        runs = run_grid(_jobs(cfg, chosen, list(chosen), ensemble=cfg.ensemble,
                              val_fraction=0.0), rd.points, workers=cfg.workers,
                        progress_bar=progress_bar, executor=cfg.executor)
        if cfg.ensemble > 1:
            rd.add("member_runs.csv", runs.drop(columns="proba"))
            np.savez_compressed(rd.path / MEMBER_PROBA,
                                **{f"row{i}": np.asarray(p) for i, p in enumerate(runs.proba)})
            rd.add(MEMBER_PROBA)
            runs = ensemble_runs(runs, cfg.mnist1d_length)
        rd.add("refit_runs.csv", runs)
        return runs
    return pd.concat([df[(df.dataset == ds) & (df.encoder == r.encoder) &
                         (df["pool"] == r["pool"]) & (df.time_warp == r.time_warp)]
                      for ds, r in table.iterrows()])


def _summary_text(table, summary, cv, how, md, notes) -> str:
    """What ``kairo tsc benchmark`` prints: the table, each candidate's cross-validated
    accuracy (with --select cv), the notes and the Welch tests against ResNet's runs."""
    lines = [f"kairo tsc benchmark{how}:", md]
    if cv:
        w = max([18] + [len(d) for d in table.index])     # PickupGestureWiimoteZ is 21
        lines.append("cross-validated accuracy of each candidate (training split only):")
        for r in summary.itertuples():
            what = _describe_candidate(r.encoder, r.pool, r.time_warp)
            lines.append(f"  {r.dataset:{w}s} {what:32s} {r.cv_accuracy:.3f} "
                         f"({r.cv_series} held-out predictions)")
    lines += notes
    tested = table["p vs ResNet"].dropna()
    if len(tested):
        lines.append("kairo vs ResNet's runs (Welch t-test): " + "; ".join(
            f"{ds} {table.loc[ds, 'vs ResNet']:+.3f} (p {p:.2f})" for ds, p in tested.items()))
    return "\n".join(lines)


def _cell(v, fmt: str = ".3f") -> str:
    return "—" if v is None or (isinstance(v, float) and not np.isfinite(v)) else format(v, fmt)


def _seconds(v) -> str:
    return "—" if not np.isfinite(v) else f"{v:.2f}" if v < 10 else f"{v:.0f}"


def _p(v) -> str:
    return "—" if not np.isfinite(v) else f"{v:.2g}" if v < 0.01 else f"{v:.2f}"


def benchmark_markdown(table: pd.DataFrame, *, reference: bool = False,
                       resamples: int = 0) -> str:
    """The benchmark table (``benchmark.csv`` indexed by dataset) as markdown: kairo's mean ±
    sd over its seeds and mean fit time, each peer's mean accuracy and fit time, the published
    figures, the Welch p against Fawaz et al.'s runs and, with ``reference``, the paired
    comparison with the reference (mean difference, wins/ties/losses, p and its test)."""
    from kairo.tsc._peers import PEER_NAMES

    peers = [n for n in PEER_NAMES.values() if n in table]
    published = ["ResNet (Fawaz 2019)", "InceptionTime", "HC2", "ConvTran (Foumani 2024)"]
    if resamples:             # the bake-off's means over the resamples kairo ran
        published = [f"{n} ({resamples} resamples)" for n in ("H-InceptionTime", "HC2",
                                                              "MR-Hydra", "MiniROCKET",
                                                              "ResNet")]
    head = ["dataset", "kairo (mean ± sd)", "seeds", "fit s"]
    for name in peers:
        head += [name, "fit s"]
    head += published + ["p vs ResNet (Welch)"]
    if reference:
        head += ["Δ vs reference", "win/tie/loss", "p vs reference"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for ds, r in table.iterrows():
        sd = r.kairo_sd if r.n > 1 else float("nan")
        cells = [ds, f"{_cell(r.kairo)} ± {_cell(sd)}" if np.isfinite(sd) else _cell(r.kairo),
                 r.seeds, _seconds(r.kairo_fit_seconds)]
        for name in peers:
            cells += [_cell(r[name]), _seconds(r[f"{name}_fit_seconds"])]
        cells += [_cell(r[c]) for c in published] + [_p(r["p vs ResNet"])]
        if reference:
            if r.pairs_vs_reference:
                cells += [f"{r['vs reference']:+.3f}",
                          f"{int(r.wins_vs_reference)}/{int(r.ties_vs_reference)}/"
                          f"{int(r.losses_vs_reference)}",
                          f"{_p(r['p vs reference'])} ({r.test_vs_reference})"]
            else:
                cells += ["—", "—", "—"]
        rows.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(rows)


def _notes(cfg, table, peers, reference, cv) -> list[str]:
    """What the table's columns are, and what a reader could not tell from them."""
    notes = []
    configs = {ds: _describe_candidate(r.encoder, r["pool"], r.time_warp)
               for ds, r in table.iterrows()}
    if len(set(configs.values())) == 1:
        notes.append(f"kairo: {next(iter(configs.values()))}")
    else:
        notes.append("kairo: " + "; ".join(f"{ds} {c}" for ds, c in configs.items()))
    notes.append("kairo: the chosen configuration refit on the whole training split (test "
                 "accuracy over seeds)" if cfg.refit else
                 "kairo: the chosen configuration's runs with a validation hold-out")
    if cfg.ensemble > 1:
        notes.append(f"kairo: each seed is an ensemble of {cfg.ensemble} models (members' "
                     f"seeds from the one shown: `kairo tsc train --ensemble {cfg.ensemble} "
                     f"--seed S`), their class probabilities averaged; fit s: the members' "
                     f"total, one thread each (member_runs.csv has every member)")
    if len(peers):
        names = ", ".join(dict.fromkeys(peers.method))
        notes.append(f"{names}: aeon, fitted on the same train split and scored once on the "
                     f"same test split per seed (random_state = seed), one thread, input "
                     f"scaled as kairo's (znorm {', '.join(sorted(set(peers.scaling)))}); fit s: "
                     f"wall-clock seconds of one fit, mean over seeds")
        for ds, given in peers.groupby("dataset", sort=False).input.first().items():
            if given != ds:
                notes.append(f"{ds}: the peers take equal-length series only and were given "
                             f"the archive's equal-length copy {given}; kairo the original "
                             f"series, padded and masked")
    if cfg.resamples:
        notes.append(f"resamples: run i (seed --seed + i) on the bake-off's resample i, i = "
                     f"0…{cfg.resamples - 1} (0 = the archive's split; stratified resamples "
                     f"drawn as tsml-eval draws them; on the 112 UCR sets the bake-off's own "
                     f"resamples 1-29 came from Java tsml: the same protocol, other draws); "
                     f"published: the bake-off's means over resamples 0…{cfg.resamples - 1}")
    else:
        notes.append("published: default train/test split (the bake-off's resample 0); "
                     "ResNet: Fawaz et al. 2019, mean of their 5 runs, where bundled; "
                     "ConvTran: Foumani et al. 2024 (multivariate sets)")
    if reference is not None:
        notes.append(f"reference: {cfg.reference}, paired by seed (Wilcoxon signed-rank from "
                     f"{MIN_WILCOXON_PAIRS} pairs, else the sign test; Δ = this run − the "
                     f"reference)")
        for ds, why in table.note_vs_reference.items():
            if why:
                notes.append(f"{ds} vs reference: {why}")
    return notes
