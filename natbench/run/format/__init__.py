"""The run-directory format: the one typed model of the files a run writes, and their codec.

A run directory (:mod:`.files`) holds ``run.json`` (:class:`RunMeta`), ``points.json``
(:class:`PointRecord` per working point), ``trials.jsonl`` (one record per line: a
:class:`~natbench.results.TrialRecord` or :class:`~natbench.results.RepetitionResult`, numbered and
checksummed, :mod:`.lines`) and ``campaign.yaml`` (:class:`StoredCampaign`). Every reader and writer of
run directories goes through this package: :mod:`natbench.run.reader` (strict and lenient reading),
:mod:`natbench.run.writer` (creating and appending), :mod:`natbench.run.repair` (resume, tidy, repair),
:mod:`natbench.run.records` (the scanner of trials.jsonl) and :mod:`natbench.run.frames` (records as
pandas frames). Nothing here reads or writes a file: decoders take bytes, encoders give text.

Every field is type-checked on the way in (:mod:`.fields`): a wrong type is one
:class:`~natbench.errors.StoreError` naming the file and the field, or, in a record line, damage of that
line (``trials.jsonl:7: intended_rate: expected a finite number, got 'x'``).
"""

from natbench.run.format.campaign import StoredCampaign
from natbench.run.format.codec import (
    decode_campaign,
    decode_meta,
    decode_points,
    encode_meta,
    encode_points,
    load_json,
)
from natbench.run.format.fields import FieldError, json_safe, plain_json
from natbench.run.format.files import (
    ABANDONED,
    CAMPAIGN,
    DAMAGED,
    EXPERIMENT_KIND,
    POINTS,
    REPAIRED,
    RESULTS_PARQUET,
    RUN,
    TRIALS,
    TRIALS_PARQUET,
    RepKey,
)
from natbench.run.format.lines import (
    KINDS,
    NonFinite,
    RecordKind,
    RecordPlan,
    checksum,
    decode_record,
    encode,
    encode_record,
    kind_of,
    parse_line,
    record_data,
)
from natbench.run.format.meta import (
    COUNTS,
    MAX_SEQ,
    PENDING,
    STATUSES,
    HostFacts,
    MalformedCounts,
    RecordCounts,
    Repair,
    RunMeta,
    RunStatus,
    TesterFacts,
    counts_problem,
)
from natbench.run.format.points import PointRecord
from natbench.run.format.units import UNIT_ALIASES, directions_of, reported_factor, reported_unit

__all__ = [
    "ABANDONED",
    "CAMPAIGN",
    "COUNTS",
    "DAMAGED",
    "EXPERIMENT_KIND",
    "KINDS",
    "MAX_SEQ",
    "PENDING",
    "POINTS",
    "REPAIRED",
    "RESULTS_PARQUET",
    "RUN",
    "STATUSES",
    "TRIALS",
    "TRIALS_PARQUET",
    "UNIT_ALIASES",
    "FieldError",
    "HostFacts",
    "MalformedCounts",
    "NonFinite",
    "PointRecord",
    "RecordCounts",
    "RecordKind",
    "RecordPlan",
    "RepKey",
    "Repair",
    "RunMeta",
    "RunStatus",
    "StoredCampaign",
    "TesterFacts",
    "checksum",
    "counts_problem",
    "decode_campaign",
    "decode_meta",
    "decode_points",
    "decode_record",
    "directions_of",
    "encode",
    "encode_meta",
    "encode_points",
    "encode_record",
    "json_safe",
    "kind_of",
    "load_json",
    "parse_line",
    "plain_json",
    "record_data",
    "reported_factor",
    "reported_unit",
]
