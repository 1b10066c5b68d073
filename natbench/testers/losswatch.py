"""Whether a running phase-2 trial has failed already (:class:`~natbench.plugins.tester.LossStop`), from its counts
sampled as it runs: the part of stopping a failed trial that every tester shares.

A tester samples, every few milliseconds, the frames each direction sent and the valid frames it received so far,
and hands them to :meth:`LossWatch.observe`. The difference, the *gap*, holds the frames in flight, the frames the
DUT holds in its queues and the frames it lost. On a DUT that keeps up, the gap moves about its smallest value
(frames in flight come and go); a lost frame never comes back. The watch says stop when in some direction the gap
stayed more than the full trial's ``allowance`` plus a ``margin`` above its smallest value for a whole ``window``:
that many frames are missing and stay missing. Samples taken before every direction has sent a frame set no
baseline. A DUT that holds more than the margin in its queues for a whole window is stopped too: the receive wait
then delivers the frames, the stop proves nothing, and the trial is measured again in full.

The decision is a forecast, not the verdict: a queue drains in the receive wait that follows the stop, and the
trial is judged on its final counts (:func:`natbench.judging.judge_stopped`). A loss early in the trial
that stays above the threshold stops it as well as a steady one: the full trial would have begun with the same
loss. The memory is a few numbers per direction.
"""

from __future__ import annotations

from collections.abc import Sequence

from natbench.plugins.tester import LossStop

SAMPLE_PERIOD = 0.02
"""Seconds between two samples of a watched trial's counts, in every tester and model that watches one."""


class LossWatch:
    """Counts sampled during one trial -> whether to stop it (:meth:`observe`)."""

    def __init__(self, stop: LossStop, directions: int) -> None:
        if directions < 1:
            raise ValueError("a loss watch needs at least one direction")
        self.stop = stop
        self.directions = directions
        self._least: list[int] | None = None
        self._above_since: list[float | None] = [None] * directions
        self.stopped_at: float | None = None
        """Seconds into the trial of the sample that decided the stop (None: not stopped)."""
        self.missing: tuple[int, ...] = (0,) * directions
        """Per direction, how far the gap at the latest sample lay above its smallest value in the trial."""

    def observe(self, t: float, sent: Sequence[int], valid: Sequence[int]) -> bool:
        """Take the sample at ``t`` seconds into the trial (per direction: frames sent, valid frames received so
        far); True when the trial has failed by :class:`~natbench.plugins.tester.LossStop`'s rule (and from then on)."""
        if self.stopped_at is not None:
            return True
        if len(sent) != self.directions or len(valid) != self.directions:
            raise ValueError(f"a sample needs counts for {self.directions} direction(s)")
        if min(int(s) for s in sent) <= 0:
            return False  # a direction has not begun: its frames in flight are not known yet (no baseline)
        gap = [int(s) - int(v) for s, v in zip(sent, valid, strict=True)]
        least = gap if self._least is None else [min(a, b) for a, b in zip(self._least, gap, strict=True)]
        self._least = least
        self.missing = tuple(max(g - m, 0) for g, m in zip(gap, least, strict=True))
        threshold = self.stop.allowance + max(self.stop.margin, 0.0)
        for i, missing in enumerate(self.missing):
            if missing <= threshold:
                self._above_since[i] = None
                continue
            since = self._above_since[i]
            if since is None:
                self._above_since[i] = t
            elif t - since >= self.stop.window:
                self.stopped_at = t
                return True
        return False
