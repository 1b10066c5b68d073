"""Live TRex tests (marker ``trex``): run only when NATBENCH_TREX=host[:port] names a reachable server.

Environment:
  NATBENCH_TREX              host[:sync_port] or [ipv6]:sync_port of a TRex server in STL mode (``t-rex-64 -i``)
  NATBENCH_TREX_PRIVATE_MAC  MAC of the DUT's private interface (behind TRex port 0)
  NATBENCH_TREX_PUBLIC_MAC   MAC of the DUT's public interface (behind TRex port 1)
  NATBENCH_TREX_COUNT_CMD    shell command printing the DUT's connection count (e.g. ``ssh dut conntrack -C``)
  NATBENCH_TREX_RESET_CMD    shell command emptying the DUT's connection table (e.g. ``ssh dut conntrack -F``)
  NATBENCH_TREX_SOFTWARE     1 when the server runs with --software
The counts read during a trial (tail rates, the loss stop) need NATBENCH_TREX_RESET_CMD for the stop.
The DUT must be a port-preserving NAT44 with the seeds' address plan and
static neighbours for 198.18.0.2 and 198.19.0.2 (see docs/trex.md).
"""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from natbench.judging import judge_phase, judge_stopped
from natbench.plugins import Directions, LossStop, Phase2Options
from natbench.results import Direction, Verdict
from natbench.testers.losswatch import SAMPLE_PERIOD
from natbench.testers.trex.address import DEFAULT_SYNC_PORT, parse_server
from natbench.testers.trex.backend import create
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

pytestmark = pytest.mark.trex


def _server() -> str:
    spec = os.environ.get("NATBENCH_TREX")
    if not spec:
        pytest.skip("NATBENCH_TREX is not set (host[:port] of a live TRex server)")
    address = parse_server(spec)  # a malformed value is an error here, not a skip
    sync = address.port or DEFAULT_SYNC_PORT
    try:
        with socket.create_connection((address.host, sync), timeout=3):
            pass
    except OSError as exc:
        pytest.skip(f"TRex server {spec} is not reachable: {exc}")
    return spec


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.skip(f"{name} is not set (see the module docstring)")
    return value


def _sh(cmd: str) -> str:
    return subprocess.run(cmd, shell=True, check=True, capture_output=True, text=True, timeout=120).stdout


@pytest.fixture
def tester():  # type: ignore[no-untyped-def]
    t = create(
        {
            "server": _server(),  # host[:port]: the settings take the documented form as it is
            "private_dst_mac": _env("NATBENCH_TREX_PRIVATE_MAC"),
            "public_dst_mac": _env("NATBENCH_TREX_PUBLIC_MAC"),
            "software": os.environ.get("NATBENCH_TREX_SOFTWARE") == "1",
        },
        None,
    )
    yield t
    t.close()


PLAN = TrafficPlan(
    Family.NAT44,
    AddressPlan.default(Family.NAT44),
    PortRange(1024, 1223),
    PortRange(80, 129),
    64,
    seed=2025,
    responder_mode=ResponderMode.COMPUTE,
)


def test_phase1_creates_n_connections(tester) -> None:  # type: ignore[no-untyped-def]
    count_cmd = _env("NATBENCH_TREX_COUNT_CMD")
    _sh(_env("NATBENCH_TREX_RESET_CMD"))
    before = int(_sh(count_cmd).split()[-1])
    tester.prepare(PLAN)
    result = tester.phase1(10_000.0, learn=False)
    fwd = result.counts[Direction.FORWARD]
    assert result.tester_ok, result.tester_note
    assert fwd.sent == PLAN.connections == 10_000
    assert fwd.received == PLAN.connections
    after = int(_sh(count_cmd).split()[-1])
    assert after - before == PLAN.connections
    check = tester.validate(10_000.0)
    assert check.counts[Direction.REVERSE].received == PLAN.connections


def test_throughput_search_completes(tester) -> None:  # type: ignore[no-untyped-def]
    tester.prepare(PLAN)
    reset = os.environ.get("NATBENCH_TREX_RESET_CMD")
    if reset:
        _sh(reset)
    assert tester.phase1(10_000.0, learn=False).tester_ok
    lower, upper, steps = 1_000.0, 2_000_000.0, 0
    while upper - lower > 0.05 * upper and steps < 20:
        rate = (lower + upper) / 2
        r = tester.phase2(rate, 2.0, Directions.BIDIRECTIONAL, Phase2Options())
        steps += 1
        if not r.tester_ok:
            upper = rate  # the tester could not keep it: no DUT verdict possible above
            continue
        ok = all(c.loss_ratio <= 0.0001 for c in r.counts.values())
        lower, upper = (rate, upper) if ok else (lower, rate)
        assert r.responder_mode == "compute"
    assert steps and lower >= 1_000.0


