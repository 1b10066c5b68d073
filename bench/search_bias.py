"""Bias of the binary, fast and MLRsearch searches on DUTs modelled from the RFC text, through natbench's procedures.

Every repetition is one ``natbench.metrics.registry.run_repetition`` of throughput (a fill, then the search) against a
modelled DUT and tester (``natbench.testing.modelled``: every trial's counts by arithmetic, on a simulated clock):
the real binary, fast and MLRsearch searches, their verdicts, the fast search's stops (the real loss watch) and
tail rates, seeds from the earlier repetitions at the point. A *campaign* is ``--repetitions`` repetitions at one
working point on a freshly set-up DUT; its result is their median, as the tables print it. Per model and algorithm
it prints, over ``--campaigns`` campaigns, the mean of the campaign medians minus the truth (the highest rate whose
full trial passes at the DUT's median ceiling, with no jitter, drift, warm-up, spikes or tester flaws) and its
standard error, the share of all repetitions above the truth and more than one error below it (or without a value),
the tester time of a campaign and its ratio to
binary's, and ``!`` where a search's mean median lies above binary's by more than 2 standard errors (of the
difference). Repetitions that ended without a value are counted, never averaged.

The models (``natbench.testing.dutmodels``; ceiling C = 300,000 frames/s per direction, bidirectional, search
range [0, 1,000,000], error 1,000, full trials 60 s, short 1 s, receive wait 2 s, acceptance 0 unless named):

* ``queue B, J``: a queue of B frames (512, 2,000, 10,000) the receive wait delivers, the ceiling drawn per trial
  from C x (1 +- J) (J = 0.5 %, 1 %);
* ``spikes``: queue 512, J 0.5 %, loss spikes of 1 ms at one per hour of traffic and direction;
* ``drift``: queue 512, a stationary drift of the ceiling (1 % sd, 10 minutes' correlation), no jitter;
* ``warm-up``: queue 512, J 0.5 %, a ceiling 3 % low after setup, recovering with a 5-minute time constant;
* ``tester misses``: acceptance 0.01 %, the DUT loses 0.027 % of the frames of each trial's first 0.5 s (40 frames
  per trial and direction near the ceiling: short trials fail, full ones pass), the tester's receive side
  misses 2,000 frames in a stall at the start of one trial in ten per direction (reported as its deviation; a full
  trial whose loss the stall explains is invalid and measured again), ``max_invalid`` 8;
* ``start-up loss``: acceptance 0.01 %, 0.1 % of the frames of each trial's first 0.5 s lost;
* ``livelock``: above the ceiling forwarding falls by one frame per frame of excess, J 0.5 %;
* ``loss knee``: loss from 2 % below the ceiling, 0.01 % at it, J 0.5 %.

MLRsearch runs its ``rfc2544`` preset with a relative width of ``error / (truth + error)`` (the other searches'
precision at the result, as bench/campaign_time.py sets it). The output on stdout depends only on the arguments
(``--seed``): every campaign draws from its own stream, whatever ``--jobs`` runs it; the run time goes to stderr.

    python bench/search_bias.py                                # every model, 300 campaigns of 10 (2 processes)
    python bench/search_bias.py --campaigns 40 --model queue   # models whose name starts with "queue", quickly
    python bench/search_bias.py --algorithms binary,fast,fast-nostop   # and fast with stop_failed: false
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import random
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from natbench.metrics import ProcedureContext  # noqa: E402
from natbench.metrics.context import RunOptions  # noqa: E402
from natbench.metrics.registry import run_repetition  # noqa: E402
from natbench.metrics.throughput import ThroughputSettings  # noqa: E402
from natbench.plugins import Directions  # noqa: E402
from natbench.results import RepetitionResult, TrialRecord  # noqa: E402
from natbench.search.mlr import MlrSettings  # noqa: E402
from natbench.testing.dutmodels import Behaviour, TesterFlaws, true_ceiling  # noqa: E402
from natbench.testing.modelled import SimClock, modelled_pair  # noqa: E402
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan  # noqa: E402
from natbench.traffic.plan import ResponderMode  # noqa: E402
from natbench.workingpoint import WorkingPoint  # noqa: E402

CEILING = 300_000.0
"""C: the DUTs' median ceiling, frames per second per direction (on the search grid: the searches can report it)."""
LOWER, UPPER, ERROR = 0.0, 1_000_000.0, 1000.0
"""The search range and error (per direction)."""
FULL_S, SHORT_S, WAIT_S = 60.0, 1.0, 2.0
"""Full and short trial durations and the receive wait (seconds)."""
ALGORITHMS = ("binary", "fast", "mlr")
"""The reference first."""
VARIANTS: dict[str, dict[str, Any]] = {
    "binary": {"algorithm": "binary"},
    "fast": {"algorithm": "fast"},
    "fast-nostop": {"algorithm": "fast", "stop_failed": False},
    "fast-norule": {"algorithm": "fast", "short_fail": False},
    "mlr": {"algorithm": "mlr"},
}
"""Each algorithm column's settings (``fast-nostop``: ``stop_failed: false``; ``fast-norule``: ``short_fail:
false``)."""


