"""Writing run directories: :class:`RunStore` creates one and appends every trial and result durably.

Durability: every line is written, flushed and ``fsync``-ed before :meth:`RunStore.append_trial` returns, so
a trial is on disk before the next one starts; only then is it counted in run.json (replaced atomically:
write, fsync, rename, fsync the directory). A run directory has one writer at a time (an ``flock`` on the
directory, released by the kernel when the process dies). Continuing a run (resume, repair) is
:mod:`natbench.run.repair`'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import fcntl
import os
import platform
import socket
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from natbench.errors import NatbenchError, StoreError
from natbench.plugins import DutDeclarations
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.format import (
    ABANDONED,
    CAMPAIGN,
    POINTS,
    RUN,
    STATUSES,
    TRIALS,
    HostFacts,
    PointRecord,
    RecordCounts,
    RepKey,
    RunMeta,
    TesterFacts,
    encode_meta,
    encode_points,
    encode_record,
    kind_of,
    plain_json,
)
from natbench.run.reader import DAMAGE_HINT, RunDirectory, half_created, scan_run
from natbench.run.records import damage_message, rep_key, scan, with_range
from natbench.version import __version__
from natbench.workingpoint import WorkingPoint


def host_facts() -> HostFacts:
    """Facts about the machine natbench runs on."""
    return HostFacts(
        hostname=socket.gethostname(),
        platform=platform.platform(),
        python=platform.python_version(),
        machine=platform.machine(),
        cpus=os.cpu_count(),
    )


def git_commit() -> str | None:
    """The commit of the natbench source tree, when it is a git checkout."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def new_meta(
    *,
    campaign_file: str | None = None,
    campaign_name: str | None = None,
    tester_facts: Mapping[str, Any] | TesterFacts | None = None,
    dut_facts: Mapping[str, Any] | None = None,
) -> RunMeta:
    """run.json of a run created now, on this machine, by this natbench."""
    return RunMeta(
        natbench_version=__version__,
        git_commit=git_commit(),
        host=host_facts(),
        started_at=time.time(),
        campaign_file=campaign_file,
        campaign_name=campaign_name,
        tester=_tester(tester_facts),
        duts=plain_json(dict(dut_facts or {})),
        status="running",
        records=RecordCounts(),
    )


def _tester(facts: Mapping[str, Any] | TesterFacts | None) -> TesterFacts:
    if isinstance(facts, TesterFacts):
        return facts
    return TesterFacts.from_dict(plain_json(dict(facts or {})))


def lock_dir(path: Path) -> int:
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


def fsync_dir(path: Path) -> None:
    """fsync a directory, so the entries renamed or created in it survive a power cut."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_fd(path: Path, *, exclusive: bool = False) -> int:
    """``path`` opened for appending (created when missing; ``exclusive``: it must not exist), never through a
    symbolic link: a run directory's files are its own, and a link in a file's place (planted, or copied along)
    would send the records elsewhere. StoreError naming the file when it is a link."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_EXCL if exclusive else 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise StoreError(
                f"{path}: a symbolic link: natbench writes a run directory's files itself, never through a link"
            ) from None
        raise


