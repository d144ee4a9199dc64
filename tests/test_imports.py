"""kairo's modules import without an import circle, and the command line stays light: building
the parser and every family's configs and commands imports no torch."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "kairo"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _top_level_imports(tree: ast.Module):
    """The import statements that run when the module is imported: at module level, also in
    top-level ``try``/``if``/``with`` blocks, not under ``if TYPE_CHECKING`` nor in functions
    or classes."""
    stack = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                stack.extend(node.body)
            stack.extend(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                stack.extend(block)
            for handler in node.handlers:
                stack.extend(handler.body)
        elif isinstance(node, ast.With):
            stack.extend(node.body)


def _imports(name: str, path: Path, deferred: bool = False) -> list[tuple[str, int]]:
    """(kairo module, line) of each import ``name`` runs at import time (with ``deferred``,
    also those inside functions). ``from a import b`` is an edge to the module ``a.b`` when
    that is a module, else to the package ``a`` (its __init__)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    nodes = ([n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
             if deferred else _top_level_imports(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in MODULES else mod
                       for a in node.names]
        out += [(t, node.lineno) for t in targets if t in MODULES and t != name]
    return list(dict.fromkeys(out))


def _edges(name: str, path: Path, deferred: bool = False) -> set[str]:
    """The kairo modules ``name`` imports at import time (with ``deferred``, also those it
    imports inside functions); see :func:`_imports`."""
    return {t for t, _ in _imports(name, path, deferred)}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}          # 1 = on the current path, 2 = done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_module_level_imports_form_no_circle():
    graph = {name: _edges(name, path) for name, path in MODULES.items()}
    cycle = _find_cycle(graph)
    assert cycle is None, "import circle: " + " → ".join(cycle)


def test_deferred_imports_form_no_circle_between_modules():
    """Imports inside functions (heavy modules imported by a command's ``run``) make no circle
    either: a leaf module never reaches back, even lazily, into a module that imports it. The
    edges into a package's ``__init__`` are left out (its lazy ``__getattr__`` imports the
    submodules that define the names it exports)."""
    packages = {n for n, p in MODULES.items() if p.name == "__init__.py"}
    graph = {name: _edges(name, path, deferred=True) - packages
             for name, path in MODULES.items() if name not in packages}
    cycle = _find_cycle(graph)
    assert cycle is None, "import circle through deferred imports: " + " → ".join(cycle)


def test_the_cycle_finder_finds_circles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


# The application layer, lowest first (docs/architecture.md shows the same table). A unit is a
# top-level module or package with its submodules; it imports, at import time or inside a
# function, only units of lower layers, so none reaches back into a unit that imports it.
# The families and the CLI sit above and may import any of them.
LAYERS = (
    ("kairo._errors",),                                 # the errors every layer raises
    ("kairo._io", "kairo._config", "kairo._command"),   # atomic writes, hashing; config fields
    ("kairo.data", "kairo.runs"),                      # data directory; results store
    ("kairo._results",),                                   # ResultsDir, the environment record
    ("kairo._app",),                                    # the registry and execute
)
LAYER = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _unit(module: str) -> str:
    """The top-level unit a module belongs to: ``kairo.data._files`` → ``kairo.data``."""
    return ".".join(module.split(".")[:2])


def _unit_imports(units) -> list[tuple[str, str, str]]:
    """(unit, imported unit, ``file:line: module imports module``) of every import, at module
    level or deferred, from a module of one of ``units`` into another unit."""
    out = []
    for name, path in MODULES.items():
        if _unit(name) not in units:
            continue
        for target, line in _imports(name, path, deferred=True):
            if _unit(target) != _unit(name):
                out.append((_unit(name), _unit(target),
                            f"{path.relative_to(SRC.parent)}:{line}: {name} imports {target}"))
    return out


def _layer_violations(imports, layer: dict[str, int]) -> list[str]:
    """The imports of ``imports`` (see :func:`_unit_imports`) into a unit that is not in a
    lower layer of ``layer``."""
    bad = []
    for unit, target, where in imports:
        if target not in layer or layer[target] >= layer[unit]:
            what = f"layer {layer[target]}" if target in layer else "in no layer"
            bad.append(f"{where}: {unit} is layer {layer[unit]}, {target} {what}")
    return bad


def test_the_application_layer_has_no_circle_between_units():
    graph: dict[str, set[str]] = {unit: set() for unit in LAYER}
    where = {}
    for unit, target, at in _unit_imports(LAYER):
        if target in LAYER:
            graph[unit].add(target)
            where.setdefault((unit, target), at)
    cycle = _find_cycle(graph)
    assert cycle is None, ("import circle between units: " + " → ".join(cycle) + "\n" +
                           "\n".join(where[a, b] for a, b in zip(cycle, cycle[1:])))


def test_each_application_unit_imports_only_lower_layers():
    assert set(LAYER) <= set(MODULES), "a unit of LAYERS is no module: update the table"
    bad = _layer_violations(_unit_imports(LAYER), LAYER)
    assert not bad, ("imports against the layers of LAYERS (docs/architecture.md):\n" +
                     "\n".join(bad))


def test_the_layer_check_names_the_offending_import():
    imports = [("b", "a", "b.py:1: b imports a"), ("a", "b", "a.py:7: a imports b"),
               ("a", "c", "a.py:9: a imports c")]
    assert _layer_violations(imports, {"a": 0, "b": 1}) == [
        "a.py:7: a imports b: a is layer 0, b layer 1",
        "a.py:9: a imports c: a is layer 0, c in no layer"]
    assert _unit("kairo.data._files") == "kairo.data" and _unit("kairo._io") == "kairo._io"


def test_the_architecture_page_shows_the_layers():
    text = (SRC.parent / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| (\d) \| ([^|]*) \|", text, re.M)
    assert [tuple(re.findall(r"`(kairo[\w.]*)`", units)) for _, units in rows] == list(LAYERS)
    assert [int(n) for n, _ in rows] == list(range(len(LAYERS)))


def _in_fresh_python(code: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=SRC.parent)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_every_module_imports():
    """Each module imports (one interpreter, modules in name order); a module that needs an
    optional extra that is not installed is reported as skipped, not failed."""
    code = f"""
import importlib, json, traceback
failed, skipped = {{}}, {{}}
for name in {sorted(MODULES)!r}:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] == "kairo":
            failed[name] = traceback.format_exc()
        else:
            skipped[name] = exc.name
    except Exception:
        failed[name] = traceback.format_exc()
print(json.dumps({{"failed": failed, "skipped": skipped}}))
"""
    res = _in_fresh_python(code)
    assert not res["failed"], "\n".join(res["failed"].values())


def _family_modules(suffix: str) -> list[str]:
    from kairo._app import FAMILIES

    names = [m.rsplit(".", 1)[0] + suffix for m in FAMILIES]
    return [n for n in names if n in MODULES]


HEAVY = ("torch", "pandas", "matplotlib")


def test_cli_parser_and_commands_import_no_torch():
    modules = ["kairo.cli", *_family_modules("._commands"), *_family_modules("._config")]
    code = f"""
import importlib, json, sys
for name in {modules!r}:
    importlib.import_module(name)
import kairo.cli
kairo.cli.build_parser()
from kairo._app import commands
commands()
print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))
"""
    assert "torch" not in _in_fresh_python(code)


@pytest.mark.parametrize("module", _family_modules("._config"))
def test_family_config_imports_no_torch_pandas_or_matplotlib(module):
    code = (f"import importlib, json, sys; importlib.import_module({module!r}); "
            f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))")
    assert _in_fresh_python(code) == []


def test_every_family_has_a_config_module():
    # kairo.data's one config is small enough to live beside its commands
    have = {m.rsplit(".", 1)[0] for m in _family_modules("._config")}
    from kairo._app import FAMILIES

    assert {m.rsplit(".", 1)[0] for m in FAMILIES} - have <= {"kairo.data"}



@pytest.mark.parametrize("family", ["tsc", "fly", "logic", "reservoir"])
def test_families_load_names_on_first_use_through_one_helper(family):
    """Every family's lazy names go through kairo._lazy.lazy_exports: no hand-written
    __getattr__; each public name resolves, an unknown one is an AttributeError naming it,
    and dir() lists the public API."""
    import importlib

    pkg = importlib.import_module(f"kairo.{family}")
    assert pkg.__getattr__.__module__ == "kairo._lazy"
    assert "def __getattr__" not in Path(pkg.__file__).read_text()
    assert set(pkg.__all__) <= set(dir(pkg))
    for name in pkg.__all__:
        assert getattr(pkg, name) is not None
    with pytest.raises(AttributeError, match=f"kairo.{family}.*no_such_name"):
        pkg.no_such_name
