"""Tester time and accuracy of the seed campaigns under the binary search, the fast search and MLRsearch, simulated.

The real procedures (``natbench.metrics.registry.run_repetition`` with the campaign's own settings at every working
point) drive a fake tester and DUT (``natbench.testing``) on a simulated clock: nothing sleeps. Per campaign it
prints, for ``algorithm: binary`` (the seeds' procedure), ``fast`` and ``mlr`` side by side in one run, the
tester time of one campaign, its trials and trial seconds, and per metric the time and the accuracy over all
simulated repetitions (share of results outside ``(truth - error, truth]``, within the error, bias, spread), with
the ratios of each to binary. ``mlr`` is MLRsearch with the ``rfc2544`` preset (``algorithm: mlr``'s default) and
a relative width of ``error / (true ceiling + error)``, so that its final width (relative to its upper bound) near
the ceiling is at most the other searches' error (the preset's own ``error / upper`` would search 30 times finer on
the seeds' ranges); MLRsearch has no cps search, so under ``mlr`` cps runs ``binary`` (its rows say so).

The modelled DUT (fixed here, the same for both algorithms; nothing is fitted to either search):

* **Ceilings**: the seeds' medians at each working point (seed 000 Figure 2, seed 004 Table 4; throughput per
  direction is half the printed bidirectional figure). They hold at the seeds' 4M-connection tables and scale with
  table size N as ``(4M / N) ** TABLE_SLOWDOWN`` (bigger tables are slower).
* **Trial-to-trial jitter**: every trial draws its ceiling uniformly from ``median x (1 +- J)`` where J is the
  seeds' own spread at that point, ``(max - min) / (2 median)``: all of the repetitions' spread is taken as
  trial-to-trial jitter (the hardest case for a search that needs a passing and a failing trial next to each
  other).
* **Loss curve**: no loss below ``(1 - KNEE) x ceiling``; from there the loss ratio rises quadratically to
  ``KNEE_LOSS`` at the ceiling; above it ``KNEE_LOSS + 1 - ceiling / rate`` (lost frames: floor of the expected).
* **Loss spikes**: Poisson, ``SPIKES_PER_SECOND`` per second of traffic, each losing ``SPIKE_SECONDS`` of frames.
* **Queue** (``--buffer-frames B``, default 0): a DUT queue absorbs the first B frames a trial would lose in each
  direction (a phase 1 too), as a token bucket of B packets does: a trial of T seconds then passes up to about
  ``ceiling + B / T``, so short trials are optimistic by ``B / T_short``.
* **Time**: a phase 1 of N frames lasts N / rate, a phase-2 trial its duration, a validation learned / rate; each
  adds the metric's ``timeout`` (the tester's receive wait). DUT commands (empty, count the table) cost
  ``COMMAND_SECONDS`` each: the SSH step time bench/dut_step_roundtrips.py measured (412 ms per step sent as one
  script, commit 1ef6364); emptying the table adds ``FLUSH_PER_CONNECTION`` (natbench.testing's FakeModel default).
  ``gap`` is waited on the simulated clock.
* **Stops** (the fast search's ``stop_failed``): a full trial asked to stop ends the window after the frames it
  lost in a direction (loss curve, spikes struck by then, less the queue) first exceeded the full trial's allowance
  plus the margin, rounded up to the software tester's 20 ms samples; it then counts the frames due by then. The
  model's queue passes the frames it absorbs on (a token bucket), so they never sit in the watch's gap, and lost
  frames never come back: no stop here proves nothing (a DUT that holds frames back in a queue could be stopped on
  frames the receive wait delivers; the model has none).
* **Tail rates** (``PhaseResult.tail_rates``, where the fast search looks next): a phase-2 trial's second half
  forwards ``rate x (1 - loss ratio)`` per direction (the loss curve's; the queue has filled by then, spikes are
  transients). A phase 1 reports none (the fast search uses its count).

The true ceiling of a metric at a point is the highest rate whose full-duration trial passes on the DUT without
jitter or spikes. The DUTs can count their connections, keep every connection they forwarded (validation
passes when phase 1 did) and use responder mode compute (listing 4M mappings per repetition would only slow the
simulation; the DUT does not report mappings, so port preservation is "unverified").

    python bench/campaign_time.py            # >= 1,000 repetitions per campaign and algorithm (minutes)
    python bench/campaign_time.py --quick    # one pass of each campaign
    python bench/campaign_time.py --spikes-per-hour 0    # a DUT without loss spikes
    python bench/campaign_time.py --buffer-frames 2048   # a DUT with a 2,048-frame queue per direction
    python bench/campaign_time.py --algorithms binary,fast-norule,fast-nostop,fast-nojump,fast,mlr   # and fast
        # without the short-fail rule, without stopping failed full trials, without jumps to a forwarded rate
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from natbench.campaign import load_campaign  # noqa: E402
from natbench.campaign.estimate import has_algorithm  # noqa: E402
from natbench.metrics import ProcedureContext  # noqa: E402
from natbench.metrics.registry import run_repetition  # noqa: E402
from natbench.plugins import Directions, Phase2Options  # noqa: E402
from natbench.results import Direction, DirectionCounts, PhaseResult, RepetitionResult, TrialRecord  # noqa: E402
from natbench.search.fast import jump as fast_search  # noqa: E402
from natbench.search.mlr import MlrSettings  # noqa: E402
from natbench.testers.losswatch import SAMPLE_PERIOD  # noqa: E402
from natbench.testing import FakeDut, FakeModel, FakeTester  # noqa: E402
from natbench.traffic.plan import ResponderMode  # noqa: E402

KNEE = 0.02
"""Loss starts this share below the ceiling."""
KNEE_LOSS = 1e-4
"""Loss ratio at the ceiling."""
SPIKES_PER_SECOND = 1 / 1800
"""Loss spikes per second of traffic (one per half hour; ``--spikes-per-hour``)."""
SPIKE_SECONDS = 0.001
"""Frames one spike loses, in seconds of traffic at the trial's rate."""
TABLE_SLOWDOWN = 0.05
"""Ceilings scale with (4M / N) ** TABLE_SLOWDOWN."""
SEED_TABLE = 4_000_000
"""Connections of the seeds' tables (both figures)."""
COMMAND_SECONDS = 0.412
"""One DUT step over SSH (bench/dut_step_roundtrips.py: one script per step)."""
FLUSH_PER_CONNECTION = FakeModel().flush_per_connection
"""Seconds emptying the table takes per connection."""
BUFFER_FRAMES = 0
"""Frames a DUT queue absorbs per direction and trial (``--buffer-frames``)."""
ALGORITHMS = ("binary", "fast", "mlr")
"""The reference (seeds' procedure) first, then the fast search and MLRsearch."""


