"""TRex's own counters in a trial: receive drops (deviations), transmit errors (invalid), timing and pacing (recorded).

The counters come out of the TRex client library's own stats classes (tests/trex_fakes.LibrarySession):
the test gives a server's raw counters before and after the trial, as trex-core sends them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

import pytest
from trex_fakes import DPDK_XSTATS, LibrarySession, raw_global, raw_port

from natbench.judging import is_tester_limited, judge_phase
from natbench.plugins import Directions, Phase2Options
from natbench.results import Deviation, Direction, PhaseResult, TrialRecord, Verdict
from natbench.search.binary import BinarySearch
from natbench.testers.trex import health
from natbench.testers.trex.backend import check_settings
from natbench.testers.trex.tester import TRexTester
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")

SETTINGS = {"server": "127.0.0.1", "private_dst_mac": "02:00:00:00:00:01", "public_dst_mac": "02:00:00:00:00:02"}
PLAN = TrafficPlan(
    Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(1, 100), PortRange(1, 10), 64, 1, ResponderMode.COMPUTE
)
# counters of earlier trials on the server: the library reports them relative to clear_stats, so none may count
EARLIER = {"opackets": 1_000_000, "ipackets": 999_000, "ierrors": 5_000, "oerrors": 7}
EARLIER_X = {"rx_missed_errors": 5_000, "tx_errors": 7}


def _after(sent: int, received: int, ierrors: int = 0, oerrors: int = 0, tx_pps: float = 0.0) -> dict[str, float]:
    return raw_port(
        opackets=EARLIER["opackets"] + sent,
        obytes=60 * (EARLIER["opackets"] + sent),
        ipackets=EARLIER["ipackets"] + received,
        ierrors=EARLIER["ierrors"] + ierrors,
        oerrors=EARLIER["oerrors"] + oerrors,
        m_total_tx_pps=tx_pps,
    )


def _xafter(**delta: int) -> dict[str, int]:
    return {n: EARLIER_X.get(n, 0) + delta.get(n, 0) for n in DPDK_XSTATS}


def _session(
    port0: dict[str, float],
    port1: dict[str, float],
    x0: Mapping[str, int] | None = None,
    x1: Mapping[str, int] | None = None,
    **kw: Any,
) -> LibrarySession:
    before = raw_port(**EARLIER)
    return LibrarySession(
        {0: before, 1: before},
        {0: port0, 1: port1},
        xstats_before={0: _xafter(), 1: _xafter()},
        xstats_after={0: x0 or _xafter(), 1: x1 or _xafter()},
        **kw,
    )


def _trial(
    session: LibrarySession, rate: float = 5000.0, duration: float = 2.0, rx_wait: float = 0.2, **settings: Any
) -> PhaseResult:
    tester = TRexTester(check_settings(dict(SETTINGS, **settings)), session=session)  # type: ignore[arg-type]
    tester.prepare(PLAN)
    tester.set_receive_timeout(rx_wait)
    return tester.phase2(rate, duration, Directions.BIDIRECTIONAL, Phase2Options())


def _record(phase: PhaseResult, verdict: Verdict, reason: str) -> TrialRecord:
    return TrialRecord(
        "p", "throughput", 0, 0, "phase2", phase.intended_rate, phase.achieved_rate, {}, verdict, reason, 0.0, 0.0
    )


def test_trex_receive_drops_the_loss_matches_are_the_testers_deviation_not_dut_loss() -> None:
    # the live trial: 245 / 187 frames "lost" forward / reverse, TRex port ierrors (187, 245) and the
    # af_packet socket drops (DPDK imissed = xstat rx_missed_errors) the same; the DUT forwarded every frame.
    # 5000 fps x 2 s = 10,000 frames per direction. Port 1 (public) receives the forward frames, port 0 the reverse.
    s = _session(
        _after(10_000, 10_000 - 187, ierrors=187),
        _after(10_000, 10_000 - 245, ierrors=245),
        _xafter(rx_missed_errors=187),
        _xafter(rx_missed_errors=245),
    )
    r = _trial(s)
    assert r.tester_ok, r.tester_note  # the tester sent what was asked; its misses are deviations
    # the xstats were read: they judge (ierrors mixes misses with malformed frames, see the next tests)
    assert r.deviations[Direction.FORWARD] == Deviation(
        missed=245, notes=("tester receive (TRex port 1) dropped at least 245 frames (rx_missed_errors 245)",)
    )
    assert r.deviations[Direction.REVERSE].missed == 187
    assert r.extra["rx_drops"] == {"0": {"rx_missed_errors": 187}, "1": {"rx_missed_errors": 245}}
    assert r.extra["rx_malformed"] == {}
    verdict, reason = judge_phase(r, acceptance=0.0, rate_tolerance=0.01)
    assert verdict is Verdict.INVALID  # retried, never counted as the DUT's 2.45 % loss: the misses explain it
    assert "tester receive (TRex port 1) dropped at least 245 frames" in reason
    assert is_tester_limited(_record(r, verdict, reason))


def test_a_dut_loss_far_beyond_trexs_own_misses_fails_the_trial() -> None:
    """The live policer case: 60,000 pps against 62,500 fps for 2 s: 4,473 of 125,000 frames lost in the DUT,
    while TRex's receive port missed only 339: the trial FAILS (the DUT's loss net of the misses), where it used
    to be invalid and make 62,500 the "tester's ceiling"."""
    s = _session(_after(125_000, 125_000), _after(125_000, 125_000 - 4_473), x1=_xafter(rx_missed_errors=339))
    r = _trial(s, rate=62_500.0)
    assert r.tester_ok, r.tester_note
    verdict, reason = judge_phase(r, acceptance=0.0, rate_tolerance=0.01)
    assert verdict is Verdict.FAIL
    assert reason == (
        "forward loss 4473/125000 = 3.578400% > 0.000000% (4134 net of the 339 the tester's own deviation could"
        " explain)"
    )


def test_earlier_trials_counters_do_not_count_only_the_trials_delta() -> None:
    # the server's ierrors stand at 5,000 from earlier trials and do not move in this one: a clean trial
    s = _session(_after(10_000, 10_000), _after(10_000, 10_000))
    r = _trial(s)
    assert s.cleared
    assert r.tester_ok, r.tester_note
    assert r.extra["rx_drops"] == {} and r.extra["tx_errors"] == {}
    assert judge_phase(r, acceptance=0.0, rate_tolerance=0.01) == (Verdict.PASS, "")


def test_a_miss_seen_only_in_the_extended_counters_is_a_deviation() -> None:
    # a driver whose port ierrors leave out its buffer shortages: rx_mbuf_allocation_errors alone
    s = _session(
        _after(10_000, 10_000),
        _after(10_000, 10_000 - 12),
        x1=_xafter(rx_mbuf_allocation_errors=12, rx_missed_errors=5),
    )
    r = _trial(s)
    # the counters overlap (one frame may be in several): the port's drops are their largest, 12, not 17
    assert r.deviations[Direction.FORWARD] == Deviation(
        missed=12,
        notes=(
            "tester receive (TRex port 1) dropped at least 12 frames"
            " (rx_mbuf_allocation_errors 12, rx_missed_errors 5)",
        ),
    )
    assert judge_phase(r, acceptance=0.0, rate_tolerance=0.01)[0] is Verdict.INVALID  # 12 lost, 12 explained


def test_frames_the_dut_corrupted_are_its_loss_recorded_not_an_invalid_trial() -> None:
    # 5 frames arrived with a bad checksum: DPDK ierrors (xstat rx_errors) 5, so TRex's port ierrors is 5 too
    # (imissed 0 + ierrors 5 + rx_nombuf 0); they are not in ipackets: 10,000 - 5 received on port 1
    s = _session(_after(10_000, 10_000), _after(10_000, 10_000 - 5, ierrors=5), x1=_xafter(rx_errors=5, rx_q0_errors=5))
    r = _trial(s)
    assert r.tester_ok, r.tester_note
    assert r.extra["rx_drops"] == {}
    assert r.extra["rx_malformed"] == {"1": {"rx_errors": 5, "rx_q0_errors": 5}}
    verdict, reason = judge_phase(r, acceptance=0.0, rate_tolerance=0.01)
    assert verdict is Verdict.FAIL  # the DUT's loss: 5 / 10,000 > acceptance 0
    assert "5/10000" in reason


def test_transmit_errors_make_the_trial_invalid() -> None:
    # af_packet counts frames its TX ring refused as oerrors (DPDK tx_errors); they never reached the DUT
    s = _session(_after(9_970, 10_000, oerrors=30), _after(10_000, 9_970), x0=_xafter(tx_errors=30))
    r = _trial(s)
    assert not r.tester_ok
    assert "tester transmit (TRex port 0) failed at least 30 frames (oerrors 30, tx_errors 30)" in r.tester_note


def test_driver_specific_receive_counters_are_recognised_and_deliveries_are_not() -> None:
    stats = {0: {"ierrors": 0}, 1: {"ierrors": "N/A"}}
    xstats = {
        0: {"rx_good_packets": 10_000, "rx_out_of_buffer": 4, "rx_discards_phy": 9, "tx_good_packets": 5},
        1: {"rx_no_dma_resources": 2, "rx_unicast_packets": 10, "rx_crc_errors": 1, "rx_fifo_errors": 3},
    }
    assert health.receive_drops(stats, xstats, [0, 1]) == {
        0: {"rx_out_of_buffer": 4, "rx_discards_phy": 9},
        1: {"rx_no_dma_resources": 2, "rx_fifo_errors": 3},
    }
    assert health.transmit_errors(stats, {0: {"tx_dropped": 2, "tx_good_packets": 9}}, [0, 1]) == {0: {"tx_dropped": 2}}


@pytest.mark.parametrize(
    "counter",
    ["rx_crc_errors", "rx_l3_l4_xsum_error", "rx_length_errors", "rx_undersize_errors", "rx_oversize_errors"],
)
def test_malformed_frame_counters_are_not_tester_drops(counter: str) -> None:
    # port ierrors 7 = DPDK ierrors 7 (the malformed frames): with the xstats read, the port counter judges nothing
    stats = {0: {"ierrors": 7}}
    xstats = {0: {"rx_errors": 7, counter: 7, "rx_missed_errors": 0}}
    assert health.receive_drops(stats, xstats, [0]) == {}
    assert health.receive_errors(xstats, [0]) == {0: {"rx_errors": 7, counter: 7}}


def test_without_xstats_a_port_falls_back_to_its_ierrors() -> None:
    # port 0's xstats were read (clean), port 1's were not: only port 1's ierrors count
    stats = {0: {"ierrors": 3}, 1: {"ierrors": 4}}
    assert health.receive_drops(stats, {0: {"rx_missed_errors": 0, "rx_errors": 3}}, [0, 1]) == {1: {"ierrors": 4}}


def _limited_trial(rate: float) -> PhaseResult:
    """A lossless DUT behind a TRex whose receive path overflows above 600 fps: the drops are TRex's own."""
    frames = round(rate * 2)
    dropped = frames // 50 if rate > 600 else 0  # 2 % of the frames beyond TRex's receive capacity
    s = _session(
        _after(frames, frames - dropped, ierrors=dropped),
        _after(frames, frames - dropped, ierrors=dropped),
        _xafter(rx_missed_errors=dropped),
        _xafter(rx_missed_errors=dropped),
    )
    return _trial(s, rate=rate)


