"""Fakes for unit tests of the core: a modelled NAT and a tester wired to it.

:class:`FakeDut` models a stateful NAT with a connection-establishment-rate
ceiling, a forwarding ceiling, a table limit and a tear-down time;
:class:`FakeTester` "sends" frames through it by arithmetic. Neither sleeps,
opens a socket or reads a clock, so procedures and the runner can be tested
in milliseconds and deterministically.

They exist only for tests. The CLI never builds them, and nothing falls back
to them silently.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from natbench.errors import DutError, TesterError
from natbench.plugins import Directions, Mapping, Phase2Options, TrialEvidence
from natbench.results import Direction, DirectionCounts, LatencyStats, PhaseResult
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch
from natbench.traffic.enumeration import SplitMix64
from natbench.traffic.plan import ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint


@dataclass(frozen=True)
class FakeModel:
    """Parameters of the modelled NAT and tester."""

    cps: float = 200_000.0
    """Connection-establishment-rate ceiling (new connections per second)."""
    forwarding: float = 400_000.0
    """Forwarding ceiling for frames of established connections, per direction."""
    stateless_forwarding: float = 900_000.0
    """Ceiling of plain forwarding (``nat=False``), per direction."""
    table_limit: int = 10_000_000
    """Connection tracking table size; what happens to new connections beyond it is ``table_full``."""
    table_full: Literal["drop", "evict"] = "drop"
    """A new connection meeting a full table: ``drop`` drops its frame (the frame is lost); ``evict`` forwards the
    frame and evicts an older entry that has seen no reply, as Linux conntrack's early drop does with phase-1
    UDP entries: every frame arrives, the table stays at ``table_limit``, and reverse frames to evicted tuples are
    dropped."""
    keep_rate: float | None = None
    """New connections per second the DUT creates state for (None: every forwarded phase-1 frame creates one). A
    phase 1 above it is still forwarded up to ``cps``, but only ``N x keep_rate / rate`` of its connections are
    kept: the table count falls short and reverse frames to the others are dropped."""
    udp_timeout: float | None = None
    """Connection timeout in seconds, reported in ``facts()`` like a recipe DUT's; with :attr:`FakeDut.clock` set,
    the connections of a phase 1 expire this long after it began (refreshes by later frames are not modelled:
    the worst case, an entry that phase 2 never hits)."""
    tester_max_rate: float = 5_000_000.0
    """Fastest rate the fake tester can send (above it a trial is invalid)."""
    flush_per_connection: float = 2.5e-6
    """Seconds the DUT's delete-all spends per connection."""
    flush_empty: float = 0.5
    """Seconds the DUT's delete-all takes on an empty table."""
    noise: float = 0.0
    """Relative spread of the ceilings per trial (0 = exactly deterministic ceilings)."""
    seed: int = 1
    """Seed of the noise; the noise of a trial depends only on seed, repetition key and trial number."""
    nat: bool = True
    """True: a stateful NAT (reverse frames need a connection); False: plain forwarding."""
    keeps_state: bool = True
    """False models a broken DUT that forwards phase-1 frames without keeping state (validation must fail)."""
    can_count: bool = True
    """False: ``count_connections`` raises NotImplementedError (like a DUT without a count command)."""
    invalid_every: int = 0
    """When > 0, every n-th tester call reports that it fell behind (to test invalid-trial handling)."""
    base_latency: float = 20e-6
    """Latency of a frame at zero load, in seconds."""
    preserves_ports: bool = True
    """True: the modelled NAT keeps the Initiator's source port (Linux SNAT); False: it picks others (Jool, PF)."""
    public_address: str = "198.19.0.1"
    """Public address the modelled NAT translates to (the default address plan's DUT public address)."""


