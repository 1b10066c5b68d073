"""The plugin seam (natbench.plugins): the one Registry mechanism, backends' settings models in the campaign
schema, a third-party access kind, the defaults a run stores, and the lab's recipe parameters of a VM DUT."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any, Literal

import pytest
import yaml
from click.testing import CliRunner
from pydantic import Field, ValidationError

from natbench.campaign import load_campaign, parse_campaign
from natbench.campaign.recipes import check_recipes, place_params
from natbench.campaign.schema import DutSpec, TesterSpec
from natbench.cli import cli
from natbench.duts.executors import LocalExecutor
from natbench.errors import ConfigError
from natbench.plugins import (
    ACCESS,
    PARSERS,
    TESTERS,
    AccessSettings,
    DutPlacement,
    Endpoint,
    LabResource,
    Registry,
)
from natbench.plugins import registry as registry_module
from natbench.testbed.lab.vm import VmLab, VmSettings
from natbench.traffic.plan import AddressPlan, Family, ResponderMode

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS = ROOT / "campaigns"


def _installed(monkeypatch: pytest.MonkeyPatch, *eps: EntryPoint) -> None:
    """Pretend an installed package offers ``eps`` (what importlib.metadata.entry_points finds)."""

    def entry_points(group: str) -> list[EntryPoint]:
        return [ep for ep in eps if ep.group == group]

    monkeypatch.setattr(registry_module, "entry_points", entry_points)


# --------------------------------------------------------------------------------------------- the registry


def shout(text: str) -> str:
    """A parser an entry point names."""
    return text.upper()


NOT_A_BACKEND = object()


def test_an_entry_point_is_found_loaded_once_and_code_cannot_take_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, EntryPoint("shout", f"{__name__}:shout", "natbench.parsers"))
    try:
        assert "shout" in PARSERS.names() and "shout" in PARSERS
        assert PARSERS.get("shout")("ok") == "OK"
        assert PARSERS.loaded("shout") is shout  # loaded once, kept
        with pytest.raises(ConfigError) as info:
            PARSERS.register("shout", str.lower)  # the name is the entry point's: refused, naming both
        assert str(info.value) == (
            f"parser 'shout' is registered twice: first by entry point natbench.parsers: shout = {__name__}:shout, "
            f"again by code in {__name__} (rename or remove one)"
        )
        assert PARSERS.get("shout") is shout  # the first one stays
    finally:
        PARSERS.unregister("shout")


def test_a_name_registered_twice_in_code_is_refused_naming_both_and_the_same_entry_again_is_not() -> None:
    registry: Registry[Any] = Registry("widget", "natbench.widgets", callable)
    registry.register("w", len, source="pkg_a.widgets")
    registry.register("w", len, source="pkg_a.widgets")  # the same object again: nothing changes
    with pytest.raises(ConfigError) as info:
        registry.register("w", abs, source="pkg_b.widgets")
    assert str(info.value) == (
        "widget 'w' is registered twice: first by pkg_a.widgets, again by pkg_b.widgets (rename or remove one)"
    )
    with pytest.raises(ConfigError, match=r"first by pkg_a\.widgets, again by builtins:abs"):
        registry.register_lazy("w", "builtins:abs")
    assert registry.get("w") is len
    registry.register_lazy("v", "builtins:abs")
    registry.register_lazy("v", "builtins:abs")  # the same path again: nothing changes
    registry.unregister("v")
    registry.register("v", len)  # a forgotten name is free again
    assert registry.get("v") is len


def test_code_registering_a_name_is_named_by_its_module() -> None:
    ACCESS.register("telnet", TelnetBackend())  # no source given: the module that called register
    try:
        with pytest.raises(ConfigError) as info:
            ACCESS.register("telnet", TelnetBackend())
        assert info.value.message == (
            f"access kind 'telnet' is registered twice: first by code in {__name__}, again by code in {__name__} "
            "(rename or remove one)"
        )
        with pytest.raises(ConfigError, match=r"'ssh' is registered twice: first by natbench\.duts\.access:SSH, again"):
            ACCESS.register("ssh", TelnetBackend())  # natbench's own names too
    finally:
        ACCESS.unregister("telnet")


def test_a_parser_name_registered_twice_names_both_functions() -> None:
    from natbench.duts.parsers import parse_conntrack_count, register_parser

    def count(text: str) -> int:
        return 0

    with pytest.raises(ConfigError) as info:
        register_parser("conntrack_count")(count)
    assert str(info.value) == (
        "parser 'conntrack_count' is registered twice: first by natbench.duts.parsers:parse_conntrack_count, "
        f"again by {__name__}:{count.__qualname__} (rename or remove one)"
    )
    assert PARSERS.get("conntrack_count") is parse_conntrack_count
    assert register_parser("conntrack_count")(parse_conntrack_count) is parse_conntrack_count  # the same again


def test_an_entry_point_named_like_a_builtin_is_refused_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    # a registry made as natbench's are (its own entries by dotted path), with a package offering "software" too
    testers: Registry[Any] = Registry("tester kind", "natbench.testers", callable)
    testers.register_lazy("software", "natbench.testers.software.backend:create")
    _installed(
        monkeypatch,
        EntryPoint("software", f"{__name__}:shout", "natbench.testers"),
        EntryPoint("other", f"{__name__}:shout", "natbench.testers"),
    )
    with pytest.raises(ConfigError) as info:
        testers.get("software", field="testbed.tester.kind")
    assert info.value.field == "testbed.tester.kind" and "\n" not in str(info.value)
    assert info.value.message == (
        "tester kind 'software' is registered twice: first by natbench.testers.software.backend:create, "
        f"again by entry point natbench.testers: software = {__name__}:shout (rename or remove one)"
    )
    assert testers.names() == ["other", "software"]
    assert testers.get("other") is shout  # a name of its own is the package's


def test_two_packages_offering_one_name_are_refused_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(
        monkeypatch,
        EntryPoint("telnet", f"{__name__}:TelnetBackend", "natbench.access"),
        EntryPoint("telnet", "other_package.access:TelnetBackend", "natbench.access"),
    )
    with pytest.raises(ConfigError) as info:
        ACCESS.get("telnet")
    assert info.value.message == (
        f"access kind 'telnet' is registered twice: first by entry point natbench.access: telnet = {__name__}:"
        "TelnetBackend, again by entry point natbench.access: telnet = other_package.access:TelnetBackend "
        "(rename or remove one)"
    )
    assert ACCESS.loaded("telnet") is None  # neither was taken


def _package(root: Path, name: str, entry_points: str) -> Path:
    """An installed distribution ``name`` 1.0 under ``root`` (what pip leaves: a dist-info with its entry points)."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entry_points)
    (root / f"{name}_backend.py").write_text("from natbench.testers.software.backend import BACKEND\n")
    return root


