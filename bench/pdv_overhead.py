#!/usr/bin/env python3
"""Cost of timing every frame (RFC 8219 7.3.1 PDV) in the software tester's data path, as a ratio.

A veth pair inside a private network namespace (no DUT), the tester pinned to one CPU: unpaced
phase-2 forward frames for ``--seconds``, counted by signature on the other end, once as a plain
trial (the reference) and once with ``Phase2Options(all_delays=True)`` (every valid frame's kernel
receive timestamp read and its delay counted in the histogram). The two alternate ``--repeat``
times in the same run; printed: valid frames per second of each (median, min, max) and the ratio
of the medians, PDV / plain. A ratio near 1 means timing every frame does not lower the tester's
ceiling. Needs root.

    sudo python bench/pdv_overhead.py [--seconds 1] [--repeat 5] [--cpu 1]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys

from natbench.plugins import Directions, Phase2Options, Port
from natbench.results import Direction
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan

MAC_A, MAC_B = "02:4e:42:bd:00:01", "02:4e:42:bd:00:02"


def sh(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespace, AF_PACKET)", file=sys.stderr)
        return 2
    ns = f"nb-pdvb-{os.getpid()}"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "-n", ns, "link", "add", "name", "px0", "type", "veth", "peer", "name", "px1")
        for dev, mac in (("px0", MAC_A), ("px1", MAC_B)):
            sh("ip", "-n", ns, "link", "set", "dev", dev, "address", mac, "up")
        t = SoftwareTester(Port("px0", MAC_A, MAC_B, ns), Port("px1", MAC_B, MAC_A, ns), cpus=[a.cpu], timeout=0.3)
        try:
            t.prepare(
                TrafficPlan(
                    Family.NAT44,
                    AddressPlan.default(Family.NAT44),
                    PortRange(1024, 2023),
                    PortRange(80, 89),
                    64,
                    seed=1,
                )
            )
            runs: dict[str, list[float]] = {"plain": [], "pdv": []}
            timed: list[int] = []
            for _ in range(a.repeat):
                for name, opts in (("plain", Phase2Options()), ("pdv", Phase2Options(all_delays=True))):
                    r = t.phase2(math.inf, a.seconds, Directions.FORWARD, opts)
                    c = r.counts[Direction.FORWARD]
                    runs[name].append(c.valid / a.seconds)
                    if name == "pdv":
                        timed.append(r.latency[Direction.FORWARD].samples - c.valid)
        finally:
            t.close()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    for name, v in runs.items():
        print(f"{name:6s} valid frames/s: median {statistics.median(v):,.0f}  min {min(v):,.0f}  max {max(v):,.0f}")
    ratio = statistics.median(runs["pdv"]) / statistics.median(runs["plain"])
    print(f"ratio pdv / plain (medians): {ratio:.3f}")
    print(f"frames timed minus frames valid, per pdv trial (0 = every frame timed): {timed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
