"""What a distributed run costs per point, and what several testbeds save on a seed campaign.

1. Overhead: the same small campaign (4 points, cps) with fake testbeds, measured locally (the reference,
   ``run_campaign``) and through Dask (a scheduler in this process, ONE worker process, so nothing runs in
   parallel), each with 1 and with 4 repetitions per point, in the same run. The difference is the
   distributed overhead; the two repetition counts split it into a part per point (submit, begin, end) and
   a part per record (one acknowledged round trip per trial / result). The fakes measure in microseconds,
   so the overhead is then set against a real point's own duration: ``natbench plan``'s estimate for the
   shortest point of each seed campaign, with the number of trials the plan counts there.
2. Simulated wall time of seed campaigns on 1, 2, 4, 8 testbeds: ``natbench plan``'s per-point estimates,
   each point given, in campaign order, to the testbed that is free first (what Dask does with one
   ``testbed-class`` unit per worker).

    python bench/distributed_overhead.py [--rounds 3]
"""

from __future__ import annotations

import argparse
import heapq
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from distributed import Client, LocalCluster  # noqa: E402
from distributed_helpers import fake_build, small_campaign  # noqa: E402

from natbench.campaign import load_campaign  # noqa: E402
from natbench.campaign.estimate import estimate  # noqa: E402
from natbench.run.distributed import run_distributed  # noqa: E402
from natbench.run.runner import run_campaign  # noqa: E402

SEEDS = [
    "seed000-fig8-jool-connections.yaml",
    "seed004-table5-464xlat-connections.yaml",
    "seed000-fig2-iptables-cores.yaml",
    "seed001-pf-connections.yaml",
]


def _records(run_dir: Path) -> int:
    return sum(1 for _ in (run_dir / "trials.jsonl").open())


def measure_overhead(rounds: int) -> tuple[float, float]:
    """(seconds per point, seconds per record) of the distributed path over the local one."""
    tmp = Path(tempfile.mkdtemp(prefix="nb-dist-bench-"))
    rows: list[tuple[int, int, float]] = []  # (points, records, extra seconds)
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp", host="127.0.0.1") as c:
        env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
        helper = ROOT / "tests" / "distributed_helpers.py"
        proc = subprocess.Popen([sys.executable, str(helper), c.scheduler_address, "a", "fake-x"], env=env)
        try:
            with Client(c, set_as_default=False) as client:
                client.wait_for_workers(1, timeout=60)
                (tmp / "warm").mkdir()
                run_distributed(small_campaign(tmp / "warm"), client, tmp / "warm" / "run")  # imports, worker client
                for i in range(rounds):
                    for reps in (1, 4):
                        base = tmp / f"r{i}-{reps}"
                        base.mkdir()
                        path = small_campaign(base, repetitions=reps)
                        t0 = time.perf_counter()
                        local = run_campaign(path, base / "local", testbed=fake_build(None), sleep=lambda s: None)
                        t1 = time.perf_counter()
                        dist = run_distributed(path, client, base / "dist")
                        t2 = time.perf_counter()
                        assert _records(local.path) == _records(dist.path)
                        rows.append((len(local.points), _records(dist.path), (t2 - t1) - (t1 - t0)))
                        print(
                            f"  {reps} rep(s)/point: local {t1 - t0:6.3f} s, distributed {t2 - t1:6.3f} s,"
                            f" {_records(dist.path)} records, 4 points"
                        )
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    # extra = points * per_point + records * per_record: the two repetition counts (same points) give both
    one = statistics.median(x for p, r, x in rows if r == min(r for _, r, _ in rows))
    four = statistics.median(x for p, r, x in rows if r == max(r for _, r, _ in rows))
    r1 = min(r for _, r, _ in rows)
    r4 = max(r for _, r, _ in rows)
    per_record = (four - one) / (r4 - r1)
    per_point = max(0.0, (one - per_record * r1) / 4)
    return per_point, per_record


def simulate(seconds: list[float], testbeds: int) -> float:
    """Wall time when each point (in order) goes to the testbed that is free first."""
    free = [0.0] * testbeds
    heapq.heapify(free)
    for s in seconds:
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="measurements of each repetition count (median)")
    args = ap.parse_args()

    print("1. distributed overhead against the local run (fake testbeds, one worker process):")
    per_point, per_record = measure_overhead(args.rounds)
    print(f"  overhead: {per_point * 1000:.1f} ms per point + {per_record * 1000:.1f} ms per record (trial or result)")
    print()
    print("  against the shortest point of each seed campaign (natbench plan's estimate):")
    print(f"  {'campaign':<42} {'point':>10} {'trials':>7} {'overhead':>9} {'ratio':>8}")
    for name in SEEDS:
        est = estimate(load_campaign(ROOT / "campaigns" / name))
        shortest = min(est.points, key=lambda p: p.seconds)
        records = shortest.trials + sum(m.repetitions for m in shortest.metrics)
        over = per_point + per_record * records
        print(
            f"  {name:<42} {shortest.seconds:>9.0f}s {shortest.trials:>7} {over:>8.2f}s"
            f" {100 * over / shortest.seconds:>7.3f}%"
        )
    print()
    print("2. simulated wall time (natbench plan's per-point estimates, points in campaign order):")
    print(f"  {'campaign':<42} " + " ".join(f"{n:>2} testbed(s)   " for n in (1, 2, 4, 8)))
    for name in SEEDS:
        est = estimate(load_campaign(ROOT / "campaigns" / name))
        seconds = [p.seconds for p in est.points]
        one = simulate(seconds, 1)
        cells = []
        for n in (1, 2, 4, 8):
            wall = simulate(seconds, n)
            cells.append(f"{wall / 86400:6.2f} d x{one / wall:4.2f}")
        print(f"  {name:<42} " + "  ".join(cells) + f"   ({len(seconds)} points, longest {max(seconds) / 86400:.2f} d)")


if __name__ == "__main__":
    main()
