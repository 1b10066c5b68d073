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

from natbench.errors import StoreError
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.records import (
    COUNTS,
    Record,
    Scan,
    damage_message,
    encode,
    moved_count,
    rep_key,
    scan,
    with_range,
)
from natbench.version import __version__
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
    "half_created",
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
REPAIRED = ".trials.repaired.jsonl"
"""The repaired trials.jsonl before its rename (named in run.json under :data:`PENDING` until then)."""
PENDING = "repair_pending"
"""run.json key naming the repaired trials file of a repair that has not renamed it over trials.jsonl yet."""

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


def _record_data(kind: str, obj: TrialRecord | RepetitionResult) -> dict[str, Any]:
    """The JSON-safe fields of a record (StoreError when JSON cannot hold them)."""
    data = _json_safe(obj.to_dict())
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"cannot store a {kind} record of {obj.metric}: {exc}") from exc
    return data


def _parse(rec: Record, where: Path) -> TrialRecord | RepetitionResult:
    data = dict(rec.data)
    kind = data.pop("type")
    try:
        return TrialRecord.from_dict(data) if kind == "trial" else RepetitionResult.from_dict(data)
    except (ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"{where}:{rec.line}: not a natbench record: {exc}") from None


def half_created(path: Path) -> bool:
    """True when ``path`` is a run directory whose creation stopped before run.json was written.

    Creation writes campaign.yaml, points.json, an empty trials.jsonl and run.json last (each atomically),
    and no record is stored before it returns; so a directory without run.json that holds only those
    files (trials.jsonl empty or absent) and their temporary files holds no measurement.
    """
    if not path.is_dir() or (path / RUN).exists():
        return False
    names = {p.name for p in path.iterdir()}
    known = {CAMPAIGN, POINTS, TRIALS} | {f".{n}.tmp" for n in (CAMPAIGN, POINTS, TRIALS, RUN)}
    if not names or not names <= known:
        return False
    trials = path / TRIALS
    return not trials.exists() or trials.stat().st_size == 0


def _half_created_error(path: Path) -> StoreError:
    return StoreError(
        f"{path}: half-created run directory (the process stopped before run.json was written; no trial was"
        f" stored), so there is nothing to resume: start the campaign again with `natbench run CAMPAIGN -o {path}`"
        " (the new run takes this directory over)"
    )


def _resume_damage_error(path: Path, damage: list[str]) -> StoreError:
    return StoreError(
        damage_message(
            path,
            damage,
            f"nothing was changed or measured; to accept the damage run `natbench run --resume {path} --repair`:"
            " it keeps a copy of trials.jsonl and measures the damaged repetitions again",
        )
    )


def _fresh_counts() -> dict[str, Any]:
    return {"written": 0, "trial": 0, "result": 0, "legacy": 0, "moved": []}


DAMAGE_HINT = (
    "`natbench run --resume {path} --repair` keeps a copy of trials.jsonl and measures the damaged repetitions again;"
    " `natbench report {path} --allow-damaged` reports the intact records"
)


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
        if half_created(p):
            raise _half_created_error(p)
        for name in (RUN, POINTS, CAMPAIGN):
            if not (p / name).is_file():
                raise StoreError(f"{p}: not a natbench run directory (missing {name})")
        try:
            meta = json.loads((p / RUN).read_text(encoding="utf-8"))
            points = json.loads((p / POINTS).read_text(encoding="utf-8"))
        except ValueError as exc:
            raise StoreError(f"{p}: corrupt run metadata: {exc}") from exc
        if not isinstance(meta, dict):
            raise StoreError(f"{p / RUN}: expected a JSON object")
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

    def scan(self) -> Scan:
        """Check trials.jsonl against run.json's record counts (see :mod:`natbench.run.records`)."""
        return _scan(self.path, self.meta)

    def check_resume(self, repair: bool = False) -> Scan:
        """The scan of trials.jsonl a resume starts from; StoreError listing the damage unless ``repair``."""
        found = self.scan()
        if found.damage and not repair:
            raise _resume_damage_error(self.path, found.damage)
        return found

    def records(self) -> Iterator[TrialRecord | RepetitionResult]:
        """Every intact record of trials.jsonl in order (a torn last line after a kill is skipped).

        StoreError listing every problem when the file is damaged (:meth:`scan`).
        """
        found = self.scan()
        if found.damage:
            raise StoreError(damage_message(self.path, found.damage, DAMAGE_HINT.format(path=self.path)))
        for rec in found.records:
            yield _parse(rec, self.path / TRIALS)

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
        if not (self.path / ABANDONED).exists():
            return []
        found = scan(self.path / ABANDONED, None, sequence=False)
        if found.damage:
            raise StoreError(found.damage[0])
        out = []
        for rec in found.records:
            parsed = _parse(rec, self.path / ABANDONED)
            if isinstance(parsed, TrialRecord):
                out.append(parsed)
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
    """The intact trial records of trials.jsonl (``{"type": "trial", ...}``), in order, each once."""
    results: list[dict[str, Any]]
    """The intact result records of trials.jsonl (``{"type": "result", ...}``), in order, each once."""
    warnings: list[str]
    """Notes on what is normal after a kill or during a run and was skipped: a torn last line, an
    uncounted last record, no trials.jsonl before the first record."""
    damage: list[str] = field(default_factory=list)
    """``file:line: what`` for every damaged, missing or duplicated record (:mod:`natbench.run.records`)."""
    damaged_repetitions: list[RepKey] = field(default_factory=list)
    """(point id, metric, repetition) of every repetition the damage may have touched, sorted: the ones
    ``natbench run --resume --repair`` would measure again (:attr:`~natbench.run.records.Scan.tainted`)."""


