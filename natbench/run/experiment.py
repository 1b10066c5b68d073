"""Experiments outside a campaign file: measure one procedure at one working point, store it like a run.

This is the library behind the pytest plugin (:mod:`natbench.pytest_plugin`);
it works the same from a script or a notebook::

    from natbench.run.experiment import Experiment, load_testbed

    with Experiment(load_testbed("docs/examples/lab-testbed.yaml"), "results") as exp:
        m = exp.measure("cps", connections="4k", upper="200k", error="10k", repetitions=3)
        print(m.label, m.median)            # e.g. iptables-4k 61035.0
    # exp.run_dir is a run directory: `natbench report` and `natbench.load` read it

Every measurement is validated as a one-point campaign built from the
testbed, the session traffic and the metric settings given (so a bad value
is the same clear :class:`~natbench.errors.ConfigError` a campaign file
gives), and runs through the same orchestrator as ``natbench run``
(:mod:`natbench.run.orchestrator`). The run
directory has the layout of the developers' guide; only ``campaign.yaml``
differs: it records the session (testbed and one resolved campaign per
measurement) because a pytest session is not a single campaign.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from natbench.errors import ConfigError
from natbench.plugins import Dut, Tester
from natbench.results import RepetitionResult
from natbench.run.format import EXPERIMENT_KIND, RUN
from natbench.run.observers import Fanout, Observer
from natbench.run.orchestrator import Orchestrator
from natbench.run.writer import RunStore, link_latest
from natbench.testbed.file import TestbedFile, load_testbed
from natbench.traffic.plan import Family
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint, si_count

if TYPE_CHECKING:
    from natbench.campaign import Campaign
    from natbench.testbed import Testbed

__all__ = [
    "Experiment",
    "Measurement",
    "SweepPoint",
    "TestbedFile",
    "load_testbed",
]


# ---------------------------------------------------------------------------- sweep points
@dataclass(frozen=True)
class SweepPoint:
    """Where a sweep-marked test measures: DUT cores, port ranges, frame size (None: not set)."""

    cores: int | None = None
    """Active DUT cores (None: leave as the testbed has them)."""
    src_ports: PortRange | None = None
    """Initiator source ports."""
    dst_ports: PortRange | None = None
    """Responder destination ports."""
    frame_size: int | None = None
    """IPv4 frame size in bytes."""

    @property
    def connections(self) -> int | None:
        """``|S| x |D|`` when both ranges are set."""
        if self.src_ports is None or self.dst_ports is None:
            return None
        return len(self.src_ports) * len(self.dst_ports)

    @property
    def id(self) -> str:
        """Readable test id: ``4c-4M``, ``1k``, ``2c-4M-128B``."""
        parts = []
        if self.cores is not None:
            parts.append(f"{self.cores}c")
        if self.connections is not None:
            parts.append(si_count(self.connections))
        if self.frame_size is not None:
            parts.append(f"{self.frame_size}B")
        return "-".join(parts) or "default"


def split_connections(connections: int, dst_ports: int | None = None) -> tuple[PortRange, PortRange]:
    """Port ranges giving ``connections`` = ``|S| x |D|``, more source than destination ports as in the seeds.

    ``dst_ports`` fixes ``|D|``; otherwise ``|D|`` is the largest of 1000, 100, 10, 1 that divides
    the count and is not larger than ``|S|`` (4M -> 4000 x 1000, 16k -> 160 x 100, 1k -> 100 x 10),
    with ``|S| <= 64511``. Source ports start at 1024, destination ports at 1.
    """
    if connections < 1:
        raise ConfigError(f"connections must be at least 1, got {connections}", field="connections")
    choices = [dst_ports] if dst_ports else [d for d in (1000, 100, 10, 1) if d * d <= connections] or [1]
    for d in choices:
        if d and connections % d == 0 and connections // d <= 64511 and d <= 65535:
            s = connections // d
            return PortRange(1024, 1024 + s - 1), PortRange(1, d)
    raise ConfigError(
        f"cannot split {connections} connections into source x destination ports"
        + (f" with {dst_ports} destination ports" if dst_ports else "")
        + "; give ports=[(src, dst), ...] instead",
        field="connections",
    )


def _count(value: Any, what: str) -> int:
    from natbench.values import parse_count

    try:
        return parse_count(value)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{what}: {exc}", field=what) from None


def _ports(value: Any, what: str) -> PortRange:
    from natbench.values import parse_port_range

    if isinstance(value, PortRange):
        return value
    try:
        return parse_port_range(value)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{what}: {exc}", field=what) from None


def sweep_points(
    cores: Sequence[int] | None = None,
    connections: Sequence[int | str] | None = None,
    *,
    ports: Sequence[tuple[Any, Any]] | None = None,
    dst_ports: int | None = None,
    frame_sizes: Sequence[int] | None = None,
) -> list[SweepPoint]:
    """The product cores x connections (or explicit ``ports`` pairs) x frame sizes, cores outermost.

    ``connections`` take ``4000000``, ``"4M"`` or ``"2^22"``; each is split by
    :func:`split_connections`. ``ports`` take ``(src, dst)`` pairs of port
    ranges (``"1-4000"``, ``4000``, ...) instead.
    """
    if connections is not None and ports is not None:
        raise ConfigError("give connections or ports, not both", field="natbench_sweep")
    ranges: list[tuple[PortRange | None, PortRange | None]] = [(None, None)]
    if connections is not None:
        ranges = [split_connections(_count(c, "connections"), dst_ports) for c in connections]
    elif ports is not None:
        ranges = [(_ports(s, "ports"), _ports(d, "ports")) for s, d in ports]
    core_list: list[int | None] = [int(c) for c in cores] if cores is not None else [None]
    sizes: list[int | None] = [int(f) for f in frame_sizes] if frame_sizes is not None else [None]
    out = [SweepPoint(c, s, d, f) for c in core_list for (s, d) in ranges for f in sizes]
    if not out or (cores is not None and not cores) or (connections is not None and not connections):
        raise ConfigError("a sweep needs at least one value per axis", field="natbench_sweep")
    return out


# ---------------------------------------------------------------------------- results
@dataclass(frozen=True)
class Measurement:
    """The outcome of :meth:`Experiment.measure`: the repetitions of one metric at one working point."""

    metric: str
    """Procedure name (cps, throughput, ...)."""
    point: WorkingPoint
    """The working point measured."""
    results: tuple[RepetitionResult, ...]
    """One result per repetition (``value`` None when a repetition could not finish)."""
    run_dir: Path
    """The run directory the trials and results were stored in."""

    @property
    def label(self) -> str:
        """The working point's label, e.g. ``iptables-2c-4k``."""
        return self.point.label

    @property
    def values(self) -> list[float]:
        """Values of the repetitions that finished, in repetition order."""
        return [r.value for r in self.results if r.value is not None and not math.isnan(r.value)]

    @property
    def failed(self) -> list[RepetitionResult]:
        """Repetitions that could not finish (too many invalid trials, ...); see their ``extra``."""
        return [r for r in self.results if r.value is None]

    @property
    def unit(self) -> str:
        """Unit of the values (per direction for rates, as stored)."""
        return self.results[0].unit if self.results else ""

    def _need(self) -> list[float]:
        if not self.values:
            reasons = "; ".join(str(r.extra.get("failed") or r.extra.get("error") or "no value") for r in self.results)
            raise ValueError(f"{self.metric} at {self.label}: no repetition finished ({reasons})")
        return self.values

    @property
    def median(self) -> float:
        """Median of the finished repetitions (ValueError when none finished)."""
        return float(statistics.median(self._need()))

    @property
    def min(self) -> float:
        """Smallest value."""
        return float(min(self._need()))

    @property
    def max(self) -> float:
        """Largest value."""
        return float(max(self._need()))

    def __repr__(self) -> str:
        vals = ", ".join(f"{v:.6g}" for v in self.values)
        return f"Measurement({self.metric!r}, {self.label!r}, [{vals}] {self.unit})"


