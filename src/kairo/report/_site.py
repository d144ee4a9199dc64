"""The static HTML site of a selection of runs, and the demo's one-page report.

Layout of a site (every link relative, so it works opened from the file system and served)::

    index.html                      every run, a sortable table; links to the pages below
    runs/<key>/index.html           one run: config, metrics, figures, videos, CSV tables,
                                    circuit; its figures, videos and CSVs copied beside it
    families/<family>/index.html    the runs of one family compared (figures beside it)
    sweeps/<id>/index.html          one sweep: metric vs each swept parameter, best points
    static/style.css, sortable.js

Pages are Jinja2 templates (``templates/``, autoescaped); figures are Matplotlib PNGs.
"""

from __future__ import annotations

import json
import logging
import math
import os
import re
import shutil
from pathlib import Path

from kairo._app import commands
from kairo._errors import KairoError
from kairo.report._content import Cell, Table, cell, fmt, local_time, run_content
from kairo.report._gather import (RunView, is_number, link_children, view_of_folder,
                                  view_of_record)

__all__ = ["build_site", "write_site", "demo_report", "FAMILY_PAGES"]

log = logging.getLogger(__name__)

_HERE = Path(__file__).parent
# the families that get a comparison page when the selection holds their runs
FAMILY_PAGES = {"reservoir": "connectome reservoirs", "fly": "the embodied fly",
                "logic": "logic-gate circuits", "tsc": "time-series classification"}


# ---------------------------------------------------------------------- templates
def _env():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_HERE / "templates")),
        # every value is escaped (a config value "<script>" shows as text); the templates'
        # names end in .j2, which select_autoescape would not recognise
        autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
        lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["fmt"] = fmt
    env.filters["local"] = local_time
    env.filters["size"] = _size
    return env


def _static(name: str) -> str:
    return (_HERE / "static" / name).read_text()


def _inline_static():
    """style.css and sortable.js for a page that carries them inside (the demo's report.html
    sits in a results folder, where a static/ folder would be clutter)."""
    from markupsafe import Markup

    return {"css": Markup(_static("style.css")), "js": Markup(_static("sortable.js"))}


def _size(n) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def _render(env, template: str, path: Path, **values) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(env.get_template(template).render(**values))


