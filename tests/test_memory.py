"""DUT memory per connection measured in every fill (issue 17 item 10): the fill trials' stored fields, a DUT
without the hook, a failing snapshot, the DUT group's sum (fakes, no sockets)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest
from metric_settings import build

from natbench.duts.group import DutGroup
from natbench.duts.monitor import read_memory, sample_command
from natbench.duts.recipes import load_recipe
from natbench.errors import DutError
from natbench.metrics import ProcedureContext
from natbench.metrics.memory import EMPTY_READINGS, READING_GAP, FillMemory, fill_figures, memory_used
from natbench.metrics.registry import run_repetition
from natbench.plugins import CommandResult, MeasuresMemory, SlabCache
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult, RepetitionResult, TrialRecord, Verdict
from natbench.testing import FakeDut, FakeModel, FakeTester, MemoryFakeDut
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 200 x 20 = 4,000 conn.
N = 4000


def run(
    dut: FakeDut, metric: str, *, tester: FakeTester | None = None, **settings: Any
) -> tuple[RepetitionResult, list[TrialRecord]]:
    tester = tester or FakeTester(dut)
    plan = TrafficPlan(Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=3)
    tester.prepare(plan)
    records: list[TrialRecord] = []
    defaults = {"gap": 0.5, "duration": 1.0}
    resolved, options = build(metric, defaults, **settings)
    ctx = ProcedureContext(
        tester=tester,
        dut=dut,
        point=POINT,
        plan=plan,
        metric=metric,
        repetition=0,
        settings=resolved,
        emit=records.append,
        clock=lambda: 0.0,
        sleep=lambda s: None,
        prior={},
        earlier=(),
        options=options,
    )
    return run_repetition(ctx), records


def fills(records: list[TrialRecord]) -> list[TrialRecord]:
    return [r for r in records if r.kind == "fill"]


@pytest.mark.parametrize(
    ("metric", "settings"),
    [
        ("throughput", {"upper": 100_000, "error": 10_000, "fill_rate": 50_000}),
        ("teardown", {"fill_rate": 50_000}),
    ],
)
def test_every_fill_stores_the_memory_its_connections_took(metric: str, settings: dict[str, Any]) -> None:
    dut = MemoryFakeDut(FakeModel(), bytes_per_connection=300, slab_per_connection=256)
    _, records = run(dut, metric, **settings)
    filled = fills(records)
    assert filled and all(r.verdict is Verdict.PASS for r in filled)
    for r in filled:
        mem = r.extra["memory"]
        assert mem["connections"] == N == sum(int(c["valid"]) for c in r.counts.values())
        # MemAvailable falls 300 B per connection: 4,000 x 300 = 1,200,000 B (1.2 MB) in all
        assert mem["used"]["mem_available"] == 1_200_000
        assert mem["per_connection"]["mem_available"] == 300.0
        # the nf_conntrack slab grows 256 B per connection: 4,000 x 256 = 1,024,000 B
        assert mem["used"]["conntrack_slab"] == 1_024_000
        assert mem["per_connection"]["conntrack_slab"] == 256.0
        # the snapshots: empty table (12 GiB available, 9 slab pages) and filled (1.2 MB less, 1,024,000 B more)
        assert mem["before"] == {"mem_total": 16 * 2**30, "mem_available": 12 * 2**30, "conntrack_slab": 36_864}
        assert mem["after"]["mem_available"] == 12 * 2**30 - 1_200_000
        assert mem["after"]["conntrack_slab"] == 36_864 + 1_024_000
        assert "mem_total" not in mem["used"]  # a capacity, not a use
        # the emptied table read 3 times: its MemAvailable did not move, a spread of 0
        assert mem["readings"] == EMPTY_READINGS == 3 and mem["noise"] == {"mem_available": 0}
    # four DUT round trips per fill (three readings of the emptied table, one of the filled), none for other trials
    assert dut.snapshots == (EMPTY_READINGS + 1) * len(filled)
    assert all("memory" not in r.extra for r in records if r.kind != "fill")


@pytest.mark.parametrize(
    ("metric", "settings"),
    [
        ("throughput", {"upper": 100_000, "error": 10_000, "fill_rate": 50_000}),
        ("teardown", {"fill_rate": 50_000}),
    ],
)
def test_memory_per_connection_divides_by_the_connections_the_dut_holds_not_the_frames_counted(
    metric: str, settings: dict[str, Any]
) -> None:
    """The tester's own receive side missed 400 of each fill's 4,000 frames (it counts 3,600 valid), but the DUT
    holds all 4,000 connections: the slab grows 4,000 x 256 B and the figure is 4,000 x 256 / 4,000 = 256 B per
    connection, where dividing by the 3,600 frames the tester counted would say 284.4 B."""
    dut = MemoryFakeDut(FakeModel(), bytes_per_connection=300, slab_per_connection=256)
    tester = FakeTester(dut)

    def misses(rate: float, learn: bool, _orig: Any = tester.phase1) -> PhaseResult:
        res: PhaseResult = _orig(rate, learn)
        c = res.counts[Direction.FORWARD]
        counts = {Direction.FORWARD: DirectionCounts(c.sent, c.received - 400, c.valid - 400)}
        return dataclasses.replace(res, counts=counts, deviations={Direction.FORWARD: Deviation(missed=400)})

    tester.phase1 = misses  # type: ignore[method-assign]
    _, records = run(dut, metric, tester=tester, **settings)
    filled = [r for r in fills(records) if r.verdict is Verdict.PASS]
    assert filled
    for r in filled:
        assert sum(int(c["valid"]) for c in r.counts.values()) == 3600
        mem = r.extra["memory"]
        assert mem["connections"] == N
        assert mem["used"]["conntrack_slab"] == N * 256
        assert mem["per_connection"]["conntrack_slab"] == 256.0
        assert mem["per_connection"]["mem_available"] == 300.0


def test_a_dut_without_the_hook_stores_nothing_and_measures_the_same() -> None:
    plain, with_hook = FakeDut(FakeModel()), MemoryFakeDut(FakeModel())
    assert not isinstance(plain, MeasuresMemory) and isinstance(with_hook, MeasuresMemory)
    res_plain, rec_plain = run(plain, "teardown", fill_rate=50_000)
    res_mem, _ = run(with_hook, "teardown", fill_rate=50_000)
    assert all("memory" not in r.extra and "memory_error" not in r.extra for r in rec_plain)
    assert res_plain.value == res_mem.value


@pytest.mark.parametrize(
    ("fail_from", "where"), [(0, "before the fill"), (2, "before the fill"), (EMPTY_READINGS, "after the fill")]
)
def test_a_failing_snapshot_is_noted_and_the_fill_goes_on(fail_from: int, where: str) -> None:
    dut = MemoryFakeDut(FakeModel(), fail_snapshot=fail_from)
    res, records = run(dut, "teardown", fill_rate=50_000)
    (fill,) = fills(records)
    assert fill.verdict is Verdict.PASS and res.value is not None
    assert "memory" not in fill.extra
    assert fill.extra["memory_error"].startswith(where) and "permission denied" in fill.extra["memory_error"]
    assert res.extra["connections"] == N


def test_the_readings_of_the_emptied_table_are_spaced_and_their_spread_is_the_noise() -> None:
    """A busy machine: MemAvailable jitters by +2 MB, -1 MB, 0 from one reading to the next. The fill is measured from
    the last reading of the emptied table, and the spread of the three (3 MB) is stored as the noise; the 4,000
    connections' 1.2 MB fall is within 10 x that noise, so the fill gives no memory figure (no slab to fall back
    on), where a quiet DUT gives 300 B per connection."""
    noisy = MemoryFakeDut(
        FakeModel(), bytes_per_connection=300, slab_per_connection=None, mem_noise=(2_000_000, -1_000_000, 0, 0)
    )
    waits: list[float] = []
    memory, extra = FillMemory(noisy, waits.append), {}
    memory.emptied()
    assert waits == [READING_GAP] * (EMPTY_READINGS - 1)
    noisy.connections = N
    memory.filled(_phase1(N), extra)
    rec = extra["memory"]
    assert rec["noise"] == {"mem_available": 3_000_000}
    assert rec["before"]["mem_available"] == 12 * 2**30  # the last reading (its jitter 0)
    assert rec["used"]["mem_available"] == 1_200_000
    figures = fill_figures(rec)
    assert figures is not None and figures.per_connection is None and figures.mem_available is None
    quiet = MemoryFakeDut(FakeModel(), bytes_per_connection=300, slab_per_connection=None)
    memory, extra = FillMemory(quiet), {}
    memory.emptied()
    quiet.connections = N
    memory.filled(_phase1(N), extra)
    figures = fill_figures(extra["memory"])
    assert figures is not None and (figures.per_connection, figures.source) == (300.0, "mem_available")


def test_memory_used_per_key_direction() -> None:
    # MemAvailable falls, slabs grow, MemTotal is a capacity; a key missing after the fill gets no use
    before = {"mem_available": 10_000, "mem_total": 50_000, "conntrack_slab": 1_000, "jool_session_slab": 500}
    after = {"mem_available": 7_000, "mem_total": 50_000, "conntrack_slab": 2_000}
    rec = memory_used(before, after, 10)
    assert rec["used"] == {"mem_available": 3_000, "conntrack_slab": 1_000}
    assert rec["per_connection"] == {"mem_available": 300.0, "conntrack_slab": 100.0}
    with pytest.raises(ValueError, match=r"^connections must be positive$"):
        memory_used(before, after, 0)


def test_memory_used_of_a_single_connection_is_its_whole_use() -> None:
    # N = 1 is a valid fill (the smallest positive count): MemAvailable 10,000 -> 9,800 is 200 bytes, all of it
    # the one connection's
    rec = memory_used({"mem_available": 10_000}, {"mem_available": 9_800}, 1)
    assert (rec["connections"], rec["used"], rec["per_connection"]) == (
        1,
        {"mem_available": 200},
        {"mem_available": 200.0},
    )


def _phase1(valid: int) -> PhaseResult:
    """A phase 1 whose ``valid`` frames all arrived (each made one connection)."""
    return PhaseResult(1000.0, 1000.0, 1.0, {Direction.FORWARD: DirectionCounts(valid, valid, valid)})


def test_a_fill_read_without_a_snapshot_of_the_emptied_table_stores_why_not_memory() -> None:
    extra: dict[str, Any] = {}
    FillMemory(MemoryFakeDut(FakeModel())).filled(_phase1(10), extra)  # emptied() never ran
    assert extra == {"memory_error": "no snapshot of the emptied table"}


def test_a_fill_without_a_valid_frame_stores_why_not_memory() -> None:
    memory, extra = FillMemory(MemoryFakeDut(FakeModel())), {}
    memory.emptied()
    memory.filled(_phase1(0), extra)
    assert extra == {"memory_error": "no connection was created: no connection to divide by"}


def test_a_fill_of_one_connection_stores_that_connections_memory() -> None:
    # the fake: MemAvailable falls by 300 bytes and the conntrack slab grows by 256 bytes per connection
    dut = MemoryFakeDut(FakeModel(), bytes_per_connection=300, slab_per_connection=256)
    memory, extra = FillMemory(dut), {}
    memory.emptied()
    dut.connections = 1
    memory.filled(_phase1(1), extra)
    assert (extra["memory"]["connections"], extra["memory"]["used"]) == (
        1,
        {"mem_available": 300, "conntrack_slab": 256},
    )


@pytest.mark.parametrize("readings", [1, 0])
def test_a_single_reading_of_the_emptied_table_waits_for_nothing_and_knows_no_noise(readings: int) -> None:
    # readings 0 still takes the one snapshot the fill is measured from; one reading has no spread
    dut = MemoryFakeDut(FakeModel(), bytes_per_connection=300, slab_per_connection=256)
    waits: list[float] = []
    memory, extra = FillMemory(dut, waits.append, readings=readings), {}
    memory.emptied()
    assert (waits, dut.snapshots) == ([], 1)
    dut.connections = N
    memory.filled(_phase1(N), extra)
    assert "noise" not in extra["memory"]
    assert extra["memory"]["used"] == {"mem_available": 300 * N, "conntrack_slab": 256 * N}


def test_two_readings_of_the_emptied_table_are_enough_for_a_spread() -> None:
    # MemAvailable +2 MB at the first reading, -1 MB at the second: one wait between them, a 3 MB spread
    dut = MemoryFakeDut(FakeModel(), slab_per_connection=256, mem_noise=(2_000_000, -1_000_000, 0))
    waits: list[float] = []
    memory, extra = FillMemory(dut, waits.append, readings=2), {}
    memory.emptied()
    assert (waits, dut.snapshots) == ([READING_GAP], 2)
    dut.connections = N
    memory.filled(_phase1(N), extra)
    assert extra["memory"]["noise"] == {"mem_available": 3_000_000}


def test_a_reading_of_the_emptied_table_that_fails_forgets_the_last_fills_snapshot() -> None:
    # one FillMemory for two fills: the first is read whole (3 readings, 1 after); the second's readings of the
    # emptied table fail, so its record has nothing to compare, not the first fill's snapshot
    dut = MemoryFakeDut(FakeModel(), slab_per_connection=256, fail_snapshot=EMPTY_READINGS + 1)
    memory, first = FillMemory(dut), {}
    memory.emptied()
    dut.connections = N
    memory.filled(_phase1(N), first)
    assert first["memory"]["used"]["conntrack_slab"] == 256 * N
    second: dict[str, Any] = {}
    memory.emptied()
    memory.record(second, N)
    assert second == {}


def test_a_fill_recorded_without_a_snapshot_after_its_traffic_stores_nothing() -> None:
    # a fill judged by what the DUT holds calls snapshot_filled, then record: without the snapshot there is no
    # "after" to compare with, and nothing is stored (no record with an empty snapshot)
    dut = MemoryFakeDut(FakeModel(), bytes_per_connection=300, slab_per_connection=256)
    memory, extra = FillMemory(dut), {}
    memory.emptied()
    dut.connections = N
    memory.record(extra, N)
    assert extra == {}


class _Member:
    def __init__(self, name: str, snap: dict[str, int] | None) -> None:
        self.name = name
        self.recipe = SimpleNamespace(stateful=True)
        self.snap = snap

    def memory_snapshot(self) -> dict[str, int]:
        if self.snap is None:
            raise DutError("cannot read memory")
        return dict(self.snap)


def test_a_dut_group_sums_its_members_memory() -> None:
    ce = _Member("ce", {"mem_available": 1_000, "mem_total": 4_000, "conntrack_slab": 300})
    br = _Member("br", {"mem_available": 2_000, "mem_total": 8_000})  # stateless: no conntrack slab
    group = DutGroup([ce, br])  # type: ignore[list-item]
    assert isinstance(group, MeasuresMemory)
    assert group.memory_snapshot() == {"mem_available": 3_000, "mem_total": 12_000, "conntrack_slab": 300}
    with pytest.raises(DutError):
        DutGroup([ce, _Member("br", None)]).memory_snapshot()  # type: ignore[list-item]


class _Shell:
    """An executor answering the memory command with fixed /proc output (a Jool 4.1 DUT with slab_nomerge)."""

    def __init__(self, stdout: str, returncode: int = 0) -> None:
        self.stdout, self.returncode = stdout, returncode

    def run(self, command: str, **_: Any) -> CommandResult:
        return CommandResult(command, self.returncode, self.stdout, "" if self.returncode == 0 else "denied", 0.01)


SEP = "@@natbench@@"
JOOL_OUTPUT = f"""12.5 20.0
{SEP}
cpu  10 0 10 100 0 0 0 0 0 0
cpu0 10 0 10 100 0 0 0 0 0 0
{SEP}
MemTotal:        1530000 kB
MemAvailable:    1200000 kB
Slab:              40000 kB
{SEP}
session_nodes       2000   2048    120   34    1 : tunables    0    0    0 : slabdata     60     60      0
bib_nodes           1000   1020     80   51    1 : tunables    0    0    0 : slabdata     20     20      0
"""


def test_read_memory_reads_meminfo_and_the_slabs_the_recipe_declares() -> None:
    slabs = load_recipe("jool-nat64").declarations().slabs  # Jool 4.x: session_nodes and bib_nodes
    mem = read_memory(_Shell(JOOL_OUTPUT), slabs)  # type: ignore[arg-type]
    assert mem == {
        "mem_available": 1_200_000 * 1024,  # kB -> bytes: 1,228,800,000
        "mem_total": 1_530_000 * 1024,
        "jool_session_slab": 2048 * 120,  # allocated objects x object size: 245,760
        "jool_bib_slab": 1020 * 80,  # 81,600
    }  # no nf_conntrack line: no conntrack_slab key
    with pytest.raises(DutError, match="cannot read memory"):
        read_memory(_Shell("", returncode=1), slabs)  # type: ignore[arg-type]
    # a DUT kind that declares no slab: MemAvailable and MemTotal only, whatever /proc/slabinfo holds
    assert set(read_memory(_Shell(JOOL_OUTPUT))) == {"mem_available", "mem_total"}  # type: ignore[arg-type]


def test_the_sample_command_greps_exactly_the_declared_caches_quoted() -> None:
    odd = SlabCache("odd_slab", "a;b", "odd")  # a recipe's name is checked, but the command quotes it anyway
    command = sample_command([SlabCache("conntrack_slab", "nf_conntrack", "ct"), odd])
    assert "grep -e '^nf_conntrack ' -e '^a;b ' /proc/slabinfo" in command
    assert "slabinfo" not in sample_command()
