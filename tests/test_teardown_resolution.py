"""Tear-down knows its resolution before it runs: which N a DUT's delete-all can time (issue 34 item 3).

The pure rule (natbench.metrics.teardown_resolution), the campaign check ``natbench validate`` and ``plan`` warn
with (natbench.campaign.teardown_check), and the figures ``plan --from RUN`` takes from a run directory
(natbench.report.deletion).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import natbench
from natbench.campaign import load_campaign
from natbench.campaign.teardown_check import KNOWN_DELETION, TeardownCheck, profile_for, teardown_check
from natbench.metrics.teardown_resolution import RESOLUTION, DeletionProfile, advised_connections, resolution
from natbench.report.deletion import measured_deletion
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "campaigns" / "quickstart.yaml"

# powers of two: every expected deletion time and M below is exact in floating point
EXACT = DeletionProfile(rate=2**17, noise=2**-7, source="test")  # 131,072 conn/s; 7.8125 ms; M = 4,096


def test_the_seeds_own_tear_down_is_timed_well_by_their_figures() -> None:
    """Seed 000 Figure 5's first column: 1.56M iptables connections deleted in 3.78 s at 413,360 conn/s, far out of
    the empty table's 0.02 s spread; the same profile says so."""
    r = resolution(2500 * 625, KNOWN_DELETION["iptables-nat44"])
    assert r.deletion_time == pytest.approx(3.78, abs=0.005)
    assert not r.too_few and not r.coarse and r.warning() is None
    assert r.advised == 33_069  # ceil(4 x 0.02 s x 413,360 /s)


def test_the_issues_flake_is_likely_too_few_to_time() -> None:
    """4,000 conntrack entries: about 9.7 ms at the seeds' fastest rate, within the 20 ms the empty-table delete
    varies by: a warning naming the M a failed repetition would advise (same rule, same constant)."""
    r = resolution(4000, KNOWN_DELETION["iptables-nat44"])
    assert r.too_few and r.coarse
    assert r.warning() == (
        "tear-down likely too few connections to time: deleting 4,000 connections takes about 9.68 ms, within the "
        "empty-table delete's noise of about 20 ms; use at least 33,069"
    )
    assert r.advised == advised_connections(0.02, 413_360) == 33_069


@pytest.mark.parametrize(
    ("n", "too_few", "coarse"),
    [
        (1, True, True),
        (1024, True, True),  # 7.8125 ms: exactly the noise, within it
        (1025, False, True),  # just out of the noise: timed, coarsely
        (4095, False, True),
        (4096, False, False),  # RESOLUTION x the noise
        (10**6, False, False),
    ],
)
def test_the_boundaries_are_the_procedures(n: int, too_few: bool, coarse: bool) -> None:
    """A repetition fails when T_N - T_0 <= the spread: the plan's "too few" is deletion time <= noise; M is
    RESOLUTION x noise x rate."""
    r = resolution(n, EXACT)
    assert r.deletion_time == n / 2**17
    assert (r.too_few, r.coarse) == (too_few, coarse)
    assert r.advised == RESOLUTION * 2**-7 * 2**17 == 4096
    assert (r.warning() is None) == (not coarse)
    if coarse and not too_few:
        assert r.warning() == (
            f"tear-down timed coarsely: deleting {n:,} connections takes about {n / 2**17 * 1e3:.3g} ms, less than "
            "4 x the empty-table delete's noise of about 7.81 ms; at least 4,096 connections time it well"
        )


def test_a_profile_without_a_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="positive rate"):
        resolution(1000, DeletionProfile(rate=0, noise=0.01, source="x"))
    with pytest.raises(ValueError, match="noise >= 0"):
        resolution(1000, DeletionProfile(rate=1000, noise=-0.001, source="x"))
    # a profile whose empty-table deletes did not vary at all (noise 0) is one, and a tiny rate too
    assert resolution(1000, DeletionProfile(rate=2**17, noise=0.0, source="x")).too_few is False
    assert resolution(1, DeletionProfile(rate=2**-10, noise=0.0, source="x")).deletion_time == 2**10


@pytest.mark.parametrize(("n", "said"), [(999, "999 ms"), (1000, "1 s")])
def test_the_warning_says_seconds_from_one_second(n: int, said: str) -> None:
    r = resolution(n, DeletionProfile(rate=1000, noise=0.5, source="x"))  # M = 4 x 0.5 s x 1,000/s = 2,000
    assert r.warning() == (
        f"tear-down timed coarsely: deleting {n:,} connections takes about {said}, less than 4 x the empty-table "
        "delete's noise of about 500 ms; at least 2,000 connections time it well"
    )


def test_recipes_by_name_or_path() -> None:
    assert profile_for("iptables-nat44") is KNOWN_DELETION["iptables-nat44"]
    assert profile_for("dut_recipes/openbsd-pf-nat64.yaml") is KNOWN_DELETION["openbsd-pf-nat64"]
    assert profile_for("jool-siit") is None  # stateless: no connection table
    assert profile_for("my-own-nat.yaml") is None


