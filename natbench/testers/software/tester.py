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
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from natbench.errors import TesterError
from natbench.plugins import Directions, HostLoadProbe, Mapping, MappingTable, Phase2Options, Port
from natbench.plugins.settings import DEFAULT_RATE_TOLERANCE
from natbench.plugins.tester import LossStop
from natbench.results import Deviation, Direction, DirectionCounts, LatencyStats, PhaseResult
from natbench.testers.delaystats import exact_stats, histogram_stats
from natbench.testers.losswatch import SAMPLE_PERIOD, LossWatch
from natbench.testers.tailrate import TailRate
from natbench.traffic.enumeration import EnumerationOrder, PortEnumeration, SplitMix64
from natbench.traffic.frames import FLAG_PHASE1, FLAG_PHASE2, FLAG_REVERSE, FLAG_VALIDATION, build_frame
from natbench.traffic.plan import ResponderMode, TrafficPlan
from natbench.version import __version__

__all__ = ["SoftwareTester", "pair_indices", "read_mac", "responder_arrays"]

try:
    import natbench.testers.software._engine as _engine
except ImportError as exc:  # pragma: no cover - only without a build
    _engine = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None


@dataclass(frozen=True)
class _Lane:
    """The part of one trial a single data-path thread runs: indices into the trial's tx and rx lists."""

    cpu: int | None
    tx: list[int]
    rx: list[int]


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
            raise TesterError(f"software tester data path is not built ({_IMPORT_ERROR}); run: pip install -e .")
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
        tx = {
            "fd": self._fd_init,
            "mode": _engine.TX_ENUM,
            "template": self._fwd_template,
            "ipv6": self._fwd_ipv6,
            "a": self._src,
            "b": self._dst,
            "count": n,
            "rate": float(rate),
            "flags": FLAG_PHASE1,
            **self._order_args(),
        }
        rx = {
            "fd": self._fd_resp,
            "mode": _engine.RX_LEARN if learn else _engine.RX_ENUM_CHECK,
            "dst": self._dst,
            "nsrc": len(self._src),
            "learned": learned,
            "expect": n,
            "want_src4": _expected_source4(plan),
            **self._order_args(),
        }
        raw = self._run([tx], [rx])
        t, r = raw["tx"][0], raw["rx"][0]
        counts = {Direction.FORWARD: DirectionCounts(t["sent"], r["received"], r["valid"])}
        ok, notes, achieved = self._rate_check([t], rate)
        deviations = self._deviations([Direction.FORWARD], [t], [r], rate, raw["softnet_drops"])
        learned_n: int | None = None
        if learn:
            assert learned is not None
            self._learned = learned
            self._tuples = None
            learned_n = int(r["learned"])
        extra = self._extra(raw)
        extra["enumeration"] = str(self._enum.order)
        extra["duplicates"] = int(r["dup"])
        extra["inconsistent"] = int(r["bad"])
        if r["foreign_source"]:
            extra["foreign_source"] = int(r["foreign_source"])
        return PhaseResult(
            intended_rate=float(rate),
            achieved_rate=achieved,
            duration=self._span(t),
            counts=counts,
            tester_ok=ok,
            tester_note="; ".join(notes),
            learned=learned_n,
            responder_mode=str(ResponderMode.LEARN) if learn else None,
            extra=extra,
            deviations=deviations,
        )

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """Send ``duration`` seconds at ``rate`` per direction; count valid frames; time tagged frames."""
        self._need_plan()
        directions = Directions(directions)
        unlimited = not math.isfinite(rate)
        count = 2**62 if unlimited else max(round(rate * duration), 1)
        engine_rate = 0.0 if unlimited else float(rate)
        time_limit = float(duration) if unlimited else 0.0
        tag_start, tag_every, tag_count = (
            tag_schedule(count, rate, measure) if measure.latency and not unlimited else (0, 0, 0)
        )
        txs: list[dict[str, Any]] = []
        rxs: list[dict[str, Any]] = []
        lat: dict[Direction, np.ndarray] = {}
        hists: dict[Direction, np.ndarray] = {}
        self._trial += 1
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
                txs.append(
                    {
                        "fd": self._fd_init,
                        "mode": _engine.TX_RANDOM,
                        "template": self._fwd_template,
                        "ipv6": self._fwd_ipv6,
                        "a": self._src,
                        "b": self._dst,
                        "count": count,
                        "rate": engine_rate,
                        "time_limit": time_limit,
                        "flags": FLAG_PHASE2,
                        "tag_every": tag_every,
                        "tag_start": tag_start,
                        "tag_count": tag_count,
                        "stamp_each": int(measure.all_delays),  # PDV: every frame its own send stamp
                        "seed": self._seed(1),
                    }
                )
                rxs.append(
                    {
                        "fd": self._fd_resp,
                        "mode": _engine.RX_ANY,
                        "expect": count,
                        "latency": lat_buf,
                        "delay_hist": hist,
                    }
                )
            else:
                sport, dport, expect, mode_used = self._reverse_tuples(measure)
                txs.append(
                    {
                        "fd": self._fd_resp,
                        "mode": {
                            "random": _engine.TX_TUPLE_RANDOM,
                            "linear": _engine.TX_TUPLE_LINEAR,
                            "fixed": _engine.TX_TUPLE_FIXED,
                        }[measure.selection],
                        "template": self._rev_template,
                        "ipv6": self._rev_ipv6,
                        "a": sport,
                        "b": dport,
                        "count": count,
                        "rate": engine_rate,
                        "time_limit": time_limit,
                        "flags": FLAG_PHASE2 | FLAG_REVERSE,
                        "tag_every": tag_every,
                        "tag_start": tag_start,
                        "tag_count": tag_count,
                        "stamp_each": int(measure.all_delays),
                        "seed": self._seed(2),
                    }
                )
                rxs.append(
                    {
                        "fd": self._fd_init,
                        "mode": _engine.RX_TUPLE_CHECK,
                        "reverse": 1,
                        "tuple_sport": sport,
                        "tuple_expect": expect,
                        "expect": count,
                        "latency": lat_buf,
                        "delay_hist": hist,
                    }
                )
        sampled = (measure.stop is not None or measure.tail_rates) and not unlimited
        watch = self._watch_slots(txs, rxs) if sampled else None
        raw = self._run(
            txs, rxs, timestamps=bool(tag_every) or measure.all_delays, watch=watch, stop=measure.stop,
            tails=measure.tail_rates,
        )  # fmt: skip
        for t, asked in zip(raw["tx"], txs, strict=True):
            t["planned"] = int(asked["count"])  # a stopped stream's count is the frames due at the stop
        counts: dict[Direction, DirectionCounts] = {}
        latency: dict[Direction, LatencyStats] = {}
        for d, t, r in zip(directions.active, raw["tx"], raw["rx"], strict=True):
            counts[d] = DirectionCounts(t["sent"], r["received"], r["valid"])
            if d in hists and r["delay_frames"]:
                latency[d] = histogram_stats(hists[d], r["delay_min"], r["delay_max"])
            elif d in lat and r["latency_samples"]:
                latency[d] = exact_stats(lat[d][: r["latency_samples"]])
        ok, notes, achieved = self._rate_check(raw["tx"], rate)
        deviations = self._deviations(list(directions.active), raw["tx"], raw["rx"], rate, raw["softnet_drops"])
        extra = self._extra(raw)
        extra["inconsistent"] = {str(d): int(r["bad"]) for d, r in zip(directions.active, raw["rx"], strict=True)}
        if tag_every:
            # when the first tagged frame was due (RFC 8219 7.2: after the warm-up), and the spacing
            extra["tagging"] = {"first_frame": tag_start, "every": tag_every, "first_s": tag_start / rate}
        if hists:
            extra["delay_negative"] = {
                str(d): int(r["delay_negative"])
                for d, r in zip(directions.active, raw["rx"], strict=True)
                if d in hists
            }
        stopped = any(int(t.get("stopped", 0)) for t in raw["tx"])
        if stopped and "stop_decided_s" in raw:  # what the watch saw when it asked for the stop
            extra["stop"] = {"decided_s": raw["stop_decided_s"], "missing": raw["stop_missing"]}
        tail = raw.get("tail_rates")
        return PhaseResult(
            intended_rate=float(rate),
            achieved_rate=achieved,
            duration=max(self._span(t) for t in raw["tx"]),
            counts=counts,
            latency=latency,
            tester_ok=ok,
            tester_note="; ".join(notes),
            responder_mode=mode_used,
            extra=extra,
            deviations=deviations,
            stopped=stopped,
            tail_rates={d: round(float(v), 1) for d, v in zip(directions.active, tail, strict=True)} if tail else {},
        )

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
        tx = {
            "fd": self._fd_resp,
            "mode": _engine.TX_TUPLE_LINEAR,
            "template": self._rev_template,
            "ipv6": self._rev_ipv6,
            "a": sport,
            "b": dport,
            "count": n,
            "rate": float(rate),
            "flags": FLAG_VALIDATION | FLAG_REVERSE,
        }
        rx = {
            "fd": self._fd_init,
            "mode": _engine.RX_TUPLE_CHECK,
            "reverse": 1,
            "tuple_sport": sport,
            "tuple_expect": expect,
            "expect": n,
        }
        raw = self._run([tx], [rx])
        t, r = raw["tx"][0], raw["rx"][0]
        ok, notes, achieved = self._rate_check([t], rate)
        deviations = self._deviations([Direction.REVERSE], [t], [r], rate, raw["softnet_drops"])
        return PhaseResult(
            intended_rate=float(rate),
            achieved_rate=achieved,
            duration=self._span(t),
            counts={Direction.REVERSE: DirectionCounts(t["sent"], r["received"], r["valid"])},
            tester_ok=ok,
            tester_note="; ".join(notes),
            responder_mode=mode_used,
            extra=self._extra(raw),
            deviations=deviations,
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

    def _order_args(self) -> dict[str, int]:
        """The phase-1 order as the data path takes it (tx stream and rx port alike)."""
        if self._enum.order is EnumerationOrder.PRODUCT:
            return {"order": _engine.ORDER_PRODUCT}
        return {"order": _engine.ORDER_FEISTEL, "perm_seed": self._enum.permutation_seed}

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

    def stops_failed_trials(self) -> bool:
        """The software tester honours ``Phase2Options.stop``: a thread samples the trial's counts every
        :data:`SAMPLE_PERIOD` seconds (:class:`~natbench.testers.losswatch.LossWatch`) and ends its streams."""
        return True

    @staticmethod
    def _watch_slots(tx: list[dict[str, Any]], rx: list[dict[str, Any]]) -> np.ndarray:
        """The watch block of a trial (``_engine.run``'s ``watch``): slot 0 the stop flag, then per direction the
        frames its stream sent and the valid frames its port received so far (``tx[i]`` pairs with ``rx[i]``)."""
        for i, (t, r) in enumerate(zip(tx, rx, strict=True)):
            t["watch_slot"], r["watch_slot"] = 1 + 2 * i, 2 + 2 * i
        return np.zeros(1 + 2 * len(tx), dtype=np.uint64)

    def _run(
        self,
        tx: list[dict[str, Any]],
        rx: list[dict[str, Any]],
        timestamps: bool = False,
        watch: np.ndarray | None = None,
        stop: LossStop | None = None,
        tails: bool = False,
    ) -> dict[str, Any]:
        self._tag = self._tag % 0xFFFF + 1
        for t in tx:
            t.setdefault("catchup", self.catchup)
        for fd in (self._fd_init, self._fd_resp):
            _engine.timestamps(fd, timestamps)
            _engine.drain(fd)
        softnet_before = _softnet_drops(self.cpus)
        lanes = self._lanes(tx, rx)
        with _watching(watch, stop, len(tx), tails) as outcome:
            if len(lanes) == 1:
                raw = self._run_lane(lanes[0].cpu, tx, rx, None, watch)
                raw["lanes"] = [{"cpu": lanes[0].cpu, "tx": len(tx), "rx": len(rx)}]
            else:
                raw = self._run_lanes(lanes, tx, rx, watch)
        raw.update(outcome)
        raw["softnet_drops"] = _softnet_drops(self.cpus) - softnet_before
        return raw

    def _lanes(self, tx: list[dict[str, Any]], rx: list[dict[str, Any]]) -> list[_Lane]:
        """Split a trial by socket: everything on the Initiator port on the first tester CPU, everything on
        the Responder port on the second. With one CPU (or none given) the trial is one lane."""
        cpus = self.cpus or ()
        if len(cpus) < 2:
            return [_Lane(cpus[0] if cpus else None, list(range(len(tx))), list(range(len(rx))))]
        lanes = []
        for k, fd in enumerate((self._fd_init, self._fd_resp)):
            lane = _Lane(
                cpus[k % len(cpus)],
                [i for i, t in enumerate(tx) if t["fd"] == fd],
                [i for i, r in enumerate(rx) if r["fd"] == fd],
            )
            if lane.tx or lane.rx:
                lanes.append(lane)
        return lanes

    def _run_lane(
        self,
        cpu: int | None,
        tx: list[dict[str, Any]],
        rx: list[dict[str, Any]],
        sync: np.ndarray | None,
        watch: np.ndarray | None = None,
    ) -> dict[str, Any]:
        """One data-path call on the calling thread, pinned to ``cpu`` (all tester CPUs if None) and SCHED_FIFO."""
        old = os.sched_getaffinity(0)
        old_policy = os.sched_getscheduler(0)
        old_param = os.sched_getparam(0)
        realtime = False
        pin = (cpu,) if cpu is not None else self.cpus
        if pin:
            os.sched_setaffinity(0, pin)  # the calling thread only
        if self.realtime:
            try:
                os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(_RT_PRIORITY))
                realtime = True
            except OSError:
                realtime = False
        try:
            raw: dict[str, Any] = _engine.run(tx, rx, self.receive_timeout, self._tag, sync=sync, watch=watch)
        finally:
            if realtime:
                os.sched_setscheduler(0, old_policy, old_param)
            if pin:
                os.sched_setaffinity(0, old)
        raw["realtime"] = realtime
        return raw

    def _run_lanes(
        self, lanes: list[_Lane], tx: list[dict[str, Any]], rx: list[dict[str, Any]], watch: np.ndarray | None = None
    ) -> dict[str, Any]:
        """Run the lanes of one trial at once, one thread per tester CPU, and merge their counts in order."""
        sync = np.zeros(2, dtype=np.uint64)
        sync[0] = sum(1 for lane in lanes if lane.tx)  # lanes still sending
        results: list[dict[str, Any] | None] = [None] * len(lanes)
        errors: list[BaseException] = []

        def work(k: int, lane: _Lane) -> None:
            try:
                results[k] = self._run_lane(lane.cpu, [tx[i] for i in lane.tx], [rx[i] for i in lane.rx], sync, watch)
            except BaseException as exc:  # re-raised on the caller's thread below
                errors.append(exc)
                sync[0] = 0  # release the other lanes

        # receive-only lanes first, so that nothing is sent before its receiver runs
        order = sorted(range(len(lanes)), key=lambda k: bool(lanes[k].tx))
        threads = [threading.Thread(target=work, args=(k, lanes[k]), name=f"natbench-lane-{k}") for k in order]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if errors:
            raise errors[0]
        merged: dict[str, Any] = {"tx": [None] * len(tx), "rx": [None] * len(rx)}
        for lane, res in zip(lanes, results, strict=True):
            assert res is not None
            for i, t in zip(lane.tx, res["tx"], strict=True):
                merged["tx"][i] = t
            for i, r in zip(lane.rx, res["rx"], strict=True):
                merged["rx"][i] = r
        done = [r for r in results if r is not None]
        merged["elapsed"] = max(float(r["elapsed"]) for r in done)
        merged["send_end"] = max(float(r["send_end"]) for r in done)
        merged["realtime"] = all(bool(r["realtime"]) for r in done)
        merged["lanes"] = [{"cpu": lane.cpu, "tx": len(lane.tx), "rx": len(lane.rx)} for lane in lanes]
        return merged

    @staticmethod
    def _span(t: dict[str, Any]) -> float:
        return max(float(t["last"]) - float(t["first"]), 0.0)

    def _rate_check(self, txs: list[dict[str, Any]], rate: float) -> tuple[bool, list[str], float]:
        """Did every stream send all its frames, on time on average? (ok, why not, the slowest achieved rate)."""
        ok = True
        notes: list[str] = []
        achieved_all: list[float] = []
        for t in txs:
            sent, count = int(t["sent"]), int(t["count"])  # a stopped stream: the frames due when it stopped
            planned = int(t.get("planned", count))  # the full trial's frames: its tolerances are the full trial's
            span = self._span(t)
            if rate > 0 and math.isfinite(rate):
                span += 1.0 / rate  # the first frame is due at 0, the n-th at (n-1)/rate
            achieved = sent / span if span > 0 else 0.0
            achieved_all.append(achieved)
            if sent < count and rate > 0 and math.isfinite(rate):
                ok = False
                notes.append(f"sent {sent} of {count} frames")
            elif rate > 0 and math.isfinite(rate):
                # the n-th frame is due (n-1)/rate after the start; how late was the last one?
                lateness = float(t["last"]) - (count - 1) / rate
                allowed = max(self.rate_tolerance * planned / rate, self.lateness_slack)
                if lateness > allowed:
                    ok = False
                    notes.append(
                        f"fell behind: last frame {lateness * 1e3:.3f} ms late (allowed {allowed * 1e3:.3f} ms), "
                        f"{achieved:.0f} of {rate:.0f} fps"
                    )
        return ok, notes, min(achieved_all) if achieved_all else 0.0

    def _deviations(
        self,
        directions: list[Direction],
        txs: list[dict[str, Any]],
        rxs: list[dict[str, Any]],
        rate: float,
        softnet_drops: int,
    ) -> dict[Direction, Deviation]:
        """Per direction (its stream ``txs[i]``, received by ``rxs[i]``): a stall caught up in a burst, frames the
        receive socket dropped, frames the tester CPUs' backlog dropped (counted against every direction: the
        counter does not say whose)."""
        out: dict[Direction, Deviation] = {}
        for d, t, r in zip(directions, txs, rxs, strict=True):
            clump = 0
            notes: list[str] = []
            if rate > 0 and math.isfinite(rate):
                # a stall that was caught up later sent a burst the DUT never should have seen
                lag = int(t["max_lag"])
                planned = int(t.get("planned", t["count"]))  # a stopped trial keeps the full trial's allowance
                lag_allowed = max(self.max_stall * rate, self.rate_tolerance * planned, _engine.BATCH)
                if lag > lag_allowed:
                    clump = lag
                    notes.append(
                        f"stalled: {lag} frames ({lag / rate * 1e3:.1f} ms) behind schedule at one point, then caught"
                        f" up at up to {self.catchup:g} x the rate (allowed without note {lag_allowed:.0f} frames)"
                    )
            missed = int(r["socket_drops"]) + int(softnet_drops)
            if r["socket_drops"]:
                notes.append(f"tester receive socket dropped {r['socket_drops']} frames")
            if softnet_drops:
                notes.append(f"backlog of the tester CPUs dropped {softnet_drops} frames")
            dev = Deviation(clump=clump, missed=missed, notes=tuple(notes))
            if dev:
                out[d] = dev
        return out

    @staticmethod
    def _extra(raw: dict[str, Any]) -> dict[str, Any]:
        return {
            "tester": {
                "elapsed": round(float(raw["elapsed"]), 6),
                "max_lag_frames": [int(t["max_lag"]) for t in raw["tx"]],
                "behind_s": [round(float(t.get("behind", 0.0)), 6) for t in raw["tx"]],
                "send_calls": [int(t["calls"]) for t in raw["tx"]],
                "send_errors": [int(t["errors"]) for t in raw["tx"]],
                "socket_drops": [int(r["socket_drops"]) for r in raw["rx"]],
                "softnet_drops_tester_cpus": int(raw.get("softnet_drops", 0)),
                "realtime": bool(raw.get("realtime", False)),
                "lanes": raw["lanes"],
            }
        }