def test_a_search_limited_by_trex_receive_drops_is_flagged_tester_bound() -> None:
    search = BinarySearch(0, 1000, 20)
    while not search.done:
        step = search.next_step()
        phase = _limited_trial(step.rate)
        verdict, reason = judge_phase(phase, acceptance=0.0, rate_tolerance=0.01)
        search.report(verdict, reason=reason, tester_limited=is_tester_limited(_record(phase, verdict, reason)))
    out = search.outcome()
    # every rate above 600 is beyond TRex (500 passes; 750, then 625, are TRex's ceiling): the result is
    # bounded by the tester, not a DUT failure at 625
    assert out.tester_bound and out.tester_ceiling is not None and out.tester_ceiling > 600
    assert out.value <= 600 and out.invalid > 0


def test_the_trial_records_trexs_own_timing() -> None:
    util = {"cpu": [{"ports": [-1, -1], "history": [3, 41, 42, 5, 77, 98] + [0] * 14}], "mbuf_stats": {}}
    s = _session(
        _after(10_000, 10_000, tx_pps=4_990.0),
        _after(10_000, 10_000, tx_pps=5_010.0),
        global_before=raw_global(m_total_queue_full=11),
        global_after=raw_global(m_total_queue_full=11, m_cpu_util=41.5, m_tx_pps=10_000.0, m_tx_expected_pps=10_000.0),
        util=util,
        wall=2.02,
    )
    r = _trial(s, rx_wait=1.0)
    trex = r.extra["trex"]
    assert trex["ports"]["0"]["tx_pps"] == 4_990.0 and trex["ports"]["1"]["tx_pps"] == 5_010.0
    assert trex["ports"]["0"]["opackets"] == 10_000 and trex["ports"]["1"]["ierrors"] == 0
    assert trex["global"]["cpu_util"] == 41.5 and trex["global"]["tx_expected_pps"] == 10_000.0
    assert trex["global"]["queue_full"] == 0  # 11 before the trial, 11 after: none in it
    assert (
        trex["start_to_idle_s"] == pytest.approx(2.02, abs=1e-3)
        and trex["nominal_s"] == 2.0
        and trex["sent_ratio"] == 1.0
    )
    # read after 2.02 s of sending and the 1.0 s receive wait: the newest ceil(3.02) + 1 = 5 one-second values
    # reach back to the trial's start: max(3, 41, 42, 5, 77) = 77; the 98 before it is an earlier second
    assert trex["busiest_core_pct"] == 77
    assert r.extra["pacing_warnings"] == [] and r.tester_ok


