"""The DUT models of :mod:`natbench.testing.dutmodels` behind natbench's tester and DUT protocols, on a simulated
clock: :class:`ModelledTester` and :class:`ModelledDut` run every trial natbench's procedures ask for by arithmetic,
taking the trial's simulated time, so that the real searches, verdicts, stops and tail rates
(``natbench.metrics.registry.run_repetition``) can be measured over thousands of repetitions in seconds.

* **Phase 2**: every trial draws its ceiling (jitter, drift, warm-up) and its random parts; the counts are the
  model's at the trial's end, after the receive wait delivered the DUT's queue; a stop the engine asks for
  (``Phase2Options.stop``) is decided by the real :class:`~natbench.testers.losswatch.LossWatch` over the counts a
  sampling tester would read (:func:`~natbench.testing.dutmodels.watch_stop`); tail rates are the valid count's
  slope over the sending's second half, as the software tester fits it; frames the tester's receive side missed are
  reported as its :class:`~natbench.results.Deviation`.
* **Phase 1 and validation** (fills, cps, capacity): all frames arrive (the establishment rate is out of reach), but
  a connection lives as the :class:`~natbench.testing.dutmodels.TableModel` says: each one expires ``timeout``
  seconds after its own phase-1 frame, so a count or a reverse frame that comes later misses it.
* **Time**: a trial takes its duration plus the receive wait; each DUT command (empty, count)
  :attr:`ModelledDut.command_seconds`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import random
from dataclasses import dataclass, field
from typing import Any

from natbench.plugins import Directions, Phase2Options
from natbench.results import Deviation, Direction, DirectionCounts, PhaseResult
from natbench.testing.dutmodels import Behaviour, Drift, TableModel, TesterFlaws, watch_stop
from natbench.testing.fakes import FakeDut, FakeModel, FakeTester
from natbench.workingpoint import WorkingPoint

OUT_OF_REACH = 1e15
"""The fake's own ceilings and the tester's top rate, set where no trial reaches them: the models decide."""


class SimClock:
    """The simulated clock: the procedures read it, the models and ``sleep`` advance it."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        self.now += max(seconds, 0.0)


@dataclass
class ModelledDut(FakeDut):
    """A :class:`~natbench.testing.fakes.FakeDut` whose commands take simulated time and whose connections expire one
    by one as its :class:`~natbench.testing.dutmodels.TableModel` says."""

    sim: SimClock = field(default_factory=SimClock)
    """The simulated clock."""
    table: TableModel = field(default_factory=TableModel)
    """The connection table's size and timeout."""
    command_seconds: float = 0.412
    """Seconds one DUT command takes (bench/dut_step_roundtrips.py: an SSH step)."""
    setup_at: float = 0.0
    """Clock reading of the latest setup (the warm-up counts from there)."""
    born: tuple[float, float, int] | None = None
    """(start, rate, frames) of the phase 1 that created the connections in the table: connection ``i`` was created
    at ``start + i / rate``."""

    def setup(self, point: WorkingPoint) -> None:
        """Set up as the fake does; the warm-up starts now."""
        super().setup(point)
        self.setup_at = self.sim.now
        self.born = None

    def reset_connections(self) -> None:
        """Empty the table: one command plus the flush of its connections."""
        self.sim.advance(self.command_seconds + self.model.flush_per_connection * self.connections)
        super().reset_connections()
        self.born = None

    def count_connections(self) -> int:
        """Count the table: one command."""
        self.sim.advance(self.command_seconds)
        return super().count_connections()

    def alive(self, at: float) -> int:
        """Connections of the last phase 1 still in the table at clock reading ``at``."""
        timeout = self.table.timeout
        if self.born is None or timeout is None:
            return self.connections
        start, rate, n = self.born
        expired = min(max(math.ceil((at - start - timeout) * rate), 0), n)
        return min(self.connections, n - expired)

    def expire(self) -> None:
        """Drop the connections whose own timeout has passed (each one ``timeout`` after its phase-1 frame)."""
        self.connections = self.alive(self.sim.now)

    def supports(self, operation: str) -> bool:
        """No mapping listing (responder mode compute is taken as configured)."""
        return operation != "mappings" and super().supports(operation)

    def facts(self) -> dict[str, Any]:
        """The fake's facts, its timeout only when the table reports it."""
        out = super().facts()
        out.pop("udp_timeout", None)
        if self.table.timeout is not None and self.table.reports_timeout:
            out["udp_timeout"] = self.table.timeout
        if self.table.limit is None:
            out.pop("table_limit", None)
        return out


