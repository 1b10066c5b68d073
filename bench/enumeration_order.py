#!/usr/bin/env python3
"""Cost of the Feistel phase-1 order against the product order, measured in the same run.

Two measurements, each alternating the two orders ``--repeat`` times and printing the median
(min..max) and the ratio Feistel / product:

1. the mapping alone: the C data path's pair index of every frame index of a working point
   (``_engine.permute``, the same code the sender and the Responder run per frame), in ns per
   frame; the product order's mapping is the identity, so this is the Feistel network's whole cost;
2. phase 1 itself: the software tester sends every pair of the point unpaced (rate 0) through a
   veth pair in a private network namespace and its Responder learns every frame (the DUT is
   a plain wire; a netdev ingress rule drops the frames after the tester's sockets saw them),
   frames per second sent and learned. This is the number that matters: the mapping is a few
   ns against microseconds of kernel work per frame;
3. the Responder's table of pair indices for every frame (what validation and reverse traffic
   need after a fill): the C mapping against numpy's vectorised one (``PortEnumeration.pair_indices``).

Needs root for the second part (network namespace, AF_PACKET); ``--mapping-only`` skips it.

    sudo python bench/enumeration_order.py [--src 4000] [--dst 100] [--repeat 3] [--cpu N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

from natbench.plugins import Port
from natbench.testers.software import _engine
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import AddressPlan, EnumerationOrder, Family, PortEnumeration, PortRange, TrafficPlan

MAC_A, MAC_B = "02:4e:42:be:01:01", "02:4e:42:be:01:02"
ORDERS = (EnumerationOrder.FEISTEL, EnumerationOrder.PRODUCT)


def sh(*cmd: str, input: str | None = None) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, input=input).stdout


def make_pair(ns: str, cpu: int) -> None:
    """A veth pair bx0 <-> bx1 in ``ns``, receive work on ``cpu``, every frame dropped at ingress."""
    sh("ip", "netns", "add", ns)
    sh("ip", "-n", ns, "link", "add", "name", "bx0", "type", "veth", "peer", "name", "bx1")
    sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
    rules = "table netdev b {\n"
    for dev, mac in (("bx0", MAC_A), ("bx1", MAC_B)):
        sh("ip", "-n", ns, "link", "set", "dev", dev, "address", mac, "up")
        sh("ip", "netns", "exec", ns, "sh", "-c", f"echo {1 << cpu:x} > /sys/class/net/{dev}/queues/rx-0/rps_cpus")
        rules += f'  chain {dev} {{ type filter hook ingress device "{dev}" priority 0; policy drop; }}\n'
    sh("ip", "netns", "exec", ns, "nft", "-f", "-", input=rules + "}\n")


def fmt(values: list[float], unit: float, suffix: str) -> str:
    return f"{statistics.median(values) / unit:8.3f}{suffix} [{min(values) / unit:.3f}..{max(values) / unit:.3f}]"


def mapping_cost(e: PortEnumeration, repeat: int) -> dict[EnumerationOrder, list[float]]:
    """ns per frame of the data path's pair-index computation over every frame of the point."""
    out = np.zeros(e.size, dtype=np.uint32)
    codes = {EnumerationOrder.FEISTEL: _engine.ORDER_FEISTEL, EnumerationOrder.PRODUCT: _engine.ORDER_PRODUCT}
    times: dict[EnumerationOrder, list[float]] = {o: [] for o in ORDERS}
    for _ in range(repeat):
        for order in ORDERS:
            t0 = time.perf_counter()
            _engine.permute(codes[order], e.size, e.permutation_seed, out)
            times[order].append((time.perf_counter() - t0) / e.size * 1e9)
    return times


