"""Every command the shipped recipes render for the campaigns of campaigns/ (and the docs' example recipe with its
documented parameters), as one JSON document: what tests/test_recipe_renders.py compares against the snapshot
tests/data/recipe-renders.json, taken before the placement checker was rebuilt on a shell parser (issue 43), so
that the rebuild provably renders the same commands.

Run as a script to print the document (``python tests/recipe_renders.py > tests/data/recipe-renders.json``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

CONTEXT: dict[str, Any] = {"cores": 2, "cpus": [0, 1], "dut": "dut0"}
"""Run-time variables every rendering gets (saved outputs: the value ``1``)."""

DOC_EXAMPLE = ("docs/examples/recipes/example-nft-masquerade.yaml", {
    "private_if": "eth1", "public_if": "eth2", "public_address": "198.19.0.1/24",
})  # fmt: skip

EXTRA: list[tuple[str, dict[str, Any]]] = [
    # recipes no campaign uses, and branches of their conditions the campaigns leave out
    (
        "openbsd-pf-nat44",
        {"private_if": "em0", "public_if": "em1", "public_address": "198.19.0.1/24", "private_net": "198.18.0.0/24"},
    ),
    (
        "openbsd-pf-nat44",
        {
            "private_if": "em0",
            "public_if": "em1",
            "public_address": "198.19.0.1/24",
            "private_net": "198.18.0.0/24",
            "private_address": "198.18.0.1/24",
            "static_port": True,
            "configure_public_address": True,
            "skip_ifs": ["lo", "em2"],
            "state_limit": "2^20",
        },
    ),
    (
        "openbsd-pf-nat64",
        {
            "private_if": "em0",
            "public_if": "em1",
            "public_address": "198.19.0.1/24",
            "private_address": "2001:2::1/64",
            "pool4": "198.19.0.1",
            "static_port": True,
        },
    ),
    ("tayga-nat64", {"private_if": "eth0", "public_if": "eth1"}),
    (
        "tayga-nat64",
        {
            "private_if": "eth0",
            "public_if": "eth1",
            "public_address": "198.19.0.1/24",
            "nat": "snat",
            "private_address": "2001:2::1/64",
            "conntrack_max": "2^20",
            "hashsize": 65536,
            "host_settings": True,
        },
    ),
    (
        "iptables-nat44",
        {
            "private_if": "eth0",
            "public_if": "eth1",
            "nat": "snat",
            "public_address": "198.19.0.1/24",
            "private_net": "198.18.0.0/24",
            "snat_ports": "1024-65535",
            "conntrack_max": "2^20",
            "hashsize": 65536,
            "route_to": "198.19.1.0/24",
            "route_via": "198.19.0.2",
            "initiator_address": "198.18.0.2",
            "initiator_mac": "02:00:00:00:00:01",
        },
    ),
    (
        "iptables-nat44",
        {
            "private_if": "eth0",
            "public_if": "eth1",
            "nat": "snat",
            "public_address": "198.19.0.1/24",
            "snat_address": "192.0.2.35",
            "conntrack_max": "2^20",
            "host_settings": True,
            "responder_address": "198.19.0.2",
            "responder_mac": "02:00:00:00:00:02",
        },
    ),
    (
        "nftables-nat44",
        {
            "private_if": "eth0",
            "public_if": "eth1",
            "nat": "snat",
            "public_address": "198.19.0.1/24",
            "private_net": "198.18.0.0/24",
            "snat_ports": "1024-65535",
            "limit_pps": 100000,
            "limit_cps": 5000,
            "conntrack_max": "2^20",
            "hashsize": 65536,
        },
    ),
    (
        "jool-nat64",
        {
            "private_if": "eth0",
            "public_if": "eth1",
            "pool4": "198.19.0.1",
            "instance": "CE 11b",
            "udp_timeout": 3600,
            "route6_prefix": "2001:2:0:2::/64",
            "route6_via": "2001:2:0:100::1",
            "responder_address": "198.19.0.2",
            "responder_mac": "02:00:00:00:00:02",
            "forwarding": True,
        },
    ),
]


def _render_all(recipe: Any, params: dict[str, Any]) -> dict[str, list[str]]:
    from natbench.duts.recipes.render import saved_names

    context = {**CONTEXT, **dict.fromkeys(saved_names(recipe), "1")}
    out: dict[str, list[str]] = {}
    for step in sorted(recipe.steps):
        if recipe.steps[step].commands:
            out[step] = recipe.render(step, params, context)
    return out


def renders() -> dict[str, dict[str, dict[str, list[str]]]]:
    """recipe name -> canonical JSON of its parameters -> step -> rendered commands."""
    from natbench.campaign import load_campaign
    from natbench.campaign.recipes import place_params
    from natbench.duts.recipes import load_recipe, recipe_reference

    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for path in sorted((ROOT / "campaigns").glob("*.yaml")):
        campaign = load_campaign(path)
        for i, dut in enumerate(campaign.testbed.duts):
            recipe = load_recipe(recipe_reference(dut.recipe, path.parent))
            supplied = place_params(campaign, i)
            for point in campaign.points():
                given = point.dut_params.get(dut.name, {})
                params = {**{k: v for k, v in supplied.items() if k in recipe.params and k not in given}, **given}
                key = json.dumps(params, sort_keys=True, default=str)
                out.setdefault(recipe.name, {})
                if key not in out[recipe.name]:
                    out[recipe.name][key] = _render_all(recipe, params)
    for name, params in [*EXTRA, DOC_EXAMPLE]:
        recipe = load_recipe(ROOT / name if name.endswith(".yaml") else name)
        out.setdefault(recipe.name, {})[json.dumps(params, sort_keys=True)] = _render_all(recipe, params)
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    json.dump(renders(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