@dataclass(frozen=True)
class Figure:
    """A seed's median, minimum and maximum of one metric at each working point (per direction for fps)."""

    median: tuple[float, ...]
    minimum: tuple[float, ...]
    maximum: tuple[float, ...]

    def jitter(self, i: int) -> float:
        """The relative half-spread at point ``i``."""
        return (self.maximum[i] - self.minimum[i]) / (2 * self.median[i])


def _k(*values: float) -> tuple[float, ...]:
    return tuple(v * 1000 for v in values)


def _half(*values: float) -> tuple[float, ...]:
    return tuple(v / 2 for v in values)


SEED000_CPS = Figure(
    _k(223.5, 371.1, 708.7, 1341, 2383), _k(221.6, 367.7, 701.7, 1325, 2304), _k(226.7, 375.9, 723.6, 1376, 2417)
)
SEED000_TP = Figure(
    _half(*_k(414.9, 742.3, 1379, 2336, 4557)),
    _half(*_k(413.9, 740.6, 1373, 2311, 4436)),
    _half(*_k(416.1, 746.9, 1395, 2361, 4627)),
)
SEED000_FWD = Figure(
    _half(*_k(910.9, 1523, 3016, 5920, 11561)),
    _half(*_k(874.8, 1485, 2951, 5811, 10998)),
    _half(*_k(914.3, 1534, 3037, 5940, 11627)),
)
SEED004_CPS = Figure(
    (210344, 328212, 423903, 448817, 459089),
    (208396, 324595, 417039, 440014, 451170),
    (212501, 331349, 428980, 487501, 468751),
)
SEED004_TP = Figure(
    _half(217946, 372742, 472135, 490059, 495614),
    _half(215622, 365548, 465608, 484248, 487106),
    _half(218778, 375002, 478126, 495314, 500398),
)


