"""Every campaign shipped in campaigns/ validates and says what its seed says."""

from __future__ import annotations

from pathlib import Path

import pytest

from natbench.campaign import load_campaign
from natbench.campaign.estimate import estimate
from natbench.campaign.recipes import check_recipes
from natbench.duts.recipes import list_recipes
from natbench.traffic import Family, PortRange

CAMPAIGNS = Path(__file__).resolve().parent.parent / "campaigns"
FILES = sorted(CAMPAIGNS.glob("*.yaml"))
RECIPES = CAMPAIGNS.parent / "dut_recipes"


def test_there_is_a_campaign_per_seed_experiment() -> None:
    names = {f.stem for f in FILES}
    for expected in (
        "quickstart",
        "seed000-fig2-iptables-cores",
        "seed000-fig2-forwarding-cores",
        "seed000-fig4-iptables-connections",
        "seed000-fig5-iptables-teardown",
        "seed000-fig7-jool-cores",
        "seed000-fig8-jool-connections",
        "seed000-fig9-jool-teardown",
        "seed001-pf-connections",
        "seed004-table2-ipv4-forwarding",
        "seed004-table4-464xlat-cores",
        "seed004-table5-464xlat-connections",
        "seed004-table6-mapt-cores",
        "seed004-table7-mapt-connections",
        "seed004-table8-mapt-split-cores",
        "seed004-table9-mapt-split-connections",
    ):
        assert expected in names


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_campaign_validates(path: Path) -> None:
    c = load_campaign(path)
    points = c.points()
    assert points, "a campaign has at least one working point"
    assert len({p.label for p in points}) == len(points)
    assert len({p.id for p in points}) == len(points)
    assert c.name == path.stem
    assert estimate(c).trials > 0


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_campaign_recipes_resolve(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Against the project's own dut_recipes/ (no recipe from elsewhere on the search path); a missing one fails."""
    monkeypatch.delenv("NATBENCH_RECIPES", raising=False)
    monkeypatch.chdir(RECIPES.parent)
    c = load_campaign(path)
    assert {name: f.parent for name, f in list_recipes().items()} == {f.stem: RECIPES for f in RECIPES.glob("*.yaml")}
    missing = sorted({d.recipe for d in c.testbed.duts} - {f.stem for f in RECIPES.glob("*.yaml")})
    assert not missing, f"{path.name} names recipe(s) missing from dut_recipes/: {', '.join(missing)}"
    result = check_recipes(c)
    assert result.checked, result.detail
    assert f"{len(c.testbed.duts)} DUT(s)" in result.detail


def test_seed000_fig2_is_the_seed_table() -> None:
    c = load_campaign(CAMPAIGNS / "seed000-fig2-iptables-cores.yaml")
    pts = c.points()
    assert [p.cores for p in pts] == [1, 2, 4, 8, 16]
    assert {(p.src_ports, p.dst_ports) for p in pts} == {(PortRange(1, 4000), PortRange(1, 1000))}
    assert {p.connections for p in pts} == {4_000_000}
    assert [p.label for p in pts] == [f"iptables-{n}c-4M" for n in (1, 2, 4, 8, 16)]
    assert all(p.dut_params["iptables"]["conntrack_max"] == 2**23 for p in pts)
    assert all(p.dut_params["iptables"]["hashsize"] == 2**23 for p in pts)
    assert [c.settings_for(p, "cps").error for p in pts] == [100, 100, 100, 1000, 1000]
    assert {c.settings_for(p, m).repetitions for p in pts for m in c.metrics} == {10}
    assert list(c.metrics) == ["cps", "throughput"]


def test_seed000_fig4_zips_ranges_and_table_sizes() -> None:
    c = load_campaign(CAMPAIGNS / "seed000-fig4-iptables-connections.yaml")
    pts = c.points()
    assert [si for si in (p.label for p in pts)] == [
        "iptables-1.56M",
        "iptables-6.25M",
        "iptables-25M",
        "iptables-100M",
        "iptables-400M",
        "iptables-800M",
    ]
    assert [p.dut_params["iptables"]["hashsize"] for p in pts] == [2**21, 2**23, 2**25, 2**27, 2**28, 2**28]
    assert [p.dut_params["iptables"]["conntrack_max"] for p in pts][-1] == 2**30
    assert [c.settings_for(p, "cps").repetitions for p in pts] == [10, 10, 10, 10, 10, 5]


def test_seed004_dual_dut_sweeps_the_pe_cores() -> None:
    c = load_campaign(CAMPAIGNS / "seed004-table4-464xlat-cores.yaml")
    assert [d.name for d in c.testbed.duts] == ["clat", "plat"]
    assert c.dut("clat").cores == 32
    pts = c.points()
    assert {p.swept_dut for p in pts} == {"plat"}
    assert [p.cores for p in pts] == [1, 2, 4, 8, 16]
    assert c.acceptance(pts[0], "throughput") == pytest.approx(0.0001)
    assert c.traffic.family is Family.NAT44
    t5 = load_campaign(CAMPAIGNS / "seed004-table5-464xlat-connections.yaml").points()
    assert [p.connections for p in t5] == [4000 * 250 * 2**i for i in range(9)]


def test_quickstart_fits_a_small_box() -> None:
    c = load_campaign(CAMPAIGNS / "quickstart.yaml")
    assert c.testbed.tester.kind == "software"
    assert [d.access.kind for d in c.testbed.duts] == ["lab"]
    assert c.testbed.duts[0].recipe == "iptables-nat44"
    assert set(c.metrics) == {"cps", "throughput", "teardown"}
    assert c.settings_for(c.points()[0], "throughput").directions in (None, "bidirectional")
    pts = c.points()
    assert len({p.connections for p in pts}) >= 3
    # the lab leaves the global conntrack table as it is: every point must fit its default size (262,144)
    assert max(p.connections for p in pts) <= 262_144 // 2
    for p in pts:
        for m in c.metrics:
            assert c.settings_for(p, m).repetitions == 3
    assert estimate(c).seconds < 600


def test_readme_annotated_campaign_is_valid() -> None:
    readme = (CAMPAIGNS.parent / "README.md").read_text()
    block = readme.split("```yaml\n", 1)[1].split("```", 1)[0]
    from natbench.campaign import parse_campaign

    c = parse_campaign(block, "README.md")
    assert [p.label for p in c.points()] == [f"iptables-{n}c-4M" for n in (1, 2, 4, 8, 16)]
    assert [c.settings_for(p, "cps").error for p in c.points()] == [100, 100, 100, 1000, 1000]


def test_schema_reference_doc_is_current() -> None:
    from natbench.campaign.reference import markdown

    doc = (CAMPAIGNS.parent / "docs" / "campaign-schema.md").read_text()
    assert doc == markdown(), "regenerate: python -m natbench.campaign.reference > docs/campaign-schema.md"
    assert "| `fill_rate` |" in doc and "## SshAccess" in doc


@pytest.mark.parametrize(
    ("name", "metric", "printed"),
    [
        # seed 000 Figure 2's error rows as printed (cps and throughput; the forwarding baseline)
        ("seed000-fig2-iptables-cores.yaml", "cps", [100, 100, 100, 1000, 1000]),
        ("seed000-fig2-iptables-cores.yaml", "throughput", [100, 100, 100, 1000, 1000]),
        ("seed000-fig2-forwarding-cores.yaml", "forwarding", [200, 500, 1000, 1000, 1000]),
    ],
)
def test_the_figure2_campaigns_searches_end_exactly_at_the_seeds_printed_error(
    name: str, metric: str, printed: list[int]
) -> None:
    """Seed 000 defines the error as the width of the binary search when it stops: on its grid of lower + k x error
    the search ends exactly one error wide whatever the DUT does (and, the campaigns' ranges being whole multiples of
    their errors, even a DUT faster than the range ends one error wide), so a real run prints the seed's error row."""
    from natbench.results import Verdict
    from natbench.search.binary import BinarySearch

    campaign = load_campaign(CAMPAIGNS / name)
    widths = []
    for point in campaign.points():
        s = campaign.settings_for(point, metric)
        for passes_below in (0.0, 0.3, 1.0):  # a DUT that fails everything, one in the middle, one that passes all
            search = BinarySearch(float(s.lower), float(s.upper), float(s.error))
            while not search.done:
                step = search.next_step()
                limit = float(s.lower) + passes_below * (float(s.upper) - float(s.lower))
                search.report(Verdict.PASS if step.rate <= limit else Verdict.FAIL)
            out = search.outcome()
            assert out.upper - out.lower == s.error, (point.label, passes_below)
        widths.append(s.error)
    assert widths == printed
