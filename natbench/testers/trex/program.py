"""The offline compiler: TrafficPlan -> TRex stream programs (pure, no TRex import).

A :class:`Program` is plain data: streams with their frame template, field-engine
variables and writes, rate, burst size and core placement. ``streams.py``
turns it into TRex ``STLStream`` objects; ``splitmodel.py`` replays TRex's
per-core split on the compiled JSON to prove the exact-once property.

Phase 1 (RFC 9693 connection establishment) realises natbench's bijection
``k -> (S'[k mod |S|], D'[k div |S|])`` with two value lists: the source list
S' (``step`` s, split across cores) chained with ``next_var`` to the destination
list D' (single core, advanced once per wrap of the source list). TRex v3.x
gives core ``i`` of ``C`` the source index ``s*i`` as start and ``s*C`` as stride,
and splits a burst of N frames as ``N div C`` (+1 for the first ``N mod C``
cores); so core ``i`` emits exactly the frames ``p = i, i+C, i+2C, ...`` of the
single-core sequence, whose frame ``p`` carries the pair of natbench index
``s*p mod N``. With ``s = 1`` (the default) the TRex order *is* the natbench
order, interleaved across cores; with another step coprime with N it is a
different order of the same set. The field engine has no way to evaluate the
software tester's default Feistel order (a keyed permutation of all pairs):
TRex programs always walk the product order and record it
(:attr:`Program.enumeration`, stored with the trial as ``enumeration``). Two conditions keep this exact:
``s*C < |S|`` (one source-list wrap per core stride, so the destination list
advances exactly once per wrap and on every core's first frame) and
``gcd(s, N) = 1``; a step breaking either is refused. When ``|S| <= C`` (not
even step 1 splits exactly) the compiler pins parallel streams over disjoint
blocks of destination ports, one per core, instead (same set, other order).
"""

from __future__ import annotations

import enum
import ipaddress
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import overload

import numpy as np

from natbench.plugins import Directions, Mapping, MappingTable, Phase2Options
from natbench.results import Direction
from natbench.testers.trex.frames import FrameTemplate
from natbench.testers.trex.settings import DEFAULT_BIAS_TOLERANCE
from natbench.traffic import EnumerationOrder, Family, PortRange, ResponderMode, SplitMix64, TrafficPlan

MAX_LIST = 65535
"""Largest TRex value list (the DP keeps the list index in 16 bits)."""
MAX_BURST = 2**31 - 1
"""Largest single burst: TRex parses ``total_pkts`` as uint32 and splits it across cores as a signed int."""
DEFAULT_MAX_CORES = 16
"""Core count the compiler keeps exact-once for when the server's count is not known (offline)."""
LATENCY_PG_BASE = 0x4E42
"""First packet-group id natbench uses for latency streams (one per direction)."""

NAT64_LATENCY_NOTE = "NAT64 latency needs a TRex server started with --software"
"""The reminder a NAT64 latency program carries (for console profiles; the tester checks it itself)."""


class Port(enum.StrEnum):
    """Which tester port sends a stream."""

    PRIVATE = "private"
    """The Initiator port (private side of the DUT)."""
    PUBLIC = "public"
    """The Responder port (public side of the DUT)."""


