"""The scanner of trials.jsonl (natbench.run.records): unit cases of lines from before sequence numbers (legacy
lines), written by hand so the expected damage follows from the format, not from the reader; and of record lines
whose fields have the wrong types."""

from __future__ import annotations

import errno
import io
import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from natbench.run import records
from natbench.run.format import RecordPlan, encode
from natbench.run.format.fields import MAX_DEPTH
from natbench.run.format.lines import checksum
from natbench.run.format.safefile import MAX_LINE
from natbench.run.records import MAX_LISTED, rep_key, scan

TRIAL = {
    "point_id": "p1",
    "metric": "cps",
    "repetition": 0,
    "step": 0,
    "kind": "phase1",
    "intended_rate": 1000.0,
    "achieved_rate": 1000.0,
    "counts": {"forward": {"sent": 10, "received": 10, "valid": 10}},
    "verdict": "pass",
    "reason": "",
    "started_at": 1.0,
    "ended_at": 2.0,
}
"""The fields of one trial record (the reader looks at its repetition key; every field must have its type)."""
RESULT = {"point_id": "p1", "metric": "cps", "repetition": 3, "value": 5000.0, "unit": "cps"}
"""The fields of one result record."""


def legacy(data: dict[str, object]) -> str:
    """A line as natbench wrote it before sequence numbers: the record's JSON, no ``seq``, no ``crc32``."""
    return json.dumps({"type": "trial", **data}, sort_keys=True) + "\n"


def write(tmp_path: Path, *lines: str) -> Path:
    path = tmp_path / "trials.jsonl"
    path.write_text("".join(lines), "utf-8")
    return path


def test_a_line_without_seq_in_a_run_that_counts_no_legacy_lines_is_damage(tmp_path: Path) -> None:
    # run.json has record counts but no "legacy" count (0): every line must carry seq and crc32
    path = write(tmp_path, legacy(TRIAL))
    found = scan(path, {"written": 0})
    assert found.damage == [
        f"{path}:1: seq: missing (every record of this run carries a sequence number and a checksum)"
    ]
    assert found.records == [] and found.tainted == {("p1", "cps", 0)}


def test_a_line_without_seq_after_numbered_records_is_damage_even_within_the_legacy_count(tmp_path: Path) -> None:
    # legacy lines are only kept at the start of the file: line 2 comes after record seq 1, so it was not written by
    # a run from before sequence numbers even though run.json counts one legacy line
    path = write(tmp_path, encode("trial", TRIAL, 1), legacy({**TRIAL, "repetition": 1}))
    found = scan(path, {"written": 1, "trial": 1, "legacy": 1})
    assert found.damage[0] == (
        f"{path}:2: seq: missing (every record of this run carries a sequence number and a checksum)"
    )
    assert [r.seq for r in found.records] == [1]
    assert ("p1", "cps", 1) in found.tainted


def test_legacy_lines_counted_in_run_json_are_kept_with_their_line_and_text(tmp_path: Path) -> None:
    first, second = legacy(TRIAL), legacy({**TRIAL, "repetition": 1})
    path = write(tmp_path, first, second, encode("trial", {**TRIAL, "repetition": 2}, 1))
    found = scan(path, {"written": 1, "trial": 1, "legacy": 2})
    assert found.damage == [] and found.legacy == 2
    assert [(r.line, r.text, r.seq) for r in found.records] == [
        (1, first[:-1], None),
        (2, second[:-1], None),
        (3, found.records[2].text, 1),
    ]


def test_lines_of_the_abandoned_file_are_kept_with_their_line_and_text_without_number_checks(tmp_path: Path) -> None:
    # trials.abandoned.jsonl (sequence=False): a legacy line and a numbered one, each kept as it stands
    first = legacy(TRIAL)
    path = write(tmp_path, first, encode("trial", TRIAL, 7))
    found = scan(path, None, sequence=False)
    assert found.damage == []
    assert [(r.line, r.seq) for r in found.records] == [(1, None), (2, 7)]
    assert found.records[0].text == first[:-1]
    assert [(r.data, r.kind) for r in found.records] == [({"type": "trial", **TRIAL}, "trial")] * 2


def test_a_second_result_of_one_repetition_is_damage_naming_point_metric_and_repetition(tmp_path: Path) -> None:
    # two different results of point p1, metric cps, repetition 3: the second one (line 2) is damage, the first stands
    res = RESULT
    path = write(tmp_path, encode("result", res, 1), encode("result", {**res, "value": 6000.0}, 2))
    found = scan(path, {"written": 2, "result": 2})
    assert found.damage[0] == f"{path}:2: second result of point p1 cps repetition 3 (first on line 1)"
    assert [r.line for r in found.records] == [1] and found.tainted == {("p1", "cps", 3)}


def test_a_repeated_line_in_a_run_from_before_record_counts_is_a_duplicate_of_its_first(tmp_path: Path) -> None:
    # no counts in run.json (None): lines are checked as far as they allow; line 2 repeats line 1 byte for byte, so
    # it is damage naming line 1, and the first copy stands (nothing else is in doubt: no repetition tainted)
    line = legacy(TRIAL)
    path = write(tmp_path, line, line)
    found = scan(path, None)
    assert found.damage == [f"{path}:2: duplicate of line 1"]
    assert [r.line for r in found.records] == [1] and found.tainted == set()


