"""The run directory: durable, append-only storage of every trial, resume, Parquet export.

This module is the only reader and writer of run directories: :class:`RunStore` writes
one, :class:`RunDirectory` reads it strictly (resume, the summary of ``natbench run``,
Parquet export) and :func:`read_plain_run` leniently, as plain data (reports, which must
read a run that is still being written or was killed).

Layout (fixed by the developers' guide)::

    RUN_DIR/
      campaign.yaml   the resolved campaign
      run.json        versions, host, tester and DUT facts, status
      points.json     the working points
      trials.jsonl    {"type": "trial", ...TrialRecord} / {"type": "result", ...RepetitionResult}
      trials.parquet  optional export
      trials.abandoned.jsonl   only after a resume: trials of repetitions that were cut off

Durability: every line is written, flushed and ``fsync``-ed before
:meth:`RunStore.append_trial` returns, so a trial is on disk before the next
one starts. Metadata files are replaced atomically (write, fsync, rename,
fsync the directory).

Resume policy: a repetition is the unit of completion. A repetition is
complete when its ``result`` line is on disk. When a run is resumed, the
trials of a repetition that had started but not finished are moved to
``trials.abandoned.jsonl`` (kept, never deleted: they are real measurements)
and the repetition is run again from its first step. Rebuilding the search
state from stored steps instead is not sound for natbench's procedures: the
DUT's connection table (filled by phase 1, needed by every phase-2 step and by
the tear-down measurement) does not survive the interruption, and the DUT is
set up afresh on resume. Restarting the repetition is deterministic, so
``trials.jsonl`` ends up with exactly the records of an uninterrupted run. A
torn last line (the process died while writing it) is dropped the same way.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import platform
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from natbench import __version__
from natbench.errors import StoreError
from natbench.results import RepetitionResult, TrialRecord
from natbench.workingpoint import WorkingPoint

__all__ = [
    "ABANDONED",
    "CAMPAIGN",
    "EXPERIMENT_KIND",
    "POINTS",
    "RUN",
    "TRIALS",
    "TRIALS_PARQUET",
    "PlainRun",
    "RepKey",
    "RunDirectory",
    "RunStore",
    "atomic_write",
    "host_facts",
    "link_latest",
    "plain_json",
    "point_to_dict",
    "read_plain_run",
]

CAMPAIGN = "campaign.yaml"
RUN = "run.json"
POINTS = "points.json"
TRIALS = "trials.jsonl"
TRIALS_PARQUET = "trials.parquet"
ABANDONED = "trials.abandoned.jsonl"

EXPERIMENT_KIND = "natbench-experiment"
"""``kind`` of the campaign.yaml an experiment session (pytest plugin, natbench.run.experiment) writes."""

RepKey = tuple[str, str, int]
"""(point id, metric, repetition): the unit of completion."""


def point_to_dict(point: WorkingPoint) -> dict[str, Any]:
    """The points.json entry of a working point."""
    return {
        "id": point.id,
        "index": point.index,
        "label": point.label,
        "name": point.name,
        "cores": point.cores,
        "src_ports": [point.src_ports.first, point.src_ports.last],
        "dst_ports": [point.dst_ports.first, point.dst_ports.last],
        "connections": point.connections,
        "frame_size": point.frame_size,
        "dut_params": point.dut_params,
        "swept_dut": point.swept_dut,
    }


def host_facts() -> dict[str, Any]:
    """Facts about the machine natbench runs on."""
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
    }


def _git_commit() -> str | None:
    """The commit of the natbench source tree, when it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _lock_dir(path: Path) -> int:
    """Take an exclusive lock on the run directory (flock on its descriptor); StoreError when another process has it.

    The lock dies with the process, so a SIGKILL-ed run never leaves a stale lock behind.
    """
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise StoreError(f"{path}: another natbench process is writing this run") from None
    return fd


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves either the old or the new file.

    Writes a hidden temporary file beside it, fsyncs it, renames it over ``path``
    and fsyncs the directory, so the new entry survives a power cut too.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def plain_json(obj: Any) -> Any:
    """A JSON-safe copy of facts or metadata: dict keys become strings, tuples lists, unknown objects strings."""
    if isinstance(obj, dict):
        return {str(k): plain_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain_json(v) for v in obj]
    if obj is None or isinstance(obj, bool | int | float | str):
        return obj
    return str(obj)


