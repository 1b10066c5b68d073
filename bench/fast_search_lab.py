#!/usr/bin/env python3
"""The binary and the fast search on real lab DUTs, side by side: time and agreement of the results.

Runs lab campaigns (real namespaces, kernel NAT, the built-in tester) twice each with ``natbench run``, once
with ``algorithm: binary`` (the reference) and once with ``algorithm: fast`` for every search metric that offers
both, in the same run of this script, and prints per working point and metric the median result of each, their
difference against the search error, and per campaign the wall time of each run, its trials' time (sum of every
trial's start-to-end span) and the ratios fast / binary. Metrics that do not search (tear-down) are left out.

* ``campaigns/quickstart.yaml``: iptables NAT44 whose rates on a shared 2-CPU machine are bound by the tester's
  own ceiling, which moves with the machine's load: the two runs measure that ceiling at different times.
* ``campaigns/lab-rate-limit.yaml``: nftables NAT44 with enforced limits (20,000 pps per direction, 8,000 new
  connections/s) far below the tester: both searches must end at the limits, so their results must agree within
  the search error.

Needs root (it builds the lab). Run directories are written under ``--workdir`` (a temporary directory unless
given) and kept there.

    sudo python bench/fast_search_lab.py                 # both campaigns (about 15 minutes)
    sudo python bench/fast_search_lab.py --only lab-rate-limit
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import natbench  # noqa: E402
from natbench.campaign import load_campaign  # noqa: E402
from natbench.campaign.estimate import has_algorithm  # noqa: E402
from natbench.report.load import Run  # noqa: E402

CAMPAIGNS = ("quickstart", "lab-rate-limit")
"""The campaign files (under campaigns/) compared by default."""
ALGORITHMS = ("binary", "fast")
"""The reference first, then the new search."""


def variant(source: Path, algorithm: str, out: Path) -> tuple[Path, list[str]]:
    """A copy of the campaign at ``source`` with ``algorithm`` for every search metric that offers it, without
    the metrics that do not search; returns the file and the metrics it kept."""
    campaign = load_campaign(source)
    data: dict[str, Any] = yaml.safe_load(source.read_text())
    kept: list[str] = []
    for name in list(data["metrics"]):
        settings = campaign.metrics[name]
        if has_algorithm(settings, "fast") and has_algorithm(settings, "binary"):
            data["metrics"][name]["algorithm"] = algorithm
            kept.append(name)
        else:
            del data["metrics"][name]
    data.pop("output", None)
    path = out / f"{source.stem}-{algorithm}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, kept


def run(campaign: Path, run_dir: Path) -> float:
    """``natbench run`` of ``campaign`` into ``run_dir``; its wall time in seconds."""
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "natbench", "run", str(campaign), "-o", str(run_dir), "--no-progress"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"natbench run {campaign.name} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    return time.monotonic() - t0


def trial_seconds(r: Run) -> float:
    """Sum of every stored trial's start-to-end span."""
    t = r.trials
    return float((t["ended_at"] - t["started_at"]).sum())


def known_ceiling(campaign_file: Path, metric: str) -> float | None:
    """The rate per direction a full trial of ``metric`` passes at most on a DUT with the nftables-nat44 recipe's
    calibration limits (None without them): throughput ``limit_pps + limit_burst / duration`` (the token bucket
    holds ``limit_burst`` packets and refills at ``limit_pps``), cps ``limit_cps x N / (N - limit_burst)`` for a
    phase 1 of N connections."""
    campaign = load_campaign(campaign_file)
    params = campaign.testbed.duts[0].params
    burst = float(params.get("limit_burst", 100))
    point = campaign.points()[0]
    settings = campaign.settings_for(point, metric)
    if metric == "throughput" and params.get("limit_pps"):
        return float(params["limit_pps"]) + burst / float(getattr(settings, "duration", 60.0))
    if metric == "cps" and params.get("limit_cps"):
        n = campaign.traffic_plan(point).connections
        return float(params["limit_cps"]) * n / (n - burst)
    return None


