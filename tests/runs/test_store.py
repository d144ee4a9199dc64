"""The results store: every run recorded through ``execute``, queried, compared, exported and
removed; concurrent writers lose nothing; a corrupt, foreign or newer database is refused
without being touched."""

from __future__ import annotations

import json
import multiprocessing as mp
import sqlite3
from dataclasses import dataclass

import pandas as pd
import pytest

from kairo import ConfigError, KairoError, cli
from kairo._command import Command
from kairo._config import check_fields, option
from kairo.cli import execute
from kairo.runs import SCHEMA_VERSION, Store, StoreError, flatten_metrics, parse_since, \
    parse_where


@dataclass(frozen=True)
class ToyConfig:
    x: float = option(1.0, "a number")
    seed: int = option(0, "seed", low=0)
    fail: bool = option(False, "raise inside the run")

    def __post_init__(self):
        check_fields(self)


def _toy(cfg, rd):
    if cfg.fail:
        raise KairoError("the toy run was told to fail")
    rd.add("metrics.json", {"score": cfg.x * 2, "ok": True, "nested": {"a": 1.5},
                            "label": "fine", "curve": [1, 2, 3]})
    rd.add("extra.json", {"n": 3})
    rd.add("table.csv", pd.DataFrame({"a": [1, 2]}))
    return f"score {cfg.x * 2}"


TOY = Command("toy", ToyConfig, _toy, "a toy command")


def _parent(cfg, rd):
    execute(TOY, ToyConfig(x=cfg.x), out=rd.path / "child")
    if cfg.fail:
        raise KairoError("parent fails after its child")
    return "parent"


PARENT = Command("toy parent", ToyConfig, _parent, "runs the toy inside itself")


def test_a_run_is_recorded_with_metrics_files_and_machine(tmp_path):
    st = Store(tmp_path / "k.db")
    execute(TOY, ToyConfig(x=3.0, seed=7), out=tmp_path / "a", store=st)
    [r] = st.runs()
    assert (r.command, r.status, r.seed, r.config["x"]) == ("toy", "done", 7, 3.0)
    assert r.metrics == {"score": 6.0, "ok": 1.0, "nested.a": 1.5, "label": "fine",
                         "extra.n": 3.0}          # lists are tables, not metrics
    assert r.artifacts == ["extra.json", "metrics.json", "table.csv"]
    assert r.out == str((tmp_path / "a").absolute()) and r.folder is not None
    assert r.duration > 0 and r.machine["cpu_count"] >= 1 and "numpy" in r.versions
    run_json = json.loads((tmp_path / "a" / "run.json").read_text())
    assert run_json["store"] == {"path": str(st.path), "id": r.id}


def test_a_failed_run_is_recorded_with_its_error_and_leaves_no_folder(tmp_path):
    st = Store(tmp_path / "k.db")
    with pytest.raises(KairoError, match="told to fail"):
        execute(TOY, ToyConfig(fail=True), out=tmp_path / "a", store=st)
    [r] = st.runs()
    assert r.status == "failed" and "told to fail" in r.error and r.folder is None
    assert not (tmp_path / "a").exists()


def test_runs_inside_a_run_are_its_children_in_their_final_folders(tmp_path):
    st = Store(tmp_path / "k.db")
    execute(PARENT, ToyConfig(x=2.0), out=tmp_path / "p", store=st)
    parent, child = st.runs()
    assert child.parent == parent.id
    assert child.out == str((tmp_path / "p" / "child").absolute()) and child.folder is not None
    with pytest.raises(KairoError):
        execute(PARENT, ToyConfig(fail=True), out=tmp_path / "q", store=st)
    failed_parent, orphan = st.runs()[2:]
    assert failed_parent.status == "failed" and orphan.parent == failed_parent.id
    assert orphan.out is None and "parent run" in orphan.error


def test_store_none_records_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("KAIRO_STORE", "none")
    execute(TOY, ToyConfig(), out=tmp_path / "a")
    assert not list(tmp_path.glob("*.db"))


def _writer(args):
    path, n, k = args
    st = Store(path)
    for i in range(n):
        rid = st.start_run("toy", {"x": i, "writer": k}, seed=i)
        st.finish_run(rid, status="done", duration=0.1, metrics={"i": i, "writer": k})
    return n


