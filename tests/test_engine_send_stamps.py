"""The software tester's send stamps: a frame whose delay is measured carries the time it was built, not the time
its batch began (PDV over every frame, RFC 8219 7.3.1, and tagged latency frames, 7.2).

The engine's ``run()`` sends over any socket: a connected UDP socket on the loopback is the wire here (each frame
becomes one datagram; the receive buffer holds all of them), and the test reads the frames back and decodes their
stamps. Unpaced (rate 0), the engine builds the frames that are due in batches of up to ``BATCH`` (64) and sends
each batch with one ``sendmmsg`` call.
"""

from __future__ import annotations

import itertools
import socket
import struct
from typing import Any

import numpy as np
import pytest

from natbench.traffic import AddressPlan, Family
from natbench.traffic.frames import FLAG_PHASE2, build_frame

engine = pytest.importorskip("natbench.testers.software._engine", reason="C data path not built (pip install -e .)")

STAMP_AT = 14 + 20 + 8 + 8  # IPv4 frame: Ethernet + IP + UDP headers, then magic, tag, seq; the stamp is 8 bytes
FLAGS_AT = STAMP_AT + 8
FLAG_TAGGED = 0x0002


def _send(count: int, **stream: Any) -> tuple[dict[str, Any], list[tuple[int, int]]]:
    """Send ``count`` frames unpaced; the engine's tx report and each frame's (stamp, flags) in arrival order."""
    plan = AddressPlan.default(Family.NAT44)
    template = build_frame(
        src_mac="02:00:00:00:00:01",
        dst_mac="02:00:00:00:00:02",
        src=plan.initiator,
        dst=plan.responder,
        sport=0,
        dport=0,
        frame_size=64,
    )
    rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        rx.bind(("127.0.0.1", 0))
        tx.connect(rx.getsockname())
        ports = np.arange(1000, 1010, dtype=np.uint16)
        stream = {
            "fd": tx.fileno(),
            "mode": engine.TX_RANDOM,
            "template": template,
            "a": ports,
            "b": ports,
            "count": count,
            "flags": FLAG_PHASE2,
            "time_limit": 2.0,  # a bound, never reached: the loopback accepts every frame
            "seed": 5,
            **stream,
        }
        raw = engine.run([stream], [], 0.0, 77)
        rx.setblocking(False)
        frames: list[tuple[int, int]] = []
        while True:
            try:
                f = rx.recv(2048)
            except BlockingIOError:
                break
            frames.append((struct.unpack_from("!Q", f, STAMP_AT)[0], struct.unpack_from("!H", f, FLAGS_AT)[0]))
        return raw["tx"][0], frames
    finally:
        rx.close()
        tx.close()


def test_with_pdv_over_every_frame_each_frame_of_a_batch_carries_its_own_stamp() -> None:
    # 64 frames, unpaced: all are due at once, one batch of BATCH = 64 frames, one send call
    report, frames = _send(64, stamp_each=1)
    assert (report["sent"], report["calls"], len(frames)) == (64, 1, 64)
    stamps = [s for s, _ in frames]
    assert all(b > a for a, b in itertools.pairwise(stamps)), "stamps not strictly increasing in a batch"


def test_plain_frames_keep_one_stamp_per_batch() -> None:
    # the stamp of a plain trial's frames is never read: one clock reading per batch keeps the sender fast
    report, frames = _send(64)
    assert (report["sent"], report["calls"], len(frames)) == (64, 1, 64)
    assert len({s for s, _ in frames}) == 1


def test_a_tagged_latency_frame_is_sent_alone_right_after_it_was_stamped() -> None:
    # tagged frames 0, 8, ..., 56 (tag_every 8): each is a batch of its own, the 7 frames after it another:
    # 8 x 2 = 16 send calls (a tagged frame that shared its batch would wait for the others to be built)
    report, frames = _send(64, tag_every=8, tag_start=0)
    assert (report["sent"], report["calls"], len(frames)) == (64, 16, 64)
    assert [i for i, (_, flags) in enumerate(frames) if flags & FLAG_TAGGED] == list(range(0, 64, 8))
