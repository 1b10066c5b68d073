"""The software tester's typed streams and ports (natbench.testers.software.specs), converted in one place into what
the C data path reads, and the lanes and watch block built on them."""

from __future__ import annotations

import numpy as np
import pytest

from natbench.testers.software.lanes import split_lanes
from natbench.testers.software.specs import RxMode, RxPort, TxMode, TxStream, engine_args
from natbench.testers.software.watch import watch_block
from natbench.traffic.enumeration import EnumerationOrder

engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")

SRC = np.arange(1, 5, dtype=np.uint16)
DST = np.arange(10, 12, dtype=np.uint16)


def stream(**changes: object) -> TxStream:
    args: dict[str, object] = {
        "fd": 7,
        "mode": TxMode.ENUM,
        "template": b"\x00" * 64,
        "ipv6": False,
        "a": SRC,
        "b": DST,
        "count": 8,
        "rate": 1000.0,
        "flags": 1,
    }
    return TxStream(**{**args, **changes})  # type: ignore[arg-type]


def test_a_stream_is_the_engines_dict_with_its_constants_and_without_what_is_left_unset() -> None:
    args = engine_args(stream(order=EnumerationOrder.FEISTEL, perm_seed=99, catchup=2.0))
    assert args == {
        "fd": 7,
        "mode": engine.TX_ENUM,
        "template": b"\x00" * 64,
        "ipv6": False,
        "a": SRC,
        "b": DST,
        "count": 8,
        "rate": 1000.0,
        "flags": 1,
        "time_limit": 0.0,
        "tag_every": 0,
        "tag_start": 0,
        "tag_count": 0,
        "stamp_each": False,
        "order": engine.ORDER_FEISTEL,
        "perm_seed": 99,
        "catchup": 2.0,
    }  # seed and watch_slot unset: left out, the engine's defaults
    assert args["a"] is SRC and args["b"] is DST  # handed over, not copied
    assert engine_args(stream(order=EnumerationOrder.PRODUCT))["order"] == engine.ORDER_PRODUCT


@pytest.mark.parametrize(
    ("mode", "constant"),
    [
        (TxMode.ENUM, "TX_ENUM"),
        (TxMode.RANDOM, "TX_RANDOM"),
        (TxMode.TUPLE_RANDOM, "TX_TUPLE_RANDOM"),
        (TxMode.TUPLE_LINEAR, "TX_TUPLE_LINEAR"),
        (TxMode.TUPLE_FIXED, "TX_TUPLE_FIXED"),
        (RxMode.ANY, "RX_ANY"),
        (RxMode.ENUM_CHECK, "RX_ENUM_CHECK"),
        (RxMode.LEARN, "RX_LEARN"),
        (RxMode.TUPLE_CHECK, "RX_TUPLE_CHECK"),
    ],
)
def test_every_mode_is_the_engines_constant_of_that_name(mode: TxMode | RxMode, constant: str) -> None:
    spec = stream(mode=mode) if isinstance(mode, TxMode) else RxPort(3, mode, expect=1)
    assert engine_args(spec)["mode"] == getattr(engine, constant)


def test_a_port_hands_over_the_buffers_the_engine_writes_into() -> None:
    learned = np.zeros(8, dtype=np.uint16)
    args = engine_args(RxPort(3, RxMode.LEARN, expect=8, dst=DST, nsrc=4, learned=learned, reverse=True))
    assert args == {
        "fd": 3,
        "mode": engine.RX_LEARN,
        "expect": 8,
        "reverse": True,
        "dst": DST,
        "nsrc": 4,
        "learned": learned,
        "want_src4": 0,
    }
    assert args["learned"] is learned  # the engine's writes land in the tester's array


def test_the_engine_reads_a_port_given_as_a_spec() -> None:
    # a port with nothing to receive, as the engine's own tests give it: the converted spec is what the engine reads
    block = np.zeros(3, dtype=np.uint64)
    out = engine.run([], [engine_args(RxPort(-1, RxMode.ANY, expect=0, watch_slot=2))], 0.0, 1, watch=block)
    assert out["rx"][0]["received"] == 0 and out["tx"] == []
    with pytest.raises(ValueError):
        engine.run([], [engine_args(RxPort(-1, RxMode.ANY, expect=0, watch_slot=3))], 0.0, 1, watch=block)


def test_lanes_split_a_trial_by_port_with_two_cpus_and_keep_it_whole_with_one() -> None:
    tx = [stream(fd=7), stream(fd=8)]
    rx = [RxPort(8, RxMode.ANY, expect=1), RxPort(7, RxMode.ANY, expect=1)]
    (whole,) = split_lanes((3,), tx, rx, (7, 8))
    assert (whole.cpu, whole.tx, whole.rx) == (3, [0, 1], [0, 1])
    assert split_lanes(None, tx, rx, (7, 8))[0].cpu is None
    first, second = split_lanes((3, 5), tx, rx, (7, 8))
    assert (first.cpu, first.tx, first.rx) == (3, [0], [1])  # all on the Initiator port (7)
    assert (second.cpu, second.tx, second.rx) == (5, [1], [0])  # all on the Responder port (8)
    (only,) = split_lanes((3, 5), [stream(fd=7)], [RxPort(7, RxMode.ANY, expect=1)], (7, 8))
    assert only.cpu == 3  # a lane with nothing to do is left out


def test_the_watch_block_gives_each_stream_and_its_port_their_slots() -> None:
    tx, rx, block = watch_block([stream(), stream()], [RxPort(8, RxMode.ANY, expect=1)] * 2)
    assert [t.watch_slot for t in tx] == [1, 3] and [r.watch_slot for r in rx] == [2, 4]
    assert block.dtype == np.uint64 and block.tolist() == [0, 0, 0, 0, 0]  # the stop flag, then sent/valid pairs
    with pytest.raises(ValueError, match="2 streams, 1 ports"):
        watch_block([stream(), stream()], [RxPort(8, RxMode.ANY, expect=1)])
