"""Every figure natbench returns shows itself through IPython's display protocol (PNG; SVG when asked).

IPython's own display formatter (what a Jupyter kernel runs on a cell's value or ``display(...)``) is asked for
each figure's representations here, in this process; tests/test_notebook.py does the same in a real kernel.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from matplotlib.figure import Figure

import natbench
from natbench.metrics.teardown import TEARDOWN
from natbench.report import plots
from natbench.report.figure import NatbenchFigure, display_formats
from natbench.report.headroom import cpu_headroom
from natbench.report.load import Run

formatters = pytest.importorskip("IPython.core.formatters", reason="IPython comes with ipykernel (dev extra)")


@pytest.fixture(autouse=True)
def _default_formats() -> Iterator[None]:
    """Each test starts from, and leaves, the default (PNG only)."""
    before = display_formats()
    display_formats("png")
    yield
    display_formats(*before)


def _mime(obj: Any) -> dict[str, Any]:
    """The representations IPython's display formatter makes of ``obj`` (as a kernel sends them)."""
    data, _ = formatters.DisplayFormatter().format(obj)
    return data


def _figure_makers(fig2: Run, fig5: Run) -> dict[str, Callable[[], Figure]]:
    """One call of every function of natbench.report.plots that returns a figure."""
    mt = next(iter(plots.monitored_trials(fig2.trials)))
    head = cpu_headroom(fig2.trials, fig2.points)
    return {
        "plot_cores": lambda: plots.plot_cores(fig2.summary, fig2.points, "cps"),
        "plot_connections": lambda: plots.plot_connections(fig5.summary, fig5.points, "teardown"),
        "plot_own": lambda: plots.plot_own(TEARDOWN, fig5.figures("teardown"), fig5.points),
        "plot_cpu_idle": lambda: plots.plot_cpu_idle(mt.extra, mt.dut),
        "plot_cpu_headroom": lambda: plots.plot_cpu_headroom(
            head, str(head["metric"].iloc[0]), str(head["dut"].iloc[0]), "headroom"
        ),
    }


def test_every_plot_function_returns_a_figure_that_shows_as_png(fig2_dir: Path, fig5_dir: Path) -> None:
    fig2, fig5 = natbench.load(fig2_dir), natbench.load(fig5_dir)
    makers = _figure_makers(fig2, fig5)
    returning_figures = {
        name
        for name, f in inspect.getmembers(plots, inspect.isfunction)
        if f.__module__ == plots.__name__ and inspect.signature(f).return_annotation in ("Figure", Figure)
    }
    assert returning_figures == set(makers), "a plot function this test does not display"
    figures = {name: make() for name, make in makers.items()}
    figures |= {f"run.plot({m!r})": fig2.plot(m) for m in fig2.metrics}
    figures |= {"run.plot('teardown')": fig5.plot("teardown")}
    for name, fig in figures.items():
        assert isinstance(fig, NatbenchFigure), name
        data = _mime(fig)
        assert data["image/png"][:8] == b"\x89PNG\r\n\x1a\n", name
        assert "image/svg+xml" not in data, name
        assert data["text/plain"].startswith("<NatbenchFigure size"), name


def test_svg_is_a_switch_for_all_figures_or_one(fig2_dir: Path) -> None:
    run = natbench.load(fig2_dir)
    fig = run.plot("cps")
    assert display_formats("png", "svg") == ("png", "svg")
    data = _mime(fig)
    assert data["image/png"][:4] == b"\x89PNG" and "<svg" in data["image/svg+xml"]
    assert display_formats("svg") == ("svg",)
    data = _mime(run.plot("throughput"))
    assert "image/png" not in data and "<svg" in data["image/svg+xml"]
    one = run.plot("cps")
    one.formats = ("png",)  # this figure only
    assert "image/svg+xml" not in _mime(one) and "image/png" in _mime(one)
    assert "image/png" not in _mime(fig)  # the others keep the switch
    with pytest.raises(ValueError, match="one or more of png, svg"):
        display_formats("pdf")
    assert display_formats() == ("svg",)


def test_a_figure_drawn_on_the_users_axes_stays_theirs(fig2_dir: Path) -> None:
    run = natbench.load(fig2_dir)
    own = Figure()
    fig = plots.plot_cores(run.summary, run.points, "cps", ax=own.add_subplot())
    assert fig is own and not isinstance(fig, NatbenchFigure)