class ValueList(Sequence[int]):
    """The values of a field-engine list variable, held as one read-only numpy array (2 or 4 bytes a value, not a
    tuple of Python ints: a read-mode phase 2 at 4,000,000 connections has 63 streams of three 65,535-value lists);
    turned into the client library's list only while its stream is built."""

    __slots__ = ("_hash", "values")

    def __init__(self, values: Sequence[int] | np.ndarray) -> None:
        arr = np.asarray(values)
        if arr.size == 0:
            arr = np.zeros(0, dtype=np.uint16)
        elif arr.dtype.kind not in "iu" or int(arr.min()) < 0 or int(arr.max()) > 0xFFFFFFFF:
            raise ValueError("a value list holds integers in 0..2**32-1")
        dtype = np.uint16 if not arr.size or int(arr.max()) <= 0xFFFF else np.uint32
        self.values: np.ndarray = np.ascontiguousarray(arr, dtype=dtype)
        """The values (uint16, or uint32 when one exceeds 65,535), read-only."""
        self.values.flags.writeable = False
        self._hash: int | None = None

    def __len__(self) -> int:
        return len(self.values)

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> ValueList: ...

    def __getitem__(self, index: int | slice) -> int | ValueList:
        if isinstance(index, slice):
            return ValueList(self.values[index])
        return int(self.values[index])

    def __iter__(self) -> Iterator[int]:
        return iter(self.values.tolist())

    def tolist(self) -> list[int]:
        """The values as Python ints (what the client library takes)."""
        return list(self.values.tolist())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ValueList):
            return bool(np.array_equal(self.values, other.values))
        if isinstance(other, Sequence | np.ndarray) and not isinstance(other, str | bytes):
            return len(other) == len(self) and bool(np.array_equal(self.values, np.asarray(other)))
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((str(self.values.dtype), self.values.tobytes()))
        return self._hash

    def __repr__(self) -> str:
        head = ", ".join(str(v) for v in self.values[:4].tolist())
        return f"ValueList([{head}{', ...' if len(self) > 4 else ''}] of {len(self)})"


@dataclass(frozen=True)
class FlowVar:
    """One field-engine variable (TRex ``STLVmFlowVar``)."""

    name: str
    """Variable name, unique within the stream."""
    size: int
    """Bytes: 2 for port lists, 4 for random ports (masked to 16 bits) and IPv4 address lists."""
    op: str
    """``inc`` or ``random``."""
    value_list: ValueList | None = None
    """Values the variable walks through (``inc``); None for a min..max variable."""
    min_value: int | None = None
    """Lower bound of a min..max variable."""
    max_value: int | None = None
    """Upper bound of a min..max variable."""
    step: int = 1
    """Index step per frame (before TRex multiplies it by the core count)."""
    split_to_cores: bool = True
    """Whether TRex gives every core its own phase and a stride of ``step * cores``."""
    next_var: str | None = None
    """Variable advanced once each time this one wraps around (must follow it directly)."""


@dataclass(frozen=True)
class FieldWrite:
    """Write a variable into the frame (``STLVmWrFlowVar`` or, with ``cast_size``, ``STLVmWrMaskFlowVar``)."""

    var: str
    """Variable written."""
    offset: int
    """Byte offset in the packet."""
    cast_size: int | None = None
    """Bytes written through a mask (2 for a 4-byte random port); None writes the whole variable."""
    mask: int = 0xFFFF
    """Mask applied when ``cast_size`` is set."""


@dataclass(frozen=True)
class StreamPlan:
    """One TRex stream, fully described."""

    name: str
    """Stream name (unique within the program; used for ``next`` chaining)."""
    port: Port
    """Sending port."""
    frame: FrameTemplate
    """Frame template."""
    pps: float
    """Frames per second of this stream."""
    frames: int | None
    """Single burst of exactly this many frames; None for continuous traffic."""
    variables: tuple[FlowVar, ...] = ()
    """Field-engine variables, in program order."""
    writes: tuple[FieldWrite, ...] = ()
    """Field writes."""
    fix_checksum_hw: bool = True
    """Let the NIC compute the IPv4 header and UDP checksums (``STLVmFixChecksumHw``)."""
    core_id: int | None = None
    """Pin the stream to this core of the port (no split); None lets TRex split it."""
    self_start: bool = True
    """Start with the port; False when started by a predecessor's ``next``."""
    next: str | None = None
    """Stream started when this one ends (sequential blocks)."""
    latency_pg_id: int | None = None
    """Packet-group id of a latency stream (``STLFlowLatencyStats``)."""
    random_seed: int = 0
    """Seed of TRex's per-core random generator (0 = time based); TRex derives each core's seed from it."""
    first_index: int = 0
    """Phase-1 block: first natbench enumeration index this stream covers."""
    direction: Direction = Direction.FORWARD
    """Traffic direction the stream belongs to."""
    isg: float = 0.0
    """Seconds the stream waits after its port starts before its first frame (TRex's inter-stream gap;
    RFC 8219 7.2: tagged frames only after the warm-up)."""


