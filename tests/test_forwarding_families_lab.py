"""Plain forwarding through the local lab (families ipv6 and ipv4, marker ``lab``, needs root).

The DUT namespace is configured by the normal recipe (dut_recipes/linux-forwarding.yaml) through
the NetnsExecutor, as a campaign does; the built-in software tester sends IPv6 (IPv4) both ways.
The DUT kernel's own counters (``/proc/net/snmp6`` / ``/proc/net/snmp`` of its namespace) must
show every frame forwarded by the router, with no connection tracking and nothing of the other
IP version involved. Reverse frames are addressed to the Initiator (no translation): with family
nat44 a plain router would take them for itself and lose every one.
"""

from __future__ import annotations

import os
import secrets
import shutil
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import natbench
from natbench.duts.executors import NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.plugins import Directions, Phase2Options
from natbench.results import Direction, PhaseResult
from natbench.testbed.lab import NetnsLab, list_labs
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import Family, PortRange, ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint

pytestmark = [
    pytest.mark.lab,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: builds the local lab (network namespaces, veth)"),
]

SRC, DST = PortRange(40000, 40049), PortRange(6000, 6019)
RATE, SECONDS = 2000, 1.0  # per direction: 2,000 frames each way


@dataclass
class Rig:
    lab: NetnsLab
    dut: RecipeDut
    tester: SoftwareTester

    @property
    def family(self) -> Family:
        return self.lab.family


@pytest.fixture(scope="module", params=[Family.IPV6, Family.IPV4], ids=str)
def rig(request: pytest.FixtureRequest) -> Iterator[Rig]:
    family: Family = request.param
    lab = NetnsLab(f"{family}{os.getpid()}{secrets.token_hex(2)}", family=family)
    lab.up()
    try:
        a = lab.addresses
        params = {
            **lab.recipe_params,
            "private_address": f"{a.dut_private}/{a.private_prefixlen}",
            "public_address": f"{a.dut_public}/{a.public_prefixlen}",
        }
        dut = RecipeDut("router", load_recipe("linux-forwarding"), NetnsExecutor(lab.dut_netns), params)
        dut.setup(WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64, cores=1))
        try:
            lab.after_dut_setup()
            tester = SoftwareTester(lab.initiator, lab.responder, cpus=lab.tester_cpus, timeout=0.5)
            try:
                tester.prepare(TrafficPlan(family, a, SRC, DST, 64, seed=5, responder_mode=ResponderMode.COMPUTE))
                yield Rig(lab, dut, tester)
            finally:
                tester.close()
        finally:
            dut.teardown()
    finally:
        lab.down()


def kept_rate(trial: Callable[[], PhaseResult], tries: int = 5) -> PhaseResult:
    """Repeat a trial the tester could not send at its rate (shared CPUs), as the engine does."""
    for _ in range(tries):
        r = trial()
        if r.tester_ok:
            return r
    raise AssertionError(f"tester could not keep its rate in {tries} tries: {r.tester_note}")


def counters(lab: NetnsLab, path: str) -> dict[str, int]:
    """A /proc/net SNMP file of the DUT namespace as name -> value (snmp6: one pair a line)."""
    text = lab.dut_exec(["cat", path])
    out: dict[str, int] = {}
    if path.endswith("snmp6"):
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            out[name] = int(value.strip())
        return out
    lines = text.splitlines()
    for head, values in zip(lines[::2], lines[1::2], strict=True):
        proto = head.split(":")[0]
        for k, v in zip(head.split()[1:], values.split()[1:], strict=True):
            out[f"{proto}{k}"] = int(v)
    return out


def test_addresses_and_forwarding_in_the_dut(rig: Rig) -> None:
    facts = rig.dut.facts()
    if rig.family is Family.IPV6:
        addrs = rig.lab.dut_exec(["ip", "-6", "-br", "addr", "show", "scope", "global"])
        assert "2001:2::1/64" in addrs and "2001:2:0:1::1/64" in addrs
        assert facts["ip6_forward"] == 1
        neigh = rig.lab.dut_exec(["ip", "-6", "neigh", "show", "nud", "permanent"])
        assert "2001:2::2 " in neigh and "2001:2:0:1::2 " in neigh  # static: no ND is ever counted
    else:
        addrs = rig.lab.dut_exec(["ip", "-4", "-br", "addr"])
        assert "198.18.0.1/24" in addrs and "198.19.0.1/24" in addrs
        assert facts["ip_forward"] == 1
        neigh = rig.lab.dut_exec(["ip", "-4", "neigh", "show", "nud", "permanent"])
        assert "198.18.0.2 " in neigh and "198.19.0.2 " in neigh


