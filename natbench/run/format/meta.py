"""``run.json``: what a run is (versions, host, tester and DUT facts), how it went (status), and its record counts.

:class:`RunMeta` holds every key natbench writes there; keys it does not know (an experiment's own fields, such
as the pytest plugin's ``pytest``) are kept in :attr:`RunMeta.other` and written back as they were. Old files
still read: tester facts under ``backend`` (now ``kind``), ``started_at`` as ISO 8601 text, no record counts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from natbench.plugins import DutDeclarations
from natbench.run.format.declarations import decode_declarations, encode_declarations
from natbench.run.format.fields import (
    FieldError,
    as_float,
    as_int,
    as_list,
    as_object,
    as_optional_int,
    as_optional_str,
    as_str,
    shown,
)
from natbench.run.format.files import RepKey

COUNTS = "records"
"""Key of the record counts in run.json."""
PENDING = "repair_pending"
"""run.json key naming the repaired trials file of a repair that has not renamed it over trials.jsonl yet."""

RunStatus = Literal["running", "complete", "failed", "unknown"]
"""A run's status; ``unknown`` only for a run.json that has none."""
STATUSES: tuple[str, ...] = ("running", "complete", "failed")
"""The statuses natbench writes."""

MAX_SEQ = 1 << 40
"""Largest record count taken from run.json (a trial a microsecond for 12 days); beyond it the counts are damage."""


@dataclass(frozen=True)
class HostFacts:
    """The machine natbench ran on."""

    hostname: str | None = None
    """Its host name."""
    platform: str | None = None
    """``platform.platform()``: OS, kernel and C library."""
    python: str | None = None
    """The Python version."""
    machine: str | None = None
    """The CPU architecture (``x86_64``)."""
    cpus: int | None = None
    """Logical CPUs of the machine."""
    other: dict[str, Any] = field(default_factory=dict)
    """Keys this version does not know, kept as stored."""

    def to_dict(self) -> dict[str, Any]:
        """run.json's ``host`` (the facts that are known)."""
        known = {f: getattr(self, f) for f in ("hostname", "platform", "python", "machine", "cpus")}
        return dict(sorted({**self.other, **{k: v for k, v in known.items() if v is not None}}.items()))

    @classmethod
    def from_dict(cls, data: Any) -> HostFacts:
        """The facts of run.json's ``host``."""
        d = as_object(data, "host")
        return cls(
            hostname=as_optional_str(d.get("hostname"), "host.hostname"),
            platform=as_optional_str(d.get("platform"), "host.platform"),
            python=as_optional_str(d.get("python"), "host.python"),
            machine=as_optional_str(d.get("machine"), "host.machine"),
            cpus=as_optional_int(d.get("cpus"), "host.cpus"),
            other={k: v for k, v in d.items() if k not in ("hostname", "platform", "python", "machine", "cpus")},
        )


@dataclass(frozen=True)
class TesterFacts:
    """What the tester reported about itself: its ``kind`` (the backend) and whatever else it knows."""

    kind: str = ""
    """The tester backend (``software``, ``trex``, ``fake``, ``distributed``); "" when no facts were stored."""
    details: dict[str, Any] = field(default_factory=dict)
    """Every other fact (versions, ports, rate tolerance, MACs ...), as the backend gave it."""

    def to_dict(self) -> dict[str, Any]:
        """run.json's ``tester`` (sorted keys, as the file stores them)."""
        facts = {**self.details, "kind": self.kind} if self.kind else dict(self.details)
        return dict(sorted(facts.items()))

    @classmethod
    def from_dict(cls, data: Any) -> TesterFacts:
        """The facts of run.json's ``tester`` (or of a tester's ``facts()``); the old key ``backend`` is read as
        ``kind``."""
        d = as_object(data, "tester")
        if "kind" in d:
            kind = d["kind"]
            details = {k: v for k, v in d.items() if k != "kind"}
        else:
            kind = d.get("backend", "")
            details = {k: v for k, v in d.items() if k != "backend"}
        return cls(as_str(kind, "tester.kind"), details)


