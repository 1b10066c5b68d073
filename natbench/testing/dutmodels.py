"""DUTs and testers modelled from the RFC text: what a trial at a rate loses, and when, by plain arithmetic.

RFC 2544 (Sections 24 and 26.1) defines throughput as the fastest rate at which a trial of the full duration loses no
frame (RFC 8219 Section 7.1 and RFC 9693 Section 4.5 keep the definition, with an acceptance criterion in seed
004); what a real DUT does near that rate is what this module models, one behaviour per field of :class:`Behaviour`:

* **a ceiling** C frames per second per direction, drawn anew for every trial from ``C x (1 +- jitter)`` (the
  trial-to-trial spread docs/engine.md's bias section speaks of), moved by a slow stationary **drift** (a
  Gauss-Markov process of the run's clock) and lowered at first by a **warm-up** that decays after the DUT's setup;
* **a queue** of B frames (receive rings, a token bucket: docs/engine.md, "DUTs with queues"): above its ceiling the
  DUT forwards C and queues the excess until B frames wait, then drops it; the receive wait after the trial
  delivers what still waits, so a trial of T seconds passes up to about ``C + B / T``;
* **a livelock** above the ceiling: a DUT that spends its capacity on frames it then drops forwards less the harder
  it is offered (receive livelock: ``C - livelock x (rate - C)``, never below 0);
* **a loss knee** below the ceiling: from ``(1 - knee) x C`` the loss ratio grows quadratically to ``knee_loss`` at
  C and stays there above it;
* **a start-up loss**: a share of the frames of the first ``startup_seconds`` of every trial (caches and flows warming
  up at each trial's start, RFC 2544 Section 23's "trial" begins cold);
* **loss spikes**: Poisson in the trial's time, each losing ``spike_seconds`` of frames (an interrupt storm, a
  garbage collection in the DUT's data path).

:class:`TesterFlaws` models the tester's side: its receive side misses frames in a stall at the start of some trials
(a receive thread scheduled late while its socket's buffer overflowed), reported as the software tester reports them
(:class:`~natbench.results.Deviation` ``missed``).

:class:`TrialDraw` holds one trial's random draws (its ceiling, spike times, the stall), so that a trial's counts at
any time are a pure function (:meth:`Behaviour.lost_by`, :meth:`Behaviour.missing_by`): the frames missing from the
tester's valid count never decrease during a trial (queued or lost frames stay missing until the trial ends), which
:func:`watch_stop` relies on to ask the real :class:`~natbench.testers.losswatch.LossWatch` only at the samples
that can change its answer. :mod:`natbench.testing.modelled` wires the models to natbench's tester and DUT
protocols on a simulated clock; bench/search_bias.py drives them through natbench's own procedures.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import ClassVar

from natbench.plugins.tester import LossStop
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch


@dataclass(frozen=True)
class Behaviour:
    """How a modelled DUT forwards the frames of one direction in a trial (module docstring)."""

    ceiling: float = 300_000.0
    """C: frames per second per direction the DUT forwards at most (the median of its per-trial ceilings)."""
    jitter: float = 0.0
    """Each trial draws its ceiling uniformly from ``C x (1 +- jitter)``."""
    queue: int = 0
    """Frames the DUT queues beyond its ceiling before it drops any (delivered in the receive wait)."""
    livelock: float = 0.0
    """Above its ceiling the DUT forwards ``C - livelock x (rate - C)`` frames per second (0: it forwards C)."""
    knee: float = 0.0
    """Loss starts this share of the ceiling below it (0: no loss below the ceiling)."""
    knee_loss: float = 0.0
    """Loss ratio at the ceiling (and above it, beside the excess), reached quadratically from the knee."""
    startup_loss: float = 0.0
    """Share of the frames of each trial's first :attr:`startup_seconds` the DUT loses."""
    startup_seconds: float = 0.5
    """How long the start-up loss lasts in every trial."""
    spikes_per_second: float = 0.0
    """Loss spikes per second of a trial's traffic (Poisson)."""
    spike_seconds: float = 0.001
    """Frames one spike loses, in seconds of the trial's rate."""
    drift: float = 0.0
    """Relative standard deviation of a slow drift of the ceiling (0: none); see :class:`Drift`."""
    drift_seconds: float = 600.0
    """The drift's correlation time (seconds of the run's clock)."""
    warmup: float = 0.0
    """The ceiling starts this share low after the DUT's setup ..."""
    warmup_seconds: float = 120.0
    """... and recovers with this time constant (seconds of the run's clock)."""

    def forwarded(self, rate: float, ceiling: float) -> float:
        """Frames per second the DUT forwards steadily at ``rate`` against ``ceiling`` (before the knee's loss)."""
        if rate <= ceiling:
            return rate
        return max(0.0, ceiling - self.livelock * (rate - ceiling))

    def knee_ratio(self, rate: float, ceiling: float) -> float:
        """The loss knee's ratio at ``rate``."""
        if self.knee <= 0 or self.knee_loss <= 0:
            return 0.0
        start = ceiling * (1 - self.knee)
        if rate <= start:
            return 0.0
        if rate >= ceiling:
            return self.knee_loss
        return self.knee_loss * ((rate - start) / (ceiling * self.knee)) ** 2

    def _loss_parts(self, rate: float, draw: TrialDraw, direction: int, t: float) -> tuple[float, int]:
        """(frames in excess of the DUT's forwarding by ``t``: queued, then lost; frames lost otherwise by ``t``)."""
        excess = (rate - self.forwarded(rate, draw.ceiling)) * t
        other = math.floor(rate * t * self.knee_ratio(rate, draw.ceiling))
        other += math.floor(self.startup_loss * rate * min(t, self.startup_seconds))
        spike = round(self.spike_seconds * rate)
        other += spike * sum(1 for s in draw.spikes[direction] if s <= t)
        return excess, other

    def lost_by(self, rate: float, draw: TrialDraw, direction: int, t: float) -> int:
        """Frames of direction ``direction`` the DUT lost in the first ``t`` seconds of the trial ``draw`` at
        ``rate`` (its queue's frames are not lost: the receive wait delivers them)."""
        excess, other = self._loss_parts(rate, draw, direction, t)
        return min(math.floor(rate * t), math.floor(max(0.0, excess - self.queue)) + other)

    def missing_by(self, rate: float, draw: TrialDraw, direction: int, t: float) -> int:
        """Frames sent by ``t`` that the tester has not counted valid by then: those the DUT lost, those waiting in
        its queue and those the tester's receive side missed. Never decreases with ``t``."""
        excess, other = self._loss_parts(rate, draw, direction, t)
        missed = draw.missed[direction] if t >= draw.missed_at else 0
        return min(math.floor(rate * t), math.floor(excess) + other + missed)

    def ceiling_at(self, rng: random.Random, since_setup: float, drift: float) -> float:
        """One trial's ceiling: the jitter drawn from ``rng``, the drift's relative offset ``drift``, the warm-up
        ``since_setup`` seconds after the DUT's setup."""
        c = self.ceiling * (1 + self.jitter * (2 * rng.random() - 1)) * (1 + drift)
        if self.warmup:
            c *= 1 - self.warmup * math.exp(-max(since_setup, 0.0) / self.warmup_seconds)
        return c

    def draw(
        self, rng: random.Random, duration: float, directions: int, ceiling: float, flaws: TesterFlaws, rate: float
    ) -> TrialDraw:
        """The random parts of one trial of ``duration`` seconds at ``rate``: spike times per direction and the
        tester's receive stall (its time, and the frames it missed per direction)."""
        spikes = tuple(
            tuple(sorted(rng.random() * duration for _ in range(_poisson(rng, self.spikes_per_second * duration))))
            for _ in range(directions)
        )
        missed = tuple(flaws.missed_frames(rng, rate) for _ in range(directions))
        return TrialDraw(ceiling, duration, spikes, rng.random() * min(flaws.stall_within, duration), missed)

    def passes_full(self, rate: float, duration: float, acceptance: float) -> bool:
        """Whether a full trial of ``duration`` at ``rate`` passes at the median ceiling, with no drift, warm-up,
        spikes or tester flaws (what :func:`true_ceiling` bisects)."""
        draw = TrialDraw(self.ceiling, duration, ((),), math.inf, (0,))
        lost = self.lost_by(rate, draw, 0, duration)
        return lost <= acceptance * round(rate * duration)


