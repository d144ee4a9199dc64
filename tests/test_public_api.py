"""The public import paths that benchmarks and scripts use are the package's own objects, and
no benchmark or script imports a private kairo module or name (the house rule: they call the
public API)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PRIVATE_MODULE = re.compile(r"^kairo(\.\w+)*\._\w+")


def test_kairo_runs_re_exports_the_private_objects():
    import kairo._io
    import kairo._results
    import kairo.results

    assert {"environment", "cpu_model", "atomic_folder", "atomic_write", "atomic_write_text",
            "ResultsDir", "file_sha256"} <= set(kairo.results.__all__)
    for name in kairo.results.__all__:
        home = kairo._results if name in kairo._results.__all__ else kairo._io
        assert getattr(kairo.results, name) is getattr(home, name), name


def test_kairo_stats_re_exports_the_private_objects():
    import kairo._stats
    import kairo.stats

    assert set(kairo.stats.__all__) == set(kairo._stats.__all__)
    for name in kairo.stats.__all__:
        assert getattr(kairo.stats, name) is getattr(kairo._stats, name), name


def test_cli_re_exports_the_run_path_and_kairo_the_errors():
    import kairo
    import kairo._app
    import kairo._config
    import kairo._errors
    import kairo.cli

    assert kairo.cli.execute is kairo._app.execute
    assert kairo.cli.make_config is kairo._app.make_config
    assert kairo.cli.load_config_file is kairo._config.load_config_file
    assert {"execute", "make_config", "load_config_file"} <= set(kairo.cli.__all__)
    assert kairo.ConfigError is kairo._errors.ConfigError


@pytest.mark.parametrize("name", ["read_bandwidth", "bench_images", "bench_circuit",
                                  "AnchorCircuit", "time_calls", "ANCHOR_FLAGS", "ANCHOR_BATCH"])
def test_logic_exports_the_bench_names(name):
    import kairo.logic
    import kairo.logic._bench

    assert name in kairo.logic.__all__
    assert getattr(kairo.logic, name) is getattr(kairo.logic._bench, name)


def _scripts() -> list[Path]:
    # benchmarks/studies/ are studies of kairo's internal choices (variants of one trained
    # model scored through the grid runner, the recipe's rules): they import the private
    # module they study, and only they do
    return sorted([*REPO.glob("benchmarks/*.py"), *REPO.glob("scripts/*.py")])


def private_imports(path: Path, root: Path = REPO) -> list[str]:
    """``file:line: names`` of each import (at any depth, inside functions too) that names
    a private kairo module (``kairo._results``, ``kairo.tsc._compare``) or imports a
    private name from a kairo module (``from kairo.logic import _bench``)."""
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if PRIVATE_MODULE.match(a.name)]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and (
                node.module == "kairo" or node.module.startswith("kairo.")):
            bad = ([node.module] if PRIVATE_MODULE.match(node.module) else
                   [f"{node.module}.{a.name}" for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")])
        else:
            continue
        if bad:
            found.append(f"{path.relative_to(root)}:{node.lineno}: {', '.join(bad)}")
    return found


def test_the_private_import_check_finds_each_form(tmp_path):
    f = tmp_path / "probe.py"
    f.write_text("from kairo._results import environment\n"
                 "def g():\n"
                 "    from kairo.tsc._grid import run_grid\n"
                 "    from kairo.logic import (Circuit,\n"
                 "                             _bench as bb)\n"
                 "import kairo._stats as st\n"
                 "from kairo.results import environment\n"
                 "from kairo import ConfigError, __version__\n"
                 "import _common\n"
                 "CODE = 'from kairo._app import execute'\n")
    found = private_imports(f, tmp_path)
    assert sorted(int(s.split(":")[1]) for s in found) == [1, 3, 4, 6]
    assert all(s.startswith("probe.py:") for s in found)
    assert any(s.endswith("kairo.logic._bench") for s in found)


def test_benchmarks_and_scripts_import_no_private_kairo_module():
    scripts = _scripts()
    assert any(p.name == "attention_speed.py" for p in scripts)        # the glob found them
    found = [line for p in scripts for line in private_imports(p)]
    assert not found, ("import the public API instead (kairo.results, kairo.stats, kairo.cli, "
                       "kairo.tsc, kairo.logic):\n" + "\n".join(found))
