#!/usr/bin/env python3
"""The binary search, the fast search and MLRsearch on real lab DUTs, side by side: time and results.

Runs lab campaigns (real namespaces, kernel NAT, the built-in tester) once per algorithm with ``natbench run``, in
the same run of this script: ``algorithm: binary`` (the reference), ``fast`` and ``mlr`` for every search metric that
offers it (MLRsearch has no cps search: the ``mlr`` run measures the metrics that offer it only). It prints per
working point and metric the median of each, its distance from the known ceiling in errors where the campaign has
one, and per metric the time it took (the sum over its repetitions of first trial start to last trial end, fills
included), its trials and trial seconds (the sum of the stored trials' durations), then each run's wall time, with
the ratios of each algorithm to binary. Metrics that do not search (tear-down) are left out.

* ``campaigns/lab-rate-limit.yaml``: nftables NAT44 with enforced limits (20,000 pps per direction, 8,000 new
  connections/s, token bucket 1,000) far below the tester: every search must end in ``(ceiling - error, ceiling]``
  of the known ceilings (20,100 fps per direction for 10 s trials, 8,889 cps).
* ``campaigns/quickstart.yaml``: iptables NAT44 whose rates on a shared 2-CPU machine are bound by the tester's
  own ceiling, which moves with the machine's load: the runs measure that ceiling at different times.

``mlr`` runs MLRsearch with its default ``rfc2544`` preset (final trials of the metric's ``duration``, exceed ratio
0, initial trials of ``short_duration``) and, where the ceiling is known, a relative width of ``error / (ceiling +
error)``: its final width (relative to the upper bound) is then at most the other searches' ``error`` near the
ceiling (the preset's own ``error / upper`` would search 2.5 times finer on lab-rate-limit's range). ``--repetitions
N`` sets every kept metric's repetitions (the campaign's own: 5 for lab-rate-limit).

Needs root (it builds the lab). Run directories are written under ``--workdir`` (a temporary directory unless
given) and kept there.

    # a smoke test: 2 repetitions (7 minutes on a busy 2-CPU machine: binary 209 s, fast 136 s, mlr 87 s)
    sudo .venv/bin/python bench/fast_search_lab.py --only lab-rate-limit --repetitions 2
    # the full comparison on a quiet machine, 10 repetitions of cps and throughput (about 30 minutes: binary
    # ~17 min, fast ~6 min, mlr ~8 min for throughput alone):
    sudo .venv/bin/python bench/fast_search_lab.py --only lab-rate-limit --repetitions 10 --workdir /tmp/nb-lab10
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import natbench  # noqa: E402
from natbench.campaign import load_campaign  # noqa: E402
from natbench.campaign.estimate import has_algorithm  # noqa: E402
from natbench.metrics.settings import SearchSettings  # noqa: E402
from natbench.report.load import Run  # noqa: E402

CAMPAIGNS = ("quickstart", "lab-rate-limit")
"""The campaign files (under campaigns/) compared by default."""
ALGORITHMS = ("binary", "fast", "mlr")
"""The reference first, then the fast search and MLRsearch."""


def variant(source: Path, algorithm: str, out: Path, repetitions: int | None = None) -> tuple[Path, list[str]]:
    """A copy of the campaign at ``source`` with ``algorithm`` for every search metric that offers it (the others
    left out), ``repetitions`` for each when given, and for ``mlr`` a relative width of ``error / (known ceiling +
    error)`` where the ceiling is known; returns the file and the metrics it kept."""
    campaign = load_campaign(source)
    data: dict[str, Any] = yaml.safe_load(source.read_text())
    kept: list[str] = []
    for name in list(data["metrics"]):
        settings = campaign.metrics[name]
        if has_algorithm(settings, algorithm) and has_algorithm(settings, "binary"):
            section = data["metrics"][name]
            section["algorithm"] = algorithm
            if repetitions is not None:
                section["repetitions"] = repetitions
            known = known_ceiling(source, name)
            if algorithm == "mlr" and known is not None and isinstance(settings, SearchSettings):
                width = float(settings.error) / (known + float(settings.error))
                section["mlr"] = {"preset": "rfc2544", "relative_width": width}
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


@dataclass
class MetricCost:
    """What one metric of one run cost."""

    seconds: float = 0.0
    """Sum over its repetitions of first trial start to last trial end (fills included)."""
    trials: int = 0
    """Stored trials (fills included)."""
    trial_seconds: float = 0.0
    """Sum of the stored trials' durations (traffic time)."""
    short: int = 0
    """Short trials (fast: narrowing and probes; mlr: shorter than the final trial duration)."""
    stopped: int = 0
    """Full trials the tester ended early because they had failed (fast: ``stop_failed``)."""
    values: dict[str, list[float]] = field(default_factory=dict)
    """Point id -> the repetitions' values (per direction)."""
    error: dict[str, Any] = field(default_factory=dict)
    """Point id -> the median of the repetitions' final widths (``error``)."""


def costs(r: Run) -> dict[str, MetricCost]:
    """Per metric: time, trials, trial seconds, short trials and the values (per direction) of ``r``."""
    out: dict[str, MetricCost] = {}
    for metric, rows in r.trials.groupby("metric", observed=True):
        c = out.setdefault(str(metric), MetricCost())
        per_rep = rows.groupby(["point_id", "repetition"], observed=True)
        c.seconds = float((per_rep["ended_at"].max() - per_rep["started_at"].min()).sum())
        c.trials = len(rows)
        c.trial_seconds = float(sum(float(e.get("duration") or 0.0) for e in rows["extra"]))
        c.short = sum(1 for e in rows["extra"] if e.get("search_trial") == "short")
        c.stopped = sum(1 for e in rows["extra"] if e.get("stopped"))
    for row in r.results.to_dict("records"):
        c = out.setdefault(str(row["metric"]), MetricCost())
        pid = str(row["point_id"])
        if row["value"] == row["value"]:  # NaN: no value (failed, or no passing rate)
            c.values.setdefault(pid, []).append(float(row["value"]))
        if row["error"] == row["error"]:
            c.error.setdefault(pid, []).append(float(row["error"]))
    for c in out.values():
        c.error = {pid: statistics.median(v) for pid, v in c.error.items()}
    return out


