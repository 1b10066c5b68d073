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

from collections.abc import Sequence

__all__ = ["MAX_SAMPLES", "MIN_TAIL_SAMPLES", "TailRate"]

MAX_SAMPLES = 512
"""Samples a :class:`TailRate` keeps at most (about 10 s of them at the sampling period; longer trials keep every
second, fourth, ... sample)."""
MIN_TAIL_SAMPLES = 5
"""Samples the second half must hold for a rate to be given (fewer: no rate; a trial of a tenth of a second)."""


class TailRate:
    """Counts sampled during one trial -> per direction, the valid frames per second of its second half."""

    def __init__(self, directions: int) -> None:
        if directions < 1:
            raise ValueError("a tail rate needs at least one direction")
        self.directions = directions
        self._samples: list[tuple[float, tuple[int, ...], tuple[int, ...]]] = []
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
        if (self._seen - 1) % self._every:
            return
        self._samples.append((float(t), s, tuple(int(x) for x in valid)))
        if len(self._samples) > MAX_SAMPLES:
            self._samples = self._samples[::2]
            self._every *= 2

    def rates(self) -> tuple[float, ...] | None:
        """Per direction, the least-squares slope of the valid counts over the second half of the sending (frames per
        second); None when that half holds fewer than :data:`MIN_TAIL_SAMPLES` samples."""
        if not self._samples or self._end is None:
            return None
        start, end = self._samples[0][0], self._end
        tail = [x for x in self._samples if (start + end) / 2 <= x[0] <= end]
        if len(tail) < MIN_TAIL_SAMPLES:
            return None
        ts = [x[0] for x in tail]
        mean_t = sum(ts) / len(ts)
        var = sum((t - mean_t) ** 2 for t in ts)
        if var <= 0:
            return None
        out = []
        for i in range(self.directions):
            vs = [x[2][i] for x in tail]
            mean_v = sum(vs) / len(vs)
            out.append(sum((t - mean_t) * (v - mean_v) for t, v in zip(ts, vs, strict=True)) / var)
        return tuple(out)
