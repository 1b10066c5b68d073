"""How long DUT steps take through each executor, and what sending a step as one script saves.

Runs the ``facts`` step of the iptables-nat44 recipe (11 commands) and ``count_connections``
(1 command) against a throw-away network namespace: locally (``ip netns exec``), and through a
local sshd (started here with its own keys, see tests/localsshd.py) one command per round trip
and one script per step. Prints the median of N runs and ratios against the local executor
measured in the same run. Needs root.

    sudo python bench/dut_step_roundtrips.py [-n 10]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from localsshd import local_sshd

from natbench.duts.executors import NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.plugins import Executor


def median_seconds(fn: Callable[[], object], n: int) -> float:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=10, help="runs per measurement (median)")
    args = ap.parse_args()
    ns = f"nbbench{int(time.time()) % 100000}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    subprocess.run(["ip", "-n", ns, "link", "add", "in0", "type", "veth", "peer", "name", "out0"], check=True)
    recipe = load_recipe("iptables-nat44")
    params = {"private_if": "in0", "public_if": "out0"}
    try:
        with tempfile.TemporaryDirectory() as d, local_sshd(Path(d)) as sshd:
            ssh = sshd.executor()
            rows: list[tuple[str, Executor, bool]] = [
                ("local netns, one script per step", NetnsExecutor(ns), True),
                ("local netns, one call per command", NetnsExecutor(ns), False),
                ("ssh + netns, one script per step", NetnsExecutor(ns, ssh), True),
                ("ssh + netns, one call per command", NetnsExecutor(ns, ssh), False),
            ]
            results = []
            for label, ex, batch in rows:
                dut = RecipeDut("bench", recipe, ex, params, batch=batch)
                dut.run_step("facts", check=False)  # warm up (SSH connection)
                facts = median_seconds(lambda d=dut: d.run_step("facts", check=False), args.n)
                count = median_seconds(lambda d=dut: d.count_connections(), args.n)
                results.append((label, facts, count))
            ssh.close()
        ref_f, ref_c = results[0][1], results[0][2]
        print(f"median of {args.n} runs; ratio = time / (local netns, one script per step)")
        print(f"{'executor':40} {'facts (11 cmds)':>16} {'ratio':>6} {'count (1 cmd)':>14} {'ratio':>6}")
        for label, f, c in results:
            print(f"{label:40} {f * 1000:13.1f} ms {f / ref_f:6.2f} {c * 1000:11.1f} ms {c / ref_c:6.2f}")
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


if __name__ == "__main__":
    main()
