"""The pytest experiment of docs/examples runs on the real local lab, and its results load.

pytest runs docs/examples/test_lab_experiment.py in a child process with the natbench
plugin (loaded through its entry point), real network namespaces, iptables and conntrack,
and the built-in software tester; then the run directory it wrote is read with
``natbench.load`` and rendered by ``natbench report``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from lab_helpers import need_lab
from report_cli import report_text

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"

pytestmark = pytest.mark.lab


def test_lab_experiment_runs_and_its_results_load(tmp_path: Path) -> None:
    need_lab()
    results = tmp_path / "results"
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rA",
            str(EXAMPLES / "test_lab_experiment.py"),
            "--nb-testbed",
            str(EXAMPLES / "lab-testbed.yaml"),
            "--nb-results",
            str(results),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    for test_id in ("test_connection_establishment_rate[1k]", "test_connection_establishment_rate[4k]"):
        assert f"PASSED docs/examples/test_lab_experiment.py::{test_id}" in proc.stdout
    run_dir = (results / "latest").resolve()
    assert f"natbench report {run_dir}" in proc.stdout.replace(str(results / run_dir.name), str(run_dir))

    import natbench

    run = natbench.load(run_dir)
    assert run.meta.status == "complete"
    assert run.meta.tester.kind, "tester facts are recorded"
    assert run.meta.duts, "DUT facts are recorded"
    assert set(run.metrics) == {"cps", "throughput", "teardown"}
    # cps at 1k and 4k, throughput at 1k, tear-down at 64k (fewer connections are too few to time on a busy machine)
    assert sorted(run.points["connections"]) == [1000, 4000, 64000]
    assert set(run.points["label"]) == {"iptables-1k", "iptables-4k", "iptables-64k"}
    by_metric = run.results.groupby("metric")["value"].count()
    assert by_metric["cps"] == 4  # 2 points x 2 repetitions, every one finished
    assert by_metric["throughput"] == 1
    teardown = run.results[run.results["metric"] == "teardown"]
    assert len(teardown) == 3 and by_metric["teardown"] >= 1  # a rare empty-table delete spike fails one (too few)
    cps = run.results[run.results["metric"] == "cps"]["value"]
    assert (cps > 0).all() and (cps <= 40_000).all()
    # every trial was stored with a verdict, and phase 1 of the passing cps steps delivered every frame
    assert set(run.trials["verdict"]) <= {"pass", "fail", "invalid"}
    assert len(run.trials) >= 4 * 3
    # the lab the session built is gone again
    lab_namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    pid_labs = [ln for ln in lab_namespaces.splitlines() if ln.startswith("nb-nbpt")]
    assert not [ln for ln in pid_labs if any(ln.startswith(f"nb-nbpt{p}-") for p in _child_pids(proc))]

    report = report_text(run_dir)
    assert "iptables-4k" in report and "tear" in report.lower()


def _child_pids(proc: subprocess.CompletedProcess[str]) -> list[int]:
    """The pid the child session used in its lab name (its run directory ends in -<pid>)."""
    pids = []
    for line in proc.stdout.splitlines():
        if "stored in" in line:
            pids.append(int(line.rstrip().rsplit("-", 1)[1]))
    return pids