@pytest.mark.parametrize("kind", ["software", "acme"])
def test_an_installed_package_naming_a_builtin_tester_kind_is_one_line_exit_2(tmp_path: Path, kind: str) -> None:
    # a real installed package (found by importlib.metadata on the path): its entry point named like natbench's own
    # tester kind is refused naming both, a name of its own is simply one more kind
    site = _package(tmp_path / "site", "acme", f"[natbench.testers]\n{kind} = acme_backend:BACKEND\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", "validate", "--no-recipes", "campaigns/quickstart.yaml"],
        capture_output=True, text=True, cwd=ROOT, env=env, timeout=120,
    )  # fmt: skip
    if kind == "acme":
        assert proc.returncode == 0, proc.stderr
        known = subprocess.run(
            [sys.executable, "-c", "from natbench.plugins import TESTERS; print(TESTERS.names())"],
            capture_output=True, text=True, cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        assert known.stdout.strip() == "['acme', 'software', 'trex']"
        return
    assert proc.returncode == 2
    (line,) = proc.stderr.strip().splitlines()
    assert line.endswith(
        "testbed.tester.kind: tester kind 'software' is registered twice: first by "
        "natbench.testers.software.backend:BACKEND, again by entry point natbench.testers: software = "
        "acme_backend:BACKEND of acme 1.0 (rename or remove one)"
    ), line


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("no_such_module_xyz:thing", "No module named 'no_such_module_xyz'"),
        (f"{__name__}:NO_SUCH_NAME", "has no attribute 'NO_SUCH_NAME'"),
        (f"{__name__}:NOT_A_BACKEND", "<object object at"),
    ],
)
def test_a_broken_plugin_is_a_one_line_config_error(monkeypatch: pytest.MonkeyPatch, value: str, why: str) -> None:
    _installed(monkeypatch, EntryPoint("broken", value, "natbench.testers"))
    with pytest.raises(ConfigError) as info:
        TESTERS.get("broken", field="testbed.tester.kind")
    err = info.value
    assert err.field == "testbed.tester.kind"
    assert err.message.startswith(f"cannot load tester kind 'broken' from {value}: ")
    assert why in err.message and "\n" not in str(err)


