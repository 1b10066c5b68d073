"""Dual-DUT handling: which member's cores a working point sets, DUTs that cannot set cores,
and the seed campaigns for Jool, 464XLAT, MAP-T and PF built into DUTs from these recipes."""

from __future__ import annotations

from pathlib import Path

import pytest

from natbench.campaign import load_campaign
from natbench.campaign.recipes import check_recipes
from natbench.duts.executors import LocalExecutor
from natbench.duts.group import DutGroup
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe, parse_recipe
from natbench.errors import DutError
from natbench.testbed import build_dut
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

CAMPAIGNS = Path(__file__).parent.parent / "campaigns"

RECIPE = """
recipe: cores-log
stateful: true
params:
  dir: {type: str, required: true}
  can_set_cores: {type: bool, default: true}
steps:
  setup:
    - echo setup {{ dut }} >> {{ dir }}/log
  teardown:
    - echo teardown {{ dut }} >> {{ dir }}/log
  count_connections:
    - run: echo 5
      parse: int
  set_cores:
    - echo cores {{ dut }} {{ cores }} >> {{ dir }}/log
"""

UNSUPPORTED = RECIPE.replace(
    """  set_cores:
    - echo cores {{ dut }} {{ cores }} >> {{ dir }}/log
""",
    """  set_cores:
    unsupported: no per-CPU offlining on this OS
""",
)


def point(cores: int | None, swept: str | None) -> WorkingPoint:
    return WorkingPoint(0, PortRange(1, 10), PortRange(1, 10), 64, cores=cores, swept_dut=swept)


def dut(tmp: Path, name: str, text: str = RECIPE, fixed: int | None = None) -> RecipeDut:
    return RecipeDut(name, parse_recipe(text, "cores-log.yaml"), LocalExecutor(), {"dir": str(tmp)}, fixed_cores=fixed)


def log(tmp: Path) -> list[str]:
    return (tmp / "log").read_text().splitlines()


def test_the_swept_member_gets_the_points_cores_the_other_its_fixed_cores(tmp_path: Path) -> None:
    """Seed 004: the PE's cores are swept (1..16) while the CE keeps all of its cores."""
    group = DutGroup([dut(tmp_path, "ce", fixed=32), dut(tmp_path, "pe")])
    p = point(2, "pe")
    assert group.swept(p) == ["pe"]
    group.setup(p)
    group.teardown()
    assert log(tmp_path) == ["cores ce 32", "setup ce", "cores pe 2", "setup pe", "teardown pe", "teardown ce"]


def test_a_member_without_fixed_cores_is_left_alone(tmp_path: Path) -> None:
    group = DutGroup([dut(tmp_path, "ce"), dut(tmp_path, "pe")])
    group.setup(point(4, "pe"))
    group.teardown()
    assert log(tmp_path) == ["setup ce", "cores pe 4", "setup pe", "teardown pe", "teardown ce"]


def test_sweeping_cores_of_a_dut_that_cannot_set_them_fails_before_setup(tmp_path: Path) -> None:
    pf = dut(tmp_path, "pf", UNSUPPORTED)
    with pytest.raises(DutError, match="DUT pf: step set_cores: cannot set cores on this DUT: no per-CPU offlining"):
        pf.setup(point(2, None))
    assert not (tmp_path / "log").exists() or "setup pf" not in log(tmp_path)


def test_fixed_cores_on_a_dut_that_cannot_set_them_is_recorded_not_hidden(tmp_path: Path) -> None:
    """Seed 001 lists its PF DUT with 16 cores; PF cannot be limited, so that is a fact and a warning."""
    pf = dut(tmp_path, "pf", UNSUPPORTED, fixed=16)
    pf.setup(point(None, None))
    facts = pf.facts()
    pf.teardown()
    assert facts["cores_requested"] == 16
    assert facts["cores_unsupported"] == "no per-CPU offlining on this OS"
    assert any("16 cores requested but not applied" in w for w in facts["warnings"])
    assert log(tmp_path) == ["setup pf", "teardown pf"]


def test_pf_recipes_report_set_cores_as_unsupported() -> None:
    for name in ("openbsd-pf-nat64", "openbsd-pf-nat44"):
        step = load_recipe(name).steps["set_cores"]
        assert step.unsupported and "OpenBSD" in step.unsupported and not step.commands


SEED_CAMPAIGNS = {
    # campaign file: (DUT names in path order, stateful members, swept DUT)
    "seed000-fig7-jool-cores.yaml": (["jool"], ["jool"], None),
    "seed000-fig8-jool-connections.yaml": (["jool"], ["jool"], None),
    "seed000-fig9-jool-teardown.yaml": (["jool"], ["jool"], None),
    "seed001-pf-connections.yaml": (["pf"], ["pf"], None),
    "seed004-table4-464xlat-cores.yaml": (["clat", "plat"], ["plat"], "plat"),
    "seed004-table5-464xlat-connections.yaml": (["clat", "plat"], ["plat"], None),
    "seed004-table6-mapt-cores.yaml": (["ce", "br"], ["ce"], "br"),
    "seed004-table7-mapt-connections.yaml": (["ce", "br"], ["ce"], None),
    "seed004-table8-mapt-split-cores.yaml": (["ce1", "ce2", "br"], ["ce1"], "br"),
    "seed004-table9-mapt-split-connections.yaml": (["ce1", "ce2", "br"], ["ce1"], None),
}


@pytest.mark.parametrize("file", sorted(SEED_CAMPAIGNS))
def test_seed_campaign_validates_against_the_recipes(file: str) -> None:
    campaign = load_campaign(CAMPAIGNS / file)  # a missing campaign of the project fails (ConfigError: no such file)
    check = check_recipes(campaign)
    assert check.checked, check.detail
    names, stateful, swept = SEED_CAMPAIGNS[file]
    built = build_dut(campaign.testbed.duts)
    members = built.members() if isinstance(built, DutGroup) else [built]
    assert [d.name for d in members] == names
    if isinstance(built, DutGroup):
        assert [d.name for d in built.stateful] == stateful
    for p in campaign.points():
        for d in members:  # every point's parameters resolve for every member
            d.recipe.resolve({**d.base_params, **p.dut_params.get(d.name, {})})
        if swept is not None:
            assert p.swept_dut == swept and p.cores is not None
            assert [d.name for d in members if d.swept_by(p)] == [swept]
