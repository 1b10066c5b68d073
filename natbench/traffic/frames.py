"""UDP test-frame layout shared by every natbench tester backend.

A test frame is Ethernet II + IPv4 (or IPv6) + UDP + an 18-byte natbench
payload header, padded to the requested frame size. Frame sizes follow RFC
8219 and include the 4-byte Ethernet FCS that the NIC (or veth) adds, so a
64-byte IPv4 frame is 60 bytes handed to the socket; the IPv6 frame of the
same test is 20 bytes longer (RFC 8219 section 5.1), which leaves the payload
the same size on both sides of a NAT64 and lets it survive translation.

Payload header (offsets from the first UDP payload byte, big-endian)::

    0  magic   u16  0x4E42 ("NB")
    2  tag     u16  trial tag: frames of an earlier trial are not valid
    4  seq     u32  phase 1: enumeration index k; reverse: tuple index; else a counter
    8  stamp   u64  transmit time, ns since the Unix epoch (CLOCK_REALTIME)
    16 flags   u16  bit 0 reverse direction, bit 1 latency-tagged, bits 4-5 phase

Headers are never used to recognise test frames (NAT rewrites them; NAT64
replaces the IP header): only the payload is. All fields sit at even offsets
from the start of the UDP header, so the UDP checksum can be updated per frame
from a precomputed partial sum (the C data path does exactly that).
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

#: IPv4 frame sizes of RFC 8219 section 5.1 (IPv6 frames of the same test are 20 bytes longer).
RFC8219_FRAME_SIZES: tuple[int, ...] = (64, 128, 256, 512, 768, 1024, 1280, 1518)
ETH_HEADER = 14
"""Ethernet II header length (no VLAN tag)."""
FCS = 4
"""Frame check sequence length, counted in the frame size but added by the NIC."""
PAYLOAD_HEADER = 18
"""Bytes of the natbench payload header (magic, tag, seq, stamp, flags)."""
MAGIC = 0x4E42
"""First payload word of every natbench test frame."""

FLAG_REVERSE = 0x0001
"""Frame travels public -> private (Responder -> Initiator)."""
FLAG_TAGGED = 0x0002
"""Frame is timed for latency / PDV."""
FLAG_PHASE1 = 0x0010
"""Phase-1 (enumeration) frame."""
FLAG_PHASE2 = 0x0020
"""Phase-2 frame."""
FLAG_VALIDATION = 0x0030
"""Validation frame (one reverse frame per learned tuple)."""

_ETH_IPV4 = 0x0800
_ETH_IPV6 = 0x86DD
_UDP = 17


def l4_offset(ipv6: bool) -> int:
    """Offset of the UDP header in a frame (no IP options, no extension headers)."""
    return ETH_HEADER + (40 if ipv6 else 20)


def min_frame_size(ipv6: bool) -> int:
    """Smallest frame size (with FCS) that holds the payload header: 64 for IPv4, 84 for IPv6."""
    return l4_offset(ipv6) + 8 + PAYLOAD_HEADER + FCS


def internet_checksum(data: bytes, start: int = 0) -> int:
    """RFC 1071 one's-complement checksum of ``data`` (odd length padded), folded and inverted."""
    if len(data) % 2:
        data += b"\0"
    total = start + sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def _pad_byte(i: int) -> int:
    """Padding pattern after the payload header (byte i of the payload)."""
    return i & 0xFF


@dataclass(frozen=True)
class FrameFields:
    """The fields of a parsed test frame."""

    ipv6: bool
    """True for an IPv6 frame."""
    src: IPAddress
    """IP source address."""
    dst: IPAddress
    """IP destination address."""
    sport: int
    """UDP source port."""
    dport: int
    """UDP destination port."""
    tag: int
    """Trial tag."""
    seq: int
    """Sequence number / enumeration index."""
    stamp: int
    """Transmit timestamp in ns."""
    flags: int
    """Flag bits (FLAG_*)."""


def _mac(text: str) -> bytes:
    parts = text.split(":")
    if len(parts) != 6:
        raise ValueError(f"invalid MAC address {text!r}")
    return bytes(int(p, 16) for p in parts)


