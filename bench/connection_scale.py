#!/usr/bin/env python3
"""natbench's own cost per connection as N grows: time and memory of what natbench does around the traffic.

For N = 1M, 4M, 16M connections (|S| = N / 1,000 source ports x 1,000 destination ports) it measures, each in a
fresh process (so one measurement's heap does not carry into the next), natbench's CPU time, wall time and peak
memory above what the process held before:

* ``read``: the DUT's table read in responder mode read, as both testers get it: a synthetic ``conntrack -L -p
  udp`` listing of N entries (printed by a child process, 143 bytes a line: 572 MB at 4M) streamed through
  ``LocalExecutor.run_streaming`` into the ``conntrack_mappings`` parser, into a MappingTable;
* ``trex-fill``: the TRex phase-1 program of the point, compiled and built into the client library's stream
  JSON (what a fill uploads);
* ``trex-phase2``: TRex phase-2 setup in responder mode read, both directions: the N tuples ordered (random
  selection), compiled, built and serialised a few streams at a time with the real client library (offline, no
  server), and the clone of every stream the library keeps per port after ``add_streams`` held as it does (the
  DUT's table itself is built before the measurement starts; natbench's own bytes count it);
* ``soft-learn`` / ``soft-compute``: the software tester's phase-2 tuple arrays after a fill (learned tuples of a
  synthetic learned table, computed tuples of the Feistel order).

It prints per part and N the CPU seconds, the peak memory above the start and per connection, natbench's own
bytes per connection (the table, the program's value lists, the tuple arrays), and the growth ratios 1M -> 4M ->
16M: time ratios near 4.0 are cost linear in N, bytes-per-connection ratios near 1.0 constant memory per
connection.

    python bench/connection_scale.py                  # 1M, 4M, 16M (about 10 minutes on 2 busy CPUs)
    python bench/connection_scale.py --sizes 100k,400k --parts read,trex-phase2
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
import shlex
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

PARTS = ("read", "trex-fill", "trex-phase2", "soft-learn", "soft-compute")
DST_PORTS = 1000

LINE = (
    b"udp      17 298 src=198.18.0.2 dst=198.19.0.2 sport=%d dport=%d [UNREPLIED] "
    b"src=198.19.0.2 dst=198.19.0.1 sport=%d dport=%d mark=0 use=1\n"
)


def emit(n_src: int, n_dst: int) -> None:
    """Print a ``conntrack -L -p udp`` listing of n_src x n_dst port-preserving NAT44 entries."""
    out = sys.stdout.buffer
    for d in range(80, 80 + n_dst):
        out.write(b"".join([LINE % (s, d, d, s) for s in range(1024, 1024 + n_src)]))
    out.flush()


def _status(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _plan(n: int, mode: str = "compute") -> Any:
    from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

    n_src = n // DST_PORTS
    return TrafficPlan(
        Family.NAT44,
        AddressPlan.default(Family.NAT44),
        PortRange(1024, 1024 + n_src - 1),
        PortRange(80, 80 + DST_PORTS - 1),
        64,
        seed=2025,
        responder_mode=ResponderMode(mode),
    )


def _table(n: int) -> Any:
    """A port-preserving NAT's N mappings, built in columns (the read's output, not measured here)."""
    import numpy as np

    from natbench.plugins import MappingTable

    n_src = n // DST_PORTS
    k = np.arange(n, dtype=np.int64)
    sport = (1024 + k % n_src).astype(np.uint16)
    return MappingTable(["198.19.0.1"], np.zeros(n, np.uint8), sport, (80 + k // n_src).astype(np.uint16), sport)


def _value_bytes(program: Any) -> int:
    """Bytes of a program's value lists not shared with a table (views of the table's columns are not counted)."""
    seen: set[int] = set()
    total = 0
    for s in program.streams:
        for v in s.variables:
            if v.value_list is not None:
                arr = v.value_list.values
                base = arr if arr.base is None else arr.base
                if id(base) not in seen and arr.base is None:
                    seen.add(id(base))
                    total += arr.nbytes
    return total


def part_read(n: int) -> tuple[Callable[[], None], Callable[[], dict[str, Any]]]:
    from natbench.duts.executors import LocalExecutor
    from natbench.duts.parsers import parse_conntrack_mappings

    state: dict[str, Any] = {}
    command = shlex.join([sys.executable, __file__, "--emit", str(n // DST_PORTS), str(DST_PORTS)])

    def run() -> None:
        sink = parse_conntrack_mappings.stream()
        res = LocalExecutor(command_timeout=7200).run_streaming(command, sink.feed)
        if res.returncode != 0:
            raise SystemExit(f"listing failed: {res.stderr}")
        state["table"] = sink.finish()

    def facts() -> dict[str, Any]:
        table = state["table"]
        if len(table) != n:
            raise SystemExit(f"read {len(table)} mappings of {n}")
        return {"own_bytes": table.nbytes, "text_bytes": n * len(LINE % (1024, 80, 80, 1024))}

    return run, facts


def part_trex_fill(n: int) -> tuple[Callable[[], None], Callable[[], dict[str, Any]]]:
    from natbench.testers.trex import program as prg
    from natbench.testers.trex.client import load_api
    from natbench.testers.trex.streams import build_stream

    load_api()
    plan = _plan(n)
    _ = plan.enumeration.sources, plan.enumeration.destinations
    state: dict[str, Any] = {}

    def run() -> None:
        program = prg.compile_phase1(plan, 1e6, cores=1)
        state["json"] = sum(len(json.dumps(build_stream(s).to_json())) for s in program.streams)
        state["program"] = program

    def facts() -> dict[str, Any]:
        return {"own_bytes": _value_bytes(state["program"]), "json_bytes": state["json"]}

    return run, facts


def part_trex_phase2(n: int) -> tuple[Callable[[], None], Callable[[], dict[str, Any]]]:
    from natbench.plugins import Directions, Phase2Options
    from natbench.testers.trex import program as prg
    from natbench.testers.trex.client import load_api
    from natbench.testers.trex.streams import build_stream
    from natbench.testers.trex.tester import UPLOAD_BATCH

    load_api()
    plan = _plan(n, "read")
    table = _table(n)
    state: dict[str, Any] = {}

    def run() -> None:
        t0 = time.perf_counter()
        ordered = prg.order_mappings(table, "random", plan.seed)
        options = Phase2Options(selection="linear", mappings=ordered)
        program = prg.compile_phase2(plan, 1e6, Directions.BIDIRECTIONAL, options, cores=1)
        t1 = time.perf_counter()
        kept: list[Any] = []  # the client library keeps a clone of every stream added to a port
        sent = 0
        streams = program.streams
        for i in range(0, len(streams), UPLOAD_BATCH):
            built = [build_stream(s) for s in streams[i : i + UPLOAD_BATCH]]
            sent += sum(len(json.dumps(b.to_json())) for b in built)  # the add_stream RPCs' payload
            kept.extend(b.clone() for b in built)
        state.update(
            ordered=ordered, program=program, kept=kept, sent=sent, compile_s=t1 - t0, build_s=time.perf_counter() - t1
        )

    def facts() -> dict[str, Any]:
        program = state["program"]
        return {
            # the DUT's table (read before) and its random order, which the tester keeps; the program's lists are views
            "own_bytes": table.nbytes + state["ordered"].nbytes + _value_bytes(program),
            "streams": len(program.streams),
            "json_bytes": state["sent"],
            "compile_s": state["compile_s"],
            "client_build_s": state["build_s"],
        }

    return run, facts


def _software(n: int, learn: bool) -> tuple[Callable[[], None], Callable[[], dict[str, Any]]]:
    import numpy as np

    from natbench.testers.software.tester import responder_arrays
    from natbench.traffic import EnumerationOrder

    plan = _plan(n)
    enum = replace(plan.enumeration, order=EnumerationOrder.FEISTEL)
    src = np.ascontiguousarray(enum.sources, dtype=np.uint16)
    dst = np.ascontiguousarray(enum.destinations, dtype=np.uint16)
    learned = None
    if learn:  # what a fill's Responder leaves: the public port of every frame index (here: all learned)
        learned = np.empty(n, dtype=np.uint16)
        learned[:] = 1024 + np.arange(n) % len(src)
    state: dict[str, Any] = {}

    def run() -> None:
        state["tuples"] = responder_arrays(enum, src, dst, learned)

    def facts() -> dict[str, Any]:
        return {"own_bytes": sum(a.nbytes for a in state["tuples"]) + (learned.nbytes if learned is not None else 0)}

    return run, facts


def child(part: str, n: int) -> None:
    makers = {
        "read": part_read,
        "trex-fill": part_trex_fill,
        "trex-phase2": part_trex_phase2,
        "soft-learn": lambda n: _software(n, True),
        "soft-compute": lambda n: _software(n, False),
    }
    run, facts = makers[part](n)
    base = _status("VmRSS")
    peak_ok = _reset_peak()
    c0, w0 = _cpu(), time.perf_counter()
    run()
    cpu, wall = _cpu() - c0, time.perf_counter() - w0
    peak = _status("VmHWM") if peak_ok else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "base": base, "peak_extra": peak - base, **facts()}))


def size(text: str) -> int:
    text = text.strip().lower()
    factor = {"k": 1_000, "m": 1_000_000}.get(text[-1:], 1)
    return int(float(text[:-1] if factor > 1 else text) * factor)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,4M,16M", help="connection counts, multiples of 1,000 (default 1M,4M,16M)")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"which parts (default all: {','.join(PARTS)})")
    ap.add_argument("--child", nargs=2, metavar=("PART", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--emit", nargs=2, type=int, metavar=("SRC", "DST"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.emit:
        emit(*args.emit)
        return
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    sizes = [size(s) for s in args.sizes.split(",")]
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    for p in parts:
        if p not in PARTS:
            raise SystemExit(f"unknown part {p!r} (known: {', '.join(PARTS)})")
    if any(n % DST_PORTS or n // DST_PORTS > 65535 or n < 2 * DST_PORTS for n in sizes):
        raise SystemExit("sizes must be multiples of 1,000 between 2,000 and 65,535,000")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    print(f"natbench's own cost per connection; N = |S| x {DST_PORTS} destination ports; one fresh process each")
    for p in parts:
        rows = []
        for n in sizes:
            out = subprocess.run(
                [sys.executable, __file__, "--child", p, str(n)], capture_output=True, text=True, env=env, check=False
            )
            if out.returncode != 0:
                raise SystemExit(f"{p} at {n:,}: {out.stderr.strip()[-2000:]}")
            rows.append((n, json.loads(out.stdout.strip().splitlines()[-1])))
        print(f"\n{p}")
        print(f"{'N':>12} {'CPU s':>8} {'wall s':>8} {'peak MB':>8} {'B/conn':>8} {'own B/conn':>10}  more")
        for n, r in rows:
            more = {k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()
                    if k not in ("cpu_s", "wall_s", "base", "peak_extra", "own_bytes")}  # fmt: skip
            print(
                f"{n:>12,} {r['cpu_s']:>8.2f} {r['wall_s']:>8.2f} {r['peak_extra'] / 2**20:>8.1f} "
                f"{r['peak_extra'] / n:>8.2f} {r['own_bytes'] / n:>10.2f}  {json.dumps(more) if more else ''}"
            )
        for (n0, r0), (n1, r1) in itertools.pairwise(rows):
            print(
                f"  {n0:,} -> {n1:,} (x{n1 / n0:g}): CPU x{r1['cpu_s'] / max(r0['cpu_s'], 1e-9):.2f}, "
                f"peak memory x{r1['peak_extra'] / max(r0['peak_extra'], 1):.2f}, "
                f"bytes/conn x{(r1['peak_extra'] / n1) / max(r0['peak_extra'] / n0, 1e-9):.2f}, "
                f"own bytes/conn x{(r1['own_bytes'] / n1) / max(r0['own_bytes'] / n0, 1e-9):.2f}"
            )


if __name__ == "__main__":
    main()