@dataclass
class ModelledTester(FakeTester):
    """A :class:`~natbench.testing.fakes.FakeTester` whose phase-2 trials follow a
    :class:`~natbench.testing.dutmodels.Behaviour` and whose trials take simulated time (module docstring)."""

    behaviour: Behaviour = field(default_factory=Behaviour)
    """How the modelled DUT forwards."""
    flaws: TesterFlaws = field(default_factory=TesterFlaws)
    """What the modelled tester gets wrong."""
    rng: random.Random = field(default_factory=random.Random)
    """The models' randomness (seed it for a repeatable run)."""
    sim: SimClock = field(default_factory=SimClock)
    """The simulated clock."""
    drift: Drift = field(default_factory=lambda: Drift(0.0, 1.0))
    """The ceiling's drift (:attr:`Behaviour.drift` builds it in :func:`modelled_pair`)."""

    def _dut(self) -> ModelledDut:
        if not isinstance(self.dut, ModelledDut):
            raise TypeError("a ModelledTester needs a ModelledDut")
        return self.dut

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        """All N frames arrive; the connections remember when they were created; the trial takes N / rate and the
        receive wait."""
        dut = self._dut()
        start = self.sim.now
        res = super().phase1(rate, learn)
        n = self._plan().connections
        dut.born = (start, rate, n) if rate > 0 else None
        self.sim.advance((n / rate if rate > 0 else 0.0) + (self.receive_timeout or 0.0))
        return res

    def _reverse_alive(self, rate: float, sent: int) -> int:
        """Of ``sent`` reverse frames to the table's connections in creation order at ``rate``, starting now, how
        many find their connection: frame ``i`` leaves at ``now + i / rate``, connection ``i`` expires at ``start + i
        / created + timeout``."""
        dut = self._dut()
        timeout = dut.table.timeout
        held = min(sent, dut.connections)
        if dut.born is None or timeout is None or rate <= 0:
            return held
        start, created, _n = dut.born
        slack = timeout - (self.sim.now - start)  # connection i is reached when i x (1/rate - 1/created) <= slack
        slope = 1 / rate - 1 / created
        if abs(slope) < 1e-15:
            return held if slack >= 0 else 0
        bound = slack / slope
        if slope > 0:
            return min(held, max(math.floor(bound) + 1, 0)) if bound >= 0 else 0
        return max(held - min(max(math.ceil(bound), 0), held), 0)

    def validate(self, rate: float) -> PhaseResult:
        """One reverse frame per learned tuple: a frame whose connection expired is dropped."""
        res = super().validate(rate)
        c = res.counts[Direction.REVERSE]
        valid = min(c.valid, self._reverse_alive(rate, c.sent))
        self.sim.advance((c.sent / rate if rate > 0 else 0.0) + (self.receive_timeout or 0.0))
        return dataclasses.replace(res, counts={Direction.REVERSE: DirectionCounts(c.sent, valid, valid)})

    def validate_sample(self, rate: float, count: int) -> PhaseResult:
        """``count`` reverse frames spread over the tuples, each arriving in proportion to what :meth:`validate`
        would find; takes ``count / rate`` and the receive wait."""
        full = FakeTester.validate(self, rate)
        c = full.counts[Direction.REVERSE]
        k = min(count, c.sent)
        alive = min(c.valid, self._reverse_alive(rate, c.sent))
        valid = k if not c.sent else math.floor(k * alive / c.sent)
        self.sim.advance((k / rate if rate > 0 else 0.0) + (self.receive_timeout or 0.0))
        return dataclasses.replace(full, counts={Direction.REVERSE: DirectionCounts(k, valid, valid)})

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """``duration`` seconds at ``rate`` per direction through the modelled DUT (module docstring)."""
        dut = self._dut()
        self.calls += 1
        self.dut.expire()
        now = self.sim.now
        b = self.behaviour
        active = list(directions.active)
        ceiling = b.ceiling_at(self.rng, now - dut.setup_at, self.drift.at_time(self.rng, now))
        draw = b.draw(self.rng, duration, len(active), ceiling, self.flaws, rate)
        seconds = duration
        stopped = False
        if measure.stop is not None and self.stops and math.isfinite(rate) and rate > 0:
            at = watch_stop(
                measure.stop,
                duration,
                lambda t: math.floor(rate * t),
                [functools.partial(b.missing_by, rate, draw, i) for i in range(len(active))],
            )
            if at is not None:
                seconds, stopped = at, True
        sent = round(rate * seconds)
        counts: dict[Direction, DirectionCounts] = {}
        deviations: dict[Direction, Deviation] = {}
        tails: dict[Direction, float] = {}
        shorts: dict[Direction, float] = {}
        for i, d in enumerate(active):
            missed = draw.missed[i] if draw.missed_at <= seconds else 0
            valid = max(sent - b.lost_by(rate, draw, i, seconds) - missed, 0)
            counts[d] = DirectionCounts(sent, valid, valid)
            if missed:
                deviations[d] = Deviation(missed=missed, notes=(f"tester receive socket dropped {missed} frames",))
            if measure.tail_rates and seconds > 0:
                half = seconds / 2
                got = [math.floor(rate * t) - b.missing_by(rate, draw, i, t) for t in (half, seconds)]
                tails[d] = round((got[1] - got[0]) / half, 1)
                if stopped and measure.stop is not None:  # what it forwarded short of the rate to the end
                    shorts[d] = self._shortfall(rate, draw, i, seconds, measure.stop.window)
        self.sim.advance(seconds + (self.receive_timeout or 0.0))
        return PhaseResult(
            intended_rate=rate,
            achieved_rate=rate,
            duration=seconds,
            counts=counts,
            deviations=deviations,
            responder_mode=str(self._plan().responder_mode),
            extra=self._extra(),
            stopped=stopped,
            tail_rates=tails,
            shortfalls=shorts,
        )

    def _shortfall(self, rate: float, draw: Any, i: int, seconds: float, window: float) -> float:
        """Frames per second the modelled DUT forwarded below the rate in direction ``i`` of a trial stopped after
        ``seconds``: the growth of its missing frames over the second half and over the stop's last ``window``, the
        smaller (never below 0), as a tester measures it from its counts."""
        missing = functools.partial(self.behaviour.missing_by, rate, draw, i)
        half = seconds / 2
        over_half = (missing(seconds) - missing(half)) / half
        start = max(seconds - window, 0.0)
        over_window = (missing(seconds) - missing(start)) / (seconds - start) if seconds > start else over_half
        return round(max(min(over_half, over_window), 0.0), 1)