def phase1_rates(
    tester: SoftwareTester, plan: TrafficPlan, repeat: int
) -> tuple[dict[EnumerationOrder, list[float]], dict[EnumerationOrder, list[float]]]:
    sent: dict[EnumerationOrder, list[float]] = {o: [] for o in ORDERS}
    learned: dict[EnumerationOrder, list[float]] = {o: [] for o in ORDERS}
    for _ in range(repeat):
        for order in ORDERS:
            tester.enumeration = order
            tester.prepare(plan)
            r = tester.phase1(0.0, learn=True)
            span = r.duration or float("nan")
            sent[order].append(r.counts[next(iter(r.counts))].sent / span)
            learned[order].append((r.learned or 0) / span)
            if r.extra.get("enumeration") != str(order):
                raise SystemExit(f"the trial recorded order {r.extra.get('enumeration')!r}, not {order}")
    return sent, learned


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", type=int, default=4000, help="source ports |S|")
    ap.add_argument("--dst", type=int, default=100, help="destination ports |D|")
    ap.add_argument("--repeat", type=int, default=3, help="measurements per order (alternating)")
    ap.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1, help="tester CPU (and veth receive work)")
    ap.add_argument("--mapping-only", action="store_true", help="skip the phase-1 measurement (no root needed)")
    args = ap.parse_args()
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(10000, 10000 + args.src - 1),
        PortRange(1000, 1000 + args.dst - 1),
        64,
        seed=1,
    )
    e = PortEnumeration(plan.src_ports, plan.dst_ports, plan.seed, EnumerationOrder.FEISTEL)
    perm = e.permutation
    assert perm is not None
    print(
        f"{args.src} x {args.dst} = {e.size} pairs, Feistel domain 2**{perm.bits} ({2**perm.bits / e.size:.3f} x N),"
        f" {args.repeat} x each order, load average {os.getloadavg()[0]:.2f}"
    )
    cost = mapping_cost(e, args.repeat)
    f, p = (statistics.median(cost[o]) for o in ORDERS)
    print(f"mapping (ns/frame)   feistel {fmt(cost[ORDERS[0]], 1, '')}  product {fmt(cost[ORDERS[1]], 1, '')}")
    print(f"                     ratio feistel / product {f / p:.2f}, difference {f - p:.1f} ns per frame")
    c_s, np_s = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        _engine.permute(_engine.ORDER_FEISTEL, e.size, e.permutation_seed, np.empty(e.size, dtype=np.uint32))
        c_s.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        e.pair_indices(np.arange(e.size))
        np_s.append(time.perf_counter() - t0)
    print(
        f"pair table (s)       C {fmt(c_s, 1, '')}  numpy {fmt(np_s, 1, '')}  ratio numpy / C "
        f"{statistics.median(np_s) / statistics.median(c_s):.1f}"
    )
    if args.mapping_only:
        return 0
    if os.geteuid() != 0:
        print("enumeration_order: the phase-1 measurement needs root (or pass --mapping-only)", file=sys.stderr)
        return 2
    ns = f"nb-enum-{os.getpid()}"
    make_pair(ns, args.cpu)
    try:
        tester = SoftwareTester(
            Port("bx0", MAC_A, MAC_B, ns), Port("bx1", MAC_B, MAC_A, ns), cpus=[args.cpu], timeout=0.2
        )
        try:
            sent, learned = phase1_rates(tester, plan, args.repeat)
        finally:
            tester.close()
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)
    for name, values in (("sent", sent), ("learned", learned)):
        f, p = (statistics.median(values[o]) for o in ORDERS)
        # each Feistel run against the product run right after it: robust against load that drifts during the run
        paired = [a / b for a, b in zip(values[ORDERS[0]], values[ORDERS[1]], strict=True)]
        print(
            f"phase 1 {name:<8} fps  feistel {fmt(values[ORDERS[0]], 1e6, ' M')}  product "
            f"{fmt(values[ORDERS[1]], 1e6, ' M')}  ratio of medians {f / p:.3f}, median of paired ratios "
            f"{statistics.median(paired):.3f} [{min(paired):.3f}..{max(paired):.3f}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
