#!/usr/bin/env python3
"""What reading a TRex trial's counters while it runs costs the server: phase-2 trials with and without the reads.

Runs, against the live TRex server that ``NATBENCH_TREX`` names (the variables of tests/test_trex_live.py: the MACs,
``NATBENCH_TREX_SOFTWARE``, ``NATBENCH_TREX_RESET_CMD``), a phase 1 and then bidirectional phase-2 trials at each
``--rates`` value, alternating trials without reads (the reference) and trials read every 20 ms for tail rates
(natbench.testers.trex.watch), ``--repetitions`` of each, in the same run. It prints per rate and mode the medians
of what TRex achieved (frames sent per second of sending, the slowest direction), the trials TRex itself judged
kept (``tester_ok``), TRex's busiest data-plane core (its one-second utilisation), the server process's CPU seconds
per trial (``--server-pid``: utime + stime from /proc, all its threads), this process's CPU seconds per trial, the
reads per trial and their round trip, and the overheads of a trial (start RPC, the final counter read), then the
ratio of the read trials to the reference.

    NATBENCH_TREX=127.0.0.1 NATBENCH_TREX_SOFTWARE=1 NATBENCH_TREX_PRIVATE_MAC=02:00:00:00:bb:01 \\
    NATBENCH_TREX_PUBLIC_MAC=02:00:00:00:bb:02 NATBENCH_TREX_RESET_CMD='ip netns exec dut-nb1 conntrack -F' \\
      ip netns exec trex-nb1 .venv/bin/python bench/trex_watch_cost.py --rates 20000,40000 --server-pid PID
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from natbench.plugins import Directions, Phase2Options  # noqa: E402
from natbench.results import PhaseResult  # noqa: E402
from natbench.testers.trex.backend import create  # noqa: E402
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan  # noqa: E402

PLAN = TrafficPlan(
    Family.NAT44,
    AddressPlan.default(Family.NAT44),
    PortRange(1024, 1223),
    PortRange(80, 129),
    64,
    seed=2025,
    responder_mode=ResponderMode.COMPUTE,
)
MODES = {"no reads": Phase2Options(), "reads (tail rates)": Phase2Options(tail_rates=True)}
"""The reference first: the same trial without reads."""


def server_cpu(pid: int | None) -> float | None:
    """CPU seconds (user + system, all threads) the process ``pid`` has used so far; None without a pid."""
    if pid is None:
        return None
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def trial(tester: Any, rate: float, duration: float, options: Phase2Options, pid: int | None) -> dict[str, Any]:
    """One phase-2 trial and what it cost."""
    cpu0, srv0 = time.process_time(), server_cpu(pid)
    r: PhaseResult = tester.phase2(rate, duration, Directions.BIDIRECTIONAL, options)
    srv1 = server_cpu(pid)
    extra = r.extra
    watch = extra.get("watch", {})
    return {
        "achieved": r.achieved_rate,
        "ok": r.tester_ok,
        "busiest": extra["trex"].get("busiest_core_pct"),
        "server_cpu": srv1 - srv0 if srv0 is not None and srv1 is not None else None,
        "client_cpu": time.process_time() - cpu0,
        "reads": watch.get("samples", 0),
        "read_ms": watch.get("read_ms_mean"),
        "read_ms_max": watch.get("read_ms_max"),
        "start_ms": extra["start_call_s"] * 1000,
        "wall_over_ms": (extra["wall_s"] - duration) * 1000,
        "lost": max(c.lost for c in r.counts.values()),
    }


def median(rows: list[dict[str, Any]], key: str) -> float | None:
    values = [float(x[key]) for x in rows if x.get(key) is not None]
    return statistics.median(values) if values else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="20000,40000", help="frames per second per direction, comma-separated")
    ap.add_argument("--duration", type=float, default=2.0, help="seconds per trial")
    ap.add_argument("--repetitions", type=int, default=5, help="trials per rate and mode")
    ap.add_argument("--server-pid", type=int, help="the TRex server's process id (its CPU time per trial)")
    args = ap.parse_args()
    env = os.environ
    missing = [n for n in ("NATBENCH_TREX", "NATBENCH_TREX_PRIVATE_MAC", "NATBENCH_TREX_PUBLIC_MAC") if not env.get(n)]
    if missing:
        sys.exit(f"{missing[0]} is not set (see the docstring)")
    tester = create(
        {
            "server": env["NATBENCH_TREX"],
            "private_dst_mac": env["NATBENCH_TREX_PRIVATE_MAC"],
            "public_dst_mac": env["NATBENCH_TREX_PUBLIC_MAC"],
            "software": env.get("NATBENCH_TREX_SOFTWARE") == "1",
        },
        None,
    )
    try:
        tester.prepare(PLAN)
        if env.get("NATBENCH_TREX_RESET_CMD"):
            subprocess.run(env["NATBENCH_TREX_RESET_CMD"], shell=True, check=True, timeout=60)
        tester.set_receive_timeout(0.2)
        tester.phase1(10_000.0, learn=False)
        print(f"load average at start: {os.getloadavg()[0]:.2f}")
        for rate in (float(x) for x in args.rates.split(",")):
            rows: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
            for _ in range(args.repetitions):
                for mode, options in MODES.items():  # interleaved: drift of the machine's load hits both alike
                    rows[mode].append(trial(tester, rate, args.duration, options, args.server_pid))
            print(f"\n{rate:,.0f} fps per direction, {args.duration:g} s trials, {args.repetitions} of each")
            keys = [
                ("achieved fps (median)", "achieved", "{:,.0f}"),
                ("TRex busiest core %", "busiest", "{:.1f}"),
                ("server CPU s / trial", "server_cpu", "{:.3f}"),
                ("client CPU s / trial", "client_cpu", "{:.3f}"),
                ("reads / trial", "reads", "{:.0f}"),
                ("read round trip ms", "read_ms", "{:.2f}"),
                ("slowest read ms", "read_ms_max", "{:.2f}"),
                ("start RPC ms", "start_ms", "{:.1f}"),
                ("idle seen after ms", "wall_over_ms", "{:.1f}"),
                ("lost frames (worst dir.)", "lost", "{:,.0f}"),
            ]
            names = list(MODES)
            print(f"{'':28}" + "".join(f"{m:>20}" for m in names) + f"{'reads / no reads':>18}")
            ok = [f"{sum(x['ok'] for x in rows[m])} of {len(rows[m])}" for m in names]
            print(f"{'kept the rate (tester_ok)':28}" + "".join(f"{c:>20}" for c in ok))
            for label, key, fmt in keys:
                meds = [median(rows[m], key) for m in names]
                cells = [fmt.format(v) if v is not None else "-" for v in meds]
                ratio = f"{meds[1] / meds[0]:.3f}" if meds[0] and meds[1] is not None else "-"
                print(f"{label:28}" + "".join(f"{c:>20}" for c in cells) + f"{ratio:>18}")
        print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    finally:
        tester.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
