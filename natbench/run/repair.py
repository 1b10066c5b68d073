"""Continuing a run directory: resume (tidy an intact trials.jsonl), or repair a damaged one the user accepted.

Resume policy: a repetition is the unit of completion. A repetition is complete when its ``result`` line is on
disk. When a run is resumed, the trials of a repetition that had started but not finished are moved to
``trials.abandoned.jsonl`` (kept, never deleted: they are real measurements) and the repetition is run again
from its first step. Rebuilding the search state from stored steps instead is not sound for natbench's
procedures: the DUT's connection table (filled by phase 1, needed by every phase-2 step and by the tear-down
measurement) does not survive the interruption, and the DUT is set up afresh on resume. Restarting the
repetition is deterministic, so ``trials.jsonl`` ends up with exactly the records of an uninterrupted run. A
torn last line (the process died while writing it) is dropped the same way.

A repair (``--resume --repair``) copies the damaged trials.jsonl aside, drops the records of every repetition
the damage may have touched (they are measured again), numbers the kept records anew and commits the new file
through run.json's ``repair_pending`` before renaming it over trials.jsonl (docs/engine.md, "Run-directory
integrity").
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import stat
import time
from pathlib import Path

from natbench.errors import StoreError
from natbench.results import RepetitionResult
from natbench.run.format import DAMAGED, REPAIRED, TRIALS, RecordCounts, Repair, RepKey, RunMeta, encode
from natbench.run.format.safefile import open_regular
from natbench.run.reader import RunDirectory, half_created, half_created_error, pending_file, resume_damage_error
from natbench.run.records import Record, Scan, rep_key, with_range
from natbench.run.writer import RunStore, append_fd, atomic_write, fsync_dir, lock_dir, save_abandoned, write_meta_file


def resume_store(path: str | os.PathLike[str], *, repair: bool = False) -> RunStore:
    """Reopen a run for appending: drop a torn last line, move cut-off repetitions' trials aside.

    A damaged trials.jsonl (:meth:`RunDirectory.scan`) is a StoreError listing every problem, and
    nothing is changed - unless ``repair``: then the file is first copied to
    ``trials.damaged-<UTC time>.jsonl``, the repetitions the damage may have touched
    (:attr:`~natbench.run.records.Scan.tainted`) lose their records (their trials go to
    trials.abandoned.jsonl) so that they are measured again, and the intact records are numbered anew.
    """
    p = Path(path)
    if half_created(p):
        raise half_created_error(p)
    run = RunDirectory.open(p)
    lock = lock_dir(run.path)
    try:
        return _resume_locked(RunDirectory.open(run.path), lock, repair)
    except BaseException:
        os.close(lock)
        raise


def _resume_locked(run: RunDirectory, lock: int, repair: bool) -> RunStore:
    p = run.path
    meta = run.meta
    if meta.repair_pending is not None:  # a repair stopped after run.json counted the repaired file: finish it first
        meta = finish_repair(p, meta)
        write_meta_file(p, meta)
        run = RunDirectory(p, meta, run.points)
    found = run.scan()
    if found.damage and not repair:
        raise resume_damage_error(p, found.damage)
    meta = _repair(p, meta, found) if found.damage else _tidy(p, meta, found)
    done = {_key(r) for r in RunDirectory(p, meta, run.points).records() if isinstance(r, RepetitionResult)}
    meta = meta.replace(resumed_at=(*meta.resumed_at, time.time()), status="running", failure=None)
    store = RunStore(p, meta, done, lock)
    write_meta_file(p, store.meta)
    return store


def _tidy(p: Path, meta: RunMeta, found: Scan) -> RunMeta:
    """An intact trials.jsonl: move trials of cut-off repetitions aside, drop a torn last line, fix the counts."""
    had_counts = isinstance(meta.records, RecordCounts)
    done = {rep_key(r.data) for r in found.records if r.data["type"] == "result"}
    keep = [r for r in found.records if rep_key(r.data) in done]  # a result's repetition is done: it stays
    cut = [r for r in found.records if r not in keep]
    counts = meta.records if isinstance(meta.records, RecordCounts) else RecordCounts()
    moved = with_range([list(x) for x in counts.moved], [r.seq for r in cut if r.seq is not None])
    counts = dataclasses.replace(
        counts,
        moved=tuple((a, b) for a, b in moved),
        written=found.highest,
        legacy=len([r for r in keep if r.seq is None]),
    )
    counts = _set_kinds(counts, keep)
    rewrite = bool(cut or found.leftovers) or found.torn or not found.exists
    save_abandoned(p, [r.text for r in cut + found.leftovers])
    if had_counts:  # counts first: a crash before the rewrite leaves moved-aside leftovers, which read as such
        write_meta_file(p, meta.replace(records=counts))
    if rewrite:
        atomic_write(p / TRIALS, "".join(r.text + "\n" for r in keep))
    return meta.replace(records=counts)  # (a run from before counts: counted only once its file is rewritten)


def _repair(p: Path, meta: RunMeta, found: Scan) -> RunMeta:
    """A damaged trials.jsonl the user accepted: back it up, drop what the damage touched, number anew."""
    backup = backup_name(p, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
    if found.exists:
        _keep_damaged(p / TRIALS, backup)
        fsync_dir(p)
    done = {rep_key(r.data) for r in found.records if r.data["type"] == "result"}
    keep = [r for r in found.records if rep_key(r.data) not in found.tainted]  # the damage's repetitions go
    keep = [r for r in keep if rep_key(r.data) in done]  # of the rest, a repetition with its result stays
    aside = [r for r in found.records if r not in keep and r.data["type"] == "trial"]
    save_abandoned(p, [r.text for r in aside])
    # every kept record numbered anew, the old unnumbered (legacy) ones too: count the kinds from these
    renumbered: list[Record] = []
    for i, r in enumerate(keep, 1):
        line = encode(r.data["type"], {k: v for k, v in r.data.items() if k != "type"}, i)
        renumbered.append(Record(i, line.rstrip("\n"), r.data, i, r.record))
    counts = _set_kinds(RecordCounts(written=len(renumbered)), renumbered)
    repair = Repair(
        at=time.time(),
        backup=backup.name if found.exists else None,
        damage=tuple(found.damage),
        remeasured=tuple(sorted(found.tainted)),
        dropped_results=len([r for r in found.records if r.data["type"] == "result" and r not in keep]),
    )
    # the new file under a temporary name (fsync) first, then run.json names it as pending with the new counts
    # (the commit point: readers and the next resume take the pending file from then on), then the rename
    pending = p / REPAIRED
    with open(pending, "w", encoding="utf-8") as f:
        f.write("".join(r.text + "\n" for r in renumbered))
        f.flush()
        os.fsync(f.fileno())
    fsync_dir(p)  # its entry durable before run.json names it
    # no longer complete (its dropped repetitions are measured again): a reader between here and the resume's own
    # status must not take the missing results for damage
    status = "running" if meta.status == "complete" else meta.status
    meta = meta.replace(records=counts, repairs=(*meta.repairs, repair), repair_pending=REPAIRED, status=status)
    write_meta_file(p, meta)
    return finish_repair(p, meta)


def finish_repair(p: Path, meta: RunMeta) -> RunMeta:
    """Rename the repaired trials file run.json names over trials.jsonl (fsync the directory); ``meta`` without its
    name (the caller writes run.json). Already renamed (a crash after the rename): only the name is dropped."""
    pending = pending_file(p, meta)
    if pending is not None:
        os.replace(pending, p / TRIALS)
        fsync_dir(p)
    return meta.replace(repair_pending=None)


def _key(rec: RepetitionResult) -> RepKey:
    return (rec.point_id, rec.metric, rec.repetition)


def _set_kinds(counts: RecordCounts, kept: list[Record]) -> RecordCounts:
    """Per-kind counts: the numbered records kept, plus the trials moved aside."""
    trials = len([r for r in kept if r.data["type"] == "trial" and r.seq is not None]) + counts.moved_count
    results = len([r for r in kept if r.data["type"] == "result" and r.seq is not None])
    return dataclasses.replace(counts, trial=trials, result=results)


def backup_name(p: Path, stamp: str) -> Path:
    """A name for the copy of a damaged trials.jsonl that nothing in ``p`` has: the repair's time (``stamp``), and
    ``-2``, ``-3``, ... after it when an earlier repair in the same second took that name (its copy is kept whole)."""
    backup = p / DAMAGED.format(stamp=stamp)
    n = 1
    while os.path.lexists(backup):
        n += 1
        backup = p / DAMAGED.format(stamp=f"{stamp}-{n}")
    return backup


def _keep_damaged(trials: Path, backup: Path) -> None:
    """Keep the damaged ``trials`` as ``backup``: a regular file copied (in chunks, fsync-ed); anything else in its
    place (a symlink, to a device, a FIFO or anywhere, a directory) or a file that cannot be read moved aside by
    name, never read or never read further."""
    if not stat.S_ISREG(os.lstat(trials).st_mode):
        os.replace(trials, backup)  # the entry itself: a symlink is renamed, not followed
        return
    try:
        with open_regular(trials) as src, open(append_fd(backup, exclusive=True), "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
            dst.flush()
            os.fsync(dst.fileno())
    except (OSError, StoreError):  # it cannot be read (a disk error, a view of the kernel): kept as it is, by name
        backup.unlink(missing_ok=True)
        os.replace(trials, backup)
