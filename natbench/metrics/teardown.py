"""Connection tear-down rate (RFC 9693): N / (T_N - T_0) with the DUT's own delete-all command.

The table is loaded with N connections (a fill at ``fill_rate``, :mod:`natbench.metrics.fill`, kept only when the
DUT holds all N: its count, or, where it cannot count, a validation sample over the learned tuples); N is the
point's connections, verified in the table (the DUT's own count, which may include its management connections, is
stored beside it as ``dut_connections`` and is not used as N). A fill nothing could verify leaves N the tester's
valid phase-1 frames and the result ``connections_verified: false``, shown as unverified wherever it is reported.
``T_N = timed_flush()`` deletes them, then ``T_0 = timed_flush()`` times the delete-all on the empty table.
Both times are stored as trials (``flush_filled``, ``flush_empty``) and in the result. With
``empty_repetitions`` the empty-table time is measured in the first repetitions of a point only and its
median reused later (seed 000, 3.4). A timed delete that did not do its work (it failed, or outlived its time limit,
which grows with the table) ends the repetition with that reason; the run goes on.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from pydantic import Field

from natbench.errors import DutStepFailed, SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Column, Lifetime, Mark, OwnTable, TableRow, finite, number, stats
from natbench.metrics.duration import STEP_OVERHEAD, repeated
from natbench.metrics.fill import fill_table
from natbench.metrics.memory import FillMemory
from natbench.metrics.registry import Metric
from natbench.metrics.settings import FillSettings, MetricSettings
from natbench.metrics.teardown_resolution import advised_connections
from natbench.metrics.trial import count_connections, dut_supports
from natbench.results import RepetitionResult, Verdict
from natbench.values import MAX_REPETITIONS

MAX_EMPTY_SAMPLES = 100
"""Most empty-table delete timings one repetition takes."""


class TeardownSettings(FillSettings):
    """Connection tear-down rate: N / (T_N - T_0) with the DUT's own delete-all command."""

    empty_repetitions: int | None = Field(default=None, ge=1, le=MAX_REPETITIONS)
    """Time the empty-table delete (T_0) in the first this many repetitions of a working point only; later
    repetitions reuse the median of those T_0 (seed 000, 3.4: one T_0 series for Jool). None: every repetition."""
    empty_samples: int = Field(default=3, ge=1, le=MAX_EMPTY_SAMPLES)
    """Times the empty-table delete is timed in a row by a repetition that times it: T_0 is their median, and
    their spread (largest minus smallest) is the noise the filled-table delete must stand out of; a deletion time
    T_N - T_0 within that spread is too few connections to time (the repetition fails and says how many to use).
    1: one timing, no spread known (only a T_N at or below T_0 fails)."""


def teardown(ctx: ProcedureContext[TeardownSettings]) -> RepetitionResult:
    """Connection tear-down rate N / (T_N - T_0): timed delete of a filled, then of an empty table."""
    rate = float(ctx.settings.fill_rate)
    # no reverse frames follow; a DUT that cannot count is checked by a validation sample over learned tuples
    counts = ctx.settings.check_table and dut_supports(ctx.dut, "count_connections")
    kept = fill_table(ctx, rate, learn=not counts, memory=FillMemory(ctx.dut, ctx.sleep))
    fill = kept.record
    n = kept.connections  # N verified in the table; unverified: the tester's valid phase-1 frames
    dut_count = fill.extra.get("dut_connections")  # the DUT's own count: recorded beside N, never N
    if ctx.settings.gap > 0:
        ctx.sleep(ctx.settings.gap)
    ctx.announce(f"deleting the {n:,} connections (timed)", None)
    started = ctx.clock()
    t_n = _timed_delete(ctx, f"the {n:,} connections")
    beside = {} if dut_count is None else {"dut_connections": dut_count}
    ctx.record("flush_filled", None, Verdict.PASS, "", started, value=t_n, extra={"connections": n, **beside})
    left = count_connections(ctx)
    if left:
        raise SearchError(f"the DUT still held {left} connections after its delete-all; T_0 is not an empty-table time")
    reused = _reused_t0(ctx)
    if reused is None:
        empties: list[float] = []
        for _ in range(ctx.settings.empty_samples):
            started = ctx.clock()
            empties.append(_timed_delete(ctx, "the empty table"))
            ctx.record(
                "flush_empty",
                None,
                Verdict.PASS,
                "",
                started,
                value=empties[-1],
                extra={} if left is None else {"dut_connections_before": left},
            )
        t_0 = float(statistics.median(empties))
        spread = max(empties) - min(empties)
        t_0_low = min(empties)
    else:
        t_0, spread = reused
        t_0_low = t_0 - spread / 2
    deletion = t_n - t_0
    if deletion <= spread or deletion <= 0:
        raise SearchError(_too_few(ctx, n, t_n, t_0, spread, t_0_low))
    # T_N / T_0 are the methodology's names (T_0 = the value used); filled_delete_s / empty_delete_s the
    # report columns' (empty_delete_s only when this repetition timed the empty table)
    return ctx.result(
        n / deletion,
        T_N=t_n,
        T_0=t_0,
        filled_delete_s=t_n,
        empty_delete_s=t_0 if reused is None else None,  # reports take min/max over measured T_0 only
        deletion_time=deletion,
        connections=n,
        connections_verified=kept.verified,
        T_0_measured=reused is None,
        T_0_spread=spread,
        **beside,
    )