def test_concurrent_writers_lose_nothing(tmp_path):
    path = tmp_path / "k.db"
    with mp.get_context("spawn").Pool(4) as pool:
        assert sum(pool.map(_writer, [(path, 40, k) for k in range(4)])) == 160
    recs = Store(path).runs()
    assert len(recs) == 160 and len({r.id for r in recs}) == 160
    assert all(r.status == "done" and r.metrics["i"] == r.config["x"] for r in recs)
    assert sorted((r.config["writer"], r.config["x"]) for r in recs) == \
        [(k, i) for k in range(4) for i in range(40)]


@pytest.mark.parametrize("content", [b"this is not a database\n" * 40,
                                     b"SQLite format 3\x00" + b"\xff" * 2000])
def test_a_corrupt_store_is_refused_and_left_alone(tmp_path, content):
    path = tmp_path / "k.db"
    path.write_bytes(content)
    with pytest.raises(StoreError, match=str(path)):
        execute(TOY, ToyConfig(), out=tmp_path / "a", store=path)
    assert path.read_bytes() == content and not (tmp_path / "a").exists()


def test_a_foreign_or_newer_database_is_refused_and_left_alone(tmp_path):
    foreign = tmp_path / "other.db"
    con = sqlite3.connect(foreign)
    con.execute("CREATE TABLE runs (x)")
    con.commit()
    con.close()
    before = foreign.read_bytes()
    with pytest.raises(StoreError, match="not a kairo results store"):
        Store(foreign).runs()
    assert foreign.read_bytes() == before
    newer = tmp_path / "newer.db"
    Store(newer).check()
    con = sqlite3.connect(newer)
    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.commit()
    con.close()
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}"):
        Store(newer).runs()


def test_a_folder_as_store_is_named(tmp_path):
    with pytest.raises(StoreError, match="is a folder"):
        Store(tmp_path).check()


def test_flatten_metrics_keeps_scalars_and_names_them():
    assert flatten_metrics({"a": 1, "b": {"c": 2.5, "d": [1, 2]}, "e": "x" * 300, "f": False},
                           "m") == {"m.a": 1, "m.b.c": 2.5, "m.f": 0}


def _results(cfg, rd):
    _toy(cfg, rd)
    rd.add("wide.json", {f"c{i}": i for i in range(201)})          # a table: over 200 leaves
    rd.add("yosys.json", {"modules": {"\\top": {"cells": 9}}})    # a tool's report
    (rd.path / "big.json").write_text(json.dumps({"pad": "x" * 100, "v": list(range(60_000))}))
    rd.add("big.json")                                             # over 256 KB
    (rd.path / "tool.json").write_text(json.dumps({"lut4": 5}))
    rd.add("tool.json")                                            # written by another tool
    return "done"


def test_the_record_the_store_and_the_report_read_a_folder_one_way(tmp_path):
    """What the run records, what the store finishes from a folder and what the report reads
    from a folder are kairo.runs.read_results: one rule, data files (too big, too many
    leaves, keyed by a tool's names) left out alike."""
    from kairo.report import view_of_folder
    from kairo.runs import read_results

    st = Store(tmp_path / "k.db")
    execute(Command("toy results", ToyConfig, _results, "many files"), ToyConfig(x=2.0),
            out=tmp_path / "a", store=st)
    [r] = st.runs()
    want = {"score": 4.0, "ok": 1.0, "nested.a": 1.5, "label": "fine", "extra.n": 3.0,
            "tool.lut4": 5.0}
    assert r.metrics == want
    assert read_results(tmp_path / "a") == want == view_of_folder(tmp_path / "a").metrics
    # a record left running (killed between commit and record) is finished from the folder
    with sqlite3.connect(st.path) as con:
        con.execute("UPDATE runs SET status = 'running' WHERE id = ?", (r.id,))
        con.execute("DELETE FROM metrics WHERE run = ?", (r.id,))
    assert st.finish_from_folder(tmp_path / "a") == r.id
    assert st.get(r.id).metrics == want