def _place(src: Path, dst: Path) -> None:
    """Hard-link (else copy) a run's file into the site: results files are replaced by
    renaming, never rewritten in place, so a link keeps the content the site was built
    from."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", str(text)).strip(".") or "sweep"


# ---------------------------------------------------------------------- tables
def _pairs(d: dict) -> Table:
    return Table(header=["name", "value"], rows=[[Cell(str(k)), cell(v)] for k, v in d.items()])


def _headline_names(command: str) -> tuple[str, ...]:
    found = commands().get(command)         # a run of a command this version no longer has
    return found.headline if found else ()


def _headline(v: RunView) -> str:
    names = [n for n in _headline_names(v.command) if n in v.metrics]
    if not names:
        names = [n for n, x in v.metrics.items() if is_number(x)][:3]
    # a nested name by its last part: the run's page has the whole name
    return ", ".join(f"{n.rsplit('.', 1)[-1]} {fmt(v.metrics[n])}" for n in names)


def _run_href(key: str, root: str = "") -> str:
    return f"{root}runs/{key}/index.html"


def _index_table(views: list[RunView], sweeps: dict) -> Table:
    keys = {v.key for v in views}
    rows = []
    for v in views:
        rows.append([
            Cell(v.title, v.id, _run_href(v.key)), Cell(v.command), Cell(v.status),
            Cell(local_time(v.started)), cell(None if v.duration is None
                                              else round(v.duration, 1)),
            cell(v.seed), Cell(_headline(v)),
            Cell(f"run {v.parent}" if v.parent and v.parent.isdigit() else (v.parent or ""),
                 None, _run_href(v.parent) if v.parent in keys else None),
            Cell(v.sweep or "", None, f"sweeps/{sweeps[v.sweep]}/index.html"
                 if v.sweep in sweeps else None)])
    return Table(header=["run", "command", "status", "started", "seconds", "seed", "metrics",
                         "inside", "sweep"], rows=rows, title="runs")


def _differing(views: list[RunView]) -> list[str]:
    if len(views) < 2:
        return []              # one run: its page has the whole config
    names = list(dict.fromkeys(k for v in views for k in v.config))
    return [n for n in names if len({json.dumps(v.config.get(n), sort_keys=True, default=str)
                                     for v in views}) > 1]


def _command_table(command: str, views: list[RunView], root: str) -> Table:
    """The runs of one command side by side: the config fields that differ between them and
    the numeric metrics they all have (the headline ones first, at most eight)."""
    fields = _differing(views)[:8]
    shared = [n for n in views[0].metrics if all(is_number(v.metrics.get(n)) for v in views)]
    first = [n for n in _headline_names(command) if n in shared]
    metrics = list(dict.fromkeys(first + shared))[:8]
    rows = [[Cell(v.title, v.id, _run_href(v.key, root)), Cell(v.status),
             *(cell(v.config.get(f)) for f in fields), *(cell(v.metrics[m]) for m in metrics)]
            for v in views]
    return Table(header=["run", "status", *fields, *metrics], rows=rows,
                 title=f"kairo {command}")


# ---------------------------------------------------------------------- family pages
def _block(title: str, *, notes=(), figures=(), tables=()) -> dict:
    return {"title": title, "notes": list(notes), "figures": list(figures),
            "tables": list(tables)}


def _figure(fig, where: Path, name: str) -> dict:
    from kairo.report._figures import save

    save(fig, where / name)
    return {"src": name, "name": name}


def _reservoir_blocks(views, where: Path, root: str) -> list[dict]:
    groups, rows = [], []
    for v in views:
        if v.command != "reservoir compare" or not is_number(v.metrics.get("real")):
            continue
        nulls = {}
        for k in v.metrics:
            m = re.fullmatch(r"summary\.(.+)\.null_mean", k)
            if m and is_number(v.metrics[k]):
                sd = v.metrics.get(f"summary.{m.group(1)}.null_sd")
                nulls[m.group(1)] = (v.metrics[k], sd if is_number(sd) else None)
        metric = str(v.metrics.get("metric", "metric"))
        task, norm = v.config.get("task", "?"), v.config.get("norm", "?")
        groups.append({"label": f"{v.title}\n{task}, {norm}", "metric": metric,
                       "real": v.metrics["real"], "nulls": nulls})
        for n, (mean, sd) in nulls.items():
            s = lambda f: v.metrics.get(f"summary.{n}.{f}")  # noqa: E731
            rows.append([Cell(v.title, v.id, _run_href(v.key, root)), Cell(str(task)),
                         Cell(str(norm)), Cell(metric), Cell(n), cell(v.metrics["real"]),
                         cell(mean), cell(sd), cell(s("z")), cell(s("p_better")),
                         cell(s("n_nulls"))])
    if not groups:
        return []
    from kairo.report._figures import compare_figure

    table = Table(header=["run", "task", "norm", "metric", "null model", "real", "null mean",
                          "null sd", "z", "p(real better)", "replicates"], rows=rows,
                  title="real wiring vs null models")
    return [_block("the real connectome against its null models",
                   notes=["One group per kairo reservoir compare run: the real wiring's "
                          "score next to each null model's mean ± sd over its replicates; "
                          "z and the empirical p say how far the real wiring stands out."],
                   figures=[_figure(compare_figure(groups), where, "compare.png")],
                   tables=[table])]


def _logic_blocks(views, where: Path, root: str) -> list[dict]:
    blocks = []
    points, rows = [], []
    for v in views:
        if v.command != "logic train":
            continue
        acc = v.metrics.get("test_accuracy_circuit", v.metrics.get("test_accuracy_discrete"))
        gates = v.metrics.get("gates_after")
        if is_number(acc) and is_number(gates):
            points.append({"label": v.title, "gates": gates, "accuracy": acc})
            rows.append([Cell(v.title, v.id, _run_href(v.key, root)),
                         cell(v.config.get("classes")), cell(gates),
                         cell(v.metrics.get("gates_before")), cell(v.metrics.get("depth_after")),
                         cell(acc)])
    if points:
        from kairo.report._figures import logic_figure

        blocks.append(_block(
            "accuracy vs gates", notes=["One point per trained circuit (kairo logic train): "
                                        "its test accuracy as a circuit against its size."],
            figures=[_figure(logic_figure(points), where, "accuracy_vs_gates.png")],
            tables=[Table(header=["run", "classes", "gates", "gates before simplifying",
                                  "depth", "test accuracy"], rows=rows, title="circuits")]))
    fpga = [v for v in views if v.command == "logic fpga"]
    if fpga:
        m = lambda v, k: v.metrics.get(f"fpga.{k}")  # noqa: E731
        blocks.append(_block("FPGA", tables=[Table(
            header=["run", "circuit", "target", "gates", "LUT4", "core LUT4", "fits",
                    "fmax (MHz)"], title="iCE40 sizing (kairo logic fpga)",
            rows=[[Cell(v.title, v.id, _run_href(v.key, root)), cell(v.config.get("circuit")),
                   cell(m(v, "target.name")), cell(m(v, "circuit.n_gates")),
                   cell(m(v, "synthesis.lut4")), cell(m(v, "core.lut4")), cell(m(v, "fits")),
                   cell(m(v, "fmax_mhz"))] for v in fpga])]))
    verify = [v for v in views if v.command == "logic verify"]
    if verify:
        backends = list(dict.fromkeys(
            mm.group(1) for v in verify for k in v.metrics
            if (mm := re.fullmatch(r"verify\.backends\.(.+)\.bit_exact", k))))
        rows = []
        for v in verify:
            verdicts = [v.metrics.get(f"verify.backends.{b}.bit_exact") for b in backends]
            rows.append([Cell(v.title, v.id, _run_href(v.key, root)),
                         cell(v.config.get("circuit")), cell(v.metrics.get("verify.accuracy")),
                         *(Cell("—" if x is None else "bit-exact" if x else "MISMATCH")
                           for x in verdicts)])
        blocks.append(_block("verification", tables=[Table(
            header=["run", "circuit", "accuracy", *backends], rows=rows,
            title="every back end against the NumPy reference (kairo logic verify)")]))
    return blocks


def _published(datasets: list[str]) -> tuple[dict, str]:
    """classifier → {dataset: accuracy} on the default split, and a note when the published
    tables cannot be read here."""
    try:
        from kairo.tsc import published_table

        table = published_table(datasets)
    except Exception as exc:           # aeon missing or its tables moved: say so, go on
        return {}, f"published results unavailable here: {exc}"
    cols = [c for c in table.columns if "resamples" not in c]
    value = lambda x: float(x) if math.isfinite(float(x)) else None  # noqa: E731
    return ({c: {d: value(table.loc[d, c]) for d in datasets} for c in cols}, "")


def _tsc_blocks(views, where: Path, root: str) -> list[dict]:
    runs: dict[str, list[float]] = {}
    each = []
    for v in views:
        if v.command not in ("tsc train", "tsc evaluate"):
            continue
        acc = v.metrics.get("accuracy", v.metrics.get("summary.test_accuracy"))
        ds = v.config.get("dataset")
        if is_number(acc) and isinstance(ds, str) and ds:
            runs.setdefault(ds, []).append(acc)
            each.append([Cell(v.title, v.id, _run_href(v.key, root)), Cell(v.command),
                         Cell(ds), cell(v.config.get("encoder")), cell(v.config.get("pool")),
                         cell(v.config.get("seed")), cell(acc)])
    if not runs:
        return []
    from kairo.report._figures import tsc_figure

    datasets = sorted(runs)
    published, note = _published(datasets)
    rows = []
    for d in datasets:
        accs = runs[d]
        rows.append([Cell(d), cell(len(accs)), cell(sum(accs) / len(accs)), cell(max(accs)),
                     *(cell(published[c].get(d)) for c in published)])
    notes = ["kairo's accuracy on each dataset's test split (every kairo tsc train or "
             "evaluate run) next to published classifiers on the same split: ResNet "
             "(Fawaz 2019), ConvTran (Foumani 2024) and the tables aeon ships (HC2, "
             "InceptionTime, FreshPRINCE, WEASEL-2.0). docs/tsc.md gives the sources."]
    if note:
        notes.append(note)
    return [_block("accuracy per dataset", notes=notes,
                   figures=[_figure(tsc_figure(datasets, runs, published), where,
                                    "accuracy_per_dataset.png")],
                   tables=[Table(header=["dataset", "kairo runs", "kairo mean", "kairo best",
                                         *published], rows=rows, title="accuracy"),
                           Table(header=["run", "command", "dataset", "encoder", "pool",
                                         "seed", "accuracy"], rows=each,
                                 title="every run")])]


_FAMILY_BLOCKS = {"reservoir": _reservoir_blocks, "logic": _logic_blocks, "tsc": _tsc_blocks}


def _family_page(env, site: Path, family: str, views: list[RunView], nav) -> str:
    where = site / "families" / family
    where.mkdir(parents=True, exist_ok=True)
    root = "../../"
    blocks = _FAMILY_BLOCKS.get(family, lambda *a: [])(views, where, root)
    by_command: dict[str, list[RunView]] = {}
    for v in views:
        by_command.setdefault(v.command, []).append(v)
    blocks.append(_block("every run, by command",
                         notes=["Per command: the config fields that differ between its runs "
                                "and the metrics they all report."],
                         tables=[_command_table(c, vs, root) for c, vs in by_command.items()]))
    _render(env, "family.html.j2", where / "index.html", root=root, nav=nav,
            title=f"{family}: {FAMILY_PAGES[family]}", blocks=blocks, n_runs=len(views))
    return f"families/{family}/index.html"


# ---------------------------------------------------------------------- sweep pages
def _sweep_params(spec: dict) -> tuple[list[str], set[str]]:
    """The swept parameters (grid, then search space) and those searched on a log scale."""
    grid = spec.get("grid") or {}
    space = (spec.get("search") or {}).get("space") or {}
    log_scale = {k for k, s in space.items() if isinstance(s, dict) and s.get("log")}
    return list(dict.fromkeys([*grid, *space])), log_scale


def _sweep_page(env, site: Path, slug: str, sweep: dict, views: list[RunView], nav) -> str:
    from kairo.report._figures import sweep_figure

    where = site / "sweeps" / slug
    where.mkdir(parents=True, exist_ok=True)
    root = "../../"
    spec = sweep.get("spec") or {}
    metric = spec.get("metric") or ""
    goal = spec.get("goal") if spec.get("goal") in ("min", "max") else "min"
    params, log_scale = _sweep_params(spec)
    scored = [v for v in views if is_number(v.metrics.get(metric))]
    notes = []
    if len(scored) < len(views):
        notes.append(f"{len(views) - len(scored)} of the {len(views)} runs have no {metric!r} "
                     f"(failed or still running); they are left out of the figures.")
    figures = []
    for p in params:
        pts = [(v.config.get(p), v.metrics[metric]) for v in scored if p in v.config]
        if pts:
            fig = sweep_figure(p, [x for x, _ in pts], [y for _, y in pts], metric,
                               log=p in log_scale)
            figures.append(_figure(fig, where, f"{_slug(p)}.png"))
    # a point is one configuration; its seeds are averaged
    points: dict[str, list[RunView]] = {}
    for v in scored:
        key = v.point or json.dumps({p: v.config.get(p) for p in params}, default=str)
        points.setdefault(key, []).append(v)
    summary = []
    for key, vs in points.items():
        ys = [v.metrics[metric] for v in vs]
        mean = sum(ys) / len(ys)
        sd = math.sqrt(sum((y - mean) ** 2 for y in ys) / (len(ys) - 1)) if len(ys) > 1 else None
        summary.append((key, vs, mean, sd))
    summary.sort(key=lambda s: s[2], reverse=goal == "max")

    def row(key, vs, mean, sd):
        return [Cell(key), *(cell(vs[0].config.get(p)) for p in params), cell(mean), cell(sd),
                cell(len(vs)), Cell(", ".join(v.title for v in vs), links=tuple(
                    (v.title, _run_href(v.key, root)) for v in vs))]

    header = ["point", *params, f"{metric} (mean)", "sd", "seeds", "runs"]
    best = Table(header=header, rows=[row(*s) for s in summary[:5]],
                 title=f"{'lowest' if goal == 'min' else 'highest'} {metric}, mean over seeds")
    every = Table(header=header, rows=[row(*s) for s in summary])
    about = {"command": spec.get("command", sweep.get("command")), "metric": metric,
             "goal": goal, "seeds": spec.get("seeds"), "status": sweep.get("status"),
             "created": local_time(sweep.get("created", "")), "folder": sweep.get("out")}
    if spec.get("grid"):
        about["grid"] = spec["grid"]
    if spec.get("search"):
        about["search"] = spec["search"]
    if spec.get("base"):
        about["base config"] = spec["base"]
    _render(env, "sweep.html.j2", where / "index.html", root=root, nav=nav,
            title=f"sweep {sweep.get('id', slug)}", about=_pairs(about),
            blocks=[_block(f"{metric} vs each swept parameter", notes=notes, figures=figures),
                    _block("best configurations", tables=[best]),
                    _block("every point", tables=[every])], n_runs=len(views))
    return f"sweeps/{slug}/index.html"


# ---------------------------------------------------------------------- the site
def _views(runs) -> list[RunView]:
    views = [r if isinstance(r, RunView) else view_of_record(r) for r in runs]
    if not views:
        raise KairoError("the report has no runs to show: the selection is empty")
    return link_children(views)


def _sweeps(store, views: list[RunView]) -> dict[str, dict]:
    """The sweeps the selection's runs belong to (spec from the store; without one, only
    the id is known)."""
    out = {}
    for sid in dict.fromkeys(v.sweep for v in views if v.sweep):
        try:
            out[sid] = store.sweep(sid) if store is not None else {"id": sid}
        except KairoError as exc:
            log.warning("%s", exc)
            out[sid] = {"id": sid}
    return out


def write_site(folder, store, runs, *, max_rows: int = 50) -> list[str]:
    """Write the site of ``runs`` (store records or :class:`RunView`) into the existing
    folder ``folder``; ``store`` (or None) gives the sweeps' specs. Returns the files written,
    relative to ``folder``."""
    site = Path(folder)
    env = _env()
    views = _views(runs)
    by_key = {v.key: v for v in views}
    for name in ("style.css", "sortable.js"):
        (site / "static").mkdir(exist_ok=True)
        shutil.copyfile(_HERE / "static" / name, site / "static" / name)
    families = [f for f in FAMILY_PAGES if any(v.family == f for v in views)]
    sweeps = _sweeps(store, views)
    slugs = {sid: _slug(sid) for sid in sweeps}
    nav = ([{"title": "runs", "href": "index.html"}]
           + [{"title": f, "href": f"families/{f}/index.html"} for f in families]
           + [{"title": f"sweep {sid}", "href": f"sweeps/{slugs[sid]}/index.html"}
              for sid in sweeps])
    root = "../../"
    for v in views:
        where = site / "runs" / v.key
        content = run_content(v.folder, v.files, max_rows=max_rows)
        for src, name in content.copy:
            _place(src, where / name)
        _render(env, "run.html.j2", where / "index.html", root=root, nav=nav, v=v,
                title=f"{v.title}: kairo {v.command}", content=content,
                config=_pairs(v.config), metrics=_pairs(v.metrics),
                parent=by_key.get(v.parent),
                children=[by_key[k] for k in v.children],
                sweep_href=f"{root}sweeps/{slugs[v.sweep]}/index.html"
                if v.sweep in slugs else None)
    for f in families:
        _family_page(env, site, f, [v for v in views if v.family == f], nav)
    for sid, sweep in sweeps.items():
        _sweep_page(env, site, slugs[sid], {"id": sid, **sweep},
                    [v for v in views if v.sweep == sid], nav)
    _render(env, "index.html.j2", site / "index.html", root="", nav=nav, title="kairo report",
            runs=_index_table(views, slugs), n_runs=len(views),
            commands=sorted({v.command for v in views}),
            families=[(f, FAMILY_PAGES[f]) for f in families],
            sweeps=[(sid, slugs[sid], s.get("status")) for sid, s in sweeps.items()])
    return sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())


def build_site(store, runs, out, *, overwrite: bool = False, max_rows: int = 50) -> Path:
    """Write the static site of ``runs`` (:class:`~kairo.runs.RunRecord` from ``store``, or
    :class:`RunView`) into the folder ``out``, atomically (an existing folder is replaced
    only with ``overwrite``); returns ``out/index.html``.

    >>> from kairo.runs import Store                                  # doctest: +SKIP
    >>> st = Store("results/kairo.db")                                 # doctest: +SKIP
    >>> build_site(st, select_runs(st, where="accuracy>0.9"), "site")  # doctest: +SKIP
    """
    from kairo._io import atomic_folder

    out = Path(out)
    with atomic_folder(out, overwrite=overwrite) as tmp:
        write_site(tmp, store, runs, max_rows=max_rows)
    return out / "index.html"


# ---------------------------------------------------------------------- the demo's page
def _demo_sections(folder: Path) -> list[dict]:
    """The steps of a demo folder read from the folders themselves, in the order they ran
    (when the demo's own list of steps, with notes and summaries, is not at hand)."""
    views = []
    for p in sorted(folder.iterdir()):
        if p.is_dir() and (p / "run.json").is_file():
            try:
                views.append(view_of_folder(p))
            except KairoError as exc:
                log.warning("%s", exc)
    views = sorted((v for v in views if v.command != "report"), key=lambda v: v.started)
    return [{"name": v.folder.name, "command": v.command, "seconds": v.duration,
             "rerun": f"kairo {v.command} --config {v.folder.name}/config.yaml"}
            for v in views]


def demo_report(folder, sections: list[dict] | None = None, *, quick: bool | None = None,
                max_rows: int = 10) -> Path:
    """Write ``report.html`` into the demo results folder ``folder``: one section per step
    with its note, re-run command, summary, metrics, figures, video, CSV tables (first
    ``max_rows`` rows) and circuit; every link is relative to the folder. Returns its path.

    ``sections``: the demo's steps in order, ``{name, command, note, summary, seconds,
    rerun}`` (``name`` is the step's folder; ``{name, skipped}`` for a step that did not
    run). Without them the steps are read from the folder's sub-folders. ``quick``: the demo
    ran at tiny sizes (default: what the folder's run.json says)."""
    from kairo._io import atomic_write_text

    folder = Path(folder)
    if not folder.is_dir():
        raise KairoError(f"demo folder {folder} does not exist (expected the --out of a "
                         f"kairo demo run)")
    if sections is None:
        sections = _demo_sections(folder)
    if quick is None:
        try:
            quick = bool((json.loads((folder / "run.json").read_text()).get("config")
                          or {}).get("quick"))
        except (OSError, ValueError, AttributeError):
            quick = False
    shown = []
    for s in sections:
        step = folder / s["name"]
        item = {"note": "", "summary": "", "seconds": None, "rerun": "", "skipped": "",
                "command": "", **s, "content": None, "metrics": None}
        if not s.get("skipped") and (step / "run.json").is_file():
            v = view_of_folder(step)
            prefix = s["name"] + "/"
            item["content"] = run_content(step, v.files, max_rows=max_rows,
                                          href=lambda n, p=prefix: p + n)
            item["metrics"] = _pairs(v.metrics) if v.metrics else None
        shown.append(item)
    html = _env().get_template("demo.html.j2").render(
        title="kairo demo report", sections=shown, quick=quick,
        **_inline_static())
    return atomic_write_text(folder / "report.html", html)