def _json_safe(obj: Any) -> Any:
    """Strict-JSON copy: NaN and infinities (JSON has neither) become null; other values pass through."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_json_safe(v) for v in obj]
    return obj


def _line(kind: str, obj: TrialRecord | RepetitionResult) -> str:
    data = _json_safe({"type": kind, **obj.to_dict()})
    try:
        return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store a {kind} record of {obj.metric}: {exc}") from exc


def _parse_line(raw: str, where: str) -> TrialRecord | RepetitionResult:
    try:
        obj = json.loads(raw)
        kind = obj.pop("type")
        if kind == "trial":
            return TrialRecord.from_dict(obj)
        if kind == "result":
            return RepetitionResult.from_dict(obj)
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{where}: not a natbench record: {exc}") from exc
    raise StoreError(f"{where}: unknown record type {kind!r}")


def _read_lines(path: Path) -> tuple[list[str], bool]:
    """Complete lines of ``path`` and whether the file must be written anew.

    It must when its last line is torn (unterminated) and when there is no file: a resume then starts it
    atomically, so that its directory entry is durable before the first trial, as at creation.
    """
    if not path.exists():
        return [], True
    data = path.read_text(encoding="utf-8")
    lines = data.split("\n")
    torn = lines[-1] != ""
    return [ln for ln in lines[:-1] if ln.strip()], torn


@dataclass
class RunDirectory:
    """Read access to a run directory (reports, notebooks, resume)."""

    path: Path
    """The run directory."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Contents of run.json."""
    points: list[dict[str, Any]] = field(default_factory=list)
    """Contents of points.json."""

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunDirectory:
        """Open an existing run directory (StoreError when it is not one)."""
        p = Path(path)
        for name in (RUN, POINTS, CAMPAIGN):
            if not (p / name).is_file():
                raise StoreError(f"{p}: not a natbench run directory (missing {name})")
        try:
            meta = json.loads((p / RUN).read_text(encoding="utf-8"))
            points = json.loads((p / POINTS).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise StoreError(f"{p}: corrupt run metadata: {exc}") from exc
        return cls(p, meta, points)

    @property
    def campaign_text(self) -> str:
        """The resolved campaign as stored."""
        return (self.path / CAMPAIGN).read_text(encoding="utf-8")

    @property
    def status(self) -> str:
        """running, complete or failed."""
        return str(self.meta.get("status", "unknown"))

    @property
    def experiment_session(self) -> bool:
        """True when a pytest session or an experiment script wrote it (campaign.yaml records the session)."""
        import yaml

        try:
            doc = yaml.safe_load(self.campaign_text)
        except (OSError, yaml.YAMLError):
            return False
        return isinstance(doc, dict) and doc.get("kind") == EXPERIMENT_KIND

    def check_resumable(self) -> None:
        """Raise StoreError (one line) when ``natbench run --resume`` cannot continue this directory."""
        if self.experiment_session:
            raise StoreError(
                f"{self.path}: written by a pytest session (natbench.run.experiment), not by `natbench run`:"
                " its campaign.yaml records the session's measurements, not a campaign, so it cannot be resumed;"
                " re-run the pytest session (or script) instead, which writes a new run directory"
                f" (`natbench report {self.path}` reads what this one holds)"
            )

    def records(self) -> Iterator[TrialRecord | RepetitionResult]:
        """Every complete record of trials.jsonl in order (a torn last line is skipped)."""
        lines, _ = _read_lines(self.path / TRIALS)
        for i, ln in enumerate(lines, 1):
            yield _parse_line(ln, f"{self.path / TRIALS}:{i}")

    def trials(self) -> list[TrialRecord]:
        """The trial records."""
        return [r for r in self.records() if isinstance(r, TrialRecord)]

    def results(self) -> list[RepetitionResult]:
        """The repetition results."""
        return [r for r in self.records() if isinstance(r, RepetitionResult)]

    def completed(self) -> set[RepKey]:
        """Repetitions whose result is stored."""
        return {(r.point_id, r.metric, r.repetition) for r in self.results()}

    def abandoned(self) -> list[TrialRecord]:
        """Trials of repetitions that were cut off and run again after a resume."""
        lines, _ = _read_lines(self.path / ABANDONED)
        out = []
        for i, ln in enumerate(lines, 1):
            rec = _parse_line(ln, f"{self.path / ABANDONED}:{i}")
            if isinstance(rec, TrialRecord):
                out.append(rec)
        return out

    def trials_frame(self) -> Any:
        """The trials as a tidy pandas DataFrame (one row per trial, counts flattened per direction)."""
        import pandas as pd

        rows = []
        for t in self.trials():
            row = t.to_dict()
            counts = row.pop("counts")
            for d, c in counts.items():
                for k, v in c.items():
                    row[f"{d}_{k}"] = v
            row["extra"] = json.dumps(row["extra"], sort_keys=True)
            rows.append(row)
        return pd.DataFrame(rows)

    def results_frame(self) -> Any:
        """The repetition results as a pandas DataFrame (with the points' label and connections)."""
        import pandas as pd

        by_id = {p["id"]: p for p in self.points}
        rows = []
        for r in self.results():
            row = r.to_dict()
            row["extra"] = json.dumps(row["extra"], sort_keys=True)
            p = by_id.get(r.point_id, {})
            row["label"] = p.get("label")
            row["connections"] = p.get("connections")
            row["cores"] = p.get("cores")
            rows.append(row)
        return pd.DataFrame(rows)

    def export_parquet(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the trials (and ``results.parquet`` beside it) as Parquet; return the trials file."""
        target = Path(path) if path else self.path / TRIALS_PARQUET
        self.trials_frame().to_parquet(target, index=False)
        self.results_frame().to_parquet(target.with_name("results.parquet"), index=False)
        return target


@dataclass(frozen=True)
class PlainRun:
    """A run directory as plain data, as :func:`read_plain_run` read it."""

    meta: dict[str, Any]
    """Contents of run.json."""
    campaign_text: str
    """Contents of campaign.yaml ("" when there is none)."""
    points: list[dict[str, Any]]
    """Contents of points.json."""
    trials: list[dict[str, Any]]
    """The trial records of trials.jsonl (``{"type": "trial", ...}``), in order."""
    results: list[dict[str, Any]]
    """The result records of trials.jsonl (``{"type": "result", ...}``), in order."""
    warnings: list[str]
    """What could not be read and was skipped: a torn last line, a missing trials.jsonl."""


def read_plain_run(path: Path) -> PlainRun:
    """Read the run directory ``path`` leniently, as plain data: for reports of runs still being written or killed.

    A missing campaign.yaml reads as "", a missing trials.jsonl as no records, a torn last line of
    trials.jsonl is skipped; each is named in :attr:`PlainRun.warnings` where it matters. A missing or
    corrupt run.json or points.json, and a corrupt line anywhere else, is a :class:`StoreError` naming
    the file (and line).
    """
    meta: dict[str, Any] = _read_json(path / RUN)
    campaign = path / CAMPAIGN
    campaign_text = campaign.read_text(encoding="utf-8") if campaign.exists() else ""
    points = _read_json(path / POINTS)
    if not isinstance(points, list):
        raise StoreError(f"{path / POINTS}: expected a list of working points")
    trials, results, warnings = _read_plain_records(path / TRIALS)
    return PlainRun(meta, campaign_text, points, trials, results, warnings)


def _read_plain_records(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """Split ``trials.jsonl`` into (trial records, result records, warnings)."""
    trials: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    warnings: list[str] = []
    if not path.exists():
        return trials, results, [f"{path}: missing (no trial stored yet)"]
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    loads = json.loads
    for i, raw in enumerate(lines[: last + 1]):
        if not raw.strip():
            continue
        try:
            rec = loads(raw)
        except ValueError as exc:
            if i == last:
                warnings.append(f"{path}:{i + 1}: torn last line skipped (run interrupted while writing)")
                continue
            raise StoreError(f"{path}:{i + 1}: not a JSON object: {exc}") from None
        kind = rec.get("type") if isinstance(rec, dict) else None
        if kind == "trial":
            trials.append(rec)
        elif kind == "result":
            results.append(rec)
        else:
            raise StoreError(f"{path}:{i + 1}: type: expected 'trial' or 'result', got {kind!r}")
    return trials, results, warnings


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: missing; is this a natbench run directory?") from None
    except ValueError as exc:
        raise StoreError(f"{path}: not valid JSON: {exc}") from None


class RunStore:
    """Writes one run directory; use :meth:`create` for a new run and :meth:`resume` to continue one."""

    def __init__(self, path: Path, meta: dict[str, Any], completed: set[RepKey], lock: int) -> None:
        self.path = path
        self.meta = meta
        self._completed = completed
        self._lock: int | None = lock
        self._fh: IO[str] | None = open(path / TRIALS, "a", encoding="utf-8")  # noqa: SIM115 - kept open

    # -- creation -------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        campaign_text: str,
        points: Iterable[WorkingPoint],
        campaign_file: str | None = None,
        campaign_name: str | None = None,
        tester_facts: dict[str, Any] | None = None,
        dut_facts: dict[str, dict[str, Any]] | None = None,
    ) -> RunStore:
        """Create a new run directory (StoreError if it already holds a run)."""
        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        lock = _lock_dir(p)
        try:
            meta = cls._create_files(p, campaign_text, points, campaign_file, campaign_name, tester_facts, dut_facts)
        except BaseException:
            os.close(lock)
            raise
        return cls(p, meta, set(), lock)

    @staticmethod
    def _create_files(
        p: Path,
        campaign_text: str,
        points: Iterable[WorkingPoint],
        campaign_file: str | None,
        campaign_name: str | None,
        tester_facts: dict[str, Any] | None,
        dut_facts: dict[str, dict[str, Any]] | None,
    ) -> dict[str, Any]:
        if any((p / name).exists() for name in (RUN, TRIALS, POINTS, CAMPAIGN)):
            raise StoreError(f"{p}: already holds a run; use --resume to continue it or choose another directory")
        meta: dict[str, Any] = {
            "natbench_version": __version__,
            "git_commit": _git_commit(),
            "host": host_facts(),
            "started_at": time.time(),
            "campaign_file": campaign_file,
            "campaign_name": campaign_name,
            "tester": tester_facts or {},
            "duts": dut_facts or {},
            "status": "running",
        }
        atomic_write(p / CAMPAIGN, campaign_text)
        atomic_write(p / POINTS, json.dumps([point_to_dict(pt) for pt in points], indent=2) + "\n")
        atomic_write(p / TRIALS, "")  # exists (and its directory entry is durable) before the first trial
        atomic_write(p / RUN, json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return meta

    @classmethod
    def resume(cls, path: str | os.PathLike[str]) -> RunStore:
        """Reopen a run for appending: drop a torn last line, move cut-off repetitions' trials aside."""
        run = RunDirectory.open(path)
        p = run.path
        lock = _lock_dir(p)
        try:
            return cls._resume_locked(RunDirectory.open(p), lock)
        except BaseException:
            os.close(lock)
            raise

    @classmethod
    def _resume_locked(cls, run: RunDirectory, lock: int) -> RunStore:
        p = run.path
        lines, rewrite = _read_lines(p / TRIALS)
        parsed = [(ln, _parse_line(ln, f"{p / TRIALS}:{i}")) for i, ln in enumerate(lines, 1)]
        done = {(r.point_id, r.metric, r.repetition) for _, r in parsed if isinstance(r, RepetitionResult)}
        keep: list[str] = []
        cut: list[str] = []
        for ln, rec in parsed:
            if isinstance(rec, TrialRecord) and (rec.point_id, rec.metric, rec.repetition) not in done:
                cut.append(ln)
            else:
                keep.append(ln)
        if cut or rewrite:
            # first keep the cut-off trials safely, then replace trials.jsonl atomically; a crash in
            # between leaves them in both files, and the next resume does not copy them twice
            already = set(_read_lines(p / ABANDONED)[0])
            new = [ln for ln in cut if ln not in already]
            if new:
                with open(p / ABANDONED, "a", encoding="utf-8") as f:
                    f.write("".join(ln + "\n" for ln in new))
                    f.flush()
                    os.fsync(f.fileno())
            atomic_write(p / TRIALS, "".join(ln + "\n" for ln in keep))
        meta = dict(run.meta)
        meta.setdefault("resumed_at", []).append(time.time())
        meta["status"] = "running"
        meta.pop("failure", None)
        store = cls(p, meta, done, lock)
        store._write_meta()
        return store

    # -- writing --------------------------------------------------------------------
    def _append(self, text: str) -> None:
        if self._fh is None:
            raise StoreError(f"{self.path}: store is closed")
        self._fh.write(text)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append_trial(self, record: TrialRecord) -> None:
        """Append one trial; it is on disk when this returns."""
        self._append(_line("trial", record))

    def append_result(self, result: RepetitionResult) -> None:
        """Append one repetition result (marks the repetition complete); on disk when this returns."""
        self._append(_line("result", result))
        self._completed.add((result.point_id, result.metric, result.repetition))

    def is_complete(self, point_id: str, metric: str, repetition: int) -> bool:
        """True when this repetition's result is stored."""
        return (point_id, metric, repetition) in self._completed

    def update_meta(self, **fields: Any) -> None:
        """Merge ``fields`` into run.json (atomically)."""
        self.meta.update(fields)
        self._write_meta()

    def record_dut_facts(self, point_id: str, facts: Any) -> None:
        """Store the DUT facts read after setting up a working point in run.json.

        ``duts`` holds the latest facts by DUT name (a single DUT's facts, not keyed
        by name, are filed under ``dut``) and ``point_facts[point_id]`` the same per point.
        """
        plain = plain_json(facts)
        duts = plain if plain and all(isinstance(v, dict) for v in plain.values()) else {"dut": plain}
        point_facts = dict(self.meta.get("point_facts", {}))
        point_facts[point_id] = duts
        self.update_meta(duts=duts, point_facts=point_facts)

    def rewrite_session(self, campaign_text: str, points: Iterable[WorkingPoint]) -> None:
        """Replace campaign.yaml and points.json (each atomically): an experiment session's record grows
        with every measurement, after the run directory was created."""
        atomic_write(self.path / CAMPAIGN, campaign_text)
        atomic_write(self.path / POINTS, json.dumps([point_to_dict(p) for p in points], indent=2) + "\n")

    def set_status(self, status: str, failure: str | None = None) -> None:
        """Set run.json's status (running, complete, failed) and, for failed, why."""
        self.meta["status"] = status
        if failure:
            self.meta["failure"] = failure
        else:
            self.meta.pop("failure", None)
        if status != "running":
            self.meta["ended_at"] = time.time()
        self._write_meta()

    def _write_meta(self) -> None:
        atomic_write(self.path / RUN, json.dumps(self.meta, indent=2, sort_keys=True, default=str) + "\n")

    def reader(self) -> RunDirectory:
        """A reader of this run directory."""
        return RunDirectory.open(self.path)

    def close(self) -> None:
        """Close the trials file and release the run directory."""
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock)  # closing the descriptor releases the flock
            self._lock = None

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def link_latest(run_dir: Path) -> None:
    """Make ``<results>/latest`` a symlink to the newest run directory (best effort)."""
    link = run_dir.parent / "latest"
    tmp = run_dir.parent / f".latest.{os.getpid()}"
    with contextlib.suppress(OSError):
        if tmp.is_symlink():
            tmp.unlink()
        tmp.symlink_to(run_dir.name)
        if link.exists() and not link.is_symlink():
            tmp.unlink()
            return
        os.replace(tmp, link)
