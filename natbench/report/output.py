"""Write a run's report files into a directory (what ``natbench report`` does).

A report is never written through a symbolic link: the report directory itself (``RUN_DIR/report`` or ``--out``)
and its ``plots/`` must be real directories, opened without following a link, and every file is written into
them by name relative to the open directory (a new temporary file created exclusively, then renamed over the
old one, which replaces a link in its place instead of writing where it leads). A link where the directory
belongs is refused with :class:`~natbench.errors.ConfigError` before anything is printed or written: it may
lead into another run, a system directory or someone else's files; a parent directory that is a link (``results/
latest``) is followed as the path says.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from natbench.errors import ConfigError
from natbench.report import plots
from natbench.report.html import ReportFigure, render_html, run_figures

if TYPE_CHECKING:
    from natbench.report.load import Run


_EXT = {"text": "txt", "md": "md", "tex": "tex", "csv": "csv"}

PLOTS = "plots"
"""The subdirectory of a report that holds its plots."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()[:60] or "table"


def _link_error(path: Path, option: str | None) -> ConfigError:
    return ConfigError(
        f"{path} is a symbolic link: a report is never written through one (it may lead into another run or"
        " someone else's files); remove it, or give the directory it leads to with --out",
        field=option,
    )


def check_report_dir(out: Path, option: str | None = None) -> None:
    """ConfigError when ``out`` or its ``plots/`` is a symbolic link (``option``: the flag that named ``out``)."""
    for path in (out, out / PLOTS):
        with contextlib.suppress(OSError):
            if stat.S_ISLNK(os.lstat(path).st_mode):
                raise _link_error(path, option)


class _Directory:
    """An open directory that files are written into by name, never through a link."""

    def __init__(self, path: Path, fd: int, option: str | None) -> None:
        self.path = path
        self.fd = fd
        self.option = option

    @classmethod
    @contextlib.contextmanager
    def opened(cls, path: Path, option: str | None, parent: _Directory | None = None) -> Iterator[_Directory]:
        """``path`` created when missing (its parents too) and opened without following a link."""
        where = parent.fd if parent is not None else None
        name: str | Path = path.name if parent is not None else path
        if parent is None:
            path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, 0o755, dir_fd=where)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=where)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENOTDIR) and stat.S_ISLNK(os.lstat(name, dir_fd=where).st_mode):
                raise _link_error(path, option) from None
            raise
        try:
            yield cls(path, fd, option)
        finally:
            os.close(fd)

    def write(self, name: str, data: bytes) -> Path:
        """Write ``data`` as the file ``name`` (a temporary file created exclusively, then renamed over it)."""
        tmp = f".{name}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=self.fd)  # left by an earlier process of this pid; a link is removed, not followed
        fd = os.open(tmp, _NEW_FILE, 0o644, dir_fd=self.fd)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=self.fd)
            raise
        return self.path / name


def write_report(
    run: Run, out: Path, formats: Iterable[str], *, scale: str = "1", option: str | None = None
) -> list[Path]:
    """Write tables in each format (``tables.txt``, ``tables.md``, ``tables.tex`` as a standalone
    document, one CSV per table), plots as PNG and SVG under ``plots/``, and ``report.html``
    when ``html`` is among the formats. Returns the paths written. ConfigError when ``out`` or its ``plots/`` is
    a symbolic link (``option``: the flag that named ``out``, for the message); OSError when writing fails."""
    fmts = list(dict.fromkeys(formats))
    tables = run.tables(scale)
    written: list[Path] = []
    with _Directory.opened(out, option) as d:
        for fmt in fmts:
            if fmt in ("text", "md"):
                sep = "\n" if fmt == "text" else "\n\n"
                written.append(d.write(f"tables.{_EXT[fmt]}", sep.join(t.render(fmt) for t in tables).encode()))
            elif fmt == "tex":
                body = "\n".join(t.to_latex() for t in tables)
                doc = f"\\documentclass{{article}}\n\\begin{{document}}\n{body}\\end{{document}}\n"
                written.append(d.write("tables.tex", doc.encode()))
            elif fmt == "csv":
                for t in tables:
                    written.append(d.write(f"{_slug(t.key)}.csv", t.to_csv().encode()))
        images: list[tuple[ReportFigure, bytes]] = []
        figures = run_figures(run)
        if figures:
            with _Directory.opened(out / PLOTS, option, parent=d) as p:
                for fig in figures:
                    png = plots.figure_bytes(fig.figure, "png")
                    written.append(p.write(f"{_slug(fig.key)}.png", png))
                    written.append(p.write(f"{_slug(fig.key)}.svg", plots.figure_bytes(fig.figure, "svg")))
                    images.append((fig, png))
        if "html" in fmts:
            written.append(d.write("report.html", render_html(run, scale, images=images).encode()))
    return written
