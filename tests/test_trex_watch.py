"""Counts read while a TRex trial runs: a bounded rate of reads, bounded memory, the tail rate, the stop of a failed
trial (frames counted up to the stop), and TRex's own receive misses netted out (natbench.testers.trex.watch).

The trials run in real time against tests/trex_fakes.TrialServer, a server model of a token-bucket DUT, behind
natbench's real TRexSession (its wait loop and counter reads) and the client library's real JsonRpcClient and stats
classes (StatsBatch, PortStats, PortXStats, GlobalStats): every count the tester sees went through them.
"""

from __future__ import annotations

import importlib
import math
import tracemalloc
from typing import Any

import pytest
from trex_fakes import DutModel, SimulatedClient, TrialServer, raw_port

from natbench.judging import judge_phase, judge_stopped
from natbench.plugins import Directions, LossStop, Phase2Options, TrialEvidence, evidence_of
from natbench.results import Direction, PhaseResult, Verdict
from natbench.testers.losswatch import SAMPLE_PERIOD
from natbench.testers.tailrate import MAX_SAMPLES
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")

from natbench.testers.trex.backend import check_settings
from natbench.testers.trex.client import TRexSession
from natbench.testers.trex.tester import TRexTester
from natbench.testers.trex.watch import TIMED_READ, Lane, TrialWatch

SETTINGS = {"server": "127.0.0.1", "private_dst_mac": "02:00:00:00:00:01", "public_dst_mac": "02:00:00:00:00:02"}
PLAN = TrafficPlan(
    Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(1, 100), PortRange(1, 10), 64, 1, ResponderMode.COMPUTE
)
LIMIT = DutModel(capacity=20_000, bucket=1_000)
"""The lab's rate-limited DUT (campaigns/lab-rate-limit.yaml): 20,000 frames/s per direction, a 1,000-frame bucket."""
STOP = LossStop(allowance=0, margin=64, window=0.25)
"""What the fast search asks of a full trial with acceptance 0 (natbench.metrics.fast.loss_stop)."""
BOTH = Directions.BIDIRECTIONAL


def _tester(server: TrialServer, **settings: Any) -> TRexTester:
    session = TRexSession("127.0.0.1")  # the real STLClient is built, never connects: the simulated one replaces it
    session._client = SimulatedClient(session.api, server)
    tester = TRexTester(check_settings(dict(SETTINGS, **settings)), session=session)
    tester.prepare(PLAN)
    tester.set_receive_timeout(0.05)
    return tester


def _reads(server: TrialServer, since: float) -> list[list[str]]:
    """The RPC messages that read port counters while the trial ran (after ``since``), each a list of methods."""
    return [m for t, m in server.requests if t >= since and m and set(m) == {"get_port_stats"}]


# -- reading at a bounded rate ---------------------------------------------------------------------------------


def test_a_trial_asked_for_tail_rates_is_read_once_per_period_in_one_batch() -> None:
    server = TrialServer(DutModel())
    tester = _tester(server)
    r = tester.phase2(10_000.0, 1.0, BOTH, Phase2Options(tail_rates=True))
    reads = _reads(server, server.started or 0.0)
    # one batch of the two ports' get_port_stats per read, never more than one read per sampling period
    assert all(m == ["get_port_stats", "get_port_stats"] for m in reads)
    assert 0.5 / SAMPLE_PERIOD <= len(reads) <= 1.0 / SAMPLE_PERIOD + 1
    times = [t for t, m in server.requests if m and set(m) == {"get_port_stats"}]
    # however late a read came (a busy machine), the next waits a whole period after it was asked for: no ten
    # reads within nine periods (the server sees them up to one read's round trip apart from when they were sent)
    assert all(b - a >= 9 * SAMPLE_PERIOD for a, b in zip(times, times[10:], strict=False))
    assert r.extra["watch"]["samples"] == len(reads) and r.extra["watch"]["period_s"] == SAMPLE_PERIOD