TIMED_COPY = 0.0005
"""Seconds a sample of the watch block may take (clock read, copy, clock read) for the forwarding rate's fit to use
it: a sampling thread preempted between its clock and its copy would put the counts at the wrong time, and such
errors in time flatten a fitted slope."""


@contextlib.contextmanager
def _watching(
    watch: np.ndarray | None, stop: LossStop | None, directions: int, tails: bool = False
) -> Iterator[dict[str, Any]]:
    """While the block runs a trial with the ``watch`` block, a thread samples its counts every :data:`SAMPLE_PERIOD`
    seconds: with ``tails``, for the forwarding rate of the trial's second half
    (:class:`~natbench.testers.tailrate.TailRate`), and with ``stop``, to set the stop flag when
    :class:`~natbench.testers.losswatch.LossWatch` says the trial has failed. Yields a dict that then holds, with
    ``tails``, ``tail_rates`` (a rate per direction; None when the trial was too short to tell) and, if it stopped the
    trial, ``stop_decided_s`` (seconds into the trial) and ``stop_missing`` (the frames missing per direction at that
    sample)."""
    outcome: dict[str, Any] = {}
    if watch is None or (stop is None and not tails):
        yield outcome
        return
    judge = LossWatch(stop, directions) if stop is not None else None
    tail = TailRate(directions) if tails else None
    done = threading.Event()

    def sample() -> None:
        start = time.monotonic()
        while not done.wait(SAMPLE_PERIOD):
            before = time.monotonic()
            counts = watch.copy()  # aligned 64-bit words: each read whole
            after = time.monotonic()
            t = (before + after) / 2 - start
            sent, valid = [int(x) for x in counts[1::2]], [int(x) for x in counts[2::2]]
            if tail is not None and after - before <= TIMED_COPY:  # else preempted mid-sample: a wrong time
                tail.observe(t, sent, valid)
            if judge is not None and "stop_decided_s" not in outcome and judge.observe(t, sent, valid):
                watch[0] = 1
                outcome["stop_decided_s"] = round(t, 6)
                outcome["stop_missing"] = list(judge.missing)

    th = threading.Thread(target=sample, name="natbench-count-watch", daemon=True)
    th.start()
    try:
        yield outcome
    finally:
        done.set()
        th.join()
        if tail is not None:
            outcome["tail_rates"] = tail.rates()