@dataclass(frozen=True)
class SimCampaign:
    """A seed campaign file and the seed's figures of its metrics (one entry per working point)."""

    title: str
    files: tuple[str, ...]
    figures: dict[str, Figure]
    stateful: bool = True


CAMPAIGNS = (
    SimCampaign(
        "seed 000 Figure 2 (iptables + forwarding)",
        ("seed000-fig2-iptables-cores.yaml", "seed000-fig2-forwarding-cores.yaml"),
        {"cps": SEED000_CPS, "throughput": SEED000_TP, "forwarding": SEED000_FWD},
    ),
    SimCampaign(
        "seed 004 Table 4 (Jool 464XLAT)",
        ("seed004-table4-464xlat-cores.yaml",),
        {"cps": SEED004_CPS, "throughput": SEED004_TP},
    ),
)


def loss_ratio(rate: float, ceiling: float) -> float:
    """The modelled loss curve around ``ceiling``."""
    knee = ceiling * (1 - KNEE)
    if rate <= knee:
        return 0.0
    if rate <= ceiling:
        return KNEE_LOSS * ((rate - knee) / (ceiling * KNEE)) ** 2
    return min(1.0, KNEE_LOSS + 1 - ceiling / rate)


def lost_frames(frames: int, ratio: float) -> int:
    """Frames lost at ``ratio`` (floor of the expected number)."""
    return min(frames, math.floor(frames * ratio))


def passes(frames: int, rate: float, ceiling: float, acceptance: float) -> bool:
    """Whether a trial of ``frames`` at ``rate`` passes on the DUT without jitter or spikes (its queue absorbing the
    first :data:`BUFFER_FRAMES` lost frames)."""
    return max(0, lost_frames(frames, loss_ratio(rate, ceiling)) - BUFFER_FRAMES) <= acceptance * frames


def true_ceiling(ceiling: float, acceptance: float, frames_at: Any) -> float:
    """The highest rate (to 0.01) whose full trial passes on the DUT without jitter or spikes."""
    lo, hi = ceiling * (1 - KNEE) * 0.999, ceiling * 1.01
    while hi - lo > 0.01:
        mid = (lo + hi) / 2
        if passes(frames_at(mid), mid, ceiling, acceptance):
            lo = mid
        else:
            hi = mid
    return lo


class SimClock:
    """The simulated clock: the procedures read it, the fakes and ``sleep`` advance it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass."""
        self.now += seconds


@dataclass
class SimDut(FakeDut):
    """A FakeDut whose commands cost simulated time; it does not list mappings."""

    sim: SimClock = field(default_factory=SimClock)

    def reset_connections(self) -> None:
        """Empty the table: one command plus the flush of its connections."""
        self.sim.advance(COMMAND_SECONDS + FLUSH_PER_CONNECTION * self.connections)
        super().reset_connections()

    def count_connections(self) -> int:
        """Count the table: one command."""
        self.sim.advance(COMMAND_SECONDS)
        return super().count_connections()

    def supports(self, operation: str) -> bool:
        """No mapping listing (responder mode compute is taken as configured)."""
        return operation != "mappings" and super().supports(operation)


