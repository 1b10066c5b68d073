"""The worker side of a distributed run: the testbed a worker owns and the task that measures one working point.

A ``natbench worker`` process is one Dask worker with one thread and one :class:`OwnedTestbed` (a worker
plugin): the testbed section of its own testbed file, read on that machine (SSH keys and passphrases never
leave it), its name and its class. It advertises two resources, ``testbed:<name>`` and
``testbed-class:<class>``, one unit each, so that the scheduler hands it one working point at a time.

:func:`measure_point` is the task. It asks the client what is left to measure at its point (the client alone
knows what is stored), builds the campaign from the measurement part the client sent plus its own testbed
section, and measures with the same :class:`~natbench.run.orchestrator.Orchestrator` as a local run. Its
store is a :class:`StreamingStore`: every record goes to the client through a Dask queue and the worker waits
for the client's acknowledgement, sent after the record is on the client's disk (fsync), before it goes on.
So a trial is durable in the run directory before the next trial starts, as in a local run.
"""

from __future__ import annotations

import dataclasses
import socket
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from distributed import Queue, WorkerPlugin, get_worker

from natbench.errors import NatbenchError
from natbench.plugins import DutDeclarations
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.format import plain_json
from natbench.run.format.declarations import encode_declarations
from natbench.run.observers import Observer
from natbench.run.orchestrator import Orchestrator

if TYPE_CHECKING:
    from natbench.campaign import Campaign
    from natbench.testbed import Testbed
    from natbench.workingpoint import WorkingPoint


PLUGIN = "natbench-testbed"
"""Name of the worker plugin that holds a worker's testbed."""


def class_resource(testbed_class: str) -> str:
    """The Dask resource a worker of ``testbed_class`` offers (one unit) and a point's task needs."""
    return f"testbed-class:{testbed_class}"


def testbed_resource(name: str) -> str:
    """The Dask resource naming one testbed (one unit): lets a task be sent to that testbed only."""
    return f"testbed:{name}"


def reply_queue(run_key: str, attempt: str) -> str:
    """Name of the queue on which the client answers one attempt at a point."""
    return f"{run_key}.{attempt}"


class PointStopped(NatbenchError):
    """The client told this attempt to stop (another testbed took its point over, or the run ended)."""


