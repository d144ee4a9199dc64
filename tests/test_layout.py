"""kairo's source stays in pieces one can read: no file over 700 lines, no function over 100,
no reference page over 300.

The rules, checked on every ``.py`` file under ``src/kairo`` (parsed with :mod:`ast`, nothing
imported):

- A file has at most ``MAX_FILE_LINES`` (700) lines.
- A function or method, nested ones included, spans at most ``MAX_FUNCTION_LINES`` (100)
  lines, from its ``def`` line to its last line (``end_lineno − lineno + 1``; decorators
  not counted).
- Exempt from the function rule: a numba kernel whose size a comment justifies. A numba
  kernel is a function decorated with numba's ``njit``, ``jit``, ``vectorize``,
  ``guvectorize``, ``cfunc`` or ``stencil`` (or ``cuda.jit``), written as ``@njit``,
  ``@njit(...)``, ``@numba.njit``, ``@nb.njit(...)`` … where the module imported that name
  from numba. The comment says why the function is long (it contains the word "long") and
  stands just above it (the comment lines directly above its first decorator) or at its top
  (from its first decorator to the first statement after its docstring).
- A reference page of ``docs/`` (not ``docs/notes/``, the research logs) has at most
  ``MAX_PAGE_LINES`` (300) lines.

A failure names the file, the function and its line count.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "kairo"
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 100
NUMBA_DECORATORS = {"njit", "jit", "vectorize", "guvectorize", "cfunc", "stencil"}

# Violations tolerated while src/kairo/tsc/ is being reworked by someone else:
MAX_PAGE_LINES = 300


def _numba_names(tree: ast.Module) -> tuple[set[str], set[str]]:
    """The names the module binds to numba: (modules — ``numba``, ``nb``, numba's ``cuda`` —,
    decorators imported by name — ``njit`` …)."""
    modules, decorators = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "numba" or a.name.startswith("numba."):
                    modules.add(a.asname or "numba")
        elif isinstance(node, ast.ImportFrom) and node.module and \
                (node.module == "numba" or node.module.startswith("numba.")):
            for a in node.names:
                if a.name in NUMBA_DECORATORS:
                    decorators.add(a.asname or a.name)
                elif a.name == "cuda":
                    modules.add(a.asname or a.name)
    return modules, decorators


def _dotted(expr: ast.expr) -> list[str]:
    """``numba.cuda.jit`` → ["numba", "cuda", "jit"]; [] for anything but names and
    attributes."""
    parts = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return []
    return [expr.id, *reversed(parts)]


def _is_numba_kernel(fn: ast.FunctionDef, numba: tuple[set[str], set[str]]) -> bool:
    modules, decorators = numba
    for dec in fn.decorator_list:
        parts = _dotted(dec.func if isinstance(dec, ast.Call) else dec)
        if len(parts) == 1 and parts[0] in decorators:
            return True
        if len(parts) > 1 and parts[0] in modules and parts[-1] in NUMBA_DECORATORS:
            return True
    return False


def _comments(source: str) -> dict[int, str]:
    """Line → the text of its comment."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string.lstrip("#").strip()
    return out


def _justified(fn: ast.FunctionDef, lines: list[str], comments: dict[int, str]) -> bool:
    """Whether a comment just above ``fn`` or at its top says why it is long."""
    top = min([fn.lineno] + [d.lineno for d in fn.decorator_list])
    near = []
    line = top - 1                                  # the comment lines directly above
    while line >= 1 and lines[line - 1].lstrip().startswith("#"):
        near.append(comments.get(line, ""))
        line -= 1
    body = fn.body
    has_doc = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        and isinstance(body[0].value.value, str)
    first = body[1].lineno if has_doc and len(body) > 1 else (
        body[0].end_lineno if has_doc else body[0].lineno)
    near += [comments[n] for n in range(top, first + 1) if n in comments]
    return any(re.search(r"\blong\b", text, re.I) for text in near)


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every function and method, nested ones included."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        else:
            yield from _functions(node, prefix)


