"""The scanner of ``trials.jsonl``: sequence numbers, checksums, field types, damage and notes.

Every record line is one compact JSON object with sorted keys (its codec: :mod:`natbench.run.format.lines`)::

    {"crc32": "1a2b3c4d", "seq": 7, "type": "trial", ...TrialRecord.to_dict()}

``seq`` counts the records of the run from 1 (one number per record ever written, also for the
trials a resume later moves to ``trials.abandoned.jsonl``); ``crc32`` is the CRC-32 (8 hex digits)
of the record's canonical JSON without ``crc32`` (sorted keys, no spaces, UTF-8). ``run.json`` keeps
the counts under ``records`` (:data:`COUNTS`): ``written`` (the highest ``seq`` on disk), ``trial``
and ``result`` (records written per kind), ``legacy`` (lines from before sequence numbers, kept at
the start of the file) and ``moved`` (``seq`` ranges a resume moved aside). The store writes a line
(fsync) and only then the counts (atomically), so after a kill -9 the file may hold exactly one
record more than the counts - never fewer.

:func:`scan` reads the file once and sorts what it finds into intact records, **notes** (normal
after a kill -9 or while a run is being written) and **damage** (``file:line: what``):

* a torn last line (no final newline) is a note when every record ``run.json`` counts is present
  and intact before it and the run is not ``complete``: the process died while writing the next,
  uncounted record. Otherwise it is damage (the file was cut short);
* one record beyond the counts is a note (killed between the line and the counts), or more while a
  writer is still running (the counts read again after the file show them) - but not in a run whose
  status is ``complete``: the writer marks a run complete only after run.json counted its last
  record, and a resume sets the status back to ``running`` before it appends, so no crash or
  writer leaves an uncounted record after the mark. Such a record was added by something else: it is
  damage (and is left out of the records);
* a missing ``seq`` (gap), a ``seq`` twice (duplicate), a ``seq`` out of order, a checksum
  mismatch, a line that is not UTF-8, not JSON or no record, a field that is missing, unknown or of the
  wrong type (``field: expected ..., got ...``), a second result of the same
  repetition, a missing ``trials.jsonl`` when the counts
  say records were written, and counts per kind that do not match are damage.

Run directories written before sequence numbers (no ``records`` in ``run.json``) are checked as far
as their lines allow: every line must parse, no line may repeat, no repetition may have two results,
and a missing ``trials.jsonl`` is damage (``natbench run`` always
created it with ``run.json``); gaps cannot be seen there. A resume numbers the records it appends
after them and counts the old lines as ``legacy``.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from natbench.errors import StoreError
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.format.fields import MAX_DEPTH, FieldError, depth, shown
from natbench.run.format.files import POINTS, RUN
from natbench.run.format.lines import KINDS, NonFinite, RecordPlan, checksum, decode_record, parse_line
from natbench.run.format.meta import COUNTS, MAX_SEQ, counts_problem
from natbench.run.format.safefile import MAX_LINE, open_regular

MAX_LISTED = 200
"""Problems listed one by one; beyond them one line says how many more."""


def rep_key(data: Mapping[str, Any]) -> tuple[str, str, int] | None:
    """(point id, metric, repetition) of a record; None when it lacks one of them."""
    pid, metric, rep = data.get("point_id"), data.get("metric"), data.get("repetition")
    if pid is None or metric is None or not isinstance(rep, int):
        return None
    return (str(pid), str(metric), rep)


def moved_ranges(counts: Mapping[str, Any]) -> list[tuple[int, int]]:
    """The ``moved`` ranges of (well-formed) counts."""
    return [(int(a), int(b)) for a, b in counts.get("moved", [])]


def _merge(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def with_range(ranges: list[list[int]], seqs: Iterable[int]) -> list[list[int]]:
    """``ranges`` ([first, last] pairs) with ``seqs`` added, merged and sorted."""
    merged = _merge([(a, b) for a, b in ranges] + [(s, s) for s in seqs])
    return [[a, b] for a, b in merged]


def _within(ranges: list[tuple[int, int]], seq: int) -> bool:
    i = bisect.bisect_right(ranges, (seq, MAX_SEQ + 1)) - 1
    return i >= 0 and ranges[i][0] <= seq <= ranges[i][1]


@dataclass(frozen=True)
class Record:
    """One intact record line."""

    line: int
    """Its line number in the file (from 1)."""
    text: str
    """The line as stored, without its newline."""
    data: dict[str, Any]
    """The record: ``type`` and the record's fields (without ``seq`` and ``crc32``)."""
    seq: int | None
    """Its sequence number (None on lines from before sequence numbers)."""
    record: TrialRecord | RepetitionResult
    """The record, typed (:func:`natbench.run.format.lines.decode_record`)."""

    @property
    def kind(self) -> str:
        """``trial`` or ``result``."""
        return str(self.data["type"])


