"""The real cps and throughput procedures against the iptables NAT44 lab DUT with enforced limits (marker ``lab``).

The DUT namespace is set up by dut_recipes/iptables-nat44.yaml through the NetnsExecutor, as a campaign does; the
procedures run through :func:`natbench.metrics.registry.run_repetition` with their default verdicts (cps: table check
and validation of every step), not through a hand-written search. The limits are nftables token buckets in the DUT's
forward hook and must be found within +-10 %.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from lab_helpers import need_lab, stalled
from metric_settings import build

from natbench.duts.executors import NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.judging import judge_phase
from natbench.metrics import ProcedureContext
from natbench.metrics.fill import Fill, fill_table
from natbench.metrics.registry import run_repetition
from natbench.plugins import Directions, Phase2Options
from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.testbed.lab import NetnsLab
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

pytestmark = pytest.mark.lab

SRC, DST = PortRange(20000, 20099), PortRange(3000, 3099)  # 100 x 100 = 10,000 connections
N = len(SRC) * len(DST)
POINT = WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64)
TIMEOUT = 0.3
"""Receive wait after each send: the lab's veths deliver within milliseconds."""


@dataclass
class Rig:
    lab: NetnsLab
    dut: RecipeDut
    tester: SoftwareTester
    plan: TrafficPlan

    def limit(self, *rules: str) -> None:
        """Replace the limiting table in the DUT's forward hook with ``rules`` (one nft rule each)."""
        self.clear()
        body = "\n".join(rules)
        ruleset = (
            f"table inet nbverdict {{\n chain nbfwd {{\n type filter hook forward priority -10;\n{body}\n }}\n}}\n"
        )
        self.lab.dut_exec(["nft", "-f", "-"], input=ruleset)

    def clear(self) -> None:
        self.lab.dut_exec(["nft", "delete", "table", "inet", "nbverdict"], check=False)

    def run(self, metric: str, records: list[TrialRecord], **settings: Any) -> RepetitionResult:
        resolved, options = build(metric, repetitions=1, timeout=TIMEOUT, max_invalid=6, **settings)
        ctx: ProcedureContext[Any] = ProcedureContext(
            self.tester, self.dut, POINT, self.plan, metric, 0, resolved, emit=records.append, options=options
        )
        return run_repetition(ctx)


@pytest.fixture(scope="module")
def rig() -> Iterator[Rig]:
    need_lab()
    lab = NetnsLab(f"v{os.getpid()}{secrets.token_hex(2)}")
    lab.up()
    try:
        params = {
            **lab.recipe_params,
            "nat": "snat",
            "private_address": "198.18.0.1/24",
            "public_address": "198.19.0.1/24",
        }
        dut = RecipeDut("iptables", load_recipe("iptables-nat44"), NetnsExecutor(lab.dut_netns), params)
        dut.setup(POINT)
        tester = SoftwareTester(lab.initiator, lab.responder, cpus=lab.tester_cpus, timeout=TIMEOUT)
        plan = TrafficPlan(Family.NAT44, lab.addresses, SRC, DST, 64, seed=17)
        tester.prepare(plan)
        yield Rig(lab, dut, tester, plan)
        tester.close()
        dut.teardown()
    finally:
        lab.down()


def test_the_cps_procedure_finds_an_enforced_new_connection_limit(rig: Rig) -> None:
    """10,000 new connections/s, a 100-packet bucket; only the packet that creates a connection is counted
    (``ct status ! confirmed``), so the validation's reverse frames and nothing else pass freely.

    A phase 1 of n = 10,000 frames at r per second lasts n / r; the bucket lets through burst + limit x n / r
    frames, so every frame passes while r <= limit x n / (n - burst) = 10,000 x 10,000 / 9,900 = 10,101 cps
    (+1.0 %). The search [0, 40,000] with error 200 ends within 200 below that: 9,901 .. 10,101, inside +-10 %.
    Steps: ceil(log2(40,000 / 200)) = 8, each a phase 1 of ~1 s, and for a pass a validation of ~1 s.
    """
    limit, burst = 10_000, 100
    # "ct status ! confirmed" tests the flag (a "!=" would compare the whole status word)
    rig.limit(f"ct state new ct status ! confirmed limit rate over {limit}/second burst {burst} packets drop")
    records: list[TrialRecord] = []
    try:
        res = rig.run("cps", records, upper=40_000, error=200)
    finally:
        rig.clear()
    print(f"cps procedure: {res.value} cps for a {limit} new-connections/s limit ({len(records)} trials)")
    assert res.value is not None and abs(res.value - limit) <= 0.1 * limit, (res.extra, [r.reason for r in records])
    assert res.extra["validated"] is True
    # every passing phase 1 was validated: all 10,000 reverse frames over the learned state arrived
    checks = [r for r in records if r.kind == "validation" and r.verdict is Verdict.PASS]
    assert checks and all(r.counts["reverse"]["valid"] == N for r in checks)
    # rates above the limit lost frames: failed steps, not invalid ones
    assert {r.extra.get("fail_cause") for r in records if r.verdict is Verdict.FAIL} == {"loss"}