def violations(source: str, path: str) -> list[tuple[tuple[str, str | None], str]]:
    """((path, function or None), message) of each rule ``source`` breaks."""
    lines = source.splitlines()
    out = []
    if len(lines) > MAX_FILE_LINES:
        out.append(((path, None), f"{path}: {len(lines)} lines (at most {MAX_FILE_LINES}); "
                                  f"split it into modules by concern"))
    tree = ast.parse(source, path)
    numba = _numba_names(tree)
    comments = _comments(source)
    for name, fn in _functions(tree):
        n = fn.end_lineno - fn.lineno + 1
        if n <= MAX_FUNCTION_LINES:
            continue
        if _is_numba_kernel(fn, numba) and _justified(fn, lines, comments):
            continue
        out.append(((path, name), f"{path}:{fn.lineno}: {name} has {n} lines (at most "
                                  f"{MAX_FUNCTION_LINES}; a numba kernel may be longer "
                                  f"when a comment says why it is long)"))
    return out


def _all_violations():
    out = []
    for file in sorted(PACKAGE.rglob("*.py")):
        rel = file.relative_to(ROOT).as_posix()
        out += violations(file.read_text(encoding="utf-8"), rel)
    return out


def test_no_file_over_700_lines_and_no_function_over_100():
    bad = [msg for _, msg in _all_violations()]
    assert not bad, "layout rules (tests/test_layout.py) broken:\n" + "\n".join(bad)


def test_no_reference_page_over_300_lines():
    pages = sorted((ROOT / "docs").glob("*.md"))
    assert len(pages) >= 5                                   # the glob found the pages
    long = [f"docs/{p.name}: {n} lines" for p in pages
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_PAGE_LINES]
    assert not long, (f"reference pages stay within {MAX_PAGE_LINES} lines (move research "
                      f"to docs/notes/): " + ", ".join(long))


def _long_function(decorator: str = "", comment_above: str = "", comment_top: str = "",
                   imports: str = "", n: int = MAX_FUNCTION_LINES) -> str:
    """A module with one function of ``n`` lines."""
    body = [f"    {comment_top}"] if comment_top else []
    body += ["    x = 0"] * (n - 1 - len(body))
    return "\n".join([imports, comment_above, decorator, "def f():", *body]) + "\n"


@pytest.mark.parametrize("n, bad", [(MAX_FUNCTION_LINES, False), (MAX_FUNCTION_LINES + 1, True)])
def test_the_check_counts_a_function_from_def_to_its_last_line(n, bad):
    found = violations(_long_function(n=n), "m.py")
    assert bool(found) == bad
    if bad:
        assert found[0][0] == ("m.py", "f") and f"f has {n} lines" in found[0][1]


@pytest.mark.parametrize("imports, decorator", [
    ("from numba import njit", "@njit"),
    ("from numba import njit", "@njit(cache=True, nogil=True)"),
    ("import numba", "@numba.njit"),
    ("import numba as nb", "@nb.njit(**_JIT)"),
    ("import numba", "@numba.jit(nopython=True)"),
    ("from numba import cuda", "@cuda.jit"),
    ("from numba import njit as fast", "@fast"),
])
def test_a_numba_kernel_may_be_long_when_a_comment_says_why(imports, decorator):
    n = MAX_FUNCTION_LINES + 20
    why = "# long on purpose: the hot loop stays one compiled function"
    assert not violations(_long_function(decorator, comment_above=why, imports=imports, n=n),
                          "m.py")
    assert not violations(_long_function(decorator, comment_top=why, imports=imports, n=n),
                          "m.py")
    assert violations(_long_function(decorator, imports=imports, n=n), "m.py")
    assert violations(_long_function(decorator, comment_above="# the hot loop",
                                     imports=imports, n=n), "m.py")


@pytest.mark.parametrize("imports, decorator", [
    ("", "@njit"),                                    # not numba's
    ("import torch", "@torch.jit.script"),
    ("import functools", "@functools.lru_cache"),
])
def test_only_numba_kernels_are_exempt(imports, decorator):
    src = _long_function(decorator, comment_above="# long on purpose", imports=imports,
                         n=MAX_FUNCTION_LINES + 1)
    assert violations(src, "m.py")


def test_the_check_finds_long_files_methods_and_nested_functions():
    inner = "\n".join(["        x = 0"] * MAX_FUNCTION_LINES)
    src = f"class C:\n    def m(self):\n{inner}\n\n\ndef outer():\n    def inner():\n{inner}\n"
    src += "\n" * MAX_FILE_LINES
    keys = [key for key, _ in violations(src, "m.py")]
    assert keys == [("m.py", None), ("m.py", "C.m"), ("m.py", "outer"),
                    ("m.py", "outer.inner")]