@dataclass(frozen=True)
class Program:
    """A compiled set of streams for one phase."""

    kind: str
    """``phase1``, ``phase2`` or ``validation``."""
    streams: tuple[StreamPlan, ...]
    """All streams, both ports."""
    cores: int
    """Cores per port the program is exact-once for (split mode) or pinned to."""
    step: int = 1
    """Source-list step (enumeration programs)."""
    pinned: bool = False
    """True when the enumeration uses parallel pinned blocks instead of a split stream."""
    notes: tuple[str, ...] = field(default=())
    """Facts worth storing with the trial (e.g. why blocks were pinned)."""
    enumeration: str | None = None
    """Order of the phase-1 pairs the program walks: always ``product`` (the only one the field engine can
    evaluate, :mod:`natbench.traffic.enumeration`) for enumeration programs; None for the others."""

    def on(self, port: Port) -> tuple[StreamPlan, ...]:
        """The streams sent from ``port``."""
        return tuple(s for s in self.streams if s.port is port)

    def burst_frames(self, port: Port) -> int | None:
        """Frames a burst program sends from ``port`` (None when any stream is continuous)."""
        total = 0
        for s in self.on(port):
            if s.frames is None:
                return None
            total += s.frames
        return total

    def rate(self, port: Port) -> float:
        """Intended frames per second from ``port`` (concurrently running streams only)."""
        streams = self.on(port)
        if not streams:
            return 0.0
        if self.kind != "phase2" and not self.pinned:
            return max(s.pps for s in streams)  # sequential blocks run one at a time
        return sum(s.pps for s in streams)


# ---------------------------------------------------------------------------------------------
# frames


def _forward_frame(plan: TrafficPlan, sport: int, dport: int) -> FrameTemplate:
    a = plan.addresses
    return FrameTemplate(a.initiator, plan.forward_destination, sport, dport, plan.private_frame_size)


def _reverse_frame(
    plan: TrafficPlan,
    sport: int,
    dport: int,
    dst: ipaddress.IPv4Address | ipaddress.IPv6Address | None = None,
) -> FrameTemplate:
    """A public -> private frame: to ``dst`` (a mapping's public address), else the DUT's public address
    (translating families) or the Initiator (plain forwarding)."""
    a = plan.addresses
    return FrameTemplate(a.responder, dst or plan.reverse_destination, sport, dport, plan.public_frame_size)


def stream_seed(plan_seed: int, salt: int) -> int:
    """A nonzero 32-bit TRex random seed derived from the plan's seed."""
    return (SplitMix64(plan_seed ^ (salt * 0x9E3779B97F4A7C15)).next() & 0xFFFFFFFF) or 1


# ---------------------------------------------------------------------------------------------
# enumeration (phase 1 and computed validation)


def check_step(step: int, fast_len: int, blocks: Sequence[int], cores: int) -> None:
    """Raise ValueError unless ``step`` keeps every block exact-once on ``cores`` cores."""
    if step < 1:
        raise ValueError(f"step {step} must be positive")
    if step >= fast_len and fast_len > 1:
        raise ValueError(f"step {step} must be below the source-list length {fast_len}")
    if step * cores >= fast_len:
        raise ValueError(
            f"step*cores = {step}*{cores} must stay below the source-list length {fast_len} (one wrap per core stride)"
        )
    for b in blocks:
        if math.gcd(step, fast_len * b) != 1:
            raise ValueError(f"step {step} is not coprime with the block size {fast_len * b}")