@dataclass(frozen=True)
class TesterFlaws:
    """What the modelled tester gets wrong: its receive side misses frames in a stall at the start of some trials (a
    receive thread scheduled late while the frames fill its socket's buffer), whatever the trial's length."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    stall_chance: float = 0.0
    """Share of trials in which a direction's receive side stalls (0: never)."""
    stall_frames: int = 0
    """Frames one stall misses (at most a second of the trial's rate)."""
    stall_within: float = 0.1
    """The stall happens within this many seconds of the trial's start."""

    def missed_frames(self, rng: random.Random, rate: float) -> int:
        """Frames one trial's stall misses in one direction (0 when it does not stall)."""
        if self.stall_chance <= 0 or self.stall_frames <= 0 or rate <= 0:
            return 0
        return min(self.stall_frames, math.floor(rate)) if rng.random() < self.stall_chance else 0


@dataclass(frozen=True)
class TrialDraw:
    """One trial's random parts (:meth:`Behaviour.draw`)."""

    ceiling: float
    """The trial's ceiling, frames per second per direction."""
    duration: float
    """The trial's planned duration."""
    spikes: tuple[tuple[float, ...], ...]
    """Per direction, the seconds into the trial at which loss spikes strike."""
    missed_at: float = math.inf
    """Seconds into the trial at which the tester's receive stall happens."""
    missed: tuple[int, ...] = (0,)
    """Per direction, the frames the stall missed."""


