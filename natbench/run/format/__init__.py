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

from natbench.run.format.campaign import StoredCampaign as StoredCampaign
from natbench.run.format.codec import decode_campaign as decode_campaign
from natbench.run.format.codec import decode_meta as decode_meta
from natbench.run.format.codec import decode_points as decode_points
from natbench.run.format.codec import encode_meta as encode_meta
from natbench.run.format.codec import encode_points as encode_points
from natbench.run.format.declarations import LEGACY as LEGACY
from natbench.run.format.declarations import declarations_for as declarations_for
from natbench.run.format.declarations import slab_label as slab_label
from natbench.run.format.fields import FieldError as FieldError
from natbench.run.format.fields import json_safe as json_safe
from natbench.run.format.fields import plain_json as plain_json
from natbench.run.format.files import ABANDONED as ABANDONED
from natbench.run.format.files import CAMPAIGN as CAMPAIGN
from natbench.run.format.files import DAMAGED as DAMAGED
from natbench.run.format.files import EXPERIMENT_KIND as EXPERIMENT_KIND
from natbench.run.format.files import POINTS as POINTS
from natbench.run.format.files import REPAIRED as REPAIRED
from natbench.run.format.files import RESULTS_PARQUET as RESULTS_PARQUET
from natbench.run.format.files import RUN as RUN
from natbench.run.format.files import TRIALS as TRIALS
from natbench.run.format.files import TRIALS_PARQUET as TRIALS_PARQUET
from natbench.run.format.files import RepKey as RepKey
from natbench.run.format.lines import RecordPlan as RecordPlan
from natbench.run.format.lines import decode_record as decode_record
from natbench.run.format.lines import encode as encode
from natbench.run.format.lines import encode_record as encode_record
from natbench.run.format.lines import kind_of as kind_of
from natbench.run.format.lines import parse_line as parse_line
from natbench.run.format.lines import record_data as record_data
from natbench.run.format.meta import PENDING as PENDING
from natbench.run.format.meta import STATUSES as STATUSES
from natbench.run.format.meta import HostFacts as HostFacts
from natbench.run.format.meta import MalformedCounts as MalformedCounts
from natbench.run.format.meta import RecordCounts as RecordCounts
from natbench.run.format.meta import Repair as Repair
from natbench.run.format.meta import RunMeta as RunMeta
from natbench.run.format.meta import RunStatus as RunStatus
from natbench.run.format.meta import TesterFacts as TesterFacts
from natbench.run.format.points import PointRecord as PointRecord
from natbench.run.format.units import UNIT_ALIASES as UNIT_ALIASES
from natbench.run.format.units import directions_of as directions_of
from natbench.run.format.units import reported_factor as reported_factor
from natbench.run.format.units import reported_unit as reported_unit
