"""Traffic model: address plans, port ranges, RFC 4814 enumeration, frame layout."""

from natbench.traffic.enumeration import EnumerationOrder as EnumerationOrder
from natbench.traffic.enumeration import FeistelPermutation as FeistelPermutation
from natbench.traffic.enumeration import PortEnumeration as PortEnumeration
from natbench.traffic.enumeration import SplitMix64 as SplitMix64
from natbench.traffic.enumeration import seeded_permutation as seeded_permutation
from natbench.traffic.plan import AddressPlan as AddressPlan
from natbench.traffic.plan import Family as Family
from natbench.traffic.plan import ResponderMode as ResponderMode
from natbench.traffic.plan import TrafficPlan as TrafficPlan
from natbench.traffic.plan import wire_frame_sizes as wire_frame_sizes
from natbench.traffic.ports import PortRange as PortRange
