"""The procedure seam towards traffic generators: the :class:`Tester` protocol, its optional hooks and the
small types a tester is handed (:class:`Port`, :class:`LabPorts`, :class:`Phase2Options`, :class:`Mapping`).

A procedure (:mod:`natbench.metrics`) drives every tester kind through these alone; a tester backend
(:class:`~natbench.plugins.backends.TesterBackend`) builds one.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from natbench.results import Direction, PhaseResult
from natbench.traffic.plan import TrafficPlan


class Directions(enum.StrEnum):
    """Active directions of a phase-2 test."""

    BIDIRECTIONAL = "bidirectional"
    """Both directions at once (RFC 8219 requires it); rates are per direction."""
    FORWARD = "forward"
    """Private -> public only."""
    REVERSE = "reverse"
    """Public -> private only."""

    @property
    def active(self) -> tuple[Direction, ...]:
        """The directions that carry traffic."""
        if self is Directions.BIDIRECTIONAL:
            return (Direction.FORWARD, Direction.REVERSE)
        return (Direction(self.value),)


@dataclass(frozen=True)
class Mapping:
    """One translated connection as seen on the public side (a Responder state-table entry)."""

    public_address: str
    """DUT public address chosen for the connection."""
    public_port: int
    """DUT public port chosen for the connection."""
    remote_port: int
    """Responder port (the phase-1 destination port)."""
    private_port: int | None = None
    """Original Initiator source port, when the DUT tells it."""


@dataclass(frozen=True)
class Port:
    """One tester port: an interface (optionally inside a network namespace) and the MACs of the link."""

    interface: str
    """Interface name as seen inside ``netns``."""
    mac: str
    """MAC address of the tester interface (source of the frames it sends)."""
    peer_mac: str
    """MAC address of the DUT interface on this link (destination of the frames)."""
    netns: str | None = None
    """Network namespace name (under /run/netns) or path; None for the current namespace."""

    @property
    def netns_path(self) -> str | None:
        """Path of the namespace file for setns(2), or None."""
        if not self.netns:
            return None
        return self.netns if "/" in self.netns else f"/run/netns/{self.netns}"


@runtime_checkable
class HostLoadProbe(Protocol):
    """What a shared host's CPUs spent on processes that are neither the tester nor the DUT, window by window (a local
    lab's: :class:`natbench.testbed.lab.hostload.HostLoad`)."""

    def mark(self) -> None:
        """Start a window now (a trial's traffic starts)."""
        ...

    def since_mark(self) -> dict[str, Any]:
        """The window from the last mark to now, as a trial stores it (``extra.host_load``: ``seconds``, ``cpus``,
        ``others``: the share of the tester's and the DUT's CPUs other processes took, ``steal``, ``bound``: the share
        the figure may be off by); a new window starts now."""
        ...

    def reading(self) -> Any:
        """The counters now, to hand back to :meth:`since` (a window of its own, apart from the marks)."""
        ...

    def since(self, start: Any) -> dict[str, Any]:
        """The window from the :meth:`reading` ``start`` to now (figures as :meth:`since_mark`'s)."""
        ...


@dataclass(frozen=True)
class LabPorts:
    """The tester's side of a lab natbench built: what the lab hands to the tester factory."""

    initiator: Port
    """The tester's private-side port (towards the DUT's private interface)."""
    responder: Port
    """The tester's public-side port (towards the DUT's public interface)."""
    cpus: tuple[int, ...]
    """The CPUs the lab set aside for the tester (its receive processing is steered there)."""
    after_dut_setup: Callable[[], None]
    """What the lab redoes after a recipe configured the DUT (the tester calls it before each ``prepare``)."""
    host_load: HostLoadProbe | None = None
    """The lab's probe of what other processes took of the tester's and the DUT's CPUs (None: not measured)."""


