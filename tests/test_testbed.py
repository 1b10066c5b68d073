"""natbench.testbed without root: the registries, plugins, and how build_testbed wires a lab in and owns it.

The lab here is a stand-in (the real one is built in tests/test_lab.py, marker ``lab``): what is
checked is what the testbed hands to whom, and what it takes down again.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from natbench.campaign import Campaign, load_campaign
from natbench.campaign.schema import TesterSpec
from natbench.duts.executors import LocalExecutor, NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.errors import ConfigError, NatbenchError
from natbench.plugins import (
    TESTERS,
    DutPlacement,
    LabPorts,
    LabRequest,
    Locate,
    Port,
    TesterContext,
    TesterSettings,
)
from natbench.plugins import registry as registry_module
from natbench.testbed import build_testbed
from natbench.testing import FakeDut, FakeModel, FakeTester

QUICKSTART = Path(__file__).resolve().parent.parent / "campaigns" / "quickstart.yaml"


class FakeSettings(TesterSettings):
    """The settings of the plugin tester kind ``fake``."""

    bad: bool = False
    """Stands for a setting only the backend can check on this machine (its ``check()`` refuses it)."""


@dataclass
class FakeBackend:
    """A tester kind of a plugin: a FakeTester, and (like the software tester) a wish for the lab."""

    settings: type[FakeSettings] = FakeSettings
    lab: LabRequest | None = field(default_factory=LabRequest)
    needs_root: bool = False
    contexts: list[TesterContext] = field(default_factory=list)
    fail: bool = False

    def check(self, settings: FakeSettings, locate: Locate | None) -> None:
        if settings.bad and locate is not None:
            raise locate(("testbed", "tester", "settings", "bad"), "bad setting")

    def lab_request(self, settings: FakeSettings) -> LabRequest | None:
        return self.lab

    def create(self, settings: FakeSettings, context: TesterContext) -> FakeTester:
        self.contexts.append(context)
        if self.fail:
            raise ConfigError("the tester cannot be built")
        return FakeTester(FakeDut(FakeModel()))

    def problems(self, settings: FakeSettings | None) -> list[str]:
        return []

    def endpoints(self, settings: FakeSettings) -> list[tuple[str, str, int]]:
        return []


PLUGIN = FakeBackend(lab=None)
"""What an entry point of a third-party package names."""


class FakeLab:
    """Stands in for NetnsLab in build_testbed: records what it is asked, builds nothing."""

    made: list[FakeLab] = []  # noqa: RUF012 - the instances of one test
    up_before = False

    def __init__(self, name: str, *, family: Any, addresses: Any, tester_cpus: Any) -> None:
        self.name = name
        self.tester_cpus = tester_cpus
        self.released = 0
        FakeLab.made.append(self)

    def is_up(self) -> bool:
        return FakeLab.up_before

    def up(self) -> dict[str, Any]:
        return {"up": True}

    def tester_ports(self) -> LabPorts:
        return LabPorts(Port("nb-init", "02:00:00:00:00:01", "02:00:00:00:00:11", "nb-x-tester"),
                        Port("nb-resp", "02:00:00:00:00:02", "02:00:00:00:00:12", "nb-x-tester"),
                        (1,), lambda: None)  # fmt: skip

    def dut_params(self, dut: str) -> dict[str, Any]:
        return {"private_if": "nb-priv", "public_if": "nb-pub", "private_address": "198.18.0.1/24",
                "public_address": "198.19.0.1/24", "not_a_recipe_param": 1}  # fmt: skip

    def place_dut(self, dut: str) -> DutPlacement:
        return DutPlacement(NetnsExecutor("nb-x-dut"), host_settings=True, cpu_order=(0, 1), own_cpus=(0,))

    def facts(self) -> dict[str, Any]:
        return {}

    def release(self) -> None:
        self.released += 1


@pytest.fixture
def fake_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeBackend]:
    backend = FakeBackend()
    TESTERS.register("fake", backend)
    FakeLab.made, FakeLab.up_before = [], False
    monkeypatch.setattr("natbench.testbed.build.NetnsLab", FakeLab)
    yield backend
    TESTERS.unregister("fake")


def _campaign(tmp_path: Path, kind: str = "fake", recipe: str | None = None, **settings: Any) -> Campaign:
    data = yaml.safe_load(QUICKSTART.read_text())
    data["testbed"]["tester"] = {"kind": kind, "settings": settings}
    if recipe is not None:
        data["testbed"]["duts"][0]["recipe"] = recipe
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load_campaign(path)


def test_a_plugin_tester_kind_is_accepted_by_the_schema_and_built(fake_kind: FakeBackend, tmp_path: Path) -> None:
    campaign = _campaign(tmp_path)
    assert campaign.testbed.tester.kind == "fake"
    with build_testbed(campaign) as bed:
        assert isinstance(bed.tester, FakeTester)
    assert bed.tester.closed


def test_a_plugin_found_through_its_entry_point(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = EntryPoint(name="epfake", value=f"{__name__}:PLUGIN", group="natbench.testers")

    def installed(group: str) -> list[EntryPoint]:
        return [ep] if group == "natbench.testers" else []

    monkeypatch.setattr(registry_module, "entry_points", installed)
    try:
        assert "epfake" in TESTERS.names() and "epfake" in TESTERS
        assert TESTERS.get("epfake") is PLUGIN
        spec = TesterSpec.model_validate({"kind": "epfake", "settings": {"bad": True}})  # the schema knows it too
        assert isinstance(spec.settings, FakeSettings) and spec.settings.bad
        with pytest.raises(ValidationError, match="unknown tester kind 'nope'; known: epfake, software, trex"):
            TesterSpec.model_validate({"kind": "nope"})
    finally:
        TESTERS.unregister("epfake")


def test_the_lab_is_handed_to_the_tester_and_the_duts_and_the_campaign_stays(
    fake_kind: FakeBackend, tmp_path: Path
) -> None:
    campaign = _campaign(tmp_path)
    with build_testbed(campaign) as bed:
        (lab,) = FakeLab.made
        assert bed.lab is lab and bed.lab_created and not bed.keep_lab
        assert lab.name.startswith("quickstart-")
        (context,) = fake_kind.contexts
        assert context.lab is not None and context.lab.initiator.interface == "nb-init"
        assert context.receive_timeout == max(m.timeout for m in campaign.metrics.values())
        dut = bed.dut
        assert isinstance(dut, RecipeDut) and isinstance(dut.executor, NetnsExecutor)
        assert dut.executor.namespace == "nb-x-dut" and dut.cpu_order == [0, 1] and dut.own_cpus == [0]
        # the lab's parameters the recipe declares, where the campaign left them unset
        assert dut.base_params["private_if"] == "nb-priv" and "not_a_recipe_param" not in dut.base_params
        assert dut.base_params["host_settings"] is True  # the lab shares this kernel
        assert bed.duts[0].params["public_address"] == "198.19.0.1/24"
        assert "private_if" not in campaign.testbed.duts[0].params
    assert lab.released == 1


def test_keep_lab_and_a_lab_that_was_up_before_stay(fake_kind: FakeBackend, tmp_path: Path) -> None:
    fake_kind.lab = LabRequest(name="mine", keep=True, tester_cpus=(1,))
    with build_testbed(_campaign(tmp_path)) as bed:
        assert bed.keep_lab
    (lab,) = FakeLab.made
    assert (lab.name, lab.tester_cpus, lab.released) == ("mine", (1,), 0)
    FakeLab.made, FakeLab.up_before = [], True
    fake_kind.lab = LabRequest()
    with build_testbed(_campaign(tmp_path)) as bed:
        assert not bed.lab_created
    assert FakeLab.made[0].released == 0  # somebody else's lab


def test_a_failed_build_releases_the_lab_and_closes_the_tester(
    fake_kind: FakeBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kind.fail = True
    with pytest.raises(ConfigError, match="cannot be built"):
        build_testbed(_campaign(tmp_path))
    assert FakeLab.made[0].released == 1
    fake_kind.fail = False
    built: list[FakeTester] = []
    real_create = fake_kind.create
    monkeypatch.setattr(fake_kind, "create", lambda *a: built.append(real_create(*a)) or built[-1])
    with pytest.raises(NatbenchError, match="no-such-recipe"):
        build_testbed(_campaign(tmp_path, recipe="./no-such-recipe.yaml"))
    assert built[0].closed and FakeLab.made[1].released == 1


def test_settings_are_checked_before_the_lab_comes_up(fake_kind: FakeBackend, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"c\.yaml:\d+: testbed\.tester\.settings\.bad: bad setting"):
        build_testbed(_campaign(tmp_path, bad=True))
    assert FakeLab.made == []


def test_a_tester_without_a_lab_uses_the_one_recorded_lab(
    fake_kind: FakeBackend, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_kind.lab = None  # like trex: it does not drive the lab's ports
    monkeypatch.setattr("natbench.testbed.build.recorded_lab", lambda: None)
    with pytest.raises(ConfigError, match="cannot find the lab's DUT namespace"):
        build_testbed(_campaign(tmp_path))
    found = FakeLab("byhand", family=None, addresses=None, tester_cpus=None)
    monkeypatch.setattr("natbench.testbed.build.recorded_lab", lambda: found)
    with build_testbed(_campaign(tmp_path)) as bed:
        assert bed.lab is found and not bed.lab_created
        assert fake_kind.contexts[-1].lab is None  # the tester does not get the lab's ports
        assert isinstance(bed.dut, RecipeDut) and isinstance(bed.dut.executor, NetnsExecutor)
    assert found.released == 0


def test_testbed_close_releases_the_lab_also_when_the_tester_fails_to_close() -> None:
    from natbench.testbed import Testbed

    class Stuck(FakeTester):
        def close(self) -> None:
            raise OSError("stuck")

    lab = FakeLab("x", family=None, addresses=None, tester_cpus=None)
    bed = Testbed(Stuck(FakeDut(FakeModel())), FakeDut(FakeModel()), lab, lab_created=True)
    with pytest.raises(OSError, match="stuck"):
        bed.close()
    assert lab.released == 1


def test_access_backends_place_duts(tmp_path: Path) -> None:
    from natbench.campaign.schema import DutSpec
    from natbench.plugins import ACCESS

    local = DutSpec.model_validate({"name": "a", "recipe": "x", "access": {"kind": "local"}})
    placement = ACCESS.get("local").place(local.access, "a", None)
    assert isinstance(placement.executor, LocalExecutor) and not placement.host_settings
    ssh = DutSpec.model_validate({"name": "b", "recipe": "x", "access": {"kind": "ssh", "host": "dut.example"}})
    assert ACCESS.get("ssh").endpoints(ssh.access, "b") == [("DUT b not reachable over SSH", "dut.example", 22)]
    with pytest.raises(TypeError):
        ACCESS.get("netns").place(local.access, "a", None)