@dataclass
class FakeDut:
    """A modelled stateful NAT implementing the :class:`~natbench.plugins.Dut` protocol."""

    model: FakeModel = field(default_factory=FakeModel)
    """The modelled device."""
    connections: int = 0
    """Connections in the table now."""
    events: list[str] = field(default_factory=list)
    """Calls received, in order (``setup:<id>``, ``reset``, ``flush``, ``teardown``)."""
    fail_setup: bool = False
    """Raise from ``setup`` (to test error handling)."""
    point: WorkingPoint | None = None
    clock: Callable[[], float] | None = None
    """The run's clock; with ``model.udp_timeout`` the table's connections expire by it (None: they never do)."""
    created_at: float = 0.0
    """Clock reading when the connections in the table were created (the start of the phase 1 that made them)."""

    def expire(self) -> None:
        """Drop the connections whose timeout has passed (all of one phase 1 expire together)."""
        timeout = self.model.udp_timeout
        if timeout is None or self.clock is None or not self.connections:
            return
        if self.clock() - self.created_at > timeout:
            self.connections = 0

    def setup(self, point: WorkingPoint) -> None:
        """Remember the point and start with an empty table."""
        self.events.append(f"setup:{point.id}")
        if self.fail_setup:
            from natbench.errors import DutError

            raise DutError("fake setup failure", step="setup", dut="fake")
        self.point = point
        self.connections = 0

    def reset_connections(self) -> None:
        """Empty the table."""
        self.events.append("reset")
        self.connections = 0

    def supports(self, operation: str) -> bool:
        """The optional :class:`~natbench.plugins.ReportsSupport` hook: counting depends on the model."""
        return operation != "count_connections" or self.model.can_count

    def count_connections(self) -> int:
        """Connections in the table (NotImplementedError when the model cannot count)."""
        if not self.model.can_count:
            raise NotImplementedError("this fake DUT has no count command")
        self.expire()
        return self.connections

    def timed_flush(self) -> float:
        """Delete all connections; the modelled seconds it took."""
        self.events.append("flush")
        seconds = self.model.flush_empty + self.model.flush_per_connection * self.connections
        self.connections = 0
        return seconds

    def mappings(self) -> list[Mapping]:
        """The tuples of the connections in the table: the point's (sport, dport) pairs in order; public
        ports are the source ports when the model preserves ports, else ports from 40000 on."""
        self.events.append("mappings")
        if self.point is None:
            return []
        src, dst = self.point.src_ports, self.point.dst_ports
        out: list[Mapping] = []
        for i in range(min(self.connections, len(src) * len(dst))):
            sport, dport = src.first + i // len(dst), dst.first + i % len(dst)
            public = sport if self.model.preserves_ports else 40000 + i % 25000
            out.append(Mapping(self.model.public_address, public, dport, private_port=sport))
        return out

    def facts(self) -> dict[str, Any]:
        """Model parameters."""
        out: dict[str, Any] = {"kind": "fake", "table_limit": self.model.table_limit, "cps": self.model.cps}
        if self.model.udp_timeout is not None:
            out["udp_timeout"] = self.model.udp_timeout
        return out

    def teardown(self) -> None:
        """Forget the point."""
        self.events.append("teardown")
        self.point = None
        self.connections = 0

    def start_monitor(self, interval: float = 1.0) -> None:
        """The optional :class:`~natbench.plugins.MonitorsCpu` hook (recipe DUTs have it too): remember the
        interval."""
        self.events.append("monitor")
        self._interval = interval

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        """Two modelled samples: idle time falls as the table fills."""
        fill = min(self.connections / max(self.model.table_limit, 1), 1.0)
        iv = getattr(self, "_interval", 1.0)
        return {
            "fake": [
                {"t": 0.0, "idle": {"cpu0": 100.0, "cpu1": 100.0}, "conntrack_objs": 0},
                {"t": iv, "idle": {"cpu0": 100.0 - 50 * fill, "cpu1": 90.0}, "conntrack_objs": self.connections},
            ]
        }