@dataclass(frozen=True)
class Model:
    """One modelled DUT and tester with the acceptance its campaign uses."""

    name: str
    """The row's name."""
    behaviour: Behaviour
    """How the DUT forwards."""
    acceptance: float = 0.0
    """The campaign's acceptance (loss ratio)."""
    flaws: TesterFlaws = field(default_factory=TesterFlaws)
    """What the tester gets wrong."""
    max_invalid: int = 3
    """Retries of an invalid trial."""

    @property
    def truth(self) -> float:
        """The highest rate whose full trial passes at the median ceiling (no randomness)."""
        return true_ceiling(self.behaviour, FULL_S, self.acceptance)


def _queue(b: int, j: float) -> Model:
    return Model(f"queue {b:,}, J {j:.1%}", Behaviour(CEILING, jitter=j, queue=b))


MODELS: tuple[Model, ...] = (
    *(_queue(b, j) for b in (512, 2000, 10_000) for j in (0.005, 0.01)),
    Model("spikes", Behaviour(CEILING, jitter=0.005, queue=512, spikes_per_second=1 / 3600)),
    Model("drift", Behaviour(CEILING, queue=512, drift=0.01, drift_seconds=600.0)),
    Model("warm-up", Behaviour(CEILING, jitter=0.005, queue=512, warmup=0.03, warmup_seconds=300.0)),
    Model("tester misses", Behaviour(CEILING, startup_loss=0.00027), 1e-4, TesterFlaws(0.1, 2000), max_invalid=8),
    Model("start-up loss", Behaviour(CEILING, startup_loss=0.001, startup_seconds=0.5), 1e-4),
    Model("livelock", Behaviour(CEILING, jitter=0.005, livelock=1.0)),
    Model("loss knee", Behaviour(CEILING, jitter=0.005, knee=0.02, knee_loss=1e-4)),
)
"""The models of the module docstring."""

POINT = WorkingPoint(0, PortRange(1000, 1099), PortRange(80, 89), 64, cores=1, name="model")
"""The working point: 1,000 connections (a fill takes 10 ms of the simulated clock)."""


def settings(model: Model, algorithm: str, repetitions: int) -> ThroughputSettings:
    """Throughput's settings for ``model`` searched by ``algorithm`` (a :data:`VARIANTS` key), resolved."""
    s = ThroughputSettings(
        repetitions=repetitions,
        lower=LOWER,
        upper=UPPER,
        error=ERROR,
        duration=FULL_S,
        short_duration=SHORT_S,
        timeout=WAIT_S,
        fill_rate=100_000,
        gap=0.0,
        max_invalid=model.max_invalid,
        acceptance=model.acceptance,
        **VARIANTS[algorithm],
    )
    if algorithm == "mlr":  # the rfc2544 preset at the other searches' precision at the result
        s = s.model_copy(update={"mlr": MlrSettings(relative_width=ERROR / (model.truth + ERROR))})
    return s.resolved(model.acceptance, Directions.BIDIRECTIONAL)


@dataclass
class Campaign:
    """One campaign's outcome: the repetitions' values (None: no value) and its tester time."""

    values: list[float | None]
    """Each repetition's value."""
    seconds: float
    """Simulated tester time of the whole campaign."""
    trials: int
    """Trials stored."""

    @property
    def median(self) -> float | None:
        """The median of the values, as the tables print it (None without any)."""
        known = [v for v in self.values if v is not None]
        return float(statistics.median(known)) if known else None