# ---------------------------------------------------------------------------- the experiment
_TRAFFIC_KEYS = ("src_ports", "dst_ports", "frame_sizes")


class Experiment:
    """A testbed, built once, and one run directory that collects every measurement made with it.

    ``tester`` / ``dut`` may be given (already built objects, e.g. the fakes of
    :mod:`natbench.testing` in unit tests); otherwise both are built on first use
    by :func:`natbench.testbed.build_testbed` (which brings the local lab up for
    ``access: {kind: lab}`` DUTs). A lab this experiment brought up is removed
    again by :meth:`close`. Measurements run through the same
    :class:`~natbench.run.orchestrator.Orchestrator` as ``natbench run``; the DUT stays set
    up between measurements at the same working point and is torn down by :meth:`close`.
    ``observers`` receive its events (repetitions, stored trials and results, warnings).
    """

    def __init__(
        self,
        testbed: TestbedFile,
        results: str | os.PathLike[str] = "results",
        *,
        name: str = "pytest",
        run_dir: str | os.PathLike[str] | None = None,
        tester: Tester | None = None,
        dut: Dut | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        observers: Sequence[Observer] = (),
    ) -> None:
        if testbed.missing_env:
            raise ConfigError(
                f"environment variable(s) {', '.join(testbed.missing_env)} not set",
                file=str(testbed.file) if testbed.file else None,
            )
        self.testbed = testbed
        """The testbed (and defaults) measurements use."""
        self.name = name
        """Run name (run.json campaign_name, run directory prefix)."""
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        self.run_dir = Path(run_dir) if run_dir else Path(results) / f"{name}-{stamp}-{os.getpid()}"
        """The run directory (created at the first measurement)."""
        self.sleep = sleep
        """Gap between the phases."""
        self.clock = clock
        """Trial timestamps."""
        self.observers = list(observers)
        """Told about every repetition, stored trial and result, and warnings (no run or point events)."""
        self._tester = tester
        self._dut = dut
        self._bed: Testbed | None = None
        self._own_lab = False  # the testbed brought up a lab of this experiment's own (nbpt<pid>)
        self._session_campaign: Campaign | None = None
        self._store: RunStore | None = None
        self._orchestrator: Orchestrator | None = None  # with the store: measures, keeps the DUT set up
        self._points: dict[str, WorkingPoint] = {}
        self._entries: list[dict[str, Any]] = []
        self.measurements: list[Measurement] = []
        """Everything measured so far."""

    # ------------------------------------------------------------------ testbed objects
    def _campaign_dict(
        self, metrics: Mapping[str, Any], traffic: Mapping[str, Any], sweep: Mapping[str, Any]
    ) -> dict[str, Any]:
        return {
            "schema_version": 1,
            "name": self.name,
            "testbed": json.loads(json.dumps(self.testbed.testbed)),
            "traffic": dict(traffic),
            "sweep": dict(sweep),
            "metrics": dict(metrics),
        }

    def session_campaign(self) -> Campaign:
        """The campaign the tester and DUT are built from: the testbed plus the session's traffic."""
        if self._session_campaign is None:
            traffic = self._base_traffic()
            # the session campaign only builds the testbed: a one-connection placeholder point
            traffic.setdefault("src_ports", self.testbed.traffic.get("src_ports") or "1024-1024")
            traffic.setdefault("dst_ports", self.testbed.traffic.get("dst_ports") or "1-1")
            # placeholder: nothing is measured with it (a family without translation admits only stateless metrics)
            if Family(self.testbed.family).translates:
                metrics = {"validation": {"rate": 1.0, "repetitions": 1}}
            else:
                metrics = {"forwarding": {"upper": 2.0, "error": 1.0, "repetitions": 1}}
            self._session_campaign = _campaign(self._campaign_dict(metrics, traffic, {}), file=self.testbed.file)
        return self._session_campaign

    def _base_traffic(self) -> dict[str, Any]:
        traffic = {k: v for k, v in self.testbed.traffic.items() if k not in _TRAFFIC_KEYS}
        traffic["family"] = self.testbed.family
        return traffic

    def _testbed(self) -> Testbed:
        """The testbed of the session campaign, built once (the lab it needs, the tester, the DUT)."""
        if self._bed is None:
            from natbench.testbed import build_testbed

            own = f"nbpt{os.getpid()}"  # a lab brought up for the session: unique on this machine, removed by close()
            self._bed = build_testbed(self.session_campaign(), lab_name=own)
            self._own_lab = self._bed.lab is not None and self._bed.lab.name == own
            # the lab fills in recipe parameters (interfaces, addresses): keep them for every measurement
            self.testbed.testbed["duts"] = [d.model_dump(mode="json", exclude_none=True) for d in self._bed.duts]
        return self._bed

    @property
    def tester(self) -> Tester:
        """The traffic generator (built with the testbed on first use)."""
        if self._tester is None:
            self._tester = self._testbed().tester
        return self._tester

    @property
    def dut(self) -> Dut:
        """The device(s) under test (built with the testbed on first use)."""
        if self._dut is None:
            self._dut = self._testbed().dut
        return self._dut

    # ------------------------------------------------------------------ measuring
    def build_campaign(
        self,
        metric: str,
        *,
        cores: int | None = None,
        connections: int | str | None = None,
        src_ports: Any = None,
        dst_ports: Any = None,
        frame_size: int | None = None,
        traffic: Mapping[str, Any] | None = None,
        dut_params: Mapping[str, Mapping[str, Any]] | None = None,
        **settings: Any,
    ) -> Campaign:
        """The one-point campaign of a measurement (validated; ConfigError names the bad field)."""
        from natbench.metrics import metric as registered

        registered(metric)  # ConfigError naming the known metrics
        if connections is not None:
            if src_ports is not None:
                raise ConfigError("give connections or src_ports/dst_ports, not both", field="connections")
            n = _count(connections, "connections")
            d = len(_ports(dst_ports, "dst_ports")) if dst_ports is not None else None
            s_range, d_range = split_connections(n, d)
            src_ports, dst_ports = str(s_range), str(d_range)
        t = self._base_traffic()
        for key in ("src_ports", "dst_ports"):
            if self.testbed.traffic.get(key) is not None:
                t[key] = self.testbed.traffic[key]
        if self.testbed.traffic.get("frame_sizes"):
            t["frame_sizes"] = self.testbed.traffic["frame_sizes"][:1]
        t.update(dict(traffic or {}))
        if t.get("family") != self.testbed.family:
            raise ConfigError(
                f"this testbed's traffic family is {self.testbed.family}; a measurement cannot change it",
                field="traffic.family",
            )
        if src_ports is not None:
            t["src_ports"] = str(_ports(src_ports, "src_ports"))
        if dst_ports is not None:
            t["dst_ports"] = str(_ports(dst_ports, "dst_ports"))
        if frame_size is not None:
            t["frame_sizes"] = [int(frame_size)]
        if t.get("src_ports") is None or t.get("dst_ports") is None:
            raise ConfigError(
                "no port ranges: give connections=..., src_ports=/dst_ports=, or mark the test with natbench_sweep",
                field="traffic.src_ports",
            )
        sweep: dict[str, Any] = {"product": {}}
        if cores is not None:
            sweep["product"]["cores"] = [int(cores)]
        for dut, params in (dut_params or {}).items():
            for key, value in params.items():
                sweep["product"][f"duts.{dut}.{key}"] = [value]
        base = dict(self.testbed.metrics.get(metric, {}))
        base.update(settings)
        return _campaign(self._campaign_dict({metric: base}, t, sweep))

    def measure(
        self,
        metric: str,
        *,
        test: str | None = None,
        tester: Tester | None = None,
        dut: Dut | None = None,
        **kwargs: Any,
    ) -> Measurement:
        """Run every repetition of ``metric`` at one working point and store each trial and result.

        Keyword arguments: ``cores``, ``connections`` (or ``src_ports`` /
        ``dst_ports``), ``frame_size``, ``traffic`` (overrides of the traffic
        section), ``dut_params`` (``{dut: {param: value}}``), and the metric's
        settings (``repetitions``, ``upper``, ``error``, ``duration``, ...; names
        as in a campaign's ``metrics.<metric>`` section). ``test`` names the
        caller in the run's record. Repetitions continue the numbering of
        earlier measurements of the same metric at the same point, so a report
        aggregates them together.
        """
        from natbench.run.spec import spec_from_campaign

        campaign = self.build_campaign(metric, **kwargs)
        [raw_point] = campaign.points()
        spec = spec_from_campaign(campaign, "")
        tester = tester if tester is not None else self.tester
        dut = dut if dut is not None else self.dut
        point = self._register(raw_point, campaign, metric, test)
        orchestrator = self._open(tester)
        settings = spec.settings(raw_point, metric)
        first = len(orchestrator.earlier(point, metric))
        results = orchestrator.measure(
            tester,
            dut,
            point,
            campaign.traffic_plan(raw_point),
            [(metric, rep) for rep in range(first, first + settings.repetitions)],
            lambda _metric: settings,
            options=spec.options,
            keep_set_up=True,  # the next measurement at this point reuses the set-up DUT
        )
        m = Measurement(metric, point, tuple(results), self.run_dir)
        self.measurements.append(m)
        return m

    def _register(self, raw: WorkingPoint, campaign: Campaign, metric: str, test: str | None) -> WorkingPoint:
        point = self._points.get(raw.id)
        if point is None:
            point = replace(raw, index=len(self._points))
            self._points[point.id] = point
        self._entries.append(
            {"test": test, "metric": metric, "point": point.id, "label": point.label, "campaign": campaign.to_dict()}
        )
        if self._store is not None:
            self._store.rewrite_session(self._session_text(), self._points.values())
        return point

    def _open(self, tester: Tester) -> Orchestrator:
        """The orchestrator measuring into this experiment's run directory, created with it at the first use."""
        if self._orchestrator is None:
            self._store = RunStore.create(
                self.run_dir,
                campaign_text=self._session_text(),
                points=list(self._points.values()),
                campaign_file=str(self.testbed.file) if self.testbed.file else None,
                campaign_name=self.name,
                tester_facts=tester.facts(),
            )
            link_latest(self.run_dir)
            self._orchestrator = Orchestrator(self._store, Fanout(self.observers), self.clock, self.sleep)
        return self._orchestrator

    def _session_text(self) -> str:
        doc = {
            "kind": EXPERIMENT_KIND,
            "name": self.name,
            "testbed_file": str(self.testbed.file) if self.testbed.file else None,
            "testbed": self.testbed.testbed,
            "measurements": self._entries,
        }
        head = (
            "# A natbench experiment session (pytest plugin or natbench.run.experiment), not a campaign file:\n"
            "# each entry of 'measurements' holds the resolved one-point campaign that was measured.\n"
        )
        return head + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)

    # ------------------------------------------------------------------ closing
    def close(self, status: str = "complete", **meta: Any) -> None:
        """Tear the DUT down, close the tester, finish run.json and remove a lab this experiment built."""
        errors: list[BaseException] = []
        if self._orchestrator is not None:
            try:
                self._orchestrator.tear_down()
            except Exception as exc:
                errors.append(exc)
        bed, self._bed = self._bed, None
        if self._tester is not None and (bed is None or self._tester is not bed.tester):
            try:
                self._tester.close()
            except Exception as exc:
                errors.append(exc)
        if bed is not None:
            try:
                bed.close()  # its tester, and the lab it brought up unless the settings keep it
            except Exception as exc:
                errors.append(exc)
        if self._store is not None:
            if meta:
                self._store.add_other(meta)
            self._store.set_status(status, failure=str(errors[0]) if errors and status == "failed" else None)
            self._store.close()
            self._store = None
            self._orchestrator = None
        if bed is not None and bed.lab is not None and bed.lab_created and self._own_lab:
            with contextlib.suppress(Exception):  # a lab of this experiment's own goes, keep_lab or not
                bed.lab.release()
        if errors:
            raise errors[0]

    def __enter__(self) -> Experiment:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close("failed" if exc is not None else "complete")

    @property
    def stored(self) -> bool:
        """True once a measurement was stored (the run directory exists)."""
        return self._store is not None or (self.run_dir / RUN).exists()

    def points(self) -> Iterable[WorkingPoint]:
        """The working points measured so far, in order."""
        return list(self._points.values())


def _campaign(data: dict[str, Any], file: Path | None = None) -> Campaign:
    """Validate a campaign built in code; a schema error names the field (there is no line to name)."""
    from pydantic import ValidationError

    from natbench.campaign import Campaign
    from natbench.campaign.schema import CampaignSpec
    from natbench.config.validation import validation_error

    try:
        CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, model=CampaignSpec) from None
    return Campaign.from_dict(data, file=file)