@dataclass(frozen=True)
class RecordCounts:
    """run.json's ``records``: how many record lines were written (see :mod:`natbench.run.records`)."""

    written: int = 0
    """The highest ``seq`` written (every record ever written, moved-aside ones too)."""
    trial: int = 0
    """Trial records written (those moved aside included)."""
    result: int = 0
    """Result records written."""
    legacy: int = 0
    """Lines from before sequence numbers kept at the start of trials.jsonl."""
    moved: tuple[tuple[int, int], ...] = ()
    """``seq`` ranges ``(first, last)`` a resume (or a lost testbed) moved to trials.abandoned.jsonl."""

    def to_dict(self) -> dict[str, Any]:
        """run.json's ``records``."""
        return {
            "written": self.written,
            "trial": self.trial,
            "result": self.result,
            "legacy": self.legacy,
            "moved": [[a, b] for a, b in self.moved],
        }

    @property
    def moved_count(self) -> int:
        """How many records the ``moved`` ranges hold."""
        return sum(b - a + 1 for a, b in self.moved)


@dataclass(frozen=True)
class MalformedCounts:
    """run.json's ``records`` when it is an object but not well-formed counts: kept as stored, never trusted (the
    scanner names the problem as damage)."""

    raw: dict[str, Any]
    """The object as stored."""
    problem: str
    """What is wrong with it."""

    def to_dict(self) -> dict[str, Any]:
        """run.json's ``records`` as stored."""
        return self.raw


def counts_problem(counts: Any) -> str | None:
    """What is wrong with run.json's ``records`` (None when it is well-formed)."""
    if not isinstance(counts, dict):
        return f"expected an object, got {type(counts).__name__}"
    for name in ("written", "trial", "result", "legacy"):
        v = counts.get(name, 0)
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v <= MAX_SEQ:
            return f"{name}: expected a whole number from 0 to {MAX_SEQ}, got {v!r}"
    moved = counts.get("moved", [])
    if not isinstance(moved, list):
        return "moved: expected a list of [first, last] ranges"
    last = 0
    for pair in moved:
        ok = isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)
        if not ok or not last < pair[0] <= pair[1] <= counts.get("written", 0):
            return f"moved: {pair!r} is no [first, last] range after {last} within the records written"
        last = pair[1]
    return None


def _counts(value: Any) -> RecordCounts | MalformedCounts | None:
    if not isinstance(value, dict):
        return None  # no counts (a run from before them); a non-object is read as none, as it always was
    problem = counts_problem(value)
    if problem is not None:
        return MalformedCounts(value, problem)
    return RecordCounts(
        written=value.get("written", 0),
        trial=value.get("trial", 0),
        result=value.get("result", 0),
        legacy=value.get("legacy", 0),
        moved=tuple((a, b) for a, b in value.get("moved", [])),
    )


@dataclass(frozen=True)
class Repair:
    """One ``--resume --repair`` (run.json ``repairs``)."""

    at: float
    """Unix time of the repair."""
    backup: str | None
    """The copy of the damaged trials.jsonl (None when there was no file)."""
    damage: tuple[str, ...]
    """The damage it accepted (``file:line: what``)."""
    remeasured: tuple[RepKey, ...]
    """The repetitions whose records it dropped, to be measured again."""
    dropped_results: int
    """Results it dropped."""

    def to_dict(self) -> dict[str, Any]:
        """One entry of run.json's ``repairs``."""
        return {
            "at": self.at,
            "backup": self.backup,
            "damage": list(self.damage),
            "remeasured": [list(k) for k in self.remeasured],
            "dropped_results": self.dropped_results,
        }

    @classmethod
    def from_dict(cls, data: Any, where: str) -> Repair:
        """One entry of run.json's ``repairs``."""
        d = as_object(data, where)
        keys = [as_list(k, f"{where}.remeasured") for k in as_list(d.get("remeasured", []), f"{where}.remeasured")]
        return cls(
            at=as_float(d.get("at"), f"{where}.at"),
            backup=as_optional_str(d.get("backup"), f"{where}.backup"),
            damage=tuple(as_str(x, f"{where}.damage") for x in as_list(d.get("damage", []), f"{where}.damage")),
            remeasured=tuple(_rep_key(k, f"{where}.remeasured") for k in keys),
            dropped_results=as_int(d.get("dropped_results", 0), f"{where}.dropped_results"),
        )