@dataclass
class SimTester(FakeTester):
    """A FakeTester whose trials take simulated time and lose frames by the modelled loss curve and spikes.

    The fake DUT's own ceilings are set out of reach; this class applies the modelled ones."""

    sim: SimClock = field(default_factory=SimClock)
    rng: random.Random = field(default_factory=random.Random)
    cps: float = 1.0
    cps_jitter: float = 0.0
    forwarding: float = 1.0
    forwarding_jitter: float = 0.0

    def _ceiling(self, median: float, jitter: float) -> float:
        scale = (SEED_TABLE / self._plan().connections) ** TABLE_SLOWDOWN
        return median * scale * (1 + jitter * (2 * self.rng.random() - 1))

    def _lost(self, frames: int, rate: float, ceiling: float, seconds: float) -> int:
        lost = lost_frames(frames, loss_ratio(rate, ceiling))
        spikes = _poisson(self.rng, SPIKES_PER_SECOND * seconds)
        return max(0, min(frames, lost + spikes * round(SPIKE_SECONDS * rate)) - BUFFER_FRAMES)

    def phase1(self, rate: float, learn: bool) -> PhaseResult:
        """All N frames at ``rate``; lost ones create no connection."""
        res = super().phase1(rate, learn)
        n = self._plan().connections
        lost = self._lost(n, rate, self._ceiling(self.cps, self.cps_jitter), n / rate)
        self.dut.connections -= lost
        if learn:
            self.learned = n - lost
        self.sim.advance(n / rate + (self.receive_timeout or 0.0))
        return dataclasses.replace(
            res,
            counts={Direction.FORWARD: DirectionCounts(n, n - lost, n - lost)},
            learned=n - lost if learn else None,
        )

    def phase2(self, rate: float, duration: float, directions: Directions, measure: Phase2Options) -> PhaseResult:
        """``duration`` seconds at ``rate`` per direction against one jittered forwarding ceiling; with a stop asked
        for (``measure.stop``), it ends when the watch would end it (:meth:`_stopped_at`)."""
        res = super().phase2(rate, duration, directions, dataclasses.replace(measure, stop=None))
        ceiling = self._ceiling(self.forwarding, self.forwarding_jitter)
        counts = {}
        # the second half's forwarding rate (a sampling tester's tail_rates): the loss curve's, the queue full by then
        tails = {d: rate * (1 - loss_ratio(rate, ceiling)) for d in res.counts} if measure.tail_rates else {}
        res = dataclasses.replace(res, tail_rates=tails)
        if measure.stop is None or not self.stops:
            for d, c in res.counts.items():
                valid = c.valid - self._lost(c.sent, rate, ceiling, duration)
                counts[d] = DirectionCounts(c.sent, max(valid, 0), max(valid, 0))
            self.sim.advance(duration + (self.receive_timeout or 0.0))
            return dataclasses.replace(res, counts=counts)
        paths = {d: self._spikes(duration) for d in res.counts}
        stop = measure.stop
        threshold = stop.allowance + stop.margin
        ends = [self._stopped_at(rate, ceiling, duration, spikes, threshold) for spikes in paths.values()]
        crossed = [t + stop.window for t in ends if t is not None and t + stop.window < duration]
        seconds = math.ceil(min(crossed) / SAMPLE_PERIOD) * SAMPLE_PERIOD if crossed else duration
        seconds = min(seconds, duration)
        for d, spikes in paths.items():
            sent = round(rate * seconds)
            valid = sent - self._lost_by(rate, ceiling, seconds, spikes)
            counts[d] = DirectionCounts(sent, max(valid, 0), max(valid, 0))
        self.sim.advance(seconds + (self.receive_timeout or 0.0))
        return dataclasses.replace(res, counts=counts, duration=seconds, stopped=seconds < duration)

    def _spikes(self, duration: float) -> list[float]:
        """When the loss spikes of a trial of ``duration`` seconds strike (sorted)."""
        return sorted(self.rng.random() * duration for _ in range(_poisson(self.rng, SPIKES_PER_SECOND * duration)))

    @staticmethod
    def _lost_by(rate: float, ceiling: float, t: float, spikes: list[float]) -> int:
        """Frames lost in the first ``t`` seconds of a trial (the loss curve, the spikes struck by then, less the
        queue)."""
        frames = round(rate * t)
        struck = sum(1 for x in spikes if x <= t)
        lost = lost_frames(frames, loss_ratio(rate, ceiling)) + struck * round(SPIKE_SECONDS * rate)
        return max(0, min(frames, lost) - BUFFER_FRAMES)

    def _stopped_at(
        self, rate: float, ceiling: float, duration: float, spikes: list[float], threshold: float
    ) -> float | None:
        """When the frames lost in a direction first exceed ``threshold`` (to :data:`SAMPLE_PERIOD`; None: not within
        ``duration``). Lost frames never come back in this model, so the watch's gap stays above it from then on."""
        if self._lost_by(rate, ceiling, duration, spikes) <= threshold:
            return None
        lo, hi = 0.0, duration
        while hi - lo > SAMPLE_PERIOD / 2:
            mid = (lo + hi) / 2
            if self._lost_by(rate, ceiling, mid, spikes) > threshold:
                hi = mid
            else:
                lo = mid
        return hi

    def validate(self, rate: float) -> PhaseResult:
        """One reverse frame per learned tuple (all arrive: the DUT kept every connection it forwarded)."""
        res = super().validate(rate)
        sent = sum(c.sent for c in res.counts.values())
        self.sim.advance(sent / rate + (self.receive_timeout or 0.0))
        return res


