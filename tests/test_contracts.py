"""Tests of the shared data contracts (traffic plan, enumeration, results, working points)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from natbench.results import Direction, DirectionCounts, LatencyStats, PhaseResult, TrialRecord, Verdict
from natbench.traffic import AddressPlan, Family, PortEnumeration, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint, si_count


def test_enumeration_is_a_bijection_on_a_small_space() -> None:
    e = PortEnumeration(PortRange(1000, 1036), PortRange(80, 90), seed=7)
    pairs = list(e)
    assert len(pairs) == e.size == 37 * 11
    assert len(set(pairs)) == e.size
    assert all(s in e.src and d in e.dst for s, d in pairs)


def test_vectorised_pairs_match_scalar_pairs() -> None:
    e = PortEnumeration(PortRange(1, 300), PortRange(1, 7), seed=3)
    s, d = e.pairs(10, 50)
    assert [(int(a), int(b)) for a, b in zip(s, d, strict=True)] == [e.pair(k) for k in range(10, 50)]


def test_enumeration_is_identical_in_another_process() -> None:
    code = (
        "from natbench.traffic import PortEnumeration, PortRange;"
        "e=PortEnumeration(PortRange(1,4000),PortRange(1,1000),42);"
        "print([e.pair(k) for k in (0,1,2,3999,4000,3999999)])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    e = PortEnumeration(PortRange(1, 4000), PortRange(1, 1000), 42)
    assert out.strip() == str([e.pair(k) for k in (0, 1, 2, 3999, 4000, 3999999)])


def test_nat64_plan_embeds_responder_in_wkp() -> None:
    plan = AddressPlan.default(Family.NAT64)
    assert str(plan.responder_as_seen_by_initiator) == "64:ff9b::c613:2"
    tp = TrafficPlan(Family.NAT64, plan, PortRange(1, 10), PortRange(1, 10), 64, seed=1)
    assert (tp.private_frame_size, tp.public_frame_size, tp.connections) == (84, 64, 100)


def test_port_range_rejects_bad_bounds() -> None:
    with pytest.raises(ValueError):
        PortRange(10, 9)
    with pytest.raises(ValueError):
        PortRange(0, 9)


def test_phase_result_round_trips_through_json_form() -> None:
    r = PhaseResult(
        intended_rate=1000.0,
        achieved_rate=999.5,
        duration=1.0,
        counts={Direction.FORWARD: DirectionCounts(1000, 1000, 998)},
        latency={Direction.FORWARD: LatencyStats(100, 1e-5, 2e-5, 9e-5, 1e-4)},
    )
    assert PhaseResult.from_dict(r.to_dict()) == r
    assert r.counts[Direction.FORWARD].lost == 2
    assert r.latency[Direction.FORWARD].pdv == pytest.approx(8e-5)


def test_trial_record_round_trips() -> None:
    t = TrialRecord(
        "abc",
        "cps",
        0,
        3,
        "phase1",
        1e5,
        1e5,
        {"forward": {"sent": 1, "received": 1, "valid": 1}},
        Verdict.INVALID,
        "tester fell behind",
        1.0,
        2.0,
        lower=1.0,
        upper=2.0,
    )
    assert TrialRecord.from_dict(t.to_dict()) == t


def test_working_point_label_and_stable_id() -> None:
    w = WorkingPoint(0, PortRange(1, 4000), PortRange(1, 1000), 64, cores=4, name="iptables")
    assert w.label == "iptables-4c-4M"
    assert w.connections == 4_000_000
    assert w.id == WorkingPoint(5, PortRange(1, 4000), PortRange(1, 1000), 64, cores=4, name="iptables").id
    assert si_count(1_562_500) == "1.56M"
