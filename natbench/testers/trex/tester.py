"""The TRex STL tester: compiles programs, loads them on a live server and counts (the part that talks)."""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from natbench.errors import TesterError
from natbench.plugins import Directions, Mapping, MappingTable, Phase2Options, TrialEvidence
from natbench.results import Deviation, Direction, DirectionCounts, LatencyStats, PhaseResult
from natbench.testers.trex import health
from natbench.testers.trex import program as prg
from natbench.testers.trex.client import TRexSession
from natbench.testers.trex.latency import latency_from_pgid
from natbench.testers.trex.program import Port, Program
from natbench.testers.trex.settings import TRexSettings
from natbench.testers.trex.watch import Lane, TrialWatch
from natbench.traffic import Family, ResponderMode, TrafficPlan

UPLOAD_BATCH = 4
"""Streams built and sent to the server per ``add_streams`` call at most (the client library builds each stream's
JSON, value lists as Python ints, for the whole call: a few streams at a time keep that bounded)."""
UPLOAD_VALUES = 200_000
"""Value-list entries per ``add_streams`` call at most: a read-mode stream of 65,535 tuples (3 lists) goes alone.
The server parses a call's whole request before its first command and gives each command about a second before its
RPC watchdog aborts it (trex-core ``TrexRpcServerReqRes``); live, one such stream took 0.7-1.4 s on a busy machine."""


def multiplier(factor: float) -> str:
    """TRex's ``mult`` for running streams compiled at rate R at ``factor`` x R: a plain decimal (the client library
    takes ``\\d+(\\.\\d+)?``, no exponent), 9 significant digits at least."""
    if not factor > 0:
        raise TesterError(f"rate multiplier must be positive, got {factor!r}")
    digits = max(9, 9 - int(np.floor(np.log10(factor))))
    text = f"{factor:.{digits}f}".rstrip("0")
    return text + "0" if text.endswith(".") else text


@dataclass(frozen=True)
class _Resident:
    """The program whose streams are on the server's ports: compiled at ``rate``, run at any other rate with TRex's
    multiplier (``start(mult=rate / self.rate)``), so a search's trials on one fill upload their streams once."""

    key: tuple[Any, ...]
    """What the program is, everything but its rate (compared with ``==``: the same mappings table is the same
    object, so the comparison is a pointer check)."""
    program: Program
    """The compiled program."""
    rate: float
    """The rate it was compiled at (multiplier 1)."""