def _rep_key(k: list[Any], where: str) -> RepKey:
    if len(k) != 3:
        raise FieldError(where, f"expected [point id, metric, repetition], got {shown(k)}")
    return (as_str(k[0], where), as_str(k[1], where), as_int(k[2], where))


def _time(value: Any, name: str) -> float | None:
    """A stored time: Unix seconds, or ISO 8601 text (synthetic runs of older versions wrote that)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value).timestamp()
        except ValueError:
            raise FieldError(name, f"expected Unix seconds or an ISO 8601 time, got {shown(value)}") from None
    return as_float(value, name)


def _status(value: Any) -> RunStatus:
    if value is None:
        return "unknown"
    if value not in STATUSES:
        raise FieldError("status", f"expected one of {', '.join(STATUSES)}, got {shown(value)}")
    return cast(RunStatus, value)


_KNOWN = (
    "natbench_version",
    "git_commit",
    "host",
    "started_at",
    "campaign_file",
    "campaign_name",
    "tester",
    "duts",
    "status",
    "failure",
    "ended_at",
    COUNTS,
    "point_facts",
    "resumed_at",
    "repairs",
    PENDING,
    "run_id",
    "testbed_class",
    "point_testbeds",
    "testbeds",
    "dut_declarations",
)


@dataclass(frozen=True)
class RunMeta:
    """run.json: one run's versions, host, tester and DUT facts, status and record counts."""

    natbench_version: str | None = None
    """The natbench version that created the run."""
    git_commit: str | None = None
    """The commit of the natbench source tree, when it was a git checkout."""
    host: HostFacts = field(default_factory=HostFacts)
    """The machine natbench ran on."""
    started_at: float | None = None
    """Unix time the run was created."""
    campaign_file: str | None = None
    """The campaign file it was started from (an experiment session: its testbed file)."""
    campaign_name: str | None = None
    """The campaign's name."""
    tester: TesterFacts = field(default_factory=TesterFacts)
    """The tester's facts (the latest, read after it connected)."""
    duts: dict[str, Any] = field(default_factory=dict)
    """The latest DUT facts by DUT name (a single DUT's facts, not keyed by name, under ``dut``)."""
    status: RunStatus = "running"
    """running, complete or failed (``unknown`` when run.json has none)."""
    failure: str | None = None
    """Why a failed run failed."""
    ended_at: float | None = None
    """Unix time the run ended (complete or failed)."""
    records: RecordCounts | MalformedCounts | None = field(default_factory=RecordCounts)
    """The record counts trials.jsonl is checked against (None: a run from before them)."""
    point_facts: dict[str, Any] = field(default_factory=dict)
    """Point id -> the DUT facts read after setting that point up (keyed like :attr:`duts`)."""
    resumed_at: tuple[float, ...] = ()
    """Unix times of every resume."""
    repairs: tuple[Repair, ...] = ()
    """Every ``--resume --repair``, in order."""
    repair_pending: str | None = None
    """The repaired trials file a repair wrote but has not renamed over trials.jsonl yet."""
    run_id: str | None = None
    """A distributed run's id (names its queues across resumes)."""
    testbed_class: str | None = None
    """A distributed run's testbed class."""
    point_testbeds: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """A distributed run: point id -> the testbeds that measured it, in order."""
    testbeds: dict[str, dict[str, Any]] = field(default_factory=dict)
    """A distributed run: testbed name -> what its worker said of it (class, tester facts, ...)."""
    dut_declarations: dict[str, DutDeclarations] = field(default_factory=dict)
    """DUT name -> what its DUT kind (recipe) declared for reports: table and hash size parameters, slab caches
    (:mod:`~natbench.run.format.declarations`; empty in a run stored before them, or with DUTs that declare none)."""
    other: dict[str, Any] = field(default_factory=dict)
    """Keys natbench does not know (an experiment's own fields, e.g. ``pytest``), kept as stored."""

    def replace(self, **changes: Any) -> RunMeta:
        """A copy with ``changes`` (field names of this class)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """run.json's JSON object (the optional keys only when set, as natbench always wrote them)."""
        out: dict[str, Any] = {
            **self.other,
            "natbench_version": self.natbench_version,
            "git_commit": self.git_commit,
            "host": self.host.to_dict(),
            "started_at": self.started_at,
            "campaign_file": self.campaign_file,
            "campaign_name": self.campaign_name,
            "tester": self.tester.to_dict(),
            "duts": self.duts,
        }
        if self.status != "unknown":
            out["status"] = self.status
        optional: dict[str, Any] = {
            "failure": self.failure,
            "ended_at": self.ended_at,
            COUNTS: None if self.records is None else self.records.to_dict(),
            "point_facts": self.point_facts or None,
            "resumed_at": list(self.resumed_at) or None,
            "repairs": [r.to_dict() for r in self.repairs] or None,
            PENDING: self.repair_pending,
            "run_id": self.run_id,
            "testbed_class": self.testbed_class,
            "point_testbeds": {k: list(v) for k, v in self.point_testbeds.items()} or None,
            "testbeds": self.testbeds or None,
            "dut_declarations": encode_declarations(self.dut_declarations) or None,
        }
        out.update({k: v for k, v in optional.items() if v is not None})
        return out

    @classmethod
    def from_dict(cls, data: Any) -> RunMeta:
        """The metadata of run.json's JSON value; :class:`FieldError` naming the first key whose value is wrong."""
        if not isinstance(data, dict):
            raise FieldError("run.json", "expected a JSON object")
        d: dict[str, Any] = data
        by_point = as_object(d.get("point_testbeds", {}), "point_testbeds")
        testbeds = as_object(d.get("testbeds", {}), "testbeds")
        return cls(
            natbench_version=as_optional_str(d.get("natbench_version"), "natbench_version"),
            git_commit=as_optional_str(d.get("git_commit"), "git_commit"),
            host=HostFacts.from_dict(d.get("host", {})),
            started_at=_time(d.get("started_at"), "started_at"),
            campaign_file=as_optional_str(d.get("campaign_file"), "campaign_file"),
            campaign_name=as_optional_str(d.get("campaign_name"), "campaign_name"),
            tester=TesterFacts.from_dict(d.get("tester", {})),
            duts=as_object(d.get("duts", {}), "duts"),
            status=_status(d.get("status")),
            failure=as_optional_str(d.get("failure"), "failure"),
            ended_at=_time(d.get("ended_at"), "ended_at"),
            records=_counts(d.get(COUNTS)),
            point_facts=as_object(d.get("point_facts", {}), "point_facts"),
            resumed_at=tuple(as_float(t, "resumed_at") for t in as_list(d.get("resumed_at", []), "resumed_at")),
            repairs=tuple(
                Repair.from_dict(r, f"repairs[{i}]") for i, r in enumerate(as_list(d.get("repairs", []), "repairs"))
            ),
            repair_pending=as_optional_str(d.get(PENDING), PENDING),
            run_id=as_optional_str(d.get("run_id"), "run_id"),
            testbed_class=as_optional_str(d.get("testbed_class"), "testbed_class"),
            point_testbeds={
                str(pid): tuple(as_str(n, f"point_testbeds.{pid}") for n in as_list(names, f"point_testbeds.{pid}"))
                for pid, names in by_point.items()
            },
            testbeds={str(n): as_object(tb, f"testbeds.{n}") for n, tb in testbeds.items()},
            dut_declarations=decode_declarations(d.get("dut_declarations", {})),
            other={k: v for k, v in d.items() if k not in _KNOWN},
        )

    @property
    def counts(self) -> Mapping[str, Any] | None:
        """The record counts as stored (malformed ones too: the scanner names their problem), None without."""
        return None if self.records is None else self.records.to_dict()
