"""kairo's modules import without an import circle, and the command line stays light: building
the parser and every family's configs and commands imports no torch."""

from __future__ import annotations

import ast
import json
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


def _edges(name: str, path: Path, deferred: bool = False) -> set[str]:
    """The kairo modules ``name`` imports at import time (with ``deferred``, also those it
    imports inside functions). ``from a import b`` is an edge to the module ``a.b`` when that
    is a module, else to the package ``a`` (its __init__)."""
    is_package = path.name == "__init__.py"
    tree = ast.parse(path.read_text(), str(path))
    nodes = ([n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
             if deferred else _top_level_imports(tree))
    out = set()
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
        out |= {t for t in targets if t in MODULES and t != name}
    return out


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



@pytest.mark.parametrize("family", ["attention", "embodied", "logic", "reservoir"])
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
