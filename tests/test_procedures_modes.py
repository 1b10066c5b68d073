"""Responder mode COMPUTE: the port-preservation check of the DUT's mappings before computed tuples are trusted."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from metric_settings import build

from natbench.errors import DutError
from natbench.metrics import ProcedureContext
from natbench.metrics.registry import run_repetition
from natbench.plugins import Mapping
from natbench.results import RepetitionResult, TrialRecord
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.traffic.plan import ResponderMode
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1000, 1199), PortRange(80, 99), 64, cores=1, name="fake")  # 4,000 connections
PUBLIC = "198.19.0.1"  # the default NAT44 address plan's DUT public address

NOT_PRESERVED = (
    "responder mode compute, but the DUT does not preserve source ports: mapping {} is not a phase-1 pair of "
    "1000-1199 x 80-99; use responder: read"
)


def good(i: int) -> Mapping:
    """The i-th phase-1 pair as a port-preserving NAT maps it: source 1000 + i // 20, destination 80 + i % 20."""
    return Mapping(PUBLIC, 1000 + i // 20, 80 + i % 20, private_port=1000 + i // 20)


class Run:
    """One validation repetition in responder mode compute against a fake DUT whose mappings the test sets."""

    def __init__(self, listing: Callable[[], list[Mapping]] | None = None, **model: object) -> None:
        self.dut = FakeDut(FakeModel(**model))  # type: ignore[arg-type]
        self.dut.setup(POINT)
        if listing is not None:
            self.dut.mappings = listing  # type: ignore[method-assign]
        self.tester = FakeTester(self.dut)
        self.plan = TrafficPlan(
            Family.NAT44,
            AddressPlan.default(Family.NAT44),
            POINT.src_ports,
            POINT.dst_ports,
            64,
            seed=3,
            responder_mode=ResponderMode.COMPUTE,
        )
        self.tester.prepare(self.plan)
        self.records: list[TrialRecord] = []

    def __call__(self) -> RepetitionResult:
        settings, _options = build("validation", {"duration": 1.0}, rate=50_000, gap=0.0)
        ctx = ProcedureContext(
            tester=self.tester,
            dut=self.dut,
            point=POINT,
            plan=self.plan,
            metric="validation",
            repetition=0,
            settings=settings,
            emit=self.records.append,
            clock=lambda: 0.0,
            sleep=lambda _s: None,
        )
        return run_repetition(ctx)


def with_bad(n: int, at: int, bad: Mapping) -> Callable[[], list[Mapping]]:
    """A listing of ``n`` good mappings with ``bad`` in place of the ``at``-th."""
    return lambda: [bad if i == at else good(i) for i in range(n)]


def test_a_port_preserving_dut_is_verified_and_every_later_trial_says_so() -> None:
    run = Run()
    res = run()
    assert res.value == 1.0
    assert [r.kind for r in run.records] == ["phase1", "validation"]
    assert run.records[-1].extra["port_preservation"] == "verified"
    assert "port_preservation" not in run.records[0].extra  # phase 1 ran before the check
    assert run.dut.events.count("mappings") == 1


def test_a_mapping_without_a_private_port_is_judged_by_its_public_port_alone() -> None:
    # the DUT did not say the original port: public port 1000 and remote port 80 are a phase-1 pair, so it passes
    run = Run(lambda: [Mapping(PUBLIC, 1000, 80, private_port=None)])
    res = run()
    assert res.value == 1.0
    assert run.records[-1].extra["port_preservation"] == "verified"


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        # the port moved though the new one is inside the source range
        (Mapping(PUBLIC, 1001, 80, private_port=1000), "1000->198.19.0.1:1001 (remote port 80)"),
        # no private port given; the public port was never a phase-1 source port
        (Mapping(PUBLIC, 1200, 80, private_port=None), "None->198.19.0.1:1200 (remote port 80)"),
        # the remote port was never a phase-1 destination port
        (Mapping(PUBLIC, 1000, 100, private_port=1000), "1000->198.19.0.1:1000 (remote port 100)"),
    ],
)
def test_a_mapping_that_is_not_a_preserved_phase1_pair_fails_the_repetition(bad: Mapping, shown: str) -> None:
    run = Run(lambda: [bad])
    res = run()
    assert res.value is None
    assert res.extra["failed"] == NOT_PRESERVED.format(shown)
    assert [r.kind for r in run.records] == ["phase1"]  # no validation trusted computed tuples


def test_the_wrong_public_address_fails_the_repetition_with_both_addresses() -> None:
    run = Run(lambda: [Mapping("198.19.0.9", 1000, 80, private_port=1000)])
    res = run()
    assert res.value is None
    assert res.extra["failed"] == (
        "responder mode compute, but the DUT used public address 198.19.0.9, not 198.19.0.1; "
        "set traffic.addresses.dut_public or use responder: read"
    )


