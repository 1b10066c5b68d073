"""The one kind of figure natbench returns: a matplotlib figure that shows itself wherever it is displayed.

Every figure natbench builds (``run.plot``, every ``plot_*`` function of :mod:`natbench.report.plots`) is a
:class:`NatbenchFigure`. It is built with matplotlib's object API, never pyplot, so scripts, ``natbench report``
and tests render it without a display (through Agg, when it is saved). Jupyter (classic and Lab), VS Code and any
other front end that asks IPython's display protocol for a rich representation get an image from the figure itself:
``_repr_png_`` (PNG, the default) and ``_repr_svg_`` (SVG, when asked for). Nothing has to be typed first (no
``%matplotlib inline``), nothing is registered in the user's IPython, and a notebook's own matplotlib set-up is left
alone: where the inline backend has registered its own PNG formatter for figures, IPython uses that one.

The formats (the switch, documented in docs/results.md)::

    from natbench.report.figure import NatbenchFigure, display_formats

    display_formats("png", "svg")   # every figure shows as PNG and SVG (the front end picks; Lab shows the SVG)
    display_formats("svg")          # SVG only
    fig.formats = ("png",)          # this figure only
"""

from __future__ import annotations

import io

from matplotlib.figure import Figure

DISPLAY_FORMATS = ("png", "svg")
"""The formats a figure can show itself as."""

DPI = 110
"""Resolution of the PNG (a 7 x 4.2 inch plot is 770 x 462 pixels), in a notebook as in a report."""


def figure_bytes(fig: Figure, fmt: str = "png", dpi: int = DPI) -> bytes:
    """The figure rendered to PNG or SVG bytes (no display needed)."""
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=dpi)
    return buf.getvalue()


def _checked(formats: tuple[str, ...]) -> tuple[str, ...]:
    unknown = [f for f in formats if f not in DISPLAY_FORMATS]
    if unknown or not formats:
        raise ValueError(f"display formats are one or more of {', '.join(DISPLAY_FORMATS)}; got {formats!r}")
    return tuple(dict.fromkeys(formats))


class NatbenchFigure(Figure):
    """A matplotlib figure that gives IPython's display protocol a PNG (and, when asked, an SVG) of itself."""

    formats: tuple[str, ...] = ("png",)
    """The formats figures show themselves as (:func:`display_formats` sets it for all; set on one figure's
    instance, it holds for that figure only)."""

    def _repr_png_(self) -> bytes | None:
        """The PNG a notebook shows (None when PNG is not among :attr:`formats`)."""
        return figure_bytes(self, "png") if "png" in self.formats else None

    def _repr_svg_(self) -> str | None:
        """The SVG a notebook shows (None unless SVG is among :attr:`formats`)."""
        return figure_bytes(self, "svg").decode() if "svg" in self.formats else None


def display_formats(*formats: str) -> tuple[str, ...]:
    """Set how every :class:`NatbenchFigure` shows itself in a notebook (``"png"``, ``"svg"`` or both; ValueError
    for anything else); without arguments, return the current formats."""
    if formats:
        NatbenchFigure.formats = _checked(formats)
    return NatbenchFigure.formats