def atomic_write(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` so that a crash leaves either the old or the new file.

    Writes a hidden temporary file beside it, fsyncs it, renames it over ``path``
    and fsyncs the directory, so the new entry survives a power cut too.
    """
    tmp = path.with_name(f".{path.name}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()  # a leftover of a killed writer (a link in its place is removed, never written through)
    with open(append_fd(tmp, exclusive=True), "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_meta_file(path: Path, meta: RunMeta) -> None:
    """Replace ``path``/run.json with ``meta`` (atomically)."""
    atomic_write(path / RUN, encode_meta(meta))


def save_abandoned(p: Path, lines: list[str]) -> None:
    """Append ``lines`` to trials.abandoned.jsonl (fsync), skipping lines it holds already (a crash can repeat a
    resume's first step)."""
    if not lines:
        return
    already = {r.text for r in scan(p / ABANDONED, None, sequence=False).records} if (p / ABANDONED).exists() else set()
    new = [ln for ln in lines if ln not in already]
    if new:
        with open(append_fd(p / ABANDONED), "a", encoding="utf-8") as f:
            f.write("".join(ln + "\n" for ln in new))
            f.flush()
            os.fsync(f.fileno())


def _records(points: Iterable[WorkingPoint | PointRecord]) -> list[PointRecord]:
    return [p if isinstance(p, PointRecord) else PointRecord.of(p) for p in points]


class RunWriteError(NatbenchError):
    """A file of the run directory could not be written (a full disk, a file-size limit, a file system gone
    read-only): the run stops, and a resume continues it once the cause is gone (exit status 1)."""


@contextlib.contextmanager
def _writing(run: Path, path: Path) -> Iterator[None]:
    """An OSError while writing ``path`` of the run directory ``run`` as a :class:`RunWriteError` naming both."""
    try:
        yield
    except OSError as exc:
        raise RunWriteError(
            f"{path}: cannot be written: {exc.strerror or type(exc).__name__}; what was stored before stands"
            f" (`natbench run --resume {run}` continues the run once there is room)"
        ) from None


class RunStore:
    """Writes one run directory; use :meth:`create` for a new run (:func:`natbench.run.repair.resume_store`
    continues one)."""

    def __init__(self, path: Path, meta: RunMeta, completed: set[RepKey], lock: int) -> None:
        self.path = path
        """The run directory."""
        counts = meta.records if isinstance(meta.records, RecordCounts) else RecordCounts()
        self._meta = meta.replace(records=counts)
        self._completed = completed
        self._lock: int | None = lock
        self._fh: IO[str] | None = open(append_fd(path / TRIALS), "a", encoding="utf-8")  # noqa: SIM115 - kept open

    @property
    def meta(self) -> RunMeta:
        """run.json as last written."""
        return self._meta

    @property
    def counts(self) -> RecordCounts:
        """The record counts as last written."""
        assert isinstance(self._meta.records, RecordCounts)
        return self._meta.records

    # -- creation -------------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: str | os.PathLike[str],
        *,
        campaign_text: str,
        points: Iterable[WorkingPoint | PointRecord],
        campaign_file: str | None = None,
        campaign_name: str | None = None,
        tester_facts: Mapping[str, Any] | TesterFacts | None = None,
        dut_facts: Mapping[str, Any] | None = None,
        meta: RunMeta | None = None,
    ) -> RunStore:
        """Create a new run directory (StoreError if it already holds a run).

        run.json is :func:`new_meta` of the keywords, or ``meta`` as given (a run written elsewhere, a synthetic
        one: then the keywords must be left out). A half-created directory (:func:`half_created`: killed before
        run.json was written, no trial in it) is taken over: its files are replaced.
        """
        if meta is None:
            meta = new_meta(
                campaign_file=campaign_file,
                campaign_name=campaign_name,
                tester_facts=tester_facts,
                dut_facts=dut_facts,
            )
        elif campaign_file or campaign_name or tester_facts or dut_facts:
            raise ValueError("give either meta or its keywords, not both")
        meta = meta.replace(records=RecordCounts())
        p = Path(path)
        p.mkdir(parents=True, exist_ok=True)
        lock = lock_dir(p)
        try:
            if half_created(p):
                for leftover in list(p.iterdir()):
                    leftover.unlink()
            if any((p / name).exists() for name in (RUN, TRIALS, POINTS, CAMPAIGN)):
                raise StoreError(f"{p}: already holds a run; use --resume to continue it or choose another directory")
            atomic_write(p / CAMPAIGN, campaign_text)
            atomic_write(p / POINTS, encode_points(_records(points)))
            atomic_write(p / TRIALS, "")  # exists (and its directory entry is durable) before the first trial
            write_meta_file(p, meta)
        except BaseException:
            os.close(lock)
            raise
        return cls(p, meta, set(), lock)

    # -- writing --------------------------------------------------------------------
    def _lines(self, records: Iterable[TrialRecord | RepetitionResult]) -> tuple[str, RecordCounts]:
        """The numbered lines of ``records`` and the counts once they are written (StoreError when JSON cannot
        hold one of them: then nothing is written)."""
        counts = self.counts
        lines = []
        for record in records:
            kind = kind_of(record)
            seq = counts.written + 1
            try:
                lines.append(encode_record(record, seq))
            except (TypeError, ValueError) as exc:
                raise StoreError(f"cannot store a {kind} record of {record.metric}: {exc}") from exc
            counts = dataclasses.replace(counts, written=seq, **{kind: getattr(counts, kind) + 1})
        return "".join(lines), counts

    def _append(self, records: list[TrialRecord | RepetitionResult]) -> None:
        """Write record lines (fsync), then count them in run.json (atomically): never counted before on disk."""
        if self._fh is None:
            raise StoreError(f"{self.path}: store is closed")
        text, counts = self._lines(records)
        with _writing(self.path, self.path / TRIALS):
            self._fh.write(text)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        self._write(self._meta.replace(records=counts))
        self._completed.update((r.point_id, r.metric, r.repetition) for r in records if isinstance(r, RepetitionResult))

    def append_trial(self, record: TrialRecord) -> None:
        """Append one trial; it is on disk (and counted in run.json) when this returns."""
        self._append([record])

    def append_result(self, result: RepetitionResult) -> None:
        """Append one repetition result (marks the repetition complete); on disk (and counted) when this returns."""
        self._append([result])

    def append_all(self, records: Iterable[TrialRecord | RepetitionResult]) -> None:
        """Append many records at once (one fsync, then one count): for a run written elsewhere or a synthetic
        one, not for measuring (where each trial must be on disk before the next starts)."""
        self._append(list(records))

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
        found = scan_run(self.path, self._meta)
        if found.damage:
            raise StoreError(damage_message(self.path, found.damage, DAMAGE_HINT.format(path=self.path)))
        cut = [r for r in found.records if r.data["type"] == "trial" and rep_key(r.data) in wanted]
        if not cut:
            return 0
        keep = [r for r in found.records if r not in cut]
        with _writing(self.path, self.path / ABANDONED):
            save_abandoned(self.path, [r.text for r in cut])
        seqs = [r.seq for r in cut if r.seq is not None]
        moved = with_range([list(x) for x in self.counts.moved], seqs)
        self._write(self._meta.replace(records=dataclasses.replace(self.counts, moved=tuple((a, b) for a, b in moved))))
        self._fh.close()
        self._fh = None
        with _writing(self.path, self.path / TRIALS):  # the store stays closed: a resume finishes the move
            atomic_write(self.path / TRIALS, "".join(r.text + "\n" for r in keep))
        self._fh = open(append_fd(self.path / TRIALS), "a", encoding="utf-8")  # noqa: SIM115 - kept open
        return len(cut)

    def verify(self, planned: Iterable[RepKey]) -> None:
        """StoreError unless trials.jsonl is intact and holds a result of every ``planned`` repetition.

        The runner calls it before marking a run ``complete``: a run never ends complete with fewer
        results than planned or with damaged records.
        """
        found = scan_run(self.path, self._meta)
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

    def update(self, **changes: Any) -> None:
        """Change fields of run.json (:class:`~natbench.run.format.RunMeta` field names; atomically)."""
        self._write(self._meta.replace(**changes))

    def record_tester_facts(self, facts: Mapping[str, Any] | TesterFacts) -> None:
        """Store the tester's facts (what it learnt on connecting replaces what it knew before)."""
        self.update(tester=_tester(facts))

    def record_dut_facts(self, point_id: str, facts: Any) -> None:
        """Store the DUT facts read after setting up a working point in run.json.

        ``duts`` holds the latest facts by DUT name (a single DUT's facts, not keyed
        by name, are filed under ``dut``) and ``point_facts[point_id]`` the same per point.
        """
        plain = plain_json(facts)
        keyed = isinstance(plain, dict) and plain and all(isinstance(v, dict) for v in plain.values())
        duts: dict[str, Any] = plain if keyed else {"dut": plain}
        self.update(duts=duts, point_facts={**self._meta.point_facts, point_id: duts})

    def record_declarations(self, declared: Mapping[str, DutDeclarations]) -> None:
        """Store what the DUT kinds declared for reports (run.json ``dut_declarations``, by DUT name; a DUT's
        latest declaration replaces its earlier one)."""
        self.update(dut_declarations={**self._meta.dut_declarations, **declared})

    def add_other(self, fields: Mapping[str, Any]) -> None:
        """Store keys of run.json natbench does not interpret (an experiment's own fields: the pytest plugin's
        ``pytest``), as plain JSON."""
        self.update(other={**self._meta.other, **plain_json(dict(fields))})

    def rewrite_session(self, campaign_text: str, points: Iterable[WorkingPoint | PointRecord]) -> None:
        """Replace campaign.yaml and points.json (each atomically): an experiment session's record grows
        with every measurement, after the run directory was created."""
        atomic_write(self.path / CAMPAIGN, campaign_text)
        atomic_write(self.path / POINTS, encode_points(_records(points)))

    def set_status(self, status: str, failure: str | None = None) -> None:
        """Set run.json's status (running, complete, failed) and, for failed, why."""
        if status not in STATUSES:
            raise ValueError(f"status: expected one of {', '.join(STATUSES)}, got {status!r}")
        ended = time.time() if status != "running" else self._meta.ended_at
        self.update(status=status, failure=failure or None, ended_at=ended)

    def mark_failed(self, exc: BaseException) -> None:
        """Set the status to failed with why (``interrupted by Ctrl-C`` or the error); never raises, so the
        run's own error is the one the caller sees."""
        why = "interrupted by Ctrl-C" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(Exception):
            self.set_status("failed", failure=why)

    def _write(self, meta: RunMeta) -> None:
        self._meta = meta  # first: a record whose count failed to reach run.json keeps its number taken
        with _writing(self.path, self.path / RUN):
            write_meta_file(self.path, meta)

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