def narrowed(tmp_path: Path, src_ports: list[int], dst_ports: list[int], recipe: str = "iptables-nat44") -> Path:
    """campaigns/quickstart.yaml with another sweep and only its tear-down."""
    text = QUICKSTART.read_text()
    head, _, _ = text.partition("sweep:\n")
    head = head.replace("recipe: iptables-nat44", f"recipe: {recipe}")
    body = (
        f"sweep:\n  zip:\n    src_ports: {src_ports}\n    dst_ports: {dst_ports}\n\n"
        "metrics:\n  teardown:\n    repetitions: 3\n    fill_rate: 20k\n    timeout: 0.5\n    gap: 0.5\n"
    )
    path = tmp_path / "teardown-1k.yaml"
    path.write_text(head + body)
    return path


def test_the_quickstarts_points_against_the_seeds_figures() -> None:
    check = teardown_check(load_campaign(QUICKSTART))
    labels = [p.label for p in load_campaign(QUICKSTART).points()]
    warned = [w.split(":")[0] for w in check.warnings]
    # 4k (9.7 ms) is within the 20 ms noise, 16k (39 ms) out of it but below 4 x, 64k (155 ms) well out
    expected = {
        "iptables-4k": "warning",
        "iptables-16k": "note",
        "iptables-64k": None,
        "iptables-32k": "note",
        "iptables-8k": "warning",
    }
    for i, label in enumerate(labels):
        where = f"point {i} ({label})"
        kind = expected[label]
        assert (where in warned) == (kind == "warning"), where
        assert any(n.startswith(where) for n in check.notes) == (kind == "note"), where
    assert check.notes[0].startswith("tear-down resolution: 413,360 connections/s deleted, empty-table delete noise")


def test_a_campaign_at_1000_connections_is_warned_about(tmp_path: Path) -> None:
    c = load_campaign(narrowed(tmp_path, [100], [10]))
    check = teardown_check(c)
    assert check.warnings == (
        "point 0 (iptables-1k): tear-down likely too few connections to time: deleting 1,000 connections takes "
        "about 2.42 ms, within the empty-table delete's noise of about 20 ms; use at least 33,069",
    )


def test_a_campaign_without_tear_down_is_not_checked() -> None:
    c = load_campaign(ROOT / "campaigns" / "seed000-fig2-iptables-cores.yaml")
    assert "teardown" not in c.metrics
    assert teardown_check(c) == TeardownCheck()


def test_an_unknown_recipe_is_named_and_a_measured_profile_replaces_the_seeds(tmp_path: Path) -> None:
    c = load_campaign(narrowed(tmp_path, [100], [10]))
    measured = DeletionProfile(rate=50_000, noise=0.004, source="run r")  # 1,000 in 20 ms, noise 4 ms: timed
    check = teardown_check(c, measured)
    assert check.warnings == ()
    assert check.notes == (
        "tear-down resolution: 50,000 connections/s deleted, empty-table delete noise 0.004 s (run r): at least "
        "800 connections time it well",
    )


def test_duts_flushed_in_turn_add_their_times_and_noises(tmp_path: Path) -> None:
    """A DUT group flushes its stateful members one after another (DutGroup.timed_flush sums them): two conntrack
    DUTs take twice as long, with twice the noise, so M stays and the expected time doubles."""
    text = QUICKSTART.read_text().replace("output: results/quickstart", "")
    dut = text[text.index("    - name: iptables") : text.index("\ntraffic:")]
    two = text.replace(dut, dut.replace("role: nat44", "role: ce-nat44") + "\n" + dut.replace("iptables", "second", 1)
                       .replace("role: nat44", "role: br"))  # fmt: skip
    path = tmp_path / "two.yaml"
    path.write_text(two)
    c = load_campaign(path)
    check = teardown_check(c)
    assert check.notes[0].startswith(
        "tear-down resolution: 206,680 connections/s deleted, empty-table delete noise 0.04 s (DUT iptables: seed 000"
    )
    assert "DUT second: seed 000 Figure 5" in check.notes[0]
    assert check.notes[0].endswith("at least 33,069 connections time it well")


def teardown_trials(point_id: str, rep: int, n: int, t_n: float, empties: list[float]) -> list:
    out = [trial_record(point_id, "teardown", rep, 0, kind="fill", rate=20_000.0)]
    out.append(trial_record(point_id, "teardown", rep, 1, kind="flush_filled", value=t_n, extra={"connections": n}))
    out += [trial_record(point_id, "teardown", rep, 2 + i, kind="flush_empty", value=v) for i, v in enumerate(empties)]
    return out


