"""bench/search_bias.py: the searches run through natbench's procedures over the DUT models; without randomness
they agree on the grid rate at or below the truth; the output depends on the seed only (not on the processes);
the flag marks a search whose mean median lies above binary's by more than 2 standard errors, and only then."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from natbench.testing.dutmodels import Behaviour

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_search_bias", ROOT / "bench" / "search_bias.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


sb = _bench()


@pytest.mark.parametrize("algorithm", ["binary", "fast", "mlr"])
def test_without_randomness_every_search_reports_the_grid_rate_below_the_truth(algorithm: str) -> None:
    """A queue of 2,000 frames and no jitter: the truth is 300,033; binary and fast report 300,000 (the grid rate at
    or below it) in every repetition; MLRsearch's relevant lower bound lies within one error below the truth."""
    model = sb.Model("steady", Behaviour(sb.CEILING, queue=2000))
    assert model.truth == pytest.approx(sb.CEILING + 2000 / 60, abs=0.02)
    campaign = sb.run_campaign(model, algorithm, 3, "t")
    assert all(v is not None and model.truth - sb.ERROR < v <= model.truth for v in campaign.values)
    if algorithm != "mlr":
        assert campaign.values == [300_000.0] * 3
    assert campaign.seconds > 3 * sb.FULL_S


def test_the_output_depends_on_the_seed_not_on_the_processes(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--campaigns", "3", "--repetitions", "2", "--model", "queue 512, J 0.5", "--algorithms", "binary,fast"]
    outs = []
    for jobs in ("1", "2"):
        assert sb.main([*args, "--jobs", jobs]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert sb.main([*args, "--jobs", "1", "--seed", "2"]) == 0
    assert capsys.readouterr().out != outs[0]


def _cells(binary: list[float], other: list[float]) -> dict[tuple[int, int], object]:
    def cell(medians: list[float]) -> object:
        return sb.Cell([sb.Campaign([m], 3600.0, 1) for m in medians])

    return {(0, 0): cell(binary), (0, 1): cell(other)}


@pytest.mark.parametrize(
    ("shift", "flagged"),
    [(0.0, False), (10.0, False), (30.0, True)],
)
def test_a_search_is_flagged_only_when_its_median_lies_more_than_2_standard_errors_above_binarys(
    shift: float, flagged: bool
) -> None:
    """Four campaign medians at truth -10, +10, -10, +10: a standard deviation of 11.5, a standard error of 5.77 per
    search, 8.16 for their difference: a shift of +10 lies within 2 of them (16.3), +30 beyond."""
    model = sb.Model("steady", Behaviour(sb.CEILING))
    truth = model.truth
    base = [truth - 10, truth + 10, truth - 10, truth + 10]
    lines = sb.table([model], ["binary", "fast"], _cells(base, [m + shift for m in base]))
    assert ("!" in lines[-1]) is flagged
    assert "!" not in lines[-2]
    below = sb.table([model], ["binary", "fast"], _cells(base, [m - 30 for m in base]))
    assert "!" not in below[-1]  # a search below binary is never flagged


def test_the_table_counts_repetitions_above_the_truth_and_more_than_an_error_below() -> None:
    truth = 300_000.0
    cell = sb.Cell([sb.Campaign([truth + 1, truth, truth - sb.ERROR, truth - sb.ERROR - 1, None], 1.0, 5)])
    assert cell.above(truth) == pytest.approx(1 / 5)
    assert cell.below(truth) == pytest.approx(2 / 5)  # the value one error and a frame below, and the one without
    assert cell.failed() == 1
