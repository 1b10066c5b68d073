"""Trial plumbing every procedure shares: traffic with the DUT monitor around it, the table checks,
phase-1 steps, retries of invalid trials, and the fields of search results.

Decisions a network test engineer should know (docs/engine.md has the long form):

* **Verdicts** (:func:`~natbench.judging.judge_phase`). A trial is INVALID when the tester reports it
  could not keep the rate, the achieved rate is below the intended one by more than ``rate_tolerance``, the
  counts are inconsistent, or the DUT table holds more connections than the frames sent could create (a count
  that cannot be trusted); FAIL when the loss ratio of any active direction exceeds ``acceptance`` or the DUT
  kept fewer connections than phase-1 frames arrived (the DUT did not keep up: the search goes lower), with
  the cause in ``extra["fail_cause"]`` (``loss``, ``table_shortfall``, ``validation``); PASS otherwise. Invalid
  trials are retried at the same rate, never counted; after ``max_invalid`` retries the repetition ends with
  :class:`~natbench.errors.SearchError`, which the runner records as a failed repetition (``value=None``,
  ``extra.failed``) and goes on.
* **Emptying the table** (:func:`empty_table`): a reset that ran and did not do its work (a command that failed, or
  outlived its time limit, which grows with the table) ends the repetition with its reason (a
  :class:`~natbench.errors.SearchError`, stored as a failed repetition): the run goes on with the next one.
* **A phase-1 step** empties the DUT table (``reset_connections``) first; a passing step must leave between
  ``valid`` and ``sent + table_slack`` connections in the table when the DUT can count them (fewer: FAIL,
  more: INVALID). The count is recorded with every step, failed and invalid ones too. A **fill** (the table
  loaded for a later measurement) is judged by what the DUT holds instead: :mod:`natbench.metrics.fill`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from natbench.errors import DutStepFailed, SearchError
from natbench.judging import RATE, judge_phase
from natbench.metrics.context import ProcedureContext
from natbench.metrics.settings import MetricSettings
from natbench.plugins import Directions, Dut, MonitorsCpu, ReportsSupport, SetsReceiveTimeout
from natbench.results import PhaseResult, TrialRecord, Verdict
from natbench.search import SearchOutcome


def monitor_columns(samples: Mapping[str, Sequence[Mapping[str, Any]]], interval: float) -> dict[str, Any]:
    """DUT monitor samples (``{dut: [{"t", "idle": {core: %}, ...}, ...]}``) in the stored, columnar form.

    ``{dut: {"interval", "t": [...], "idle": {core: [...]}, <other sample keys>: [...]}}``: one list
    entry per sample, each core its own series (seed 004 plots every core, never an average).
    """
    out: dict[str, Any] = {}
    for dut, rows in samples.items():
        cores: list[str] = []
        for r in rows:
            for c in r.get("idle") or {}:
                if c not in cores:
                    cores.append(c)
        col: dict[str, Any] = {"interval": interval, "t": [r.get("t") for r in rows]}
        col["idle"] = {c: [(r.get("idle") or {}).get(c) for r in rows] for c in cores}
        for key in sorted({k for r in rows for k in r} - {"t", "idle"}):
            col[key] = [r.get(key) for r in rows]
        out[str(dut)] = col
    return out


def run_traffic(
    ctx: ProcedureContext[MetricSettings], call: Callable[[], PhaseResult]
) -> tuple[PhaseResult, dict[str, Any]]:
    """Run one tester call, sampling the DUT monitor around it when asked and available.

    A tester with the optional ``set_receive_timeout`` hook first gets the metric's ``timeout``; a host-load probe
    (:attr:`~natbench.metrics.context.ProcedureContext.host_load`) starts the trial's window; a DUT with the
    optional monitor hooks (:class:`~natbench.plugins.MonitorsCpu`) is sampled when the run's
    ``monitor_interval`` is set.
    """
    if isinstance(ctx.tester, SetsReceiveTimeout):
        ctx.tester.set_receive_timeout(ctx.settings.timeout)
    if ctx.host_load is not None:  # the trial's window of the host-load probe starts with its traffic
        ctx.host_load.mark()
    interval = ctx.options.monitor_interval
    dut = ctx.dut
    if not interval or not isinstance(dut, MonitorsCpu):
        return call(), {}
    dut.start_monitor(interval)
    try:
        phase = call()
    finally:
        samples = dut.stop_monitor()
    return phase, ({"monitor": monitor_columns(samples, interval)} if samples else {})


def direction_extra(directions: Directions) -> dict[str, Any]:
    """How results and trials name their directions: ``directions`` = number of active directions
    (2 for bidirectional: reports multiply per-direction fps by it), ``direction_mode`` = the mode."""
    return {"directions": len(directions.active), "direction_mode": str(directions)}


def dut_supports(dut: Dut, operation: str) -> bool:
    """Whether ``dut`` can do ``operation`` (e.g. ``count_connections``).

    A DUT may offer the optional hook :class:`~natbench.plugins.ReportsSupport`; without it every
    protocol operation is assumed available (a DUT may still raise NotImplementedError).
    """
    return bool(dut.supports(operation)) if isinstance(dut, ReportsSupport) else True


def empty_table(ctx: ProcedureContext[MetricSettings]) -> None:
    """Empty the DUT's connection table (``reset_connections``). A reset that did not do its work (a command failed,
    outlived its time limit, or could not start beside an earlier one still running: :class:`DutStepFailed`) ends
    the repetition: :class:`SearchError` with its reason, a failed repetition the run goes on after."""
    try:
        ctx.dut.reset_connections()
    except DutStepFailed as exc:
        raise SearchError(f"emptying the DUT's connection table failed: {exc}") from exc


def count_connections(ctx: ProcedureContext[MetricSettings]) -> int | None:
    """The DUT's connection count, or None when the DUT cannot count (or checks are off)."""
    if not ctx.settings.check_table or not dut_supports(ctx.dut, "count_connections"):
        return None
    try:
        return int(ctx.dut.count_connections())
    except NotImplementedError:
        return None


