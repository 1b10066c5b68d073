"""The record lines of ``trials.jsonl``: their encoding, checksum and typed decoding.

One line per record, compact JSON with sorted keys::

    {"crc32": "1a2b3c4d", "seq": 7, "type": "trial", ...TrialRecord fields}

``type`` is ``trial`` (a :class:`~natbench.results.TrialRecord`) or ``result`` (a
:class:`~natbench.results.RepetitionResult`); ``seq`` numbers the records of a run from 1 and ``crc32`` is the
CRC-32 of the line's canonical JSON without ``crc32`` (:func:`checksum`). Lines from before sequence numbers
carry neither. The records keep their own classes (``natbench.results``); this module turns a line's fields into
one and back, checking every field's type (:func:`decode_record`): a line whose fields have the wrong types is
damage of that line, named ``field: expected ..., got ...``, exactly like a checksum mismatch.
"""

from __future__ import annotations

import json
import math
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from natbench.results import RepetitionResult, TrialRecord, Verdict
from natbench.run.format.fields import (
    FieldError,
    as_count,
    as_object,
    as_optional_measure,
    as_optional_rate,
    as_rate,
    as_str,
    as_time,
    json_safe,
    no_duplicate_keys,
    shown,
)

RecordKind = Literal["trial", "result"]
"""The ``type`` of a record line."""

KINDS: tuple[RecordKind, ...] = ("trial", "result")
"""Every record ``type``, in the order the checks name them."""