def test_a_runs_deletion_figures(tmp_path: Path) -> None:
    """Rate: the median of N / (T_N - median T_0) at the largest N, failed repetitions too; noise: the median spread
    of the empty-table times."""
    small, big = make_point(0, (1, 100), (1, 10)), make_point(1, (1, 1600), (1, 40))
    records = [
        # 1,000: 3 ms over 10 ms, within the 4 ms spread: the repetition failed, its rate is left to the bigger N
        *teardown_trials(small.id, 0, 1000, 0.013, [0.008, 0.010, 0.012]),
        result_record(small.id, "teardown", 0, None, "conn/s", extra={"failed": "too few connections to time"}),
        # 64,000 in 0.128 s, 0.256 s and 0.064 s over 10 ms empty tables with 2, 6 and 1 ms spreads
        *teardown_trials(big.id, 0, 64000, 0.138, [0.009, 0.010, 0.011]),
        *teardown_trials(big.id, 1, 64000, 0.266, [0.007, 0.010, 0.013]),
        *teardown_trials(big.id, 2, 64000, 0.074, [0.0095, 0.010, 0.0105]),
    ]
    run = natbench.load(write_run_dir(tmp_path / "run", [small, big], records, campaign_name="seen"))
    profile, where = measured_deletion(run)
    assert profile is not None
    assert profile.rate == pytest.approx(64000 / 0.128)  # the median of 500k, 250k, 1M
    assert profile.noise == pytest.approx(0.003)  # the median of 4, 2, 6 and 1 ms
    assert where == profile.source
    assert "median of 3 tear-down(s) of 64,000 connections, median empty-table spread of 4 repetition(s)" in where


def test_a_run_without_timed_deletes_gives_no_figures(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10))
    run = natbench.load(write_run_dir(tmp_path / "run", [p], [result_record(p.id, "cps", 0, 1000.0, "cps")]))
    profile, why = measured_deletion(run)
    assert profile is None and why == f"run {tmp_path / 'run'} timed no tear-down"
    # a tear-down whose every deletion time was 0 or less: no rate to take
    records = [*teardown_trials(p.id, 0, 1000, 0.009, [0.008, 0.010, 0.012])]
    run = natbench.load(write_run_dir(tmp_path / "zero", [p], records))
    profile, why = measured_deletion(run)
    assert profile is None and why.endswith("stored no tear-down with a positive deletion time")


def test_validate_warns_before_a_1000_connection_tear_down(tmp_path: Path) -> None:
    path = narrowed(tmp_path, [100], [10])
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "validate", str(path)], capture_output=True, text=True, cwd=ROOT
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"OK {path}: 1 working points")
    assert r.stderr == (
        f"natbench: warning: {path}: point 0 (iptables-1k): tear-down likely too few connections to time: deleting "
        "1,000 connections takes about 2.42 ms, within the empty-table delete's noise of about 20 ms; use at least "
        "33,069\n"
    )


def test_plan_warns_before_a_1000_connection_tear_down_and_takes_a_runs_figures(tmp_path: Path) -> None:
    """``natbench plan`` warns as validate does (the seeds' figures); ``plan --from RUN`` judges the same point by
    what RUN measured: 1,000 connections deleted at 500,000/s take 2 ms, within RUN's 4 ms noise (the median of
    its empty-table spreads, 4, 6 and 1 ms), and at least 8,000 connections time it well (4 x 0.004 s x 500,000/s)."""
    path = narrowed(tmp_path, [100], [10])
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "plan", "--format", "plain", str(path)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr == (
        f"natbench: warning: {path}: point 0 (iptables-1k): tear-down likely too few connections to time: deleting "
        "1,000 connections takes about 2.42 ms, within the empty-table delete's noise of about 20 ms; use at least "
        "33,069\n"
    )
    assert "(tear-down resolution: 413,360 connections/s deleted" in r.stdout

    big = make_point(0, (1, 1600), (1, 40))
    records = [
        *teardown_trials(big.id, 0, 64000, 0.138, [0.008, 0.010, 0.012]),
        *teardown_trials(big.id, 1, 64000, 0.266, [0.007, 0.010, 0.013]),
        *teardown_trials(big.id, 2, 64000, 0.074, [0.0095, 0.010, 0.0105]),
    ]
    run = write_run_dir(tmp_path / "run", [big], records, campaign_name="seen")
    r = subprocess.run(
        [sys.executable, "-m", "natbench", "plan", "--format", "json", str(path), "--from", str(run)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    warning = r.stderr.strip().split(": tear-down ", 1)[1]
    assert warning == (
        "likely too few connections to time: deleting 1,000 connections takes about 2 ms, within the empty-table "
        "delete's noise of about 4 ms; use at least 8,000"
    )
    import json

    teardown = json.loads(r.stdout)["teardown"]
    assert [w.split(": tear-down ", 1)[1] for w in teardown["warnings"]] == [warning]
    note = teardown["notes"][0]
    assert "run seen" in note and "median of 3 tear-down(s) of 64,000 connections" in note