def test_bidirectional_traffic_is_routed_without_loss(rig: Rig) -> None:
    before6 = counters(rig.lab, "/proc/net/snmp6")
    before4 = counters(rig.lab, "/proc/net/snmp")
    r = kept_rate(lambda: rig.tester.phase2(RATE, SECONDS, Directions.BIDIRECTIONAL, Phase2Options()))
    after6 = counters(rig.lab, "/proc/net/snmp6")
    after4 = counters(rig.lab, "/proc/net/snmp")
    want = round(RATE * SECONDS)
    for d in (Direction.FORWARD, Direction.REVERSE):
        c = r.counts[d]
        # zero loss; "received" also counts the DUT's own chatter (e.g. MLD reports), which is not a test frame
        assert (c.sent, c.valid) == (want, want) and c.received >= want, (d, r.counts)
    assert r.responder_mode == "compute"
    # routed by the DUT's IP stack (hop limit / TTL decremented, counted as forwarded), not bridged or
    # looped back: every test frame of both directions went through the kernel's forwarding path
    if rig.family is Family.IPV6:
        forwarded = after6["Ip6OutForwDatagrams"] - before6["Ip6OutForwDatagrams"]
        received = after6["Ip6InReceives"] - before6["Ip6InReceives"]
        assert after6["Ip6InDiscards"] == before6["Ip6InDiscards"]
        assert after6["Ip6InNoRoutes"] == before6["Ip6InNoRoutes"]
        other = after4["IpForwDatagrams"] - before4["IpForwDatagrams"]
    else:
        forwarded = after4["IpForwDatagrams"] - before4["IpForwDatagrams"]
        received = after4["IpInReceives"] - before4["IpInReceives"]
        assert after4["IpInDiscards"] == before4["IpInDiscards"]
        assert after4["IpInAddrErrors"] == before4["IpInAddrErrors"]
        other = after6["Ip6OutForwDatagrams"] - before6["Ip6OutForwDatagrams"]
    assert forwarded >= 2 * want, (forwarded, received)
    assert received >= 2 * want
    assert other == 0  # nothing of the other IP version was forwarded
    if shutil.which("conntrack"):  # plain forwarding: the DUT namespace tracks no connection
        count = rig.lab.dut_exec(["conntrack", "-C"], check=False).strip()
        assert count in ("", "0"), count


@pytest.mark.parametrize("family", ["ipv6", "ipv4"])
def test_a_forwarding_campaign_runs_end_to_end(family: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`natbench run` path: lab brought up from the campaign, forwarding search, stored results, report."""
    from natbench.run.runner import run_campaign

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", tmp_path / "labs")
    campaign = tmp_path / "v6fwd.yaml"
    campaign.write_text(
        textwrap.dedent(
            f"""\
            schema_version: 1
            name: {family}fwd{secrets.token_hex(2)}
            testbed:
              tester: {{kind: software}}
              duts:
                - name: router
                  recipe: linux-forwarding
                  role: forwarder
                  access: {{kind: lab}}
            traffic:
              family: {family}
              src_ports: 40000-40019
              dst_ports: 6000-6009
            sweep:
              product:
                cores: [1]
            metrics:
              forwarding: {{repetitions: 1, lower: 500, upper: 3000, error: 1000, duration: 1, timeout: 0.5}}
            """
        )
    )
    run_dir = run_campaign(campaign, tmp_path / "run")
    assert list_labs(tmp_path / "labs") == []  # the lab the run brought up is gone
    run = natbench.load(run_dir.path)
    assert run.family == family
    (value,) = run.results.query("metric == 'forwarding'")["value"]
    # a plain router in a namespace forwards 3,000 fps per direction: the search ends at its upper bound
    assert value >= 2000
    steps = run.trials.query("metric == 'forwarding'")
    assert len(steps) >= 2 and (steps["verdict"] != "invalid").any()
    caption = run.seed_table().caption
    assert ("Frame size: 84 bytes (IPv6 frames)." if family == "ipv6" else "Frame size: 64 bytes.") in caption