def test_a_saturated_trex_core_is_a_pacing_warning_not_a_verdict() -> None:
    util = {"cpu": [{"ports": [-1, -1], "history": [60, 97, 99, 50] + [0] * 16}], "mbuf_stats": {}}
    r = _trial(_session(_after(10_000, 10_000), _after(10_000, 10_000), util=util))
    assert r.tester_ok
    assert r.extra["pacing_warnings"] == [
        "a TRex core ran at 99 % during the trial: a saturated core sends late frames in bursts"
    ]
    assert r.tester_note == ""  # a warning field, not a note that could read as a reason
    assert judge_phase(r, acceptance=0.0, rate_tolerance=0.01)[0] is Verdict.PASS


def test_a_busy_second_before_the_trial_is_not_the_trials() -> None:
    # 99 % three seconds before the idle time of a 0.5 s trial (+0.2 s wait): the trial's values are the newest
    # ceil(0.7) + 1 = 2 (10 and 20)
    util = {"cpu": [{"ports": [-1, -1], "history": [10, 20, 99, 99] + [0] * 16}]}
    assert health.busiest_core(util, 0.7) == 20
    r = _trial(_session(_after(2_500, 2_500), _after(2_500, 2_500), util=util, wall=0.5), duration=0.5)
    assert r.extra["pacing_warnings"] == [] and r.extra["trex"]["busiest_core_pct"] == 20