def test_a_broken_plugin_named_in_a_campaign_is_its_error_at_its_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _installed(monkeypatch, EntryPoint("broken", "no_such_module_xyz:BACKEND", "natbench.testers"))
    text = (CAMPAIGNS / "quickstart.yaml").read_text().replace("kind: software", "kind: broken", 1)
    line = text.splitlines().index("    kind: broken") + 1
    with pytest.raises(ConfigError) as info:
        parse_campaign(text, tmp_path / "c.yaml")
    assert str(info.value).startswith(f"{tmp_path / 'c.yaml'}:{line}: testbed.tester.kind: cannot load tester")
    assert "No module named 'no_such_module_xyz'" in str(info.value) and "\n" not in str(info.value)


def test_registration_in_code_checks_the_sort_and_unknown_names_name_the_known_ones() -> None:
    registry: Registry[Any] = Registry("widget", "natbench.widgets", callable)
    with pytest.raises(TypeError, match="widget 'w' registered as 1, which is not one"):
        registry.register("w", 1)
    registry.register_lazy("w", "builtins:len")
    assert registry.loaded("w") is None  # registered by dotted path, not imported yet
    assert registry.get("w") is len and registry.loaded("w") is len
    with pytest.raises(ConfigError, match="unknown widget 'x'; known: w"):
        registry.get("x")
    assert registry.find("x") is None


