"""Plain data every layer exchanges: phase results, verdicts and trial records.

These are frozen dataclasses of plain values so that they serialise to one
JSON line each (``to_dict`` / ``from_dict``) and so that every pass/fail
decision can be recomputed from what was stored.
"""

from __future__ import annotations

import enum
from dataclasses import asdict, dataclass, field
from typing import Any


class Direction(enum.StrEnum):
    """A traffic direction through the DUT."""

    FORWARD = "forward"
    """Private -> public (Initiator -> Responder)."""
    REVERSE = "reverse"
    """Public -> private (Responder -> Initiator), using the Responder's state table."""


class Verdict(enum.StrEnum):
    """Outcome of one trial (one search step)."""

    PASS = "pass"
    """Loss within the acceptance criterion in every active direction; rate kept."""
    FAIL = "fail"
    """Loss above the acceptance criterion."""
    INVALID = "invalid"
    """The trial proves nothing about the DUT: tester fell behind, table not as expected, counts inconsistent."""


@dataclass(frozen=True)
class DirectionCounts:
    """Frame counts of one direction in one phase."""

    sent: int
    """Test frames the tester transmitted."""
    received: int
    """Frames the tester received on the opposite port (any content)."""
    valid: int
    """Received frames that carried the test signature (only these count)."""

    @property
    def lost(self) -> int:
        """Frames sent but not received as valid (never negative)."""
        return max(self.sent - self.valid, 0)

    @property
    def loss_ratio(self) -> float:
        """lost / sent; 0 when nothing was sent."""
        return self.lost / self.sent if self.sent else 0.0


@dataclass(frozen=True)
class LatencyStats:
    """Latency of tagged frames in one direction, in seconds (RFC 8219 7.2 / 7.3)."""

    samples: int
    """Number of frames that arrived and were timed."""
    minimum: float
    """Smallest latency (D_min)."""
    median: float
    """Typical latency (median)."""
    p99_9: float
    """Worst-case latency (99.9th percentile)."""
    maximum: float
    """Largest latency."""
    frames: str = "tagged"
    """Which frames were timed: ``tagged`` (RFC 8219 7.2 latency) or ``all`` (RFC 8219 7.3.1 PDV)."""
    error_bound: float = 0.0
    """Largest relative error of ``median`` and ``p99_9`` (0: exact; a delay histogram's bucket otherwise)."""

    @property
    def pdv(self) -> float:
        """Packet delay variation D99.9 - Dmin (RFC 8219 7.3.1)."""
        return self.p99_9 - self.minimum


@dataclass(frozen=True)
class Deviation:
    """Where the tester itself departed from the plan in one direction of one trial, in frames: how many of the
    frames the trial lost in that direction the tester's own behaviour can explain.

    A deviation does not decide a verdict by itself (:func:`~natbench.judging.judge_phase`): a trial whose
    loss, net of what its deviations can explain, still exceeds the acceptance FAILS; a trial that lost nothing
    PASSES whatever the tester did; only a loss the deviations alone could explain makes it INVALID."""

    clump: int = 0
    """Frames the tester sent in a burst beyond their schedule to catch up after it fell behind (its largest
    backlog). At most that many frames can a DUT have dropped because of the burst (its buffers took the rest)."""
    missed: int = 0
    """Frames the tester's own receive side dropped (a port's missed counter, a receive socket's drops): they may
    have left the DUT and were not counted."""
    notes: tuple[str, ...] = ()
    """What happened, in words (``stalled 312 frames (15.6 ms) behind schedule``)."""

    @property
    def explains(self) -> int:
        """Lost frames this deviation can explain: the burst's frames plus the frames the tester missed."""
        return self.clump + self.missed

    def __bool__(self) -> bool:
        return bool(self.clump or self.missed or self.notes)