def _scan(path: Path, meta: dict[str, Any]) -> Scan:
    """Scan ``path``/trials.jsonl against ``meta`` (run.json read before it) and run.json read again after it."""
    counts = meta.get(COUNTS)
    found_counts = counts if isinstance(counts, dict) else None
    status = str(meta.get("status", "unknown"))
    after: int | None = None
    pending = _pending_file(path, meta)
    trials = pending or path / TRIALS
    found = scan(trials, found_counts, status=status)
    beyond = None if found_counts is None else int(found_counts.get("written", 0)) + (status != "complete")
    if beyond is not None and found.highest > beyond:
        # a writer may be adding records (a resume of a complete run sets it running first): read its counts and
        # status again and check against those
        with contextlib.suppress(OSError, ValueError, TypeError, AttributeError):
            again = json.loads((path / RUN).read_text(encoding="utf-8"))
            after = int(again[COUNTS]["written"])
            status = str(again.get("status", "unknown"))
        if after is not None:
            found = scan(trials, found_counts, status=status, counted_after=after)
    if pending is not None:
        found.notes.append(
            f"{path / TRIALS}: a repair stopped before renaming {pending.name} over it; read from {pending.name}"
            " (the next `natbench run --resume` finishes the repair)"
        )
    return found


def read_plain_run(path: Path) -> PlainRun:
    """Read the run directory ``path`` as plain data: for reports of runs still being written, killed or damaged.

    A missing campaign.yaml reads as "". trials.jsonl is checked against run.json's record counts
    (:mod:`natbench.run.records`): what is normal after a kill -9 (a torn last line, one uncounted record in a run
    not marked complete)
    is named in :attr:`PlainRun.warnings`, every damaged, missing or duplicated record in
    :attr:`PlainRun.damage`; the records are the intact ones, each once. A missing or corrupt run.json or
    points.json is a :class:`StoreError` naming the file.
    """
    if half_created(path):
        raise _half_created_error(path)
    meta = _read_json(path / RUN)
    if not isinstance(meta, dict):
        raise StoreError(f"{path / RUN}: expected a JSON object")
    campaign = path / CAMPAIGN
    try:
        campaign_text = campaign.read_text(encoding="utf-8") if campaign.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"{campaign}: cannot be read as UTF-8 text: {exc}") from None
    points = _read_json(path / POINTS)
    if not isinstance(points, list):
        raise StoreError(f"{path / POINTS}: expected a list of working points")
    found = _scan(path, meta)
    trials = [r.data for r in found.records if r.data["type"] == "trial"]
    results = [r.data for r in found.records if r.data["type"] == "result"]
    return PlainRun(meta, campaign_text, points, trials, results, found.notes, found.damage, sorted(found.tainted))


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise StoreError(f"{path}: missing; is this a natbench run directory?") from None
    except UnicodeDecodeError as exc:
        raise StoreError(f"{path}: not UTF-8 text (byte at offset {exc.start})") from None
    except ValueError as exc:
        raise StoreError(f"{path}: not valid JSON: {exc}") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read: {exc.strerror or exc}") from None