def _medians(r: Run) -> dict[tuple[str, str], tuple[float, float]]:
    """(point id, metric) -> (median per direction, search error): the search error is per direction too."""
    out = {}
    for row in r.summary.reset_index().to_dict("records"):
        directions = max(1, int(row["directions"]))
        out[(str(row["point_id"]), str(row["metric"]))] = (float(row["median"]) / directions, float(row["error"]))
    return out


def agreement(first: Run, second: Run) -> tuple[int, int]:
    """(points whose medians agree within the first run's search error, points compared)."""
    a, b = _medians(first), _medians(second)
    shared = [k for k in a if k in b]
    return sum(abs(b[k][0] - a[k][0]) <= a[k][1] for k in shared), len(shared)


def compare(name: str, workdir: Path, again: bool = False) -> None:
    """Run campaign ``name`` with both algorithms and print the comparison; ``again``: run binary a second time
    after fast, as the yardstick of how well the campaign reproduces at all."""
    source = ROOT / "campaigns" / f"{name}.yaml"
    runs: dict[str, Run] = {}
    wall: dict[str, float] = {}
    metrics: list[str] = []
    for alg in ALGORITHMS:
        path, metrics = variant(source, alg, workdir)
        run_dir = workdir / f"{name}-{alg}"
        wall[alg] = run(path, run_dir)
        runs[alg] = natbench.load(run_dir)
    print(f"\n{name}: metrics {', '.join(metrics)}")
    medians = {alg: _medians(runs[alg]) for alg in ALGORITHMS}
    head = f"{'point':14}{'metric':12}{'binary':>12}{'fast':>12}{'fast-binary':>13}{'error':>9}  within error"
    print(head + f"{'known':>10}  binary, fast within (known - error, known]")
    within = total = 0
    for key, (a, error) in medians["binary"].items():
        if key not in medians["fast"]:
            continue
        b = medians["fast"][key][0]
        ok = abs(b - a) <= error
        within += ok
        total += 1
        agree = "yes" if ok else "NO"
        line = f"{key[0][:12]:14}{key[1]:12}{a:12,.0f}{b:12,.0f}{b - a:+13,.0f}{error:9,.0f}  {agree:12}"
        known = known_ceiling(source, key[1])
        if known is not None:
            marks = ["yes" if known - error < v <= known else "NO" for v in (a, b)]
            line += f"{known:10,.0f}  {marks[0]}, {marks[1]}"
        print(line)
    secs = {alg: trial_seconds(runs[alg]) for alg in ALGORITHMS}
    trials = {alg: len(runs[alg].trials) for alg in ALGORITHMS}
    print(f"{'':26}{'binary':>12}{'fast':>12}{'fast/binary':>13}")
    print(f"{'wall time (s)':26}{wall['binary']:12.1f}{wall['fast']:12.1f}{wall['fast'] / wall['binary']:13.3f}")
    print(f"{'trials time (s)':26}{secs['binary']:12.1f}{secs['fast']:12.1f}{secs['fast'] / secs['binary']:13.3f}")
    print(f"{'trials':26}{trials['binary']:12,}{trials['fast']:12,}{trials['fast'] / trials['binary']:13.3f}")
    print(f"results within the search error of binary's: {within} of {total}")
    if again:
        path, _ = variant(source, "binary", workdir)
        run(path, workdir / f"{name}-binary-again")
        agreed, n = agreement(runs["binary"], natbench.load(workdir / f"{name}-binary-again"))
        print(f"binary run again after fast (the campaign's own reproducibility): {agreed} of {n} within the error")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=CAMPAIGNS, action="append", help="compare only this campaign (repeatable)")
    ap.add_argument("--workdir", type=Path, help="where the run directories go (default: a temporary directory)")
    ap.add_argument("--again", action="store_true", help="run binary a second time: how well the campaign reproduces")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: builds the local lab (network namespaces, veth, iptables, nftables, conntrack)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="natbench-fast-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(__doc__.split("\n\n")[0])
    print(f"run directories: {workdir}")
    for name in args.only or CAMPAIGNS:
        compare(name, workdir, args.again)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
