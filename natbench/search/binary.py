"""The RFC 2544 binary search with an error bound, as a pure state machine.

The search proposes a rate, is told the verdict of the trial at that rate,
and narrows its bounds. It never runs traffic itself, so it can be tested
without a tester.

Semantics (RFC 2544 section 26.1, as siitperf's ``binary-rate-alg.sh`` applies it):

* the search starts with ``lower`` and ``upper`` and tests the midpoint;
* a **pass** raises the lower bound to the tested rate, a **fail** lowers the
  upper bound to it;
* an **invalid** trial proves nothing about the DUT: the same rate is retried,
  at most ``max_invalid`` times in a row, then :class:`~natbench.errors.SearchError`
  is raised (invalid trials never move a bound as pass or fail);
* except when every invalid trial at a rate was the *tester* failing to send
  at that rate (``tester_limited``): after ``min(max_invalid, tester_retries)``
  retries the rate is taken as beyond the tester, the upper bound becomes the
  tester's ceiling and the search goes on below it. A result that ends at that
  ceiling is flagged ``tester_bound``: the DUT passed everything the tester
  could send, so the value is a lower bound of the DUT's performance;
* the search stops when ``upper - lower <= error``; the result is ``lower``,
  the highest rate that passed (or the initial lower bound when none did:
  :attr:`SearchOutcome.passed` is then False, and the metrics store no value but
  "no passing rate within [lower, upper]", see
  :func:`natbench.metrics.trial.search_value`).

**The rate grid.** Every rate the search tests lies on the grid ``lower + k x error``
(:class:`RateGrid`), and the midpoint is taken between grid indices (rounded down).
The final interval is therefore one cell of the grid: exactly ``error`` wide, the
error the seed tables print, whatever ``upper`` is. Only the top cell, ending at
``upper`` (never tested), is narrower when ``upper - lower`` is no multiple of
``error``; a search can end there only when no rate failed (``at_upper_limit``).
With whole-number ``lower`` and ``error`` every tested rate is a whole number, as
siitperf's are.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from natbench.errors import SearchError
from natbench.judging import is_tester_limited
from natbench.results import Verdict
from natbench.search.ceiling import known_ceiling
from natbench.search.declare import PlanQuery, SearchAlgorithm, TrialGroups
from natbench.search.grid import RateGrid
from natbench.search.outcome import SearchOutcome
from natbench.search.retry import RetryRule
from natbench.search.task import SearchTask, TrialRequest


@dataclass(frozen=True)
class SearchStep:
    """One proposed trial of a search."""

    rate: float
    """The rate to test (frames or connections per second, per direction)."""
    lower: float
    """The lower bound before this step."""
    upper: float
    """The upper bound before this step."""
    attempt: int
    """0 for the first trial at this rate, n for the n-th retry after invalid trials."""


@dataclass
class BinarySearch:
    """The RFC 2544 binary search as a state machine.

    Drive it with :meth:`next_step` and :meth:`report` until :attr:`done`.
    """

    lower: float
    """Current lower bound (a rate known, or assumed, to pass)."""
    upper: float
    """Current upper bound (a rate known, or assumed, to fail)."""
    error: float
    """Stop when ``upper - lower <= error`` (absolute, same unit as the rates); the step of the rate grid."""
    max_invalid: int = 3
    """Invalid trials allowed in a row at one rate before :class:`SearchError`."""
    stop_below: float | None = None
    """Give up early when a *failing* rate is below this (siitperf's ``stoprate`` in capacity search)."""
    tester_retries: int = 2
    """Retries of a rate the tester could not keep before that rate is taken as the tester's ceiling."""
    known_ceiling: float | None = None
    """The tester's ceiling an earlier repetition at the point found: at or above it, the first trial the tester cannot
    keep settles the rate (:class:`~natbench.search.retry.RetryRule`)."""
    tester_ceiling: float | None = field(default=None, init=False)
    initial_upper: float = field(init=False)
    grid: RateGrid = field(init=False)
    """The rates this search may test (:class:`RateGrid` from the initial bounds)."""
    _lo: int = field(default=0, init=False)  # grid index of lower
    _hi: int = field(default=0, init=False)  # grid index of upper
    _attempt: int = field(default=0, init=False)
    _pending: float | None = field(default=None, init=False)  # the rate proposed and not yet reported
    _counted: int = field(default=0, init=False)
    _invalid: int = field(default=0, init=False)
    _early: bool = field(default=False, init=False)
    _tester_streak: int = field(default=0, init=False)
    _any_passed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.lower) and math.isfinite(self.upper)) or self.lower < 0:
            raise SearchError(f"search bounds must be finite and non-negative, got [{self.lower}, {self.upper}]")
        if self.upper <= self.lower:
            raise SearchError(f"search upper bound {self.upper} must exceed lower bound {self.lower}")
        if self.error <= 0:
            raise SearchError(f"search error must be positive, got {self.error}")
        if self.max_invalid < 0:
            raise SearchError(f"max_invalid must be >= 0, got {self.max_invalid}")
        self.initial_upper = self.upper
        self.grid = RateGrid(self.lower, self.upper, self.error)
        self._lo, self._hi = 0, self.grid.top

    @property
    def done(self) -> bool:
        """True when the interval is one cell of the grid (at most ``error`` wide) or the search stopped early."""
        return self._early or self._hi - self._lo <= 1

    def next_step(self) -> SearchStep:
        """The next trial to run (the same rate again after an invalid trial)."""
        if self.done:
            raise SearchError("the search is finished; no further step")
        if self._pending is None:
            self._pending = self.grid.rate((self._lo + self._hi) // 2)
        return SearchStep(self._pending, self.lower, self.upper, self._attempt)

    def report(self, verdict: Verdict, *, reason: str = "", tester_limited: bool = False) -> None:
        """Record the verdict of the trial proposed by :meth:`next_step`.

        ``tester_limited`` marks an invalid trial caused by the tester not
        keeping the intended rate (not by the DUT's table or by counts).
        """
        if self._pending is None:
            raise SearchError("report() without a pending step")
        rate = self._pending
        if verdict is Verdict.INVALID:
            self._invalid += 1
            self._attempt += 1
            self._tester_streak = self._tester_streak + 1 if tester_limited else 0
            retry = RetryRule(self.max_invalid, self.tester_retries, self.known_ceiling)
            if retry.beyond_tester(rate, self._attempt, self._tester_streak):
                # every trial at this rate found the tester too slow: the rate is beyond the tester
                # a later ceiling is always lower: every rate after this one is below the new upper bound
                self.tester_ceiling = rate
                self.upper, self._hi = rate, self.grid.index(rate)
                self._attempt = 0
                self._tester_streak = 0
                self._pending = None
                if self.done and not self._any_passed:
                    raise SearchError(
                        f"the tester could not send at any rate tried down to {rate:g}; no rate passed"
                        + (f"; last: {reason}" if reason else "")
                    )
                return
            if retry.exhausted(self._attempt):
                raise SearchError(
                    f"{self._attempt} invalid trials in a row at rate {rate:g} (max_invalid={self.max_invalid})"
                    + (f"; last: {reason}" if reason else "")
                )
            return
        self._counted += 1
        self._attempt = 0
        self._tester_streak = 0
        self._pending = None
        if verdict is Verdict.PASS:
            self._any_passed = True
            self.lower, self._lo = rate, self.grid.index(rate)
        else:
            self.upper, self._hi = rate, self.grid.index(rate)
            if self.stop_below is not None and rate < self.stop_below:
                self._early = True

    def outcome(self) -> SearchOutcome:
        """The result of a finished search."""
        if not self.done:
            raise SearchError("the search has not finished")
        return SearchOutcome(
            value=self.lower,
            lower=self.lower,
            upper=self.upper,
            steps=self._counted,
            invalid=self._invalid,
            at_upper_limit=self.upper == self.initial_upper,
            stopped_early=self._early,
            tester_ceiling=self.tester_ceiling,
            passed=self._any_passed,
        )


def run_binary_search(search: BinarySearch, trial: Callable[[SearchStep], Verdict]) -> SearchOutcome:
    """Run ``trial`` at each proposed step until ``search`` is done; return its outcome.

    ``trial`` runs and stores one trial and returns its verdict.
    """
    while not search.done:
        step = search.next_step()
        search.report(trial(step))
    return search.outcome()


def search_steps(lower: float, upper: float, error: float) -> int:
    """Trials of one binary search: ``max(1, ceil(log2((upper - lower) / error)))``."""
    width = upper - lower
    if width <= error:
        return 1
    return max(1, math.ceil(math.log2(width / error)))


def _run(task: SearchTask) -> SearchOutcome:
    """A binary search of the task's range with its error and ``max_invalid``; every step one trial the task runs (a
    tester-limited invalid trial may lower the upper bound to the tester's ceiling; ``stop_below`` honoured)."""
    search = BinarySearch(
        task.lower,
        task.upper,
        task.error,
        max_invalid=task.max_invalid,
        stop_below=task.stop_below,
        known_ceiling=known_ceiling(task.earlier),
    )
    while not search.done:
        step = search.next_step()
        rec = task.run(TrialRequest(step.rate, step.lower, step.upper))
        search.report(rec.verdict, reason=rec.reason, tester_limited=is_tester_limited(rec))
    return search.outcome()


def _plan(query: PlanQuery) -> TrialGroups:
    """Every repetition one binary search: :func:`search_steps` full trials."""
    return ((query.repetitions * search_steps(query.lower, query.upper, query.error), None),)


SEEDS_ERROR = (
    "Error: final width (upper - lower) of the binary search in plain units, as the search ran: per direction for "
    "frame rates (not multiplied by the number of directions)."
)
"""A caption's error sentence when every search of a table is a binary one (the seeds' own)."""

BINARY = SearchAlgorithm(
    name="binary",
    description="RFC 2544 binary search with ``error``, the seeds' procedure",
    words="binary search",
    run=_run,
    stored=lambda _task, _out: {"algorithm": "binary"},
    plan=_plan,
    meaning=lambda _facts: "final width (upper - lower) of the binary search",
    summary=lambda _facts: "binary search; error: its final width",
    table_error=SEEDS_ERROR,
    validates_once=True,
    reference=True,
)
"""The RFC 2544 binary search (:class:`BinarySearch`): what the seeds ran, and every search metric's default."""
