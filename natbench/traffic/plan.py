"""What a tester needs to know to generate one working point's traffic."""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field

from natbench.traffic.enumeration import PortEnumeration
from natbench.traffic.ports import PortRange

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Family(enum.StrEnum):
    """Which translation the DUT (or the dual-DUT aggregate) performs, if any."""

    NAT44 = "nat44"
    """IPv4 private side, IPv4 public side (also dual-DUT IPv4aaS systems)."""
    NAT64 = "nat64"
    """IPv6 private side, IPv4 public side; destinations embedded in a NAT64 prefix."""
    IPV6 = "ipv6"
    """IPv6 on both sides, no translation: forwarding baselines (seed 004 Table 3)."""
    IPV4 = "ipv4"
    """IPv4 on both sides, no translation: forwarding baselines (seed 004 Table 2, seed 000 Figure 2).
    Unlike nat44, public -> private frames are addressed to the Initiator itself, not to the DUT."""

    @property
    def translates(self) -> bool:
        """True when the DUT rewrites addresses (NAT44, NAT64); False for plain forwarding (ipv4, ipv6)."""
        return self not in (Family.IPV4, Family.IPV6)

    @property
    def private_ipv6(self) -> bool:
        """True when the private (Initiator) side speaks IPv6."""
        return self in (Family.NAT64, Family.IPV6)

    @property
    def public_ipv6(self) -> bool:
        """True when the public (Responder) side speaks IPv6."""
        return self is Family.IPV6


class ResponderMode(enum.StrEnum):
    """How the Responder knows the translated four-tuples for public -> private traffic."""

    LEARN = "learn"
    """The tester recorded the tuples it received in phase 1 (software tester)."""
    READ = "read"
    """natbench read the DUT's mappings through the recipe's ``show_mappings`` step."""
    COMPUTE = "compute"
    """Computed, for a DUT verified to preserve source ports."""


def ipv6_frame_size(ipv4_frame_size: int) -> int:
    """RFC 8219 rule: the IPv6 frame of a test is 20 bytes longer than the IPv4 one."""
    return ipv4_frame_size + 20


def wire_frame_sizes(family: Family, frame_size: int) -> tuple[int, int]:
    """(private-side, public-side) frame size on the wire of a test whose IPv4 frame size is ``frame_size``."""
    private = ipv6_frame_size(frame_size) if family.private_ipv6 else frame_size
    public = ipv6_frame_size(frame_size) if family.public_ipv6 else frame_size
    return private, public


