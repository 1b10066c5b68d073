"""The built-in software tester: RFC 9693 phase 1 / phase 2 over AF_PACKET sockets.

Python only prepares arrays and templates and interprets counts; every frame
is built, paced, sent, received, checked and timed by the C data path
(``natbench.testers.software._engine``), one trial per call with the GIL
released, on the tester's own CPU(s).
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import os
import platform
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from natbench.errors import TesterError
from natbench.plugins import Directions, HostLoadProbe, Mapping, MappingTable, Phase2Options, Port, TrialEvidence
from natbench.plugins.settings import DEFAULT_RATE_TOLERANCE
from natbench.plugins.tester import LossStop
from natbench.results import Direction, DirectionCounts, LatencyStats, PhaseResult
from natbench.testers.delaystats import exact_stats, histogram_stats
from natbench.testers.software.lanes import LaneRunner, split_lanes
from natbench.testers.software.outcome import Pacing, deviations, rate_check, span, tester_extra
from natbench.testers.software.probes import softnet_drops
from natbench.testers.software.specs import ENGINE_IMPORT_ERROR, RxMode, RxPort, TxMode, TxStream, _engine
from natbench.testers.software.watch import watch_block, watching
from natbench.traffic.enumeration import EnumerationOrder, PortEnumeration, SplitMix64
from natbench.traffic.frames import FLAG_PHASE1, FLAG_PHASE2, FLAG_REVERSE, FLAG_VALIDATION, build_frame
from natbench.traffic.plan import ResponderMode, TrafficPlan
from natbench.version import __version__

SELECTIONS = {"random": TxMode.TUPLE_RANDOM, "linear": TxMode.TUPLE_LINEAR, "fixed": TxMode.TUPLE_FIXED}
"""How the reverse stream picks its tuples, by ``Phase2Options.selection``."""


@dataclass(frozen=True)
class _Phase2:
    """What one phase-2 trial asks of the data path, and the buffers it fills."""

    count: int
    """Frames per direction (effectively unlimited for an unlimited rate)."""
    tags: tuple[int, int, int]
    """(first tagged frame, spacing, number of tagged frames or 0) of :func:`tag_schedule`."""
    tx: list[TxStream]
    """A stream per active direction."""
    rx: list[RxPort]
    """The port receiving each stream."""
    latency: dict[Direction, np.ndarray]
    """Each tagged direction's delay buffer."""
    hists: dict[Direction, np.ndarray]
    """Each direction's histogram of all frames' delays (PDV)."""
    responder_mode: str | None
    """How the reverse stream's tuples were known (None: no reverse direction)."""


