"""How long natbench takes to compile TRex programs and how big the RPC payload is.

Prints, per port-range size: compile time of the pure program, time to build
and serialise the STLStream objects, the JSON size, and as a reference the
time json.dumps takes for the two bare port lists measured in the same run.
Run: python bench/trex_compile.py
"""

from __future__ import annotations

import json
import time

from natbench.plugins import Directions, Mapping, Phase2Options
from natbench.testers.trex import program as prg
from natbench.testers.trex.streams import to_json
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan


def timed(fn, repeat: int = 3):  # type: ignore[no-untyped-def]
    best = float("inf")
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    print(f"{'ranges':>16} {'conn':>14} {'compile s':>10} {'to_json s':>10} {'JSON MB':>8} {'ref s':>8} {'ratio':>6}")
    for n_src, n_dst in ((100, 10), (4000, 1000), (65535, 1000), (65535, 65535)):
        plan = TrafficPlan(
            Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(1, n_src), PortRange(1, n_dst), 64, 1
        )
        # permutations are cached: warm them so the compiler is measured, not the shuffle
        _ = (plan.enumeration.sources, plan.enumeration.destinations)
        t_compile, program = timed(lambda plan=plan: prg.compile_phase1(plan, 1e6))
        t_json, js = timed(lambda program=program: to_json(program))
        size = len(json.dumps(js)) / 1e6
        lists = [plan.enumeration.sources.tolist(), plan.enumeration.destinations.tolist()]
        t_ref, _ = timed(lambda lists=lists: json.dumps(lists))
        print(
            f"{n_src:>7}x{n_dst:<8} {plan.connections:>14,} {t_compile:>10.4f} {t_json:>10.4f} {size:>8.2f} "
            f"{t_ref:>8.4f} {t_json / t_ref:>6.1f}"
        )
    plan = TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1, 4000),
        PortRange(1, 1000),
        64,
        1,
        ResponderMode.READ,
    )
    maps = tuple(Mapping("198.19.0.1", 1024 + i % 60000, 1 + i % 1000, None) for i in range(200_000))
    t, program = timed(
        lambda: prg.compile_phase2(plan, 1e6, Directions.BIDIRECTIONAL, Phase2Options(mappings=maps)), repeat=1
    )
    t_json, js = timed(lambda: to_json(program), repeat=1)
    print(
        f"phase 2, read mode, 200,000 tuples: compile {t:.3f} s, to_json {t_json:.3f} s, "
        f"{len(program.streams)} streams, {len(json.dumps(js)) / 1e6:.2f} MB"
    )


if __name__ == "__main__":
    main()
