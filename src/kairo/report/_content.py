"""What a run page shows, read from the run's folder: its figures, videos, CSV tables (first
rows), short text files, and for a logic circuit its gate counts, FPGA LUT counts and the
verification verdicts. Pure reading (csv, json; the circuit through kairo.logic's NumPy
netlist): no pandas, no plotting."""

from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Cell", "Table", "RunContent", "run_content", "fmt", "local_time", "cell",
           "FIGURES", "VIDEOS"]

FIGURES = (".png", ".svg", ".jpg", ".jpeg", ".gif")
VIDEOS = (".mp4", ".webm")
TEXTS = (".txt", ".md")
_MAX_TEXT = 20_000          # a longer text file (a tool's log) is listed, not shown
_MAX_CELL = 200


def fmt(v) -> str:
    """A value as a table shows it: numbers to four significant places, lists and dicts as
    compact JSON (cut at 200 characters), None as a dash."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == int(v) and abs(v) < 1e15:
            return str(int(v))
        if abs(v) >= 1e5 or abs(v) < 1e-3:
            return f"{v:.4g}"
        return f"{v:.4f}".rstrip("0").rstrip(".")
    if isinstance(v, (list, tuple, dict)):
        text = json.dumps(v, default=str, separators=(",", ":"))
    else:
        text = str(v)
    return text if len(text) <= _MAX_CELL else text[:_MAX_CELL - 1] + "…"


def local_time(iso: str) -> str:
    try:
        return _dt.datetime.fromisoformat(iso).astimezone().strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError):
        return iso or "—"


@dataclass(frozen=True)
class Cell:
    """A table cell: its text, the number it sorts by (None: sorted as text) and an optional
    link (relative); ``links``, ``((text, href), …)``, shows several links instead."""

    text: str
    sort: float | None = None
    href: str | None = None
    links: tuple = ()


def cell(v, href: str | None = None) -> Cell:
    """A cell of a value; a number (or a CSV string that reads as one) sorts numerically."""
    num = None
    if isinstance(v, bool):
        num = float(v)
    elif isinstance(v, (int, float)):
        num = float(v)
    elif isinstance(v, str):
        try:
            num = float(v)
            v = int(v) if v.strip().lstrip("-").isdigit() else num
        except ValueError:
            pass
    if num is not None and not math.isfinite(num):
        num = None
    return Cell(fmt(v), num, href)


@dataclass
class Table:
    """A table to render: a title, the header, rows of :class:`Cell`, how many rows the
    source has, and where the full file is (relative link)."""

    header: list[str]
    rows: list[list[Cell]]
    title: str = ""
    total: int | None = None
    src: str | None = None

    @property
    def left_out(self) -> int:
        return 0 if self.total is None else max(0, self.total - len(self.rows))


@dataclass
class RunContent:
    figures: list[dict] = field(default_factory=list)      # {src, name}
    videos: list[dict] = field(default_factory=list)       # {src, name}
    tables: list[Table] = field(default_factory=list)
    texts: list[dict] = field(default_factory=list)        # {name, text}
    others: list[dict] = field(default_factory=list)       # {name, size, src or None}
    circuit: list[Table] = field(default_factory=list)
    circuit_notes: list[str] = field(default_factory=list)
    copy: list[tuple[Path, str]] = field(default_factory=list)   # (source, name in the page)


def read_csv(path: Path, max_rows: int, title: str = "", src: str | None = None) -> Table:
    """The header and first ``max_rows`` rows of a CSV file, and its row count."""
    rows, total = [], 0
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.reader(f)
        header = next(reader, [])
        for row in reader:
            total += 1
            if total <= max_rows:
                rows.append([cell(c) for c in row])
    return Table(header=header, rows=rows, title=title or path.name, total=total, src=src)


def _file(folder: Path | None, name: str) -> Path | None:
    p = Path(name) if Path(name).is_absolute() else (folder / name if folder else None)
    return p if p is not None and p.is_file() else None


def _load_json(path: Path | None):
    if path is None:
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _pairs(title: str, items) -> Table:
    return Table(header=["", "value"], rows=[[Cell(str(k)), cell(v)] for k, v in items],
                 title=title)


def _circuit(folder: Path | None, files: list[str], content: RunContent) -> None:
    """Gate counts of the circuit (circuit.json), LUT counts and fit (fpga.json) and the
    verdict of every back end (verify.json)."""
    names = {Path(f).name: f for f in files}
    if "circuit.json" in names:
        from kairo import KairoError
        from kairo.logic import Circuit

        try:
            stats = Circuit.load(_file(folder, names["circuit.json"])).stats()
        except (KairoError, OSError, TypeError, ValueError) as exc:
            content.circuit_notes.append(f"circuit.json could not be read: {exc}")
        else:
            by_op = stats.pop("gates_by_op", {})
            content.circuit.append(_pairs("netlist", stats.items()))
            content.circuit.append(Table(
                header=["gate", "count"], title="gates by operation",
                rows=[[Cell(op), cell(n)] for op, n in sorted(by_op.items(),
                                                              key=lambda kv: -kv[1])]))
    fpga = _load_json(_file(folder, names["fpga.json"])) if "fpga.json" in names else None
    if isinstance(fpga, dict):
        syn, core = fpga.get("synthesis") or {}, fpga.get("core") or {}
        pnr = fpga.get("place_and_route") or {}
        target = fpga.get("target") or {}
        rows = [("target", target.get("name")), ("gates", (fpga.get("circuit") or {}).get(
                "n_gates")), ("LUT4 (design)", syn.get("lut4")), ("LUT4 (circuit core)",
                core.get("lut4")), ("carry cells", syn.get("carry")),
                ("flip-flops", syn.get("dff")),
                ("logic cells used", f"{pnr.get('lc_used')} of {pnr.get('lc_available')}"
                 if pnr.get("ran") else "not placed"),
                ("fmax (MHz)", fpga.get("fmax_mhz")), ("fits", fpga.get("fits")),
                ("why", fpga.get("fit_reason")),
                ("simulated bit-exact", (fpga.get("simulation") or {}).get("bit_exact"))]
        content.circuit.append(_pairs("FPGA (LUT counts)", [r for r in rows
                                                            if r[1] is not None]))
    ver = _load_json(_file(folder, names["verify.json"])) if "verify.json" in names else None
    if isinstance(ver, dict):
        rows = [[Cell(name), Cell("bit-exact" if b.get("bit_exact") else "MISMATCH"),
                 cell(b.get("samples")), Cell(fmt(b.get("simulator") or b.get("width") or ""))]
                for name, b in (ver.get("backends") or {}).items() if isinstance(b, dict)]
        content.circuit.append(Table(header=["back end", "verdict", "samples", "detail"],
                                     rows=rows, title="verification"))
        verdict = "every back end bit-exact" if ver.get("all_bit_exact") else \
            "NOT every back end bit-exact"
        content.circuit_notes.append(f"verification: {verdict}; reference accuracy "
                                     f"{fmt(ver.get('accuracy'))} on {fmt(ver.get('n_samples'))}"
                                     f" test images")


def run_content(folder: Path | None, files: list[str], *, max_rows: int = 50,
                href=None) -> RunContent:
    """What to show of a run's ``files`` (relative to ``folder``, or absolute). ``href(name)``
    is the link a page uses for a file (default: the name itself, for a page that has the
    files copied beside it; see :attr:`RunContent.copy`)."""
    from urllib.parse import quote

    content = RunContent()
    link_others = href is not None
    link = href or (lambda name: name)
    href = lambda name: link(quote(name))  # noqa: E731  (a space or # in a file name)
    seen = set()
    for name in files:
        path = _file(folder, name)
        if path is None:
            continue
        # a folder-less command's file is absolute: the page holds it under its own name
        shown = path.name if Path(name).is_absolute() else name
        if shown in seen or shown == "index.html":
            continue
        seen.add(shown)
        suffix = path.suffix.lower()
        if suffix in FIGURES:
            content.figures.append({"src": href(shown), "name": shown})
            content.copy.append((path, shown))
        elif suffix in VIDEOS:
            content.videos.append({"src": href(shown), "name": shown})
            content.copy.append((path, shown))
        elif suffix == ".csv":
            content.tables.append(read_csv(path, max_rows, shown, href(shown)))
            content.copy.append((path, shown))
        elif suffix in TEXTS and path.stat().st_size <= _MAX_TEXT:
            content.texts.append({"name": shown, "text": path.read_text(errors="replace")})
        else:
            # beside the run's folder (the demo's page) a link works; a site copies only
            # what it shows, so there the file is named, not linked
            content.others.append({"name": shown, "size": path.stat().st_size,
                                   "src": href(shown) if link_others else None})
    _circuit(folder, files, content)
    return content
