"""Write a run's report files into a directory (what ``natbench report`` does)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from natbench.report import plots
from natbench.report.html import ReportFigure, render_html, run_figures

if TYPE_CHECKING:
    from natbench.report.load import Run

__all__ = ["write_report"]

_EXT = {"text": "txt", "md": "md", "tex": "tex", "csv": "csv"}


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()[:60] or "table"


def _write(path: Path, text: str) -> Path:
    """Write atomically (temp file + rename) so a report is never left half-written."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
    return path


def _write_bytes(path: Path, data: bytes) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def write_report(run: Run, out: Path, formats: Iterable[str], *, scale: str = "1") -> list[Path]:
    """Write tables in each format (``tables.txt``, ``tables.md``, ``tables.tex`` as a standalone
    document, one CSV per table), plots as PNG and SVG under ``plots/``, and ``report.html``
    when ``html`` is among the formats. Returns the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    fmts = list(dict.fromkeys(formats))
    tables = run.tables(scale)
    written: list[Path] = []
    for fmt in fmts:
        if fmt in ("text", "md"):
            sep = "\n" if fmt == "text" else "\n\n"
            written.append(_write(out / f"tables.{_EXT[fmt]}", sep.join(t.render(fmt) for t in tables)))
        elif fmt == "tex":
            body = "\n".join(t.to_latex() for t in tables)
            doc = f"\\documentclass{{article}}\n\\begin{{document}}\n{body}\\end{{document}}\n"
            written.append(_write(out / "tables.tex", doc))
        elif fmt == "csv":
            for t in tables:
                written.append(_write(out / f"{_slug(t.key)}.csv", t.to_csv()))
    images: list[tuple[ReportFigure, bytes]] = []
    for fig in run_figures(run):
        stem = out / "plots" / _slug(fig.key)
        stem.parent.mkdir(parents=True, exist_ok=True)
        png = plots.figure_bytes(fig.figure, "png")
        written.append(_write_bytes(stem.with_suffix(".png"), png))
        written.append(_write_bytes(stem.with_suffix(".svg"), plots.figure_bytes(fig.figure, "svg")))
        images.append((fig, png))
    if "html" in fmts:
        written.append(_write(out / "report.html", render_html(run, scale, images=images)))
    return written