def _expected_source4(plan: TrafficPlan) -> int:
    """IPv4 source address phase-1 frames must arrive with (the NAT's public address), as an int; 0: not
    checked (an IPv6 public side, or no translation)."""
    public = plan.addresses.dut_public
    if plan.family.translates and isinstance(public, ipaddress.IPv4Address):
        return int(public)
    return 0


_RT_PRIORITY = 10
"""SCHED_FIFO priority of the data path during a trial (RT throttling still leaves the kernel 5 %)."""


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


def _softnet_drops(cpus: Sequence[int] | None) -> int:
    """Sum of the backlog drop counters (/proc/net/softnet_stat column 2) of ``cpus``."""
    if not cpus:
        return 0
    try:
        with open("/proc/net/softnet_stat") as fh:
            rows = fh.read().split("\n")
    except OSError:
        return 0
    total = 0
    for row in rows:
        cols = row.split()
        if len(cols) >= 13:
            cpu = int(cols[12], 16)  # column 13 is the CPU id since Linux 5.9
            if cpu in cpus:
                total += int(cols[1], 16)
    return total


def read_mac(interface: str, netns: str | None = None) -> str:
    """MAC address of ``interface`` (inside ``netns`` when given), via ``ip -j link``."""
    import json
    import subprocess

    cmd = ["ip", "-j", "link", "show", "dev", interface]
    if netns:
        cmd[1:1] = ["-n", netns]
    try:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        return str(json.loads(out)[0]["address"])
    except (subprocess.CalledProcessError, OSError, ValueError, KeyError, IndexError) as exc:
        raise TesterError(f"cannot read the MAC address of {interface}: {exc}") from exc