def _timed_delete(ctx: ProcedureContext[TeardownSettings], what: str) -> float:
    """Seconds the DUT's timed delete-all took; one that did not do its work ends the repetition (SearchError)."""
    try:
        return float(ctx.dut.timed_flush())
    except DutStepFailed as exc:
        raise SearchError(f"the timed delete of {what} failed: {exc}") from exc


def _too_few(
    ctx: ProcedureContext[TeardownSettings], n: int, t_n: float, t_0: float, spread: float, t_0_low: float
) -> str:
    """Why a deletion time within the empty-table delete's noise is no measurement, and how many connections
    would be: ``RESOLUTION`` x the spread at the deletion rate seen (this repetition's, as far as it shows one,
    else the earlier repetitions' at this point; :mod:`natbench.metrics.teardown_resolution` applies the same rule
    before a campaign runs)."""
    rates = [float(r.value) for r in ctx.earlier if r.value]
    rate = n / (t_n - t_0_low) if t_n > t_0_low else (statistics.median(rates) if rates else None)
    advice = (
        f"use at least {max(advised_connections(spread, rate), n + 1):,} connections"
        if rate
        else f"use many more connections (at least {10 * n:,})"
    )
    return (
        f"too few connections to time: deleting {n:,} took {t_n:.4g} s, the empty table {t_0:.4g} s"
        f" +- {spread / 2:.2g} s; {advice}"
    )


def _reused_t0(ctx: ProcedureContext[TeardownSettings]) -> tuple[float, float] | None:
    """(median T_0, median spread) of this point's earlier repetitions once ``empty_repetitions`` of them timed it,
    else None."""
    k = ctx.settings.empty_repetitions
    if not k or ctx.repetition < k:
        return None
    measured = [
        r
        for r in ctx.earlier
        if r.value is not None and r.extra.get("T_0_measured", True) and r.extra.get("T_0") is not None
    ]
    if len(measured) < k:  # some of the first k failed: keep timing until k T_0 values exist
        return None
    spreads = [float(r.extra.get("T_0_spread") or 0.0) for r in measured]
    return float(statistics.median(float(r.extra["T_0"]) for r in measured)), float(statistics.median(spreads))