def _poisson(rng: random.Random, mean: float) -> int:
    k, p, limit = 0, 1.0, math.exp(-mean)
    while True:
        p *= rng.random()
        if p <= limit:
            return k
        k += 1


@dataclass
class Tally:
    """Time, trials and accuracy of one algorithm over all passes of one campaign (or of one metric in it)."""

    seconds: float = 0.0
    trials: int = 0
    short: int = 0
    trial_seconds: float = 0.0
    results: int = 0
    failed: int = 0
    within: int = 0
    outside: int = 0
    bias: list[float] = field(default_factory=list)
    probes: int = 0
    proofs: int = 0
    guards: int = 0
    short_bounds: int = 0
    algorithm: str = ""
    metrics: dict[str, Tally] = field(default_factory=dict)

    def add(self, res: RepetitionResult, truth: float, error: float) -> None:
        """Book one repetition's result against the true ceiling: within the error of it, outside (truth - error,
        truth] (a failed repetition counts as outside, as it reports nothing), and its relative deviation."""
        self.results += 1
        if res.value is None:
            self.failed += 1
            self.outside += 1
            return
        if abs(res.value - truth) <= error:
            self.within += 1
        if not truth - error < res.value <= truth:
            self.outside += 1
        self.bias.append((res.value - truth) / truth)

    def book(self, metric: str, res: RepetitionResult, truth: float, error: float, records: list[TrialRecord]) -> None:
        """Book one repetition of ``metric`` here and in the metric's own tally, with its trials."""
        sub = self.metrics.setdefault(metric, Tally())
        for t in (self, sub):
            t.add(res, truth, error)
            t.trials += len(records)
            t.short += sum(1 for r in records if r.extra.get("search_trial") == "short")
            t.trial_seconds += sum(float(r.extra.get("duration", 0.0)) for r in records if r.kind != "fill")
            t.probes += int(res.extra.get("probes") or 0)
            t.proofs += int(res.extra.get("probe_proofs") or 0)
            t.guards += int(res.extra.get("guard_trials") or 0)
            t.short_bounds += bool(res.extra.get("short_bound"))

    @property
    def within_share(self) -> float:
        """Share of all repetitions whose result is within the search error of the true ceiling."""
        return self.within / self.results if self.results else 0.0

    @property
    def outside_share(self) -> float:
        """Share of all repetitions whose result is not in (truth - error, truth] (failed ones included)."""
        return self.outside / self.results if self.results else 0.0

    @property
    def mean_bias(self) -> float:
        """Mean relative deviation of the results from the true ceiling."""
        return statistics.fmean(self.bias) if self.bias else 0.0

    @property
    def spread(self) -> float:
        """Standard deviation of the relative deviations."""
        return statistics.pstdev(self.bias) if len(self.bias) > 1 else 0.0

    def per_pass(self, passes: int) -> None:
        """Turn the time and trial sums into figures per pass of the campaign."""
        for t in (self, *self.metrics.values()):
            t.seconds /= passes
            t.trial_seconds /= passes
            t.trials = round(t.trials / passes)
            t.short = round(t.short / passes)


