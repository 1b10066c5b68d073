"""Reading run directories: strictly (:class:`RunDirectory`: resume, ``natbench run``'s summary, Parquet export)
and leniently (:func:`read_run`: reports and notebooks, which must read a run that is still being written, was
killed or is damaged). Both return typed data (:mod:`natbench.run.format`), never the files' dicts.

Every file is read through :func:`read_bytes` and decoded by the format's codec; ``trials.jsonl`` is checked
by the scanner (:mod:`natbench.run.records`) against run.json's record counts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from natbench.errors import StoreError
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.format import (
    ABANDONED,
    CAMPAIGN,
    POINTS,
    REPAIRED,
    RESULTS_PARQUET,
    RUN,
    TRIALS,
    TRIALS_PARQUET,
    PointRecord,
    RecordCounts,
    RecordPlan,
    RepKey,
    RunMeta,
    StoredCampaign,
    decode_campaign,
    decode_meta,
    decode_points,
)
from natbench.run.format.fields import shown
from natbench.run.format.safefile import FILE_CAPS, read_capped
from natbench.run.records import Scan, damage_message, scan

if TYPE_CHECKING:
    import pandas as pd


DAMAGE_HINT = (
    "`natbench run --resume {path} --repair` keeps a copy of trials.jsonl and measures the damaged repetitions again;"
    " `natbench report {path} --allow-damaged` reports the intact records"
)
"""What to do about a damaged run directory (``{path}``: the run directory)."""


def read_bytes(path: Path) -> bytes:
    """The bytes of one metadata file of a run directory: a regular file no larger than its cap
    (:mod:`natbench.run.format.safefile`); StoreError naming it when it is missing, no regular file, too large
    or cannot be read."""
    try:
        return read_capped(path, FILE_CAPS.get(path.name, FILE_CAPS["run.json"]))
    except FileNotFoundError:
        raise StoreError(f"{path}: missing; is this a natbench run directory?") from None
    except OSError as exc:
        raise StoreError(f"{path}: cannot be read: {exc.strerror or exc}") from None


@contextlib.contextmanager
def named_os_errors(path: Path) -> Iterator[None]:
    """Turn an OSError met while looking at the run directory ``path`` (a listing, a stat, a name too long) into a
    StoreError naming the file; the files themselves are read through :func:`read_bytes` and the scanner."""
    try:
        yield
    except OSError as exc:
        where = exc.filename if isinstance(exc.filename, str) else path
        raise StoreError(f"{where}: cannot be read: {exc.strerror or type(exc).__name__}") from None


def check_point_keys(path: Path, meta: RunMeta, points: list[PointRecord]) -> None:
    """StoreError naming run.json's first key that is no working point of points.json: ``point_facts`` and
    ``point_testbeds`` hold only points the run set up, and every one of them is in points.json before it is set
    up (so an extra key was added to one file after the run, or points.json lost a point)."""
    ids = {p.id for p in points}
    for field_name, keyed in (("point_facts", meta.point_facts), ("point_testbeds", meta.point_testbeds)):
        extra = sorted(k for k in keyed if k not in ids)
        if extra:
            raise StoreError(
                f"{path / RUN}: {field_name}: {shown(extra[0])} is no working point of {POINTS}"
                f"{f' (and {len(extra) - 1} more)' if len(extra) > 1 else ''}: one of the two files was changed"
                " after the run"
            )


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


def half_created_error(path: Path) -> StoreError:
    """The error of a half-created run directory (:func:`half_created`)."""
    return StoreError(
        f"{path}: half-created run directory (the process stopped before run.json was written; no trial was"
        f" stored), so there is nothing to resume: start the campaign again with `natbench run CAMPAIGN -o {path}`"
        " (the new run takes this directory over)"
    )


def resume_damage_error(path: Path, damage: list[str]) -> StoreError:
    """The error of a resume refused because of damage (``--repair`` accepts it)."""
    return StoreError(
        damage_message(
            path,
            damage,
            f"nothing was changed or measured; to accept the damage run `natbench run --resume {path} --repair`:"
            " it keeps a copy of trials.jsonl and measures the damaged repetitions again",
        )
    )


def pending_file(path: Path, meta: RunMeta) -> Path | None:
    """The repaired trials file a stopped repair left (run.json names it, it exists), else None."""
    if meta.repair_pending == REPAIRED and (path / REPAIRED).is_file():
        return path / REPAIRED
    return None


def record_plan(points: list[PointRecord], campaign: StoredCampaign) -> RecordPlan:
    """What the records of a run may refer to: its points, the metrics this natbench knows, and the repetitions
    its campaign plans per point and metric (a point's own ``metric_settings`` first; an experiment session plans
    none: its measurements add repetitions)."""
    from natbench.metrics.registry import metric_names

    repetitions: dict[tuple[str, str], int] = {}
    if not campaign.experiment_session:
        for p in points:
            for metric, count in campaign.metric_repetitions.items():
                own = p.metric_settings.get(metric, {}).get("repetitions")
                planned = own if isinstance(own, int) and not isinstance(own, bool) else count
                repetitions[(p.id, metric)] = planned
    return RecordPlan(
        frozenset(p.id for p in points), frozenset(metric_names()), repetitions, not campaign.experiment_session
    )


def scan_run(path: Path, meta: RunMeta, plan: RecordPlan | None = None) -> Scan:
    """Scan ``path``/trials.jsonl against ``meta`` (run.json read before it) and run.json read again after it;
    with ``plan`` every record must refer to what the run holds (:func:`record_plan`)."""
    counts = meta.counts
    status = str(meta.status)
    after: int | None = None
    pending = pending_file(path, meta)
    trials = pending or path / TRIALS
    found = scan(trials, counts, status=status, plan=plan)
    known = meta.records if isinstance(meta.records, RecordCounts) else None  # malformed counts are not trusted
    beyond = None if known is None else known.written + (status != "complete")
    if beyond is not None and max(found.highest, found.beyond) > beyond:
        # a writer may be adding records (a resume of a complete run sets it running first): read its counts and
        # status again and check against those
        with contextlib.suppress(StoreError):
            again = decode_meta(read_bytes(path / RUN), path / RUN)
            if isinstance(again.records, RecordCounts):
                after = again.records.written
                status = str(again.status)
        if after is not None:
            found = scan(trials, counts, status=status, counted_after=after, plan=plan)
    if pending is not None:
        found.notes.append(
            f"{path / TRIALS}: a repair stopped before renaming {pending.name} over it; read from {pending.name}"
            " (the next `natbench run --resume` finishes the repair)"
        )
    return found


@dataclass(frozen=True)
class RunDirectory:
    """Strict read access to a run directory (resume, ``natbench run``'s summary, Parquet export): damage in
    trials.jsonl is a StoreError listing it."""

    path: Path
    """The run directory."""
    meta: RunMeta = field(default_factory=RunMeta)
    """run.json."""
    points: list[PointRecord] = field(default_factory=list)
    """points.json: the working points in campaign order."""

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> RunDirectory:
        """Open an existing run directory (StoreError when it is not one)."""
        p = Path(path)
        with named_os_errors(p):
            if half_created(p):
                raise half_created_error(p)
            for name in (RUN, POINTS, CAMPAIGN):
                if not (p / name).exists() and not (p / name).is_symlink():  # a file that is no file: named when read
                    raise StoreError(f"{p}: not a natbench run directory (missing {name})")
            meta = decode_meta(read_bytes(p / RUN), p / RUN)
            points = decode_points(read_bytes(p / POINTS), p / POINTS)
            check_point_keys(p, meta, points)
        return cls(p, meta, points)

    @cached_property
    def campaign(self) -> StoredCampaign:
        """campaign.yaml."""
        return decode_campaign(read_bytes(self.path / CAMPAIGN), self.path / CAMPAIGN)

    @property
    def campaign_text(self) -> str:
        """The resolved campaign as stored."""
        return self.campaign.text

    @property
    def status(self) -> str:
        """running, complete or failed."""
        return str(self.meta.status)

    @property
    def experiment_session(self) -> bool:
        """True when a pytest session or an experiment script wrote it (campaign.yaml records the session)."""
        return self.campaign.experiment_session

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
        """Check trials.jsonl against run.json's record counts and what the run holds (see
        :mod:`natbench.run.records`)."""
        return scan_run(self.path, self.meta, record_plan(self.points, self.campaign))

    def check_resume(self, repair: bool = False) -> Scan:
        """The scan of trials.jsonl a resume starts from; StoreError listing the damage unless ``repair``."""
        found = self.scan()
        if found.damage and not repair:
            raise resume_damage_error(self.path, found.damage)
        return found

    def records(self) -> Iterator[TrialRecord | RepetitionResult]:
        """Every intact record of trials.jsonl in order (a torn last line after a kill is skipped).

        StoreError listing every problem when the file is damaged (:meth:`scan`).
        """
        found = self.scan()
        if found.damage:
            raise StoreError(damage_message(self.path, found.damage, DAMAGE_HINT.format(path=self.path)))
        for rec in found.records:
            yield rec.record

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
        return [rec.record for rec in found.records if isinstance(rec.record, TrialRecord)]

    def trials_frame(self) -> pd.DataFrame:
        """The trials as a tidy pandas DataFrame (:func:`natbench.run.frames.trials_frame`)."""
        from natbench.run import frames

        return frames.trials_frame(self.trials())

    def results_frame(self) -> pd.DataFrame:
        """The repetition results as a pandas DataFrame with the points' label, connections and cores
        (:func:`natbench.run.frames.results_frame`)."""
        from natbench.run import frames

        return frames.results_frame(self.results(), self.points)

    def export_parquet(self, path: str | os.PathLike[str] | None = None) -> Path:
        """Write the trials (and ``results.parquet`` beside it) as Parquet; return the trials file."""
        from natbench.run import frames

        target = Path(path) if path else self.path / TRIALS_PARQUET
        frames.to_parquet(self.trials_frame(), target)
        frames.to_parquet(self.results_frame(), target.with_name(RESULTS_PARQUET))
        return target


@dataclass(frozen=True)
class RunData:
    """A run directory as :func:`read_run` read it: typed, with what was normal or damaged named."""

    path: Path
    """The run directory."""
    meta: RunMeta
    """run.json."""
    campaign: StoredCampaign
    """campaign.yaml (its text "" when there is none)."""
    points: list[PointRecord]
    """points.json: the working points in campaign order."""
    trials: list[TrialRecord]
    """The intact trial records of trials.jsonl, in order, each once."""
    results: list[RepetitionResult]
    """The intact result records of trials.jsonl, in order, each once."""
    warnings: list[str]
    """Notes on what is normal after a kill or during a run and was skipped: a torn last line, an
    uncounted last record, no trials.jsonl before the first record."""
    damage: list[str] = field(default_factory=list)
    """``file:line: what`` for every damaged, missing or duplicated record (:mod:`natbench.run.records`)."""
    damaged_repetitions: list[RepKey] = field(default_factory=list)
    """(point id, metric, repetition) of every repetition the damage may have touched, sorted: the ones
    ``natbench run --resume --repair`` would measure again (:attr:`~natbench.run.records.Scan.tainted`)."""

    @property
    def campaign_text(self) -> str:
        """campaign.yaml's text ("" when there is none)."""
        return self.campaign.text