def _store_with(tmp_path, values):
    st = Store(tmp_path / "k.db")
    for i, v in enumerate(values):
        rid = st.start_run("toy" if i % 2 == 0 else "other", {"x": v, "norm": "row"}, seed=i)
        st.finish_run(rid, status="done", duration=1.0, metrics={"acc": v, "name": f"n{i}"})
    return st


def test_where_filters_on_metrics_config_and_columns(tmp_path):
    st = _store_with(tmp_path, [0.1, 0.5, 0.9, 0.7])
    ids = lambda w: [r.id for r in st.runs(where=w)]  # noqa: E731
    assert ids("acc>0.5") == [3, 4]
    assert ids("acc>=0.5 and command=toy") == [3]
    assert ids("config.x<0.6, seed!=0") == [2]
    assert ids("name=n2") == [3] and ids("name~n") == [1, 2, 3, 4]
    # a value is a parameter, never SQL
    assert ids("command='toy'' OR 1=1 --'") == []
    assert len(st.runs(limit=2)) == 2 and st.runs(limit=2)[0].id == 3
    with pytest.raises(ConfigError, match="NAME OP VALUE"):
        parse_where("accuracy is big")
    with pytest.raises(ConfigError, match="config field"):
        parse_where("config.a-b=1")


def test_since_takes_dates_and_ages():
    assert parse_since("2026-01-02") .startswith("2026-01-0")
    assert parse_since("2h") < parse_since("1h")
    with pytest.raises(ConfigError, match="ISO date"):
        parse_since("yesterday")


def test_runs_commands(tmp_path, capsys):
    store = tmp_path / "k.db"
    for x in (1.0, 2.0):
        assert cli.main(["--store", str(store), "tsc", "encodings", "--out",
                         str(tmp_path / f"e{x}"), "--d", str(int(16 * x))]) == 0
    capsys.readouterr()
    run = lambda *a: (cli.main(["--store", str(store), "runs", *a]), capsys.readouterr())  # noqa
    rc, out = run("list", "--where", "encodings.d>20")
    assert rc == 0 and "tsc encodings" in out.out and out.out.count("\n") == 3
    rc, out = run("compare", "1", "2")
    assert rc == 0 and "* d " in out.out and "encodings.d" in out.out
    rc, out = run("show", "2")
    assert rc == 0 and "d: 32" in out.out and "sinusoidal.png" in out.out
    rc, out = run("export", "--output", str(tmp_path / "runs.csv"))
    df = pd.read_csv(tmp_path / "runs.csv")
    assert rc == 0 and list(df["config.d"]) == [16, 32] and "metric.encodings.d" in df
    rc, out = run("export", "--output", str(tmp_path / "runs.pq"), "--format", "parquet")
    assert rc == 0 and len(pd.read_parquet(tmp_path / "runs.pq")) == 2
    rc, out = run("compare", "1")
    assert rc == 2 and "two or more" in out.err
    rc, out = run("show", "9")
    assert rc == 2 and "no run with id 9" in out.err
    rc, out = run("rm", "1", "--files")
    assert rc == 0 and not (tmp_path / "e1.0").exists() and (tmp_path / "e2.0").exists()
    rc, out = run("rm", "2")
    assert rc == 0 and (tmp_path / "e2.0").exists()
    rc, out = run("list")
    assert "no runs match" in out.out


def test_runs_rm_files_keeps_a_folder_that_is_not_the_runs(tmp_path, capsys):
    st = Store(tmp_path / "k.db")
    execute(TOY, ToyConfig(), out=tmp_path / "a", store=st)
    run_json = tmp_path / "a" / "run.json"
    run_json.write_text(json.dumps({"store": {"path": "elsewhere", "id": 1}}))
    assert cli.main(["--store", str(st.path), "runs", "rm", "1", "--files"]) == 0
    assert "kept" in capsys.readouterr().out and (tmp_path / "a").is_dir()


def test_runs_on_a_missing_store_is_clear(tmp_path, capsys):
    assert cli.main(["--store", str(tmp_path / "none.db"), "runs", "list"]) == 2
    assert "no results store at" in capsys.readouterr().err
    assert not (tmp_path / "none.db").exists()
