"""The fast search against a real iptables NAT44 DUT with a known forwarding limit (marker ``lab``, needs root).

As tests/test_lab_fidelity.py: the lab's DUT namespace configured by the iptables-nat44 recipe, the software
tester, an nftables ``limit rate`` rule of 6,000 packets/s per direction. The binary search (2 s trials) and the
fast search (0.25 s short trials, 2 s full ones) run on one fill; both must find the limit within +-10 %, the
fast one must report a rate whose 2 s trial passed with a failed 2 s trial at most one error above it, in fewer
seconds of traffic. (A 100-packet token bucket lets a trial of n frames pass up to limit x n / (n - 100): +7 % for
the 1,500 frames of a 0.25 s trial, +0.8 % for a 2 s one: the short trials are optimistic, the full ones decide.)
A second test runs the fast search with the short-fail rule, seeded, and checks the result's meaning; a third, the
tester's stop of a failing trial; a fourth, the forwarding rate the tester reads off a trial's second half.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator

import pytest

from natbench.duts.executors import NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.plugins import Directions, LossStop, Phase2Options, evidence_of
from natbench.results import TrialRecord, Verdict
from natbench.search.binary import BinarySearch, SearchStep, run_binary_search
from natbench.search.fast import FastStep, ShortFailRule, TrialVerdict, run_fast_search
from natbench.search.fast.evidence import forwarded_rate
from natbench.testbed.lab import NetnsLab
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

pytestmark = pytest.mark.lab

SRC, DST = PortRange(10000, 10049), PortRange(2000, 2039)  # 2,000 connections
LIMIT, BURST, UPPER, ERROR = 6000, 100, 20000, 200
FULL, SHORT = 2.0, 0.25


@pytest.fixture(scope="module")
def rig() -> Iterator[tuple[RecipeDut, SoftwareTester]]:
    if os.geteuid() != 0:
        pytest.skip("needs root: builds the local lab (network namespaces, veth, iptables, conntrack, nftables)")
    lab = NetnsLab(f"q{os.getpid()}{secrets.token_hex(2)}")
    lab.up()
    try:
        params = {**lab.recipe_params, "nat": "snat", "private_address": "198.18.0.1/24"}
        params["public_address"] = "198.19.0.1/24"
        dut = RecipeDut("iptables", load_recipe("iptables-nat44"), NetnsExecutor(lab.dut_netns), params)
        dut.setup(WorkingPoint(index=0, src_ports=SRC, dst_ports=DST, frame_size=64))
        tester = SoftwareTester(lab.initiator, lab.responder, cpus=lab.tester_cpus, timeout=0.3)
        tester.prepare(TrafficPlan(Family.NAT44, lab.addresses, SRC, DST, 64, seed=11))
        dut.reset_connections()
        tester.phase1(10000, learn=True)
        lab.dut_exec(
            ["nft", "-f", "-"],
            input=f"""table inet nblimit {{
      chain nbfwd {{ type filter hook forward priority -10;
        iifname "nb-priv" limit rate over {LIMIT}/second burst {BURST} packets drop;
        iifname "nb-pub" limit rate over {LIMIT}/second burst {BURST} packets drop; }}
    }}""",
        )
        yield dut, tester
        tester.close()
        dut.teardown()
    finally:
        lab.down()


def test_fast_search_finds_the_forwarding_limit_with_confirmed_bounds_in_less_traffic_time(
    rig: tuple[RecipeDut, SoftwareTester],
) -> None:
    _dut, tester = rig
    traffic = {"binary": 0.0, "fast": 0.0}
    full_verdicts: dict[float, Verdict] = {}

    def trial(rate: float, seconds: float, who: str) -> Verdict:
        traffic[who] += seconds
        r = tester.phase2(rate, seconds, Directions.BIDIRECTIONAL, Phase2Options())
        if not r.tester_ok:
            return Verdict.INVALID
        return Verdict.PASS if all(c.lost == 0 for c in r.counts.values()) else Verdict.FAIL

    def binary_step(s: SearchStep) -> Verdict:
        return trial(s.rate, FULL, "binary")

    def fast_step(s: FastStep) -> TrialVerdict:
        v = trial(s.rate, FULL if s.full else SHORT, "fast")
        if s.full and v is not Verdict.INVALID:
            full_verdicts[s.rate] = v
        return TrialVerdict(v)

    t0 = time.monotonic()
    binary = run_binary_search(BinarySearch(lower=0.0, upper=UPPER, error=ERROR, max_invalid=6), binary_step)
    t1 = time.monotonic()
    fast = run_fast_search(fast_step, lower=0.0, upper=UPPER, error=ERROR, max_invalid=6)
    t2 = time.monotonic()
    print(
        f"binary {binary.value:.0f} fps ({binary.steps} trials, {t1 - t0:.1f} s); fast {fast.value:.0f} fps "
        f"({fast.short_steps} short + {fast.full_steps} full trials, {t2 - t1:.1f} s); limit {LIMIT}"
    )
    assert abs(binary.value - LIMIT) <= 0.1 * LIMIT, binary
    assert abs(fast.value - LIMIT) <= 0.1 * LIMIT, fast
    assert full_verdicts[fast.value] is Verdict.PASS and full_verdicts[fast.upper] is Verdict.FAIL
    assert fast.upper - fast.value <= ERROR
    assert traffic["fast"] < traffic["binary"], traffic


def test_the_short_fail_rule_on_a_real_limit_keeps_the_results_meaning(rig: tuple[RecipeDut, SoftwareTester]) -> None:
    """The fast search with the short-fail rule (acceptance 0: a short trial that lost a frame proves its rate an upper
    bound) on the 6,000 pps limit, seeded one error above it as a later repetition would be: the reported rate passed a
    2 s trial; its upper bound failed a 2 s trial or a short trial there lost frames (the bucket's 100 packets let a
    0.25 s trial pass up to 6,400, so near the limit the probes mostly prove nothing and full trials decide)."""
    _dut, tester = rig
    full_verdicts: dict[float, Verdict] = {}
    short_losses: dict[float, int] = {}

    def step(s: FastStep) -> TrialVerdict:
        r = tester.phase2(s.rate, FULL if s.full else SHORT, Directions.BIDIRECTIONAL, Phase2Options())
        if not r.tester_ok:
            return TrialVerdict(Verdict.INVALID, "tester could not keep the rate", tester_limited=True)
        lost = max(c.lost for c in r.counts.values())
        v = Verdict.PASS if lost == 0 else Verdict.FAIL
        if s.full:
            full_verdicts[s.rate] = v
        else:
            short_losses[s.rate] = lost
        return TrialVerdict(v, lost=lost)

    rule = ShortFailRule(0.0, FULL, SHORT, full_cost=FULL + 0.5, short_cost=SHORT + 0.5)
    fast = run_fast_search(step, lower=0.0, upper=UPPER, error=ERROR, seed=LIMIT + ERROR, max_invalid=6, rule=rule)
    print(f"fast with the rule: {fast}")
    assert abs(fast.value - LIMIT) <= 0.1 * LIMIT, fast
    assert full_verdicts[fast.value] is Verdict.PASS
    if fast.short_bound:
        assert short_losses[fast.upper] > 0
    elif fast.upper < UPPER:
        assert full_verdicts[fast.upper] is Verdict.FAIL
    assert fast.upper - fast.value <= ERROR and fast.probes >= 1


def test_a_failing_trial_on_a_real_limit_stops_early_and_a_passing_one_runs_in_full(
    rig: tuple[RecipeDut, SoftwareTester],
) -> None:
    """The software tester's watch (``Phase2Options.stop``) on the 6,000 pps limit: 10 s at 9,000 per direction loses
    3,000 frames a second once the 100-packet bucket is empty, so the tester stops it once 64 frames stayed missing
    for 0.25 s, well before its end, having sent exactly the frames due by then; 10 s at 5,000 loses nothing and runs
    to its end, the watch notwithstanding."""
    _dut, tester = rig
    assert evidence_of(tester).stops_failed_trials
    stop = LossStop(allowance=0, margin=64, window=0.25)
    over = tester.phase2(9000, 10.0, Directions.BIDIRECTIONAL, Phase2Options(stop=stop))
    assert over.stopped and over.tester_ok, over.tester_note
    assert 0.2 < over.duration < 2.0, over.duration
    for d, c in over.counts.items():
        assert abs(c.sent - (9000 * over.duration + 1)) <= 64 + 1, (d, c, over.duration)  # the frames due, a batch
        assert c.lost > 64, (d, c)
    assert over.extra["stop"]["decided_s"] < 2.0 and max(over.extra["stop"]["missing"]) > 64
    under = tester.phase2(5000, 10.0, Directions.BIDIRECTIONAL, Phase2Options(stop=stop))
    assert not under.stopped and under.tester_ok, under.tester_note
    assert under.duration > 9.9 and "stop" not in under.extra
    assert all(c.sent == 50_000 and c.lost == 0 for c in under.counts.values()), under.counts


def test_the_tester_reads_a_real_limits_forwarding_rate_off_a_short_trials_second_half(
    rig: tuple[RecipeDut, SoftwareTester],
) -> None:
    """The forwarding rate of a trial's second half (``PhaseResult.tail_rates``) on the 6,000 pps limit: 1 s at 9,000
    per direction empties the 100-packet bucket in 33 ms, then forwards 6,000/s; the whole second delivered about
    6,100. The fast search's estimate for a 10 s trial there (its count plus nine seconds at the tail rate) is the
    limit's 10 s ceiling, 6,010, to within its error; below the limit the tail rate is the offered rate."""
    _dut, tester = rig
    assert not tester.phase2(9000, 1.0, Directions.BIDIRECTIONAL, Phase2Options()).tail_rates  # not asked for
    over = tester.phase2(9000, 1.0, Directions.BIDIRECTIONAL, Phase2Options(tail_rates=True))
    assert set(over.tail_rates) == set(over.counts)
    for d, c in over.counts.items():
        assert abs(over.tail_rates[d] - LIMIT) < 0.02 * LIMIT, (d, over.tail_rates)
        rec = TrialRecord(
            "p", "throughput", 0, 0, "phase2", 9000.0, 9000.0, {str(d): {"sent": c.sent, "received": c.received,
            "valid": c.valid}}, Verdict.FAIL, "loss", 0.0, 1.0,
            extra={"duration": over.duration, "tail_rates": {str(d): over.tail_rates[d]}},
        )  # fmt: skip
        estimate = forwarded_rate(rec, [str(d)], 10.0)
        assert estimate is not None and abs(estimate - (LIMIT + BURST / 10)) < ERROR / 2, (d, estimate)
    under = tester.phase2(4000, 1.0, Directions.BIDIRECTIONAL, Phase2Options(tail_rates=True))
    assert all(abs(r - 4000) < 0.02 * 4000 for r in under.tail_rates.values()), under.tail_rates