def test_natbench_registers_its_own_backends_by_dotted_path_and_validating_loads_no_client() -> None:
    # a fresh interpreter: validating campaigns of every built-in kind imports neither paramiko nor TRex's client,
    # and importing the seam imports no backend
    code = (
        "import sys\n"
        "from natbench.plugins import ACCESS, TESTERS\n"
        "assert not [m for m in sys.modules if m.startswith(('natbench.testers.', 'natbench.duts.access'))]\n"
        "assert TESTERS.names() == ['software', 'trex'] and ACCESS.names() == ['lab', 'local', 'netns', 'ssh']\n"
        "from natbench.campaign import load_campaign\n"
        "from natbench.campaign.recipes import check_recipes\n"
        "for f in ('quickstart', 'quickstart-jool', 'seed000-fig2-iptables-cores', 'lab-464xlat'):\n"
        "    check_recipes(load_campaign(f'campaigns/{f}.yaml'))\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('paramiko', 'trex', 'MLRsearch')]\n"
        "assert not heavy and 'natbench.testers.trex.tester' not in sys.modules, heavy\n"
        "assert 'natbench.testers.software.tester' not in sys.modules  # nor the C data path\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, cwd=ROOT)


# --------------------------------------------------------------------------- a third-party DUT access kind


class TelnetAccess(AccessSettings):
    """A DUT behind a console server (a third-party access kind)."""

    kind: Literal["telnet"]
    """Access kind: ``telnet``."""
    host: str
    """The console server."""
    port: int = Field(default=23, ge=1, le=65535)
    """Its port."""


class TelnetBackend:
    """The backend a third-party package's entry point names (an instance is made from the class)."""

    settings = TelnetAccess
    uses_lab = False
    needs_root = False

    def place(self, access: TelnetAccess, dut: str, lab: LabResource | None) -> DutPlacement:
        return DutPlacement(LocalExecutor())

    def recipe_params(self, access: TelnetAccess, addresses: AddressPlan, position: int, count: int) -> dict[str, Any]:
        return {"private_if": "xe1", "public_if": "xe2"}

    def problems(self, access: TelnetAccess | None) -> list[str]:
        return [] if access is not None else ["no console client installed"]

    def endpoints(self, access: TelnetAccess, dut: str) -> list[Endpoint]:
        return [(f"DUT {dut}'s console not reachable", access.host, access.port)]


def _telnet_campaign(tmp_path: Path) -> Path:
    data = yaml.safe_load((CAMPAIGNS / "quickstart.yaml").read_text())
    data["testbed"]["duts"][0]["access"] = {"kind": "telnet", "host": "console.example"}
    data["testbed"]["duts"][0]["params"].update(private_address="10.0.0.1/24", public_address="198.19.0.1/24")
    path = tmp_path / "telnet.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_a_third_party_access_kind_passes_validation_through_its_entry_point(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path = _telnet_campaign(tmp_path)
    with pytest.raises(ConfigError, match=r"access\.kind: unknown access kind 'telnet'; known: lab, local, netns, ssh"):
        load_campaign(path)
    _installed(monkeypatch, EntryPoint("telnet", f"{__name__}:TelnetBackend", "natbench.access"))
    try:
        campaign = load_campaign(path)
        (dut,) = campaign.testbed.duts
        assert isinstance(dut.access, TelnetAccess) and dut.access.port == 23
        # its model's defaults are stored, and the stored form loads back the same
        stored = yaml.safe_load(campaign.to_yaml())
        assert stored["testbed"]["duts"][0]["access"] == {"kind": "telnet", "host": "console.example", "port": 23}
        assert parse_campaign(campaign.to_yaml(), tmp_path / "again.yaml").to_dict() == campaign.to_dict()
        # the recipe is checked with the parameters its place supplies
        assert place_params(campaign, 0) == {"private_if": "xe1", "public_if": "xe2"}
        assert check_recipes(campaign).checked
        # its model checks its own fields, at the campaign's line
        bad = path.read_text().replace("host: console.example", "host: console.example\n      port: 0")
        with pytest.raises(ConfigError, match=r"testbed\.duts\[0\]\.access\.port: must be greater than or equal to 1"):
            parse_campaign(bad, path)
    finally:
        ACCESS.unregister("telnet")


def test_an_access_kind_registered_in_code_after_import_is_validated_by_its_model() -> None:
    ACCESS.register("telnet", TelnetBackend())
    try:
        spec = DutSpec.model_validate({"name": "a", "recipe": "x", "access": {"kind": "telnet", "host": "h"}})
        assert isinstance(spec.access, TelnetAccess)
        with pytest.raises(ValidationError, match=r"access\.host"):
            DutSpec.model_validate({"name": "a", "recipe": "x", "access": {"kind": "telnet"}})
    finally:
        ACCESS.unregister("telnet")
    with pytest.raises(ValidationError, match="unknown access kind 'telnet'"):
        DutSpec.model_validate({"name": "a", "recipe": "x", "access": {"kind": "telnet", "host": "h"}})


def test_doctor_asks_every_registered_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    _installed(monkeypatch, EntryPoint("telnet", f"{__name__}:TelnetBackend", "natbench.access"))
    try:
        result = CliRunner().invoke(cli, ["doctor"])
    finally:
        ACCESS.unregister("telnet")
    lines = result.output.splitlines()
    assert "                 access telnet: no console client installed" in lines
    assert result.exit_code == 1  # something is missing
    for part in ("tester software", "tester trex", "access ssh", "access lab", "search algorithm mlr", "root"):
        assert any(line.startswith(f"                 {part}: ") for line in lines), part


# --------------------------------------------------------------------------- defaults in the stored campaign


def test_the_stored_campaign_holds_every_backend_default_and_old_ones_still_load(tmp_path: Path) -> None:
    campaign = load_campaign(CAMPAIGNS / "quickstart.yaml")
    stored = yaml.safe_load(campaign.to_yaml())
    settings = stored["testbed"]["tester"]["settings"]
    assert settings == {
        "rate_tolerance": 0.001,
        "keep_lab": False,
        "lateness_slack": 0.0005,
        "max_stall": 0.002,
        "catchup": 2.0,
        "realtime": True,
        "rcvbuf": 64 << 20,
        "enumeration": "feistel",
    }  # and no receive timeout: derived from the metrics when the tester is built
    assert campaign.responder_mode is ResponderMode.LEARN  # the software tester's default
    # a campaign.yaml stored before the settings had defaults (settings: {}) loads to the same campaign
    old = dict(stored)
    old["testbed"] = {**stored["testbed"], "tester": {"kind": "software", "settings": {}}}
    again = parse_campaign(yaml.safe_dump(old, sort_keys=False), tmp_path / "campaign.yaml")
    assert again.to_dict() == campaign.to_dict()

    trex = load_campaign(CAMPAIGNS / "seed000-fig2-iptables-cores.yaml")
    tsettings = yaml.safe_load(trex.to_yaml())["testbed"]["tester"]["settings"]
    assert tsettings["rate_tolerance"] == 0.01 and tsettings["step"] == 1 and tsettings["pin_cores"] is True
    assert trex.responder_mode is ResponderMode.READ  # TRex reads the DUT's mappings

    jool = yaml.safe_load(load_campaign(CAMPAIGNS / "quickstart-jool.yaml").to_yaml())
    vm = jool["testbed"]["duts"][0]["access"]
    assert vm == {"kind": "lab", "vm": "jool", "vcpus": 1, "memory": 1536, "accel": "auto", "boot_timeout": 600.0}
    assert "vcpus" not in stored["testbed"]["duts"][0]["access"]  # a namespace DUT has no VM settings


def test_a_run_stored_before_the_defaults_resumes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from natbench.run.runner import resume_campaign, run_campaign
    from natbench.testbed import Testbed
    from natbench.testing import FakeDut, FakeModel, FakeTester

    def bed() -> Testbed:
        dut = FakeDut(FakeModel(cps=150_000, forwarding=120_000))
        return Testbed(FakeTester(dut), dut)

    monkeypatch.chdir(tmp_path)
    data = yaml.safe_load((CAMPAIGNS / "quickstart.yaml").read_text())
    data.update(output="results/q", metrics={"cps": {"repetitions": 1, "upper": "200k", "error": "50k"}})
    path = tmp_path / "q.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    run = run_campaign(path, testbed=bed(), sleep=lambda s: None)
    stored = run.path / "campaign.yaml"
    old = yaml.safe_load(stored.read_text())
    assert old["testbed"]["tester"]["settings"]["rate_tolerance"] == 0.001
    old["testbed"]["tester"]["settings"] = {}  # as natbench wrote it before the settings models
    stored.write_text(yaml.safe_dump(old, sort_keys=False))
    again = resume_campaign(run.path, testbed=bed(), sleep=lambda s: None)
    assert len(again.results()) == len(run.results()) == 3


# --------------------------------------------------------------------------- the lab's recipe parameters


def test_a_vm_dut_is_checked_with_the_vms_interfaces_not_the_namespace_labs(tmp_path: Path) -> None:
    jool = load_campaign(CAMPAIGNS / "quickstart-jool.yaml")
    plan = jool.traffic.address_plan()
    assert place_params(jool, 0) == {
        "private_if": "eth1",
        "public_if": "eth2",
        "private_address": f"{plan.dut_private}/{plan.private_prefixlen}",
        "public_address": f"{plan.dut_public}/{plan.public_prefixlen}",
    }
    # two VMs in path order: the addresses on the path's ends only, the same as the running VM lab decides
    xlat = load_campaign(CAMPAIGNS / "lab-464xlat.yaml")
    clat, plat = place_params(xlat, 0), place_params(xlat, 1)
    assert (clat["private_if"], clat["public_if"], plat["private_if"], plat["public_if"]) == ("eth1", "eth2") * 2
    assert "public_address" not in clat and "private_address" not in plat
    vms = [(d.name, VmSettings(d.access.vm or "")) for d in xlat.testbed.duts]
    lab = VmLab("x", vms=vms, family=Family.NAT44, addresses=xlat.traffic.address_plan(), state_dir=tmp_path)
    assert [lab.dut_params(d.name) for d in xlat.testbed.duts] == [clat, plat]
    # a namespace DUT of the lab gets the namespace lab's interfaces
    quick = load_campaign(CAMPAIGNS / "quickstart.yaml")
    assert (place_params(quick, 0)["private_if"], place_params(quick, 0)["public_if"]) == ("nb-priv", "nb-pub")
    assert place_params(load_campaign(CAMPAIGNS / "seed000-fig2-iptables-cores.yaml"), 0) == {}  # an SSH DUT


def test_a_tester_spec_names_an_unknown_kind_and_its_settings_by_field() -> None:
    with pytest.raises(ValidationError, match="unknown tester kind 'x'; known: software, trex"):
        TesterSpec.model_validate({"kind": "x"})
    with pytest.raises(ValidationError, match=r"settings\.enumeration"):
        TesterSpec.model_validate({"kind": "software", "settings": {"enumeration": "shuffled"}})
    spec = TesterSpec.model_validate({"kind": "trex", "settings": {
        "server": "t", "private_dst_mac": "02:00:00:00:00:01", "public_dst_mac": "02:00:00:00:00:02"}})  # fmt: skip
    assert spec.settings.rate_tolerance == 0.01
