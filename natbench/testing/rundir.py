"""Write synthetic run directories in the GUIDE.md layout, for tests, benchmarks and docs.

This is test support, not a fake backend: :func:`write_run_dir` writes through the run-directory writer
(:class:`~natbench.run.writer.RunStore`), so the files are exactly what a run writes (numbered, checksummed
record lines counted in run.json), filled with values the caller chooses, so report code can be checked
against the seeds' published numbers. Two named ways write what the writer never would, for the tests that
need it: ``write_run_dir(..., legacy=True)`` (the layout of natbench before sequence numbers: no record counts,
unnumbered lines) and :func:`write_raw_run_dir` (every file as given, unchecked).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run.format import (
    CAMPAIGN,
    POINTS,
    RUN,
    TRIALS,
    HostFacts,
    PointRecord,
    RunMeta,
    RunStatus,
    TesterFacts,
    encode_points,
    kind_of,
    record_data,
)
from natbench.run.writer import RunStore
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

SYNTHETIC_START = datetime(2026, 1, 1, tzinfo=UTC).timestamp()
"""When every synthetic run started (2026-01-01 00:00:00 UTC)."""


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
    metric_settings: Mapping[str, Mapping[str, Any]] | None = None,
) -> PointRecord:
    """A ``points.json`` entry built through :class:`WorkingPoint` (so id and label are real); ``metric_settings``: the
    settings the point overrides per metric (part of what its id hashes)."""
    wp = WorkingPoint(
        index=index,
        src_ports=PortRange(*src),
        dst_ports=PortRange(*dst),
        frame_size=frame_size,
        cores=cores,
        dut_params={k: dict(v) for k, v in (dut_params or {}).items()},
        swept_dut=swept_dut,
        name=name,
        metric_settings={k: dict(v) for k, v in (metric_settings or {}).items()},
    )
    return PointRecord.of(wp)


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
) -> RepetitionResult:
    """A repetition result."""
    return RepetitionResult(point_id, metric, repetition, value, unit, error, dict(extra or {}))


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
) -> TrialRecord:
    """A trial with consistent forward counts."""
    sent = int(rate * duration)
    return TrialRecord(
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


def synthetic_meta(campaign_name: str = "synthetic", duts: Mapping[str, Mapping[str, Any]] | None = None) -> RunMeta:
    """run.json of a synthetic run: natbench 0.1.0 at commit 0...0 on host ``synthetic``, started
    2026-01-01 00:00:00 UTC, the software tester; ``duts``: the DUT facts (default: one DUT, kernel 6.1.0)."""
    return RunMeta(
        natbench_version="0.1.0",
        git_commit="0" * 40,
        host=HostFacts(hostname="synthetic", python="3.11"),
        started_at=SYNTHETIC_START,
        campaign_file="campaign.yaml",
        campaign_name=campaign_name,
        tester=TesterFacts("software", {"version": "synthetic"}),
        duts={k: dict(v) for k, v in (duts or {"dut": {"kernel": "6.1.0", "cpus": 2}}).items()},
    )


def write_run_dir(
    path: str | Path,
    points: Sequence[PointRecord | WorkingPoint],
    records: Iterable[TrialRecord | RepetitionResult],
    *,
    campaign_text: str = "name: synthetic\n",
    campaign_name: str = "synthetic",
    duts: Mapping[str, Mapping[str, Any]] | None = None,
    status: RunStatus = "complete",
    legacy: bool = False,
) -> Path:
    """Write a run directory (GUIDE.md layout) through the run-directory writer and return its path.

    ``legacy``: write the layout of natbench before sequence numbers instead (run.json without record counts,
    one unnumbered line per record), as such a run directory lies on disk.
    """
    root = Path(path)
    meta = synthetic_meta(campaign_name, duts)
    if legacy:
        lines = [legacy_line(r) for r in records]
        return write_raw_run_dir(
            root,
            run_json=meta.replace(records=None, status=status).to_dict(),
            points_json=[p if isinstance(p, PointRecord) else PointRecord.of(p) for p in points],
            lines=lines,
            campaign_text=campaign_text,
        )
    with RunStore.create(root, campaign_text=campaign_text, points=points, meta=meta) as store:
        store.append_all(records)
        store.update(status=status)
    return root


def legacy_line(record: TrialRecord | RepetitionResult) -> dict[str, Any]:
    """A record as a line of natbench before sequence numbers held it: ``type`` and the fields, no ``seq``, no
    ``crc32``."""
    return {"type": kind_of(record), **record_data(record)}


def write_raw_run_dir(
    path: str | Path,
    *,
    run_json: Mapping[str, Any] | str | None,
    points_json: Any,
    lines: Iterable[Mapping[str, Any] | str],
    campaign_text: str | None = "name: synthetic\n",
) -> Path:
    """Write every file of a run directory as given, unchecked: for tests of what readers make of files natbench
    never writes. ``run_json``: an object (sorted keys, indented) or the file's text, None for no file;
    ``points_json``: the JSON value (:class:`PointRecord` entries as stored) or the file's text; ``lines``: each an
    object (one compact JSON line) or the line's text; ``campaign_text`` None for no campaign.yaml."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    if campaign_text is not None:
        (root / CAMPAIGN).write_text(campaign_text, encoding="utf-8")
    if run_json is not None:
        text = run_json if isinstance(run_json, str) else json.dumps(run_json, indent=2, sort_keys=True) + "\n"
        (root / RUN).write_text(text, encoding="utf-8")
    if isinstance(points_json, str):
        (root / POINTS).write_text(points_json, encoding="utf-8")
    elif isinstance(points_json, list) and all(isinstance(p, PointRecord) for p in points_json):
        (root / POINTS).write_text(encode_points(points_json), encoding="utf-8")
    else:
        (root / POINTS).write_text(json.dumps(points_json, indent=2) + "\n", encoding="utf-8")
    with open(root / TRIALS, "w", encoding="utf-8") as f:
        for line in lines:
            f.write((line if isinstance(line, str) else json.dumps(line, separators=(",", ":"))) + "\n")
    return root