def test_the_throughput_procedure_finds_an_enforced_packet_rate_limit(rig: Rig) -> None:
    """20,000 packets/s per direction (a bucket per ingress interface), 200-packet buckets.

    A 1-second phase-2 trial at r per direction passes while r <= limit + burst = 20,200 (+1.0 %); the search
    [0, 60,000] with error 400 ends within 400 below that: 19,800 .. 20,200, inside +-10 %. The fill (10,000
    frames at 8,000/s, 1.25 s) stays under the forward bucket: 200 + 20,000 x 1.25 = 25,200 tokens.
    Steps: ceil(log2(60,000 / 400)) = 8 trials of ~1.3 s after one fill.
    """
    limit, burst = 20_000, 200
    rig.limit(
        f'iifname "nb-priv" limit rate over {limit}/second burst {burst} packets drop',
        f'iifname "nb-pub" limit rate over {limit}/second burst {burst} packets drop',
    )
    records: list[TrialRecord] = []
    try:
        res = rig.run("throughput", records, upper=60_000, error=400, fill_rate=8000, gap=0.5, duration=1.0)
    finally:
        rig.clear()
    print(f"throughput procedure: {res.value} fps per direction for a {limit} packets/s limit ({len(records)} trials)")
    assert res.value is not None and abs(res.value - limit) <= 0.1 * limit, (res.extra, [r.reason for r in records])
    phase2 = [r for r in records if r.kind == "phase2"]
    assert phase2 and all(r.extra["dut_connections"] == N for r in phase2)  # phase 2 created and deleted nothing
    assert all(r.extra["since_fill"] > 0 for r in phase2)


# ---------------------------------------------------------------------------- fills and trials with a stalled tester
def _fill(rig: Rig, records: list[TrialRecord], **settings: Any) -> Fill:
    """One fill of the table at 10,000 connections per second (1 s) through the real fill procedure."""
    resolved, options = build("teardown", repetitions=1, timeout=TIMEOUT, fill_rate=10_000, **settings)
    ctx: ProcedureContext[Any] = ProcedureContext(
        rig.tester, rig.dut, POINT, rig.plan, "teardown", 0, resolved, emit=records.append, options=options
    )
    return fill_table(ctx, 10_000, learn=True)


def test_a_fill_the_tester_stalled_in_is_kept_when_conntrack_holds_all_n(rig: Rig) -> None:
    """The tester's process is stopped for 300 ms, 0.2 s into the fill: it falls ~3,000 frames behind and catches
    up at twice the rate (20,000 new connections per second, which the kernel's NAT takes). conntrack holds all
    10,000 connections: the fill did its job and is kept, once, with the stall recorded."""
    records: list[TrialRecord] = []
    with stalled(after=0.2, seconds=0.3):
        kept = _fill(rig, records)
    assert [r.kind for r in records] == ["fill"]
    fill = records[0]
    assert (fill.verdict, kept.connections, kept.verified) == (Verdict.PASS, N, True)
    assert fill.extra["dut_connections"] >= N
    assert fill.extra["deviations"]["forward"]["clump"] >= 2000, fill.extra


def test_a_fill_the_dut_lost_connections_in_is_repeated(rig: Rig) -> None:
    """The DUT sets up 12,000 new connections per second (a 200-packet bucket): a fill at 10,000 leaves all of
    them. The stall's catch-up at 20,000 per second overruns it for ~0.3 s, so about (20,000 - 12,000) x 0.3 - 200
    = 2,200 connections are never created: the DUT holds fewer than N, the fill is repeated (the stall happens once)
    and the second fill is kept."""
    rig.limit("ct state new ct status ! confirmed limit rate over 12000/second burst 200 packets drop")
    records: list[TrialRecord] = []
    try:
        with stalled(after=0.2, seconds=0.3):
            kept = _fill(rig, records)
    finally:
        rig.clear()
    fills = [r for r in records if r.kind == "fill"]
    assert [r.verdict for r in fills] == [Verdict.INVALID, Verdict.PASS], [r.reason for r in fills]
    assert fills[0].reason.startswith("the DUT holds ") and fills[0].reason.endswith(f"of the {N} connections")
    assert fills[0].extra["dut_connections"] < N - 500
    assert (kept.connections, kept.verified) == (N, True)


def test_a_stalled_trial_against_a_lossy_dut_fails_instead_of_being_invalid(rig: Rig) -> None:
    """A phase-2 trial at 20,000 frames per second per direction through a DUT that forwards 10,000 per second
    per ingress interface (a 200-packet bucket), with the tester stopped for 100 ms in it: each direction loses
    about 10,000 frames of 20,000, far more than the ~2,000-frame clump of the stall can explain: FAIL (the DUT's
    loss), not invalid (the tester's)."""
    records: list[TrialRecord] = []
    kept = _fill(rig, records)
    assert kept.verified
    rig.limit(
        'iifname "nb-priv" limit rate over 10000/second burst 200 packets drop',
        'iifname "nb-pub" limit rate over 10000/second burst 200 packets drop',
    )
    try:
        with stalled(after=0.3, seconds=0.1):
            phase = rig.tester.phase2(20_000, 1.0, Directions.BIDIRECTIONAL, Phase2Options(mappings=kept.mappings))
    finally:
        rig.clear()
    assert any(d.clump for d in phase.deviations.values()), phase.deviations
    verdict, reason = judge_phase(phase, 0.0, 0.001)
    assert verdict is Verdict.FAIL, (reason, phase.deviations)
    assert "net of the" in reason
