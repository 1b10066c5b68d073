"""The client side of a distributed run: one campaign measured on several testbeds of one class, one run directory.

Each working point with repetitions left is one Dask task (:func:`natbench.run.remote.measure_point`) that
needs one unit of the ``testbed-class:<class>`` resource, the class the campaign's ``testbed.class`` names;
``natbench worker`` processes offer one unit each, so a testbed measures one point at a time. The tasks are
submitted in the campaign's point order (Dask runs earlier submissions first).

Only this client writes the run directory, with the same :class:`~natbench.run.writer.RunStore` as a local
run. Workers send every trial, result and fact through a Dask queue; :class:`DistributedRun` stores it
(fsync), then answers, and the worker waits for that answer before its next trial: a trial is on the
client's disk before the next trial starts, as in a local run. What a worker sends while the client is
down (killed) is never answered: that worker stops its point after ``timeout`` seconds.

Faults:

* a worker (or its testbed) lost in the middle of a point: Dask runs the task again on another worker of
  the class (a task that raised is submitted again by the client, up to ``attempts`` times in all). When the
  new attempt begins, the trials of the lost attempt's unfinished repetitions are moved to
  ``trials.abandoned.jsonl`` (:meth:`RunStore.abandon <natbench.run.writer.RunStore.abandon>`) and only the
  repetitions without a stored result are measured again; whatever the lost worker still sends is refused;
* the client killed: ``natbench run --resume RUN_DIR --scheduler ADDR`` resumes the store (cut-off
  repetitions' trials moved aside, as for a local resume) and submits only the points with repetitions left;
* no scheduler: :class:`SchedulerUnreachable`, one line, exit 2.

Results of different classes never mix: a run has one class, and a worker of another class is refused.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any

import yaml
from distributed import Client, Future, Queue

from natbench.errors import ConfigError, NatbenchError
from natbench.results import RepetitionResult, TrialRecord
from natbench.run.format import FieldError, RepKey, TesterFacts, decode_record, json_safe, plain_json
from natbench.run.format.declarations import decode_declarations
from natbench.run.observers import Fanout, Observer
from natbench.run.reader import RunDirectory
from natbench.run.remote import class_resource, measure_point, reply_queue
from natbench.run.repair import resume_store
from natbench.run.spec import RunSpec
from natbench.run.writer import RunStore
from natbench.workingpoint import WorkingPoint


class SchedulerUnreachable(NatbenchError):
    """No Dask scheduler answered at the given address."""

    exit_code = 2


def connect(address: str, *, timeout: float = 10.0, security: Any = None) -> Client:
    """A Dask client of the scheduler at ``address``; :class:`SchedulerUnreachable` (one line) when none answers.

    ``security``: a :class:`distributed.security.Security` (TLS); None takes Dask's configuration
    (``distributed.comm.tls.*``, e.g. from ``~/.config/dask/distributed.yaml``).
    """
    kwargs: dict[str, Any] = {"timeout": timeout, "set_as_default": False}
    if security is not None:
        kwargs["security"] = security
    try:
        return Client(address, **kwargs)
    except (OSError, TimeoutError, ValueError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SchedulerUnreachable(f"no Dask scheduler reachable at {address} within {timeout:g} s ({why})") from None


def measurement_text(campaign_text: str) -> str:
    """The campaign without its testbed section: what is sent to the workers (each has its own testbed)."""
    data = yaml.safe_load(campaign_text)
    data.pop("testbed", None)
    return str(yaml.safe_dump(data, sort_keys=False))


@dataclass
class _Attempt:
    """One worker's attempt at a point."""

    point: WorkingPoint
    testbed: dict[str, Any]
    ended: bool = False


