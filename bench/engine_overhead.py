"""What durability costs per trial: RunStore.append_trial (write + flush + fsync) against plain buffered writes.

Prints records per second of both and their ratio (measured in the same run, on the same disk),
and the end-to-end engine overhead per trial of a fake run (search + procedure + store + runner).

    python bench/engine_overhead.py [--records 2000] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from natbench.results import TrialRecord, Verdict
from natbench.run.runner import start_run
from natbench.run.writer import RunStore
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint


def record(i: int) -> TrialRecord:
    return TrialRecord(
        "abcdef012345",
        "cps",
        0,
        i,
        "phase1",
        100_000.0 + i,
        100_000.0 + i,
        {"forward": {"sent": 4_000_000, "received": 4_000_000, "valid": 4_000_000}},
        Verdict.PASS,
        "",
        time.time(),
        time.time(),
        lower=0.0,
        upper=1e6,
        extra={"dut_connections": 4_000_000, "duration": 40.0},
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=2000)
    ap.add_argument("--dir", default=None, help="directory on the disk to measure (default: system temp)")
    args = ap.parse_args()
    recs = [record(i) for i in range(args.records)]
    point = WorkingPoint(0, PortRange(1, 4000), PortRange(1, 1000), 64)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        store = RunStore.create(Path(tmp) / "run", campaign_text="x: 1\n", points=[point])
        t0 = time.perf_counter()
        for r in recs:
            store.append_trial(r)
        durable = time.perf_counter() - t0
        store.close()
        t0 = time.perf_counter()
        with open(Path(tmp) / "plain.jsonl", "w") as f:
            for r in recs:
                f.write(json.dumps({"type": "trial", **r.to_dict()}, sort_keys=True) + "\n")
        plain = time.perf_counter() - t0

        import engine_fakes

        tester, dut = engine_fakes.make_testbed()
        t0 = time.perf_counter()
        run = start_run(engine_fakes.make_spec(), Path(tmp) / "fake", tester, dut, sleep=lambda s: None)
        elapsed = time.perf_counter() - t0
        n = len(run.trials()) + len(run.results())
    print(f"records: {args.records}")
    for name, secs in (("durable append (write+flush+fsync)", durable), ("plain buffered write (reference)", plain)):
        print(f"{name:<36} {args.records / secs:12,.0f} records/s {secs / args.records * 1e6:9.1f} us/record")
    print(f"ratio durable/plain time per record: {durable / plain:,.1f}x")
    print(f"fake run end to end: {n} records in {elapsed:.2f} s = {elapsed / n * 1e3:.2f} ms per stored record")
    print("a real trial lasts from ~N/R seconds (phase 1) to 60 s (phase 2): the store's cost is negligible beside it")


if __name__ == "__main__":
    main()