class RunStore:
    """Writes one run directory; use :meth:`create` for a new run and :meth:`resume` to continue one."""

    def __init__(self, path: Path, meta: dict[str, Any], completed: set[RepKey], lock: int) -> None:
        self.path = path
        self.meta = meta
        self._completed = completed
        self._lock: int | None = lock
        counts = meta.get(COUNTS)
        self._counts: dict[str, Any] = counts if isinstance(counts, dict) else _fresh_counts()
        self.meta[COUNTS] = self._counts
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
        """Create a new run directory (StoreError if it already holds a run).

        A half-created directory (:func:`half_created`: killed before run.json was written, no trial in
        it) is taken over: its files are replaced.
        """
        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        lock = _lock_dir(p)
        try:
            if half_created(p):
                for leftover in list(p.iterdir()):
                    leftover.unlink()
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
            COUNTS: _fresh_counts(),
        }
        atomic_write(p / CAMPAIGN, campaign_text)
        atomic_write(p / POINTS, json.dumps([point_to_dict(pt) for pt in points], indent=2) + "\n")
        atomic_write(p / TRIALS, "")  # exists (and its directory entry is durable) before the first trial
        atomic_write(p / RUN, json.dumps(meta, indent=2, sort_keys=True) + "\n")
        return meta

    @classmethod
    def resume(cls, path: str | os.PathLike[str], *, repair: bool = False) -> RunStore:
        """Reopen a run for appending: drop a torn last line, move cut-off repetitions' trials aside.

        A damaged trials.jsonl (:meth:`RunDirectory.scan`) is a StoreError listing every problem, and
        nothing is changed - unless ``repair``: then the file is first copied to
        ``trials.damaged-<UTC time>.jsonl``, the repetitions the damage may have touched
        (:attr:`~natbench.run.records.Scan.tainted`) lose their records (their trials go to
        trials.abandoned.jsonl) so that they are measured again, and the intact records are numbered anew.
        """
        p = Path(path)
        if half_created(p):
            raise _half_created_error(p)
        run = RunDirectory.open(p)
        lock = _lock_dir(run.path)
        try:
            return cls._resume_locked(RunDirectory.open(run.path), lock, repair)
        except BaseException:
            os.close(lock)
            raise

    @classmethod
    def _resume_locked(cls, run: RunDirectory, lock: int, repair: bool) -> RunStore:
        p = run.path
        if PENDING in run.meta:  # a repair stopped after run.json counted the repaired file: finish it first
            meta = dict(run.meta)
            _finish_repair(p, meta)
            _write_meta_file(p, meta)
            run = RunDirectory(p, meta, run.points)
        found = run.scan()
        if found.damage and not repair:
            raise _resume_damage_error(p, found.damage)
        meta = dict(run.meta)
        if found.damage:
            cls._repair(p, meta, found)
        else:
            cls._tidy(p, meta, found)
        done = {_key(r) for r in RunDirectory(p, meta, run.points).records() if isinstance(r, RepetitionResult)}
        meta.setdefault("resumed_at", []).append(time.time())
        meta["status"] = "running"
        meta.pop("failure", None)
        store = cls(p, meta, done, lock)
        store._write_meta()
        return store

    @staticmethod
    def _tidy(p: Path, meta: dict[str, Any], found: Scan) -> None:
        """An intact trials.jsonl: move trials of cut-off repetitions aside, drop a torn last line, fix the counts."""
        had_counts = isinstance(meta.get(COUNTS), dict)
        done = {rep_key(r.data) for r in found.records if r.data["type"] == "result"}
        keep = [r for r in found.records if r.data["type"] == "result" or rep_key(r.data) in done]
        cut = [r for r in found.records if r not in keep]
        counts = dict(meta[COUNTS]) if had_counts else _fresh_counts()
        counts["moved"] = with_range(list(counts.get("moved", [])), [r.seq for r in cut if r.seq is not None])
        counts["written"] = found.highest
        counts["legacy"] = len([r for r in keep if r.seq is None])
        _set_kinds(counts, keep)
        rewrite = bool(cut or found.leftovers) or found.torn or not found.exists
        _save_abandoned(p, [r.text for r in cut + found.leftovers])
        if had_counts:  # counts first: a crash before the rewrite leaves moved-aside leftovers, which read as such
            meta[COUNTS] = counts
            _write_meta_file(p, meta)
        if rewrite:
            atomic_write(p / TRIALS, "".join(r.text + "\n" for r in keep))
        meta[COUNTS] = counts  # (a run from before counts: counted only once its file is rewritten)

    @staticmethod
    def _repair(p: Path, meta: dict[str, Any], found: Scan) -> None:
        """A damaged trials.jsonl the user accepted: back it up, drop what the damage touched, number anew."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        backup = p / f"trials.damaged-{stamp}.jsonl"
        if found.exists:
            with open(p / TRIALS, "rb") as src, open(backup, "wb") as dst:
                dst.write(src.read())
                dst.flush()
                os.fsync(dst.fileno())
            _fsync_dir(p)
        done = {rep_key(r.data) for r in found.records if r.data["type"] == "result"} - found.tainted
        keep = [r for r in found.records if rep_key(r.data) not in found.tainted]
        keep = [r for r in keep if r.data["type"] == "result" or rep_key(r.data) in done]
        aside = [r for r in found.records if r not in keep and r.data["type"] == "trial"]
        _save_abandoned(p, [r.text for r in aside])
        # every kept record numbered anew, the old unnumbered (legacy) ones too: count the kinds from these
        renumbered: list[Record] = []
        for i, r in enumerate(keep, 1):
            line = encode(r.data["type"], {k: v for k, v in r.data.items() if k != "type"}, i)
            renumbered.append(Record(i, line.rstrip("\n"), r.data, i))
        counts = _fresh_counts()
        counts["written"] = len(renumbered)
        _set_kinds(counts, renumbered)
        repairs = list(meta.get("repairs", []))
        repairs.append(
            {
                "at": time.time(),
                "backup": backup.name if found.exists else None,
                "damage": list(found.damage),
                "remeasured": [list(k) for k in sorted(found.tainted)],
                "dropped_results": len([r for r in found.records if r.data["type"] == "result" and r not in keep]),
            }
        )
        # the new file under a temporary name (fsync) first, then run.json names it as pending with the new counts
        # (the commit point: readers and the next resume take the pending file from then on), then the rename
        pending = p / REPAIRED
        with open(pending, "w", encoding="utf-8") as f:
            f.write("".join(r.text + "\n" for r in renumbered))
            f.flush()
            os.fsync(f.fileno())
        _fsync_dir(p)  # its entry durable before run.json names it
        meta[COUNTS] = counts
        meta["repairs"] = repairs
        meta[PENDING] = REPAIRED
        _write_meta_file(p, meta)
        _finish_repair(p, meta)

    # -- writing --------------------------------------------------------------------
    def _append(self, kind: str, obj: TrialRecord | RepetitionResult) -> None:
        """Write one record line (fsync), then count it in run.json (atomically): never counted before it is on disk."""
        if self._fh is None:
            raise StoreError(f"{self.path}: store is closed")
        seq = int(self._counts["written"]) + 1
        line = encode(kind, _record_data(kind, obj), seq)
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._counts["written"] = seq
        self._counts[kind] = int(self._counts.get(kind, 0)) + 1
        self._write_meta()

    def append_trial(self, record: TrialRecord) -> None:
        """Append one trial; it is on disk (and counted in run.json) when this returns."""
        self._append("trial", record)

    def append_result(self, result: RepetitionResult) -> None:
        """Append one repetition result (marks the repetition complete); on disk (and counted) when this returns."""
        self._append("result", result)
        self._completed.add((result.point_id, result.metric, result.repetition))

    def abandon(self, keys: Iterable[RepKey]) -> int:
        """Move the stored trials of the repetitions ``keys`` that have no result to trials.abandoned.jsonl.

        What a resume does for cut-off repetitions, done while the run is being written: a distributed run
        calls it when a testbed was lost in the middle of a point, before the point's unfinished repetitions
        are measured again elsewhere. Their sequence numbers are counted as moved (run.json first, as a
        resume does), then trials.jsonl is rewritten atomically without them. Returns how many were moved.
        """
        if self._fh is None:
            raise StoreError(f"{self.path}: store is closed")
        wanted = {k for k in keys if k not in self._completed}
        if not wanted:
            return 0
        found = _scan(self.path, self.meta)
        if found.damage:
            raise StoreError(damage_message(self.path, found.damage, DAMAGE_HINT.format(path=self.path)))
        cut = [r for r in found.records if r.data["type"] == "trial" and rep_key(r.data) in wanted]
        if not cut:
            return 0
        keep = [r for r in found.records if r not in cut]
        _save_abandoned(self.path, [r.text for r in cut])
        seqs = [r.seq for r in cut if r.seq is not None]
        self._counts["moved"] = with_range(list(self._counts.get("moved", [])), seqs)
        self._write_meta()
        self._fh.close()
        self._fh = None
        atomic_write(self.path / TRIALS, "".join(r.text + "\n" for r in keep))
        self._fh = open(self.path / TRIALS, "a", encoding="utf-8")  # noqa: SIM115 - kept open
        return len(cut)

    def verify(self, planned: Iterable[RepKey]) -> None:
        """StoreError unless trials.jsonl is intact and holds a result of every ``planned`` repetition.

        The runner calls it before marking a run ``complete``: a run never ends complete with fewer
        results than planned or with damaged records.
        """
        found = _scan(self.path, self.meta)
        if found.damage:
            raise StoreError(damage_message(self.path, found.damage, DAMAGE_HINT.format(path=self.path)))
        stored = {rep_key(r.data) for r in found.records if r.data["type"] == "result"}
        missing = sorted(k for k in planned if k not in stored)
        if missing:
            first = ", ".join(f"{pid} {m} repetition {r}" for pid, m, r in missing[:5])
            raise StoreError(
                f"{self.path / TRIALS}: {len(missing)} planned repetition(s) have no stored result ({first}"
                f"{', ...' if len(missing) > 5 else ''}): the run is not complete"
            )

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

    def mark_failed(self, exc: BaseException) -> None:
        """Set the status to failed with why (``interrupted by Ctrl-C`` or the error); never raises, so the
        run's own error is the one the caller sees."""
        why = "interrupted by Ctrl-C" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(Exception):
            self.set_status("failed", failure=why)

    def _write_meta(self) -> None:
        _write_meta_file(self.path, self.meta)

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