@dataclass(frozen=True)
class PhaseResult:
    """What a tester reports for one phase-1 or phase-2 run."""

    intended_rate: float
    """Frames per second per direction the tester was asked to send."""
    achieved_rate: float
    """Frames per second per direction the tester actually sent (slowest direction)."""
    duration: float
    """Seconds from the first to the last frame sent."""
    counts: dict[Direction, DirectionCounts]
    """Counts for each active direction."""
    latency: dict[Direction, LatencyStats] = field(default_factory=dict)
    """Latency statistics per direction, when measured."""
    tester_ok: bool = True
    """False when the tester knows it could not generate the traffic as asked (it sent too few frames, or too
    slowly on average): the trial proves nothing about the DUT."""
    tester_note: str = ""
    """Why ``tester_ok`` is False (e.g. 'send queue full', 'fell behind by 3 %')."""
    deviations: dict[Direction, Deviation] = field(default_factory=dict)
    """Per direction: where the tester departed from the plan without failing it (a stall it caught up with, frames
    its receive side missed); weighed against the loss by the verdict, stored with the trial."""
    learned: int | None = None
    """Number of distinct four-tuples the Responder learned (phase 1 with learning)."""
    responder_mode: str | None = None
    """How public -> private tuples were obtained (learn / read / compute)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Backend-specific facts worth storing (plain JSON values only)."""
    stopped: bool = False
    """True when the tester ended the trial before its duration because it had failed (``Phase2Options.stop``):
    ``duration`` and ``counts`` are those of the shorter trial it ran, and the verdict weighs its loss against the
    full trial's allowance."""
    tail_rates: dict[Direction, float] = field(default_factory=dict)
    """Per direction, the valid frames per second received over the second half of the sending (a least-squares
    slope of the counts sampled as the trial ran): the DUT's forwarding rate at this load once its queues and token
    buckets have filled. Empty when the tester does not sample its counts (then only a full trial's whole count tells
    what the DUT forwards). Where a search looks next, never a verdict (docs/engine.md, "Where to look next")."""
    shortfalls: dict[Direction, float] = field(default_factory=dict)
    """A stopped trial, per direction: frames per second the DUT forwarded below what it was sent, measured from the
    counts sampled as the trial ran over the second half of the sending *and* over the stop's last window, the
    smaller of the two (0 when it kept up in either: a transient, a stall it caught up with). Empty when the tester
    could not tell (too few samples); a tester that stops failed trials reports it. What decides a stop the receive
    wait undid (:func:`natbench.judging.forecast`)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form (directions as strings)."""
        d = asdict(self)
        d["counts"] = {str(k): asdict(v) for k, v in self.counts.items()}
        d["tail_rates"] = {str(k): v for k, v in self.tail_rates.items()}
        d["shortfalls"] = {str(k): v for k, v in self.shortfalls.items()}
        d["latency"] = {str(k): asdict(v) for k, v in self.latency.items()}
        d["deviations"] = {str(k): {**asdict(v), "notes": list(v.notes)} for k, v in self.deviations.items()}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PhaseResult:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["counts"] = {Direction(k): DirectionCounts(**v) for k, v in d["counts"].items()}
        d["latency"] = {Direction(k): LatencyStats(**v) for k, v in d.get("latency", {}).items()}
        d["deviations"] = {
            Direction(k): Deviation(v.get("clump", 0), v.get("missed", 0), tuple(v.get("notes", ())))
            for k, v in d.get("deviations", {}).items()
        }
        d["tail_rates"] = {Direction(k): float(v) for k, v in d.get("tail_rates", {}).items()}
        d["shortfalls"] = {Direction(k): float(v) for k, v in d.get("shortfalls", {}).items()}
        return cls(**d)


@dataclass(frozen=True)
class TrialRecord:
    """One trial (one step of one search, or one timed operation), as stored.

    Written to the run's ``trials.jsonl`` before the next trial starts.
    """

    point_id: str
    """Stable id of the working point."""
    metric: str
    """Procedure name (``cps``, ``throughput``, ``teardown``, ...)."""
    repetition: int
    """Repetition number, 0-based."""
    step: int
    """Step number within this (point, metric, repetition), 0-based."""
    kind: str
    """What was done: ``phase1``, ``phase2``, ``flush_filled``, ``flush_empty``, ``validation``, ..."""
    intended_rate: float
    """Frames per second per direction asked of the tester (0 when not a traffic trial)."""
    achieved_rate: float
    """Frames per second per direction the tester reached."""
    counts: dict[str, dict[str, int]]
    """Per direction: sent / received / valid."""
    verdict: Verdict
    """pass / fail / invalid."""
    reason: str
    """Why this verdict (always filled for fail and invalid)."""
    started_at: float
    """Unix time the trial started."""
    ended_at: float
    """Unix time the trial ended."""
    lower: float | None = None
    """Lower bound of the search before this step (None outside searches)."""
    upper: float | None = None
    """Upper bound of the search before this step."""
    value: float | None = None
    """Measured value of a non-search trial (e.g. delete time in seconds)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Latency, DUT counts, CPU samples, responder mode, tester notes."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        d = asdict(self)
        d["verdict"] = str(self.verdict)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialRecord:
        """Inverse of :meth:`to_dict`."""
        d = dict(d)
        d["verdict"] = Verdict(d["verdict"])
        return cls(**d)


@dataclass(frozen=True)
class RepetitionResult:
    """The final result of one repetition of one metric at one working point."""

    point_id: str
    """Stable id of the working point."""
    metric: str
    """Procedure name."""
    repetition: int
    """Repetition number, 0-based."""
    value: float | None
    """The result (cps, fps, seconds, connections ...), None when the procedure could not finish."""
    unit: str
    """Unit of ``value`` (``cps``, ``fps``, ``s``, ``conn``)."""
    error: float | None = None
    """upper - lower bound when the search stopped (None when not a search)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Secondary values (e.g. T_N, T_0 for tear-down; latency quantiles)."""

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RepetitionResult:
        """Inverse of :meth:`to_dict`."""
        return cls(**d)