def simulate(sc: SimCampaign, algorithm: str, passes: int, seed: int) -> Tally:
    """Run ``passes`` whole passes of ``sc``'s campaign files with ``algorithm`` for every search metric that offers
    it (``binary`` for the others)."""
    tally = Tally(algorithm=algorithm)
    jumps = fast_search.JUMPS
    fast_search.JUMPS = 0 if algorithm == "fast-nojump" else jumps
    try:
        for pass_no in range(passes):
            for file in sc.files:
                campaign = load_campaign(str(ROOT / "campaigns" / file))
                for p in campaign.points():
                    _point(sc, campaign, p, algorithm, tally, random.Random(f"{seed}/{file}/{p.index}/{pass_no}"))
    finally:
        fast_search.JUMPS = jumps
    tally.per_pass(passes)
    return tally


def searched_with(settings: Any, algorithm: str) -> str:
    """The algorithm a metric runs in the ``algorithm`` column: that one when the metric offers it, else binary
    (``fast-norule``: ``fast`` with ``short_fail: false``; ``fast-nostop``: with ``stop_failed: false``;
    ``fast-nojump``: ``fast`` that never goes to a failed trial's forwarding rate)."""
    base = "fast" if algorithm in ("fast-norule", "fast-nostop", "fast-nojump") else algorithm
    return algorithm if has_algorithm(settings, base) else "binary"