def check_filled(
    ctx: ProcedureContext[MetricSettings], phase: PhaseResult, extra: dict[str, Any]
) -> tuple[Verdict, str] | None:
    """After a passing phase 1: the table must hold the connections the valid frames created.

    FAIL (``extra["fail_cause"] = "table_shortfall"``) when it holds fewer than the valid frames: the DUT forwarded
    frames without keeping their connections, so it did not establish them at this rate (siitperf's "failed to fill
    state table" is a failed step too). INVALID when it holds more than ``sent + table_slack``: a count no test
    frame can explain is not trusted either way.
    """
    count = count_connections(ctx)
    if count is None:
        return None
    extra["dut_connections"] = count
    sent = sum(c.sent for c in phase.counts.values())
    valid = sum(c.valid for c in phase.counts.values())
    if count < valid:
        extra["fail_cause"] = "table_shortfall"
        return Verdict.FAIL, f"DUT table holds {count} connections but {valid} phase-1 frames arrived"
    if count > sent + ctx.settings.table_slack:
        return Verdict.INVALID, f"DUT table holds {count} connections, more than the {sent} frames sent"
    return None


def phase1_step(
    ctx: ProcedureContext[MetricSettings],
    rate: float,
    *,
    learn: bool,
    kind: str,
    lower: float | None = None,
    upper: float | None = None,
    extra: dict[str, Any] | None = None,
) -> TrialRecord:
    """Empty the table, run phase 1 at ``rate``, judge it (incl. the table check) and store it."""
    empty_table(ctx)
    n = int((extra or {}).get("connections", ctx.point.connections))  # a capacity probe names its own count
    ctx.announce(f"{kind}: {n:,} connections at {rate:,.0f}/s", n / rate + ctx.settings.timeout if rate > 0 else None)
    started = ctx.clock()
    phase, mon = run_traffic(ctx, lambda: ctx.tester.phase1(rate, learn))
    verdict, reason = judge_phase(phase, ctx.acceptance, ctx.options.rate_tolerance, ctx.pacing_slack)
    ext: dict[str, Any] = {**(extra or {}), **mon}
    if verdict is Verdict.FAIL:
        ext["fail_cause"] = "loss"
    if verdict is Verdict.PASS:
        bad = check_filled(ctx, phase, ext)
        if bad:
            verdict, reason = bad
    else:  # the DUT's count is recorded with every trial, a failed or invalid one too (it may tell why)
        count = count_connections(ctx)
        if count is not None:
            ext["dut_connections"] = count
    return ctx.record(kind, phase, verdict, reason, started, lower=lower, upper=upper, extra=ext)


def retry(ctx: ProcedureContext[MetricSettings], what: str, run: Callable[[], TrialRecord]) -> TrialRecord:
    """Run a non-search trial, retrying invalid ones up to ``max_invalid`` times."""
    for _ in range(ctx.settings.max_invalid + 1):
        rec = run()
        if rec.verdict is not Verdict.INVALID:
            return rec
    raise SearchError(f"{what}: {ctx.settings.max_invalid + 1} invalid trials in a row; last: {rec.reason}")


def search_value(out: SearchOutcome) -> float | None:
    """The value a search result stores: the highest rate that passed; None when none did (``out.passed`` False:
    the lower bound it would report is no measurement). Such a result stores ``no_passing_rate: true``
    (:func:`search_extra`) with the final ``lower`` and ``upper``: no rate passed within [lower, upper]."""
    return out.value if out.passed else None


def search_extra(out: SearchOutcome, tester_limits: Mapping[float, str] | None = None) -> dict[str, Any]:
    """The fields a search result stores beside its value (steps, invalid trials, bounds, tester ceiling, and
    ``no_passing_rate``: True when no rate passed, see :func:`search_value`). With the repetition's
    ``tester_limits`` (:attr:`~natbench.metrics.context.ProcedureContext.tester_limits`) a search that ended at the
    tester's ceiling stores why in ``tester_bound_cause``: ``rate`` (the tester could not send faster) or
    ``clumps`` (it sent the rate, but its bursts after stalls could explain the DUT's loss there)."""
    out_extra: dict[str, Any] = {
        "no_passing_rate": not out.passed,
        "steps": out.steps,
        "invalid": out.invalid,
        "at_upper_limit": out.at_upper_limit,
        "tester_bound": out.tester_bound,
        "tester_ceiling": out.tester_ceiling,
        "lower": out.lower,
        "upper": out.upper,
    }
    if out.tester_bound and out.tester_ceiling is not None and tester_limits:
        out_extra["tester_bound_cause"] = tester_limits.get(out.tester_ceiling, RATE)
    return out_extra


def rate_from_prior(ctx: ProcedureContext[MetricSettings], rate: float | None, metric: str) -> float:
    """``rate`` when the settings give one, else the median of ``metric``'s results measured earlier at this point."""
    if rate:
        return float(rate)
    values = [v for v in ctx.prior.get(metric, ()) if v is not None]
    if not values:
        raise SearchError(f"{ctx.metric} needs a rate: set metrics.{ctx.metric}.rate or measure {metric} first")
    return float(statistics.median(values))