def compare(name: str, workdir: Path, repetitions: int | None = None, again: bool = False) -> None:
    """Run campaign ``name`` with each algorithm and print the comparison; ``again``: run binary a second time
    after the others, as the yardstick of how well the campaign reproduces at all."""
    source = ROOT / "campaigns" / f"{name}.yaml"
    wall: dict[str, float] = {}
    cost: dict[str, dict[str, MetricCost]] = {}
    kept: dict[str, list[str]] = {}
    for alg in ALGORITHMS:
        path, kept[alg] = variant(source, alg, workdir, repetitions)
        run_dir = workdir / f"{name}-{alg}"
        wall[alg] = run(path, run_dir)
        cost[alg] = costs(natbench.load(run_dir))
    print(f"\n{name}: " + "; ".join(f"{alg}: {', '.join(kept[alg])}" for alg in ALGORITHMS))
    print(table(source, cost, wall))
    if again:
        path, _ = variant(source, "binary", workdir, repetitions)
        run(path, workdir / f"{name}-binary-again")
        again_cost = costs(natbench.load(workdir / f"{name}-binary-again"))
        agreed = total = 0
        for m, c in cost["binary"].items():
            for pid, vals in c.values.items():
                other = again_cost.get(m, MetricCost()).values.get(pid)
                if other:
                    total += 1
                    agreed += abs(statistics.median(other) - statistics.median(vals)) <= c.error.get(pid, 0.0)
        print(f"binary run again (the campaign's own reproducibility): {agreed} of {total} medians within the error")


def table(source: Path, cost: dict[str, dict[str, MetricCost]], wall: dict[str, float]) -> str:
    """The comparison's lines: per metric and point the medians and their distance from the known ceiling, per
    metric the costs, then the runs' wall times; ratios to binary."""
    algs = list(cost)
    lines = [f"{'':30}" + "".join(f"{a:>18}" for a in algs) + "".join(f"{a + '/binary':>14}" for a in algs[1:])]

    def row(label: str, cells: list[str], ratios: tuple[str, ...] | list[str] = ()) -> None:
        lines.append(f"{label:30}" + "".join(f"{c:>18}" for c in cells) + "".join(f"{r:>14}" for r in ratios))

    def ratio(values: list[float]) -> list[str]:
        return [f"{v / values[0]:.3f}" if values[0] else "-" for v in values[1:]]

    for m in cost["binary"]:
        known = known_ceiling(source, m)
        row(f"{m}" + (f" (known ceiling {known:,.0f})" if known else ""), ["" for _ in algs])
        subs = [cost[a].get(m) for a in algs]
        for pid in cost["binary"][m].values:
            meds = [statistics.median(s.values[pid]) if s and s.values.get(pid) else None for s in subs]
            row(f"  {pid[:10]} median", [f"{v:,.0f}" if v is not None else "-" for v in meds])
            err = cost["binary"][m].error.get(pid)
            if known is not None and err:
                marks = []
                for v in meds:
                    if v is None:
                        marks.append("-")
                        continue
                    inside = "in" if known - err < v <= known else "OUT"
                    marks.append(f"{(v - known) / err:+.2f} {inside}")
                row("    (median - known) / error", marks)
            spans = [(min(s.values[pid]), max(s.values[pid])) if s and s.values.get(pid) else None for s in subs]
            row("    min .. max", [f"{v[0]:,.0f} .. {v[1]:,.0f}" if v else "-" for v in spans])
        present = [s for s in subs if s is not None]
        if len(present) == len(subs):
            row("  metric time (s)", [f"{s.seconds:,.1f}" for s in present], ratio([s.seconds for s in present]))
            row("  trials", [f"{s.trials:,}" for s in present], ratio([float(s.trials) for s in present]))
            row("    of them short", [f"{s.short:,}" for s in present])
            row("    of them stopped early", [f"{s.stopped:,}" for s in present])
            tsec = [s.trial_seconds for s in present]
            row("  trial seconds", [f"{v:,.1f}" for v in tsec], ratio(tsec))
        else:
            row("  metric time (s)", [f"{s.seconds:,.1f}" if s else "-" for s in subs])
            row("  trials", [f"{s.trials:,}" if s else "-" for s in subs])
    w = [wall[a] for a in algs]
    row("run wall time (s)", [f"{v:,.1f}" for v in w], ratio(w))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=CAMPAIGNS, action="append", help="compare only this campaign (repeatable)")
    ap.add_argument("--workdir", type=Path, help="where the run directories go (default: a temporary directory)")
    ap.add_argument("--repetitions", type=int, help="repetitions of every compared metric (default: the campaign's)")
    ap.add_argument("--again", action="store_true", help="run binary a second time: how well the campaign reproduces")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("needs root: builds the local lab (network namespaces, veth, iptables, nftables, conntrack)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="natbench-fast-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(__doc__.split("\n\n")[0])
    print(f"run directories: {workdir}")
    for name in args.only or CAMPAIGNS:
        compare(name, workdir, args.repetitions, args.again)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