def test_a_trial_asked_for_nothing_is_not_read_while_it_runs() -> None:
    server = TrialServer(DutModel())
    tester = _tester(server)
    r = tester.phase2(10_000.0, 0.5, BOTH, Phase2Options())
    assert _reads(server, server.started or 0.0) == []  # the only reads after the start: the final get_stats
    assert "watch" not in r.extra and r.tail_rates == {} and not r.stopped


def test_the_watch_keeps_bounded_memory_however_long_the_trial() -> None:
    """Reads of a 14-minute trial (42,000) through the library's PortStats objects: once the tail rate's fit is full
    (MAX_SAMPLES), 40,000 more reads add nothing that grows with them (keeping them, three tuples each, would take
    megabytes)."""
    stats = importlib.import_module("trex.common.stats.trex_port_stats")

    class _P:
        def __init__(self, port_id: int) -> None:
            self.port_id = port_id

        def get_speed_bps(self) -> float:
            return 10e9

    ports = {p: stats.PortStats(_P(p)) for p in (0, 1)}
    for obj in ports.values():
        obj._reset_common(raw_port())
    lanes = [Lane(Direction.FORWARD, 0, 1), Lane(Direction.REVERSE, 1, 0)]
    watch = TrialWatch(lanes, STOP, tails=True)
    watch.begin(0.0)

    def feed(first: int, last: int) -> None:
        for i in range(first, last):
            t = i * SAMPLE_PERIOD
            for obj in ports.values():
                obj._update_common(raw_port(opackets=int(t * 20_000), ipackets=int(t * 20_000)))
            assert not watch.observe(t, t + 0.0005, {p: obj.to_dict() for p, obj in ports.items()})

    feed(0, 4 * MAX_SAMPLES)
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    feed(4 * MAX_SAMPLES, 4 * MAX_SAMPLES + 40_000)
    grown = sum(s.size_diff for s in tracemalloc.take_snapshot().compare_to(before, "filename"))
    tracemalloc.stop()
    assert watch.samples == 4 * MAX_SAMPLES + 40_000
    assert grown < 256 * 1024, grown  # the fit's bounded samples turn over; nothing is kept per read
    assert watch.tail_rates() == {Direction.FORWARD: 20_000.0, Direction.REVERSE: 20_000.0}  # thinned, still fit


# -- the forwarding rate of the second half -------------------------------------------------------------------


def test_tail_rate_reads_the_dut_capacity_not_the_whole_trial_count() -> None:
    server = TrialServer(LIMIT)
    r = _tester(server).phase2(25_600.0, 1.0, BOTH, Phase2Options(tail_rates=True))
    assert r.tester_ok, r.tester_note
    for d in (Direction.FORWARD, Direction.REVERSE):
        assert r.counts[d].valid == pytest.approx(21_000, rel=0.01)  # the bucket's 1,000 frames and one second
        assert r.tail_rates[d] == pytest.approx(20_000, rel=0.015)  # the second half: the capacity alone
    assert r.extra["watch"]["fit_samples"] >= 20


def test_tail_rate_of_a_dut_that_keeps_up_is_the_offered_rate() -> None:
    server = TrialServer(DutModel(capacity=40_000))
    r = _tester(server).phase2(25_600.0, 1.0, BOTH, Phase2Options(tail_rates=True))
    assert all(v == pytest.approx(25_600, rel=0.015) for v in r.tail_rates.values())
    assert set(r.tail_rates) == {Direction.FORWARD, Direction.REVERSE}


def test_tail_rate_of_one_direction() -> None:
    server = TrialServer(LIMIT)
    r = _tester(server).phase2(25_600.0, 1.0, Directions.REVERSE, Phase2Options(tail_rates=True))
    assert set(r.tail_rates) == {Direction.REVERSE} and r.tail_rates[Direction.REVERSE] == pytest.approx(20_000, 0.015)


def test_reads_that_took_too_long_are_left_out_of_the_fit_but_still_watch_for_loss() -> None:
    server = TrialServer(LIMIT, rpc_delay=TIMED_READ * 1.5)
    r = _tester(server).phase2(25_600.0, 3.0, BOTH, Phase2Options(tail_rates=True, stop=STOP))
    assert r.tail_rates == {} and r.extra["watch"]["fit_samples"] == 0
    assert r.extra["watch"]["read_ms_mean"] >= TIMED_READ * 1000
    assert r.stopped  # the gap compares counts of the same read, whatever its time