def checksum(obj: Mapping[str, Any]) -> str:
    """CRC-32 (8 hex digits) of the canonical JSON of ``obj`` without its ``crc32`` field."""
    body = {k: v for k, v in obj.items() if k != "crc32"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return f"{zlib.crc32(text.encode('utf-8')):08x}"


def encode(kind: str, data: Mapping[str, Any], seq: int) -> str:
    """The line (with its newline) of one record: ``type``, the record's fields, ``seq`` and ``crc32``."""
    obj: dict[str, Any] = {"type": kind, **data, "seq": seq}
    obj["crc32"] = checksum(obj)
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"


class NonFinite(ValueError):
    """A record line holds a number JSON cannot carry (``NaN``, ``Infinity``, ``1e999``)."""


def _reject_constant(token: str) -> float:
    raise NonFinite(f"non-finite number {token}")


def _finite_float(token: str) -> float:
    value = float(token)
    if not math.isfinite(value):
        raise NonFinite(f"non-finite number {token}")
    return value


def parse_line(text: str) -> Any:
    """The JSON value of one record line; :class:`NonFinite` for ``NaN``, ``Infinity`` or a number out of float
    range (JSON has none of them, and the checksum cannot be computed over them),
    :class:`~natbench.run.format.fields.DuplicateKey` for an object naming a key twice (the checksum covers only
    the one kept), ValueError when it is no JSON."""
    return json.loads(
        text, parse_constant=_reject_constant, parse_float=_finite_float, object_pairs_hook=no_duplicate_keys
    )


def kind_of(record: TrialRecord | RepetitionResult) -> RecordKind:
    """The ``type`` a record is stored under."""
    return "trial" if isinstance(record, TrialRecord) else "result"


def record_data(record: TrialRecord | RepetitionResult) -> dict[str, Any]:
    """The fields of a record as stored (strict JSON: NaN and infinities become null).

    ValueError when JSON cannot hold them (a NaN dict key, an object that is no JSON value), a
    :class:`~natbench.run.format.fields.FieldError` when the stored fields would not read back as this record
    (a required rate that is NaN): what is written always reads.
    """
    data = json_safe(record.to_dict())
    json.dumps(data, allow_nan=False)  # TypeError / ValueError when JSON cannot hold it
    decode_record({"type": kind_of(record), **data})
    return data


def encode_record(record: TrialRecord | RepetitionResult, seq: int) -> str:
    """The numbered, checksummed line of one record (with its newline)."""
    return encode(kind_of(record), record_data(record), seq)


def _counts(value: Any, field: str) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for direction, counts in as_object(value, field).items():
        inner = as_object(counts, f"{field}.{direction}")
        out[direction] = {k: as_count(v, f"{field}.{direction}.{k}") for k, v in inner.items()}
    return out


def _verdict(value: Any, field: str) -> Verdict:
    try:
        return Verdict(as_str(value, field))
    except ValueError:
        raise FieldError(field, f"expected one of pass, fail, invalid, got {shown(value)}") from None


_Check = Callable[[Any, str], Any]

TRIAL_FIELDS: dict[str, tuple[_Check, bool]] = {
    "point_id": (as_str, True),
    "metric": (as_str, True),
    "repetition": (as_count, True),
    "step": (as_count, True),
    "kind": (as_str, True),
    "intended_rate": (as_rate, True),
    "achieved_rate": (as_rate, True),
    "counts": (_counts, True),
    "verdict": (_verdict, True),
    "reason": (as_str, True),
    "started_at": (as_time, True),
    "ended_at": (as_time, True),
    "lower": (as_optional_rate, False),
    "upper": (as_optional_rate, False),
    "value": (as_optional_measure, False),
    "extra": (as_object, False),
}
"""Field of a trial line -> (its check, required). Rates, counts and times are never negative nor absurd
(:func:`~natbench.run.format.fields.as_measure`)."""

RESULT_FIELDS: dict[str, tuple[_Check, bool]] = {
    "point_id": (as_str, True),
    "metric": (as_str, True),
    "repetition": (as_count, True),
    "value": (as_optional_measure, True),
    "unit": (as_str, True),
    "error": (as_optional_measure, False),
    "extra": (as_object, False),
}
"""Field of a result line -> (its check, required)."""


def _fields(data: Mapping[str, Any], spec: Mapping[str, tuple[_Check, bool]], what: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, (check, required) in spec.items():
        if name in data:
            out[name] = check(data[name], name)
        elif required:
            raise FieldError(name, f"missing (every {what} record has it)")
    unknown = sorted(k for k in data if k not in spec and k not in ("type", "seq", "crc32"))
    if unknown:
        raise FieldError(unknown[0], f"not a field of a {what} record")
    return out


def decode_record(data: Mapping[str, Any]) -> TrialRecord | RepetitionResult:
    """The record a line's JSON object holds (``type`` picks the class; ``seq`` and ``crc32`` are ignored).

    :class:`~natbench.run.format.fields.FieldError` naming the first field that is missing, unknown or of the
    wrong type.
    """
    kind = data.get("type")
    if kind == "trial":
        return TrialRecord(**_fields(data, TRIAL_FIELDS, "trial"))
    if kind == "result":
        return RepetitionResult(**_fields(data, RESULT_FIELDS, "result"))
    raise FieldError("type", f"expected 'trial' or 'result', got {shown(kind)}")


@dataclass(frozen=True)
class RecordPlan:
    """What the records of one run directory may refer to: the working points of its points.json, the metrics
    natbench knows, and the repetitions its campaign planned. A record with an intact checksum that refers to
    anything else cannot be placed in any table: it is damage of its line, like a checksum mismatch."""

    points: frozenset[str]
    """The ids of points.json's working points."""
    metrics: frozenset[str] | None = None
    """The metrics a record may be of (None: any)."""
    repetitions: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """(point id, metric) -> repetitions the campaign planned there (absent: not known, e.g. an experiment session
    whose measurements add repetitions)."""
    every_point: bool = False
    """Whether a complete run holds records of every one of :attr:`points` (a campaign's run: the writer marks it
    complete only once every planned repetition has its result; not an experiment session, which may list a point
    whose measurement stopped before its first record)."""

    def holds(self, key: tuple[str, str, int]) -> bool:
        """Whether (point id, metric, repetition) ``key`` is a repetition this run could have measured."""
        point, metric, repetition = key
        planned = self.repetitions.get((point, metric))
        return (
            point in self.points
            and (self.metrics is None or metric in self.metrics)
            and (planned is None or 0 <= repetition < planned)
        )

    def problem(self, record: TrialRecord | RepetitionResult) -> str | None:
        """Why ``record`` does not belong to this run (``field: ...``), or None."""
        if record.point_id not in self.points:
            return f"point_id: {shown(record.point_id)} is no working point of points.json"
        if self.metrics is not None and record.metric not in self.metrics:
            return f"metric: {shown(record.metric)} is no metric this natbench knows"
        planned = self.repetitions.get((record.point_id, record.metric))
        if planned is not None and record.repetition >= planned:
            return (
                f"repetition: {record.repetition} beyond the {planned} repetitions the campaign plans for"
                f" {record.metric} (repetitions count from 0)"
            )
        return None
