"""The error row of every shipped seed campaign's tables is the search error the campaign sets, by construction.

Each shipped seed campaign is run with its own search settings against the fakes: one repetition per metric (two
with the ``fast`` algorithm, so that its seeded walk runs too), only its searched metrics, port ranges shrunk to a
few connections (the fakes keep every connection; the searches' grids do not depend on the count), and ceilings that
are no round numbers and lie inside every search range. The tables' error rows must equal the campaign's ``error`` at
every working point and, where the seed prints its error row (seed 000 Figures 2, 4, 7 and 8, seed 001's PF
tables), the seed's row. The seed defines the row as "the difference between the upper and the lower bound of the
binary search when it stops": the search's grid of ``lower + k x error`` makes that difference the error whatever the
range (seed 004 does not state its error; its campaigns set 1,000, checked against the campaigns).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

import natbench
from natbench.campaign import load_campaign
from natbench.run.runner import run_campaign, spec_from_campaign
from natbench.testbed import Testbed
from natbench.testing import FakeDut, FakeModel, FakeTester

CAMPAIGNS = Path(__file__).resolve().parent.parent / "campaigns"

SEARCHED = ("cps", "throughput", "forwarding")
"""The metrics the seed campaigns find by a search (their tables print an error row)."""

ROWS = {"cps": "cps error", "throughput": "throughput error", "forwarding": "fwd. throughput error"}
"""The error row of each searched metric in the seed tables."""

SEED_ROWS: dict[str, dict[str, list[int]]] = {
    # seed 000 section 2.2, Figure 2: "error 100 100 100 1,000 1,000" (cps and throughput), "error 200 500 1,000
    # 1,000 1,000" (forwarding)
    "seed000-fig2-iptables-cores": {"cps": [100, 100, 100, 1000, 1000], "throughput": [100, 100, 100, 1000, 1000]},
    "seed000-fig2-forwarding-cores": {"forwarding": [200, 500, 1000, 1000, 1000]},
    # Figure 4: "error 1,000" at every connection count
    "seed000-fig4-iptables-connections": {"cps": [1000] * 6, "throughput": [1000] * 6},
    # Figure 7: "error 100 100 100 100 100"; Figure 8: "error 100 100 100 100 1,000 1,000"
    "seed000-fig7-jool-cores": {"cps": [100] * 5, "throughput": [100] * 5},
    "seed000-fig8-jool-connections": {
        "cps": [100, 100, 100, 100, 1000, 1000],
        "throughput": [100, 100, 100, 100, 1000, 1000],
    },
    # seed 001, the PF tables: "Error (cps) 50 40 50", "Error (fps) 200 80 100"
    "seed001-pf-connections": {"cps": [50, 40, 50], "throughput": [200, 80, 100]},
}
"""The error rows the seeds print, per campaign and metric (one value per working point, in column order)."""

SEED_CAMPAIGNS = sorted(
    p for p in CAMPAIGNS.glob("seed*.yaml") if set(yaml.safe_load(p.read_text())["metrics"]) & set(SEARCHED)
)


def _shrunk(node: Any, n: int, dropped: set[str]) -> Any:
    """``node`` with every ``repetitions`` setting (metrics and sweeps) set to ``n``, every port range and swept port
    count a few ports (as many distinct values as before), and no setting of a ``dropped`` metric."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            k = str(key)
            if any(k.startswith(f"metrics.{m}.") for m in dropped):
                continue
            if k == "repetitions" or k.endswith(".repetitions"):
                out[key] = [n] * len(value) if isinstance(value, list) else n
            elif k in ("src_ports", "dst_ports"):
                out[key] = [4 + i for i in range(len(value))] if isinstance(value, list) else "1-4"
            else:
                out[key] = _shrunk(value, n, dropped)
        return out
    if isinstance(node, list):
        return [_shrunk(v, n, dropped) for v in node]
    return node