class _Inbox:
    """The run's queue read by a thread of its own (blocking gets: a message is handled as soon as it comes, and
    no get times out at the scheduler); closing it puts a token of its own in the queue to end that thread."""

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self.token = uuid.uuid4().hex
        self.local: SimpleQueue[dict[str, Any] | BaseException] = SimpleQueue()
        self.thread = threading.Thread(target=self._read, name="natbench-inbox", daemon=True)

    def __enter__(self) -> _Inbox:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.queue.put({"op": "close", "attempt": self.token})
            self.thread.join(timeout=10)

    def _read(self) -> None:
        while True:
            try:
                message = dict(self.queue.get())
            except BaseException as exc:  # the client closed: say so to the run, once
                self.local.put(exc)
                return
            if message.get("attempt") == self.token:
                return
            self.local.put(message)

    def next(self, wait: float) -> dict[str, Any] | None:
        """The next message, or None after ``wait`` seconds."""
        try:
            item = self.local.get(timeout=wait)
        except Empty:
            return None
        if isinstance(item, BaseException):
            raise NatbenchError(f"lost the Dask scheduler: {type(item).__name__}: {item}")
        return item


@dataclass
class DistributedRun:
    """Measures the repetitions left in ``store`` of ``spec`` on the workers of ``testbed_class``."""

    spec: RunSpec
    """What to measure."""
    store: RunStore
    """The run directory (new or resumed), written by this client only."""
    client: Client
    """Connected to the scheduler."""
    testbed_class: str
    """The class of testbed every point needs."""
    observers: Sequence[Observer] = ()
    """Progress display, logging; ``on_step`` / ``on_result`` are called after the record is stored."""
    timeout: float = 600.0
    """How long a worker waits for this client's answer, and this client for a point's first message."""
    attempts: int = 3
    """Submissions of a point whose task raised, in all, before the run fails."""
    check: float = 10.0
    """How often a waiting worker looks whether its task is still wanted (a killed client's attempts stop)."""
    poll: float = 0.2
    """Seconds between looks at the tasks while no message comes."""
    run_key: str = ""
    """Names the run's queues: by default ``natbench-<run_id>`` from run.json (kept across resumes, so that a
    resumed client hears, and stops, the attempts a killed one left running)."""
    _obs: Observer = field(init=False)
    _attempts: dict[str, _Attempt] = field(default_factory=dict, init=False)
    _current: dict[str, str] = field(default_factory=dict, init=False)
    _results: dict[str, list[RepetitionResult]] = field(default_factory=dict, init=False)
    _replies: dict[str, Queue] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._obs = Fanout(self.observers)
        if not self.run_key:
            run_id = self.store.meta.run_id
            if not run_id:
                run_id = uuid.uuid4().hex
                self.store.update(run_id=run_id)
            self.run_key = f"natbench-{run_id}"

    # ------------------------------------------------------------------ the run
    def run(self) -> str:
        """Measure every repetition left; return the final status (``complete``)."""
        metrics = self.spec.ordered_metrics()
        planned = [
            (p.id, m, r) for p in self.spec.points for m in metrics for r in range(self.spec.settings(p, m).repetitions)
        ]
        for r in self.store.reader().results():
            self._results.setdefault(r.point_id, []).append(r)
        error: BaseException | None = None
        status = "failed"
        futures: dict[str, Future] = {}
        try:
            self._check_workers()
            self.store.update(testbed_class=self.testbed_class)
            self._obs.on_run_start(self.store.path, self.spec, len(self.store.reader().completed()))
            inbox = _Inbox(Queue(self.run_key, client=self.client))
            measurement = measurement_text(self.spec.campaign_text)
            tries: dict[str, int] = {}
            for point in self.spec.points:
                if self._todo(point, metrics):
                    futures[point.id] = self._submit(point, measurement)
                    tries[point.id] = 1
            with inbox:
                while futures:
                    message = inbox.next(self.poll)
                    if message is not None:
                        self._handle(message, metrics)
                    for pid, fut in list(futures.items()):
                        if fut.done():
                            futures.pop(pid)
                            self._finished(pid, fut, metrics, futures, tries, measurement)
            self.store.verify(planned)
            status = "complete"
            self.store.set_status("complete")
        except BaseException as exc:
            error = exc
            for fut in futures.values():
                with contextlib.suppress(Exception):
                    fut.cancel()
            self.store.mark_failed(exc)
            raise
        finally:
            self._obs.on_run_end(status, error)
        return status

    def _check_workers(self) -> None:
        """NatbenchError (one line) when no worker offers the class (a run would wait for ever)."""
        wanted = class_resource(self.testbed_class)
        workers = self.client.scheduler_info().get("workers", {})
        if not any(wanted in (w.get("resources") or {}) for w in workers.values()):
            offered = sorted({k for w in workers.values() for k in (w.get("resources") or {}) if "class:" in k})
            raise NatbenchError(
                f"no worker of the scheduler offers testbed class {self.testbed_class!r}"
                f" ({len(workers)} worker(s); classes offered: {', '.join(offered) or 'none'}):"
                " start one with `natbench worker SCHEDULER --testbed FILE`"
            )

    def _submit(self, point: WorkingPoint, measurement: str) -> Future:
        return self.client.submit(
            measure_point,
            self.run_key,
            measurement,
            point.id,
            self.timeout,
            self.check,
            key=f"natbench-point-{point.id}-{uuid.uuid4().hex[:8]}",
            resources={class_resource(self.testbed_class): 1},
            pure=False,
        )

    def _todo(self, point: WorkingPoint, metrics: list[str]) -> list[tuple[str, int]]:
        return [
            (m, r)
            for m in metrics
            for r in range(self.spec.settings(point, m).repetitions)
            if not self.store.is_complete(point.id, m, r)
        ]

    def _finished(
        self,
        pid: str,
        fut: Future,
        metrics: list[str],
        futures: dict[str, Future],
        tries: dict[str, int],
        measurement: str,
    ) -> None:
        """A point's task ended: done, or (it raised) abandoned and submitted again while attempts are left."""
        point = next(p for p in self.spec.points if p.id == pid)
        exc = fut.exception() if fut.status == "error" else None
        if fut.status == "cancelled":
            exc = NatbenchError("its task was cancelled")
        if exc is None and not self._todo(point, metrics):
            return
        self._abandon(pid, f"its task failed ({type(exc).__name__}: {exc})" if exc else "its task ended early")
        if tries[pid] >= self.attempts:
            raise NatbenchError(f"point {point.label}: {tries[pid]} attempt(s) failed, the last: {exc}")
        tries[pid] += 1
        self._obs.on_warning(f"point {point.label}: submitted again (attempt {tries[pid]} of {self.attempts})")
        futures[pid] = self._submit(point, measurement)

    # ------------------------------------------------------------------ messages
    def _handle(self, msg: dict[str, Any], metrics: list[str]) -> None:
        attempt = str(msg.get("attempt"))
        op = msg.get("op")
        if op == "close":  # an earlier session's inbox token: nobody waits for an answer
            return
        if op == "begin":
            self._reply(attempt, self._begin(attempt, str(msg["point"]), dict(msg["testbed"]), metrics))
            return
        current = self._attempts.get(attempt)
        if current is None or self._current.get(current.point.id) != attempt or current.ended:
            self._reply(attempt, {"ok": False, "why": "another testbed measures this point now"})
            return
        point = current.point
        if op in ("trial", "result"):
            record = dict(msg["record"])
            if record.get("point_id") != point.id:
                self._reply(attempt, {"ok": False, "why": f"a record of {record.get('point_id')} in {point.id}"})
                return
            # a worker's record is checked as a stored line is (NaN as null, as the line will hold it)
            decoded = decode_record(json_safe({**record, "type": op}))
            if isinstance(decoded, TrialRecord):
                self.store.append_trial(decoded)
                self._obs.on_step(decoded)
            else:
                result = decoded
                self.store.append_result(result)
                self._results.setdefault(point.id, []).append(result)
                self._obs.on_result(result)
        elif op == "dut_facts":
            self.store.record_dut_facts(point.id, msg["facts"])
        elif op == "declarations":
            try:
                declared = decode_declarations(plain_json(msg["declared"]))  # the transport turns lists to tuples
            except FieldError as exc:
                self._reply(attempt, {"ok": False, "why": f"declarations: {exc}"})
                return
            self.store.record_declarations(declared)
        elif op == "meta":
            self._testbed_meta(current.testbed, dict(msg["fields"]))
        elif op == "repetition":
            self._obs.on_repetition_start(point, str(msg["metric"]), int(msg["repetition"]))
        elif op == "warning":
            self._obs.on_warning(f"testbed {current.testbed['name']}: {msg['text']}")
        elif op == "end":
            current.ended = True
            error = msg.get("error")
            self._obs.on_point_end(point, NatbenchError(str(error)) if error else None)
        self._reply(attempt, {"ok": True})

    def _begin(self, attempt: str, pid: str, testbed: dict[str, Any], metrics: list[str]) -> dict[str, Any]:
        """A worker starts on a point: refuse another class; take over from a lost attempt; say what is left."""
        index = next((i for i, p in enumerate(self.spec.points) if p.id == pid), None)
        if index is None:
            return {"ok": False, "why": f"no working point {pid} in this run"}
        if testbed.get("class") != self.testbed_class:
            return {"ok": False, "why": f"testbed class {testbed.get('class')!r}, the run needs {self.testbed_class!r}"}
        point = self.spec.points[index]
        self._abandon(pid, f"testbed {testbed.get('name')} took it over")
        self._attempts[attempt] = _Attempt(point, testbed)
        self._current[pid] = attempt
        self._record_testbed(pid, testbed)
        todo = self._todo(point, metrics)
        self._obs.on_point_start(point, index, len(self.spec.points), len(todo))
        earlier = [r.to_dict() for r in self._results.get(pid, [])]
        return {"ok": True, "todo": [list(t) for t in todo], "earlier": earlier}

    def _abandon(self, pid: str, why: str) -> None:
        """End the point's current attempt, if any: its unfinished repetitions' trials go aside."""
        attempt = self._current.pop(pid, None)
        if attempt is None:
            return
        lost = self._attempts[attempt]
        lost.ended = True
        keys: list[RepKey] = [(pid, m, r) for m, r in self._todo(lost.point, self.spec.ordered_metrics())]
        moved = self.store.abandon(keys)
        self._obs.on_warning(
            f"point {lost.point.label}: the attempt on testbed {lost.testbed.get('name')} was given up ({why});"
            f" {moved} trial(s) of its unfinished repetitions kept in trials.abandoned.jsonl"
        )

    def _record_testbed(self, pid: str, testbed: dict[str, Any]) -> None:
        """run.json: which testbed measured which point (``point_testbeds``), and each testbed (``testbeds``)."""
        names = self.store.meta.point_testbeds.get(pid, ())
        if testbed["name"] not in names:
            names = (*names, testbed["name"])
        by_point = {**self.store.meta.point_testbeds, pid: names}
        testbeds = dict(self.store.meta.testbeds)
        testbeds[testbed["name"]] = {**testbeds.get(testbed["name"], {}), **testbed}
        self.store.update(point_testbeds=by_point, testbeds=testbeds)

    def _testbed_meta(self, testbed: dict[str, Any], fields: dict[str, Any]) -> None:
        if isinstance(fields.get("tester"), dict):  # the worker's tester facts, under the one key set (``kind``)
            fields = {**fields, "tester": TesterFacts.from_dict(fields["tester"]).to_dict()}
        testbeds = dict(self.store.meta.testbeds)
        testbeds[testbed["name"]] = {**testbeds.get(testbed["name"], {}), **fields}
        self.store.update(testbeds=testbeds)

    def _reply(self, attempt: str, body: dict[str, Any]) -> None:
        """Answer one attempt (on its own queue)."""
        queue = self._replies.get(attempt)
        if queue is None:
            queue = self._replies[attempt] = Queue(reply_queue(self.run_key, attempt), client=self.client)
        queue.put(body)


