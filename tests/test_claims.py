"""Every number on a page that docs/claims.yaml covers is either a claim, recomputed here from
its committed result file, or prose (a setting, a count, a version, …) with its reason.

What is scanned on a covered page: every line outside fenced code blocks, inline code
included; inside fenced code blocks (any language) only comments, from a `#` at the start of a
line or after a space to the end of the line, so command arguments are never numbers to
register. A number is a run of digits, with `,` or `.` between digit groups (2,952, 98.26,
2.13.0) and an optional exponent (1.1e-9, 1e2), not preceded by a letter, digit, `_` or `.`
(so iCE40, sha256 and narma10 are names, not numbers).

A claim or prose entry's `text` is found in the page with any run of whitespace matching any
run of whitespace (line breaks too, and a `#` that continues a comment on the next line). A
claim checks one number in its text: the first, or the token named by `number`; the other
numbers in its text need their own entry. A prose entry covers every number in every place its
text occurs. Each number must be covered by exactly one entry.

`python tests/test_claims.py [PAGE]` prints the problems, with each unregistered number's
line, so a page can be added one number at a time.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REGISTRY = ROOT / "docs" / "claims.yaml"

NUMBER = re.compile(r"(?<![\w.])[0-9]+(?:[.,][0-9]+)*(?:e[-+]?[0-9]+)?")
COMMENT = re.compile(r"(?:^|(?<=\s))#.*$")
REASONS = {
    "config": "a setting the run was given: seeds, ensembles, folds, cores, steps",
    "count": "how many of something kairo has or a sentence lists",
    "data": "a property of an input data set, not of a result",
    "version": "a version or a supported range of versions",
    "citation": "a year in a reference",
    "reference": "a figure published elsewhere or a target set before the runs (a paper's, a "
                 "peer's result file, the project's starting table), quoted with its source",
    "name": "a number inside a name (AVX-512, SHA-256, MNIST-1D)",
    "checksum": "part of a checksum",
    "address": "a host or port",
    "command": "an argument in a command shown in prose or a comment",
    "formula": "a constant of an equation or a definition: x(t−1), N(0, 1), τ = 17",
}
CLAIM_FIELDS = {"text", "file", "key", "scale", "digits", "number", "note"}
PROSE_FIELDS = {"text", "reason", "note"}
AGGREGATES = {"mean": statistics.fmean, "median": statistics.median, "min": min, "max": max,
              "sum": sum, "sd": statistics.stdev}           # sd: the sample standard deviation


# --- the page -------------------------------------------------------------------------------

def scanned(text: str) -> str:
    """The page with everything not scanned blanked out (same length, same line breaks)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            out.append(" " * len(line))
        elif fenced:
            m = COMMENT.search(line)
            start = m.start() if m else len(line)
            out.append(" " * start + line[start:])
        else:
            out.append(line)
    return "\n".join(out)


def numbers(text: str) -> list[tuple[int, int, str]]:
    """(start, end, token) of every number in the scanned page."""
    return [(m.start(), m.end(), m.group()) for m in NUMBER.finditer(scanned(text))]


WHITESPACE = r"\s+(?:#\s+)?"                  # a line break may continue a `#` comment


def _words(phrase: str) -> str:
    core = WHITESPACE.join(re.escape(w) for w in phrase.split())
    if not core:
        return WHITESPACE if phrase else ""
    return ((WHITESPACE if phrase[0].isspace() else "") + core
            + (WHITESPACE if phrase[-1].isspace() else ""))


def spans(page: str, phrase: str, any_number: str | None = None) -> list[tuple[int, int, int]]:
    """(start, end, where the number is) of each place `phrase` occurs in the page, any
    whitespace run matching any whitespace run. With `any_number`, that number of the phrase
    (its first occurrence) matches any number; without, the number's place is -1."""
    if any_number is None:
        return [(m.start(), m.end(), -1) for m in re.finditer(_words(phrase), page)]
    n = next(m for m in NUMBER.finditer(phrase) if m.group() == any_number)
    pattern = (_words(phrase[:n.start()]) + f"(?P<n>{NUMBER.pattern})"
               + _words(phrase[n.end():]))
    return [(m.start(), m.end(), m.start("n")) for m in re.finditer(pattern, page)]