@dataclass
class Scan:
    """What :func:`scan` found in ``trials.jsonl``."""

    path: Path
    """The file."""
    exists: bool = True
    """False when there is no such file."""
    records: list[Record] = field(default_factory=list)
    """Intact records in file order, each once (duplicates, damaged lines, moved-aside leftovers left out)."""
    leftovers: list[Record] = field(default_factory=list)
    """Trials a resume moved aside (``moved``) still in the file: that resume stopped before rewriting it."""
    damage: list[str] = field(default_factory=list)
    """``file:line: what`` for every damaged, missing or duplicated record."""
    notes: list[str] = field(default_factory=list)
    """What is normal after a kill -9 or during a run (a torn last line, an uncounted last record)."""
    torn: bool = False
    """The file ends with an unterminated (torn) line, left out of :attr:`records`."""
    tainted: set[tuple[str, str, int]] = field(default_factory=set)
    """Repetitions the damage may have touched (a repair measures them again)."""
    highest: int = 0
    """The highest intact ``seq`` (or the count in run.json when higher)."""
    beyond: int = 0
    """The highest intact ``seq`` beyond what run.json counts (0: none): a running writer's, or damage."""
    legacy: int = 0
    """Intact lines without ``seq`` at the start of the file."""


def damage_message(run_dir: Path, damage: list[str], hint: str) -> str:
    """The error of a damaged run directory: a summary line, one line per problem, what to do."""
    lines = [f"{run_dir}: damaged run directory ({len(damage)} problem(s)):"]
    lines += [f"  {d}" for d in damage]
    lines.append(hint)
    return "\n".join(lines)


