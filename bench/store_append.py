"""Benchmark: what a counted record costs - RunStore.append_trial against a bare line + fsync.

Prints, in the same process and on the same file system (a temporary directory beside this
file unless --dir is given), the mean time per record of
  * the reference: append one JSON line to a file and fsync it (what the store did before
    record counts),
  * RunStore.append_trial: the numbered, checksummed line (fsync), then run.json with the new
    counts replaced atomically (write, fsync, rename, fsync the directory),
  * scanning the resulting trials.jsonl (the integrity check of report and resume), per record,
and the ratio of the store's time to the reference. A measurement trial lasts seconds (60 s by
RFC 9693 defaults), so the figure to compare is the time per record against that.
Usage: python bench/store_append.py [--records N] [--rounds R] [--dir DIR]  (medians over the rounds)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from natbench.results import TrialRecord, Verdict
from natbench.run.records import scan
from natbench.run.writer import RunStore
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1, 4000), PortRange(1, 1000), 64, cores=4, name="bench")


def trial(step: int) -> TrialRecord:
    """A typical search-step record."""
    return TrialRecord(
        POINT.id,
        "cps",
        0,
        step,
        "phase1",
        1000.0 * step,
        999.0 * step,
        {"forward": {"sent": 10_000, "received": 9_990, "valid": 9_990}},
        Verdict.FAIL,
        "loss 0.1 %",
        1.0,
        2.0,
        lower=0.0,
        upper=1e6,
    )


def reference_round(base: Path, records: int) -> float:
    """Seconds per record: a JSON line appended and fsync-ed."""
    lines = [json.dumps({"type": "trial", **trial(i).to_dict()}, sort_keys=True) + "\n" for i in range(records)]
    t0 = time.perf_counter()
    with open(base / "plain.jsonl", "a", encoding="utf-8") as f:
        for ln in lines:
            f.write(ln)
            f.flush()
            os.fsync(f.fileno())
    return (time.perf_counter() - t0) / records


def store_round(path: Path, records: int) -> tuple[float, float]:
    """Seconds per record: RunStore.append_trial, and scanning the file afterwards."""
    store = RunStore.create(path, campaign_text="name: bench\n", points=[POINT])
    t0 = time.perf_counter()
    for i in range(records):
        store.append_trial(trial(i))
    counted = (time.perf_counter() - t0) / records
    store.close()
    t0 = time.perf_counter()
    found = scan(path / "trials.jsonl", json.loads((path / "run.json").read_text())["records"])
    scanned = (time.perf_counter() - t0) / records
    assert not found.damage and len(found.records) == records
    return counted, scanned


def main() -> None:
    """Run the benchmark and print the figures."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path(__file__).resolve().parent)
    args = ap.parse_args()
    refs: list[float] = []
    stores: list[float] = []
    scans: list[float] = []
    for rnd in range(args.rounds):  # alternate, so that both see the same state of the disk cache
        with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
            refs.append(reference_round(Path(tmp), args.records))
            counted, scanned = store_round(Path(tmp) / f"run{rnd}", args.records)
            stores.append(counted)
            scans.append(scanned)
    reference, counted, scanned = statistics.median(refs), statistics.median(stores), statistics.median(scans)
    print(f"records: {args.records}")
    print(f"reference (line + fsync):          {reference * 1e3:8.3f} ms/record")
    print(f"RunStore.append_trial (+ counts):  {counted * 1e3:8.3f} ms/record  ratio {counted / reference:.2f}")
    print(f"scan (integrity check):            {scanned * 1e6:8.1f} us/record")


if __name__ == "__main__":
    main()