def line_of(page: str, pos: int) -> int:
    return page.count("\n", 0, pos) + 1


# --- result files ---------------------------------------------------------------------------

def _matches(cell: str, want) -> bool:
    if cell == str(want):
        return True
    try:
        return float(cell) == float(want)
    except (TypeError, ValueError):
        return False


def _rows(path: Path) -> list[dict]:
    if path.suffix == ".csv":
        with path.open(newline="") as f:
            return list(csv.DictReader(f))
    rows = []                                                  # markdown: every pipe table
    header = None
    for line in path.read_text().splitlines():
        cells = [c.strip().strip("*").strip() for c in line.strip().strip("|").split("|")]
        if not line.lstrip().startswith("|"):
            header = None
        elif header is None:
            header = cells
        elif not set("".join(cells)) <= set("-: "):
            rows.append(dict(zip(header, cells)))
    return rows


def _cell_number(cell: str, where: str) -> float:
    m = NUMBER.search(cell or "")
    if not m:
        raise LookupError(f"{where} holds {cell!r}, not a number")
    sign = -1 if cell[:m.start()].rstrip().endswith(("-", "−")) else 1
    return sign * float(m.group().replace(",", ""))


def _table_value(path: Path, key) -> float:
    if not isinstance(key, dict) or "column" not in key or not ({"row", "where"} & set(key)):
        raise LookupError("a CSV or markdown key is {row: {column: value, …}, column: name} or "
                          "{where: {column: value, …}, column: name, agg: mean|median|min|max|"
                          "sum|sd}")
    rows = _rows(path)
    col, cond = key["column"], key.get("row", key.get("where")) or {}
    if rows and col not in rows[0]:
        raise LookupError(f"no column {col!r} (columns: {', '.join(rows[0])})")
    hit = [r for r in rows if all(_matches(r.get(c, ""), v) for c, v in cond.items())]
    if "row" in key:
        if len(hit) != 1:
            raise LookupError(f"{len(hit)} rows match {cond} (a `row` must match exactly one; "
                              f"use `where` and `agg` for several)")
        return _cell_number(hit[0][col], f"column {col!r} of row {cond}")
    if key.get("agg") not in AGGREGATES:
        raise LookupError(f"`where` needs agg: one of {', '.join(AGGREGATES)}")
    if not hit:
        raise LookupError(f"no row matches {cond}")
    return AGGREGATES[key["agg"]]([_cell_number(r[col], f"column {col!r}") for r in hit])


def _tree_value(data, key) -> float:
    parts = key if isinstance(key, list) else str(key).split(".")
    node, path = data, []
    for part in parts:
        if isinstance(node, list):
            try:
                node = node[int(part)]
            except (ValueError, IndexError):
                raise LookupError(f"{'.'.join(path) or 'the top'} is a list of {len(node)}; "
                                  f"{part!r} is no index in it") from None
        elif isinstance(node, dict) and str(part) in node:
            node = node[str(part)]
        else:
            have = ", ".join(map(str, node)) if isinstance(node, dict) else type(node).__name__
            raise LookupError(f"no {part!r} under {'.'.join(path) or 'the top'} (has: {have})")
        path.append(str(part))
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise LookupError(f"{'.'.join(path)} is {node!r}, not a number")
    return float(node)


def value(claim: dict) -> float:
    """The claim's number as its file holds it, scaled (not rounded)."""
    path = ROOT / claim["file"]
    if path.suffix == ".json":
        raw = _tree_value(json.loads(path.read_text()), claim["key"])
    elif path.suffix in (".yaml", ".yml"):
        raw = _tree_value(yaml.safe_load(path.read_text()), claim["key"])
    elif path.suffix in (".csv", ".md"):
        raw = _table_value(path, claim["key"])
    else:
        raise LookupError(f"cannot read {path.suffix} files (JSON, YAML, CSV, markdown tables)")
    return raw * float(Fraction(str(claim.get("scale", 1))))