def run_campaign(model: Model, algorithm: str, repetitions: int, seed: str) -> Campaign:
    """``repetitions`` repetitions of throughput at :data:`POINT` on a freshly set-up modelled DUT."""
    s = settings(model, algorithm, repetitions)
    clock = SimClock()
    tester, dut = modelled_pair(model.behaviour, flaws=model.flaws, rng=random.Random(seed), sim=clock)
    plan = TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), POINT.src_ports, POINT.dst_ports, 64, seed=1,
        responder_mode=ResponderMode.COMPUTE,
    )  # fmt: skip
    tester.prepare(plan)
    dut.setup(POINT)
    earlier: list[RepetitionResult] = []
    stored: list[TrialRecord] = []
    for rep in range(repetitions):
        tester.begin_repetition(POINT.id, "throughput", rep)
        ctx: ProcedureContext[Any] = ProcedureContext(
            tester, dut, POINT, plan, "throughput", rep, s, emit=stored.append, clock=clock, sleep=clock.advance,
            earlier=tuple(earlier), options=RunOptions(),
        )  # fmt: skip
        earlier.append(run_repetition(ctx))
    return Campaign([r.value for r in earlier], clock.now, len(stored))


def _task(job: tuple[int, int, int, int, int, int]) -> tuple[int, int, list[Campaign]]:
    m, a, first, count, repetitions, seed = job
    model, algorithm = _MODELS[m], _ALGORITHMS[a]
    out = [
        run_campaign(model, algorithm, repetitions, f"{seed}/{model.name}/{algorithm}/{i}")
        for i in range(first, first + count)
    ]
    return m, a, out


_MODELS: tuple[Model, ...] = MODELS
_ALGORITHMS: tuple[str, ...] = ALGORITHMS


def _init(models: tuple[Model, ...], algorithms: tuple[str, ...]) -> None:
    global _MODELS, _ALGORITHMS
    _MODELS, _ALGORITHMS = models, algorithms


@dataclass
class Cell:
    """One algorithm on one model over all campaigns."""

    campaigns: list[Campaign] = field(default_factory=list)

    def bias(self, truth: float) -> tuple[float, float]:
        """(mean of the campaign medians minus ``truth``, its standard error); NaN without two medians."""
        d = [c.median - truth for c in self.campaigns if c.median is not None]
        if len(d) < 2:
            return math.nan, math.nan
        return statistics.fmean(d), statistics.stdev(d) / math.sqrt(len(d))

    def above(self, truth: float) -> float:
        """Share of all repetitions with a value above ``truth``."""
        values = [v for c in self.campaigns for v in c.values]
        return sum(1 for v in values if v is not None and v > truth) / len(values) if values else math.nan

    def below(self, truth: float) -> float:
        """Share of all repetitions with a value more than one error below ``truth``, or none."""
        values = [v for c in self.campaigns for v in c.values]
        return sum(1 for v in values if v is None or v < truth - ERROR) / len(values) if values else math.nan

    def failed(self) -> int:
        """Repetitions without a value."""
        return sum(1 for c in self.campaigns for v in c.values if v is None)

    def hours(self) -> float:
        """Mean tester time of a campaign, hours."""
        return statistics.fmean(c.seconds for c in self.campaigns) / 3600