def estimate(s: TeardownSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """Loading N connections (``N / fill_rate + timeout + gap``) per repetition, plus ``empty_samples``
    empty-table deletes in each of the ``empty_repetitions`` that time them; the delete time itself is unknown
    beforehand and left out (seed 000 Figure 5: up to ~40 minutes for 800M connections)."""
    trials, seconds = repeated(s, 1, connections / s.fill_rate + s.timeout + s.gap + STEP_OVERHEAD)
    empty = min(s.empty_repetitions or s.repetitions, s.repetitions) * s.empty_samples  # T_0 in the first k only
    return trials + empty, seconds + empty * STEP_OVERHEAD


def lifetime(s: TeardownSettings, connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[Lifetime, ...]:
    """The fill's connections must live through phase 1, its receive wait, the gap and the timed delete-all (timed
    from the start, with a second receive wait as margin): ``N / fill_rate + timeout + gap + timeout``."""
    need = connections / s.fill_rate + s.timeout + s.gap + s.timeout
    return (Lifetime(need, "phase 1 + gap before the timed delete", refused=False),)


def teardown_figures(cols: Mapping[str, Sequence[float]], connections: float) -> dict[str, float]:
    """A working point's tear-down figures from its repetitions (seed 000 Figure 5): T_N and T_0 median / min / max,
    ``deletion_time`` = median T_N - median T_0 and ``rate`` = N / deletion_time, N the connections the fills created
    (else the point's); ``rep_rate_*``: the per-repetition rates the engine stored, for reference."""
    filled, empty, created = cols["filled_delete_s"], cols["empty_delete_s"], finite(cols["created_connections"])
    n = max(created) if created else connections
    out: dict[str, float] = {"experiments": float(len(finite(filled))), "connections": n}
    for name, values in (("filled", filled), ("empty", empty), ("rep_rate", cols["reported"])):
        out[f"{name}_median"], out[f"{name}_min"], out[f"{name}_max"] = stats(values)
    deletion = out["filled_median"] - out["empty_median"]
    out["deletion_time"] = deletion
    out["rate"] = n / deletion if deletion > 0 else float("nan")
    return out


FIGURES = (
    "experiments",
    "connections",
    "filled_median",
    "filled_min",
    "filled_max",
    "empty_median",
    "empty_min",
    "empty_max",
    "deletion_time",
    "rate",
    "rep_rate_median",
    "rep_rate_min",
    "rep_rate_max",
)
"""What :func:`teardown_figures` returns, in the order of the per-point summary."""

TABLE = OwnTable(
    title="Connection tear-down rate against the number of connections",
    caption="Delete times in seconds (the DUT's own delete-all command on the filled and on the empty connection "
    "tracking table); conn. deletion time = median filled - median empty; conn. tear d. rate = num. conn. / conn. "
    "deletion time, in {scale}connections per second.",
    figures=teardown_figures,
    names=FIGURES,
    rows=(
        TableRow("full contr. del med", "filled_median", "seconds"),
        TableRow("full contr. del min", "filled_min", "seconds"),
        TableRow("full contr. del max", "filled_max", "seconds"),
        TableRow("empty contr. del med", "empty_median", "seconds"),
        TableRow("empty contr. del min", "empty_min", "seconds"),
        TableRow("empty contr. del max", "empty_max", "seconds"),
        TableRow("conn. deletion time", "deletion_time", "seconds"),
        TableRow("conn. tear d. rate", "rate", "rate", marked=True),
    ),
    value="rate",
    value_legend="N / (median T_N - median T_0)",
    series=(("filled", "filled table T_N"), ("empty", "empty table T_0")),
    series_axis="delete time (s)",
    series_title="delete-all time (median, min..max)",
    plot_caption="Connection tear-down: deletion time of a full and of an empty table (s) and the tear-down rate "
    "(connections per second) against the number of connections.",
)
"""The tear-down table (seed 000 Figure 5, Figure 9; seed 001's PF table) and plot."""


def _stored(r: RepetitionResult, name: str, methodology: str) -> float:
    """A delete time under the report's name, else under the methodology's (``T_N``, ``T_0``)."""
    return number(r.extra.get(name, r.extra.get(methodology)))


TEARDOWN = Metric(
    name="teardown",
    description="Connection tear-down rate.",
    settings=TeardownSettings,
    run=teardown,
    unit="conn/s",
    order=60,
    label="tear-down",
    scale_label="tear-down rel. scale up",
    title="connection tear-down rate",
    axis="connections per second",
    estimate=estimate,
    estimate_note="the connection delete time is not known in advance and is not included",
    scaled=True,
    unit_words="connections per second",
    columns=(
        # T_N / T_0 (the methodology's names) or the report's names; N the connections the fill created
        Column("filled_delete_s", "float64", lambda r: _stored(r, "filled_delete_s", "T_N"), "none"),
        Column("empty_delete_s", "float64", lambda r: _stored(r, "empty_delete_s", "T_0"), "none"),
        Column("created_connections", "float64", lambda r: number(r.extra.get("connections")), "none"),
        Column("unverified", "bool", lambda r: r.value is not None and r.extra.get("connections_verified") is False),
    ),
    marks=(
        Mark(
            "unverified",
            "[u]",
            "[u]: N, the connections deleted, was not verified (the DUT cannot count them and no validation sample "
            "checked the fill): the tester's valid phase-1 frames were taken for N, so against a DUT that keeps "
            "fewer connections than it forwards the rate is too high",
            "{n} tear-down repetitions divide by an N nothing verified (the DUT cannot count and no validation sample "
            "checked the fill): marked [u] in the tables; against a DUT that keeps fewer connections than it "
            "forwards their rate is too high.",
        ),
    ),
    table=TABLE,
    memory_trials=("fill",),
    lifetime=lifetime,
)
"""The connection tear-down rate."""
