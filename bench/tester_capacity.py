#!/usr/bin/env python3
"""Capacity of the software tester alone, against a minimal C reference measured in the same run.

A veth pair inside a private network namespace (no DUT): the tester sends
unpaced phase-2 forward frames from one end and counts them, by signature,
on the other; the reference (bench/blaster.c, compiled here: fixed prebuilt
frame, sendmmsg batches of 64, recvmmsg counting, nothing else) does the
same through the same pair. Both are pinned to the same CPU and the receive
processing of the veth (RPS) is steered to that CPU, as in the lab. Frame
sizes 64 and 1518; each measurement is repeated and the median is printed
with min and max. On a machine with two or more CPUs the tester is also
measured with two (``--second-cpu``): it then sends on one and receives on
the other (the receiving veth's RPS steered there), as the lab does when it
gives the tester two CPUs; the reference stays on one CPU. Needs root.

    sudo python bench/tester_capacity.py [--seconds 2] [--repeat 3] [--cpu 1] [--second-cpu 0] [--dut-fps N]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from natbench.plugins import Directions, Phase2Options, Port
from natbench.testers.software.tester import SoftwareTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan

HERE = Path(__file__).resolve().parent
MAC_A, MAC_B = "02:4e:42:be:00:01", "02:4e:42:be:00:02"


def sh(*cmd: str, input: str | None = None) -> str:
    return subprocess.run(cmd, check=True, capture_output=True, text=True, input=input).stdout


def steer(ns: str, dev: str, cpu: int) -> None:
    """Receive processing (RPS) of ``dev`` on ``cpu``."""
    sh("ip", "netns", "exec", ns, "sh", "-c", f"echo {1 << cpu:x} > /sys/class/net/{dev}/queues/rx-0/rps_cpus")


def make_pair(ns: str, cpu: int) -> None:
    sh("ip", "netns", "add", ns)
    sh("ip", "-n", ns, "link", "add", "name", "bx0", "type", "veth", "peer", "name", "bx1")
    sh("ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1")
    for dev, mac in (("bx0", MAC_A), ("bx1", MAC_B)):
        sh("ip", "-n", ns, "link", "set", "dev", dev, "address", mac, "up")
        steer(ns, dev, cpu)
    rules = "table netdev b {\n"
    for dev in ("bx0", "bx1"):
        rules += f'  chain {dev} {{ type filter hook ingress device "{dev}" priority 0; policy drop; }}\n'
    sh("ip", "netns", "exec", ns, "nft", "-f", "-", input=rules + "}\n")


def run_tester(tester: SoftwareTester, seconds: float) -> tuple[float, float]:
    r = tester.phase2(math.inf, seconds, Directions.FORWARD, Phase2Options())
    c = next(iter(r.counts.values()))
    return c.sent / r.duration, c.valid / r.duration


def run_reference(binary: Path, ns: str, cpu: int, size: int, seconds: float) -> tuple[float, float]:
    # same CPU and the same scheduling class as the tester's data path (SCHED_FIFO 10)
    out = sh("taskset", "-c", str(cpu), "chrt", "-f", "10", str(binary), ns, "bx0", "bx1", str(size), str(seconds))
    f = dict(kv.split("=") for kv in out.split())
    t = float(f["seconds"])
    return int(f["sent"]) / t, int(f["received"]) / t


def fmt(values: list[float]) -> str:
    return f"{statistics.median(values) / 1e6:7.3f} M [{min(values) / 1e6:.3f}..{max(values) / 1e6:.3f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement")
    ap.add_argument("--repeat", type=int, default=3, help="measurements per tool and size (alternating)")
    ap.add_argument(
        "--cpu",
        type=int,
        default=(os.cpu_count() or 1) - 1,
        help="CPU for the tester, the reference and the veth receive work",
    )
    ap.add_argument(
        "--second-cpu",
        type=int,
        default=0 if (os.cpu_count() or 1) > 1 else -1,
        help="second tester CPU for the two-CPU measurement (receiving); -1: skip it",
    )
    ap.add_argument("--sizes", default="64,1518", help="IPv4 frame sizes")
    ap.add_argument(
        "--dut-fps",
        type=float,
        default=0.0,
        help="throughput the quickstart measured for the DUT (all frames/s) to check the 3x target",
    )
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("tester_capacity: needs root (network namespaces, AF_PACKET)", file=sys.stderr)
        return 2
    ns = f"nb-bench-{os.getpid()}"
    with tempfile.TemporaryDirectory() as tmp:
        binary = Path(tmp) / "blaster"
        sh("gcc", "-O2", "-Wall", "-o", str(binary), str(HERE / "blaster.c"))
        make_pair(ns, args.cpu)
        try:
            ports = (Port("bx0", MAC_A, MAC_B, ns), Port("bx1", MAC_B, MAC_A, ns))
            # one tester (every open AF_PACKET socket on a port is charged for each frame): its CPU set is
            # switched between the one-CPU and the two-CPU measurement
            tester = SoftwareTester(*ports, cpus=[args.cpu], timeout=0.2)
            two_cpus = args.second_cpu >= 0 and args.second_cpu != args.cpu
            print(
                f"kernel {os.uname().release}, cpu {args.cpu} of {os.cpu_count()}, {args.seconds} s x {args.repeat}"
                f", load average {os.getloadavg()[0]:.2f}"
            )
            print(f"{'frame':>5} | {'':13} | {'tester fps':>28} | {'reference fps':>28} | ratio")
            for size in (int(s) for s in args.sizes.split(",")):
                plan = TrafficPlan(
                    Family.NAT44,
                    AddressPlan.default(Family.NAT44),
                    PortRange(10000, 19999),
                    PortRange(1000, 1099),
                    size,
                    seed=1,
                )
                tester.prepare(plan)
                t_s, t_r, r_s, r_r, w_s, w_r = [], [], [], [], [], []
                for _ in range(args.repeat):
                    tester.cpus = (args.cpu,)
                    s, r = run_tester(tester, args.seconds)
                    t_s.append(s)
                    t_r.append(r)
                    s, r = run_reference(binary, ns, args.cpu, size, args.seconds)
                    r_s.append(s)
                    r_r.append(r)
                    if two_cpus:
                        tester.cpus = (args.cpu, args.second_cpu)
                        steer(ns, "bx1", args.second_cpu)
                        s, r = run_tester(tester, args.seconds)
                        steer(ns, "bx1", args.cpu)
                        w_s.append(s)
                        w_r.append(r)
                    time.sleep(0.1)
                for what, a, b in (("sent", t_s, r_s), ("received", t_r, r_r)):
                    ratio = statistics.median(a) / statistics.median(b)
                    print(f"{size:>5} | {what:13} | {fmt(a):>28} | {fmt(b):>28} | {100 * ratio:5.1f} %")
                if two_cpus:
                    for what, a, b in (("sent", w_s, r_s), ("received", w_r, r_r)):
                        ratio = statistics.median(a) / statistics.median(b)
                        label = f"{what} 2cpu"
                        print(f"{size:>5} | {label:13} | {fmt(a):>28} | {fmt(b):>28} | {100 * ratio:5.1f} %")
                if args.dut_fps:
                    for label, rx in (("1 CPU", t_r), ("2 CPUs", w_r)):
                        if rx:
                            ratio = statistics.median(rx) / args.dut_fps
                            print(
                                f"{size:>5} | tester ({label}) received / DUT throughput ({args.dut_fps:.0f} fps)"
                                f" = {ratio:.1f}x"
                            )
            tester.close()
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
