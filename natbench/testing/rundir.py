"""Write synthetic run directories in the GUIDE.md layout, for tests, benchmarks and docs.

This is test support, not a fake backend: the files it writes are what ``natbench/run/store.py``
writes (``campaign.yaml``, ``run.json``, ``points.json``, ``trials.jsonl``; their names come from
the store), filled with values the caller chooses - records as given, unchecked, so that tests
can write odd ones too - so report code can be checked against the seeds' published numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run.store import CAMPAIGN, POINTS, RUN, TRIALS, point_to_dict
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

__all__ = [
    "make_point",
    "monitor_extra",
    "result_record",
    "spread",
    "trial_record",
    "write_run_dir",
]


def make_point(
    index: int,
    src: tuple[int, int],
    dst: tuple[int, int],
    *,
    cores: int | None = None,
    name: str = "iptables",
    frame_size: int = 64,
    dut_params: Mapping[str, Mapping[str, Any]] | None = None,
    swept_dut: str | None = None,
) -> dict[str, Any]:
    """A ``points.json`` entry built through :class:`WorkingPoint` (so id and label are real)."""
    wp = WorkingPoint(
        index=index,
        src_ports=PortRange(*src),
        dst_ports=PortRange(*dst),
        frame_size=frame_size,
        cores=cores,
        dut_params={k: dict(v) for k, v in (dut_params or {}).items()},
        swept_dut=swept_dut,
        name=name,
    )
    return point_to_dict(wp)


def spread(median: float, minimum: float, maximum: float, n: int) -> list[float]:
    """``n`` (>= 3) repetition values whose median, min and max are exactly the given ones.

    An odd count is ``[min, median x (n - 2), max]``. An even count has two DISTINCT middle values
    ``median - d`` and ``median + d`` (their mean is the median, as the median of an even count is
    defined), so that a lower or upper median in the code under test gives another number:
    ``[min, (median - d) x (n/2 - 1), (median + d) x (n/2 - 1), max]`` with ``d`` half the smaller
    distance from the median to min or max. ``d`` is 0 only when the median equals min or max (then
    both middle values must equal it).
    """
    if n < 3:
        raise ValueError("need at least 3 repetitions to fix median, min and max")
    if not minimum <= median <= maximum:
        raise ValueError(f"median {median} outside [{minimum}, {maximum}]")
    if n % 2:
        return [minimum, *([median] * (n - 2)), maximum]
    d = min(median - minimum, maximum - median) / 2
    while d > 0:  # the mean of the two middle values must be the median exactly, in floating point
        lo, hi = median - d, median + d
        if minimum <= lo < hi <= maximum and (lo + hi) / 2 == median:
            break
        d = d / 2 if d > abs(median) * 1e-12 else 0.0
    half = n // 2 - 1
    return [minimum, *([median - d] * half), *([median + d] * half), maximum]


def result_record(
    point_id: str,
    metric: str,
    repetition: int,
    value: float | None,
    unit: str,
    *,
    error: float | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A ``{"type": "result"}`` line (a RepetitionResult)."""
    rr = RepetitionResult(point_id, metric, repetition, value, unit, error, dict(extra or {}))
    return {"type": "result", **rr.to_dict()}


def trial_record(
    point_id: str,
    metric: str,
    repetition: int,
    step: int,
    *,
    rate: float = 0.0,
    verdict: str = "pass",
    started_at: float = 0.0,
    duration: float = 1.0,
    kind: str = "phase1",
    extra: Mapping[str, Any] | None = None,
    value: float | None = None,
) -> dict[str, Any]:
    """A ``{"type": "trial"}`` line (a TrialRecord) with consistent forward counts."""
    sent = int(rate * duration)
    tr = TrialRecord(
        point_id=point_id,
        metric=metric,
        repetition=repetition,
        step=step,
        kind=kind,
        intended_rate=rate,
        achieved_rate=rate,
        counts={"forward": {"sent": sent, "received": sent, "valid": sent if verdict == "pass" else sent // 2}},
        verdict=Verdict(verdict),
        reason="" if verdict == "pass" else "synthetic",
        started_at=started_at,
        ended_at=started_at + duration,
        value=value,
        extra=dict(extra or {}),
    )
    return {"type": "trial", **tr.to_dict()}


def monitor_extra(dut: str, cores: int, seconds: int, idle: float = 20.0, interval: float = 1.0) -> dict[str, Any]:
    """A trial ``extra`` with CPU idle samples of one DUT in the shape plots.py documents."""
    t = [i * interval for i in range(int(seconds / interval))]
    return {
        "monitor": {
            dut: {
                "interval": interval,
                "t": t,
                "idle": {
                    f"cpu{c}": [max(0.0, min(100.0, idle + 5 * ((i + c) % 3 - 1))) for i in range(len(t))]
                    for c in range(cores)
                },
            }
        }
    }


def write_run_dir(
    path: str | Path,
    points: Sequence[Mapping[str, Any]],
    records: Iterable[Mapping[str, Any]],
    *,
    campaign_text: str = "name: synthetic\n",
    campaign_name: str = "synthetic",
    duts: Mapping[str, Mapping[str, Any]] | None = None,
    status: str = "complete",
) -> Path:
    """Write a run directory (GUIDE.md layout) and return its path."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    (root / CAMPAIGN).write_text(campaign_text)
    run = {
        "natbench_version": "0.1.0",
        "git_commit": "0" * 40,
        "host": {"hostname": "synthetic", "python": "3.11"},
        "started_at": "2026-01-01T00:00:00Z",
        "campaign_file": "campaign.yaml",
        "campaign_name": campaign_name,
        "tester": {"kind": "software", "version": "synthetic"},
        "duts": {k: dict(v) for k, v in (duts or {"dut": {"kernel": "6.1.0", "cpus": 2}}).items()},
        "status": status,
    }
    (root / RUN).write_text(json.dumps(run, indent=2))
    (root / POINTS).write_text(json.dumps(list(points), indent=2))
    with open(root / TRIALS, "w") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    return root