def measure(
    models: Sequence[Model], algorithms: Sequence[str], campaigns: int, repetitions: int, seed: int, jobs: int
) -> dict[tuple[int, int], Cell]:
    """Every (model, algorithm) cell over ``campaigns`` campaigns, on ``jobs`` processes."""
    chunk = max(1, min(25, campaigns // max(jobs, 1) or 1))
    work = [
        (m, a, first, min(chunk, campaigns - first), repetitions, seed)
        for m in range(len(models))
        for a in range(len(algorithms))
        for first in range(0, campaigns, chunk)
    ]
    cells = {(m, a): Cell() for m in range(len(models)) for a in range(len(algorithms))}
    parts: dict[tuple[int, int, int], list[Campaign]] = {}
    if jobs <= 1:
        _init(tuple(models), tuple(algorithms))
        done: Iterable[tuple[int, int, list[Campaign]]] = map(_task, work)
        for (m, a, first, *_rest), (_m, _a, out) in zip(work, done, strict=True):
            parts[m, a, first] = out
    else:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(jobs, initializer=_init, initargs=(tuple(models), tuple(algorithms))) as pool:
            for (m, a, first, *_rest), (_m, _a, out) in zip(work, pool.imap(_task, work), strict=True):
                parts[m, a, first] = out
    for (m, a, _first), out in sorted(parts.items()):
        cells[m, a].campaigns.extend(out)
    return cells


def table(models: Sequence[Model], algorithms: Sequence[str], cells: dict[tuple[int, int], Cell]) -> list[str]:
    """The bias table's lines (module docstring)."""
    head = f"{'model':<22} {'truth':>9} {'algorithm':<12} {'median-truth':>12} {'s.e.':>6} {'above':>6} {'low':>6}"
    head += f" {'failed':>6} {'h/camp.':>8} {'time/bin':>8}  flag"
    lines = [head, "-" * len(head)]
    for m, model in enumerate(models):
        truth = model.truth
        ref = cells[m, 0]
        ref_mean, ref_se = ref.bias(truth)
        for a, algorithm in enumerate(algorithms):
            cell = cells[m, a]
            mean, se = cell.bias(truth)
            flag = ""
            if a and math.isfinite(mean) and math.isfinite(ref_mean):
                spread = math.hypot(se, ref_se)
                if mean - ref_mean > 2 * spread:
                    flag = f"! {(mean - ref_mean) / spread:+.1f} s.e. above binary"
            ratio = ref.hours() / cell.hours() if cell.hours() else math.nan
            lines.append(
                f"{model.name if a == 0 else '':<22} {f'{truth:,.0f}' if a == 0 else '':>9} {algorithm:<12}"
                f" {mean:>+12.0f} {se:>6.0f} {cell.above(truth):>6.1%} {cell.below(truth):>6.1%} {cell.failed():>6}"
                f" {cell.hours():>8.2f} {ratio:>7.2f}x  {flag}".rstrip()
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    global UPPER
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--campaigns", type=int, default=300, help="campaigns per model and algorithm")
    ap.add_argument("--repetitions", type=int, default=10, help="repetitions per campaign")
    ap.add_argument("--seed", type=int, default=1, help="seed of the models' randomness")
    ap.add_argument("--jobs", type=int, default=2, help="processes")
    ap.add_argument("--model", action="append", default=[], help="a prefix of model names (repeatable; default: all)")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS), help="comma-separated, binary first")
    ap.add_argument("--upper", type=float, default=UPPER, help="the searches' upper bound (frames/s per direction)")
    args = ap.parse_args(argv)
    algorithms = tuple(args.algorithms.split(","))
    unknown = [a for a in algorithms if a not in VARIANTS]
    if unknown or algorithms[0] != "binary":
        ap.error(f"--algorithms: binary first, then any of {', '.join(VARIANTS)} (got {args.algorithms})")
    prefixes = [p for p in args.model if p]
    models = tuple(m for m in MODELS if not prefixes or any(m.name.startswith(p) for p in prefixes))
    if not models:
        ap.error(f"--model: no model name starts with {' or '.join(map(repr, prefixes))}")
    UPPER = args.upper
    t0 = time.perf_counter()
    cells = measure(models, algorithms, args.campaigns, args.repetitions, args.seed, args.jobs)
    print(
        f"{args.campaigns} campaigns of {args.repetitions} repetitions per model and algorithm, seed {args.seed};"
        f" throughput, bidirectional, C {CEILING:,.0f}, range [{LOWER:,.0f}, {UPPER:,.0f}], error {ERROR:,.0f},"
        f" full {FULL_S:g} s, short {SHORT_S:g} s, wait {WAIT_S:g} s"
    )
    print("median-truth: mean over campaigns of (median of its repetitions - truth), frames/s, and its standard error;")
    print("above: share of repetitions above the truth; low: more than one error below it, or without a value;")
    print("failed: repetitions without a value; h/camp.: tester hours per campaign; time/bin: binary's / this one's;")
    print("!: the mean median lies above binary's by more than 2 standard errors of the difference")
    print("\n".join(table(models, algorithms, cells)))
    print(f"run time {time.perf_counter() - t0:.0f} s on {args.jobs} process(es)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