def _point(sc: SimCampaign, campaign: Any, p: Any, algorithm: str, tally: Tally, rng: random.Random) -> None:
    i = p.index
    udp_timeout = None
    for d in campaign.testbed.duts:
        t = d.params.get("udp_timeout")
        if isinstance(t, int | float):
            udp_timeout = float(t) if udp_timeout is None else min(udp_timeout, float(t))
    names = list(campaign.metrics)
    stateful = any(n != "forwarding" for n in names)
    clock = SimClock()
    fwd_fig = sc.figures["forwarding" if not stateful else "throughput"]
    cps_fig = sc.figures.get("cps", fwd_fig)
    model = FakeModel(
        cps=1e15, forwarding=1e15, stateless_forwarding=1e15, tester_max_rate=1e15, table_limit=2**31,
        nat=stateful, udp_timeout=udp_timeout,
    )  # fmt: skip
    dut = SimDut(model, clock=clock, sim=clock)
    plan = dataclasses.replace(campaign.traffic_plan(p), responder_mode=ResponderMode.COMPUTE)
    tester = SimTester(
        dut, sim=clock, rng=rng, cps=cps_fig.median[i], cps_jitter=cps_fig.jitter(i),
        forwarding=fwd_fig.median[i], forwarding_jitter=fwd_fig.jitter(i), stops=True,
    )  # fmt: skip
    tester.prepare(plan)
    scale = (SEED_TABLE / plan.connections) ** TABLE_SLOWDOWN
    for name in names:
        s = campaign.settings_for(p, name)
        s = s.resolved(campaign.traffic.acceptance, s.directions or campaign.traffic.directions)
        fig = sc.figures[name]
        if name == "cps":
            truth = true_ceiling(fig.median[i] * scale, s.acceptance, lambda _r, n=plan.connections: n)
        else:
            truth = true_ceiling(fig.median[i] * scale, s.acceptance, lambda r, d=s.duration: round(r * d))
        alg = "-"
        if "algorithm" in type(s).model_fields:
            alg = searched_with(s, algorithm)
            update: dict[str, Any] = {"algorithm": alg}
            if alg == "fast-norule":
                update = {"algorithm": "fast", "short_fail": False}
            if alg == "fast-nostop":
                update = {"algorithm": "fast", "stop_failed": False}
            if alg == "fast-nojump":
                update = {"algorithm": "fast"}
            if alg == "mlr":  # the rfc2544 preset at the other searches' precision at the result
                update["mlr"] = MlrSettings(relative_width=s.error / (truth + s.error))
            s = s.model_copy(update=update)
        earlier: list[RepetitionResult] = []
        start = clock.now
        for rep in range(s.repetitions):
            counted: list[TrialRecord] = []
            ctx = ProcedureContext(
                tester=tester, dut=dut, point=p, plan=plan, metric=name, repetition=rep, settings=s,
                emit=counted.append, clock=clock, sleep=clock.advance, earlier=tuple(earlier),
            )  # fmt: skip
            res = run_repetition(ctx)
            earlier.append(res)
            tally.book(name, res, truth, s.error, counted)
        tally.metrics[name].seconds += clock.now - start
        tally.metrics[name].algorithm = alg
    tally.seconds += clock.now


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:8.2f} h"


def _speedup(theirs: float, mine: float) -> str:
    """``theirs / mine`` as a speed-up, or why there is none (an algorithm whose every repetition failed took no
    tester time: nothing to compare)."""
    return f"{theirs / mine:.2f}x" if mine > 0 else "- (no tester time: every repetition failed)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repetitions", type=int, default=1000, help="at least this many repetitions per campaign")
    ap.add_argument("--quick", action="store_true", help="one pass of each campaign (a few hundred repetitions)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the simulated DUTs' randomness")
    ap.add_argument("--spikes-per-hour", type=float, default=2.0, help="loss spikes per hour of traffic")
    ap.add_argument("--buffer-frames", type=int, default=0, help="frames a DUT queue absorbs per direction and trial")
    ap.add_argument(
        "--algorithms",
        default=",".join(ALGORITHMS),
        help="comma-separated, binary first (fast-norule: fast without the short-fail rule; fast-nostop: fast that"
        " runs every failed full trial to its end; fast-nojump: fast that never goes to a failed trial's forwarding"
        " rate)",
    )
    args = ap.parse_args()
    global SPIKES_PER_SECOND, BUFFER_FRAMES
    SPIKES_PER_SECOND = args.spikes_per_hour / 3600
    BUFFER_FRAMES = args.buffer_frames
    algorithms = tuple(args.algorithms.split(","))
    t0 = time.perf_counter()
    print(__doc__.split("\n\n")[0])
    print(
        f"DUT model: knee {KNEE:.0%} below the ceiling, loss {KNEE_LOSS:g} at it; spikes {SPIKES_PER_SECOND * 3600:g}"
        f"/h of {SPIKE_SECONDS * 1000:g} ms; queue {BUFFER_FRAMES} frames; table slowdown exponent {TABLE_SLOWDOWN};"
        f" DUT command {COMMAND_SECONDS * 1000:.0f} ms, flush {FLUSH_PER_CONNECTION * 1e6:g} us/connection;"
        " jitter: the seeds' spread"
    )
    for sc in CAMPAIGNS:
        per_pass = 0
        for file in sc.files:
            campaign = load_campaign(str(ROOT / "campaigns" / file))
            per_pass += sum(
                campaign.settings_for(p, m).repetitions for p in campaign.points() for m in campaign.metrics
            )
        passes = 1 if args.quick else max(1, math.ceil(args.repetitions / per_pass))
        tallies = [simulate(sc, alg, passes, args.seed) for alg in algorithms]
        print(f"\n{sc.title}: {passes} pass(es) of {per_pass} repetitions each = {passes * per_pass} per algorithm")
        print(table(tallies))
        ref = tallies[0]
        for t in tallies[1:]:
            own = [m for m, mt in t.metrics.items() if mt.algorithm == t.algorithm]
            mine = sum(t.metrics[m].seconds for m in own)
            theirs = sum(ref.metrics[m].seconds for m in own)
            print(
                f"speed-up {t.algorithm} (binary / {t.algorithm} tester time): {_speedup(ref.seconds, t.seconds)};"
                f" over the metrics it searches itself ({', '.join(own)}): {_speedup(theirs, mine)}"
            )
        for t in tallies[1:]:
            worse = [m for m, mt in t.metrics.items() if mt.outside_share > ref.metrics[m].outside_share]
            verdict = "no metric" if not worse else ", ".join(worse)
            print(f"{t.algorithm}: results outside (truth - error, truth] more often than binary's: {verdict}")
    print(f"\nsimulated in {time.perf_counter() - t0:.0f} s")