@dataclass
class MemoryFakeDut(FakeDut):
    """A :class:`FakeDut` with the optional :class:`~natbench.plugins.MeasuresMemory` hook: its MemAvailable falls
    by ``bytes_per_connection`` and its nf_conntrack slab grows by ``slab_per_connection`` for every connection in
    the table; ``mem_noise`` makes MemAvailable jitter from one reading to the next (the kernel's other users)."""

    mem_total: int = 16 * 2**30
    """MemTotal in bytes."""
    mem_idle: int = 12 * 2**30
    """MemAvailable with an empty table."""
    bytes_per_connection: int = 300
    """MemAvailable fall per connection."""
    slab_per_connection: int | None = 256
    """nf_conntrack slab growth per connection (None: the DUT shows no slab)."""
    slab_idle: int = 9 * 4096
    """nf_conntrack slab bytes with an empty table."""
    fail_snapshot: int | None = None
    """Raise DutError from this snapshot on (0: the first; None: never)."""
    mem_noise: tuple[int, ...] = ()
    """Bytes added to MemAvailable in turn, one per snapshot (a busy machine's background); (): none."""
    snapshots: int = 0
    """Snapshots taken."""

    def memory_snapshot(self) -> dict[str, int]:
        """The modelled memory now (bytes)."""
        self.snapshots += 1
        if self.fail_snapshot is not None and self.snapshots > self.fail_snapshot:
            raise DutError("cannot read memory: /proc/meminfo: permission denied")
        jitter = self.mem_noise[(self.snapshots - 1) % len(self.mem_noise)] if self.mem_noise else 0
        out = {
            "mem_total": self.mem_total,
            "mem_available": self.mem_idle - self.bytes_per_connection * self.connections + jitter,
        }
        if self.slab_per_connection is not None:
            out["conntrack_slab"] = self.slab_idle + self.slab_per_connection * self.connections
        return out