class TRexTester:
    """RFC 9693 phase 1 and phase 2 on a TRex STL server (implements ``natbench.plugins.Tester``)."""

    abilities: ClassVar[TrialEvidence] = TrialEvidence(stops_failed_trials=True, tail_rates=True, receive_misses=True)
    """What a TRex trial tells a search beyond its final counts (the one place that says it): its port counters are
    read while a phase-2 trial runs, so it stops a failed trial once the loss watch has decided and gives the second
    half's forwarding rate and a stopped trial's shortfall (:mod:`~natbench.testers.trex.watch`); its ports' receive
    misses are reported as the tester's deviation."""

    def __init__(self, settings: TRexSettings, session: TRexSession | None = None) -> None:
        self.settings = settings
        self._session = session
        self._connected = False
        self._plan: TrafficPlan | None = None
        self._mappings: MappingTable | None = None
        self._mappings_from: object = None
        self._macs: dict[int, str] = {}
        self._ordered: tuple[MappingTable, str, MappingTable] | None = None
        self._resident: _Resident | None = None
        self._rx_delay_ms = settings.rx_delay_ms

    # -- connection ------------------------------------------------------------------------

    @property
    def _port_ids(self) -> dict[Port, int]:
        return {Port.PRIVATE: self.settings.ports[0], Port.PUBLIC: self.settings.ports[1]}

    def _connect(self) -> TRexSession:
        s = self.settings
        if self._session is None:
            self._session = TRexSession(s.address.endpoint_host, s.rpc_port, s.publisher_port, s.connect_timeout)
        if not self._connected:
            sess = self._session
            sess.connect()
            self._resident = None  # acquiring resets the ports: no streams on them
            ports = list(s.ports)
            if sess.port_count() and max(ports) >= sess.port_count():
                raise TesterError(f"TRex server {s.server} has {sess.port_count()} ports; settings ask for {ports}")
            sess.acquire(ports)
            sess.set_promiscuous(ports, False)
            sess.set_l2(s.ports[0], s.private_dst_mac)
            sess.set_l2(s.ports[1], s.public_dst_mac)
            self._macs = sess.port_macs(ports)
            self._connected = True
        return self._session

    # -- protocol --------------------------------------------------------------------------

    def prepare(self, traffic: TrafficPlan) -> None:
        """Check the plan against what TRex can do, compile phase 1 once offline, connect."""
        if traffic.responder_mode is ResponderMode.LEARN:
            raise TesterError(
                "the TRex tester cannot learn tuples (responder_mode learn): use compute for a DUT verified "
                "to preserve ports, or read to load the DUT's mappings through its recipe's show_mappings"
            )
        sess = self._connect()
        try:
            prg.compile_phase1(traffic, 1.0, cores=sess.cores_per_port, step=self.settings.step)
        except ValueError as exc:
            raise TesterError(f"phase 1 cannot be compiled for TRex: {exc}") from exc
        self._plan = traffic
        self._mappings = None
        self._mappings_from = None
        self._ordered = None
        self._resident = None

    def set_receive_timeout(self, seconds: float) -> None:
        """The metric's receive wait after the last frame (optional Tester hook; replaces ``rx_delay_ms``)."""
        if seconds < 0:
            raise TesterError(f"receive timeout must not be negative, got {seconds:g}")
        self._rx_delay_ms = round(seconds * 1000)

    def evidence(self) -> TrialEvidence:
        """The optional hook :class:`~natbench.plugins.tester.DeclaresEvidence`: :attr:`abilities` says it."""
        return self.abilities

    def load_mappings(self, mappings: Sequence[Mapping]) -> None:
        """Tuples read from the DUT (ResponderMode.READ) for :meth:`validate`; phase 2 also remembers them."""
        self._take_mappings(mappings)

    def _take_mappings(self, mappings: Sequence[Mapping]) -> None:
        """Keep ``mappings`` as a table (converted once per object handed in, not per trial)."""
        if mappings is not self._mappings_from:
            self._mappings = MappingTable.of(mappings)
            self._mappings_from = mappings

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        """N frames, each pair once, at ``rate`` from the private port (TRex does not learn: ``learned`` is None)."""
        plan = self._need_plan()
        sess = self._connect()
        cores, step = sess.cores_per_port, self.settings.step
        program, load = self._load(
            ("phase1", cores, step), rate, lambda r: prg.compile_phase1(plan, r, cores=cores, step=step)
        )
        return self._run_burst(program, Port.PRIVATE, Direction.FORWARD, rate, load, responder_mode=None)

    def validate(self, rate: float) -> PhaseResult:
        """One reverse frame per state-table entry, linearly (computed table or the DUT's mappings)."""
        plan = self._need_plan()
        sess = self._connect()
        read = plan.responder_mode is ResponderMode.READ
        if read and not self._mappings:
            raise TesterError("validation in responder mode read needs the DUT's mappings (load_mappings)")
        cores, mappings = sess.cores_per_port, self._mappings if read else None
        program, load = self._load(
            ("validation", cores, mappings),
            rate,
            lambda r: prg.compile_validation(plan, r, mappings=mappings, cores=cores),
        )
        return self._run_burst(
            program, Port.PUBLIC, Direction.REVERSE, rate, load, responder_mode=str(plan.responder_mode)
        )

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """``duration`` seconds at ``rate`` per direction; port counters for loss, latency streams when asked."""
        plan = self._need_plan()
        measure = self._phase2_options(plan, duration, measure)
        measure, delay_notes = trex_delay_measure(measure, duration)
        tags = tag_schedule(measure, rate, duration)
        if tags is not None and tags["capped"]:
            delay_notes.append(
                f"TRex tags at most half the trial's rate: {tags['sent']} of the {tags['frames']} tagged frames fit "
                f"between {tags['from_s']:g} s and the end of the trial"
            )
        sess = self._connect()
        cores, bias = sess.cores_per_port, self.settings.bias_tolerance
        # a latency stream keeps its own rate (tags per second, at most half the trial's): such a program is
        # compiled for its trial's rate; every other one runs at any rate through the multiplier
        # how the trial is watched (a stop, tail rates) is no part of the streams: the same upload serves them all
        traffic = dataclasses.replace(measure, stop=None, tail_rates=False)
        key = ("phase2", cores, bias, directions, traffic, rate if measure.latency else None)
        program, load = self._load(
            key, rate, lambda r: prg.compile_phase2(plan, r, directions, traffic, cores=cores, bias_tolerance=bias)
        )
        ids = self._port_ids
        active = [p for p in Port if program.on(p)]
        port_list = [ids[p] for p in active]
        watch = self._watch(active, measure)
        sess.clear_stats(list(ids.values()))
        pin = self._pin(sess, len(active))
        t0 = time.monotonic()
        sess.start(port_list, duration=duration, pin=pin, mult=load["multiplier"])
        started = time.monotonic()
        # the sending time counts from the start call's return: the call itself (78-117 ms seen live with many
        # streams) is no time the frames took
        timeout = duration + self.settings.timeout_margin
        if watch is None:
            wall = sess.wait(port_list, timeout, self._rx_delay_ms) - started
        else:
            watch.begin(started)
            wall = sess.wait(port_list, timeout, self._rx_delay_ms, watch=watch) - started
        stats = sess.stats()
        counts = self._counts(stats, active)
        latency: dict[Direction, LatencyStats] = {}
        pgs = [s.latency_pg_id for s in program.streams if s.latency_pg_id is not None]
        if pgs:
            latency = self._latency(sess.latency(pgs), program)
        stopped, nominal, allowance = self._stop_span(watch, started, rate, duration)
        intended = rate * nominal
        notes = self._rate_notes(stats, counts, intended, wall, nominal, continuous=True, allowance=allowance)
        checked, own, deviations = self._own_counters(sess, stats, counts, intended, wall, nominal, continuous=True)
        own["start_call_s"] = started - t0
        if watch is not None:
            own["watch"] = watch.record()
        if stopped and watch is not None and watch.stop_call is not None:
            own["stop"] = {
                "decided_s": watch.decided_s,
                "missing": list(watch.missing),
                "stop_call_s": round(watch.stop_call[1] - watch.stop_call[0], 6),
                "sending_s": round(nominal, 6),
            }
        notes.extend(checked)
        # the NAT64 latency reminder is for console users: the tester refused NAT64 latency above
        # unless the server runs --software, so here it would only mislead (seen live in every trial)
        notes.extend(n for n in (program.notes if measure.latency else ()) if n != prg.NAT64_LATENCY_NOTE)
        notes.extend(delay_notes)
        slowest = min(c.sent for c in counts.values()) if counts else 0
        most = max((c.sent for c in counts.values()), default=0)
        return PhaseResult(
            intended_rate=rate,
            # TRex sends rate x duration frames even when its core falls behind (the trial stretches)
            achieved_rate=slowest / self._sending_time(wall, nominal),
            # a stopped trial lasted as long as its frames took at the rate: the full trial's first part
            duration=most / rate if stopped else duration,
            stopped=stopped,
            tail_rates=watch.tail_rates() if watch is not None else {},
            shortfalls=watch.shortfalls() if watch is not None else {},
            counts=counts,
            latency=latency,
            tester_ok=not any(n.startswith("!") for n in notes),
            tester_note="; ".join(n.lstrip("!") for n in notes),
            responder_mode=str(plan.responder_mode),
            deviations=deviations,
            extra={
                "wall_s": wall,
                "rx_wait_s": self._rx_delay_ms / 1000,
                "streams": len(program.streams),
                "queue_full": _queue_full(stats),
                "pinned_cores": pin,
                **({"tag_schedule": tags} if tags is not None else {}),
                **load,
                **own,
            },
        )

    def facts(self) -> dict[str, Any]:
        """Kind (``trex``), client and server versions, ports, cores, MACs."""
        out: dict[str, Any] = {
            "kind": "trex",
            "server": self.settings.server,
            "rpc_port": self.settings.rpc_port,
            "ports": list(self.settings.ports),
            "software_mode": self.settings.software,
            "pin_cores": self.settings.pin_cores,
            "private_dst_mac": self.settings.private_dst_mac,
            "public_dst_mac": self.settings.public_dst_mac,
        }
        try:
            out["client"] = "lbr-trex-client " + importlib.metadata.version("lbr-trex-client")
        except importlib.metadata.PackageNotFoundError:
            out["client"] = "trex.stl.api (TRex install)"
        if self._session is not None and self._connected:
            out["server_version"] = self._session.version.get("version")
            out["cores_per_port"] = self._session.cores_per_port
            out["tester_macs"] = {str(k): v for k, v in self._macs.items()}
        return out

    def close(self) -> None:
        """Stop traffic and disconnect."""
        if self._session is not None:
            if self._connected:
                with contextlib.suppress(TesterError):
                    self._session.stop(list(self.settings.ports))
            self._session.close()
        self._connected = False

    # -- helpers ---------------------------------------------------------------------------

    def _need_plan(self) -> TrafficPlan:
        if self._plan is None:
            raise TesterError("prepare() was not called")
        return self._plan

    def _phase2_options(self, plan: TrafficPlan, duration: float, measure: Phase2Options) -> Phase2Options:
        """``measure`` checked against the plan and the server, with the DUT's mappings taken and (responder
        mode read) ordered once per (mappings, selection)."""
        if duration <= 0:
            raise TesterError("phase 2 duration must be positive")
        if measure.latency and plan.family is Family.NAT64 and not self.settings.software:
            raise TesterError(
                "NAT64 latency needs a TRex server started with --software (NIC latency filters match "
                "IPv4 ID / IPv6 flow label, which translation rewrites): start it so and set software: true"
            )
        if measure.mappings is not None:
            self._take_mappings(measure.mappings)
        if plan.responder_mode is ResponderMode.COMPUTE and measure.mappings and self._mappings is not None:
            table = self._mappings
            moved = np.flatnonzero((table.private_port != 0) & (table.private_port != table.public_port))
            if moved.size:
                m = table[int(moved[0])]
                raise TesterError(
                    f"responder mode compute, but the DUT changed {moved.size} source ports "
                    f"(e.g. {m.private_port} -> {m.public_port}): use responder_mode read"
                )
        if plan.responder_mode is ResponderMode.READ and self._mappings:
            # order the tuples once per (mappings, selection): a search runs many trials on the same table
            if self._ordered is None or self._ordered[0] is not self._mappings or self._ordered[1] != measure.selection:
                try:
                    ordered = prg.order_mappings(self._mappings, measure.selection, plan.seed)
                except ValueError as exc:
                    raise TesterError(str(exc)) from exc
                self._ordered = (self._mappings, measure.selection, ordered)
            measure = dataclasses.replace(measure, selection="linear", mappings=self._ordered[2])
        return measure

    def _stop_span(
        self, watch: TrialWatch | None, started: float, rate: float, duration: float
    ) -> tuple[bool, float, float | None]:
        """Whether the watch stopped the trial before its end, the seconds of sending it had, and the frame
        tolerance of a stopped trial (None: the trial ran to its end and the usual tolerance holds)."""
        stop_call = watch.stop_call if watch is not None else None
        if stop_call is None or stop_call[0] - started >= duration:
            return False, duration, None
        # the frames due by the stop: the sending ran from the start call's return to the stop call's return;
        # when in the stop call the server stopped is not known, so its length widens the full trial's tolerance
        nominal = stop_call[1] - started
        return True, nominal, self.settings.rate_tolerance * rate * duration + rate * (stop_call[1] - stop_call[0])

    def _watch(self, active: Sequence[Port], measure: Phase2Options) -> TrialWatch | None:
        """The reads of a phase-2 trial sending from the ports ``active``, when ``measure`` asks for a stop or tail
        rates and :attr:`abilities` gives them (None: the trial is not read until it ends)."""
        stop = measure.stop if self.abilities.stops_failed_trials else None
        tails = measure.tail_rates and self.abilities.tail_rates
        if stop is None and not tails:
            return None
        ids = self._port_ids
        lanes = [
            Lane(
                Direction.FORWARD if p is Port.PRIVATE else Direction.REVERSE,
                ids[p],
                ids[Port.PUBLIC if p is Port.PRIVATE else Port.PRIVATE],
            )
            for p in active
        ]
        return TrialWatch(lanes, stop, tails)

    def _pin(self, sess: TRexSession, active_ports: int) -> bool:
        """CORE_MASK_PIN for two active ports when the dual port has cores to split.

        Pinning gives each port of a dual port half of its data-plane cores; with one core
        (``-c 1``, ``low_end``, software mode on veth) that half is empty and the server
        refuses the start ("core_mask ... generates an empty set", seen live on v3.08), so
        both ports then share the core (CORE_MASK_SPLIT).
        """
        return self.settings.pin_cores and active_ports == 2 and sess.cores_per_port >= 2

    def _sending_time(self, wall: float, nominal: float) -> float:
        """Seconds the frames took: the wall time from start to idle less ``timing_slack``, at least nominal.

        The wall time includes the start RPC, TRex's start-up and the idle polling (a few
        ms live on v3.08, 5 % of a 60 ms burst); those are the overhead ``timing_slack``
        allows, so a burst within it sent at the intended rate, one beyond it at
        frames / (wall - slack).
        """
        return max(nominal, wall - self.settings.timing_slack)

    @staticmethod
    def _compile(build: Any) -> Program:
        try:
            result: Program = build()
        except ValueError as exc:
            raise TesterError(str(exc)) from exc
        return result

    def _streams(self, program: Program, port: Port) -> Iterator[list[Any]]:
        """The ``STLStream`` objects of ``program`` sent from ``port``, a few at a time (all of a chain of
        ``next`` streams in one batch: the client library resolves ``next`` within one call)."""
        from natbench.testers.trex.streams import build_stream

        plans = program.on(port)
        batch: list[Any] = []
        values = 0
        for i, plan in enumerate(plans):
            batch.append(build_stream(plan))
            values += sum(len(v.value_list) for v in plan.variables if v.value_list is not None)
            chained = plan.next is not None or (i + 1 < len(plans) and not plans[i + 1].self_start)
            if i + 1 < len(plans):
                following = sum(len(v.value_list) for v in plans[i + 1].variables if v.value_list is not None)
                full = len(batch) >= UPLOAD_BATCH or values + following > UPLOAD_VALUES
            else:
                full = True
            if full and not chained:
                yield batch
                batch, values = [], 0
        if batch:
            yield batch

    def _load(
        self, key: tuple[Any, ...], rate: float, build: Callable[[float], Program]
    ) -> tuple[Program, dict[str, Any]]:
        """The program of ``key`` on the server's ports, compiled and uploaded only when another one is there
        (streams are uploaded once per fill, not per trial: a read-mode phase 2 at 4,000,000 connections has 63
        streams of 65,535-tuple lists, 37-45 s to upload live). Returns it with what the trial records: the
        multiplier it runs at, whether it was uploaded now and how long compiling and uploading took."""
        resident = self._resident
        if resident is not None and resident.key == key:
            factor = rate / resident.rate
            return resident.program, {"multiplier": multiplier(factor), "uploaded": False}
        sess = self._connect()
        t0 = time.monotonic()
        program = self._compile(lambda: build(rate))
        compiled = time.monotonic()
        self._resident = None  # a failed upload leaves nothing known on the ports
        ids = self._port_ids
        for p in Port:
            sess.load(ids[p], self._streams(program, p))
        self._resident = _Resident(key, program, rate)
        return program, {
            "multiplier": multiplier(1.0),
            "uploaded": True,
            "compile_s": compiled - t0,
            "upload_s": time.monotonic() - compiled,
        }

    def _run_burst(
        self,
        program: Program,
        port: Port,
        direction: Direction,
        rate: float,
        load: dict[str, Any],
        responder_mode: str | None,
    ) -> PhaseResult:
        sess = self._connect()
        ids = self._port_ids
        frames = program.burst_frames(port) or 0
        nominal = frames / rate
        sess.clear_stats(list(ids.values()))
        t0 = time.monotonic()
        sess.start([ids[port]], pin=False, mult=load["multiplier"])
        started = time.monotonic()
        wall = sess.wait([ids[port]], nominal + self.settings.timeout_margin, self._rx_delay_ms) - started
        stats = sess.stats()
        counts = self._counts(stats, [port])
        notes = self._rate_notes(stats, counts, frames, wall, nominal, continuous=False)
        checked, own, deviations = self._own_counters(sess, stats, counts, frames, wall, nominal, continuous=False)
        own["start_call_s"] = started - t0
        notes.extend(checked)
        notes.extend(program.notes)
        sent = counts[direction].sent
        return PhaseResult(
            intended_rate=rate,
            achieved_rate=sent / self._sending_time(wall, nominal) if sent else 0.0,
            duration=self._sending_time(wall, nominal),
            counts=counts,
            tester_ok=not any(n.startswith("!") for n in notes),
            tester_note="; ".join(n.lstrip("!") for n in notes),
            learned=None,
            responder_mode=responder_mode,
            deviations=deviations,
            extra={
                "wall_s": wall,
                "rx_wait_s": self._rx_delay_ms / 1000,
                "frames": frames,
                "streams": len(program.streams),
                "step": program.step,
                "pinned": program.pinned,
                "enumeration": program.enumeration,
                "queue_full": _queue_full(stats),
                **load,
                **own,
            },
        )

    def _counts(self, stats: dict[Any, Any], senders: Sequence[Port]) -> dict[Direction, DirectionCounts]:
        ids = self._port_ids
        out: dict[Direction, DirectionCounts] = {}
        for p in senders:
            other = Port.PUBLIC if p is Port.PRIVATE else Port.PRIVATE
            sent = int(_port_stat(stats, ids[p], "opackets"))
            received = int(_port_stat(stats, ids[other], "ipackets"))
            # port counters cannot see the payload: with explicit MACs, promiscuous off and no
            # ARP/ND (static neighbours on the DUT) every received frame is a test frame
            out[Direction.FORWARD if p is Port.PRIVATE else Direction.REVERSE] = DirectionCounts(
                sent, received, received
            )
        return out

    def _rate_notes(
        self,
        stats: dict[Any, Any],
        counts: dict[Direction, DirectionCounts],
        intended_frames: float,
        wall: float,
        nominal: float,
        *,
        continuous: bool,
        allowance: float | None = None,
    ) -> list[str]:
        """Reasons the tester did not generate what was asked; a leading '!' marks the trial invalid.

        ``allowance``: frames a continuous trial may send fewer or more than ``intended_frames`` (default
        ``rate_tolerance`` of them; a stopped trial keeps the full trial's, and the stop call's uncertainty)."""
        tol = self.settings.rate_tolerance
        slack = intended_frames * tol if allowance is None else allowance
        notes: list[str] = []
        qf = _queue_full(stats)
        if qf:
            notes.append(f"!TRex send queue full {qf} times")
        for d, c in counts.items():
            if continuous:
                if c.sent < intended_frames - slack:
                    notes.append(
                        f"!{d}: sent {c.sent} of {intended_frames:.0f} frames ({c.sent / intended_frames:.2%})"
                    )
                elif c.sent > intended_frames + slack + 1:  # more than asked: a rate the trial did not intend
                    notes.append(
                        f"!{d}: sent {c.sent} frames for {intended_frames:.0f} intended"
                        f" ({c.sent / intended_frames - 1:.2%} over)"
                    )
            elif c.sent != intended_frames:
                notes.append(f"!{d}: sent {c.sent} of {intended_frames:.0f} frames")
            if c.received > c.sent:
                notes.append(f"!{d}: received {c.received} > sent {c.sent}: non-test frames reached the counters")
        # a core that cannot keep the rate still sends every frame, later: the trial stretches
        # (seen live on v3.08, software mode: 600,000 frames of a 2 s trial took 7.6 s)
        if wall > nominal * (1 + tol) + self.settings.timing_slack:
            what = "trial" if continuous else "burst"
            notes.append(f"!fell behind: {wall:.3f} s for a {nominal:.3f} s {what}")
        return notes

    def _own_counters(
        self,
        sess: TRexSession,
        stats: dict[Any, Any],
        counts: dict[Direction, DirectionCounts],
        intended_frames: float,
        wall: float,
        nominal: float,
        *,
        continuous: bool,
    ) -> tuple[list[str], dict[str, Any], dict[Direction, Deviation]]:
        """TRex's own receive drops, transmit errors and timing: notes ('!' = invalid), the trial's record and the
        tester's deviations.

        Every counter is relative to the ``clear_stats`` before the trial (port stats, xstats and
        ``queue_full``), so each is the trial's delta. Frames the tester's own receive path lost are
        not the DUT's loss, and not the whole trial's either: they are a :class:`~natbench.results.Deviation`
        (``missed``) of the direction received on that port, which the verdict weighs against the loss (a loss
        they can explain is invalid, a loss far beyond them the DUT's), as the software tester's socket drops;
        frames that arrived malformed (the DUT's loss) are recorded as ``rx_malformed`` and judged as loss
        (:mod:`~natbench.testers.trex.health`). Transmit errors make the trial invalid (the load fell short).
        Pacing warnings go to the record's ``pacing_warnings`` only (they do not change the verdict and stay out
        of ``tester_note``).
        """
        ports = list(self._port_ids.values())
        xstats: dict[int, dict[str, Any]] = {}
        record: dict[str, Any] = {}
        try:
            for p in ports:
                xstats[p] = sess.xstats(p)
        except TesterError as exc:  # port ierrors (which include the DPDK misses) are still judged
            record["xstats_error"] = str(exc)
        try:
            util = sess.utilization()
        except TesterError as exc:
            util = {}
            record["utilization_error"] = str(exc)
        drops = health.receive_drops(stats, xstats, ports)
        tx_errors = health.transmit_errors(stats, xstats, ports)
        notes = health.transmit_error_notes(tx_errors)
        # a port receives the frames of one direction: the public port the forward ones, the private the reverse
        received_on = {self._port_ids[Port.PUBLIC]: Direction.FORWARD, self._port_ids[Port.PRIVATE]: Direction.REVERSE}
        deviations = {
            received_on[p]: Deviation(missed=max(c.values()), notes=tuple(health.receive_drop_notes({p: c})))
            for p, c in drops.items()
            if p in received_on and received_on[p] in counts
        }
        busiest = health.busiest_core(util, wall + self._rx_delay_ms / 1000)
        warnings = health.pacing_warnings(
            {str(d): c.sent for d, c in counts.items()},
            intended_frames,
            wall,
            nominal,
            busiest,
            continuous=continuous,
            timing_slack=self.settings.timing_slack,
            busy_core_pct=self.settings.busy_core_pct,
            software=self.settings.software,
            rate_tolerance=self.settings.rate_tolerance,
        )
        slowest = min((c.sent for c in counts.values()), default=0)
        record.update(
            {
                "rx_drops": {str(p): c for p, c in drops.items()},
                "rx_malformed": {str(p): c for p, c in health.receive_errors(xstats, ports).items()},
                "tx_errors": {str(p): c for p, c in tx_errors.items()},
                "trex": {
                    **health.timing(stats, ports),
                    "nominal_s": nominal,
                    "start_to_idle_s": wall,
                    "sent_ratio": slowest / intended_frames if intended_frames else None,
                    "busiest_core_pct": busiest,
                    "software_mode": self.settings.software,
                },
                "pacing_warnings": warnings,
            }
        )
        return notes, record, deviations

    def _latency(self, pgid: dict[Any, Any], program: Program) -> dict[Direction, LatencyStats]:
        out: dict[Direction, LatencyStats] = {}
        lat = pgid.get("latency", {})
        flow = pgid.get("flow_stats", {})
        for s in program.streams:
            if s.latency_pg_id is None:
                continue
            entry = lat.get(s.latency_pg_id)
            if entry is None:
                continue
            rx = flow.get(s.latency_pg_id, {}).get("rx_pkts", {}).get("total", 0)
            stats = latency_from_pgid(entry, int(rx))
            if stats is not None:
                out[s.direction] = stats
        return out