def _testbed(searched: dict[str, float]) -> Testbed:
    """Fakes whose ceilings lie well inside the search ranges (0.61 and 0.37 of the lowest upper bounds: no grid
    rate), above every fill rate, and a table and tester that never limit."""
    forwarding = searched.get("throughput", searched.get("forwarding", 1e6)) * 0.37
    dut = FakeDut(
        FakeModel(
            cps=searched.get("cps", 4e6) * 0.61,
            forwarding=forwarding,
            stateless_forwarding=forwarding,
            nat="forwarding" not in searched,
            table_limit=10**11,
            tester_max_rate=1e10,
            flush_empty=0.0,
        )
    )
    return Testbed(FakeTester(dut), dut)


def _campaign_copy(path: Path, tmp_path: Path, algorithm: str) -> tuple[Path, dict[str, float]]:
    """The campaign with ``repetitions`` 1 (2 for ``fast``) and every search's ``algorithm`` set; the lowest upper
    bound of each searched metric over its points."""
    data = yaml.safe_load(path.read_text())
    dropped = set(data["metrics"]) - set(SEARCHED)
    data = _shrunk(data, 2 if algorithm == "fast" else 1, dropped)
    for name in dropped:
        del data["metrics"][name]
    for name in SEARCHED:
        if name in data["metrics"]:
            data["metrics"][name]["algorithm"] = algorithm
    data["output"] = "run"  # relative to the working directory, the test's tmp_path
    copy = tmp_path / path.name
    copy.write_text(yaml.safe_dump(data, sort_keys=False))
    campaign = load_campaign(copy)
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(copy))
    uppers = {m: min(float(spec.settings(p, m).upper) for p in spec.points) for m in spec.metrics if m in SEARCHED}
    return copy, uppers


@pytest.fixture(params=["binary", "fast"])
def algorithm(request: pytest.FixtureRequest) -> Iterator[str]:
    yield str(request.param)


@pytest.mark.parametrize("path", SEED_CAMPAIGNS, ids=lambda p: p.stem)
def test_error_rows_are_the_configured_and_the_seeds_errors(
    path: Path, algorithm: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    copy, uppers = _campaign_copy(path, tmp_path, algorithm)
    bed = _testbed(uppers)
    run_dir = run_campaign(copy, testbed=bed, sleep=lambda s: None)
    assert run_dir.status == "complete"
    campaign = load_campaign(copy)
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(copy))
    run = natbench.load(run_dir.path)
    for metric in uppers:
        configured = [float(spec.settings(p, metric).error) for p in spec.points]
        table = run.seed_table(metric)
        assert ROWS[metric] in table.values.index, (metric, list(table.values.index))
        printed = [float(v) for v in table.values.loc[ROWS[metric]]]
        assert printed == pytest.approx(configured, rel=1e-12), (metric, printed, configured)
        seed = SEED_ROWS.get(path.stem, {}).get(metric)
        if seed is not None:
            assert printed == pytest.approx(seed, rel=1e-12)
            assert [str(c) for c in table.cells.loc[ROWS[metric]]] == [f"{e:,}" for e in seed]
        # the ceilings lie inside the ranges: every value is the last grid rate the fake passes
        model = bed.dut.model  # type: ignore[attr-defined]
        ceiling = model.cps if metric == "cps" else model.forwarding
        for point in spec.points:
            st = spec.settings(point, metric)
            passes_up_to = ceiling / (1 - st.acceptance)  # the loss ratio (r - ceiling) / r within the acceptance
            expected = st.lower + math.floor((passes_up_to - st.lower) / st.error) * st.error
            got = run.results.query("metric == @metric and point_id == @point.id")["value"].tolist()
            assert got and all(v == pytest.approx(expected) for v in got), (metric, point.label, got, expected)


def test_every_seed_campaign_with_a_printed_error_row_is_checked() -> None:
    assert set(SEED_ROWS) <= {p.stem for p in SEED_CAMPAIGNS}
    assert len(SEED_CAMPAIGNS) >= 14
