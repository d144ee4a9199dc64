"""``kairo report``: a static HTML site of runs from the results store (or of a demo
folder), optionally served on 127.0.0.1."""

from __future__ import annotations

from kairo._command import Command
from kairo.report._config import ReportConfig

__all__ = ["COMMANDS"]


def _report(cfg: ReportConfig, rd) -> str:
    from kairo.report import demo_runs, select_runs, serve, write_site
    from kairo.runs import require_store

    if cfg.demo:
        store, runs = demo_runs(cfg.demo)
    else:
        store = require_store("or report a folder with --demo DIR")
        runs = select_runs(store, cfg.ids, command=cfg.command, where=cfg.where,
                           since=cfg.since, sweep=cfg.sweep, status=cfg.status)
    for name in write_site(rd.path, store, runs, max_rows=cfg.max_rows):
        rd.add(name)
    text = f"{len(runs)} run{'s' if len(runs) != 1 else ''}: {rd.out / 'index.html'}"
    if cfg.serve:
        # the folder is committed when the run returns, so the site is served from where
        # it is being written until Ctrl-C
        serve(rd.path, cfg.port)
    return text


COMMANDS = [
    Command("report", ReportConfig, _report,
            "a static HTML site of runs: index, a page per run, per family and per sweep",
            description="an HTML site of the runs in the results store (run ids, --where "
                        "and the other filters, or all), or of a demo folder (--demo): a "
                        "sortable index, a page per run (config, metrics, figures, tables, "
                        "video, circuit), a comparison page per family and a page per "
                        "sweep; opens from the file system, or --serve it on 127.0.0.1",
            default_out="results/report", record=False),
]
