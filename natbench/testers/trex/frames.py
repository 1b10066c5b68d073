"""Frame templates of the TRex streams: header layout, field offsets and the payload signature.

Pure data (no TRex import). TRex packets exclude the 4-byte FCS, so a frame of
``frame_size`` bytes on the wire is a packet of ``frame_size - 4`` bytes here.
Source and destination MAC addresses are not part of the template: TRex
fills them from the port's L2 configuration (explicit destination MAC), so no
ARP or ND is ever needed.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

ETH_LEN = 14
"""Ethernet II header length (no VLAN tag)."""
FCS_LEN = 4
"""Frame check sequence, counted in RFC 2544 frame sizes but not in TRex packets."""
IPV4_LEN = 20
IPV6_LEN = 40
UDP_LEN = 8
SIGNATURE = b"natbench"
"""First payload bytes of every test frame (survives NAT44 and NAT64: the payload is never translated)."""

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class FrameTemplate:
    """One UDP test frame; the field engine rewrites its ports (and sometimes its destination address)."""

    src: IPAddress
    """Source IP address."""
    dst: IPAddress
    """Destination IP address (same family as ``src``)."""
    sport: int
    """UDP source port of the template (overwritten by the field engine when a port variable is written)."""
    dport: int
    """UDP destination port of the template."""
    frame_size: int
    """Frame size on the wire including the FCS (RFC 2544 convention)."""

    def __post_init__(self) -> None:
        if self.src.version != self.dst.version:
            raise ValueError(f"address families differ: {self.src} -> {self.dst}")
        minimum = self.headers_len + len(SIGNATURE) + FCS_LEN
        if self.frame_size < max(minimum, 64):
            raise ValueError(f"frame size {self.frame_size} too small for IPv{self.ip_version} (minimum {minimum})")

    @property
    def ip_version(self) -> int:
        """4 or 6."""
        return self.src.version

    @property
    def l3_len(self) -> int:
        """Length of the IP header (no options, no extension headers)."""
        return IPV4_LEN if self.ip_version == 4 else IPV6_LEN

    @property
    def udp_offset(self) -> int:
        """Byte offset of the UDP header in the packet (34 for IPv4, 54 for IPv6)."""
        return ETH_LEN + self.l3_len

    @property
    def sport_offset(self) -> int:
        """Byte offset of the UDP source port."""
        return self.udp_offset

    @property
    def dport_offset(self) -> int:
        """Byte offset of the UDP destination port."""
        return self.udp_offset + 2

    @property
    def dst_offset(self) -> int:
        """Byte offset of the destination address (IPv4: 30; IPv6: 38)."""
        return ETH_LEN + (16 if self.ip_version == 4 else 24)

    @property
    def headers_len(self) -> int:
        """Ethernet + IP + UDP header bytes."""
        return ETH_LEN + self.l3_len + UDP_LEN

    @property
    def packet_len(self) -> int:
        """Bytes handed to TRex (frame size minus FCS)."""
        return self.frame_size - FCS_LEN

    @property
    def payload(self) -> bytes:
        """UDP payload: the signature, then zero padding up to the frame size."""
        n = self.packet_len - self.headers_len
        return SIGNATURE + bytes(n - len(SIGNATURE))
