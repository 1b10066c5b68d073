"""Recipe parameters of seed 004 (Lencse & Bazsó): Fig. 11 (464XLAT) and Figs. 23-25 (MAP-T).

Shared by the golden rendering tests and the SSH recorder tests.
"""

from __future__ import annotations

from typing import Any

CLAT: dict[str, Any] = {
    "private_if": "enp5s0f0",
    "public_if": "enp5s0f1",
    "pool6": "64:ff9b::/96",
    "plat_address": "2001:2:0:100::2",
    # as printed in Fig. 11 (a real Jool wants 198.18.0.0/24 and 2001:2:0:2::/120; see tests/golden/README.md)
    "eamt_ipv4": "198.18.0.2/24",
    "eamt_ipv6": "2001:2:0:2::2/120",
    "initiator_address": "198.18.0.2",
    "initiator_mac": "a0:36:9f:c5:e9:74",
}

PLAT: dict[str, Any] = {
    "private_if": "enp5s0f0",
    "public_if": "enp5s0f1",
    "pool6": "64:ff9b::/96",
    "pool4": "198.19.0.1",
    "pool4_ports": "1-65535",
    "route6_prefix": "2001:2:0:2::/64",
    "route6_via": "2001:2:0:100::1",
    "responder_address": "198.19.0.2",
    "responder_mac": "a0:36:9f:c5:e9:76",
}

MAPT_CE: dict[str, Any] = {
    "private_if": "enp5s0f0",
    "public_if": "enp5s0f1",
    "private_address": "198.18.0.1/24",
    "public_address": "2001:db8:6::11b/64",
    "private_net": "198.18.0.0/24",
    "napt_netns": "napt",
    "napt_veth": "to_napt",
    "global_veth": "to_global",
    "veth_global_address": "10.0.0.1/24",
    "veth_napt_address": "10.0.0.2/24",
    "br_address": "2001:db8:6::1",
    "ce_ipv4": "192.0.2.35",
    "ce_ports": "24576-32767",
    "instance": "CE 11b",
    "dmr": "64:ff9b::/96",
    "end_user_prefix": "2001:db8:ce:11b::/64",
    "bmr_ipv6": "2001:db8:ce::/53",
    "bmr_ipv4": "192.0.2.0/24",
    "ea_bits": 11,
    "psid_offset": 0,
    "initiator_address": "198.18.0.2",
    "initiator_mac": "a0:36:9f:c5:e9:74",
    "rps_global_cpus": list(range(16, 24)),
    "rps_napt_cpus": list(range(24, 32)),
    # Fig. 25 writes to_global's rps_cpus from the global shell, as printed (see tests/golden/README.md)
    "rps_via_netns": False,
}

MAPT_BR: dict[str, Any] = {
    "private_if": "enp5s0f0",
    "public_if": "enp5s0f1",
    "instance": "BR",
    "dmr": "64:ff9b::/96",
    "bmr_ipv6": "2001:db8:ce::/53",
    "bmr_ipv4": "192.0.2.0/24",
    "ea_bits": 11,
    "psid_offset": 0,
    "ce_prefix": "2001:db8:ce:11b::/64",
    "ce_address": "2001:db8:6::11b",
    "responder_address": "198.19.0.2",
    "responder_mac": "a0:36:9f:c5:e9:76",
}