def build_frame(
    *,
    src_mac: str,
    dst_mac: str,
    src: str | IPAddress,
    dst: str | IPAddress,
    sport: int,
    dport: int,
    frame_size: int,
    tag: int = 0,
    seq: int = 0,
    stamp: int = 0,
    flags: int = 0,
) -> bytes:
    """Build one test frame (without FCS: ``frame_size - 4`` bytes) with valid checksums.

    ``frame_size`` is the size on the wire including FCS, as RFC 8219 counts it;
    for IPv6 pass the IPv6 size (e.g. 84 for the 64-byte test).
    """
    s = ipaddress.ip_address(src)
    d = ipaddress.ip_address(dst)
    if s.version != d.version:
        raise ValueError("source and destination must be the same IP version")
    ipv6 = s.version == 6
    if frame_size < min_frame_size(ipv6):
        raise ValueError(f"frame size {frame_size} below the minimum {min_frame_size(ipv6)}")
    length = frame_size - FCS
    l4 = l4_offset(ipv6)
    udp_len = length - l4
    payload = bytearray(udp_len - 8)
    for i in range(PAYLOAD_HEADER, len(payload)):
        payload[i] = _pad_byte(i)
    struct.pack_into("!HHIQH", payload, 0, MAGIC, tag & 0xFFFF, seq & 0xFFFFFFFF, stamp & (2**64 - 1), flags & 0xFFFF)
    udp = bytearray(struct.pack("!HHHH", sport, dport, udp_len, 0)) + payload
    if ipv6:
        pseudo = s.packed + d.packed + struct.pack("!IxxxB", udp_len, _UDP)
    else:
        pseudo = s.packed + d.packed + struct.pack("!xBH", _UDP, udp_len)
    csum = internet_checksum(pseudo + bytes(udp)) or 0xFFFF
    struct.pack_into("!H", udp, 6, csum)
    if ipv6:
        ip = struct.pack("!IHBB", 0x60000000, udp_len, _UDP, 64) + s.packed + d.packed
        ethertype = _ETH_IPV6
    else:
        hdr = bytearray(struct.pack("!BBHHHBBH", 0x45, 0, 20 + udp_len, 0, 0x4000, 64, _UDP, 0) + s.packed + d.packed)
        struct.pack_into("!H", hdr, 10, internet_checksum(bytes(hdr)))
        ip = bytes(hdr)
        ethertype = _ETH_IPV4
    eth = _mac(dst_mac) + _mac(src_mac) + struct.pack("!H", ethertype)
    return eth + ip + bytes(udp)


def parse_frame(frame: bytes) -> FrameFields | None:
    """Parse a received frame; None when it is not a natbench test frame (any tag)."""
    if len(frame) < ETH_HEADER + 20 + 8 + PAYLOAD_HEADER:
        return None
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    src: IPAddress
    dst: IPAddress
    if ethertype == _ETH_IPV4:
        ihl = (frame[ETH_HEADER] & 0x0F) * 4
        if frame[ETH_HEADER + 9] != _UDP:
            return None
        src = ipaddress.IPv4Address(frame[ETH_HEADER + 12 : ETH_HEADER + 16])
        dst = ipaddress.IPv4Address(frame[ETH_HEADER + 16 : ETH_HEADER + 20])
        l4 = ETH_HEADER + ihl
        ipv6 = False
    elif ethertype == _ETH_IPV6:
        if frame[ETH_HEADER + 6] != _UDP:
            return None
        src = ipaddress.IPv6Address(frame[ETH_HEADER + 8 : ETH_HEADER + 24])
        dst = ipaddress.IPv6Address(frame[ETH_HEADER + 24 : ETH_HEADER + 40])
        l4 = ETH_HEADER + 40
        ipv6 = True
    else:
        return None
    if len(frame) < l4 + 8 + PAYLOAD_HEADER:
        return None
    sport, dport = struct.unpack_from("!HH", frame, l4)
    magic, tag, seq, stamp, flags = struct.unpack_from("!HHIQH", frame, l4 + 8)
    if magic != MAGIC:
        return None
    return FrameFields(ipv6, src, dst, sport, dport, tag, seq, stamp, flags)


def verify_checksums(frame: bytes) -> bool:
    """True when the IPv4 header checksum (if IPv4) and the UDP checksum of ``frame`` are correct."""
    (ethertype,) = struct.unpack_from("!H", frame, 12)
    if ethertype == _ETH_IPV4:
        ihl = (frame[ETH_HEADER] & 0x0F) * 4
        if internet_checksum(frame[ETH_HEADER : ETH_HEADER + ihl]) != 0:
            return False
        l4 = ETH_HEADER + ihl
        (total,) = struct.unpack_from("!H", frame, ETH_HEADER + 2)
        udp = frame[l4 : ETH_HEADER + total]
        pseudo = frame[ETH_HEADER + 12 : ETH_HEADER + 20] + struct.pack("!xBH", _UDP, len(udp))
    elif ethertype == _ETH_IPV6:
        l4 = ETH_HEADER + 40
        (plen,) = struct.unpack_from("!H", frame, ETH_HEADER + 4)
        udp = frame[l4 : l4 + plen]
        pseudo = frame[ETH_HEADER + 8 : ETH_HEADER + 40] + struct.pack("!IxxxB", len(udp), _UDP)
    else:
        return False
    (csum,) = struct.unpack_from("!H", udp, 6)
    if csum == 0:
        return ethertype == _ETH_IPV4  # IPv4 allows "no checksum"
    return internet_checksum(pseudo + udp) == 0