def test_a_record_lost_after_a_result_taints_only_the_next_repetition(tmp_path: Path) -> None:
    # seq 1 is repetition 0's result (it ends that repetition), seq 2 is missing, seq 3 is a trial of repetition 1:
    # the lost record can only belong to repetition 1 (a repetition's records are consecutive)
    res = {**RESULT, "repetition": 0}
    path = write(tmp_path, encode("result", res, 1), encode("trial", {**TRIAL, "repetition": 1}, 3))
    found = scan(path, {"written": 3, "trial": 2, "result": 1})
    assert found.damage == [f"{path}:2: seq 2 missing (run.json counts 3 records written)"]
    assert found.tainted == {("p1", "cps", 1)}


def test_a_kind_count_mismatch_names_how_many_records_a_resume_moved_aside(tmp_path: Path) -> None:
    # run.json: 3 records written, seq 1 moved aside by a resume (1 record), 4 trials counted; the file holds the
    # trials seq 2 and 3: 2 + 1 moved = 3 trials, not 4
    path = write(tmp_path, encode("trial", TRIAL, 2), encode("trial", {**TRIAL, "repetition": 1}, 3))
    found = scan(path, {"written": 3, "trial": 4, "result": 0, "moved": [[1, 1]]})
    assert found.damage == [
        f"{path}: run.json counts 4 trial and 0 result records; the file (with 1 moved aside) holds 3 and 0"
    ]


def test_record_counts_that_are_no_object_are_damage_naming_their_type(tmp_path: Path) -> None:
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, [1])  # type: ignore[arg-type]  # run.json's "records" as a list
    assert found.damage[0] == f"{tmp_path / 'run.json'}: records: expected an object, got list"


@pytest.mark.parametrize("name", ["written", "trial", "result", "legacy"])
def test_a_negative_count_is_damage_naming_the_field(tmp_path: Path, name: str) -> None:
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, {"written": 1, "trial": 1, name: -1})
    assert found.damage[0] == (
        f"{tmp_path / 'run.json'}: records: {name}: expected a whole number from 0 to 1099511627776, got -1"
    )  # 1099511627776 = 2**40, the largest count taken


def test_a_trial_in_a_moved_range_that_ends_at_the_largest_count_is_a_leftover(tmp_path: Path) -> None:
    # the largest count run.json may hold is 2**40; a resume moved records 1..2**40 aside, and record 1 is still in
    # the file: it is a leftover of that resume, not a record of the run
    top = 2**40
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, {"written": top, "trial": top, "moved": [[1, top]]})
    assert [r.seq for r in found.leftovers] == [1] and found.records == []
    assert found.damage == []


@pytest.mark.parametrize(("value", "shown"), [(True, "True"), ("3", "'3'"), (1.5, "1.5")])
def test_a_count_that_is_no_whole_number_is_damage(tmp_path: Path, value: object, shown: str) -> None:
    # JSON true is no count (Python's bool is an int), nor is a string or a fraction
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, {"written": value, "trial": 1})
    assert found.damage[0] == (
        f"{tmp_path / 'run.json'}: records: written: expected a whole number from 0 to 1099511627776, got {shown}"
    )


def test_moved_ranges_that_are_no_list_are_damage(tmp_path: Path) -> None:
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, {"written": 1, "trial": 1, "moved": "1-1"})
    assert found.damage[0] == f"{tmp_path / 'run.json'}: records: moved: expected a list of [first, last] ranges"


def test_a_torn_last_line_of_an_interrupted_run_is_a_note_naming_its_line(tmp_path: Path) -> None:
    # record 1 is counted and intact; line 2 has no newline: the process died while writing record 2
    path = write(tmp_path, encode("trial", TRIAL, 1), encode("trial", TRIAL, 2)[:20])
    found = scan(path, {"written": 1, "trial": 1})
    assert found.damage == [] and found.torn
    assert found.notes == [f"{path}:2: torn last line skipped (run interrupted while writing)"]
    assert [r.seq for r in found.records] == [1]


def test_records_missing_at_the_end_are_named_after_the_last_line(tmp_path: Path) -> None:
    # run.json counts 3 records, the file holds 1 line (seq 1): seq 2-3 are missing after line 1, i.e. at line 2
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, {"written": 3, "trial": 3})
    assert found.damage == [f"{path}:2: seq 2-3 missing at the end (run.json counts 3 records written)"]


