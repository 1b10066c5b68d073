"""What a tester needs to know to generate one working point's traffic."""

from __future__ import annotations

import enum
import ipaddress
from dataclasses import dataclass, field

from natbench.traffic.enumeration import PortEnumeration
from natbench.traffic.ports import PortRange

__all__ = [
    "AddressPlan",
    "Family",
    "ResponderMode",
    "TrafficPlan",
    "ipv6_frame_size",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Family(enum.StrEnum):
    """Which translation the DUT (or the dual-DUT aggregate) performs."""

    NAT44 = "nat44"
    """IPv4 private side, IPv4 public side (also dual-DUT IPv4aaS systems)."""
    NAT64 = "nat64"
    """IPv6 private side, IPv4 public side; destinations embedded in a NAT64 prefix."""


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


@dataclass(frozen=True)
class AddressPlan:
    """Addresses of the four interfaces of RFC 9693 Figure 1 / seed 000 Figures 1 and 6.

    Defaults follow the seeds: Initiator 198.18.0.2 (or 2001:2::2 for NAT64),
    DUT private 198.18.0.1 (2001:2::1), DUT public 198.19.0.1, Responder
    198.19.0.2. For NAT64 the Initiator sends to the Responder's IPv4 address
    embedded in ``nat64_prefix``.
    """

    initiator: IPAddress
    """Tester address on the private side (source of phase-1 frames)."""
    dut_private: IPAddress
    """DUT address on the private side (the Initiator's next hop)."""
    dut_public: ipaddress.IPv4Address
    """DUT address on the public side (the translated source address)."""
    responder: ipaddress.IPv4Address
    """Tester address on the public side (destination of phase-1 frames)."""
    nat64_prefix: ipaddress.IPv6Network = field(default_factory=lambda: ipaddress.IPv6Network("64:ff9b::/96"))
    """NAT64 prefix (RFC 6052 well-known prefix by default); only used for NAT64."""
    private_prefixlen: int = 24
    """Prefix length of the private-side subnet."""
    public_prefixlen: int = 24
    """Prefix length of the public-side subnet."""

    @classmethod
    def default(cls, family: Family) -> AddressPlan:
        """The seeds' address plan for ``family``."""
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
        if isinstance(self.initiator, ipaddress.IPv6Address):
            base = int(self.nat64_prefix.network_address)
            return ipaddress.IPv6Address(base | int(self.responder))
        return self.responder


@dataclass(frozen=True)
class TrafficPlan:
    """Everything a tester needs to prepare one working point's traffic (``Tester.prepare``)."""

    family: Family
    """NAT44 or NAT64."""
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
    extra: dict[str, object] = field(default_factory=dict)
    """Backend-specific settings from the campaign's tester section (e.g. MACs)."""

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
        """Frame size on the private side (IPv6 for NAT64)."""
        return ipv6_frame_size(self.frame_size) if self.family is Family.NAT64 else self.frame_size

    @property
    def public_frame_size(self) -> int:
        """Frame size on the public side (always IPv4)."""
        return self.frame_size