def table(tallies: list[Tally]) -> str:
    """The comparison: one column per algorithm, then each one's ratio to the first (binary)."""
    ref = tallies[0]
    names = [t.algorithm for t in tallies]
    head = f"{'':28}" + "".join(f"{n:>13}" for n in names) + "".join(f"{n + '/' + names[0]:>20}" for n in names[1:])
    lines = [head]

    def row(label: str, cells: list[str], ratios: list[str]) -> None:
        lines.append(f"{label:28}" + "".join(f"{c:>13}" for c in cells) + "".join(f"{r:>20}" for r in ratios))

    def ratios(values: list[float]) -> list[str]:
        return [_ratio(v, values[0]) for v in values[1:]]

    secs = [t.seconds for t in tallies]
    row("tester time / campaign", [_hours(v) for v in secs], ratios(secs))
    trials = [float(t.trials) for t in tallies]
    row("trials / campaign", [f"{t.trials:,}" for t in tallies], ratios(trials))
    row("  of them short", [f"{t.short:,}" for t in tallies], ["" for _ in tallies[1:]])
    tsecs = [t.trial_seconds for t in tallies]
    row("trial seconds / campaign", [_hours(v) for v in tsecs], ratios(tsecs))
    for m in ref.metrics:
        subs = [t.metrics[m] for t in tallies]
        row(f"{m}: searched by", [s.algorithm for s in subs], [])
        row("  time", [_hours(s.seconds) for s in subs], ratios([s.seconds for s in subs]))
        row("  trials", [f"{s.trials:,}" for s in subs], ratios([float(s.trials) for s in subs]))
        out = [s.outside_share for s in subs]
        row("  outside (truth-err, truth]", [f"{v:.1%}" for v in out], ratios(out))
        within = [s.within_share for s in subs]
        row("  within error of truth", [f"{v:.1%}" for v in within], ratios(within))
        row("  bias (mean, of truth)", [f"{s.mean_bias:+.3%}" for s in subs], [])
        row("  spread (sd, of truth)", [f"{s.spread:.3%}" for s in subs], [])
        row("  failed repetitions", [f"{s.failed}" for s in subs], [])
        if any(s.probes or s.short_bounds for s in subs):
            row("  probes / proving (all)", [f"{s.probes}/{s.proofs}" for s in subs], [])
            row("  short bounds, guard trials", [f"{s.short_bounds}, {s.guards}" for s in subs], [])
    return "\n".join(lines)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


if __name__ == "__main__":
    main()