@dataclass(frozen=True)
class LossStop:
    """When a phase-2 trial has failed already and may end before its duration (the fast search's full trials;
    docs/engine.md, "Stopping a failed full trial").

    While the trial runs, the tester follows each direction's *gap*: the frames it sent so far less the valid frames
    it received so far (frames in flight, frames queued in the DUT, frames lost). It stops sending when, in some
    direction, the gap stayed more than ``allowance + margin`` above its smallest value in the trial (the frames in
    flight) for ``window`` seconds: lost frames never come back, while frames in flight come and go. Each stream
    still sends the frames due by then, so the trial is the full trial's first part. The receive wait follows as
    after any trial, and the trial is judged on what arrived by its end: a gap the wait closed (a queue, not a loss)
    proves nothing."""

    allowance: float
    """Frames one direction may lose in the whole full trial (acceptance x its frames; 0 with acceptance 0)."""
    margin: float
    """Frames beyond the allowance the gap must stay above, so that the frames in flight, which vary from sample to
    sample, are never taken for a loss."""
    window: float = 0.25
    """Seconds the gap must stay that high."""


@dataclass(frozen=True)
class Phase2Options:
    """How phase 2 is measured."""

    latency: bool = False
    """Send timestamped tagged frames and report latency per direction."""
    latency_rate: float = 1000.0
    """Tagged frames per second per direction when ``latency`` is set."""
    selection: str = "random"
    """Responder state-table entry selection: ``random`` (default), ``linear`` or ``fixed``."""
    mappings: Sequence[Mapping] | None = None
    """Public -> private tuples read from the DUT (``ResponderMode.READ``; a
    :class:`~natbench.plugins.mappings.MappingTable` at scale); None otherwise."""
    latency_delay: float = 0.0
    """Seconds from the start of the trial before the first tagged frame (RFC 8219 7.2: 60 of 120)."""
    latency_frames: int | None = None
    """Tagged frames per direction, evenly spaced from ``latency_delay`` to the end of the trial (RFC 8219 7.2:
    at least 500); None: ``latency_rate`` per second from ``latency_delay`` on."""
    all_delays: bool = False
    """Time every frame of the trial (RFC 8219 7.3.1 PDV) and report those delays in ``latency`` (frames=all)."""
    stop: LossStop | None = None
    """End the trial early once it has failed (:class:`LossStop`); only asked of a tester that declares it can
    (:attr:`TrialEvidence.stops_failed_trials`). None: the trial runs its whole duration."""
    tail_rates: bool = False
    """Report the forwarding rate of the trial's second half (``PhaseResult.tail_rates``), if the tester can sample
    its counts as the trial runs (the fast search asks for it: where to look next). False: the tester need not
    sample."""


@runtime_checkable
class Tester(Protocol):
    """A traffic generator that can run RFC 9693 phase 1 and phase 2.

    Rates are frames per second *per direction*; reports double them for
    bidirectional tests ("all frames per second").
    """

    def prepare(self, traffic: TrafficPlan) -> None:
        """Load or compile streams for one working point (called once per point)."""
        ...

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        """Send each enumerated (sport, dport) pair exactly once at ``rate``.

        With ``learn`` the Responder records the translated four-tuples so that
        a later phase 2 or validation can answer them.
        """
        ...

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """Send ``duration`` seconds of traffic at ``rate`` in ``directions`` and count it."""
        ...

    def validate(self, rate: float) -> PhaseResult:
        """Send one reverse frame per learned tuple, reading the state table linearly."""
        ...

    def facts(self) -> dict[str, Any]:
        """Tester facts for the run record (backend, versions, ports, cores)."""
        ...

    def close(self) -> None:
        """Release ports, sockets and connections."""
        ...


# Optional hooks. A tester offers them by having the method; the engine calls them when present,
# so a tester without them still satisfies :class:`Tester`.


@runtime_checkable
class BeginsRepetition(Protocol):
    """Optional Tester hook: a repetition starts (for a backend whose traffic or noise is seeded)."""

    def begin_repetition(self, point_id: str, metric: str, repetition: int) -> None:
        """Repetition ``repetition`` of ``metric`` at the point ``point_id`` starts: restart the random streams
        from these three, so that a repetition cut off by an interruption and run again on resume repeats
        exactly. The orchestrator calls it before every repetition."""
        ...