def _blocks(slow_len: int, fast_len: int, max_burst: int) -> list[tuple[int, int]]:
    per = max(1, min(slow_len, max_burst // fast_len))
    return [(d0, min(d0 + per, slow_len)) for d0 in range(0, slow_len, per)]


def _enumeration_streams(
    *,
    prefix: str,
    port: Port,
    frame: FrameTemplate,
    fast: np.ndarray,
    fast_offset: int,
    slow: np.ndarray,
    slow_offset: int,
    rate: float,
    cores: int,
    step: int,
    max_burst: int,
    direction: Direction,
) -> tuple[tuple[StreamPlan, ...], bool, tuple[str, ...]]:
    """Streams enumerating ``fast x slow`` exactly once, fast list varying fastest."""
    fast_len, slow_len = len(fast), len(slow)
    total = fast_len * slow_len
    fast_values = ValueList(fast)
    pinned = cores >= fast_len  # not even step 1 can be split exactly
    notes: list[str] = []
    if pinned:
        # Too few source ports to split one stream exactly: one pinned stream per core over
        # disjoint blocks of destination ports, all at once, rates proportional to their frames.
        n_blocks = max(1, min(cores, slow_len))
        edges = [round(i * slow_len / n_blocks) for i in range(n_blocks + 1)]
        blocks = [(edges[i], edges[i + 1]) for i in range(n_blocks) if edges[i + 1] > edges[i]]
        too_big = [b for b in blocks if (b[1] - b[0]) * fast_len > max_burst]
        if too_big:
            raise ValueError(f"block of {(too_big[0][1] - too_big[0][0]) * fast_len} frames exceeds {max_burst}")
        if step != 1:
            notes.append(f"step {step} ignored: pinned streams run unsplit")
        step = 1
        notes.append(
            f"source list of {fast_len} ports is not longer than the {cores} cores: "
            f"{len(blocks)} streams pinned to cores 0..{len(blocks) - 1}"
        )
    else:
        blocks = _blocks(slow_len, fast_len, max_burst)
        check_step(step, fast_len, [b - a for a, b in blocks], cores)
    streams: list[StreamPlan] = []
    for i, (d0, d1) in enumerate(blocks):
        n = fast_len * (d1 - d0)
        name = f"{prefix}{i}"
        fast_var = f"{prefix}f"
        slow_var = f"{prefix}s"
        variables = (
            FlowVar(
                fast_var, 2, "inc", value_list=fast_values, step=step, split_to_cores=not pinned, next_var=slow_var
            ),
            FlowVar(slow_var, 2, "inc", value_list=ValueList(slow[d0:d1]), split_to_cores=False),
        )
        writes = (FieldWrite(fast_var, fast_offset), FieldWrite(slow_var, slow_offset))
        streams.append(
            StreamPlan(
                name=name,
                port=port,
                frame=frame,
                pps=rate * n / total if pinned else rate,
                frames=n,
                variables=variables,
                writes=writes,
                core_id=i if pinned else None,
                self_start=pinned or i == 0,
                next=None if pinned or i == len(blocks) - 1 else f"{prefix}{i + 1}",
                first_index=d0 * fast_len,
                direction=direction,
            )
        )
    if len(blocks) > 1 and not pinned:
        notes.append(f"{len(blocks)} sequential blocks of at most {max_burst} frames")
    return tuple(streams), pinned, tuple(notes)


def compile_phase1(
    plan: TrafficPlan,
    rate: float,
    *,
    cores: int = DEFAULT_MAX_CORES,
    step: int = 1,
    max_burst: int = MAX_BURST,
) -> Program:
    """Phase 1: every (sport, dport) pair exactly once, N frames at ``rate`` from the private port."""
    if rate <= 0:
        raise ValueError("rate must be positive")
    e = plan.enumeration
    frame = _forward_frame(plan, plan.src_ports.first, plan.dst_ports.first)
    streams, pinned, notes = _enumeration_streams(
        prefix="p1_",
        port=Port.PRIVATE,
        frame=frame,
        fast=e.sources,
        fast_offset=frame.sport_offset,
        slow=e.destinations,
        slow_offset=frame.dport_offset,
        rate=rate,
        cores=cores,
        step=step,
        max_burst=max_burst,
        direction=Direction.FORWARD,
    )
    return Program("phase1", streams, cores, 1 if pinned else step, pinned, notes, str(EnumerationOrder.PRODUCT))


def _check_mappings(mappings: MappingTable) -> None:
    if not len(mappings):
        raise ValueError("no mappings: the DUT reported an empty connection table")
    bad = np.flatnonzero((mappings.public_port == 0) | (mappings.remote_port == 0))
    if bad.size:
        raise ValueError(f"mapping with an invalid port: {mappings[int(bad[0])]}")
    try:
        mappings.ipv4_addresses()
    except ValueError as exc:
        raise ValueError(f"mapping with a non-IPv4 public address: {exc}") from None


def _mapping_streams(
    *,
    plan: TrafficPlan,
    mappings: Sequence[Mapping],
    rate: float,
    burst: bool,
    prefix: str,
) -> tuple[StreamPlan, ...]:
    """Reverse streams walking ``mappings`` in lockstep value lists (<= MAX_LIST tuples per stream).

    The three lists (Responder port, DUT public port, DUT public address) have
    the same length and step, so TRex's split keeps them aligned on every core. They are
    slices of the table's columns (:class:`ValueList`), so a program of 4,000,000 tuples holds 6-10 bytes each.
    """
    if not plan.family.translates:
        raise ValueError(
            f"family {plan.family} translates nothing: there are no DUT mappings to read; use responder mode compute"
        )
    table = MappingTable.of(mappings)
    _check_mappings(table)
    total = len(table)
    addresses = table.ipv4_addresses() if len(table.addresses) > 1 else None
    starts = range(0, total, MAX_LIST)
    streams: list[StreamPlan] = []
    for i, lo in enumerate(starts):
        hi = min(lo + MAX_LIST, total)
        chunk = table[lo:hi]
        first = chunk[0]
        frame = _reverse_frame(plan, first.remote_port, first.public_port, ipaddress.IPv4Address(first.public_address))
        variables = [
            FlowVar(f"{prefix}rp", 2, "inc", value_list=ValueList(chunk.remote_port)),
            FlowVar(f"{prefix}pp", 2, "inc", value_list=ValueList(chunk.public_port)),
        ]
        writes = [FieldWrite(f"{prefix}rp", frame.sport_offset), FieldWrite(f"{prefix}pp", frame.dport_offset)]
        if addresses is not None and len(np.unique(chunk.address)) > 1:
            variables.append(FlowVar(f"{prefix}pa", 4, "inc", value_list=ValueList(addresses[lo:hi])))
            writes.append(FieldWrite(f"{prefix}pa", frame.dst_offset))
        streams.append(
            StreamPlan(
                name=f"{prefix}{i}",
                port=Port.PUBLIC,
                frame=frame,
                pps=rate if burst else rate * (hi - lo) / total,
                frames=(hi - lo) if burst else None,
                variables=tuple(variables),
                writes=tuple(writes),
                self_start=not burst or i == 0,
                next=f"{prefix}{i + 1}" if burst and i < len(starts) - 1 else None,
                first_index=lo,
                direction=Direction.REVERSE,
            )
        )
    return tuple(streams)


def order_mappings(mappings: Sequence[Mapping], selection: str, seed: int) -> MappingTable:
    """Order READ-mode tuples for a selection: ``random`` = seeded shuffle, ``linear`` = as read, ``fixed`` = first.

    TRex draws random list entries per variable, which would tear a tuple apart,
    so ``random`` is a seeded permutation walked cyclically: each tuple is used
    equally often, in a pseudorandom order (numpy's PCG64 seeded from the plan's seed: 0.1 s for 4,000,000
    tuples, where a Fisher-Yates shuffle in Python took seconds).
    """
    table = MappingTable.of(mappings)
    if selection == "fixed":
        return table[:1]
    if selection == "linear":
        return table
    if selection != "random":
        raise ValueError(f"unknown selection {selection!r} (random, linear or fixed)")
    rng = np.random.Generator(np.random.PCG64(SplitMix64(seed ^ 0x5EEDF00D).next()))
    return table.take(rng.permutation(len(table)))


def compile_validation(
    plan: TrafficPlan,
    rate: float,
    *,
    mappings: Sequence[Mapping] | None = None,
    cores: int = DEFAULT_MAX_CORES,
    max_burst: int = MAX_BURST,
) -> Program:
    """Validation: one reverse frame per state-table entry, read linearly (RFC 9693 connection validation).

    COMPUTE: the table is the phase-1 product with ports preserved, so the
    public port is the Initiator's source port; READ: the tuples read from the DUT.
    """
    if rate <= 0:
        raise ValueError("rate must be positive")
    if plan.responder_mode is ResponderMode.READ:
        if mappings is None:
            raise ValueError("responder mode read needs the DUT's mappings")
        return Program(
            "validation", _mapping_streams(plan=plan, mappings=mappings, rate=rate, burst=True, prefix="v_"), cores
        )
    e = plan.enumeration
    frame = _reverse_frame(plan, plan.dst_ports.first, plan.src_ports.first)
    streams, pinned, notes = _enumeration_streams(
        prefix="v_",
        port=Port.PUBLIC,
        frame=frame,
        fast=e.sources,
        fast_offset=frame.dport_offset,  # the DUT public port = the preserved Initiator source port
        slow=e.destinations,
        slow_offset=frame.sport_offset,  # the Responder port = the phase-1 destination port
        rate=rate,
        cores=cores,
        step=1,
        max_burst=max_burst,
        direction=Direction.REVERSE,
    )
    return Program("validation", streams, cores, 1, pinned, notes, str(EnumerationOrder.PRODUCT))


# ---------------------------------------------------------------------------------------------
# phase 2


_SIDES = {Direction.FORWARD: ("f_", Port.PRIVATE), Direction.REVERSE: ("r_", Port.PUBLIC)}
"""Per direction of phase 2: stream-name prefix and sending port."""


def _random_streams(
    plan: TrafficPlan, direction: Direction, frame: FrameTemplate, rate: float, tolerance: float
) -> tuple[StreamPlan, ...]:
    """Streams drawing uniform random port pairs of the phase-1 ranges at ``rate`` in total.

    Forward frames take their source port from the source range and their destination port
    from the destination range; reverse frames the other way round (Responder port from the
    destination range, DUT public port from the source range).
    """
    prefix, port = _SIDES[direction]
    sports, dports = plan.src_ports, plan.dst_ports
    if direction is Direction.REVERSE:
        sports, dports = dports, sports
    total = len(sports) * len(dports)
    streams: list[StreamPlan] = []
    for i, sb in enumerate(uniform_blocks(sports, tolerance)):
        for j, db in enumerate(uniform_blocks(dports, tolerance)):
            variables, writes = _random_port_vars(prefix, sb, db, frame)
            streams.append(
                StreamPlan(
                    f"{prefix}data{i}_{j}",
                    port,
                    frame,
                    rate * len(sb) * len(db) / total,
                    None,
                    variables,
                    writes,
                    random_seed=stream_seed(plan.seed, 16 * len(streams) + (1 if port is Port.PRIVATE else 2)),
                    direction=direction,
                )
            )
    return tuple(streams)


def _latency_stream(direction: Direction, frame: FrameTemplate, rate: float, measure: Phase2Options) -> StreamPlan:
    """The low-rate latency stream of ``direction`` (one existing connection; pg ids base and base + 1): from
    ``measure.latency_delay`` on, ``measure.latency_frames`` frames at ``rate`` (continuous when None)."""
    prefix, port = _SIDES[direction]
    pg_id = LATENCY_PG_BASE + (0 if direction is Direction.FORWARD else 1)
    return StreamPlan(
        f"{prefix}lat",
        port,
        frame,
        rate,
        measure.latency_frames,
        latency_pg_id=pg_id,
        direction=direction,
        isg=measure.latency_delay,
    )


def _random_port_vars(
    prefix: str, sports: PortRange, dports: PortRange, frame: FrameTemplate
) -> tuple[tuple[FlowVar, ...], tuple[FieldWrite, ...]]:
    """Uniform random ports: 4-byte random variables (TRex draws 30 random bits) written through a 16-bit mask."""
    variables = (
        FlowVar(f"{prefix}sp", 4, "random", min_value=sports.first, max_value=sports.last),
        FlowVar(f"{prefix}dp", 4, "random", min_value=dports.first, max_value=dports.last),
    )
    writes = (
        FieldWrite(f"{prefix}sp", frame.sport_offset, cast_size=2),
        FieldWrite(f"{prefix}dp", frame.dport_offset, cast_size=2),
    )
    return variables, writes


def compile_phase2(
    plan: TrafficPlan,
    rate: float,
    directions: Directions,
    measure: Phase2Options,
    *,
    cores: int = DEFAULT_MAX_CORES,
    bias_tolerance: float = DEFAULT_BIAS_TOLERANCE,
) -> Program:
    """Phase 2: continuous traffic at ``rate`` per active direction (the tester bounds it by duration).

    Forward: uniformly random ports from the phase-1 ranges. Reverse: COMPUTE
    draws the Responder port from the destination range and the DUT public
    port from the source range (every pair exists after phase 1); READ walks
    the DUT's tuples. With ``measure.latency`` each direction also gets a
    low-rate latency stream on one existing connection, taken out of ``rate``.
    """
    if rate <= 0:
        raise ValueError("rate must be positive")
    e = plan.enumeration
    lat_rate = 0.0
    if measure.latency:
        lat_rate = min(measure.latency_rate, rate / 2)
    data_rate = rate - lat_rate
    streams: list[StreamPlan] = []
    active = directions.active
    if Direction.FORWARD in active:
        s0, d0 = e.pair(0)
        frame = _forward_frame(plan, s0, d0)
        streams.extend(_random_streams(plan, Direction.FORWARD, frame, data_rate, bias_tolerance))
        if lat_rate:
            streams.append(_latency_stream(Direction.FORWARD, frame, lat_rate, measure))
    if Direction.REVERSE in active:
        mode = plan.responder_mode
        if mode is ResponderMode.READ:
            if not measure.mappings:
                raise ValueError("responder mode read needs Phase2Options.mappings (the DUT's show_mappings)")
            ordered = order_mappings(measure.mappings, measure.selection, plan.seed)
            streams.extend(_mapping_streams(plan=plan, mappings=ordered, rate=data_rate, burst=False, prefix="r_"))
            head = ordered[0]
            lat_frame = _reverse_frame(
                plan, head.remote_port, head.public_port, ipaddress.IPv4Address(head.public_address)
            )
        elif mode is ResponderMode.COMPUTE:
            s0, d0 = e.pair(0)
            frame = _reverse_frame(plan, d0, s0)
            lat_frame = frame
            variables: tuple[FlowVar, ...] = ()
            writes: tuple[FieldWrite, ...] = ()
            if measure.selection == "random":
                streams.extend(_random_streams(plan, Direction.REVERSE, frame, data_rate, bias_tolerance))
            elif measure.selection == "linear":
                variables = (
                    FlowVar("r_f", 2, "inc", value_list=ValueList(e.sources), next_var="r_s"),
                    FlowVar("r_s", 2, "inc", value_list=ValueList(e.destinations), split_to_cores=False),
                )
                writes = (FieldWrite("r_f", frame.dport_offset), FieldWrite("r_s", frame.sport_offset))
                if cores >= len(e.sources):
                    raise ValueError("linear selection needs more source ports than cores; use random")
            elif measure.selection != "fixed":
                raise ValueError(f"unknown selection {measure.selection!r} (random, linear or fixed)")
            if measure.selection != "random":
                streams.append(
                    StreamPlan(
                        "r_data", Port.PUBLIC, frame, data_rate, None, variables, writes, direction=Direction.REVERSE
                    )
                )
        else:
            raise ValueError(
                "the TRex tester cannot learn tuples (responder mode learn): use compute for a DUT verified "
                "to preserve ports, or read to load the DUT's mappings"
            )
        if lat_rate:
            streams.append(_latency_stream(Direction.REVERSE, lat_frame, lat_rate, measure))
    notes: tuple[str, ...] = ()
    if lat_rate and plan.family is Family.NAT64:
        notes = (NAT64_LATENCY_NOTE,)
    return Program("phase2", tuple(streams), cores, notes=notes)


# ---------------------------------------------------------------------------------------------
# random port bias


def random_port_counts(n: int) -> np.ndarray:
    """Exact counts of ``first + (r % n)`` over TRex's 4-byte random value ``r = (a << 16) + b``.

    TRex's ``vm_rand32`` glues two 15-bit outputs ``a, b`` of its LCG (bits 15
    and 31 are always zero), i.e. 2**30 equally likely values if the 15-bit
    outputs are uniform and independent. Returns how many of them land on each
    of the ``n`` ports.
    """
    if not 1 <= n <= 65536:
        raise ValueError("n must be in 1..65536")
    q, rem = divmod(32768, n)
    offsets = np.bincount((np.arange(32768, dtype=np.int64) * 65536) % n, minlength=n)
    # each a contributes q*... : b mod n is q+1 for residues < rem and q otherwise, shifted by a's offset
    counts = np.full(n, q * 32768, dtype=np.int64)
    if rem:
        # each high half with offset o adds one more hit to the residues o .. o+rem-1 (mod n)
        o = np.nonzero(offsets)[0]
        k = offsets[o]
        end = o + rem
        diff = np.zeros(n + 1, dtype=np.int64)
        np.add.at(diff, o, k)
        flat = end <= n
        np.add.at(diff, end[flat], -k[flat])
        np.add.at(diff, np.full(int((~flat).sum()), n), -k[~flat])
        np.add.at(diff, np.zeros(int((~flat).sum()), dtype=np.int64), k[~flat])
        np.add.at(diff, end[~flat] - n, -k[~flat])
        counts += np.cumsum(diff[:n])
    return counts


def random_port_bias(n: int) -> float:
    """Largest relative deviation of a port's probability from 1/n (0.0 = perfectly uniform)."""
    counts = random_port_counts(n)
    mean = (1 << 30) / n
    return float(np.max(np.abs(counts - mean)) / mean)


def uniform_blocks(ports: PortRange, tolerance: float = DEFAULT_BIAS_TOLERANCE) -> tuple[PortRange, ...]:
    """Cut ``ports`` into sub-ranges whose TRex random draw is uniform within ``tolerance``.

    A power-of-two width ``2**j`` (j <= 15) is exactly uniform (``r mod 2**j``
    keeps the low bits of one 15-bit output); widths like 65535 or 21845 are
    not (``2**16 mod n`` is tiny, so the two 15-bit halves add up to a
    triangle). The range is kept whole when its bias is within ``tolerance``,
    otherwise its largest power-of-two prefix is split off and the rest cut
    again; streams over the blocks then run at rates proportional to their widths.
    """
    n = len(ports)
    if random_port_bias(n) <= tolerance:
        return (ports,)
    width = 1 << (n.bit_length() - 1)
    head = PortRange(ports.first, ports.first + width - 1)
    if width == n:
        return (head,)
    return (head, *uniform_blocks(PortRange(ports.first + width, ports.last), tolerance))