def _write_meta_file(path: Path, meta: dict[str, Any]) -> None:
    atomic_write(path / RUN, json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n")


def _key(rec: TrialRecord | RepetitionResult) -> RepKey:
    return (rec.point_id, rec.metric, rec.repetition)


def _pending_file(path: Path, meta: dict[str, Any]) -> Path | None:
    """The repaired trials file a stopped repair left (run.json names it, it exists), else None."""
    if meta.get(PENDING) == REPAIRED and (path / REPAIRED).is_file():
        return path / REPAIRED
    return None


def _finish_repair(p: Path, meta: dict[str, Any]) -> None:
    """Rename the repaired trials file run.json names over trials.jsonl (fsync the directory); drop the name from
    ``meta`` (the caller writes run.json). Already renamed (a crash after the rename): only the name is dropped."""
    pending = _pending_file(p, meta)
    if pending is not None:
        os.replace(pending, p / TRIALS)
        _fsync_dir(p)
    meta.pop(PENDING, None)


def _set_kinds(counts: dict[str, Any], kept: list[Record]) -> None:
    """Per-kind counts: the numbered records kept, plus the trials moved aside."""
    counts["trial"] = len([r for r in kept if r.data["type"] == "trial" and r.seq is not None]) + moved_count(counts)
    counts["result"] = len([r for r in kept if r.data["type"] == "result" and r.seq is not None])


def _save_abandoned(p: Path, lines: list[str]) -> None:
    """Append ``lines`` to trials.abandoned.jsonl (fsync), skipping lines it holds already (a crash can repeat a
    resume's first step)."""
    if not lines:
        return
    already = {r.text for r in scan(p / ABANDONED, None, sequence=False).records} if (p / ABANDONED).exists() else set()
    new = [ln for ln in lines if ln not in already]
    if new:
        with open(p / ABANDONED, "a", encoding="utf-8") as f:
            f.write("".join(ln + "\n" for ln in new))
            f.flush()
            os.fsync(f.fileno())


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