def read_run(path: str | os.PathLike[str]) -> RunData:
    """Read the run directory ``path`` leniently: for reports of runs still being written, killed or damaged.

    A missing campaign.yaml reads as "". trials.jsonl is checked against run.json's record counts
    (:mod:`natbench.run.records`): what is normal after a kill -9 (a torn last line, one uncounted record in a run
    not marked complete) is named in :attr:`RunData.warnings`, every damaged, missing or duplicated record (or one
    whose fields have the wrong types) in :attr:`RunData.damage`; the records are the intact ones, each once. A
    missing or corrupt run.json or points.json is a :class:`StoreError` naming the file (and the field).
    """
    p = Path(path)
    with named_os_errors(p):
        if half_created(p):
            raise half_created_error(p)
        meta = decode_meta(read_bytes(p / RUN), p / RUN)
        campaign_file = p / CAMPAIGN
        raw = read_bytes(campaign_file) if campaign_file.exists() or campaign_file.is_symlink() else b""
        campaign = decode_campaign(raw, campaign_file)
        points = decode_points(read_bytes(p / POINTS), p / POINTS)
        check_point_keys(p, meta, points)
        found = scan_run(p, meta, record_plan(points, campaign))
    trials = [r.record for r in found.records if isinstance(r.record, TrialRecord)]
    results = [r.record for r in found.records if isinstance(r.record, RepetitionResult)]
    return RunData(p, meta, campaign, points, trials, results, found.notes, found.damage, sorted(found.tainted))
