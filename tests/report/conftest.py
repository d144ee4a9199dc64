"""Runs made by hand in a store of the test's own: a results folder with a figure, a CSV and
metrics, recorded the way ``kairo._app.execute`` records a run."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="session")
def png_bytes(tmp_path_factory) -> bytes:
    """A small real PNG (Matplotlib, Agg)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(2, 1.5), dpi=50)
    FigureCanvasAgg(fig)
    fig.add_subplot().plot([0, 1, 2], [1, 0, 1])
    path = tmp_path_factory.mktemp("png") / "f.png"
    fig.savefig(path)
    return path.read_bytes()


@pytest.fixture
def make_run(tmp_path, png_bytes):
    """``make_run(store, command, config, metrics=, files=, **tags) -> id``: a finished run
    whose folder holds ``files`` ({name: text, or None for a PNG}) and metrics.json."""
    counter = iter(range(1, 10_000))

    def make(store, command, config, *, metrics=None, files=None, status="done", folder=True,
             **tags):
        out = tmp_path / "runs" / f"{command.replace(' ', '-')}-{next(counter)}"
        rid = store.start_run(command, config, out=out if folder else None,
                              seed=config.get("seed"), **tags)
        names = []
        if folder:
            out.mkdir(parents=True)
            for name, text in (files or {}).items():
                p = out / name
                if text is None:
                    p.write_bytes(png_bytes)
                else:
                    p.write_text(text)
                names.append(name)
            if metrics is not None:
                (out / "metrics.json").write_text(json.dumps(metrics))
                names.append("metrics.json")
        store.finish_run(rid, status=status, duration=1.5, metrics=metrics or {},
                         artifacts=names, error="RuntimeError: boom" if status == "failed"
                         else None)
        return rid

    return make


@pytest.fixture
def store(tmp_path):
    from kairo.runs import Store

    return Store(tmp_path / "kairo.db")

