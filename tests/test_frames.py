"""Test frames: layout, RFC 8219 sizes, checksums, and agreement of the C data path with natbench.traffic.frames."""

from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from natbench.traffic import SplitMix64
from natbench.traffic.frames import (
    FLAG_PHASE1,
    FLAG_REVERSE,
    FLAG_TAGGED,
    MAGIC,
    RFC8219_FRAME_SIZES,
    build_frame,
    internet_checksum,
    l4_offset,
    min_frame_size,
    parse_frame,
    verify_checksums,
)

try:
    from natbench.testers.software import _engine
except ImportError:  # a build product (pip install -e .): only the tests of the C data path need it
    _engine = None  # type: ignore[assignment]

needs_engine = pytest.mark.skipif(_engine is None, reason="C data path not built (pip install -e .)")

MACS = {"src_mac": "02:4e:42:00:00:01", "dst_mac": "02:4e:42:00:00:02"}


def v4(**kw: object) -> bytes:
    args: dict[str, object] = {**MACS, "src": "198.18.0.2", "dst": "198.19.0.2", "sport": 1024, "dport": 80}
    args.update(kw)
    return build_frame(**args)  # type: ignore[arg-type]


def test_rfc8219_sizes_and_minimum() -> None:
    assert RFC8219_FRAME_SIZES == (64, 128, 256, 512, 768, 1024, 1280, 1518)
    assert min_frame_size(False) == 64
    assert min_frame_size(True) == 84  # the 64-byte test's IPv6 frame (RFC 8219: +20 bytes)
    for size in RFC8219_FRAME_SIZES:
        assert len(v4(frame_size=size)) == size - 4  # FCS is added by the NIC
        f6 = build_frame(**MACS, src="2001:2::2", dst="64:ff9b::c613:2", sport=1, dport=2, frame_size=size + 20)
        assert len(f6) == size + 20 - 4
    with pytest.raises(ValueError):
        v4(frame_size=63)


def test_known_checksum_vector() -> None:
    # RFC 1071 section 3 example: 0x0001 0xf203 0xf4f5 0xf6f7 sums to 0xddf2, checksum is its complement
    assert internet_checksum(bytes.fromhex("0001f203f4f5f6f7")) == (~0xDDF2 & 0xFFFF)


def test_payload_is_the_same_on_both_sides_of_a_nat64() -> None:
    """The IPv6 frame is 20 bytes longer, so the UDP payload (signature, seq, stamp) is identical."""
    f4 = v4(frame_size=128, tag=7, seq=99, stamp=123456789, flags=FLAG_PHASE1)
    f6 = build_frame(
        **MACS,
        src="2001:2::2",
        dst="64:ff9b::c613:2",
        sport=1024,
        dport=80,
        frame_size=148,
        tag=7,
        seq=99,
        stamp=123456789,
        flags=FLAG_PHASE1,
    )
    assert f4[l4_offset(False) + 8 :] == f6[l4_offset(True) + 8 :]
    p4, p6 = parse_frame(f4), parse_frame(f6)
    assert p4 is not None and p6 is not None
    assert (
        (p4.tag, p4.seq, p4.stamp, p4.flags) == (p6.tag, p6.seq, p6.stamp, p6.flags) == (7, 99, 123456789, FLAG_PHASE1)
    )
    assert p6.dst == ipaddress.IPv6Address("64:ff9b::c613:2") and p6.ipv6


def test_checksums_verify_and_detect_corruption() -> None:
    f = bytearray(v4(frame_size=64, seq=5))
    assert verify_checksums(bytes(f))
    f[-1] ^= 0xFF
    assert not verify_checksums(bytes(f))
    g = bytearray(v4(frame_size=64))
    g[14 + 8] = 1  # TTL changed without fixing the IPv4 header checksum
    assert not verify_checksums(bytes(g))


def test_an_ipv6_udp_checksum_of_zero_is_wrong_where_ipv4_allows_it() -> None:
    """RFC 8200 8.1: an IPv6 UDP checksum is mandatory, so a zero in the field is a bad frame; IPv4 (RFC 768)
    reads zero as "no checksum computed"."""
    f6 = bytearray(build_frame(**MACS, src="2001:2::2", dst="64:ff9b::c613:2", sport=1, dport=2, frame_size=84))
    assert verify_checksums(bytes(f6))
    struct.pack_into("!H", f6, l4_offset(True) + 6, 0)
    assert not verify_checksums(bytes(f6))
    f4 = bytearray(v4(frame_size=64))
    struct.pack_into("!H", f4, l4_offset(False) + 6, 0)
    assert verify_checksums(bytes(f4))


def test_non_test_frames_are_not_parsed() -> None:
    f = bytearray(v4(frame_size=64))
    struct.pack_into("!H", f, l4_offset(False) + 8, MAGIC ^ 1)
    assert parse_frame(bytes(f)) is None
    assert parse_frame(b"\0" * 20) is None


@needs_engine
@given(
    ipv6=st.booleans(),
    size=st.sampled_from(RFC8219_FRAME_SIZES),
    sport=st.integers(1, 65535),
    dport=st.integers(1, 65535),
    tag=st.integers(0, 65535),
    seq=st.integers(0, 2**32 - 1),
    stamp=st.integers(0, 2**64 - 1),
    flags=st.sampled_from([0, FLAG_PHASE1, FLAG_REVERSE | FLAG_TAGGED, 0xFFFF]),
)
def test_c_data_path_builds_the_same_frames(
    ipv6: bool, size: int, sport: int, dport: int, tag: int, seq: int, stamp: int, flags: int
) -> None:
    """The C engine fills a template incrementally; the result must equal a frame built from scratch."""
    src, dst = ("2001:2::2", "64:ff9b::c613:2") if ipv6 else ("198.18.0.2", "198.19.0.2")
    fsize = size + 20 if ipv6 else size
    template = build_frame(**MACS, src=src, dst=dst, sport=0, dport=0, frame_size=fsize)
    expected = build_frame(
        **MACS, src=src, dst=dst, sport=sport, dport=dport, frame_size=fsize, tag=tag, seq=seq, stamp=stamp, flags=flags
    )
    got = _engine.build(template, ipv6, sport, dport, tag, seq, stamp, flags)
    assert got == expected
    assert verify_checksums(got)


@needs_engine
def test_c_random_draws_match_python_splitmix() -> None:
    for seed, bound in ((1, 7), (2**63 + 5, 1000), (42, 65535)):
        py = SplitMix64(seed)
        assert _engine.draws(seed, bound, 200) == [py.below(bound) for _ in range(200)]