def _escape(value: Any) -> Any:
    """``$`` doubled in every string (a campaign loads ``$$`` as ``$``; the section is resolved already)."""
    if isinstance(value, str):
        return value.replace("$", "$$")
    if isinstance(value, dict):
        return {k: _escape(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_escape(v) for v in value]
    return value


@dataclass
class OwnedTestbed(WorkerPlugin):
    """The testbed a worker owns: its testbed section (read locally), name and class; built at the first point."""

    testbed_name: str
    """The testbed's name (the ``testbed:<name>`` resource; recorded with every point and trial it measures)."""
    testbed_class: str
    """What it is equivalent to (same DUT hardware and software): the ``testbed-class:<class>`` resource."""
    section: dict[str, Any]
    """The ``testbed`` section (tester, DUTs) as plain data: stays in this process."""
    file: Path | None = None
    """The testbed file it was read from (DUT recipes are found relative to it)."""
    build: Callable[[Campaign], Testbed] | None = None
    """Builds the testbed for a campaign (default :func:`natbench.testbed.build_testbed`; tests pass fakes)."""
    name: str = field(default=PLUGIN, init=False)
    """The plugin's name on the worker (Dask's key for it)."""
    _built: tuple[str, Campaign, Testbed] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def resources(self) -> dict[str, float]:
        """The Dask resources the worker advertises."""
        return {class_resource(self.testbed_class): 1, testbed_resource(self.testbed_name): 1}

    def info(self) -> dict[str, Any]:
        """What the run directory records about this testbed (no secret: name, class, host)."""
        return {"name": self.testbed_name, "class": self.testbed_class, "host": socket.gethostname()}

    def campaign_for(self, measurement: str) -> Campaign:
        """The campaign to measure: the client's measurement part with this testbed's section."""
        from natbench.campaign import parse_campaign

        data = yaml.safe_load(measurement)
        data["testbed"] = _escape(self.section)
        where = self.file if self.file is not None else Path(f"{self.testbed_name}.yaml")
        return parse_campaign(yaml.safe_dump(data, sort_keys=False), where.with_name(f"{data.get('name', 'run')}.yaml"))

    def testbed_for(self, measurement: str) -> tuple[Campaign, Testbed]:
        """The campaign and the testbed built for it (kept for the next point of the same campaign)."""
        with self._lock:
            if self._built is not None and self._built[0] == measurement:
                return self._built[1], self._built[2]
            self._close()
            campaign = self.campaign_for(measurement)
            if self.build is not None:
                bed = self.build(campaign)
            else:
                from natbench.testbed import build_testbed

                bed = build_testbed(campaign)
            self._built = (measurement, campaign, bed)
            return campaign, bed

    def forget(self) -> None:
        """Close the built testbed (after an error its state is unknown: the next point builds it again)."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._built is not None:
            bed = self._built[2]
            self._built = None
            bed.close()

    def teardown(self, worker: Any) -> None:
        """The worker closes: close the testbed (and take down a lab it brought up)."""
        self.forget()


class Channel:
    """One attempt's conversation with the client: each message is answered once the client has stored it.

    While it waits for an answer it looks, every ``check`` seconds, whether its task is still wanted: a
    client that went away (killed, interrupted) has its tasks cancelled by the scheduler, and the attempt
    then stops (PointStopped) instead of holding the testbed until ``timeout``.
    """

    def __init__(self, run_key: str, attempt: str, timeout: float, check: float = 10.0) -> None:
        self.attempt = attempt
        self.timeout = timeout
        self.check = check
        self._out = Queue(run_key)
        self._back = Queue(reply_queue(run_key, attempt))
        self._wanted: Callable[[], bool] = _task_wanted()

    def call(self, op: str, **body: Any) -> dict[str, Any]:
        """Send one message and wait for the client's answer; PointStopped when it says stop."""
        self._out.put({"op": op, "attempt": self.attempt, **body})
        waited = 0.0
        while True:
            wait = min(self.check, self.timeout - waited)
            try:
                reply = self._back.get(timeout=wait)
                break
            except TimeoutError:
                waited += wait
            if waited >= self.timeout:
                raise PointStopped(f"no answer from the client for {self.timeout:g} s after {op!r}")
            if not self._wanted():
                raise PointStopped(f"the client went away (no answer after {op!r}; its task was cancelled)")
        if not reply.get("ok"):
            raise PointStopped(str(reply.get("why", "stopped by the client")))
        return dict(reply)


def _task_wanted() -> Callable[[], bool]:
    """A check that the task running in this thread is still wanted by the scheduler (always True off a worker)."""
    try:
        worker = get_worker()
        key = worker.get_current_task()
    except ValueError:
        return lambda: True

    def wanted() -> bool:
        ts = worker.state.tasks.get(key)
        return ts is not None and ts.state not in ("cancelled", "released", "forgotten")

    return wanted


@dataclass
class StreamingStore:
    """The orchestrator's store on a worker: each record is sent to the client and is on its disk on return."""

    channel: Channel
    """To the client."""
    testbed: str
    """The measuring testbed's name, added to every trial's and result's ``extra`` as ``testbed``."""
    earlier: Sequence[RepetitionResult] = ()
    """Results stored at the point before this attempt (a resumed run, or an earlier testbed's)."""
    _results: list[RepetitionResult] = field(default_factory=list, init=False)

    def append_trial(self, record: TrialRecord) -> None:
        """Send one trial; it is durable in the run directory when this returns."""
        marked = dataclasses.replace(record, extra={**record.extra, "testbed": self.testbed})
        self.channel.call("trial", record=marked.to_dict())

    def append_result(self, result: RepetitionResult) -> None:
        """Send one repetition result; it is durable in the run directory when this returns."""
        marked = dataclasses.replace(result, extra={**result.extra, "testbed": self.testbed})
        self.channel.call("result", record=marked.to_dict())
        self._results.append(marked)

    def record_dut_facts(self, point_id: str, facts: Any) -> None:
        """Send the DUT facts of the point."""
        self.channel.call("dut_facts", point=point_id, facts=plain_json(facts))

    def record_tester_facts(self, facts: Mapping[str, Any]) -> None:
        """Send the tester's facts: the client files them under this testbed."""
        self.channel.call("meta", fields={"tester": plain_json(facts)})

    def record_declarations(self, declared: Mapping[str, DutDeclarations]) -> None:
        """Send what the DUT kinds declared for reports."""
        self.channel.call("declarations", declared=encode_declarations(declared))

    def reader(self) -> StreamingStore:
        """Itself: :meth:`results` are what earlier repetitions at the point left."""
        return self

    def results(self) -> list[RepetitionResult]:
        """Results at the point: stored before this attempt, then this attempt's."""
        return [*self.earlier, *self._results]


class _Forward(Observer):
    """Passes the orchestrator's warnings and repetition starts to the client."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel

    def on_repetition_start(self, point: WorkingPoint, metric: str, repetition: int) -> None:
        """The client shows it."""
        self.channel.call("repetition", metric=metric, repetition=repetition)

    def on_warning(self, message: str) -> None:
        """The client shows it."""
        self.channel.call("warning", text=message)


def measure_point(run_key: str, measurement: str, point_id: str, timeout: float, check: float = 10.0) -> dict[str, Any]:
    """The task: measure what is left at ``point_id`` on this worker's testbed; return a summary.

    ``measurement`` is the campaign without its testbed section (the worker adds its own); ``timeout`` how
    long to wait for each answer of the client, ``check`` how often to look whether the task is still wanted
    meanwhile (a client that went away stops the attempt).
    """
    worker = get_worker()
    owned = worker.plugins[PLUGIN]
    assert isinstance(owned, OwnedTestbed)
    channel = Channel(run_key, uuid.uuid4().hex, timeout, check)
    reply = channel.call("begin", point=point_id, testbed=owned.info())
    todo = [(str(m), int(r)) for m, r in reply["todo"]]
    summary = {"point": point_id, "testbed": owned.testbed_name, "attempt": channel.attempt, "repetitions": len(todo)}
    error: BaseException | None = None
    try:
        if todo:
            _measure(owned, channel, measurement, point_id, todo, reply["earlier"])
    except BaseException as exc:
        error = exc
        owned.forget()
        raise
    finally:
        if not isinstance(error, PointStopped):
            try:
                channel.call("end", error=None if error is None else f"{type(error).__name__}: {error}")
            except Exception:
                if error is None:
                    raise
    return summary


def _measure(
    owned: OwnedTestbed,
    channel: Channel,
    measurement: str,
    point_id: str,
    todo: list[tuple[str, int]],
    earlier: list[dict[str, Any]],
) -> None:
    from natbench.run.spec import spec_from_campaign

    campaign, bed = owned.testbed_for(measurement)
    spec = spec_from_campaign(campaign, measurement)
    point = next((p for p in spec.points if p.id == point_id), None)
    if point is None:
        raise NatbenchError(f"testbed {owned.testbed_name}: the campaign has no working point {point_id}")
    store = StreamingStore(channel, owned.testbed_name, [RepetitionResult.from_dict(d) for d in earlier])
    orchestrator = Orchestrator(store, _Forward(channel))
    orchestrator.measure(
        bed.tester,
        bed.dut,
        point,
        spec.plan_for(point),
        todo,
        lambda metric: spec.settings(point, metric),
        options=spec.options,
    )
