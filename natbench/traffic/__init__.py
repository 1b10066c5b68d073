"""Traffic model: address plans, port ranges, RFC 4814 enumeration, frame layout."""

from natbench.traffic.enumeration import (
    EnumerationOrder,
    FeistelPermutation,
    PortEnumeration,
    SplitMix64,
    seeded_permutation,
)
from natbench.traffic.plan import AddressPlan, Family, ResponderMode, TrafficPlan, ipv6_frame_size, wire_frame_sizes
from natbench.traffic.ports import PortRange

__all__ = [
    "AddressPlan",
    "EnumerationOrder",
    "Family",
    "FeistelPermutation",
    "PortEnumeration",
    "PortRange",
    "ResponderMode",
    "SplitMix64",
    "TrafficPlan",
    "ipv6_frame_size",
    "seeded_permutation",
    "wire_frame_sizes",
]