def test_a_shortfall_within_tolerance_and_software_mode_are_pacing_warnings() -> None:
    # 9,950 of 10,000 frames: 0.5 % short, inside the 1 % rate_tolerance (valid) but more than 0.1 %
    r = _trial(_session(_after(9_950, 10_000), _after(10_000, 9_950)), software=True)
    assert r.tester_ok
    assert r.extra["pacing_warnings"] == [
        "forward: sent 9950 of 10000 frames (within rate_tolerance)",
        "software mode: TRex sends in clumps, not frame by frame",
    ]
    # 9,995 of 10,000 (0.05 %): TRex's duration-based stop, not a sign of uneven sending
    r = _trial(_session(_after(9_995, 10_000), _after(10_000, 9_995)))
    assert r.extra["pacing_warnings"] == []


def test_a_trial_that_ran_long_within_tolerance_is_a_pacing_warning() -> None:
    # nominal 2 s; 2.065 s to idle less the 0.05 s allowed overhead = 2.015 s: frames left late, but
    # within 1 % (2.02 s + 0.05 s would be invalid)
    r = _trial(_session(_after(10_000, 10_000), _after(10_000, 10_000), wall=2.065))
    assert r.tester_ok
    assert r.extra["pacing_warnings"] == [
        "sending took 2.015 s for a 2.000 s trial beyond the allowed overhead: frames left late (within rate_tolerance)"
    ]


def test_unreadable_xstats_are_recorded_and_port_counters_still_judge() -> None:
    from natbench.errors import TesterError

    s = _session(_after(10_000, 10_000), _after(10_000, 9_990, ierrors=10))

    def refused(port: int) -> dict[str, Any]:
        raise TesterError("TRex 127.0.0.1:4501: get_xstats port 0: not supported")

    s.xstats = refused  # type: ignore[method-assign]
    r = _trial(s)
    assert "not supported" in r.extra["xstats_error"]
    # without xstats the port ierrors cannot be split into misses and malformed frames: counted as the tester's
    assert r.deviations[Direction.FORWARD].missed == 10
    assert r.deviations[Direction.FORWARD].notes == (
        "tester receive (TRex port 1) dropped at least 10 frames (ierrors 10)",
    )
    assert judge_phase(r, acceptance=0.0, rate_tolerance=0.01)[0] is Verdict.INVALID