class SoftwareTester:
    """natbench's built-in Tester: Initiator on ``initiator``, Responder on ``responder``.

    Rates are frames per second per direction. A trial in which the sender
    fell behind the intended rate (its last frame left later than its due time
    by more than ``rate_tolerance`` of the trial's intended duration, or than
    ``lateness_slack`` seconds if that is larger) is reported with
    ``tester_ok=False`` so the procedure marks it invalid. What the tester did
    without failing the trial is reported as a :class:`~natbench.results.Deviation`
    of the direction it touched, which the verdict weighs against the loss: a
    stall it caught up with (the backlog it then sent faster than the rate, at
    most ``catchup`` x the rate) and frames its own receive socket or CPU backlog
    dropped.

    With two or more ``cpus`` a trial runs as two lanes, one thread each: all
    that is sent and received on the Initiator port on the first CPU, all on
    the Responder port on the second (so phase 1 sends on one CPU and learns
    on the other; bidirectional phase 2 gives each CPU one direction's
    sending and the other's receiving). One CPU: one thread does it all.

    Phase 1 walks all pairs in the ``enumeration`` order: ``feistel`` (default, a
    keyed permutation of every (source, destination) pair) or ``product`` (the
    order of natbench before it, and of TRex: kept to reproduce earlier runs);
    see :mod:`natbench.traffic.enumeration`. Either way the frame's sequence
    number is its frame index k and the Responder's learned table is indexed by k
    (the order in which the connections were created).
    """

    def __init__(
        self,
        initiator: Port,
        responder: Port,
        *,
        cpus: Sequence[int] | None = None,
        timeout: float = 1.0,
        rate_tolerance: float = DEFAULT_RATE_TOLERANCE,
        rcvbuf: int = 64 << 20,
        lateness_slack: float = 0.0005,
        max_stall: float = 0.002,
        catchup: float = 2.0,
        realtime: bool = True,
        before_prepare: Callable[[], None] | None = None,
        enumeration: str = EnumerationOrder.FEISTEL,
        host_load: HostLoadProbe | None = None,
    ) -> None:
        if _engine is None:
            raise TesterError(f"software tester data path is not built ({ENGINE_IMPORT_ERROR}); run: pip install -e .")
        self.initiator = initiator
        self.responder = responder
        self.cpus = tuple(cpus) if cpus else None
        self.receive_timeout = float(timeout)
        """Seconds to keep receiving after the last frame was sent (stops early once all arrived)."""
        self.rate_tolerance = float(rate_tolerance)
        """Largest accepted lateness of the last frame, relative to the trial's intended duration."""
        self.lateness_slack = float(lateness_slack)
        """Lateness (s) always accepted, for very short trials (scheduler wake-up jitter)."""
        self.max_stall = float(max_stall)
        """Longest moment behind schedule (s) that is no deviation; beyond it (and beyond one batch) the trial
        records the backlog as a :class:`~natbench.results.Deviation` (a clump) of its direction."""
        if not catchup >= 1.0:
            raise TesterError(f"catchup must be at least 1 (a multiple of the rate), got {catchup!r}")
        self.catchup = float(catchup)
        """After falling behind, frames go out at most at this multiple of the rate until the backlog is sent."""
        self.realtime = bool(realtime)
        """Run the data path as SCHED_FIFO (when permitted) so other processes cannot preempt it."""
        self.before_prepare = before_prepare
        """Called at the start of every ``prepare`` (the lab re-installs the DUT's static neighbours)."""
        self.host_load = host_load
        """The lab's probe of what other processes took of the tester's and the DUT's CPUs (None: not in a lab)."""
        try:
            self.enumeration = EnumerationOrder(enumeration)
            """Phase-1 order of the pairs: ``feistel`` (all pairs permuted) or ``product`` (earlier runs, TRex)."""
        except ValueError:
            orders = ", ".join(str(o) for o in EnumerationOrder)
            raise TesterError(f"unknown enumeration order {enumeration!r} (known: {orders})") from None
        self._fds: list[int] = []
        try:
            self._fd_init = _engine.open_port(initiator.interface, initiator.netns_path, rcvbuf)
            self._fds.append(self._fd_init)
            self._fd_resp = _engine.open_port(responder.interface, responder.netns_path, rcvbuf)
            self._fds.append(self._fd_resp)
        except OSError as exc:
            self.close()
            raise TesterError(f"cannot open tester port: {exc}") from exc
        self._tag = random.SystemRandom().randrange(1, 0xFFFF)
        self._plan: TrafficPlan | None = None
        self._learned: np.ndarray | None = None
        self._tuples: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self._loaded: MappingTable | None = None
        self._trial = 0

    # ------------------------------------------------------------------ Tester protocol

    def prepare(self, traffic: TrafficPlan) -> None:
        """Build frame templates and the enumeration arrays for one working point."""
        if self.before_prepare is not None:
            self.before_prepare()
        if traffic.connections >= 2**32:
            raise TesterError(f"{traffic.connections} connections exceed the 32-bit sequence space")
        a = traffic.addresses
        self._fwd_ipv6 = traffic.family.private_ipv6
        self._rev_ipv6 = traffic.family.public_ipv6
        self._fwd_template = build_frame(
            src_mac=self.initiator.mac,
            dst_mac=self.initiator.peer_mac,
            src=a.initiator,
            dst=traffic.forward_destination,
            sport=0,
            dport=0,
            frame_size=traffic.private_frame_size,
        )
        self._rev_template = build_frame(
            src_mac=self.responder.mac,
            dst_mac=self.responder.peer_mac,
            src=a.responder,
            dst=traffic.reverse_destination,
            sport=0,
            dport=0,
            frame_size=traffic.public_frame_size,
        )
        enum = replace(traffic.enumeration, order=self.enumeration)
        self._enum: PortEnumeration = enum
        self._src = np.ascontiguousarray(enum.sources, dtype=np.uint16)
        self._dst = np.ascontiguousarray(enum.destinations, dtype=np.uint16)
        self._plan = traffic
        self._learned = None
        self._tuples = None
        self._loaded = None

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        """Send every enumerated pair once at ``rate``; with ``learn`` record the translated source ports."""
        plan = self._need_plan()
        n = plan.connections
        learned = np.zeros(n, dtype=np.uint16) if learn else None
        order, perm_seed = self._order()
        tx = TxStream(
            self._fd_init,
            TxMode.ENUM,
            self._fwd_template,
            self._fwd_ipv6,
            self._src,
            self._dst,
            count=n,
            rate=float(rate),
            flags=FLAG_PHASE1,
            order=order,
            perm_seed=perm_seed,
        )
        rx = RxPort(
            self._fd_resp,
            RxMode.LEARN if learn else RxMode.ENUM_CHECK,
            expect=n,
            dst=self._dst,
            nsrc=len(self._src),
            learned=learned,
            want_src4=_expected_source4(plan),
            order=order,
            perm_seed=perm_seed,
        )
        raw = self._run([tx], [rx])
        t, r = raw["tx"][0], raw["rx"][0]
        counts = {Direction.FORWARD: DirectionCounts(t["sent"], r["received"], r["valid"])}
        ok, notes, achieved = rate_check([t], rate, self._pacing())
        found = deviations([Direction.FORWARD], [t], [r], rate, raw["softnet_drops"], self._pacing())
        learned_n: int | None = None
        if learn:
            assert learned is not None
            self._learned = learned
            self._tuples = None
            learned_n = int(r["learned"])
        extra = tester_extra(raw)
        extra["enumeration"] = str(self._enum.order)
        extra["duplicates"] = int(r["dup"])
        extra["inconsistent"] = int(r["bad"])
        if r["foreign_source"]:
            extra["foreign_source"] = int(r["foreign_source"])
        return PhaseResult(
            intended_rate=float(rate),
            achieved_rate=achieved,
            duration=span(t),
            counts=counts,
            tester_ok=ok,
            tester_note="; ".join(notes),
            learned=learned_n,
            responder_mode=str(ResponderMode.LEARN) if learn else None,
            extra=extra,
            deviations=found,
        )

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """Send ``duration`` seconds at ``rate`` per direction; count valid frames; time tagged frames."""
        self._need_plan()
        directions = Directions(directions)
        trial = self._phase2_trial(rate, duration, directions, measure)
        unlimited = not math.isfinite(rate)
        sampled = (measure.stop is not None or measure.tail_rates) and not unlimited
        tx, rx, watch = trial.tx, trial.rx, None
        if sampled:
            tx, rx, watch = watch_block(tx, rx)
        raw = self._run(
            tx, rx, timestamps=bool(trial.tags[1]) or measure.all_delays, watch=watch, stop=measure.stop,
            tails=measure.tail_rates,
        )  # fmt: skip
        for t, asked in zip(raw["tx"], tx, strict=True):
            t["planned"] = int(asked.count)  # a stopped stream's count is the frames due at the stop
        return self._phase2_result(rate, directions, trial, raw)

    def _phase2_trial(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> _Phase2:
        """The streams, ports and buffers of a phase-2 trial: a stream per active direction (forward: random ports;
        reverse: the Responder's known tuples), each received on the other port."""
        unlimited = not math.isfinite(rate)
        count = 2**62 if unlimited else max(round(rate * duration), 1)
        tags = tag_schedule(count, rate, measure) if measure.latency and not unlimited else (0, 0, 0)
        tag_start, tag_every, tag_count = tags
        stream = TxStream(
            self._fd_init,
            TxMode.RANDOM,
            self._fwd_template,
            self._fwd_ipv6,
            self._src,
            self._dst,
            count=count,
            rate=0.0 if unlimited else float(rate),
            flags=FLAG_PHASE2,
            time_limit=float(duration) if unlimited else 0.0,
            tag_every=tag_every,
            tag_start=tag_start,
            tag_count=tag_count,
            stamp_each=measure.all_delays,  # PDV: every frame its own send stamp
        )
        self._trial += 1
        txs: list[TxStream] = []
        rxs: list[RxPort] = []
        lat: dict[Direction, np.ndarray] = {}
        hists: dict[Direction, np.ndarray] = {}
        mode_used: str | None = None
        for d in directions.active:
            tagged_max = tag_count or (max(count - tag_start, 0) // tag_every + 1 if tag_every else 0)
            lat_buf = np.zeros(tagged_max + 16, dtype=np.int64) if tag_every else None
            if lat_buf is not None:
                lat[d] = lat_buf
            # PDV over all frames: a fixed-size histogram per direction (224 KiB), whatever the trial's length
            hist = np.zeros(_engine.HIST_SIZE, dtype=np.uint64) if measure.all_delays else None
            if hist is not None:
                hists[d] = hist
            if d is Direction.FORWARD:
                txs.append(replace(stream, seed=self._seed(1)))
                rxs.append(RxPort(self._fd_resp, RxMode.ANY, expect=count, latency=lat_buf, delay_hist=hist))
                continue
            sport, dport, expect, mode_used = self._reverse_tuples(measure)
            reverse = replace(
                stream,
                fd=self._fd_resp,
                mode=SELECTIONS[measure.selection],
                template=self._rev_template,
                ipv6=self._rev_ipv6,
                a=sport,
                b=dport,
                flags=FLAG_PHASE2 | FLAG_REVERSE,
                seed=self._seed(2),
            )
            txs.append(reverse)
            rxs.append(
                RxPort(
                    self._fd_init,
                    RxMode.TUPLE_CHECK,
                    expect=count,
                    reverse=True,
                    tuple_sport=sport,
                    tuple_expect=expect,
                    latency=lat_buf,
                    delay_hist=hist,
                )
            )
        return _Phase2(count, tags, txs, rxs, lat, hists, mode_used)

    def _phase2_result(self, rate: float, directions: Directions, trial: _Phase2, raw: dict[str, Any]) -> PhaseResult:
        """What a phase-2 trial's counts say, per direction: counts, latency, deviations; and the trial's facts."""
        active = list(directions.active)
        counts: dict[Direction, DirectionCounts] = {}
        latency: dict[Direction, LatencyStats] = {}
        for d, t, r in zip(active, raw["tx"], raw["rx"], strict=True):
            counts[d] = DirectionCounts(t["sent"], r["received"], r["valid"])
            if d in trial.hists and r["delay_frames"]:
                latency[d] = histogram_stats(trial.hists[d], r["delay_min"], r["delay_max"])
            elif d in trial.latency and r["latency_samples"]:
                latency[d] = exact_stats(trial.latency[d][: r["latency_samples"]])
        ok, notes, achieved = rate_check(raw["tx"], rate, self._pacing())
        stopped = any(int(t.get("stopped", 0)) for t in raw["tx"])
        tail = raw.get("tail_rates")
        short = raw.get("shortfalls")
        return PhaseResult(
            intended_rate=float(rate),
            achieved_rate=achieved,
            duration=max(span(t) for t in raw["tx"]),
            counts=counts,
            latency=latency,
            tester_ok=ok,
            tester_note="; ".join(notes),
            responder_mode=trial.responder_mode,
            extra=self._phase2_extra(rate, active, trial, raw, stopped),
            deviations=deviations(active, raw["tx"], raw["rx"], rate, raw["softnet_drops"], self._pacing()),
            stopped=stopped,
            tail_rates={d: round(float(v), 1) for d, v in zip(active, tail, strict=True)} if tail else {},
            shortfalls={d: round(float(v), 1) for d, v in zip(active, short, strict=True)} if short else {},
        )

    @staticmethod
    def _phase2_extra(
        rate: float, active: list[Direction], trial: _Phase2, raw: dict[str, Any], stopped: bool
    ) -> dict[str, Any]:
        """A phase-2 trial's facts: the tester's, inconsistent frames, the tag schedule, negative delays, the stop."""
        extra = tester_extra(raw)
        extra["inconsistent"] = {str(d): int(r["bad"]) for d, r in zip(active, raw["rx"], strict=True)}
        tag_start, tag_every, _ = trial.tags
        if tag_every:
            # when the first tagged frame was due (RFC 8219 7.2: after the warm-up), and the spacing
            extra["tagging"] = {"first_frame": tag_start, "every": tag_every, "first_s": tag_start / rate}
        if trial.hists:
            extra["delay_negative"] = {
                str(d): int(r["delay_negative"]) for d, r in zip(active, raw["rx"], strict=True) if d in trial.hists
            }
        if stopped and "stop_decided_s" in raw:  # what the watch saw when it asked for the stop
            extra["stop"] = {"decided_s": raw["stop_decided_s"], "missing": raw["stop_missing"]}
        return extra

    def load_mappings(self, mappings: Sequence[Mapping]) -> None:
        """Use the DUT's tuples (``ResponderMode.READ``) for :meth:`validate` until the next prepare."""
        self._loaded = MappingTable.of(mappings)

    def set_receive_timeout(self, seconds: float) -> None:
        """Wait ``seconds`` after the last frame before counting, from the next trial on."""
        self.receive_timeout = float(seconds)

    def validate(self, rate: float) -> PhaseResult:
        """Send one reverse frame per known tuple, reading the state table linearly; count arrivals."""
        return self._validate(rate, None)

    def validate_sample(self, rate: float, count: int) -> PhaseResult:
        """The optional sampling hook: one reverse frame to each of ``count`` known tuples spread evenly over the
        table (every tuple when there are fewer), as :meth:`validate` does for all of them."""
        return self._validate(rate, count)

    def _validate(self, rate: float, count: int | None) -> PhaseResult:
        plan = self._need_plan()
        loaded = self._loaded if plan.responder_mode is ResponderMode.READ else None
        sport, dport, expect, mode_used = self._reverse_tuples(Phase2Options(mappings=loaded))
        if count is not None and 0 < count < len(sport):
            pick = np.unique(np.linspace(0, len(sport) - 1, count).astype(np.int64))
            sport, dport = np.ascontiguousarray(sport[pick]), np.ascontiguousarray(dport[pick])
            expect = None if expect is None else np.ascontiguousarray(expect[pick])
        n = len(sport)
        tx = TxStream(
            self._fd_resp,
            TxMode.TUPLE_LINEAR,
            self._rev_template,
            self._rev_ipv6,
            sport,
            dport,
            count=n,
            rate=float(rate),
            flags=FLAG_VALIDATION | FLAG_REVERSE,
        )
        rx = RxPort(self._fd_init, RxMode.TUPLE_CHECK, expect=n, reverse=True, tuple_sport=sport, tuple_expect=expect)
        raw = self._run([tx], [rx])
        t, r = raw["tx"][0], raw["rx"][0]
        ok, notes, achieved = rate_check([t], rate, self._pacing())
        return PhaseResult(
            intended_rate=float(rate),
            achieved_rate=achieved,
            duration=span(t),
            counts={Direction.REVERSE: DirectionCounts(t["sent"], r["received"], r["valid"])},
            tester_ok=ok,
            tester_note="; ".join(notes),
            responder_mode=mode_used,
            extra=tester_extra(raw),
            deviations=deviations([Direction.REVERSE], [t], [r], rate, raw["softnet_drops"], self._pacing()),
        )

    def facts(self) -> dict[str, Any]:
        """Backend, data path, ports, CPUs, kernel."""
        return {
            "kind": "software",
            "natbench_version": __version__,
            "data_path": f"C extension, AF_PACKET sendmmsg/recvmmsg, batch {_engine.BATCH}",
            "initiator": {"interface": self.initiator.interface, "netns": self.initiator.netns},
            "responder": {"interface": self.responder.interface, "netns": self.responder.netns},
            "cpus": list(self.cpus) if self.cpus else sorted(os.sched_getaffinity(0)),
            "receive_timeout": self.receive_timeout,
            "rate_tolerance": self.rate_tolerance,
            "lateness_slack": self.lateness_slack,
            "max_stall": self.max_stall,
            "catchup": self.catchup,
            "realtime": self.realtime,
            "enumeration": str(self.enumeration),
            "kernel": platform.release(),
        }

    def host_load_probe(self) -> HostLoadProbe | None:
        """The optional :class:`~natbench.plugins.tester.WatchesHostLoad` hook: the lab's host-load probe."""
        return self.host_load

    def close(self) -> None:
        """Close the sockets."""
        for fd in self._fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds = []

    # ------------------------------------------------------------------ extras

    @property
    def learned(self) -> np.ndarray | None:
        """Responder state table: translated source port per phase-1 frame index k (0 = not learned); frame k
        carried the pair ``self.pair_indices(k)`` of the enumeration."""
        return self._learned

    def pair_indices(self, frames: np.ndarray) -> np.ndarray:
        """Pair index j = pi(k) of phase-1 frame indices k in this point's order (S'[j mod |S|], D'[j div |S|])."""
        self._need_plan()
        return self._enum.pair_indices(frames)

    def __enter__(self) -> SoftwareTester:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ internals

    def _need_plan(self) -> TrafficPlan:
        if self._plan is None:
            raise TesterError("prepare() was not called")
        if not self._fds:
            raise TesterError("tester is closed")
        return self._plan

    def _order(self) -> tuple[EnumerationOrder, int | None]:
        """The phase-1 order and its key (None for the product order), as the data path takes them (tx stream and rx
        port alike)."""
        if self._enum.order is EnumerationOrder.PRODUCT:
            return EnumerationOrder.PRODUCT, None
        return EnumerationOrder.FEISTEL, self._enum.permutation_seed

    def _pacing(self) -> Pacing:
        """How late and how far behind this tester may send (its settings as they are now)."""
        return Pacing(self.rate_tolerance, self.lateness_slack, self.max_stall, self.catchup)

    def _seed(self, stream: int) -> int:
        assert self._plan is not None
        return SplitMix64(self._plan.seed ^ (self._trial * 0x9E3779B97F4A7C15) ^ (stream << 56)).next()

    def _reverse_tuples(self, measure: Phase2Options) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, str]:
        """(Responder ports, DUT public ports, expected Initiator ports or None, responder mode)."""
        plan = self._plan
        assert plan is not None
        if measure.mappings is not None:
            maps = MappingTable.of(measure.mappings)  # the DUT's columns as they are: no copy per trial
            if not maps:
                raise TesterError("no mappings were read from the DUT")
            expect = maps.private_port if maps.private_ports_known else None
            return maps.remote_port, maps.public_port, expect, str(ResponderMode.READ)
        if self._tuples is None:
            if plan.responder_mode is not ResponderMode.COMPUTE and self._learned is None:
                raise TesterError("no learned tuples: run phase1(learn=True) first, or read mappings from the DUT")
            learned = None if plan.responder_mode is ResponderMode.COMPUTE else self._learned
            self._tuples = responder_arrays(self._enum, self._src, self._dst, learned)
        mode = ResponderMode.COMPUTE if plan.responder_mode is ResponderMode.COMPUTE else ResponderMode.LEARN
        s, d, e = self._tuples
        return s, d, e, str(mode)

    def evidence(self) -> TrialEvidence:
        """What the software tester tells of a phase-2 trial: a thread samples its counts every
        :data:`SAMPLE_PERIOD` seconds, so it stops a failed trial (:class:`~natbench.testers.losswatch.LossWatch`)
        and gives the second half's forwarding rate (:class:`~natbench.testers.tailrate.TailRate`); its receive side
        reports the frames it missed (``Deviation.missed``); its timer's slack is ``lateness_slack``, the lateness its
        own pacing check allows the last frame of any phase."""
        return TrialEvidence(
            stops_failed_trials=True, tail_rates=True, receive_misses=True, pacing_slack=self.lateness_slack
        )

    def _run(
        self,
        tx: list[TxStream],
        rx: list[RxPort],
        timestamps: bool = False,
        watch: np.ndarray | None = None,
        stop: LossStop | None = None,
        tails: bool = False,
    ) -> dict[str, Any]:
        """One trial on the data path: its lanes (:mod:`natbench.testers.software.lanes`) while the watch thread
        samples the counts (:mod:`natbench.testers.software.watch`); the raw counts, with the outcome of the watch
        and the tester CPUs' backlog drops during the trial."""
        self._tag = self._tag % 0xFFFF + 1
        tx = [t if t.catchup is not None else replace(t, catchup=self.catchup) for t in tx]
        for fd in (self._fd_init, self._fd_resp):
            _engine.timestamps(fd, timestamps)
            _engine.drain(fd)
        softnet_before = softnet_drops(self.cpus)
        lanes = split_lanes(self.cpus, tx, rx, (self._fd_init, self._fd_resp))
        runner = LaneRunner(self.cpus, self.realtime, self.receive_timeout, self._tag)
        with watching(watch, stop, len(tx), tails) as outcome:
            raw = runner.run(lanes, tx, rx, watch)
        raw.update(outcome)
        raw["softnet_drops"] = softnet_drops(self.cpus) - softnet_before
        return raw


def _expected_source4(plan: TrafficPlan) -> int:
    """IPv4 source address phase-1 frames must arrive with (the NAT's public address), as an int; 0: not
    checked (an IPv6 public side, or no translation)."""
    public = plan.addresses.dut_public
    if plan.family.translates and isinstance(public, ipaddress.IPv4Address):
        return int(public)
    return 0


def pair_indices(enum: PortEnumeration) -> np.ndarray:
    """pi(k) of every phase-1 frame index k (uint32, int64 for the product order's identity), by the data path's
    own code: bench/enumeration_order.py measured it 9x as fast as numpy's form (0.09 s against 0.76 s for 4M
    connections), time that would pass between a fill and the trial that needs the table."""
    n = enum.size
    if enum.order is EnumerationOrder.PRODUCT:
        return np.arange(n, dtype=np.int64)
    out = np.empty(n, dtype=np.uint32)
    _engine.permute(_engine.ORDER_FEISTEL, n, enum.permutation_seed, out)
    return out


def responder_arrays(
    enum: PortEnumeration, src: np.ndarray, dst: np.ndarray, learned: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Responder's tuples for reverse traffic (computed, or learned when ``learned`` is given): per connection
    the Responder port, the DUT's public port and the Initiator's port, three uint16 arrays (6 bytes a connection;
    the frame indices in between take 4-8 more while they are built). TesterError when nothing was learned."""
    n_src = len(src)
    if learned is None:
        pair = pair_indices(enum)
        public = src[pair % n_src]
    else:
        frames = np.flatnonzero(learned)  # phase-1 frame indices k, in the order they were sent
        if frames.size == 0:
            raise TesterError("the Responder learned no tuple in phase 1")
        pair = pair_indices(enum)[frames]
        public = learned[frames]
    return (
        np.ascontiguousarray(dst[pair // n_src]),
        np.ascontiguousarray(public, dtype=np.uint16),
        np.ascontiguousarray(src[pair % n_src]),
    )


def tag_schedule(count: int, rate: float, measure: Phase2Options) -> tuple[int, int, int]:
    """(first tagged frame, spacing in frames, number of tagged frames or 0 for no limit) of a trial of
    ``count`` frames at ``rate`` (RFC 8219 7.2): frame k is due k / rate after the start, so the first
    tagged one is the first due at or after ``latency_delay``; ``latency_frames`` are spread evenly over
    the frames from there to the end, or one is tagged every ``rate / latency_rate`` frames."""
    start = min(math.ceil(measure.latency_delay * rate), count)
    window = count - start
    if window <= 0:
        return start, 0, 0
    if measure.latency_frames:
        n = min(int(measure.latency_frames), window)
        return start, max(window // n, 1), n
    return start, max(int(rate // measure.latency_rate), 1), 0
