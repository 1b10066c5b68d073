"""The short trials a phase-2 metric offers its searches: :class:`ShortTrialSettings` (a metric whose settings
include it can run trials shorter than its ``duration``; the fast search narrows with them, MLRsearch starts with
them)."""

from __future__ import annotations

from pydantic import Field

from natbench.config.model import SchemaModel


class ShortTrialSettings(SchemaModel):
    """The short trials of ``algorithm: fast`` (and MLRsearch's first ones)."""

    short_duration: float = Field(default=1.0, gt=0)
    """``algorithm: fast``: seconds of the short phase-2 trials that narrow the search (full trials, which alone
    decide the result, last ``duration``); at or above ``duration`` every trial is a full one. ``algorithm: mlr``:
    the ``rfc2544`` preset's initial trial duration."""
    short_fail: bool = True
    """``algorithm: fast``: a short trial that lost more frames in a direction than a full trial at its rate may lose
    proves that rate an upper bound, and short trials are tried before full ones while that pays (docs/engine.md,
    "The short-fail rule"); false: short trials only narrow, every upper bound is a failed full trial."""
    stop_failed: bool = True
    """``algorithm: fast`` with ``short_fail``: a full trial ends as soon as it has failed, when the tester can tell
    (a direction steadily losing more frames than the full trial may lose; docs/engine.md, "Stopping a failed full
    trial"); false: every full trial runs its whole duration."""
