"""bench/fast_search_lab.py's bookkeeping without a lab: the campaign variants it runs (algorithm, repetitions, the
MLRsearch width at the known ceiling), the known ceilings, and the per-metric costs and medians it reads from a run
directory."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

import natbench
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir

ROOT = Path(__file__).resolve().parents[1]
RATE_LIMIT = ROOT / "campaigns" / "lab-rate-limit.yaml"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_fast_search_lab", ROOT / "bench" / "fast_search_lab.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


lab = _bench()


def test_the_known_ceilings_of_the_calibration_campaign() -> None:
    # throughput: 20,000 + 1,000 / 10 s = 20,100 per direction; cps: 8,000 x 10,000 / 9,000 = 8,888.9
    assert lab.known_ceiling(RATE_LIMIT, "throughput") == 20_100
    assert lab.known_ceiling(RATE_LIMIT, "cps") == pytest.approx(8888.9, abs=0.1)


def test_variants_set_the_algorithm_the_repetitions_and_mlrsearchs_width_at_the_ceiling(tmp_path: Path) -> None:
    path, kept = lab.variant(RATE_LIMIT, "fast", tmp_path, repetitions=10)
    data = yaml.safe_load(path.read_text())
    assert kept == ["cps", "throughput"] and "output" not in data
    assert {m: (s["algorithm"], s["repetitions"]) for m, s in data["metrics"].items()} == {
        "cps": ("fast", 10),
        "throughput": ("fast", 10),
    }
    # MLRsearch has no cps search: the mlr variant measures throughput only, at the width 200 / (20,100 + 200)
    path, kept = lab.variant(RATE_LIMIT, "mlr", tmp_path)
    data = yaml.safe_load(path.read_text())
    assert kept == ["throughput"] and list(data["metrics"]) == ["throughput"]
    assert data["metrics"]["throughput"]["mlr"] == {"preset": "rfc2544", "relative_width": pytest.approx(200 / 20_300)}
    assert data["metrics"]["throughput"]["repetitions"] == 5  # the campaign's own
    natbench.campaign.load_campaign(path)  # a valid campaign


def test_costs_sum_each_metrics_repetitions_and_read_values_per_direction(tmp_path: Path) -> None:
    point = make_point(0, (1, 10), (1, 10))
    pid = point.id
    records = [
        # repetition 0: a fill at t=0 (2 s) and two trials of 1 s and 10 s ending at t=20: 20 s, 11 s of trials
        trial_record(pid, "throughput", 0, 0, kind="fill", started_at=0.0, duration=2.0),
        trial_record(pid, "throughput", 0, 1, kind="phase2", started_at=5.0, duration=1.0,
                     extra={"duration": 1.0, "search_trial": "short"}),
        trial_record(pid, "throughput", 0, 2, kind="phase2", started_at=10.0, duration=10.0,
                     extra={"duration": 10.0, "search_trial": "full"}),
        result_record(pid, "throughput", 0, 20_000.0, "fps", error=200.0, extra={"directions": 2}),
        # repetition 1: one 10 s trial from t=100: 10 s
        trial_record(pid, "throughput", 1, 0, kind="phase2", started_at=100.0, duration=10.0,
                     extra={"duration": 10.0, "search_trial": "full"}),
        result_record(pid, "throughput", 1, 20_200.0, "fps", error=100.0, extra={"directions": 2}),
    ]  # fmt: skip
    run = natbench.load(write_run_dir(tmp_path / "run", [point], records))
    c = lab.costs(run)["throughput"]
    assert (c.seconds, c.trials, c.short, c.trial_seconds) == (30.0, 4, 1, 21.0)
    assert c.values == {pid: [20_000.0, 20_200.0]} and c.error == {pid: 150.0}
    text = lab.table(RATE_LIMIT, {"binary": {"throughput": c}, "fast": {"throughput": c}}, {"binary": 50, "fast": 25})
    assert "(median - known) / error" in text and "+0.00 in" in text  # median 20,100 = the known ceiling
    assert text.splitlines()[-1].split()[-1] == "0.500"  # run wall time, fast / binary