def trex_delay_measure(measure: Phase2Options, duration: float) -> tuple[Phase2Options, list[str]]:
    """What TRex can do of ``measure`` (RFC 8219 7.2, 7.3.1) in a ``duration`` s trial, and notes on the rest.

    Tagged frames: TRex's latency stream starts ``latency_delay`` after the port (its inter-stream gap) and
    sends ``latency_frames`` frames evenly over the rest of the trial (a burst at frames / remaining seconds).
    PDV over all frames: TRex timestamps only its latency streams, so a PDV trial gets one latency stream
    per direction over the whole trial instead and is marked as timed from tagged frames."""
    notes: list[str] = []
    if measure.all_delays:
        measure = dataclasses.replace(measure, latency=True, all_delays=False, latency_delay=0.0, latency_frames=None)
        notes.append("TRex times only its latency streams: PDV from tagged frames, not from every frame")
    if measure.latency and measure.latency_frames:
        window = duration - measure.latency_delay
        if window <= 0:
            raise TesterError(f"latency_delay {measure.latency_delay:g} s leaves nothing of a {duration:g} s trial")
        measure = dataclasses.replace(measure, latency_rate=measure.latency_frames / window)
    return measure, notes


def tag_schedule(measure: Phase2Options, rate: float, duration: float) -> dict[str, Any] | None:
    """When TRex sends a trial's tagged frames (its latency stream per direction), as the trial records it
    (``extra["tag_schedule"]``): ``from_s`` (the first, after the warm-up), ``until_s`` (the last), ``per_s``,
    ``frames`` (asked; None: tagged all along at ``per_s``), ``sent`` (those inside the trial), ``spread``
    (``even``: evenly over the window, as RFC 8219 7.2 asks) and ``capped`` (the stream, held to half the trial's
    rate, could not fit them: fewer tags, later). None without tagged frames."""
    if not measure.latency:
        return None
    per_s = min(measure.latency_rate, rate / 2)
    start = measure.latency_delay
    if measure.latency_frames:
        frames = int(measure.latency_frames)
        until = start + (frames - 1) / per_s
        sent = min(frames, int((duration - start) * per_s + 1e-9) + 1) if duration > start else 0
    else:
        frames = None
        until = duration
        sent = int((duration - start) * per_s)
    return {
        "from_s": start,
        "until_s": min(until, duration),
        "per_s": per_s,
        "frames": frames,
        "sent": sent,
        "spread": "even",
        "capped": frames is not None and sent < frames,
        "connections": 1,
    }


def _port_stat(stats: dict[Any, Any], port: int, key: str) -> int:
    entry = stats.get(port, stats.get(str(port), {}))
    return int(entry.get(key, 0))


def _queue_full(stats: dict[Any, Any]) -> int:
    return int(stats.get("global", {}).get("queue_full", 0) or 0)