def rounds_to(exact: float, printed: str, digits: int) -> bool:
    """`printed` (commas allowed) is `exact` rounded to `digits` decimals (negative: tens, …;
    an exponent counts: 2.8e-14 shows 15 decimals)."""
    shown = Decimal(printed.replace(",", ""))
    if max(-shown.as_tuple().exponent, 0) != max(digits, 0):
        return False
    return abs(exact - float(shown)) <= 0.5 * 10.0 ** -digits * (1 + 1e-9)


# --- the check ------------------------------------------------------------------------------

def tracked_files() -> set[str] | None:
    """Paths git tracks (with those added but not yet committed); None outside a checkout."""
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return set(out.decode().split("\0"))


def _claim_problem(c: dict, tracked: set[str] | None) -> str | None:
    extra, missing = set(c) - CLAIM_FIELDS, {"text", "file", "key", "digits"} - set(c)
    if extra or missing:
        return ((f"unknown fields {sorted(extra)} " if extra else "")
                + (f"missing {sorted(missing)} " if missing else "")
                + f"(a claim has {', '.join(sorted(CLAIM_FIELDS))})")
    if not (ROOT / c["file"]).is_file():
        return f"cites {c['file']}, which does not exist: commit the result file or fix the path"
    if tracked is not None and c["file"] not in tracked:
        return f"cites {c['file']}, which git does not track: `git add` it (a claim needs a " \
               f"committed file)"
    return None


def check_page(name: str, page: str, entry: dict, tracked: set[str] | None) -> list[str]:
    """Every problem of one covered page, each a sentence that says what to do."""
    problems = []
    tokens = numbers(page)
    owner: dict[int, list[str]] = {}                 # number's start → the entries covering it

    def where(pos):
        return f"{name}:{line_of(page, pos)}"

    def inside(start, end):
        return [t for t in tokens if start <= t[0] and t[1] <= end]

    checked = []                                     # (claim, label, its value, its number)
    for c in entry.get("claims") or []:
        label = f"claim {c.get('text')!r}"
        problem = _claim_problem(c, tracked)
        if problem is None:
            own = [t for _, _, t in numbers(c["text"])]
            want = str(c.get("number", own[0] if own else ""))
            if want not in own:
                problem = f"has no number {want!r} in its text"
        if problem is None:
            try:
                checked.append((c, label, value(c), want))
            except (LookupError, ValueError, ZeroDivisionError) as e:
                problem = f"{c['file']}, key {c['key']}: {e}"
        if problem:
            problems.append(f"docs/claims.yaml, {name}, {label}: {problem}")
            for start, end, _ in spans(page, str(c.get("text", ""))):   # one message, not two
                for pos, _, tok in inside(start, end):
                    if tok == str(c.get("number", tok)):
                        owner.setdefault(pos, []).append(label)
                        break

    def claim_at(c, label, exact, pos, printed, edited=False):
        owner.setdefault(pos, []).append(label)
        d = int(c["digits"])
        if rounds_to(exact, printed, d):
            if edited:
                problems.append(f"{where(pos)}: {printed} is {label} with its number changed, "
                                f"and its file agrees: update the claim's text in "
                                f"docs/claims.yaml")
            return
        shown = f"{exact:,.{max(d, 0)}f}" if d >= 0 else f"{round(exact, d):,.0f}"
        problems.append(f"{where(pos)}: the page says {printed} "
                        + (f"({label} with its number changed) " if edited else "")
                        + f"but {c['file']} ({c['key']}, × {c.get('scale', 1)}) gives "
                        f"{exact:.6g}, which rounds to {shown} (digits: {d}): correct the page "
                        f"(or the file, if the page is right and the file stale)")

    unfound = []
    for c, label, exact, want in checked:
        found = spans(page, c["text"])
        for start, end, _ in found:
            hit = [t for t in inside(start, end) if t[2] == want]
            if hit:
                claim_at(c, label, exact, hit[0][0], want)
            else:
                problems.append(f"{where(start)}: {label}: its number {want} is not a number "
                                f"of the scanned page here (it is in code, or part of a longer "
                                f"number); a claim belongs in prose or a comment")
        if not found:
            unfound.append((c, label, exact, want))

    for p in entry.get("prose") or []:
        label = f"prose {p.get('text')!r}"
        if set(p) - PROSE_FIELDS or "text" not in p or p.get("reason") not in REASONS:
            problems.append(f"docs/claims.yaml, {name}, {label}: a prose entry is {{text, "
                            f"reason[, note]}}, reason one of {', '.join(REASONS)}")
            continue
        found = spans(page, p["text"])
        if not found:
            problems.append(f"{name}: {label} is not on the page: update or remove the entry")
        for start, end, _ in found:
            for pos, _, _ in inside(start, end):
                owner.setdefault(pos, []).append(label)

    for c, label, exact, want in unfound:            # its words with another number: edited?
        at = {pos for _, _, pos in spans(page, c["text"], any_number=want)}
        hits = [(pos, tok) for pos, _, tok in tokens if pos in at and pos not in owner]
        if not hits:
            problems.append(f"{name}: {label} is not on the page: update the entry's text to "
                            f"the page's words or remove the entry")
        for pos, printed in hits:
            claim_at(c, label, exact, pos, printed, edited=True)

    for pos, _, tok in tokens:
        who = owner.get(pos, [])
        if not who:
            problems.append(f"{where(pos)}: {tok} is neither a claim nor prose: register it in "
                            f"docs/claims.yaml under {name} (a claim with its result file, or "
                            f"a prose entry with its reason), or reword the page")
        elif len(who) > 1:
            problems.append(f"{where(pos)}: {tok} is covered by {len(who)} entries "
                            f"({'; '.join(who)}): keep one")
    return problems