class _Scanner:
    """One pass over the lines; keeps what the checks need."""

    def __init__(
        self,
        path: Path,
        counts: Mapping[str, Any] | None,
        limit: int | None,
        status: str,
        sequence: bool,
        malformed_counts: bool = False,
        plan: RecordPlan | None = None,
    ) -> None:
        self.out = Scan(path)
        self.plan = plan
        """What the records may refer to (None: not checked)."""
        self.malformed_counts = malformed_counts
        """run.json had counts, but malformed ones (reported): the file is checked as far as its lines allow."""
        self.sequence = sequence
        self.counts = counts
        self.written = int(counts.get("written", 0)) if counts else 0
        if counts is None:
            self.limit = 1 << 62  # no counts to hold the numbers against
        else:
            self.limit = self.written + 1 if limit is None else max(limit, self.written + 1)
        self.counted = self.written if limit is None else max(limit - 1, self.written)
        """Records run.json counts (read again after the file, when it was)."""
        self.moved = moved_ranges(counts) if counts else []
        self.status = status
        self.by_seq: dict[int, Record] = {}
        self.accounted: set[int] = set()  # seqs seen, intact or not
        self.bad_lines: list[int] = []  # lines whose record cannot be trusted: the next record's repetition
        self.results: dict[tuple[str, str, int], int] = {}
        self.seen_text: dict[str, int] = {}
        self.max_seq = 0

    def where(self, line: int) -> str:
        return f"{self.out.path}:{line}"

    def bad(self, line: int, what: str, own: Mapping[str, Any] | None = None) -> None:
        self.out.damage.append(f"{self.where(line)}: {what}")
        self.bad_lines.append(line)
        key = rep_key(own) if own is not None else None
        if key is not None and (self.plan is None or self.plan.holds(key)):  # no repetition of no point or metric
            self.out.tainted.add(key)

    def line(self, number: int, raw: bytes) -> None:
        parsed = self.parsed(number, raw)
        if parsed is None:
            return
        text, obj = parsed
        data = {k: v for k, v in obj.items() if k not in ("seq", "crc32")}
        if obj.get("seq") is None and "crc32" not in obj:
            self.legacy_line(number, text, data)
            return
        seq = self.intact(number, obj, data)
        if seq is None:
            return
        record = self.decoded(number, data)
        if record is None:
            return
        if not self.sequence:
            self.out.records.append(Record(number, text, data, seq, record))
            return
        self.sequenced(Record(number, text, data, seq, record))

    def parsed(self, number: int, raw: bytes) -> tuple[str, dict[str, Any]] | None:
        """The line's text and object when it is a record of a known type; None when it is blank or damage (named)."""
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad(number, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})")
            return None
        if not text.strip():
            return None
        try:
            obj = parse_line(text)
        except NonFinite:
            self.bad(number, "not a natbench record: non-finite number")
            return None
        except RecursionError:
            self.bad(number, f"not a natbench record: nested more than {MAX_DEPTH} levels deep")
            return None
        except ValueError as exc:
            self.bad(number, f"not a natbench record: {exc}")
            return None
        if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and depth(obj) > MAX_DEPTH:
            seq = obj.get("seq") if isinstance(obj, dict) else None
            if isinstance(seq, int) and not isinstance(seq, bool) and seq >= 1:
                self.accounted.add(seq)  # its number is there: the line is damaged, no record is missing
            self.bad(number, f"not a natbench record: nested more than {MAX_DEPTH} levels deep")
            return None
        kind = obj.get("type") if isinstance(obj, dict) else None
        if kind not in KINDS:
            self.bad(number, f"type: expected 'trial' or 'result', got {shown(kind)}")
            return None
        assert isinstance(obj, dict)
        return text, obj

    def intact(self, number: int, obj: dict[str, Any], data: dict[str, Any]) -> int | None:
        """The record's sequence number when it is a positive integer and the checksum matches; None: damage."""
        seq = obj.get("seq")
        if not isinstance(seq, int) or isinstance(seq, bool) or seq < 1:
            self.bad(number, f"seq: expected a positive integer, got {seq!r}")
            return None
        self.accounted.add(seq)
        stored = obj.get("crc32")
        try:
            computed = checksum(obj)
        except UnicodeEncodeError:  # a lone surrogate escape: valid JSON, but no text natbench writes has one
            self.bad(number, "not a natbench record: a string with no UTF-8 form (a lone surrogate)")
            return None
        except ValueError:  # parse_line lets no non-finite number through; a safeguard for other readers' objects
            self.bad(number, "not a natbench record: non-finite number")
            return None
        if stored != computed:
            self.bad(
                number,
                f"crc32: checksum mismatch (stored {stored!r}, computed {computed!r}): changed after writing",
                data,
            )
            return None
        return seq

    def sequenced(self, rec: Record) -> None:
        """An intact record of a run with sequence numbers, placed: a copy, a number again, out of order, beyond what
        run.json counts, among the records a resume moved aside, or kept."""
        number, data, seq = rec.line, rec.data, rec.seq
        assert seq is not None
        if seq in self.by_seq:
            first = self.by_seq[seq]
            if first.text == rec.text:
                self.bad(number, f"duplicate of line {first.line} (seq {seq})")
                self.bad_lines.pop()  # an exact copy: the first one stands, nothing else is in doubt
            else:
                self.bad(number, f"seq {seq} again (first on line {first.line}) with other content", data)
                key = rep_key(first.data)
                if key is not None:
                    self.out.tainted.add(key)
            return
        if seq < self.max_seq:
            self.bad(number, f"seq {seq} out of order (after seq {self.max_seq})", data)
            return
        if seq > self.limit:
            self.bad(number, f"seq {seq} beyond the {self.written} records run.json counts", data)
            self.out.beyond = max(self.out.beyond, seq)
            return
        self.max_seq = seq
        self.by_seq[seq] = rec
        if _within(self.moved, seq):
            if rec.kind == "trial":
                self.out.leftovers.append(rec)
            else:
                self.bad(number, f"seq {seq}: a result among the records a resume moved aside", data)
            return
        if self.counts is not None and seq > self.counted and self.status == "complete":
            self.bad(
                number,
                f"seq {seq} beyond the {self.counted} records run.json counts in a run whose status is 'complete'"
                " (appended after the run ended: no writer leaves an uncounted record after that mark)",
                data,
            )
            return
        if self.counts is not None and seq > self.written:
            self.out.notes.append(
                f"{self.where(number)}: seq {seq} not counted in run.json yet"
                " (written just before the run stopped, or the run is still being written)"
            )
        self.keep(rec)

    def decoded(self, number: int, data: dict[str, Any]) -> TrialRecord | RepetitionResult | None:
        """The typed record of a line; None (and the line is damage, like a checksum mismatch) when a field is
        missing, unknown, of the wrong type or out of range, or refers to what the run does not hold (a working
        point, a metric, a repetition beyond the plan: :class:`~natbench.run.format.lines.RecordPlan`)."""
        try:
            record = decode_record(data)
        except FieldError as exc:
            self.bad(number, str(exc), data)
            return None
        problem = self.plan.problem(record) if self.plan is not None else None
        if problem is not None:
            self.bad(number, problem, data)
            return None
        return record

    def legacy_line(self, number: int, text: str, data: dict[str, Any]) -> None:
        if not self.sequence:
            record = self.decoded(number, data)
            if record is not None:
                self.out.records.append(Record(number, text, data, None, record))
            return
        if self.counts is not None and (self.by_seq or self.out.legacy >= int(self.counts.get("legacy", 0))):
            self.bad(number, "seq: missing (every record of this run carries a sequence number and a checksum)", data)
            return
        if text in self.seen_text:
            self.bad(number, f"duplicate of line {self.seen_text[text]}")
            self.bad_lines.pop()
            return
        record = self.decoded(number, data)
        if record is None:
            return
        self.seen_text[text] = number
        self.out.legacy += 1
        self.keep(Record(number, text, data, None, record))

    def keep(self, rec: Record) -> None:
        key = rep_key(rec.data)
        if key is not None and rec.data["type"] == "result":
            if key in self.results:
                self.bad(rec.line, f"second result of {_rep_name(key)} (first on line {self.results[key]})", rec.data)
                return
            self.results[key] = rec.line
        self.out.records.append(rec)

    def finish(self, torn_line: int | None, lines_total: int) -> Scan:
        """The scan, once every line is read: the records missing between the numbered ones, the counts and kinds
        against run.json, a torn last line, the repetitions damage taints, the list of problems capped."""
        out = self.out
        if not self.sequence:
            out.torn = torn_line is not None
            return out
        counted = self.counts is not None
        if not counted and self.by_seq and not self.malformed_counts:
            out.damage.append(
                f"{out.path}: its records carry sequence numbers but run.json has no record counts (run.json replaced?)"
            )
            self.written = max(self.by_seq)
        missing = self._missing(lines_total)
        if counted and not missing and not out.damage:
            self._counted(lines_total)
        self._torn(torn_line, missing)
        self._tainted()
        out.highest = max([self.written, *self.by_seq])
        return out

    def _missing(self, lines_total: int) -> list[tuple[int, int]]:
        """The ranges of sequence numbers run.json counts written that no line holds (each named as damage, the
        repetitions around it tainted)."""
        out = self.out
        covered = _merge([*self.moved, *((s, s) for s in self.accounted if s <= self.written)])
        missing = _gaps(covered, self.written)
        numbered = [r for r in out.records if r.seq is not None]  # in increasing seq (out of order is damage)
        seqs = [r.seq or 0 for r in numbered]
        for first, last in missing:
            i = bisect.bisect_right(seqs, last)
            after = numbered[i] if i < len(numbered) else None
            j = bisect.bisect_left(seqs, first) - 1
            line = after.line if after else lines_total + 1
            span = f"seq {first}" if first == last else f"seq {first}-{last}"
            at_end = "" if after else " at the end"
            out.damage.append(
                f"{self.where(line)}: {span} missing{at_end} (run.json counts {self.written} records written)"
            )
            self.taint_around(numbered[j] if j >= 0 else None, after)
        return missing

    def _counted(self, lines_total: int) -> None:
        """An otherwise intact file: its kinds must match the counts (line damage already explains a mismatch), and
        a complete run must have measured every point it plans."""
        out = self.out
        assert self.counts is not None
        self.kinds(lines_total)
        legacy = int(self.counts.get("legacy", 0))
        if out.legacy != legacy:
            out.damage.append(
                f"{out.path}: {out.legacy} line(s) without sequence numbers, but run.json counts {legacy}"
                " from before sequence numbers"
            )
        if self.status == "complete" and not out.damage:
            self.unmeasured()

    def _torn(self, torn_line: int | None, missing: list[tuple[int, int]]) -> None:
        """A torn last line: skipped when the run was interrupted while writing, damage in a complete run or after
        missing records (the file was cut short)."""
        if torn_line is None:
            return
        out = self.out
        out.torn = True
        if self.status == "complete":
            out.damage.append(f"{self.where(torn_line)}: torn last line in a run whose status is 'complete'")
        elif missing:
            out.damage.append(
                f"{self.where(torn_line)}: torn last line after missing records: the file was cut short,"
                " not interrupted while writing"
            )
        else:
            out.notes.append(f"{self.where(torn_line)}: torn last line skipped (run interrupted while writing)")

    def _tainted(self) -> None:
        """The repetitions around each bad line tainted, the list of problems capped, and the trials a resume moved
        aside noted."""
        out = self.out
        lines = [r.line for r in out.records]
        for line in self.bad_lines:
            i = bisect.bisect_left(lines, line)
            self.taint_around(out.records[i - 1] if i > 0 else None, out.records[i] if i < len(lines) else None)
        if len(out.damage) > MAX_LISTED:
            more = len(out.damage) - MAX_LISTED
            out.damage[MAX_LISTED:] = [f"{out.path}: ... and {more} more problem(s) of the kinds above"]
        for rec in out.leftovers:
            out.notes.append(
                f"{self.where(rec.line)}: trial moved aside by a resume that stopped before rewriting the file"
            )

    def unmeasured(self) -> None:
        """A complete run measured every working point of its points.json (the writer checks that every planned
        repetition has its result before it marks the run complete): a planned point without a single record, in
        an otherwise intact file, is a point added to points.json after the run (or its records were removed with
        their counts). A run without a single record is left alone (the store's API can mark any run complete; a
        campaign's run cannot end complete with nothing). No repetition is tainted: none has a record to drop, and a
        resume measures them anyway."""
        if self.plan is None or not self.plan.every_point:
            return
        measured = {r.record.point_id for r in self.out.records}
        if not measured:  # no record at all: a run directory written through the store's API, not by a campaign's run
            return
        for point in sorted(self.plan.points):
            if point not in measured:
                self.out.damage.append(
                    f"{self.out.path.with_name(POINTS)}: point {point}: not one record in a run whose status is"
                    " 'complete' (every planned repetition has its result): a working point added after the run, or"
                    " its records removed"
                )

    def taint_around(self, prev: Record | None, nxt: Record | None) -> None:
        """A record is lost between ``prev`` and ``nxt``: it belonged to ``nxt``'s repetition (a repetition's
        records are consecutive) or, when ``prev`` is a trial, to ``prev``'s (a result ends its repetition)."""
        for rec in (nxt, prev if prev is not None and prev.data["type"] == "trial" else None):
            key = rep_key(rec.data) if rec is not None else None
            if key is not None:
                self.out.tainted.add(key)

    def kinds(self, lines_total: int) -> None:
        assert self.counts is not None
        held = {k: 0 for k in KINDS}
        for r in self.out.records:
            if r.seq is not None and r.seq <= self.written:
                held[r.data["type"]] += 1
        held["trial"] += sum(b - a + 1 for a, b in self.moved)
        want = {k: int(self.counts.get(k, 0)) for k in KINDS}
        if held != want:
            moved = sum(b - a + 1 for a, b in self.moved)
            self.out.damage.append(
                f"{self.out.path}: run.json counts {want['trial']} trial and {want['result']} result records;"
                f" the file (with {moved} moved aside) holds {held['trial']} and {held['result']}"
            )