# ---------------------------------------------------------------------------- library API
def _class_of(spec_campaign: Any, where: str) -> str:
    klass = spec_campaign.testbed.testbed_class
    if not klass:
        raise ConfigError(
            "a distributed run needs the class of testbed to measure on: set testbed.class (the class the"
            " workers' testbed files declare)",
            file=where,
            field="testbed.class",
        )
    return str(klass)


def run_distributed(
    path: str | Path,
    scheduler: str | Client,
    run_dir: str | Path | None = None,
    *,
    observers: Sequence[Observer] = (),
    timeout: float = 600.0,
    attempts: int = 3,
    connect_timeout: float = 10.0,
    check: float = 10.0,
) -> RunDirectory:
    """Load the campaign file and measure it on the scheduler's workers of its testbed class; return the run.

    ``scheduler`` is an address (``tcp://127.0.0.1:8786``, ``tls://...``) or a connected client; ``timeout``,
    ``attempts`` and ``check``: see :class:`DistributedRun`.
    """
    from natbench.campaign import load_campaign
    from natbench.run.runner import default_run_dir
    from natbench.run.spec import spec_from_campaign

    path = Path(path)
    campaign = load_campaign(path)
    klass = _class_of(campaign, str(path))
    spec = spec_from_campaign(campaign, campaign.to_yaml(), str(path))
    target = Path(run_dir) if run_dir else default_run_dir(campaign)
    with _client(scheduler, connect_timeout) as client:
        _check_scheduler(client)
        store = RunStore.create(
            target,
            campaign_text=spec.campaign_text,
            points=spec.points,
            campaign_file=spec.campaign_file,
            campaign_name=spec.name,
            tester_facts=TesterFacts("distributed", {"note": "per testbed: run.json testbeds.<name>.tester"}),
        )
        return _run_into(store, spec, client, klass, observers, timeout, attempts, check)


