"""The forwarding rate of a trial's second half, from its counts sampled as it ran (``PhaseResult.tail_rates``).

A DUT offered more than it can forward first fills its queues (or spends its token bucket) and then forwards at
its capacity; a trial's whole count mixes the two, its second half shows the capacity alone. A tester samples,
every :data:`~natbench.testers.losswatch.SAMPLE_PERIOD` seconds, each direction's frames sent and valid frames
received so far and hands them to :meth:`TailRate.observe`; :meth:`TailRate.rates` fits a line through the valid
counts of the samples in the second half of the sending (from the first sample that had sent in every direction to
the last one taken before the sending ended: the one before the last sample whose counts of sent frames had grown)
and returns its slopes. Samples taken after the sending ended
are left out: the receive wait drains the queues, which says nothing of the rate.

Memory is bounded whatever the trial's length: past :data:`MAX_SAMPLES` samples, every other one is dropped and
only every other later one kept (the fit needs a few dozen, not thousands).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

MAX_SAMPLES = 512
"""Samples a :class:`TailRate` keeps at most (about 10 s of them at the sampling period; longer trials keep every
second, fourth, ... sample)."""
MIN_TAIL_SAMPLES = 5
"""Samples the second half must hold for a rate to be given (fewer: no rate; a trial of a tenth of a second)."""
RECENT_SAMPLES = 64
"""The latest samples a :class:`TailRate` keeps as they came, whatever it thinned: the stop's last window
(:meth:`TailRate.shortfalls`) is measured from them (over a second of them at the sampling period)."""

Sample = tuple[float, tuple[int, ...], tuple[int, ...]]
"""(seconds into the trial, frames sent per direction, valid frames received per direction)."""


class TailRate:
    """Counts sampled during one trial -> per direction, the valid frames per second of its second half."""

    def __init__(self, directions: int) -> None:
        if directions < 1:
            raise ValueError("a tail rate needs at least one direction")
        self.directions = directions
        self._samples: list[Sample] = []
        self._recent: deque[Sample] = deque(maxlen=RECENT_SAMPLES)
        self._every = 1
        self._seen = 0
        self._last_sent: tuple[int, ...] | None = None
        self._last_t: float | None = None
        self._end: float | None = None
        """Time of the latest sample known to lie within the sending: the one before the latest sample whose sent
        counts had grown (the sending may have ended anywhere between the two)."""

    def observe(self, t: float, sent: Sequence[int], valid: Sequence[int]) -> None:
        """Take the sample at ``t`` seconds into the trial (per direction: frames sent, valid frames received)."""
        if len(sent) != self.directions or len(valid) != self.directions:
            raise ValueError(f"a sample needs counts for {self.directions} direction(s)")
        s = tuple(int(x) for x in sent)
        if self._last_sent is not None and s != self._last_sent:
            self._end = self._last_t
        self._last_sent, self._last_t = s, float(t)
        if min(s) <= 0:
            return  # the sending has not begun in every direction
        self._seen += 1
        taken = (float(t), s, tuple(int(x) for x in valid))
        self._recent.append(taken)
        if (self._seen - 1) % self._every:
            return
        self._samples.append(taken)
        if len(self._samples) > MAX_SAMPLES:
            self._samples = self._samples[::2]
            self._every *= 2

    def rates(self) -> tuple[float, ...] | None:
        """Per direction, the least-squares slope of the valid counts over the second half of the sending (frames per
        second); None when that half holds fewer than :data:`MIN_TAIL_SAMPLES` samples."""
        tail = self._second_half()
        return _slopes(tail, 2) if tail is not None else None

    def shortfalls(self, window: float) -> tuple[float, ...] | None:
        """Per direction, frames per second the DUT forwarded below what it was sent (the slope of the sent counts
        less that of the valid ones) that held both over the second half of the sending and over its last ``window``
        seconds: the smaller of the two, never below 0. A DUT short of the rate for good (a queue filling, a loss)
        shows it in both; a stall it caught up with, a rise of its latency, shows in the second half and is gone, or
        reversed, in the last window. None when either span holds fewer than :data:`MIN_TAIL_SAMPLES` samples."""
        half = self._second_half()
        if half is None or self._end is None:
            return None
        end = self._end
        last = [x for x in self._recent if end - window <= x[0] <= end]
        if len(last) < MIN_TAIL_SAMPLES:
            return None
        spans = [_slopes(half, 1), _slopes(half, 2), _slopes(last, 1), _slopes(last, 2)]
        if any(s is None for s in spans):
            return None
        sent_h, valid_h, sent_w, valid_w = (s or () for s in spans)
        return tuple(
            max(min(sh - vh, sw - vw), 0.0) for sh, vh, sw, vw in zip(sent_h, valid_h, sent_w, valid_w, strict=True)
        )

    def _second_half(self) -> list[Sample] | None:
        """The samples of the second half of the sending (None: fewer than :data:`MIN_TAIL_SAMPLES`)."""
        if not self._samples or self._end is None:
            return None
        start, end = self._samples[0][0], self._end
        tail = [x for x in self._samples if (start + end) / 2 <= x[0] <= end]
        return tail if len(tail) >= MIN_TAIL_SAMPLES else None


def _slopes(samples: Sequence[Sample], which: int) -> tuple[float, ...] | None:
    """Per direction, the least-squares slope over ``samples`` of the sent (``which`` 1) or valid (2) counts; None when
    their times do not vary."""
    ts = [x[0] for x in samples]
    counts = [x[1] if which == 1 else x[2] for x in samples]
    mean_t = sum(ts) / len(ts)
    var = sum((t - mean_t) ** 2 for t in ts)
    if var <= 0:
        return None
    out = []
    for i in range(len(counts[0])):
        vs = [c[i] for c in counts]
        mean_v = sum(vs) / len(vs)
        out.append(sum((t - mean_t) * (v - mean_v) for t, v in zip(ts, vs, strict=True)) / var)
    return tuple(out)