def modelled_pair(
    behaviour: Behaviour,
    *,
    flaws: TesterFlaws | None = None,
    table: TableModel | None = None,
    rng: random.Random | None = None,
    sim: SimClock | None = None,
    stops: bool = True,
    command_seconds: float = 0.412,
) -> tuple[ModelledTester, ModelledDut]:
    """A :class:`ModelledTester` wired to a new :class:`ModelledDut` on one simulated clock; ``stops``: the tester
    honours ``Phase2Options.stop`` (the software tester does)."""
    clock = sim or SimClock()
    tbl = table or TableModel()
    model = FakeModel(
        cps=OUT_OF_REACH,
        forwarding=OUT_OF_REACH,
        stateless_forwarding=OUT_OF_REACH,
        tester_max_rate=OUT_OF_REACH,
        table_limit=tbl.limit if tbl.limit is not None else 2**62,
    )
    dut = ModelledDut(model, clock=clock, sim=clock, table=tbl, command_seconds=command_seconds)
    tester = ModelledTester(
        dut,
        stops=stops,
        behaviour=behaviour,
        flaws=flaws or TesterFlaws(),
        rng=rng or random.Random(1),
        sim=clock,
        drift=Drift(behaviour.drift, behaviour.drift_seconds),
    )
    return tester, dut
