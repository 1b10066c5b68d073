"""What one trial asks of the software tester's C data path, typed: the streams it sends and the ports it receives on.

A :class:`TxStream` is one stream of frames a trial sends, an :class:`RxPort` one port it counts (and checks, learns,
times) frames on; :func:`engine_args` turns either into the dict the C engine reads (``_engine.run(tx, rx, ...)``,
natbench/testers/software/_engine.c), the one place their fields meet the engine's keys and constants. A field left
None is one the engine takes its default for.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any

import numpy as np

from natbench.traffic.enumeration import EnumerationOrder

try:
    import natbench.testers.software._engine as _engine
except ImportError as exc:  # pragma: no cover - only without a build
    _engine = None  # type: ignore[assignment]
    ENGINE_IMPORT_ERROR: ImportError | None = exc
    """Why the C data path could not be imported (None: it is built)."""
else:
    ENGINE_IMPORT_ERROR = None


class TxMode(Enum):
    """How a stream picks each frame's ports (the value names the engine's constant)."""

    ENUM = "TX_ENUM"
    """Phase 1: every (source, destination) pair once, in the enumeration's order."""
    RANDOM = "TX_RANDOM"
    """Phase 2 forward: a source and a destination port drawn at random for each frame (RFC 4814)."""
    TUPLE_RANDOM = "TX_TUPLE_RANDOM"
    """Reverse: a known tuple drawn at random for each frame."""
    TUPLE_LINEAR = "TX_TUPLE_LINEAR"
    """Reverse: the known tuples in order (validation reads the state table linearly)."""
    TUPLE_FIXED = "TX_TUPLE_FIXED"
    """Reverse: always the first known tuple."""


class RxMode(Enum):
    """What a port does with each frame it receives (the value names the engine's constant)."""

    ANY = "RX_ANY"
    """Counts every valid frame."""
    ENUM_CHECK = "RX_ENUM_CHECK"
    """Phase 1: checks each frame's destination port against the enumeration."""
    LEARN = "RX_LEARN"
    """Phase 1: checks and learns the translated source port of each frame."""
    TUPLE_CHECK = "RX_TUPLE_CHECK"
    """Reverse: checks each frame's ports against the tuple it was sent to."""


@dataclass(frozen=True, eq=False)
class TxStream:
    """One stream of frames a trial sends from one port."""

    fd: int
    """The port's socket (``_engine.open_port``)."""
    mode: TxMode
    """How each frame's ports are picked."""
    template: bytes
    """The frame every frame of the stream is built from (addresses, size)."""
    ipv6: bool
    """Whether the template is an IPv6 frame."""
    a: np.ndarray
    """First port array (uint16): the source ports (:attr:`TxMode.ENUM`, :attr:`TxMode.RANDOM`) or the Responder's
    port of each tuple (the tuple modes)."""
    b: np.ndarray
    """Second port array (uint16): the destination ports, or the DUT's public port of each tuple."""
    count: int
    """Frames to send."""
    rate: float
    """Frames per second (0: as fast as it can)."""
    flags: int
    """The frames' signature flags (:mod:`natbench.traffic.frames`: phase, direction)."""
    time_limit: float = 0.0
    """Seconds after which it stops sending (0: when ``count`` frames are sent)."""
    tag_every: int = 0
    """Tag (timestamp) every n-th frame for latency (0: none)."""
    tag_start: int = 0
    """The first tagged frame."""
    tag_count: int = 0
    """Tagged frames at most (0: no limit)."""
    stamp_each: bool = False
    """Give every frame its own send stamp (PDV over all frames)."""
    seed: int | None = None
    """Seed of the random draws (the random modes)."""
    order: EnumerationOrder | None = None
    """Phase 1's order of the pairs (None: the product order)."""
    perm_seed: int | None = None
    """The key of the Feistel order."""
    catchup: float | None = None
    """After falling behind, the backlog goes out at most at this multiple of the rate (None: as fast as the socket
    takes it)."""
    watch_slot: int | None = None
    """Slot of the watch block in which the engine publishes the frames sent so far (None: none)."""


@dataclass(frozen=True, eq=False)
class RxPort:
    """One port a trial receives frames on, and what it does with them."""

    fd: int
    """The port's socket."""
    mode: RxMode
    """What it does with each frame."""
    expect: int
    """Frames expected (receiving ends early once all arrived)."""
    reverse: bool = False
    """It receives the reverse direction (frames the Responder sent)."""
    dst: np.ndarray | None = None
    """Destination ports of the enumeration (phase 1's checks)."""
    nsrc: int | None = None
    """Number of source ports of the enumeration (None: 1)."""
    learned: np.ndarray | None = None
    """Where :attr:`RxMode.LEARN` writes the translated source port of each phase-1 frame (uint16, one per frame)."""
    want_src4: int = 0
    """IPv4 source address phase-1 frames must arrive with, as an int (0: not checked)."""
    tuple_sport: np.ndarray | None = None
    """The Responder's port of each tuple (:attr:`RxMode.TUPLE_CHECK`)."""
    tuple_expect: np.ndarray | None = None
    """The Initiator port each tuple's frames must arrive on (None: not checked)."""
    latency: np.ndarray | None = None
    """Where the delays of tagged frames are written (int64 ns; None: no latency)."""
    delay_hist: np.ndarray | None = None
    """Histogram of every frame's delay (uint64, ``_engine.HIST_SIZE`` buckets; None: no PDV)."""
    order: EnumerationOrder | None = None
    """Phase 1's order of the pairs (None: the product order)."""
    perm_seed: int | None = None
    """The key of the Feistel order."""
    watch_slot: int | None = None
    """Slot of the watch block in which the engine publishes the valid frames received so far (None: none)."""


def _engine_value(value: Any) -> Any:
    if isinstance(value, TxMode | RxMode):
        return getattr(_engine, value.value)
    if isinstance(value, EnumerationOrder):
        return _engine.ORDER_PRODUCT if value is EnumerationOrder.PRODUCT else _engine.ORDER_FEISTEL
    return value


def engine_args(spec: TxStream | RxPort) -> dict[str, Any]:
    """``spec`` as the dict the C engine reads: its fields by name, modes and orders as the engine's constants, the
    fields left None left out (the engine's defaults). Arrays are handed over as they are, not copied: the engine
    writes into the output buffers (``learned``, ``latency``, ``delay_hist``)."""
    out: dict[str, Any] = {}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if value is not None:
            out[f.name] = _engine_value(value)
    return out