def _rep_name(key: tuple[str, str, int]) -> str:
    return f"point {key[0]} {key[1]} repetition {key[2]}"


def _gaps(covered: list[tuple[int, int]], written: int) -> list[tuple[int, int]]:
    """The ranges of 1..written that the merged ``covered`` ranges leave out."""
    out: list[tuple[int, int]] = []
    nxt = 1
    for a, b in covered:
        if a > nxt:
            out.append((nxt, min(a - 1, written)))
        nxt = max(nxt, b + 1)
    if nxt <= written:
        out.append((nxt, written))
    return out


def scan(
    path: Path,
    counts: Mapping[str, Any] | None,
    *,
    status: str = "running",
    counted_after: int | None = None,
    sequence: bool = True,
    plan: RecordPlan | None = None,
) -> Scan:
    """Read ``trials.jsonl`` at ``path`` once and sort its lines into records, notes and damage.

    ``counts`` is run.json's ``records`` as read BEFORE the file (None for a run directory from before
    record counts); ``counted_after`` the ``written`` count read again AFTER it (a writer may have added
    records in between: those up to one beyond it are no damage); ``status`` run.json's status. With
    ``sequence`` False only each line is checked (UTF-8, JSON, type, checksum), not their numbers: for
    ``trials.abandoned.jsonl``. With ``plan`` every record must refer to its working points, known metrics and
    planned repetitions. The file is read line by line (a regular file only; a line longer than
    :data:`~natbench.run.format.safefile.MAX_LINE` is damage, read no further).
    """
    problem = counts_problem(counts) if counts is not None else None
    scanner = _Scanner(
        path,
        None if problem else counts,
        None if counted_after is None else counted_after + 1,
        status,
        sequence,
        malformed_counts=problem is not None,
        plan=plan,
    )
    if problem:
        scanner.out.damage.append(f"{path.with_name(RUN)}: {COUNTS}: {problem}")
    try:
        f = open_regular(path)
    except StoreError as exc:
        scanner.out.damage.append(str(exc))
        return scanner.out
    except FileNotFoundError:
        out = scanner.out
        out.exists = False
        written = scanner.written
        if counts is None:
            out.damage.append(
                f"{path}: missing; `natbench run` creates it together with run.json, so it was deleted"
                " (this run directory predates record counts: how many records it held is unknown)"
            )
        elif written:
            out.damage.append(f"{path}: missing, but run.json counts {written} records written (deleted?)")
        else:
            out.notes.append(f"{path}: missing (no trial stored yet)")
        return out
    except OSError as exc:
        scanner.out.damage.append(f"{path}: cannot be read: {exc.strerror or exc}")
        return scanner.out
    number = 0
    torn_line: int | None = None
    with f:
        try:
            while raw := f.readline(MAX_LINE + 1):
                number += 1
                if raw.endswith(b"\n"):
                    scanner.line(number, raw[:-1])
                elif len(raw) <= MAX_LINE:  # the last line, unterminated
                    torn_line = number
                else:
                    scanner.bad(
                        number, f"longer than {MAX_LINE >> 20} MiB: no record natbench writes (not read further)"
                    )
                    while (rest := f.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                        pass
        except OSError as exc:  # a disk error, or a file that only claims to be one: what was read so far stands
            scanner.out.damage.append(
                f"{path}:{number + 1}: cannot be read: {exc.strerror or type(exc).__name__} (not read further)"
            )
            return scanner.out
    return scanner.finish(torn_line, number - (torn_line is not None))