def test_latency_in_both_directions(tester) -> None:  # type: ignore[no-untyped-def]
    """Both latency streams cross the NAT and come back measured (their UDP checksums must hold)."""
    tester.prepare(PLAN)
    reset = os.environ.get("NATBENCH_TREX_RESET_CMD")
    if reset:
        _sh(reset)
    assert tester.phase1(10_000.0, learn=False).tester_ok
    options = Phase2Options(latency=True)
    r = tester.phase2(5_000.0, 2.0, Directions.BIDIRECTIONAL, options)
    assert r.tester_ok, r.tester_note
    expected = min(options.latency_rate, 5_000.0 / 2) * 2.0
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert r.counts[d].loss_ratio <= 0.001, (d, r.counts[d])
        lat = r.latency[d]
        assert lat.samples >= 0.99 * expected, (d, lat)
        assert 0 < lat.minimum <= lat.median <= lat.p99_9 <= lat.maximum


def test_trex_reads_its_own_drop_counters_and_timing(tester) -> None:  # type: ignore[no-untyped-def]
    """A live server answers get_xstats / get_util_stats; frames TRex itself missed are a deviation of the
    direction received on that port, never the DUT's loss (docs/trex.md 4.4)."""
    tester.prepare(PLAN)
    reset = os.environ.get("NATBENCH_TREX_RESET_CMD")
    if reset:
        _sh(reset)
    assert tester.phase1(10_000.0, learn=False).tester_ok
    r = tester.phase2(5_000.0, 2.0, Directions.BIDIRECTIONAL, Phase2Options())
    assert "xstats_error" not in r.extra and "utilization_error" not in r.extra, r.extra
    trex = r.extra["trex"]
    # the server starts sending before the start call returns (live: idle seen 1.991 s after the return)
    assert set(trex["ports"]) == {"0", "1"} and trex["start_to_idle_s"] + r.extra["start_call_s"] >= 2.0
    assert trex["busiest_core_pct"] is not None
    if r.extra["rx_drops"]:  # TRex missed frames: a deviation that explains as much of the loss
        assert any(d.missed and "tester receive (TRex port" in d.notes[0] for d in r.deviations.values())
        verdict, _reason = judge_phase(r, 0.0, 0.01)
        lost = sum(c.lost for c in r.counts.values())
        assert verdict is not Verdict.FAIL or lost > sum(d.explains for d in r.deviations.values())


def test_counts_read_during_a_trial_give_tail_rates(tester) -> None:  # type: ignore[no-untyped-def]
    """A lossless bidirectional trial read every 20 ms while it runs: a second-half rate per direction close to the
    offered rate, at most one read per period, no stop (natbench.testers.trex.watch)."""
    tester.prepare(PLAN)
    reset = os.environ.get("NATBENCH_TREX_RESET_CMD")
    if reset:
        _sh(reset)
    assert tester.phase1(10_000.0, learn=False).tester_ok
    # asked to stop as a full trial of the fast search is: a DUT that keeps up is never stopped
    stop = LossStop(allowance=0.0, margin=64.0, window=0.25)
    r = tester.phase2(5_000.0, 2.0, Directions.BIDIRECTIONAL, Phase2Options(tail_rates=True, stop=stop))
    assert r.tester_ok, r.tester_note
    watch = r.extra["watch"]
    assert 0 < watch["samples"] <= 2.0 / SAMPLE_PERIOD + 1, watch
    assert set(r.tail_rates) == {Direction.FORWARD, Direction.REVERSE}, watch
    for d, rate in r.tail_rates.items():
        assert rate == pytest.approx(5_000.0, rel=0.1), (d, r.tail_rates, watch)
    assert not r.stopped


def test_a_failing_trial_is_stopped_with_the_frames_sent_until_then(tester) -> None:  # type: ignore[no-untyped-def]
    """Reverse frames to tuples the DUT never saw (its table emptied, no phase 1) are all lost: the loss watch stops
    the trial after the window, the counts are those sent up to the stop, and it is judged a failed full trial."""
    reset = _env("NATBENCH_TREX_RESET_CMD")
    tester.prepare(PLAN)
    _sh(reset)
    stop = LossStop(allowance=0.0, margin=64.0, window=0.25)
    r = tester.phase2(5_000.0, 4.0, Directions.REVERSE, Phase2Options(stop=stop))
    assert r.stopped, r.extra.get("watch")
    sent = r.counts[Direction.REVERSE].sent
    assert 0 < sent < 5_000.0 * 4.0 / 2, r.counts
    assert r.extra["stop"]["decided_s"] < 2.0 and r.duration < 2.0, r.extra["stop"]
    verdict, reason = judge_stopped(r, *judge_phase(r, 0.0, 0.01), stop.allowance)
    assert verdict is Verdict.FAIL, reason