def registry() -> dict:
    return yaml.safe_load(REGISTRY.read_text())["pages"]


@pytest.mark.parametrize("name", sorted(registry()))
def test_every_number_on_the_page_is_registered_and_matches_its_file(name):
    problems = check_page(name, (ROOT / name).read_text(), registry()[name], tracked_files())
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems)


# --- the check, on pages made up for it -----------------------------------------------------

GOOD = ("# Page\n\nWe ran 5 seeds: **99.5 %** over them (`kairo x --seed 0`).\n\n"
        "```bash\nkairo x --seeds 5 --lr 0.1   # 99.5 % (see above)\n```\n")
RESULT = "benchmarks/results/tsc_attention/time_warp_smooth/ArrowHead_GunPoint/benchmark.csv"
ENTRY = {"claims": [{"text": "99.5 %", "file": RESULT, "scale": 100, "digits": 1,
                     "key": {"row": {"dataset": "GunPoint"}, "column": "kairo"}}],
         "prose": [{"text": "5 seeds", "reason": "config"},
                   {"text": "--seed 0", "reason": "command"}]}


def test_the_check_passes_a_page_whose_numbers_are_registered():
    assert check_page("page.md", GOOD, ENTRY, None) == []


def test_the_check_names_a_number_that_disagrees_with_its_file():
    page = GOOD.replace("   # 99.5 % (see above)", "")
    (problem,) = check_page("page.md", page.replace("99.5", "99.6"), ENTRY, None)
    assert problem.startswith("page.md:3: the page says 99.6 (claim '99.5 %' with its number "
                              "changed) but benchmarks/")
    assert "rounds to 99.5 (digits: 1)" in problem
    resnet = {**ENTRY["claims"][0], "key": {"row": {"dataset": "GunPoint"},
                                            "column": "ResNet (Fawaz 2019)"}}
    (problem,) = check_page("page.md", page, {**ENTRY, "claims": [resnet]}, None)
    assert problem.startswith("page.md:3: the page says 99.5 but ") and "99.1 (digits" in problem