def resume_distributed(
    run_dir: str | Path,
    scheduler: str | Client,
    *,
    observers: Sequence[Observer] = (),
    timeout: float = 600.0,
    attempts: int = 3,
    repair: bool = False,
    connect_timeout: float = 10.0,
    check: float = 10.0,
) -> RunDirectory:
    """Resume the run in ``run_dir`` on the scheduler's workers: only the repetitions without a result."""
    from natbench.campaign import load_campaign
    from natbench.run.format import CAMPAIGN
    from natbench.run.spec import spec_from_campaign

    existing = RunDirectory.open(run_dir)
    existing.check_resumable()
    existing.check_resume(repair)
    campaign = load_campaign(existing.path / CAMPAIGN)
    klass = _class_of(campaign, str(existing.path / CAMPAIGN))
    spec = spec_from_campaign(campaign, existing.campaign_text, existing.meta.campaign_file)
    with _client(scheduler, connect_timeout) as client:
        _check_scheduler(client)
        store = resume_store(run_dir, repair=repair)
        return _run_into(store, spec, client, klass, observers, timeout, attempts, check)


@contextlib.contextmanager
def _client(scheduler: str | Client, timeout: float) -> Any:
    if isinstance(scheduler, Client):
        yield scheduler
        return
    client = connect(scheduler, timeout=timeout)
    try:
        yield client
    finally:
        client.close()


def _check_scheduler(client: Client) -> None:
    try:
        client.scheduler_info()
    except (OSError, TimeoutError) as exc:
        raise SchedulerUnreachable(f"the Dask scheduler does not answer: {exc}") from None


def _run_into(
    store: RunStore,
    spec: RunSpec,
    client: Client,
    klass: str,
    observers: Sequence[Observer],
    timeout: float,
    attempts: int,
    check: float,
) -> RunDirectory:
    try:
        DistributedRun(spec, store, client, klass, observers, timeout, attempts, check=check).run()
    finally:
        store.close()
    return RunDirectory.open(store.path)