@dataclass(frozen=True)
class AddressPlan:
    """Addresses of the four interfaces of RFC 9693 Figure 1 / seed 000 Figures 1 and 6.

    Defaults follow the seeds: Initiator 198.18.0.2 (or 2001:2::2 for NAT64),
    DUT private 198.18.0.1 (2001:2::1), DUT public 198.19.0.1, Responder
    198.19.0.2. For NAT64 the Initiator sends to the Responder's IPv4 address
    embedded in ``nat64_prefix``. For IPv6 forwarding both sides are /64s of
    the RFC 5180 benchmarking prefix 2001:2::/48: private 2001:2::/64 (Initiator
    2001:2::2, DUT 2001:2::1), public 2001:2:0:1::/64 (DUT 2001:2:0:1::1,
    Responder 2001:2:0:1::2).
    """

    initiator: IPAddress
    """Tester address on the private side (source of phase-1 frames)."""
    dut_private: IPAddress
    """DUT address on the private side (the Initiator's next hop)."""
    dut_public: IPAddress
    """DUT address on the public side (the translated source address; IPv6 only for family ipv6)."""
    responder: IPAddress
    """Tester address on the public side (destination of phase-1 frames; IPv6 only for family ipv6)."""
    nat64_prefix: ipaddress.IPv6Network = field(default_factory=lambda: ipaddress.IPv6Network("64:ff9b::/96"))
    """NAT64 prefix (RFC 6052 well-known prefix by default); only used for NAT64."""
    private_prefixlen: int = 24
    """Prefix length of the private-side subnet."""
    public_prefixlen: int = 24
    """Prefix length of the public-side subnet."""

    @classmethod
    def default(cls, family: Family) -> AddressPlan:
        """The seeds' address plan for ``family``."""
        if family is Family.IPV6:
            return cls(
                initiator=ipaddress.IPv6Address("2001:2::2"),
                dut_private=ipaddress.IPv6Address("2001:2::1"),
                dut_public=ipaddress.IPv6Address("2001:2:0:1::1"),
                responder=ipaddress.IPv6Address("2001:2:0:1::2"),
                private_prefixlen=64,
                public_prefixlen=64,
            )
        if family is Family.NAT64:
            return cls(
                initiator=ipaddress.IPv6Address("2001:2::2"),
                dut_private=ipaddress.IPv6Address("2001:2::1"),
                dut_public=ipaddress.IPv4Address("198.19.0.1"),
                responder=ipaddress.IPv4Address("198.19.0.2"),
                private_prefixlen=64,
            )
        return cls(
            initiator=ipaddress.IPv4Address("198.18.0.2"),
            dut_private=ipaddress.IPv4Address("198.18.0.1"),
            dut_public=ipaddress.IPv4Address("198.19.0.1"),
            responder=ipaddress.IPv4Address("198.19.0.2"),
        )

    @property
    def responder_as_seen_by_initiator(self) -> IPAddress:
        """Destination address of private -> public frames (NAT64: embedded in the prefix)."""
        if isinstance(self.initiator, ipaddress.IPv6Address) and isinstance(self.responder, ipaddress.IPv4Address):
            base = int(self.nat64_prefix.network_address)
            return ipaddress.IPv6Address(base | int(self.responder))
        return self.responder


@dataclass(frozen=True)
class TrafficPlan:
    """Everything a tester needs to prepare one working point's traffic (``Tester.prepare``)."""

    family: Family
    """NAT44, NAT64 or IPv6 (plain forwarding)."""
    addresses: AddressPlan
    """The four addresses of the test setup."""
    src_ports: PortRange
    """Initiator source port range."""
    dst_ports: PortRange
    """Responder destination port range."""
    frame_size: int
    """IPv4 frame size in bytes (64..1518); IPv6 frames are 20 bytes longer."""
    seed: int
    """Seed of the phase-1 enumeration and of phase-2 random ports."""
    responder_mode: ResponderMode = ResponderMode.LEARN
    """How public -> private tuples are obtained (recorded with every trial)."""

    @property
    def enumeration(self) -> PortEnumeration:
        """The phase-1 bijection for these ranges and seed."""
        return PortEnumeration(self.src_ports, self.dst_ports, self.seed)

    @property
    def connections(self) -> int:
        """Number of connections phase 1 creates: |S| * |D|."""
        return len(self.src_ports) * len(self.dst_ports)

    @property
    def private_frame_size(self) -> int:
        """Frame size on the private side (IPv6 for NAT64 and IPv6 forwarding: 20 bytes longer)."""
        return wire_frame_sizes(self.family, self.frame_size)[0]

    @property
    def public_frame_size(self) -> int:
        """Frame size on the public side (IPv4, except for IPv6 forwarding)."""
        return wire_frame_sizes(self.family, self.frame_size)[1]

    @property
    def forward_destination(self) -> IPAddress:
        """Destination address of private -> public frames (the Responder, NAT64: embedded in the prefix)."""
        return self.addresses.responder_as_seen_by_initiator

    @property
    def reverse_destination(self) -> IPAddress:
        """Destination address of public -> private frames: the DUT's public address behind which a NAT
        hides the Initiator, or the Initiator itself when nothing is translated (forwarding)."""
        return self.addresses.dut_public if self.family.translates else self.addresses.initiator
