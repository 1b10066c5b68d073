"""A small campaign builder for the sweep tests: fixed line numbers, so an error's line is known by hand.

Lines of :func:`campaign`'s text::

    1 schema_version   2 name: t   3 testbed:   4 tester   5 duts   6 traffic   7 metrics   8 sweep:
    9...  the sweep body
"""

from __future__ import annotations

import pytest

from natbench.campaign import Campaign, parse_campaign
from natbench.errors import ConfigError

ONE_DUT = "[{name: nat, recipe: iptables-nat44, access: {kind: lab}, params: {conntrack_max: 2^20}}]"
TWO_DUTS = (
    "[{name: clat, recipe: jool-siit, role: clat, access: {kind: lab}},"
    " {name: plat, recipe: jool-nat64, role: plat, access: {kind: lab}}]"
)
TRAFFIC = "{family: nat44, src_ports: 1-100, dst_ports: 1-10}"
CPS = "{cps: {upper: 100k, error: 1k}}"


def campaign(body: str, *, duts: str = ONE_DUT, traffic: str = TRAFFIC, metrics: str = CPS) -> str:
    """Campaign text whose sweep body (indented two spaces) starts on line 9."""
    return (
        "schema_version: 1\n"
        "name: t\n"
        "testbed:\n"
        "  tester: {kind: software}\n"
        f"  duts: {duts}\n"
        f"traffic: {traffic}\n"
        f"metrics: {metrics}\n"
        "sweep:\n"
        f"{body}"
    )


def load(body: str, **kw: str) -> Campaign:
    """The campaign of :func:`campaign`, parsed as file ``t.yaml``."""
    return parse_campaign(campaign(body, **kw), "t.yaml")


def error(body: str, **kw: str) -> str:
    """The one-line error (``t.yaml:LINE: FIELD: MESSAGE``) the campaign is rejected with."""
    with pytest.raises(ConfigError) as info:
        load(body, **kw)
    return str(info.value)
