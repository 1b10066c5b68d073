"""Golden rendering: with seed 004's parameters the Jool recipes render exactly the command
lists of Fig. 11 (464XLAT CLAT + PLAT) and Figs. 23, 24, 25 (MAP-T CE, BR, RSS/RPS).

Commands are compared after shell tokenisation: the figures quote ``"CE 11b"`` with double
quotes, the renderer with ``shlex.quote``; words, values and order must be identical.
"""

from __future__ import annotations

import ipaddress
import shlex
from pathlib import Path

import pytest
import seed004_params as seed

from natbench.duts.recipes import load_recipe

GOLDEN = Path(__file__).parent / "golden"

CASES = [
    ("jool-siit", "setup", seed.CLAT, "seed004-fig11-clat.txt"),
    ("jool-nat64", "setup", seed.PLAT, "seed004-fig11-plat.txt"),
    ("jool-mapt-ce", "setup", seed.MAPT_CE, "seed004-fig23-ce.txt"),
    ("jool-mapt-br", "setup", seed.MAPT_BR, "seed004-fig24-br.txt"),
    ("jool-mapt-ce", "rss", seed.MAPT_CE, "seed004-fig25-rss.txt"),
]


def golden(name: str) -> list[list[str]]:
    return [shlex.split(line) for line in (GOLDEN / name).read_text().splitlines() if line.strip()]


@pytest.mark.parametrize(("recipe", "step", "params", "figure"), CASES, ids=[c[3] for c in CASES])
def test_recipe_renders_the_figure(recipe: str, step: str, params: dict[str, object], figure: str) -> None:
    rendered = load_recipe(recipe).render(step, dict(params))
    expected = golden(figure)
    got = [shlex.split(cmd) for cmd in rendered]
    for i, (g, e) in enumerate(zip(got, expected, strict=False)):
        assert g == e, f"{figure} command {i + 1}: rendered {shlex.join(g)!r}, figure has {shlex.join(e)!r}"
    assert len(got) == len(expected), f"{figure}: rendered {len(got)} commands, the figure has {len(expected)}"


def test_every_value_is_quoted() -> None:
    """The instance name with a blank stays one word (the figure's "CE 11b")."""
    cmds = load_recipe("jool-mapt-ce").render("setup", dict(seed.MAPT_CE))
    assert "jool_mapt instance add 'CE 11b' --netfilter --dmr 64:ff9b::/96" in cmds


def test_rps_via_netns_is_the_default() -> None:
    """Written literally (Fig. 25) the to_global rps_cpus file is looked up in the global sysfs,
    where a device moved into napt does not appear; by default the recipe writes it inside napt."""
    params = {k: v for k, v in seed.MAPT_CE.items() if k != "rps_via_netns"}
    cmds = load_recipe("jool-mapt-ce").render("rss", params)
    assert "echo 00ff0000 | ip netns exec napt tee /sys/class/net/to_global/queues/rx-0/rps_cpus" in cmds
    assert "echo ff000000 > /sys/class/net/to_napt/queues/rx-0/rps_cpus" in cmds


def test_namespace_created_before_the_figure() -> None:
    recipe = load_recipe("jool-mapt-ce")
    prepare = recipe.render("prepare", dict(seed.MAPT_CE))
    assert prepare[0] == "jool_mapt --version"
    assert prepare[-1] == "ip netns add napt"
    assert "ip netns add napt" not in recipe.render("prepare", {**seed.MAPT_CE, "create_namespace": False})
    assert recipe.render("teardown", dict(seed.MAPT_CE))[-1] == "ip netns del napt"


def map_t_ce_port_set(
    end_user_prefix: str, bmr_ipv6: str, bmr_ipv4: str, ea_bits: int, psid_offset: int
) -> tuple[str, int, int]:
    """RFC 7597 section 5: the CE's IPv4 address and port set from its end-user prefix and the BMR."""
    eup = ipaddress.ip_network(end_user_prefix)
    rule6 = ipaddress.ip_network(bmr_ipv6)
    rule4 = ipaddress.ip_network(bmr_ipv4)
    ea = (int(eup.network_address) >> (128 - rule6.prefixlen - ea_bits)) & ((1 << ea_bits) - 1)
    p = 32 - rule4.prefixlen
    q = ea_bits - p
    suffix, psid = ea >> q, ea & ((1 << q) - 1)
    addr = ipaddress.ip_address(int(rule4.network_address) + suffix)
    m = 16 - psid_offset - q  # contiguous ports per PSID block
    assert psid_offset == 0, "only the a = 0 case (one contiguous port set) is computed here"
    first = psid << m
    return str(addr), first, first + (1 << m) - 1


def test_seed004_ce_parameters_are_consistent_with_the_bmr() -> None:
    """The SNAT target of Fig. 23 (192.0.2.35:24576-32767) is what the BMR and EA bits 0x11b give."""
    p = seed.MAPT_CE
    addr, first, last = map_t_ce_port_set(
        str(p["end_user_prefix"]), str(p["bmr_ipv6"]), str(p["bmr_ipv4"]), int(p["ea_bits"]), int(p["psid_offset"])
    )
    assert (addr, f"{first}-{last}") == (p["ce_ipv4"], p["ce_ports"])
    assert last - first + 1 == 8192  # seed 004: 8192-port sets, 8 CEs per IPv4 address


@pytest.mark.parametrize("table", ["seed004-table8-mapt-split-cores", "seed004-table9-mapt-split-connections"])
def test_split_ce_campaigns_snat_into_the_ces_map_t_port_set(table: str) -> None:
    """Tables 8/9 (Fig. 18): CE1's SNAT target is the CE's MAP-T address and port set, as Fig. 23 writes it,
    and CE2 routes that address back to CE1 while CE1 reaches the Responder through CE2."""
    from natbench.campaign import load_campaign

    campaign = load_campaign(Path(__file__).resolve().parent.parent / "campaigns" / f"{table}.yaml")
    ce1, ce2 = campaign.dut("ce1"), campaign.dut("ce2")
    addr, first, last = map_t_ce_port_set(
        str(ce2.params["end_user_prefix"]),
        str(ce2.params["bmr_ipv6"]),
        str(ce2.params["bmr_ipv4"]),
        int(ce2.params["ea_bits"]),
        int(ce2.params["psid_offset"]),
    )
    assert (addr, first, last) == (seed.MAPT_CE["ce_ipv4"], 24576, 32767) == (str(ce2.params["ce_ipv4"]), first, last)
    recipe = load_recipe(ce1.recipe)
    setup = recipe.render("setup", recipe.resolve(dict(ce1.params)))
    snat = [c for c in setup if "-j SNAT" in c]
    assert len(snat) == 1 and snat[0].endswith(f"--to-source {addr}:{first}-{last}")
    assert "-s 198.18.0.0/24" in snat[0]
    link = str(ce1.params["public_address"]).split("/")[0]
    assert str(ce2.params["nat44_address"]) == link  # CE2 sends 192.0.2.35 back to CE1
    via = str(ce2.params["private_address"]).split("/")[0]
    assert any(c.startswith("ip route replace 198.19.0.0/24 via " + via) for c in setup)
