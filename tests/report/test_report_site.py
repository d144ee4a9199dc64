"""The report site: a page per run, family and sweep; every link relative and resolving to a
file of the site; values escaped; CSVs capped; bad input named; nothing half-written."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from kairo import KairoError
from kairo.report import build_site, demo_report, demo_runs, select_runs

CSV = "a,b\n" + "".join(f"{i},{i * i}\n" for i in range(120))


def links(page: Path) -> list[str]:
    """Every href and src of an HTML page."""
    found = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.extend(v for k, v in attrs if k in ("href", "src") and v is not None)

    Parser().feed(page.read_text())
    return found


def check_links(site: Path) -> int:
    """Every link of every page is relative and names a file of the site; returns the number
    of links checked."""
    from urllib.parse import unquote

    n = 0
    for page in site.rglob("*.html"):
        for link in links(page):
            if link.startswith(("#", "data:")):
                continue
            assert not re.match(r"^[a-z]+:|^/", link), f"{page}: absolute link {link}"
            target = (page.parent / unquote(link.split("#")[0])).resolve()
            assert target.is_file(), f"{page.relative_to(site)}: {link} → nothing"
            assert site.resolve() in target.parents
            n += 1
    return n


def index_rows(site: Path) -> int:
    html = (site / "index.html").read_text()
    body = html[html.index("<tbody>"):html.index("</tbody>")]
    return body.count("<tr>")


@pytest.fixture
def runs(store, make_run):
    """A parent run with two children, one with a figure and a long CSV, one failed."""
    parent = make_run(store, "demo", {"quick": True}, files={"report.md": "# demo\n"})
    a = make_run(store, "reservoir run", {"task": "narma10", "norm": "row", "seed": 0,
                                          "note": "<script>alert(1)</script>"},
                 metrics={"task": "narma10", "nrmse": 0.75, "r2": 0.4},
                 files={"test_predictions.png": None, "test_predictions.csv": CSV,
                        "summary.txt": "nrmse = 0.75 <b>", "model.pt": "weights"},
                 parent=parent)
    b = make_run(store, "reservoir run", {"task": "narma10", "norm": "spectral", "seed": 0},
                 metrics={"task": "narma10", "nrmse": 0.9}, status="failed", parent=parent)
    return parent, a, b


def test_a_page_per_run_and_every_link_resolves(tmp_path, store, runs):
    parent, a, b = runs
    index = build_site(store, select_runs(store), tmp_path / "site")
    site = index.parent
    assert index == tmp_path / "site" / "index.html"
    assert index_rows(site) == 3
    for rid in runs:
        assert (site / "runs" / str(rid) / "index.html").is_file()
    assert (site / "families" / "reservoir" / "index.html").is_file()
    assert check_links(site) > 10
    # the figure and the CSV sit beside the run's page; what is not shown is not copied
    page = site / "runs" / str(a)
    assert (page / "test_predictions.png").read_bytes()[:4] == b"\x89PNG"
    assert (page / "test_predictions.csv").read_text() == CSV
    assert not (page / "model.pt").exists()
    html = (page / "index.html").read_text()
    assert '<img src="test_predictions.png"' in html
    assert "model.pt" in html                                   # listed, not linked
    # the parent links its children and they link back
    assert f'href="../../runs/{a}/index.html"' in (site / "runs" / str(parent) /
                                                   "index.html").read_text()
    assert f'href="../../runs/{parent}/index.html"' in html
    failed = (site / "runs" / str(b) / "index.html").read_text()
    assert "RuntimeError: boom" in failed and "status-failed" in failed
    # the static files the pages use
    assert (site / "static" / "sortable.js").is_file() and (site / "static" / "style.css").is_file()


def test_values_are_escaped(tmp_path, store, runs):
    _, a, _ = runs
    site = build_site(store, select_runs(store, [a]), tmp_path / "site").parent
    html = (site / "runs" / str(a) / "index.html").read_text()
    assert "<script>alert(1)</script>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "nrmse = 0.75 &lt;b&gt;" in html                     # a text file, shown as text


def test_a_long_csv_is_capped_and_says_how_many_rows_are_left_out(tmp_path, store, runs):
    _, a, _ = runs
    site = build_site(store, select_runs(store, [a]), tmp_path / "site", max_rows=7).parent
    html = (site / "runs" / str(a) / "index.html").read_text()
    table = html[html.index("<h3>test_predictions.csv</h3>"):]
    table = table[:table.index("</table>")]
    assert table.count("<tr>") == 1 + 7                         # the header and 7 rows
    assert "113 more rows not shown" in html
    # numbers sort as numbers
    assert 'data-sort="36.0"' in table


def test_selection(store, runs):
    parent, a, b = runs
    # a parent brings its children; filters select like kairo runs list
    assert [r.id for r in select_runs(store, [parent])] == [parent, a, b]
    assert [r.id for r in select_runs(store, where="nrmse<0.8")] == [a]
    assert [r.id for r in select_runs(store, command="reservoir run")] == [a, b]
    with pytest.raises(KairoError, match="no run with id 999"):
        select_runs(store, [999])
    with pytest.raises(KairoError, match="no runs in the results store .*nrmse>5"):
        select_runs(store, where="nrmse>5")


def test_an_empty_store_is_named(tmp_path):
    from kairo.runs import Store

    st = Store(tmp_path / "empty.db")
    st.check()
    with pytest.raises(KairoError, match=r"empty\.db.*it is empty"):
        select_runs(st)


def test_family_pages(tmp_path, store, make_run):
    """Real wiring vs nulls (reservoir compare), accuracy vs gates (logic train), accuracy
    per dataset next to the published numbers (tsc train), each with its figure."""
    summary = {n: {"real": 11.0, "null_mean": m, "null_sd": 0.1, "z": 3.0, "p_better": 0.05,
                   "n_nulls": 3} for n, m in (("rewire", 10.0), ("gaussian", 9.0))}
    compare = {"metric": "mc", "higher_is_better": True, "real": 11.0}
    for null, s in summary.items():
        compare.update({f"summary.{null}.{k}": v for k, v in s.items()})
    make_run(store, "reservoir compare", {"task": "memory-capacity", "norm": "row"},
             metrics=compare)
    for gates, acc in ((400, 0.95), (2800, 0.99)):
        make_run(store, "logic train", {"classes": [0, 1], "hidden": gates // 10},
                 metrics={"test_accuracy_circuit": acc, "gates_after": gates,
                          "gates_before": gates * 10})
    make_run(store, "logic verify", {"circuit": "c.json"},
             metrics={"verify.accuracy": 0.99, "verify.backends.c.bit_exact": 1,
                      "verify.backends.verilog.bit_exact": 0})
    for acc in (0.97, 0.99):
        make_run(store, "tsc train", {"dataset": "GunPoint", "seed": 0},
                 metrics={"accuracy": acc})
    site = build_site(store, select_runs(store), tmp_path / "site").parent
    fam = site / "families"
    res = (fam / "reservoir" / "index.html").read_text()
    assert (fam / "reservoir" / "compare.png").is_file() and "gaussian" in res
    logic = (fam / "logic" / "index.html").read_text()
    assert (fam / "logic" / "accuracy_vs_gates.png").is_file()
    assert "MISMATCH" in logic and "bit-exact" in logic
    tsc = (fam / "tsc" / "index.html").read_text()
    assert (fam / "tsc" / "accuracy_per_dataset.png").is_file()
    # GunPoint: the mean of the two runs next to ResNet (Fawaz 2019)'s published 0.9907
    assert "ResNet (Fawaz 2019)" in tsc and ">0.98<" in tsc and ">0.9907<" in tsc
    assert check_links(site) > 0
    index = (site / "index.html").read_text()
    for f in ("reservoir", "logic", "tsc"):
        assert f'href="families/{f}/index.html"' in index


def test_sweep_page(tmp_path, store):
    """A grid sweep's points (two seeds each): a figure per swept parameter, the best
    configuration first."""
    spec = {"command": "reservoir run", "base": {"task": "narma10"},
            "grid": {"alpha": [0.5, 1.0], "norm": ["row", "spectral"]}, "seeds": [0, 1],
            "metric": "nrmse", "goal": "min"}
    store.add_sweep("s1", "reservoir run", spec, tmp_path / "sweep")
    for alpha in (0.5, 1.0):
        for norm in ("row", "spectral"):
            for seed in (0, 1):
                rid = store.start_run("reservoir run", {"alpha": alpha, "norm": norm,
                                                        "seed": seed},
                                      sweep="s1", point=f"alpha={alpha},norm={norm}")
                store.finish_run(rid, status="done", duration=1.0, metrics={
                    "nrmse": alpha + (0.5 if norm == "row" else 0) + 0.01 * seed})
    site = build_site(store, select_runs(store, sweep="s1"), tmp_path / "site").parent
    page = site / "sweeps" / "s1" / "index.html"
    html = page.read_text()
    assert (page.parent / "alpha.png").is_file() and (page.parent / "norm.png").is_file()
    best = html[html.index("lowest nrmse"):]
    assert best.index("alpha=0.5,norm=spectral") < best.index("alpha=1.0,norm=row")
    assert ">0.505<" in best                        # the mean over its two seeds
    assert check_links(site) > 0
    assert 'href="sweeps/s1/index.html"' in (site / "index.html").read_text()


def test_the_site_is_written_whole_or_not_at_all(tmp_path, store, runs, monkeypatch):
    site = tmp_path / "site"
    build_site(store, select_runs(store), site)
    (site / "mine.txt").write_text("keep me")
    with pytest.raises(KairoError, match="--overwrite"):
        build_site(store, select_runs(store), site)
    assert (site / "mine.txt").read_text() == "keep me"

    from kairo.report import _site

    def broken(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(_site, "run_content", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        build_site(store, select_runs(store), site, overwrite=True)
    assert (site / "mine.txt").read_text() == "keep me"           # the old site stays
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".site")) == []


def _demo_folder(root: Path, png_bytes: bytes) -> Path:
    """A demo results folder as `kairo demo` leaves it, without a store behind it."""
    def folder(path, command, config, files):
        path.mkdir(parents=True)
        for name, text in files.items():
            (path / name).write_bytes(png_bytes) if text is None else \
                (path / name).write_text(text)
        (path / "run.json").write_text(json.dumps({
            "command": f"kairo {command}", "started": "2026-01-01T10:00:00+00:00",
            "finished": "2026-01-01T10:00:02+00:00", "seed": config.get("seed"),
            "config": config, "files": sorted(files)}))

    demo = root / "demo"
    folder(demo, "demo", {"quick": True}, {"report.md": "# demo\n"})
    folder(demo / "narma10-row", "reservoir run", {"task": "narma10", "seed": 0},
           {"metrics.json": json.dumps({"nrmse": 0.8}), "test_predictions.png": None,
            "test_predictions.csv": CSV})
    folder(demo / "logic-verify", "logic verify", {"circuit": "logic-train/circuit.json"},
           {"verify.json": json.dumps({"n_samples": 10, "accuracy": 0.9, "all_bit_exact": True,
                                       "backends": {"c": {"samples": 10, "bit_exact": True}}})})
    return demo


def test_demo_report_and_a_site_of_a_demo_folder(tmp_path, png_bytes):
    demo = _demo_folder(tmp_path, png_bytes)
    page = demo_report(demo)                        # the steps read from the folders
    html = page.read_text()
    assert page == demo / "report.html"
    assert html.count("<section id=") == 2 and "Quick mode" in html
    assert 'src="narma10-row/test_predictions.png"' in html
    assert "every back end bit-exact" in html
    assert "110 more rows not shown" in html                     # 10 rows on the demo page
    assert check_links(demo) > 0
    # the demo's own steps, notes and summaries, and a step that did not run
    demo_report(demo, [{"name": "narma10-row", "command": "reservoir run", "note": "A note.",
                        "summary": "nrmse = 0.8", "seconds": 2.0,
                        "rerun": "kairo reservoir run --config narma10-row/config.yaml"},
                       {"name": "fly-run", "command": "fly run", "skipped": "Skipped: no fly."}])
    html = page.read_text()
    assert "A note." in html and "nrmse = 0.8" in html and "Skipped: no fly." in html
    # without a store behind it the site is read from the folders, keyed by folder name;
    # a site written inside the demo folder is not one of its steps
    store, runs = demo_runs(demo)
    assert store is None and [r.key for r in runs] == ["demo", "logic-verify", "narma10-row"]
    build_site(store, runs, demo / "site")
    (demo / "site" / "run.json").write_text(json.dumps({"command": "kairo report",
                                                        "config": {}, "files": []}))
    assert [r.key for r in demo_runs(demo)[1]] == [r.key for r in runs]
    assert demo_report(demo).read_text().count("<section id=") == 2
    site = build_site(store, runs, tmp_path / "site").parent
    assert (site / "runs" / "narma10-row" / "test_predictions.png").is_file()
    assert 'href="../../runs/narma10-row/index.html"' in \
        (site / "runs" / "demo" / "index.html").read_text()
    assert index_rows(site) == 3 and check_links(site) > 0


def test_a_missing_or_foreign_demo_folder_is_named(tmp_path):
    with pytest.raises(KairoError, match="demo folder .*nowhere does not exist"):
        demo_runs(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(KairoError, match="plain is not a kairo results folder: it has no "
                                         "run.json"):
        demo_runs(tmp_path / "plain")
    with pytest.raises(KairoError, match="nowhere does not exist"):
        demo_report(tmp_path / "nowhere")


def test_the_command(tmp_path, store, runs, monkeypatch, capsys):
    """kairo report: a results folder like any other (--out, --overwrite), bad input named
    with exit code 2."""
    from kairo.cli import main

    monkeypatch.setenv("KAIRO_STORE", str(store.path))
    parent, a, b = runs
    out = tmp_path / "site"
    assert main(["report", str(a), "--out", str(out)]) == 0
    assert "1 run: " in capsys.readouterr().out
    assert index_rows(out) == 1 and (out / "run.json").is_file()
    assert main(["report", "--out", str(out)]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["report", "--where", "command='reservoir run'", "--out", str(out),
                 "--overwrite"]) == 0
    assert index_rows(out) == 2
    for argv, message in ((["report", "999"], "no run with id 999"),
                          (["report", "--where", "nrmse>5"], "no runs in the results store"),
                          (["report", "--demo", str(tmp_path / "gone")], "gone does not exist"),
                          (["report", "--demo", str(tmp_path), "--where", "nrmse<1"],
                           "demo: a demo folder is reported on its own")):
        assert main([*argv, "--out", str(tmp_path / "x")]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    monkeypatch.setenv("KAIRO_STORE", str(tmp_path / "none.db"))
    assert main(["report", "--out", str(tmp_path / "x")]) == 2
    assert "no results store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()


def test_the_index_sums_a_run_up_by_its_commands_headline_metrics(tmp_path, store, make_run):
    from kairo._app import get_command

    assert get_command("reservoir run").headline == ("task", "nrmse", "mc", "r2")
    known = make_run(store, "reservoir run", {"task": "narma10"},
                     metrics={"zeta": 9.0, "nrmse": 0.75, "r2": 0.4, "task": "narma10"})
    # a command this version does not know: its first three numbers
    unknown = make_run(store, "retired thing", {}, metrics={"a": 1, "label": "x", "b": 2,
                                                            "c": 3, "d": 4})
    site = build_site(store, select_runs(store), tmp_path / "site").parent
    html = (site / "index.html").read_text()
    rows = {rid: html[html.index(f"runs/{rid}/index.html"):] for rid in (known, unknown)}
    assert "task narma10, nrmse 0.75, r2 0.4<" in rows[known] and "zeta" not in rows[known]
    assert "a 1, b 2, c 3<" in rows[unknown]
