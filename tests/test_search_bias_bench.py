"""bench/search_bias.py's model: on a DUT whose ceiling does not move the searches agree to the rate; with jitter
every algorithm's results stay within the jitter band; the report line names the difference from binary."""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_search_bias", ROOT / "bench" / "search_bias.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


sb = _bench()


def test_without_jitter_every_search_reports_the_last_grid_rate_below_the_ceiling() -> None:
    rng = random.Random(3)
    below = (sb.CEILING // sb.ERROR) * sb.ERROR  # 2,300,000: the grid rate at or below 2,300,437
    assert sb.binary_run(rng, 0.0, 5) == [below] * 5
    assert sb.fast_run(rng, 0.0, 5, sb.RULE) == [below] * 5
    assert sb.fast_run(rng, 0.0, 5, None) == [below] * 5


@pytest.mark.parametrize("jitter", [0.005, 0.03])
def test_with_jitter_results_stay_within_the_band(jitter: float) -> None:
    rng = random.Random(5)
    lo, hi = sb.CEILING * (1 - jitter) - sb.ERROR, sb.CEILING * (1 + jitter)
    for values in (sb.binary_run(rng, jitter, 10), sb.fast_run(rng, jitter, 10, sb.RULE)):
        assert all(lo <= v <= hi for v in values), values


def test_the_report_prints_each_algorithm_against_binary(capsys: pytest.CaptureFixture[str]) -> None:
    assert sb.main(["--jitter", "0", "--jitter", "0.01", "--runs", "5", "--repetitions", "3"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.split()[1:2] in (["fast"],)]
    assert [r[0] for r in rows] == ["0.0%", "1.0%"]
    assert rows[0][5] == "+0.0000%"  # no jitter: the same medians as binary