def test_tester_receive_misses_count_as_forwarded_in_the_tail_rate() -> None:
    server = TrialServer(DutModel(capacity=20_000, bucket=1_000, missed=0.02))
    r = _tester(server).phase2(25_600.0, 1.0, BOTH, Phase2Options(tail_rates=True))
    # the DUT forwarded 20,000 per second; TRex's receive path missed 2 % of them (port ierrors): still the DUT's
    assert all(v == pytest.approx(20_000, rel=0.015) for v in r.tail_rates.values())
    assert all(c.valid == pytest.approx(21_000 * 0.98, rel=0.01) for c in r.counts.values())


# -- stopping a failed trial ----------------------------------------------------------------------------------


def test_a_failed_full_trial_is_stopped_with_the_frames_sent_up_to_the_stop() -> None:
    server = TrialServer(LIMIT)
    tester = _tester(server)
    r = tester.phase2(25_600.0, 3.0, BOTH, Phase2Options(stop=STOP, tail_rates=True))
    assert r.stopped and server.stopped_at is not None
    stop = r.extra["stop"]
    # the bucket empties after 1,000 / 5,600 = 0.18 s, 64 frames go missing 11 ms later, then the 0.25 s window
    assert 0.4 <= stop["decided_s"] <= 1.0
    assert min(stop["missing"]) > STOP.margin
    for d, port in ((Direction.FORWARD, 0), (Direction.REVERSE, 1)):
        assert r.counts[d].sent == server.sent_at_stop[port]  # the sent count at the stop, not the planned count
        assert r.counts[d].sent < 25_600 * 3.0 / 2
        assert r.counts[d].sent == pytest.approx(25_600 * stop["sending_s"], rel=0.02)
    assert r.duration == pytest.approx(max(c.sent for c in r.counts.values()) / 25_600)
    assert r.tester_ok, r.tester_note  # it sent what was due by the stop
    verdict, reason = judge_stopped(r, *judge_phase(r, 0.0, 0.01), STOP.allowance)
    assert verdict is Verdict.FAIL and "stopped early" in reason


def test_a_trial_the_dut_keeps_up_with_is_not_stopped() -> None:
    server = TrialServer(DutModel(capacity=30_000, bucket=1_000))
    r = _tester(server).phase2(25_600.0, 1.0, BOTH, Phase2Options(stop=STOP))
    assert not r.stopped and server.stopped_at is None and "stop" not in r.extra
    assert all(c.sent == 25_600 for c in r.counts.values()) and r.duration == 1.0
    assert judge_phase(r, 0.0, 0.01)[0] is Verdict.PASS


def test_a_loss_within_the_margin_is_not_stopped() -> None:
    """A DUT 50 frames short over the whole trial (a bucket of 1,000 at 20,050 fps over 1 s for 21,100 offered):
    below the margin the watch does not stop; the verdict still fails the trial at its end."""
    server = TrialServer(DutModel(capacity=20_000, bucket=1_000))
    r = _tester(server).phase2(21_050.0, 1.0, BOTH, Phase2Options(stop=STOP))
    lost = max(c.lost for c in r.counts.values())
    assert 0 < lost <= STOP.margin and not r.stopped
    assert judge_phase(r, 0.0, 0.01)[0] is Verdict.FAIL


def test_a_trial_not_asked_to_stop_runs_to_its_end() -> None:
    server = TrialServer(LIMIT)
    r = _tester(server).phase2(25_600.0, 1.0, BOTH, Phase2Options(tail_rates=True))
    assert not r.stopped and server.stopped_at is None
    assert all(c.sent == 25_600 for c in r.counts.values())


