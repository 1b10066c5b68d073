"""Bias of the fast search against the binary search on a DUT whose ceiling jitters from trial to trial.

A run is ``--repetitions`` searches of one metric at one working point (``algorithm: fast``: the first unseeded,
each later one seeded from the one before, as ``natbench.search.fast.history.prior_seed`` does); its result is the
median of the repetitions, as the tables print it. Over ``--runs`` runs per algorithm it prints the mean of the run
medians and of all results, relative to the DUT's median ceiling, and the fast search's difference from the binary
search's (the reference, measured in the same run) in percent of the ceiling and in standard errors.

The modelled DUT: every trial draws its ceiling uniformly from ``C x (1 +- J)``; a full trial passes when its rate is
at most that ceiling; a short trial (1 s beside 60 s full ones) at rate r loses ``floor((r - c) x 1 s)`` frames
above its drawn ceiling c, so with acceptance 0 the short-fail rule proves r an upper bound when it lost any (the
model has no queue, no spikes, no invalid trials: only the jitter). The numbers are those of seed 004 Table 4's
throughput: C = 2,300,437 frames/s per direction (on no grid rate), the range [0, 7.44M], error 1,000.

    python bench/search_bias.py                      # J = 0, 0.5, 1, 3 %; 400 runs of 20 repetitions (about a minute)
    python bench/search_bias.py --jitter 0.01 --runs 2000
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from natbench.results import Verdict  # noqa: E402
from natbench.search.binary import BinarySearch, run_binary_search  # noqa: E402
from natbench.search.fast import FastStep, ShortFailRule, TrialVerdict, run_fast_search  # noqa: E402

CEILING = 2_300_437.0
LOWER, UPPER, ERROR = 0.0, 7_440_000.0, 1000.0
FULL_S, SHORT_S = 60.0, 1.0
RULE = ShortFailRule(0.0, FULL_S, SHORT_S, full_cost=FULL_S + 3.0, short_cost=SHORT_S + 3.0)


def _ceiling(rng: random.Random, jitter: float) -> float:
    return CEILING * (1 + jitter * (2 * rng.random() - 1))


def binary_run(rng: random.Random, jitter: float, repetitions: int) -> list[float]:
    """The values of ``repetitions`` independent binary searches."""
    out = []
    for _ in range(repetitions):
        res = run_binary_search(
            BinarySearch(LOWER, UPPER, ERROR),
            lambda s: Verdict.PASS if s.rate <= _ceiling(rng, jitter) else Verdict.FAIL,
        )
        out.append(res.value)
    return out


def _fast_trial(rng: random.Random, jitter: float) -> Callable[[FastStep], TrialVerdict]:
    def trial(step: FastStep) -> TrialVerdict:
        c = _ceiling(rng, jitter)
        seconds = FULL_S if step.full else SHORT_S
        lost = max(0, math.floor((step.rate - c) * seconds))
        return TrialVerdict(Verdict.PASS if lost == 0 else Verdict.FAIL, lost=lost)

    return trial


def fast_run(rng: random.Random, jitter: float, repetitions: int, rule: ShortFailRule | None) -> list[float]:
    """The values of ``repetitions`` fast searches, each seeded from the one before (value + error / 2)."""
    out: list[float] = []
    seed: float | None = None
    for _ in range(repetitions):
        res = run_fast_search(_fast_trial(rng, jitter), lower=LOWER, upper=UPPER, error=ERROR, seed=seed, rule=rule)
        out.append(res.value)
        seed = res.value + res.error / 2 if res.passed else None
    return out


def _summary(runs: list[list[float]]) -> tuple[float, float, float]:
    """(mean of the run medians, its standard error, mean of all values), relative to the ceiling."""
    medians = [statistics.median(r) / CEILING for r in runs]
    values = [v / CEILING for r in runs for v in r]
    return statistics.fmean(medians), statistics.stdev(medians) / math.sqrt(len(medians)), statistics.fmean(values)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jitter", type=float, action="append", help="relative jitter J (repeatable)")
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--repetitions", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    jitters = args.jitter or [0.0, 0.005, 0.01, 0.03]
    print(f"ceiling {CEILING:,.0f}, range [{LOWER:,.0f}, {UPPER:,.0f}], error {ERROR:,.0f} ({ERROR / CEILING:.3%})")
    print(f"{args.runs} runs of {args.repetitions} repetitions per algorithm; values relative to the ceiling")
    print(
        f"{'jitter':>7} {'algorithm':<12} {'mean median':>12} {'s.e.':>8} {'mean value':>11}"
        f" {'vs binary':>10} {'s.e.s':>6}"
    )
    algorithms: dict[str, Callable[[random.Random, float, int], list[float]]] = {
        "binary": binary_run,
        "fast": lambda rng, j, n: fast_run(rng, j, n, RULE),
        "fast-norule": lambda rng, j, n: fast_run(rng, j, n, None),
    }
    for jitter in jitters:
        rng = random.Random(args.seed)
        ref: tuple[float, float, float] | None = None
        for name, run in algorithms.items():
            mean, se, mean_value = _summary([run(rng, jitter, args.repetitions) for _ in range(args.runs)])
            if ref is None:
                ref = (mean, se, mean_value)
                diff = ""
            else:
                d = mean - ref[0]
                spread = math.hypot(se, ref[1])
                diff = f"{d:>+10.4%} " + (f"{d / spread:>+6.1f}" if spread else f"{'-':>6}")
            print(f"{jitter:>7.1%} {name:<12} {mean:>12.5%} {se:>8.4%} {mean_value:>11.5%} {diff}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