def test_a_phase1_burst_with_receive_drops_explains_that_loss_only() -> None:
    s = _session(_after(0, 0), _after(0, 0))
    tester = TRexTester(check_settings(dict(SETTINGS)), session=s)  # type: ignore[arg-type]
    tester.prepare(PLAN)
    tester.set_receive_timeout(0.0)
    # phase 1 of 100 x 10 = 1,000 pairs at 10,000 fps: 0.1 s; port 1 (Responder side) missed 4 of them
    s.after = {0: _after(1_000, 0), 1: _after(0, 996, ierrors=4)}
    s.xstats_after = {0: _xafter(), 1: _xafter(rx_missed_errors=4)}
    s.wall = 0.1
    r = tester.phase1(10_000.0, learn=False)
    assert r.tester_ok, r.tester_note
    assert r.deviations == {
        Direction.FORWARD: Deviation(
            missed=4, notes=("tester receive (TRex port 1) dropped at least 4 frames (rx_missed_errors 4)",)
        )
    }
    assert r.extra["rx_drops"] == {"1": {"rx_missed_errors": 4}}
    assert judge_phase(r, acceptance=0.0, rate_tolerance=0.01)[0] is Verdict.INVALID  # the 4 lost are the 4 missed


def test_library_session_reports_what_the_client_library_returns() -> None:
    # shape check against the real classes: get_stats' port keys and xstats names as the library builds them
    s = _session(_after(5, 4, ierrors=1), _after(4, 5))
    s.clear_stats([0, 1])
    s.started = time.monotonic()
    out = s.stats()
    assert {"opackets", "ipackets", "obytes", "ibytes", "oerrors", "ierrors", "tx_pps", "rx_pps"} <= set(out[0])
    assert out[0]["ierrors"] == 1 and out[0]["opackets"] == 5 and "queue_full" in out["global"]
    assert list(s.xstats(0)) == list(DPDK_XSTATS)


def test_the_session_calls_the_client_librarys_own_counter_methods() -> None:
    import inspect

    from natbench.testers.trex import client as trex_client

    session = trex_client.TRexSession("127.0.0.1")  # the real STLClient, never connected
    real = type(session._client)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []

    class Recorder:
        def __getattr__(self, name: str) -> Any:
            method = inspect.unwrap(getattr(real, name))

            def call(*args: Any, **kwargs: Any) -> Any:
                inspect.signature(method).bind(None, *args, **kwargs)  # the real method takes these arguments
                calls.append((name, args, kwargs))
                return {"rx_missed_errors": 3} if name == "get_xstats" else {"cpu": [], "mbuf_stats": {}}

            return call

    session._client = Recorder()
    session.clear_stats([0, 1])
    assert session.xstats(1) == {"rx_missed_errors": 3}
    assert session.utilization() == {"cpu": [], "mbuf_stats": {}}
    assert calls == [
        ("clear_stats", (), {"ports": [0, 1], "clear_xstats": True}),
        ("get_xstats", (1,), {}),
        ("get_util_stats", (), {}),
    ]


def test_the_sending_time_counts_from_the_start_calls_return() -> None:
    """A start RPC of 0.15 s (many streams) before 2 s of sending: the old clock, started before the call, read
    2.15 s and judged the trial late (beyond 2 s x 1.01 + 0.05 s) even at a low rate; measured from the call's
    return it is 2 s, on time. The call's own time is recorded."""
    s = _session(_after(10_000, 10_000), _after(10_000, 10_000), start_call=0.15)
    r = _trial(s)
    assert r.tester_ok, r.tester_note
    assert r.extra["start_call_s"] >= 0.15
    assert r.extra["wall_s"] == pytest.approx(2.0, abs=0.02)


def test_more_frames_than_intended_are_checked_like_fewer() -> None:
    """The live reverse direction sent 4,029 frames for 4,000 intended (+0.7 %): within TRex's rate_tolerance of
    1 %, a pacing warning; 4,100 (+2.5 %) is a rate the trial did not ask for: invalid."""
    s = _session(_after(4_000, 4_029), _after(4_029, 4_000), wall=2.0)
    r = _trial(s, rate=2000.0)
    assert r.tester_ok, r.tester_note
    assert "reverse: sent 4029 frames for 4000 intended (over, within rate_tolerance)" in r.extra["pacing_warnings"]
    s = _session(_after(4_000, 4_100), _after(4_100, 4_000), wall=2.0)
    r = _trial(s, rate=2000.0)
    assert not r.tester_ok
    assert "reverse: sent 4100 frames for 4000 intended (2.50% over)" in r.tester_note


def test_a_late_trial_warns_nothing_within_rate_tolerance() -> None:
    """A trial invalid for being late (8.8 s for 2 s) must not also say its lateness was "within rate_tolerance"."""
    s = _session(_after(10_000, 10_000), _after(10_000, 10_000), wall=8.8)
    r = _trial(s)
    assert not r.tester_ok and "fell behind" in r.tester_note
    assert not any("within rate_tolerance" in w for w in r.extra["pacing_warnings"])