def test_tester_receive_misses_do_not_stop_a_trial() -> None:
    """TRex's own receive misses (port ierrors) are netted out of the gap, as the verdict nets them out of the loss:
    a lossless DUT behind a tester that misses 1 % is not stopped, and its trial is not the DUT's failure."""
    server = TrialServer(DutModel(missed=0.01))
    r = _tester(server).phase2(25_600.0, 1.0, BOTH, Phase2Options(stop=STOP))
    assert not r.stopped
    assert all(c.lost == pytest.approx(256, abs=2) for c in r.counts.values())  # lost to the counters, not the DUT
    assert all(d.missed == pytest.approx(256, abs=2) for d in r.deviations.values())
    assert judge_phase(r, 0.0, 0.01)[0] is Verdict.INVALID  # the tester's deviation explains the loss


def test_a_dut_that_loses_beyond_the_tester_misses_is_stopped_and_fails_net_of_them() -> None:
    server = TrialServer(DutModel(capacity=20_000, bucket=1_000, missed=0.01))
    r = _tester(server).phase2(25_600.0, 3.0, BOTH, Phase2Options(stop=STOP))
    assert r.stopped
    verdict, reason = judge_stopped(r, *judge_phase(r, 0.0, 0.01), STOP.allowance)
    assert verdict is Verdict.FAIL and "net of the tester's own deviation" in reason


def test_a_stop_that_the_receive_wait_disproves_is_no_verdict() -> None:
    """A stopped trial whose loss, after the wait, is within the full trial's allowance proves nothing (invalid:
    measured again in full), as for the software tester."""
    server = TrialServer(LIMIT)
    r = _tester(server).phase2(25_600.0, 3.0, BOTH, Phase2Options(stop=STOP))
    lost = max(c.lost for c in r.counts.values())
    verdict, reason = judge_stopped(r, *judge_phase(r, 0.0, 0.01), allowance=lost + 1)
    assert r.stopped and verdict is Verdict.INVALID and reason.startswith("stopped early, but")


def test_a_stopped_trial_that_fell_behind_is_the_testers_fault() -> None:
    """The rate check of a stopped trial: the frames due by the stop, within the full trial's tolerance."""
    server = TrialServer(LIMIT, pace=0.9)  # the server sent 10 % fewer frames than were due
    r = _tester(server).phase2(25_600.0, 3.0, BOTH, Phase2Options(stop=STOP))
    assert r.stopped and not r.tester_ok and "sent" in r.tester_note
    assert judge_stopped(r, *judge_phase(r, 0.0, 0.01), STOP.allowance)[0] is Verdict.INVALID


def test_stop_and_tail_rates_do_not_upload_the_streams_again() -> None:
    server = TrialServer(LIMIT)
    tester = _tester(server)
    first = tester.phase2(25_600.0, 1.0, BOTH, Phase2Options(tail_rates=True))
    full = tester.phase2(20_000.0, 1.0, BOTH, Phase2Options(tail_rates=True, stop=STOP))
    plain = tester.phase2(20_000.0, 1.0, BOTH, Phase2Options())
    assert first.extra["uploaded"] and not full.extra["uploaded"] and not plain.extra["uploaded"]


# -- the declaration ------------------------------------------------------------------------------------------


def test_the_trex_tester_declares_the_stop_and_tail_rates() -> None:
    tester = _tester(TrialServer(DutModel()))
    assert evidence_of(tester) == TrialEvidence(stops_failed_trials=True, tail_rates=True, receive_misses=True)


def test_an_ability_taken_away_is_not_given() -> None:
    """The declaration is what the trial does: without the stop ability a trial asked to stop runs to its end."""

    class NoStop(TRexTester):
        abilities = TrialEvidence(stops_failed_trials=False, tail_rates=True)

    server = TrialServer(LIMIT)
    session = TRexSession("127.0.0.1")
    session._client = SimulatedClient(session.api, server)
    tester = NoStop(check_settings(SETTINGS), session=session)
    tester.prepare(PLAN)
    tester.set_receive_timeout(0.05)
    r: PhaseResult = tester.phase2(25_600.0, 1.0, BOTH, Phase2Options(stop=STOP, tail_rates=True))
    assert not evidence_of(tester).stops_failed_trials and not r.stopped and server.stopped_at is None
    assert r.tail_rates and all(math.isfinite(v) for v in r.tail_rates.values())