@dataclass
class FakeTester:
    """A tester whose frames go through a :class:`FakeDut` by arithmetic."""

    dut: FakeDut
    """The modelled DUT the frames pass."""
    plan: TrafficPlan | None = None
    """The prepared traffic plan."""
    learned: int = 0
    """Four-tuples the Responder learned in the last phase 1 with learning."""
    calls: int = 0
    """Traffic calls since the last repetition key was set (phase1, phase2, validate)."""
    key: tuple[str, str, int] = ("", "", 0)
    """(point id, metric, repetition) of the current repetition: the noise stream."""
    closed: bool = False
    receive_timeout: float | None = None
    """Last receive wait the engine passed through the optional ``set_receive_timeout`` hook."""
    loaded: tuple[Mapping, ...] | None = None
    """Tuples the engine passed through the optional ``load_mappings`` hook (ResponderMode.READ)."""
    stops: bool = False
    """Whether it honours ``Phase2Options.stop`` (it declares so, :class:`~natbench.plugins.TrialEvidence`): the
    modelled loss is sampled every ``SAMPLE_PERIOD`` seconds of the trial by the real
    :class:`~natbench.testers.losswatch.LossWatch`."""

    # -- protocol ---------------------------------------------------------------
    def prepare(self, traffic: TrafficPlan) -> None:
        """Remember the plan."""
        self.plan = traffic
        self.learned = 0
        self.loaded = None

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        """Send one frame per connection of the plan at ``rate``."""
        plan = self._plan()
        n = plan.connections
        achieved, ok, note = self._send_rate(rate)
        model = self.dut.model
        noise = self._noise()
        ceiling = model.cps * noise
        delivered = n if achieved <= ceiling else math.floor(n * ceiling / achieved)
        if model.nat and model.keeps_state:
            self.dut.expire()
            if not self.dut.connections and self.dut.clock is not None:
                self.dut.created_at = self.dut.clock()
            kept = delivered
            if model.keep_rate is not None and achieved > model.keep_rate * noise:
                kept = min(kept, math.floor(n * model.keep_rate * noise / achieved))  # forwarded, no entry kept
            room = max(model.table_limit - self.dut.connections, 0)
            if model.table_full == "drop" and kept > room:
                delivered -= kept - room  # the frames that found the table full are dropped
                kept = room
            self.dut.connections = min(self.dut.connections + kept, model.table_limit)  # evict: older entries go
        if learn:
            self.learned = delivered
        counts = {Direction.FORWARD: DirectionCounts(n, delivered, delivered)}
        return PhaseResult(
            intended_rate=rate,
            achieved_rate=achieved,
            duration=n / achieved if achieved else 0.0,
            counts=counts,
            tester_ok=ok,
            tester_note=note,
            learned=delivered if learn else None,
            responder_mode=str(plan.responder_mode),
            extra=self._extra(),
        )

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """Send ``duration`` seconds at ``rate`` in each active direction through the modelled DUT."""
        plan = self._plan()
        model = self.dut.model
        self.dut.expire()
        achieved, ok, note = self._send_rate(rate)
        sent = round(rate * duration)
        ceiling = (model.forwarding if model.nat else model.stateless_forwarding) * self._noise()
        share = 1.0 if achieved <= ceiling else ceiling / achieved
        counts: dict[Direction, DirectionCounts] = {}
        latency: dict[Direction, LatencyStats] = {}
        expected = plan.connections
        fractions: dict[Direction, float] = {}
        for d in directions.active:
            if model.nat:
                # Forward frames to missing connections would create new ones (an RFC 9693 violation the
                # procedure must detect through the table count); reverse frames to missing ones are dropped.
                have = min(self.dut.connections, expected)
                if d is Direction.FORWARD and have < expected:
                    self.dut.connections += expected - have
                    reach = 1.0
                elif d is Direction.REVERSE:
                    known = len(measure.mappings or ()) if plan.responder_mode is ResponderMode.READ else self.learned
                    reach = min(known, have) / expected if expected else 0.0
                else:
                    reach = 1.0
            else:
                reach = 1.0
            fractions[d] = share * reach
        stopped_at = self._stop_at(rate, duration, list(fractions.values()), measure)
        if stopped_at is not None:  # the frames due when the watch said stop; the modelled DUT loses from the start
            sent, duration = round(rate * stopped_at), stopped_at
        for d, fraction in fractions.items():
            valid = math.floor(sent * fraction)
            counts[d] = DirectionCounts(sent, valid, valid)
            if measure.latency or measure.all_delays:
                load = min(achieved / ceiling, 1.0) if ceiling else 1.0
                base = model.base_latency * (1 + 4 * load**4)
                latency[d] = LatencyStats(
                    samples=valid if measure.all_delays else max(int(measure.latency_rate * duration), 1),
                    minimum=base * 0.5,
                    median=base,
                    p99_9=base * (3 if share >= 1 else 50),
                    maximum=base * (4 if share >= 1 else 80),
                    frames="all" if measure.all_delays else "tagged",
                )
        return PhaseResult(
            intended_rate=rate,
            achieved_rate=achieved,
            duration=duration,
            counts=counts,
            latency=latency,
            tester_ok=ok,
            tester_note=note,
            responder_mode=str(plan.responder_mode),
            extra=self._extra(),
            stopped=stopped_at is not None,
            # asked for, the second half's rate: the modelled DUT forwards its share from the start
            tail_rates={d: rate * f for d, f in fractions.items()} if measure.tail_rates else {},
            # stopped: what it forwarded short of the rate, the same over the second half and the stop's window
            shortfalls={d: rate * (1 - f) for d, f in fractions.items()} if stopped_at is not None else {},
        )

    def evidence(self) -> TrialEvidence:
        """What this fake tells of a phase-2 trial: it stops failed trials when :attr:`stops` says so, and reports
        the second half's forwarding rate when asked."""
        return TrialEvidence(stops_failed_trials=self.stops, tail_rates=True)

    def _stop_at(self, rate: float, duration: float, fractions: list[float], measure: Phase2Options) -> float | None:
        """When the watch would stop a trial whose directions deliver ``fractions`` of the frames from its start (None:
        it runs to the end): the counts sampled every :data:`SAMPLE_PERIOD` seconds, as the software tester does."""
        if not self.stops or measure.stop is None or not fractions or not math.isfinite(rate):
            return None
        watch = LossWatch(measure.stop, len(fractions))
        for k in range(1, math.ceil(duration / SAMPLE_PERIOD)):
            t = k * SAMPLE_PERIOD
            sent = math.floor(rate * t)
            if watch.observe(t, [sent] * len(fractions), [math.floor(sent * f) for f in fractions]):
                return t
        return None

    def validate(self, rate: float) -> PhaseResult:
        """One reverse frame per learned (READ: loaded) tuple; each arrives only if the DUT holds the connection."""
        plan = self._plan()
        self.dut.expire()
        achieved, ok, note = self._send_rate(rate)
        if plan.responder_mode is ResponderMode.READ:
            if self.loaded is None:
                raise TesterError("fake: validation in responder mode read needs load_mappings() first")
            sent = len(self.loaded)
        else:
            sent = self.learned
        held = self.dut.connections if (self.dut.model.keeps_state or not self.dut.model.nat) else 0
        valid = min(sent, held)
        return PhaseResult(
            intended_rate=rate,
            achieved_rate=achieved,
            duration=sent / achieved if achieved else 0.0,
            counts={Direction.REVERSE: DirectionCounts(sent, valid, valid)},
            tester_ok=ok,
            tester_note=note,
            responder_mode=str(plan.responder_mode),
            extra=self._extra(),
        )

    def validate_sample(self, rate: float, count: int) -> PhaseResult:
        """The optional sampling hook: ``count`` of the reverse frames :meth:`validate` would send, spread over the
        tuples; each arrives when the DUT holds its connection (in proportion to what it holds)."""
        full = self.validate(rate)
        c = full.counts[Direction.REVERSE]
        k = min(count, c.sent)
        valid = k if not c.sent else math.floor(k * c.valid / c.sent)
        return replace(full, counts={Direction.REVERSE: DirectionCounts(k, valid, valid)})

    def facts(self) -> dict[str, Any]:
        """What the fake is."""
        return {"kind": "fake", "max_rate": self.dut.model.tester_max_rate}

    def close(self) -> None:
        """Nothing to release."""
        self.closed = True

    # -- optional hooks the engine calls when present ---------------------------------
    def set_receive_timeout(self, seconds: float) -> None:
        """Remember the metric's receive wait (reported in every PhaseResult's extra)."""
        self.receive_timeout = seconds

    def load_mappings(self, mappings: Sequence[Mapping]) -> None:
        """Remember the DUT's tuples (ResponderMode.READ); validation sends one frame to each."""
        self.loaded = tuple(mappings)

    def begin_repetition(self, point_id: str, metric: str, repetition: int) -> None:
        """Start the noise stream of one repetition (so a restarted repetition repeats exactly)."""
        self.key = (point_id, metric, repetition)
        self.calls = 0

    # -- internals -----------------------------------------------------------------
    def _extra(self) -> dict[str, Any]:
        return {} if self.receive_timeout is None else {"receive_timeout": self.receive_timeout}

    def _plan(self) -> TrafficPlan:
        if self.plan is None:
            raise RuntimeError("FakeTester used before prepare()")
        return self.plan

    def _send_rate(self, rate: float) -> tuple[float, bool, str]:
        self.calls += 1
        model = self.dut.model
        if model.invalid_every and self.calls % model.invalid_every == 0:
            return rate * 0.9, False, "fake: fell behind (modelled)"
        if rate > model.tester_max_rate:
            return model.tester_max_rate, False, f"fake: cannot exceed {model.tester_max_rate:g} fps"
        return rate, True, ""

    def _noise(self) -> float:
        model = self.dut.model
        if not model.noise:
            return 1.0
        mix = model.seed
        for part in (*self.key[:2], str(self.key[2]), str(self.calls)):
            for ch in part.encode():
                mix = SplitMix64(mix ^ ch).next()
        u = SplitMix64(mix).next() / 2**64
        return 1.0 + model.noise * (2 * u - 1)


def fake_pair(**model: Any) -> tuple[FakeTester, FakeDut]:
    """A FakeTester wired to a new FakeDut built from ``FakeModel(**model)``."""
    dut = FakeDut(FakeModel(**model))
    return FakeTester(dut), dut


def with_model(dut: FakeDut, **changes: Any) -> None:
    """Change some model parameters of ``dut`` in place."""
    dut.model = replace(dut.model, **changes)