def test_the_check_names_an_unregistered_number_a_missing_file_and_a_stale_entry():
    page = GOOD.replace("(see above)", "(3 workers)")
    assert check_page("page.md", page, ENTRY, None) == [
        "page.md:6: 3 is neither a claim nor prose: register it in docs/claims.yaml under "
        "page.md (a claim with its result file, or a prose entry with its reason), or reword "
        "the page"]
    gone = {**ENTRY, "claims": [{**ENTRY["claims"][0], "file": "benchmarks/results/no.csv"}]}
    assert "which does not exist" in check_page("page.md", GOOD, gone, None)[0]
    stale = {**ENTRY, "prose": ENTRY["prose"] + [{"text": "7 folds", "reason": "config"}]}
    assert "'7 folds' is not on the page" in check_page("page.md", GOOD, stale, None)[0]


def test_the_check_rounds_as_printed():
    assert rounds_to(0.98257 * 100, "98.26", 2) and not rounds_to(0.98257 * 100, "98.3", 2)
    assert rounds_to(102.1, "100", -1) and not rounds_to(106, "100", -1)
    assert rounds_to(2952, "2,952", 0) and not rounds_to(2952.0, "2,952.0", 0)
    assert rounds_to(2.842e-14, "3e-14", 14) and not rounds_to(2.842e-14, "1e-14", 14)
    assert rounds_to(1.06e-9, "1.1e-9", 10) and not rounds_to(1.06e-9, "1.1e-9", 9)


def test_code_is_not_scanned_but_its_comments_are():
    assert [t for _, _, t in numbers(GOOD)] == ["5", "99.5", "0", "99.5"]
    assert [t for _, _, t in numbers("iCE40, sha256, narma10, 2.13.0, x_1")] == ["2.13.0"]
    assert [t for _, _, t in numbers("p = 1.1e-9, 1e2 steps, 3e")] == ["1.1e-9", "1e2", "3"]


def test_a_negative_cell_is_negative_and_its_printed_minus_is_a_scale_of_minus_1():
    assert _cell_number("-0.18", "x") == -0.18 and _cell_number("**−0.16**", "x") == -0.16
    assert _cell_number("0.5-0.7", "x") == 0.5 and _cell_number("0.16 ± 0.06", "x") == 0.16
    summary = "benchmarks/results/fly_spiking/summary.csv"
    claim = {"text": "−0.18 (ipsilateral)", "file": summary, "scale": -1, "digits": 2,
             "key": {"row": {"controller": "connectome", "wiring": "ipsilateral"},
                     "column": "turning_index_mean"}}
    page = "# Page\n\nIt turns away: −0.18 (ipsilateral).\n"
    assert check_page("page.md", page, {"claims": [claim]}, None) == []
    assert "rounds to -0.18" in check_page("page.md", page, {"claims": [
        {**claim, "scale": 1}]}, None)[0]


def test_a_where_key_aggregates_its_rows_and_sd_is_the_sample_standard_deviation():
    rows = "benchmarks/results/logic_learned_rewire.csv"
    key = {"where": {"config": "h8krwshT"}, "column": "test_circuit"}
    mean = value({"file": rows, "key": {**key, "agg": "mean"}, "scale": 100})
    sd = value({"file": rows, "key": {**key, "agg": "sd"}, "scale": 100})
    assert rounds_to(mean, "98.26", 2) and rounds_to(sd, "0.10", 2)
    assert sd == pytest.approx(statistics.stdev([98.34, 98.15, 98.28]))


if __name__ == "__main__":
    pages = registry()
    tracked = tracked_files()
    for name in sys.argv[1:] or sorted(pages):
        entry = pages.get(name, {})
        print("\n".join(check_page(name, (ROOT / name).read_text(), entry, tracked))
              or f"{name}: every number registered and matching")