@runtime_checkable
class SetsReceiveTimeout(Protocol):
    """Optional Tester hook: the metric's receive wait (the campaign's ``metrics.<name>.timeout``)."""

    def set_receive_timeout(self, seconds: float) -> None:
        """Wait ``seconds`` after the last frame is sent before counting, in every later phase 1, phase 2
        and validation, until called again. The engine calls it before every trial with the metric's value."""
        ...


@dataclass(frozen=True)
class TrialEvidence:
    """What a tester can tell of a phase-2 trial beyond its final counts: the evidence a search may ask for
    (:meth:`DeclaresEvidence.evidence`). A search asks this declaration, never the tester's kind."""

    stops_failed_trials: bool = False
    """It follows its counts while a trial runs and ends the trial once it has failed (it honours
    :attr:`Phase2Options.stop`; its :class:`~natbench.results.PhaseResult` then says ``stopped``)."""
    tail_rates: bool = False
    """It reports the forwarding rate of a trial's second half when asked (:attr:`Phase2Options.tail_rates`,
    :attr:`~natbench.results.PhaseResult.tail_rates`)."""
    receive_misses: bool = False
    """It reports the frames its own receive side missed (:attr:`~natbench.results.PhaseResult.deviations`), which
    the verdicts net out of the DUT's loss."""
    pacing_slack: float = 0.0
    """Seconds its timer may put the last frame of any phase behind schedule and still keep the rate, however short
    the phase: the verdicts hold a phase's average rate to ``rate_tolerance`` of its duration or this slack, the
    larger (:func:`~natbench.judging.allowed_shortfall`)."""


NO_EVIDENCE = TrialEvidence()
"""What a tester that declares nothing gives: its final counts alone."""


@runtime_checkable
class DeclaresEvidence(Protocol):
    """Optional Tester hook: what the tester can tell of a phase-2 trial beyond its final counts. A tester without it
    gives its final counts alone (:data:`NO_EVIDENCE`)."""

    def evidence(self) -> TrialEvidence:
        """The evidence this tester, as configured, gives of a phase-2 trial."""
        ...


def evidence_of(tester: object) -> TrialEvidence:
    """The evidence ``tester`` declares (:data:`NO_EVIDENCE` without the :class:`DeclaresEvidence` hook)."""
    return tester.evidence() if isinstance(tester, DeclaresEvidence) else NO_EVIDENCE


@runtime_checkable
class WatchesHostLoad(Protocol):
    """Optional Tester hook: a tester that shares its host's CPUs with the DUT (the local lab) hands over the lab's
    probe of what other processes took of them; the engine stores its figures with every trial."""

    def host_load_probe(self) -> HostLoadProbe | None:
        """The probe (None: not measured)."""
        ...


@runtime_checkable
class SamplesValidation(Protocol):
    """Optional Tester hook: validation over a sample of the known tuples (a fill check at millions of
    connections, where one reverse frame to every tuple would cost as much as the fill)."""

    def validate_sample(self, rate: float, count: int) -> PhaseResult:
        """Like :meth:`Tester.validate`, but one reverse frame to each of ``count`` known tuples spread evenly over
        the table (all of them when there are fewer), at ``rate``."""
        ...


@runtime_checkable
class LoadsMappings(Protocol):
    """Optional Tester hook: the DUT's tuples in ``ResponderMode.READ``."""

    def load_mappings(self, mappings: Sequence[Mapping]) -> None:
        """The translated tuples the engine read from the DUT (``Dut.mappings()``) after the last phase 1;
        :meth:`Tester.validate` sends one reverse frame to each (phase 2 gets them in
        :attr:`Phase2Options.mappings` as well). Replaces tuples loaded or learned before."""
        ...
