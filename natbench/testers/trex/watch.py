"""Counts of a running TRex trial, read at a bounded rate: the loss watch and the forwarding rate of its second half.

While a phase-2 trial runs, :meth:`~natbench.testers.trex.client.TRexSession.wait` reads the port counters of both
ports every :data:`~natbench.testers.losswatch.SAMPLE_PERIOD` seconds at most (one RPC batch of two
``get_port_stats`` commands, through the client library's own ``PortStats`` objects, so the values are relative to
the trial's ``clear_stats``) and hands them to :meth:`TrialWatch.observe`. A direction's frames sent are its sending
port's ``opackets``; its frames delivered are the receiving port's ``ipackets`` plus its ``ierrors``: TRex's port
``ierrors`` holds the frames its own receive path missed (DPDK ``imissed`` and ``rx_nombuf``, the receive socket's
drops with af_packet), which the verdict nets out of the loss as the tester's deviation (docs/trex.md 4.4), so the
watch nets them out of the gap too: a tester that misses frames is not a DUT that loses them. (``ierrors`` also
counts frames that arrived malformed, the DUT's loss; the watch then waits longer before it stops, never sooner,
and the verdict, which reads the extended counters, still judges them.)

The counts feed the two rules every tester shares: :class:`~natbench.testers.losswatch.LossWatch` (with a
:class:`~natbench.plugins.tester.LossStop`, whether to stop the trial) and :class:`~natbench.testers.tailrate.TailRate`
(with ``tail_rates``, the slope of the delivered counts over the second half of the sending). A sample is timed at
the middle of its RPC: the server read the counters somewhere within the round trip, so a sample whose read took
longer than :data:`TIMED_READ` is left out of the fit (its time is too uncertain), not out of the loss watch (the gap
compares two counts read in the same call, whatever the time). Memory is a few numbers per direction plus the
tail rate's bounded samples, whatever the trial's length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from natbench.plugins.tester import LossStop
from natbench.results import Direction
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch
from natbench.testers.tailrate import TailRate

TIMED_READ = SAMPLE_PERIOD / 2
"""Seconds a sample's read (the RPC's round trip) may take for the tail rate's fit to use it: its time is then known
to within a quarter of the sampling period. A read held up longer (a busy server, a preempted client) would put its
counts at the wrong time, and errors in time flatten a fitted slope. (Live, software-mode v3.08 on a shared 2-CPU
machine: reads took 3-5 ms, now and then 20-40 ms; a 5 ms bound left out half the reads and, with too few left,
missed the lab's 20,000 fps limit by up to 2.3 %; 10 ms kept its fits within 0.5 %.)"""


@dataclass(frozen=True)
class Lane:
    """One active direction of a trial: the TRex port that sends it and the one that receives it."""

    direction: Direction
    """The direction (forward: private -> public)."""
    sender: int
    """TRex port id whose ``opackets`` are the direction's frames sent."""
    receiver: int
    """TRex port id whose ``ipackets`` (+ ``ierrors``) are the direction's frames delivered."""


def _count(value: Any) -> int:
    """A counter as the library reports it (an int relative to ``clear_stats``; ``'N/A'`` when never read: 0)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class TrialWatch:
    """One trial's counters as they are read -> whether to stop it, and the forwarding rate of its second half."""

    def __init__(
        self, lanes: Sequence[Lane], stop: LossStop | None, tails: bool, period: float = SAMPLE_PERIOD
    ) -> None:
        if not lanes:
            raise ValueError("a trial watch needs at least one direction")
        if not period > 0:
            raise ValueError(f"sampling period must be positive, got {period!r}")
        self.lanes = tuple(lanes)
        self.period = float(period)
        """Seconds between the starts of two reads at least (the bound on the RPC rate)."""
        self.ports = sorted({p for lane in self.lanes for p in (lane.sender, lane.receiver)})
        """The TRex ports whose counters a sample reads."""
        self._judge = LossWatch(stop, len(self.lanes)) if stop is not None else None
        self._tail = TailRate(len(self.lanes)) if tails else None
        self._start: float | None = None
        self._next = 0.0
        self.samples = 0
        """Samples read so far."""
        self.timed = 0
        """Samples quick enough for the fit (:data:`TIMED_READ`)."""
        self.read_s = 0.0
        """Seconds the reads took in all (client, RPC and server)."""
        self.read_max_s = 0.0
        """The longest read."""
        self.decided_s: float | None = None
        """Seconds into the trial of the sample that decided the stop (None: no stop decided)."""
        self.missing: tuple[int, ...] = ()
        """Per direction, the frames missing beyond the frames in flight at the deciding sample."""
        self.stop_call: tuple[float, float] | None = None
        """The stop RPC's start and return (``time.monotonic()``), once the trial was stopped."""

    def begin(self, at: float) -> None:
        """The trial's sending began at ``at`` (``time.monotonic()``, the start RPC's return); the first read is due
        one period later."""
        self._start = at
        self._next = at + self.period

    @property
    def began(self) -> float:
        """When the sending began (:meth:`begin`)."""
        if self._start is None:
            raise RuntimeError("the trial watch was not begun")
        return self._start

    def wait_s(self, now: float) -> float:
        """Seconds from ``now`` until the next read is due (0: due now)."""
        return max(self._next - now, 0.0)

    def observe(self, before: float, after: float, counters: Mapping[int, Mapping[str, Any]]) -> bool:
        """Take one read: the port counters of :attr:`ports` (``PortStats.to_dict()`` per port id, relative to the
        trial's ``clear_stats``), read between ``before`` and ``after`` (``time.monotonic()``). True when the trial
        has failed by the stop's rule (and from then on); the next read is due one period after ``before``."""
        start = self.began
        self._next = before + self.period
        read = max(after - before, 0.0)
        self.samples += 1
        self.read_s += read
        self.read_max_s = max(self.read_max_s, read)
        t = (before + after) / 2 - start
        sent = [_count(counters.get(lane.sender, {}).get("opackets")) for lane in self.lanes]
        delivered = [
            _count(counters.get(lane.receiver, {}).get("ipackets"))
            + _count(counters.get(lane.receiver, {}).get("ierrors"))
            for lane in self.lanes
        ]
        if self._tail is not None and read <= TIMED_READ:
            self.timed += 1
            self._tail.observe(t, sent, delivered)
        if self._judge is None or self.decided_s is not None:
            return self.decided_s is not None
        if self._judge.observe(t, sent, delivered):
            self.decided_s = round(t, 6)
            self.missing = self._judge.missing
            return True
        return False

    def stopped(self, called: float, returned: float) -> None:
        """The trial was stopped by a stop RPC that began at ``called`` and returned at ``returned``."""
        self.stop_call = (called, returned)

    def tail_rates(self) -> dict[Direction, float]:
        """Per direction, the delivered frames per second of the second half of the sending (empty when not asked or
        the trial was too short to tell: :class:`~natbench.testers.tailrate.TailRate`)."""
        rates = self._tail.rates() if self._tail is not None else None
        if rates is None:
            return {}
        return {lane.direction: round(float(r), 1) for lane, r in zip(self.lanes, rates, strict=True)}

    def shortfalls(self) -> dict[Direction, float]:
        """A stopped trial, per direction: frames per second the DUT forwarded below what it was sent, over the second
        half and over the stop's last window (:meth:`~natbench.testers.tailrate.TailRate.shortfalls`; empty when it
        did not stop, was not asked for tail rates, or had too few reads to tell)."""
        if self._tail is None or self._judge is None or self.decided_s is None:
            return {}
        short = self._tail.shortfalls(self._judge.stop.window)
        if short is None:
            return {}
        return {lane.direction: round(float(v), 1) for lane, v in zip(self.lanes, short, strict=True)}

    def record(self) -> dict[str, Any]:
        """What the trial stores of its reads (``extra["watch"]``): how many, how often, what they cost."""
        out: dict[str, Any] = {
            "samples": self.samples,
            "period_s": self.period,
            "read_ms_mean": round(self.read_s / self.samples * 1000, 3) if self.samples else None,
            "read_ms_max": round(self.read_max_s * 1000, 3),
        }
        if self._tail is not None:
            out["fit_samples"] = self.timed
        return out