@dataclass
class Drift:
    """A slow stationary drift of the ceiling: a Gauss-Markov (Ornstein-Uhlenbeck) process of the run's clock with
    standard deviation ``sd`` and correlation time ``seconds``, started from its stationary distribution."""

    sd: float
    """Relative standard deviation of the offset."""
    seconds: float
    """Correlation time."""
    offset: float = 0.0
    """The relative offset now."""
    at: float | None = None
    """The clock reading of :attr:`offset` (None: not drawn yet)."""

    def at_time(self, rng: random.Random, now: float) -> float:
        """The relative offset at ``now`` (exact transition from the last reading)."""
        if self.sd <= 0:
            return 0.0
        if self.at is None:
            self.offset = rng.gauss(0.0, self.sd)
        else:
            keep = math.exp(-max(now - self.at, 0.0) / self.seconds)
            self.offset = self.offset * keep + rng.gauss(0.0, self.sd * math.sqrt(1 - keep * keep))
        self.at = now
        return self.offset


@dataclass(frozen=True)
class TableModel:
    """A modelled connection table: its size and how long it keeps an idle connection."""

    limit: int | None = None
    """Connections it holds at most (None: no limit)."""
    timeout: float | None = None
    """Seconds after which a connection nothing refreshed expires (None: never)."""
    reports_timeout: bool = True
    """The DUT names its timeout in its facts (``udp_timeout``); False: natbench cannot know it."""


def _poisson(rng: random.Random, mean: float) -> int:
    if mean <= 0:
        return 0
    k, p, limit = 0, 1.0, math.exp(-mean)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


def true_ceiling(behaviour: Behaviour, duration: float, acceptance: float) -> float:
    """The highest rate (to 0.01 frames per second) whose full trial of ``duration`` passes on ``behaviour`` at its
    median ceiling (no jitter, drift, warm-up, spikes or tester flaws): what a search should report."""
    lo, hi = 0.0, behaviour.ceiling * 2 + behaviour.queue / duration + 1
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        if behaviour.passes_full(mid, duration, acceptance):
            lo = mid
        else:
            hi = mid
    return lo


@dataclass
class _Samples:
    """Per-direction counts at the sample times of one trial (what a sampling tester reads)."""

    sent: Callable[[float], int]
    missing: list[Callable[[float], int]] = field(default_factory=list)

    def at(self, k: int) -> tuple[list[int], list[int]]:
        t = k * SAMPLE_PERIOD
        s = self.sent(t)
        return [s] * len(self.missing), [s - m(t) for m in self.missing]


def watch_stop(
    stop: LossStop, duration: float, sent: Callable[[float], int], missing: list[Callable[[float], int]]
) -> float | None:
    """When a tester sampling every :data:`~natbench.testers.losswatch.SAMPLE_PERIOD` seconds would stop a trial of
    ``duration`` (None: it runs to its end), by the real :class:`~natbench.testers.losswatch.LossWatch`.

    ``sent(t)``: frames sent per direction by ``t``; ``missing[d](t)``: frames of direction ``d`` sent by ``t`` but
    not counted valid by then, which must never decrease (true of every :class:`Behaviour`). The watch then keeps the
    first sample's gap as its smallest, and a direction's gap above the threshold stays above: the samples between
    the first one and the last one at or below the threshold cannot change its answer, so only the first sample and
    those from the last one at or below the threshold on are handed to it (the result is the same as handing it
    every sample; tests/test_dutmodels.py checks it)."""
    samples = _Samples(sent, missing)
    last = math.ceil(duration / SAMPLE_PERIOD) - 1  # the samples a trial of ``duration`` takes before its end
    if last < 1:
        return None
    watch = LossWatch(stop, len(missing))
    first = next((k for k in range(1, last + 1) if min(samples.at(k)[0]) > 0), None)
    if first is None:
        return None
    if watch.observe(first * SAMPLE_PERIOD, *samples.at(first)):
        return first * SAMPLE_PERIOD
    threshold = stop.allowance + max(stop.margin, 0.0)
    base = samples.at(first)
    base_gap = [s - v for s, v in zip(*base, strict=True)]

    def above(k: int) -> bool:
        sent_k, valid_k = samples.at(k)
        return any(s - v - g > threshold for s, v, g in zip(sent_k, valid_k, base_gap, strict=True))

    if not above(last):
        return None
    lo, hi = first, last  # above(lo) is False, above(hi) is True
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if above(mid):
            hi = mid
        else:
            lo = mid
    for k in range(lo, last + 1):
        if watch.observe(k * SAMPLE_PERIOD, *samples.at(k)):
            return k * SAMPLE_PERIOD
    return None