def test_an_empty_listing_cannot_be_checked() -> None:
    run = Run(lambda: [])
    res = run()
    assert res.value is None
    assert res.extra["failed"] == (
        "responder mode compute: the DUT listed no mappings after phase 1, cannot check ports"
    )


@pytest.mark.parametrize("error", [NotImplementedError("no listing"), DutError("listing failed", step="mappings")])
def test_a_dut_that_fails_to_list_is_trusted_as_unverified(error: Exception) -> None:
    def fails() -> list[Mapping]:
        raise error

    run = Run(fails)
    res = run()
    assert res.value == 1.0
    assert run.records[-1].extra["port_preservation"] == "unverified"


def test_a_dut_without_the_mappings_capability_is_not_asked() -> None:
    # its listing would show moved ports, but the capability hook says it cannot list: trusted as configured
    run = Run(preserves_ports=False)
    run.dut.supports = lambda op: op != "mappings"  # type: ignore[method-assign]
    res = run()
    assert res.value == 1.0
    assert run.records[-1].extra["port_preservation"] == "unverified"
    assert "mappings" not in run.dut.events


def test_a_small_listing_is_checked_entry_by_entry() -> None:
    # 300 mappings, fewer than 2 x 256: every one is compared, so the moved second one is found
    run = Run(with_bad(300, 1, Mapping(PUBLIC, 1001, 81, private_port=1000)))
    res = run()
    assert res.value is None
    assert res.extra["failed"] == NOT_PRESERVED.format("1000->198.19.0.1:1001 (remote port 81)")


@pytest.mark.parametrize(
    ("at", "found"),
    [
        # 4,000 mappings: every 4000 // 256 = 15th is compared, 256 of them: indices 0, 15, ..., 255 x 15 = 3,825
        (300, True),  # 300 = 20 x 15: compared (beyond the first 256 entries)
        (3825, True),  # the last one compared
        (301, False),  # between two sampled entries
        (3840, False),  # 256 x 15: beyond the sample of 256
    ],
)
def test_a_large_listing_is_sampled_evenly_256_times(at: int, found: bool) -> None:
    run = Run(with_bad(4000, at, Mapping(PUBLIC, 1199, 80, private_port=1100)))
    res = run()
    if found:
        assert res.value is None
        assert res.extra["failed"] == NOT_PRESERVED.format("1100->198.19.0.1:1199 (remote port 80)")
    else:
        assert res.value == 1.0
        assert run.records[-1].extra["port_preservation"] == "verified"


# ---------------------------------------------------------------------------- responder mode READ needs the hook
class WithoutLoadHook:
    """A tester without the optional ``load_mappings`` hook (delegates the protocol to a FakeTester)."""

    def __init__(self, inner: FakeTester) -> None:
        self.inner = inner

    def prepare(self, traffic: TrafficPlan) -> None:
        self.inner.prepare(traffic)

    def phase1(self, rate: float, learn: bool) -> object:
        return self.inner.phase1(rate, learn)

    def phase2(self, *args: object) -> object:
        return self.inner.phase2(*args)  # type: ignore[arg-type]

    def validate(self, rate: float) -> object:
        return self.inner.validate(rate)

    def facts(self) -> dict[str, object]:
        return self.inner.facts()

    def close(self) -> None:
        self.inner.close()


def read_or_learn(mode: ResponderMode, hook: bool) -> tuple[RepetitionResult, list[TrialRecord]]:
    run = Run()
    run.plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        POINT.src_ports,
        POINT.dst_ports,
        64,
        seed=3,
        responder_mode=mode,
    )
    run.tester.prepare(run.plan)
    if not hook:
        run.tester = WithoutLoadHook(run.tester)  # type: ignore[assignment]
    return run(), run.records


def test_validation_in_read_mode_needs_a_tester_that_can_load_the_duts_tuples() -> None:
    res, records = read_or_learn(ResponderMode.READ, hook=False)
    assert res.value is None
    assert res.extra["failed"] == (
        "responder mode read: this tester has no load_mappings hook, so validation cannot use the DUT's tuples"
    )
    assert [r.kind for r in records] == ["phase1"]


@pytest.mark.parametrize(("mode", "hook"), [(ResponderMode.READ, True), (ResponderMode.LEARN, False)])
def test_validation_runs_in_read_mode_with_the_hook_and_in_learn_mode_without_it(
    mode: ResponderMode, hook: bool
) -> None:
    res, records = read_or_learn(mode, hook)
    assert res.value == 1.0
    assert [(r.kind, r.extra["responder_mode"]) for r in records] == [("phase1", str(mode)), ("validation", str(mode))]
    assert records[-1].counts["reverse"]["valid"] == 4000  # one reverse frame per connection arrived