def test_a_missing_trials_file_is_named_by_what_run_json_says_was_written(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    assert scan(path, {"written": 0}).exists is False
    assert scan(path, {"written": 0}).notes == [f"{path}: missing (no trial stored yet)"]
    assert scan(path, {"written": 3, "trial": 3}).damage == [
        f"{path}: missing, but run.json counts 3 records written (deleted?)"
    ]
    assert scan(path, None).damage == [
        f"{path}: missing; `natbench run` creates it together with run.json, so it was deleted"
        " (this run directory predates record counts: how many records it held is unknown)"
    ]


def test_a_trials_file_that_cannot_be_read_is_damage_naming_why(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    path.mkdir()  # a directory where the file should be: refused before anything is read
    assert scan(path, {"written": 0}).damage == [
        f"{path}: a directory, not a file: a run directory holds regular files"
    ]


def test_a_writer_may_add_one_record_beyond_the_count_read_after_the_file(tmp_path: Path) -> None:
    # run.json counted 1 record before the file was read and 3 after it (a writer is running): seq 2-4 are no damage
    # (4 = 3 + 1: the line is written before its count), seq 5 is one too many
    lines = [encode("trial", {**TRIAL, "repetition": i}, i) for i in range(1, 6)]
    path = write(tmp_path, *lines[:4])
    found = scan(path, {"written": 1, "trial": 1}, counted_after=3)
    assert found.damage == [] and len(found.notes) == 3
    path = write(tmp_path, *lines)
    found = scan(path, {"written": 1, "trial": 1}, counted_after=3)
    assert found.damage == [f"{path}:5: seq 5 beyond the 1 records run.json counts"]


@pytest.mark.parametrize("pair", [[1.0, 1.0], [1, 1, 1], [1]])
def test_a_moved_range_must_be_two_whole_numbers(tmp_path: Path, pair: list[object]) -> None:
    path = write(tmp_path, encode("trial", TRIAL, 2))
    found = scan(path, {"written": 2, "trial": 2, "moved": [pair]})
    assert found.damage[0] == (
        f"{tmp_path / 'run.json'}: records: moved: {pair!r} is no [first, last] range after 0 within the records"
        " written"
    )


def test_a_legacy_line_of_the_wrong_field_type_is_damage_of_its_repetition(tmp_path: Path) -> None:
    # a run from before sequence numbers has no checksum to tell: the field types still do
    path = write(tmp_path, legacy(TRIAL), legacy({**TRIAL, "repetition": 1, "started_at": "noon"}))
    found = scan(path, None)
    assert found.damage == [f"{path}:2: started_at: expected a finite number, got 'noon'"]
    assert [r.line for r in found.records] == [1] and ("p1", "cps", 1) in found.tainted


def test_an_abandoned_line_of_the_wrong_field_type_is_named_and_the_others_kept(tmp_path: Path) -> None:
    wrong = [encode("trial", {**TRIAL, "verdict": "maybe"}, 4), legacy({**TRIAL, "started_at": "noon"})]
    path = write(tmp_path, encode("trial", TRIAL, 3), *wrong)
    found = scan(path, None, sequence=False)
    assert found.damage == [
        f"{path}:2: verdict: expected one of pass, fail, invalid, got 'maybe'",
        f"{path}:3: started_at: expected a finite number, got 'noon'",  # a line from before sequence numbers
    ]
    assert [(r.line, r.seq, r.record.step) for r in found.records] == [(1, 3, 0)]


def test_a_numbered_line_of_the_wrong_field_type_keeps_its_number_counted(tmp_path: Path) -> None:
    # like a checksum mismatch: the number is accounted for (no gap reported), the record is left out
    path = write(tmp_path, encode("trial", {**TRIAL, "kind": 7}, 1), encode("trial", {**TRIAL, "repetition": 1}, 2))
    found = scan(path, {"written": 2, "trial": 2})
    assert found.damage == [f"{path}:1: kind: expected a string, got 7"]
    assert [r.seq for r in found.records] == [2] and found.tainted == {("p1", "cps", 0), ("p1", "cps", 1)}


def nested(levels: int) -> object:
    """A JSON value nested ``levels`` deep (lists in lists: ``[[...]]``)."""
    value: object = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_a_record_nested_as_deep_as_allowed_reads_and_one_level_more_is_damage(tmp_path: Path) -> None:
    # the line's object is one level, "extra" a second: the value under it takes the rest
    fits = encode("trial", {**TRIAL, "extra": {"deep": nested(MAX_DEPTH - 2)}}, 1)
    too_deep = encode("trial", {**TRIAL, "repetition": 1, "extra": {"deep": nested(MAX_DEPTH - 1)}}, 2)
    path = write(tmp_path, fits, too_deep)
    found = scan(path, {"written": 2, "trial": 2})
    assert [r.seq for r in found.records] == [1]
    # its number is there: the line is damaged, no record is missing
    assert found.damage == [f"{path}:2: not a natbench record: nested more than {MAX_DEPTH} levels deep"]
    path = write(tmp_path, too_deep.replace('"seq":2', '"seq":1'))
    assert scan(path, {"written": 1, "trial": 1}).damage == [
        f"{path}:1: not a natbench record: nested more than {MAX_DEPTH} levels deep"
    ]


def test_as_many_problems_as_are_listed_are_all_named_and_one_more_is_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "garbage\n" * MAX_LISTED)
    damage = scan(path, None).damage
    assert len(damage) == MAX_LISTED and all(d.endswith("Expecting value: line 1 column 1 (char 0)") for d in damage)
    path = write(tmp_path, "garbage\n" * (MAX_LISTED + 1))
    damage = scan(path, None).damage
    assert len(damage) == MAX_LISTED + 1
    assert damage[-1] == f"{path}: ... and 1 more problem(s) of the kinds above"


def test_a_moved_range_cannot_start_at_zero_nor_touch_the_one_before(tmp_path: Path) -> None:
    path = write(tmp_path, encode("trial", TRIAL, 3))
    counts = {"written": 3, "trial": 3}
    assert scan(path, counts | {"moved": [[1, 2]]}).damage == []
    assert scan(path, counts | {"moved": [[0, 2]]}).damage == [
        f"{tmp_path / 'run.json'}: records: moved: [0, 2] is no [first, last] range after 0 within the records written"
    ]
    assert scan(path, counts | {"moved": [[1, 1], [1, 2]]}).damage == [
        f"{tmp_path / 'run.json'}: records: moved: [1, 2] is no [first, last] range after 1 within the records written"
    ]


def test_a_missing_first_record_is_named_and_taints_the_repetition_after_it(tmp_path: Path) -> None:
    path = write(
        tmp_path, encode("trial", {**TRIAL, "repetition": 1}, 2), encode("trial", {**TRIAL, "repetition": 2}, 3)
    )
    found = scan(path, {"written": 3, "trial": 3})
    assert found.damage == [f"{path}:1: seq 1 missing (run.json counts 3 records written)"]
    assert found.tainted == {("p1", "cps", 1)}
    path = write(tmp_path)
    assert scan(path, {"written": 2, "trial": 2}).damage == [
        f"{path}:1: seq 1-2 missing at the end (run.json counts 2 records written)"
    ]


def test_a_record_lost_after_a_trial_taints_that_trial_s_repetition_and_the_next(tmp_path: Path) -> None:
    # seq 2 is gone: it was repetition 0's next record (its result?) or the first of repetition 1
    path = write(tmp_path, encode("trial", TRIAL, 1), encode("trial", {**TRIAL, "repetition": 1}, 3))
    found = scan(path, {"written": 3, "trial": 3})
    assert found.tainted == {("p1", "cps", 0), ("p1", "cps", 1)}


def test_a_plan_holds_its_points_metrics_and_repetitions_from_0_to_one_below_the_planned() -> None:
    plan = RecordPlan(frozenset({"p1"}), frozenset({"cps"}), {("p1", "cps"): 2})
    assert plan.holds(("p1", "cps", 0)) and plan.holds(("p1", "cps", 1))
    for key in (("p1", "cps", 2), ("p1", "cps", -1), ("p2", "cps", 0), ("p1", "throughput", 0)):
        assert not plan.holds(key), key
    any_metric = RecordPlan(frozenset({"p1"}))  # no metrics named, no repetitions planned
    assert any_metric.holds(("p1", "throughput", 7)) and not any_metric.holds(("p2", "cps", 0))


@pytest.mark.parametrize(
    "lacking",
    [
        {"metric": "cps", "repetition": 0},
        {"point_id": "p1", "repetition": 0},
        {"point_id": "p1", "metric": "cps"},
        {"point_id": None, "metric": "cps", "repetition": 0},
        {"point_id": "p1", "metric": None, "repetition": 0},
        {"point_id": "p1", "metric": "cps", "repetition": "0"},
    ],
)
def test_a_record_lacking_its_point_metric_or_repetition_has_no_repetition_key(lacking: dict[str, object]) -> None:
    assert rep_key(lacking) is None


def test_a_record_s_repetition_key_is_its_point_metric_and_repetition() -> None:
    assert rep_key(TRIAL) == ("p1", "cps", 0)
    assert rep_key(RESULT) == ("p1", "cps", 3)


def test_a_numbered_record_repeated_byte_for_byte_is_a_duplicate_of_its_first_and_taints_nothing(
    tmp_path: Path,
) -> None:
    # line 2 is line 1 again (seq 1, same content): damage naming line 1 and the seq; the first copy stands and the
    # next record (seq 2) is kept; an exact copy puts no repetition in doubt, so none is tainted
    first = encode("trial", TRIAL, 1)
    path = write(tmp_path, first, first, encode("trial", {**TRIAL, "repetition": 1}, 2))
    found = scan(path, {"written": 2, "trial": 2})
    assert found.damage == [f"{path}:2: duplicate of line 1 (seq 1)"]
    assert [(r.line, r.seq) for r in found.records] == [(1, 1), (3, 2)]
    assert found.records[0].text == first[:-1]
    assert found.tainted == set() and found.notes == []


def test_a_sequence_number_again_with_other_content_is_damage_tainting_both_records_and_the_next(
    tmp_path: Path,
) -> None:
    # seq 1 is repetition 3's result on line 1 and a trial of repetition 1 on line 2: which one run.json counted is
    # unknown, so the line is damage naming the first, and both records' repetitions are tainted, as is the next
    # record's (repetition 4: a record may be lost before it); the first line stands
    path = write(
        tmp_path,
        encode("result", RESULT, 1),
        encode("trial", {**TRIAL, "repetition": 1}, 1),
        encode("trial", {**TRIAL, "repetition": 4}, 2),
    )
    found = scan(path, {"written": 2, "trial": 1, "result": 1})
    assert found.damage == [f"{path}:2: seq 1 again (first on line 1) with other content"]
    assert [(r.line, r.seq, r.kind) for r in found.records] == [(1, 1, "result"), (3, 2, "trial")]
    assert found.tainted == {("p1", "cps", 3), ("p1", "cps", 1), ("p1", "cps", 4)}


def test_a_record_of_a_metric_the_plan_does_not_name_is_damage_naming_it_and_any_metric_passes_without_names(
    tmp_path: Path,
) -> None:
    # the plan names the metrics natbench knows: a record of another one cannot be placed in any table (damage of its
    # line, its repetition not tainted: no repair could measure it); a plan naming no metrics (None) takes any
    path = write(tmp_path, encode("trial", {**TRIAL, "metric": "warp_speed"}, 1))
    named = scan(path, {"written": 1, "trial": 1}, plan=RecordPlan(frozenset({"p1"}), frozenset({"cps"})))
    assert named.damage == [f"{path}:1: metric: 'warp_speed' is no metric this natbench knows"]
    assert named.records == [] and named.tainted == set()
    unnamed = scan(path, {"written": 1, "trial": 1}, plan=RecordPlan(frozenset({"p1"})))
    assert unnamed.damage == [] and [r.record.metric for r in unnamed.records] == ["warp_speed"]


def numbered(data: dict[str, object], seq: object, kind: str = "trial") -> str:
    """A record line carrying ``seq`` as given (any JSON value) and the checksum of its content."""
    obj = {"type": kind, **data, "seq": seq}
    return json.dumps({**obj, "crc32": checksum(obj)}, sort_keys=True, separators=(",", ":")) + "\n"


@pytest.mark.parametrize("seq", [None, 0, -1, True, "1", 1.5])
def test_a_checksummed_line_whose_seq_is_no_positive_integer_is_damage_naming_the_value(
    tmp_path: Path, seq: object
) -> None:
    # a line with a checksum is a numbered record (not one from before sequence numbers, whatever its seq): a seq
    # that is missing (null), 0, negative, a boolean, a string or a fraction is damage of that line; 1 is the first
    path = write(tmp_path, numbered(TRIAL, seq))
    found = scan(path, {"written": 0})
    assert found.damage == [f"{path}:1: seq: expected a positive integer, got {seq!r}"]
    assert found.records == []
    path = write(tmp_path, numbered(TRIAL, 1))
    assert scan(path, {"written": 1, "trial": 1}).damage == []


def test_a_checksummed_line_without_seq_is_damage_not_a_line_from_before_sequence_numbers(tmp_path: Path) -> None:
    # no "seq" key at all, but a crc32: written with sequence numbers, then changed; run.json counts one legacy line,
    # which a line without a checksum would be
    obj = {"type": "trial", **TRIAL}
    path = write(tmp_path, json.dumps({**obj, "crc32": checksum(obj)}, sort_keys=True) + "\n")
    found = scan(path, {"written": 0, "legacy": 1})
    assert found.damage[0] == f"{path}:1: seq: expected a positive integer, got None"
    assert found.records == [] and found.legacy == 0


def test_a_checksum_mismatch_taints_its_own_repetition(tmp_path: Path) -> None:
    # the only line of the file was changed after writing: no record around it, its own repetition is in doubt
    line = encode("trial", {**TRIAL, "repetition": 5}, 1).replace('"reason":""', '"reason":"x"')
    path = write(tmp_path, line)
    found = scan(path, {"written": 1, "trial": 1})
    assert len(found.damage) == 1 and found.damage[0].startswith(f"{path}:1: crc32: checksum mismatch (stored ")
    assert found.records == [] and found.tainted == {("p1", "cps", 5)}


def test_a_line_that_is_no_utf8_is_damage_naming_the_byte_and_its_column(tmp_path: Path) -> None:
    path = tmp_path / "trials.jsonl"
    path.write_bytes(encode("trial", TRIAL, 1).encode() + b'{"\xff"}\n')
    found = scan(path, {"written": 1, "trial": 1})
    assert found.damage == [f"{path}:2: not UTF-8 text (byte 0xff at column 3)"]
    assert [r.seq for r in found.records] == [1] and found.tainted == {("p1", "cps", 0)}


def test_a_line_whose_checksum_cannot_be_computed_is_damage_of_that_line(tmp_path: Path) -> None:
    # a lone UTF-16 surrogate written as a JSON escape (plain ASCII, valid JSON) has no UTF-8 form, so the checksum
    # over the record's UTF-8 text cannot be computed: the line is no record natbench wrote
    line = json.dumps({"type": "trial", **TRIAL, "reason": "\ud800", "seq": 1, "crc32": "00000000"}, sort_keys=True)
    path = write(tmp_path, line + "\n")
    found = scan(path, {"written": 1, "trial": 1})
    assert len(found.damage) == 1 and found.damage[0].startswith(f"{path}:1: not a natbench record: ")
    assert found.records == []


def test_a_line_whose_checksum_cannot_be_computed_is_named_for_its_string_not_a_number(tmp_path: Path) -> None:
    line = json.dumps({"type": "trial", **TRIAL, "reason": "\ud800", "seq": 1, "crc32": "00000000"}, sort_keys=True)
    path = write(tmp_path, line + "\n")
    assert scan(path, {"written": 1, "trial": 1}).damage == [
        f"{path}:1: not a natbench record: a string with no UTF-8 form (a lone surrogate)"
    ]


def test_a_record_numbered_below_the_one_before_it_is_out_of_order_tainting_its_repetition(tmp_path: Path) -> None:
    # seq 1, 3, then 2: line 3 is out of order (no record is missing: seq 2 is there); the record before it is a
    # result (its repetition ended), so only line 3's own repetition is in doubt
    path = write(
        tmp_path,
        encode("trial", TRIAL, 1),
        encode("result", RESULT, 3),
        encode("trial", {**TRIAL, "repetition": 7}, 2),
    )
    found = scan(path, {"written": 3, "trial": 2, "result": 1})
    assert found.damage == [f"{path}:3: seq 2 out of order (after seq 3)"]
    assert [r.seq for r in found.records] == [1, 3] and found.tainted == {("p1", "cps", 7)}


def test_the_scan_names_the_highest_seq_beyond_the_counts_for_a_second_look_at_run_json(tmp_path: Path) -> None:
    # seq 2 is the one uncounted record a running writer may leave (kept, not beyond); 4 and 3 lie beyond
    path = write(tmp_path, encode("trial", TRIAL, 1), encode("trial", TRIAL, 2))
    assert scan(path, {"written": 1, "trial": 1}, status="running").beyond == 0
    path = write(tmp_path, encode("trial", TRIAL, 1), encode("trial", TRIAL, 4), encode("trial", TRIAL, 3))
    assert scan(path, {"written": 1, "trial": 1}, status="running").beyond == 4


def test_a_record_two_beyond_the_counts_is_damage_tainting_its_repetition(tmp_path: Path) -> None:
    # run.json counts 1 record: seq 2 would be the one uncounted record a kill leaves (a note), seq 3 is damage
    path = write(tmp_path, encode("result", RESULT, 1), encode("trial", {**TRIAL, "repetition": 7}, 3))
    found = scan(path, {"written": 1, "result": 1})
    assert found.damage == [f"{path}:2: seq 3 beyond the 1 records run.json counts"]
    assert [r.seq for r in found.records] == [1] and found.tainted == {("p1", "cps", 7)}


def test_a_result_among_the_records_a_resume_moved_aside_is_damage_tainting_its_repetition(tmp_path: Path) -> None:
    # a resume moves only trials aside (of repetitions without a result); seq 1 lies in the moved range, and is a result
    path = write(tmp_path, encode("result", RESULT, 1))
    found = scan(path, {"written": 1, "trial": 1, "moved": [[1, 1]]})
    assert found.damage == [f"{path}:1: seq 1: a result among the records a resume moved aside"]
    assert found.records == [] and found.leftovers == [] and found.tainted == {("p1", "cps", 3)}


def test_one_uncounted_record_is_a_note_while_running_and_damage_in_a_complete_run(tmp_path: Path) -> None:
    # run.json counts 1 record, the file holds seq 2 as well: a kill between the line and the counts (running), or
    # appended after the run ended (complete: the writer counts the last record before it marks the run complete)
    path = write(tmp_path, encode("result", RESULT, 1), encode("trial", {**TRIAL, "repetition": 7}, 2))
    counts = {"written": 1, "result": 1}
    running = scan(path, counts, status="running")
    assert running.damage == []
    assert running.notes == [
        f"{path}:2: seq 2 not counted in run.json yet"
        " (written just before the run stopped, or the run is still being written)"
    ]
    assert [r.seq for r in running.records] == [1, 2] and running.tainted == set()
    complete = scan(path, counts, status="complete")
    assert complete.damage == [
        f"{path}:2: seq 2 beyond the 1 records run.json counts in a run whose status is 'complete'"
        " (appended after the run ended: no writer leaves an uncounted record after that mark)"
    ]
    assert complete.notes == [] and [r.seq for r in complete.records] == [1]
    assert complete.tainted == {("p1", "cps", 7)}


def test_fewer_lines_from_before_sequence_numbers_than_run_json_counts_is_damage(tmp_path: Path) -> None:
    path = write(tmp_path, legacy(TRIAL))
    found = scan(path, {"written": 0, "legacy": 2})
    assert found.damage == [
        f"{path}: 1 line(s) without sequence numbers, but run.json counts 2 from before sequence numbers"
    ]
    assert found.legacy == 1 and [r.seq for r in found.records] == [None]


def test_the_last_counted_record_missing_alone_is_named_at_the_end(tmp_path: Path) -> None:
    # run.json counts 2 records, the file holds seq 1 only: seq 2 is missing after it (not a torn line: that would be
    # a line without its newline), and the trial before it may have lost its next record
    path = write(tmp_path, encode("trial", TRIAL, 1))
    found = scan(path, {"written": 2, "trial": 2})
    assert found.damage == [f"{path}:2: seq 2 missing at the end (run.json counts 2 records written)"]
    assert found.tainted == {("p1", "cps", 0)}


@pytest.mark.parametrize("number", ["NaN", "-Infinity", "1e999"])
def test_a_line_holding_a_number_json_cannot_carry_is_damage_of_that_line(tmp_path: Path, number: str) -> None:
    line = encode("trial", {**TRIAL, "repetition": 1}, 2).replace('"intended_rate":1000.0', f'"intended_rate":{number}')
    path = write(tmp_path, encode("trial", TRIAL, 1), line)
    found = scan(path, {"written": 2, "trial": 2})
    # the line cannot be read, so neither can its number: seq 2, which run.json counts, is missing as well
    assert found.damage == [
        f"{path}:2: not a natbench record: non-finite number",
        f"{path}:3: seq 2 missing at the end (run.json counts 2 records written)",
    ]
    assert [r.seq for r in found.records] == [1]


def test_a_non_finite_number_a_line_parser_let_through_is_still_damage_of_that_line_when_checksummed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the checksum itself refuses a number JSON cannot carry: with a line parser that admits NaN (plain json.loads,
    # standing in for another reader's objects) the line is still damage, named once; its seq is there, so no record
    # is missing
    monkeypatch.setattr(records, "parse_line", json.loads)
    line = encode("trial", {**TRIAL, "repetition": 1}, 2).replace('"intended_rate":1000.0', '"intended_rate":NaN')
    path = write(tmp_path, encode("trial", TRIAL, 1), line)
    found = scan(path, {"written": 2, "trial": 2})
    assert found.damage == [f"{path}:2: not a natbench record: non-finite number"]
    assert [r.seq for r in found.records] == [1]


def test_a_line_nested_beyond_what_the_json_reader_can_follow_is_damage_of_that_line(tmp_path: Path) -> None:
    # thousands of levels: the JSON reader itself gives up (RecursionError), named like any nesting beyond MAX_DEPTH
    path = write(tmp_path, encode("trial", TRIAL, 1), "[" * 100_000 + "]" * 100_000 + "\n")
    found = scan(path, {"written": 1, "trial": 1})
    assert found.damage == [f"{path}:2: not a natbench record: nested more than {MAX_DEPTH} levels deep"]
    assert [r.seq for r in found.records] == [1]


def test_a_line_nested_too_deep_that_is_no_object_is_damage_of_that_line(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps(nested(MAX_DEPTH + 1)) + "\n")
    found = scan(path, None)
    assert found.damage == [f"{path}:1: not a natbench record: nested more than {MAX_DEPTH} levels deep"]


@pytest.mark.parametrize("seq", [True, 1.0, "1"])
def test_a_line_nested_too_deep_accounts_for_its_seq_only_when_that_is_a_positive_integer(
    tmp_path: Path, seq: object
) -> None:
    # the line with seq 1 is damaged but its number is there (no record missing: the other test above); a seq that is
    # no positive integer names no record, so seq 1, which run.json counts, is missing as well
    line = json.dumps({"type": "trial", **TRIAL, "extra": {"deep": nested(MAX_DEPTH)}, "seq": seq}) + "\n"
    path = write(tmp_path, line)
    found = scan(path, {"written": 1, "trial": 1})
    assert found.damage == [
        f"{path}:1: not a natbench record: nested more than {MAX_DEPTH} levels deep",
        f"{path}:2: seq 1 missing at the end (run.json counts 1 records written)",
    ]


def test_counts_without_a_written_count_count_no_record_written(tmp_path: Path) -> None:
    # "written" left out of run.json's counts is 0 (like every count): a file of one legacy line is intact
    path = write(tmp_path, legacy(TRIAL))
    found = scan(path, {"legacy": 1})
    assert found.damage == [] and found.legacy == 1 and found.highest == 0


def test_records_a_writer_counted_after_the_file_was_read_are_held_against_the_later_count(tmp_path: Path) -> None:
    # run.json read before the file counted 1 record, read again after it 2 (a writer went on meanwhile): seq 2 is
    # counted now, so even in a complete run it is no damage (a note: not in the first count); seq 3 is one beyond
    # the later count: the one a writer may be adding (running), damage in a complete run
    lines = [encode("trial", {**TRIAL, "repetition": r}, r + 1) for r in range(3)]
    path = write(tmp_path, *lines[:2])
    found = scan(path, {"written": 1, "trial": 1}, status="complete", counted_after=2)
    assert found.damage == [] and [r.seq for r in found.records] == [1, 2]
    assert found.notes == [
        f"{path}:2: seq 2 not counted in run.json yet"
        " (written just before the run stopped, or the run is still being written)"
    ]
    path = write(tmp_path, *lines)
    assert scan(path, {"written": 1, "trial": 1}, status="running", counted_after=2).damage == []
    assert scan(path, {"written": 1, "trial": 1}, status="complete", counted_after=2).damage == [
        f"{path}:3: seq 3 beyond the 2 records run.json counts in a run whose status is 'complete'"
        " (appended after the run ended: no writer leaves an uncounted record after that mark)"
    ]
    # the later count equal to the first: seq 2 is the one record beyond it, seq 3 two beyond (damage either way)
    found = scan(path, {"written": 1, "trial": 1}, status="running", counted_after=1)
    assert found.damage == [f"{path}:3: seq 3 beyond the 1 records run.json counts"]
    found = scan(path, {"written": 1, "trial": 1}, status="complete", counted_after=1)
    assert found.damage[0] == (
        f"{path}:2: seq 2 beyond the 1 records run.json counts in a run whose status is 'complete'"
        " (appended after the run ended: no writer leaves an uncounted record after that mark)"
    )


def test_a_later_count_below_the_first_never_lowers_what_the_first_allows(tmp_path: Path) -> None:
    # run.json read again shows fewer records written than before the file (replaced meanwhile): every record the
    # first count holds stays intact
    path = write(tmp_path, *(encode("trial", {**TRIAL, "repetition": r}, r + 1) for r in range(3)))
    found = scan(path, {"written": 3, "trial": 3}, counted_after=0)
    assert found.damage == [] and [r.seq for r in found.records] == [1, 2, 3]


def test_a_number_no_writer_reaches_is_damage_even_in_a_run_without_counts(tmp_path: Path) -> None:
    # without counts any number up to 2^62 is held (natbench counts at most MAX_SEQ); one beyond it is damage
    top = 1 << 62
    path = write(tmp_path, encode("trial", TRIAL, top))
    assert [r.seq for r in scan(path, None).records] == [top]
    path = write(tmp_path, encode("trial", TRIAL, top + 1))
    found = scan(path, None)
    assert found.records == []
    assert found.damage == [f"{path}:1: seq {top + 1} beyond the 0 records run.json counts"]


def test_numbered_records_in_a_run_without_counts_are_damage_naming_run_json(tmp_path: Path) -> None:
    path = write(tmp_path, encode("trial", TRIAL, 1), encode("trial", {**TRIAL, "repetition": 1}, 2))
    found = scan(path, None)
    assert found.damage == [
        f"{path}: its records carry sequence numbers but run.json has no record counts (run.json replaced?)"
    ]
    assert [r.seq for r in found.records] == [1, 2] and found.highest == 2


@pytest.mark.parametrize("torn", [False, True])
def test_the_abandoned_file_says_whether_its_last_line_is_torn(tmp_path: Path, torn: bool) -> None:
    last = encode("trial", {**TRIAL, "repetition": 1}, 2)
    path = write(tmp_path, encode("trial", TRIAL, 1), last[:-1] if torn else last)
    found = scan(path, None, sequence=False)
    assert found.torn is torn and found.damage == []
    assert [r.seq for r in found.records] == ([1] if torn else [1, 2])


def test_a_torn_last_line_is_a_note_while_running_and_damage_when_complete_or_after_missing_records(
    tmp_path: Path,
) -> None:
    torn = encode("trial", {**TRIAL, "repetition": 1}, 2)[:-1]
    path = write(tmp_path, encode("trial", TRIAL, 1), torn)
    counts = {"written": 1, "trial": 1}
    running = scan(path, counts)
    assert running.damage == [] and running.torn
    assert running.notes == [f"{path}:2: torn last line skipped (run interrupted while writing)"]
    assert scan(path, counts, status="complete").damage == [
        f"{path}:2: torn last line in a run whose status is 'complete'"
    ]
    # run.json counts 2 records: seq 2 is missing, so the file was cut short before the torn line
    cut = scan(path, {"written": 2, "trial": 2})
    assert cut.damage == [
        f"{path}:2: seq 2 missing at the end (run.json counts 2 records written)",
        f"{path}:2: torn last line after missing records: the file was cut short, not interrupted while writing",
    ]
    assert cut.notes == []


def test_a_file_that_fails_after_opening_is_damage_naming_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the file opens but the next look at it fails (a disk error, simulated here): damage naming the file and the
    # error's text, nothing read
    path = write(tmp_path, encode("trial", TRIAL, 1))

    def failing(p: Path) -> object:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(records, "open_regular", failing)
    found = scan(path, {"written": 1, "trial": 1})
    assert found.damage == [f"{path}: cannot be read: Input/output error"] and found.records == []


def padded(content_bytes: int) -> str:
    """A record line (with its newline) whose content is ``content_bytes`` long: its reason padded with x."""
    bare = len(encode("trial", TRIAL, 1)) - 1
    return encode("trial", {**TRIAL, "reason": "x" * (content_bytes - bare)}, 1)


def test_a_line_as_long_as_allowed_reads_and_one_byte_longer_is_damage(tmp_path: Path) -> None:
    path = write(tmp_path, padded(MAX_LINE))
    found = scan(path, {"written": 1, "trial": 1})
    assert found.damage == [] and len(found.records[0].text) == MAX_LINE
    path = write(tmp_path, padded(MAX_LINE + 1), encode("trial", {**TRIAL, "repetition": 1}, 2))
    found = scan(path, {"written": 2, "trial": 2})
    assert found.damage[0] == (
        f"{path}:1: longer than {MAX_LINE >> 20} MiB: no record natbench writes (not read further)"
    )
    assert [r.seq for r in found.records] == [2]


def test_an_unterminated_last_line_as_long_as_allowed_is_a_torn_line(tmp_path: Path) -> None:
    # MAX_LINE bytes without a newline: the record being written when the run stopped, not an over-long line
    path = write(tmp_path, padded(MAX_LINE)[:-1])
    found = scan(path, {"written": 0})
    assert found.torn and found.damage == []
    assert found.notes == [f"{path}:1: torn last line skipped (run interrupted while writing)"]


@pytest.mark.parametrize(
    ("error", "named"),
    [(OSError(errno.EIO, os.strerror(errno.EIO)), "Input/output error"), (OSError(), "OSError")],
)
def test_a_read_error_after_some_lines_is_damage_naming_the_next_line_and_the_lines_before_stand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, named: str
) -> None:
    # the disk fails once the first line is read (simulated here; the file and the reader are real): the error names
    # line 2 (its text, or its type when it has none), record 1 stands, nothing after it is read
    first = encode("trial", TRIAL, 1)
    path = write(tmp_path, first, encode("trial", {**TRIAL, "repetition": 1}, 2))
    real = records.open_regular

    class FailingDisk(io.RawIOBase):
        def __init__(self, raw: Any) -> None:
            self.raw, self.offset = raw, 0

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: Any) -> int:
            if self.offset >= len(first):
                raise error
            n = self.raw.readinto(memoryview(buffer)[: len(first) - self.offset]) or 0
            self.offset += n
            return n

        def close(self) -> None:
            self.raw.close()
            super().close()

    monkeypatch.setattr(records, "open_regular", lambda p: io.BufferedReader(FailingDisk(real(p).detach())))
    found = scan(path, {"written": 2, "trial": 2})
    assert found.damage == [f"{path}:2: cannot be read: {named} (not read further)"]
    assert [r.seq for r in found.records] == [1]


def test_an_over_long_line_is_skipped_in_bounded_memory(tmp_path: Path) -> None:
    # a line eight times MAX_LINE long, then a record: the scanner reads past it a piece at a time (never the whole
    # line at once) and goes on with the next line
    path = tmp_path / "trials.jsonl"
    with path.open("wb") as f:
        for _ in range(8):
            f.write(b"x" * MAX_LINE)
        f.write(b"\n" + encode("trial", TRIAL, 2).encode())
    tracemalloc.start()
    try:
        found = scan(path, {"written": 2, "trial": 2})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (
        found.damage[0] == f"{path}:1: longer than {MAX_LINE >> 20} MiB: no record natbench writes (not read further)"
    )
    assert [r.seq for r in found.records] == [2]
    assert peak < 6 * MAX_LINE  # a few pieces of MAX_LINE at a time; the whole line would take 8
