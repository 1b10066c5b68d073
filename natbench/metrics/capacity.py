"""Connection tracking table capacity (siitperf's cttc.sh): an exponential, then a binary search on the
number of connections C, each probe a validated cps search.

Each probe of C connections is a cps binary search in [0, RS] (:func:`~natbench.metrics.cps.establishment_search`)
whose steps are validated as ``validation`` says (default ``every_step``, as siitperf's script: phase 1 with
learning + reverse validation at alpha x rate). A table that cannot hold C connections shows as failed steps (a
table shortfall, or reverse frames to evicted entries that do not arrive), so the probe's rate collapses.
The exponential search doubles C until the rate drops below beta x RS; the final binary search keeps C when
its rate stays at or above gamma x RS, until the interval is within ``connection_error`` connections. C moves in
whole source ports: the point's destination range stays fixed and the source range (starting at the point's
first source port) grows or shrinks, so C = n_src x |D|; a ``connection_error`` below |D| cannot be met and is
refused before anything is measured.

A search that reaches ``max_connections`` (or the source port space) without the rate collapsing never filled the
table: its result is a lower bound, stored as the largest count probed with ``extra.not_reached: true`` and no
error (never an error of 0, which would read as an exact capacity); reports mark it "not reached, >= N".

A table that expires its connections collapses the rate as a full one does: a probe of C connections at rate r
needs them for ``C / r + timeout`` (and the validation's time), so once that exceeds the DUT's connection timeout
every rate the search may keep fails. Where the DUT names its timeout, the steps that would need longer are refused
(:func:`~natbench.metrics.lifetime.guard_establishment`: the repetition fails, naming it). Where it names none, the
collapse may be the timeout's, not the table's: the result stores ``extra.timeout_unknown: true`` with the
collapsed count (``collapse_connections``), the rate it had to keep (``collapse_rate``: beta or gamma x the last
safe rate) and how long that probe needed its connections at that rate (``collapse_lifetime``); reports mark it
``[t]``: the table holds at least the value, and a DUT whose timeout is shorter than ``collapse_lifetime`` would
have collapsed there whatever its size.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Self

from pydantic import Field, model_validator

from natbench.errors import SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.cps import UNVALIDATED, CpsSettings, establishment_search, search_lifetime
from natbench.metrics.cps import estimate as probe_estimate
from natbench.metrics.declare import Column, CountRow, Lifetime, Mark
from natbench.metrics.duration import repeated
from natbench.metrics.lifetime import connection_limit, establishment_lifetime
from natbench.metrics.registry import Metric
from natbench.metrics.settings import Count, MetricSettings
from natbench.metrics.trial import dut_supports
from natbench.results import RepetitionResult
from natbench.search.binary import search_steps
from natbench.search.declare import reference_algorithm
from natbench.traffic.ports import PortRange

PROBE_SEARCH = reference_algorithm()
"""The search of every probe: the reference, the seeds' binary search, whatever ``algorithm`` says (siitperf's method;
a search that starts from the earlier repetitions' results would start from connection counts here)."""


class CapacitySettings(CpsSettings):
    """Connection tracking table capacity: exponential then binary search over the connection count.

    Each probe is a maximum-connection-establishment-rate search (lower/upper/error
    of this section) with validation.
    """

    min_connections: Count = Field(gt=0)
    """First connection count probed."""
    max_connections: Count = Field(gt=0)
    """Largest connection count probed."""
    connection_error: Count = Field(gt=0)
    """The capacity search stops when its bounds are closer than this many connections."""
    beta: float = Field(default=0.2, gt=0, lt=1)
    """Exponential search: the doubling stops at the first connection count whose rate is below beta x the
    rate of the last safe (passing) count."""
    gamma: float = Field(default=0.4, gt=0, lt=1)
    """Final binary search: a probed connection count fails (the capacity is below it) when its rate is below
    gamma x the rate of the last safe count; otherwise it becomes the new safe count (siitperf's gamma)."""

    @model_validator(mode="after")
    def _conn_bounds(self) -> Self:
        if self.min_connections >= self.max_connections:
            raise ValueError(
                f"min_connections ({self.min_connections}) must be below max_connections ({self.max_connections})"
            )
        return self


def capacity(ctx: ProcedureContext[CapacitySettings]) -> RepetitionResult:
    """Connection tracking table capacity (siitperf's cttc.sh method): exponential, then binary search on C."""
    s = ctx.settings
    n_dst = len(ctx.point.dst_ports)
    if s.connection_error < n_dst:
        raise SearchError(
            f"connection_error {s.connection_error} is finer than one source port of this point ({n_dst} destination"
            f" ports: capacity moves in steps of {n_dst} connections); set connection_error to at least {n_dst} or"
            " use fewer destination ports"
        )
    first = ctx.point.src_ports.first
    max_src = max(1, min(65535 - first + 1, s.max_connections // n_dst))
    width = max(1, s.connection_error // n_dst)  # whole ports within connection_error: the result's resolution
    start = min(max(1, math.ceil(s.min_connections / n_dst)), max_src)
    probes: list[list[float]] = []
    collapse: list[tuple[int, float]] = []
    """(source ports, the rate it had to keep) of each probe whose rate collapsed, in order."""

    def probe(n_src: int, upper: float, stop_below: float | None, stage: str) -> float:
        src = PortRange(first, first + n_src - 1)
        ctx.tester.prepare(dataclasses.replace(ctx.plan, src_ports=src, dst_ports=ctx.point.dst_ports))
        tag = {"stage": stage, "connections": n_src * n_dst}
        if upper <= s.error:
            probes.append([n_src * n_dst, 0.0])
            value = 0.0
        else:
            found = establishment_search(ctx, 0.0, upper, using=PROBE_SEARCH, stop_below=stop_below, extra=tag)
            value = found.outcome.value
            probes.append([n_src * n_dst, value])
        if stop_below is not None and value < stop_below:
            collapse.append((n_src, stop_below))
        return value

    exhausted = False
    try:
        s_s = start
        r_s = probe(s_s, s.upper, None, "initial")
        if r_s <= 0:
            raise SearchError(f"no rate passed with the starting {s_s * n_dst} connections; lower capacity_start")
        while True:
            if s_s >= max_src:
                exhausted = True
                s_t = s_s
                break
            s_t = min(2 * s_s, max_src)
            r_t = probe(s_t, r_s, s.beta * r_s, "exponential")
            if r_t < s.beta * r_s:
                break
            s_s, r_s = s_t, r_t
        # the final search bisects cells of ``width`` source ports from the last safe count, so it ends one cell
        # wide: the error is connection_error in whole ports (narrower only in a top cell cut by the doubling's end)
        base, top = s_s, s_t
        lo, hi = 0, math.ceil((top - base) / width)
        while hi - lo > 1:
            k = (lo + hi) // 2
            mid = min(base + k * width, top)
            r = probe(mid, r_s, s.gamma * r_s, "final")
            if r < s.gamma * r_s:
                hi, s_t = k, mid
            else:
                lo, s_s, r_s = k, mid, r
    finally:
        ctx.tester.prepare(ctx.plan)
    # with validation off and the table unchecked nothing sees a table that evicts old entries to make room: such a
    # result is marked unvalidated (its probes passed on forwarded frames alone), as an unvalidated cps is
    checked = s.validation != "off" or (s.check_table and dut_supports(ctx.dut, "count_connections"))
    if exhausted:
        # the table never filled: the capacity is at least the largest count probed, and no upper bound is known
        return ctx.result(
            float(s_s * n_dst),
            error=None,
            rate_at_capacity=r_s,
            probes=probes,
            not_reached=True,
            port_space_exhausted=s_s >= 65535 - first + 1,
            validated=checked,
        )
    return ctx.result(
        float(s_s * n_dst),
        error=float((s_t - s_s) * n_dst),
        rate_at_capacity=r_s,
        probes=probes,
        not_reached=False,
        port_space_exhausted=False,
        validated=checked,
        **_timeout_extra(ctx, collapse[-1], n_dst, checked),  # a search that did not exhaust ended on a collapse
    )


def _timeout_extra(
    ctx: ProcedureContext[CapacitySettings], collapsed: tuple[int, float], n_dst: int, checked: bool
) -> dict[str, Any]:
    """Whether the collapse that ended the search (``collapsed``: its source ports and the rate it had to keep) may
    be the DUT's connection timeout rather than its table (module docstring): ``timeout_unknown`` True when no
    connection limit is known and the probes were checked (an unchecked probe cannot see an expired connection, and
    is marked unvalidated instead); then the collapsed count, the rate it had to keep and how long its step needed
    the connections at that rate."""
    s = ctx.settings
    if not checked or connection_limit(s, ctx.dut) is not None:
        return {"timeout_unknown": False}
    n_src, rate = collapsed
    n = n_src * n_dst
    reverse = rate * s.alpha if s.validation != "off" else None
    return {
        "timeout_unknown": True,
        "collapse_connections": n,
        "collapse_rate": rate,
        "collapse_lifetime": establishment_lifetime(n, rate, s.timeout, reverse),
    }


def estimate(s: CapacitySettings, _connections: int, _selected: Mapping[str, MetricSettings]) -> tuple[int, float]:
    """``ceil(log2(max/min)) + ceil(log2((max - min) / connection_error))`` probes, each a cps search at
    ``max_connections / 2`` connections (validated as the cps estimate counts it)."""
    probes = math.ceil(math.log2(s.max_connections / s.min_connections)) + search_steps(
        s.min_connections, s.max_connections, s.connection_error
    )
    probe = s.model_copy(update={"repetitions": 1, "algorithm": PROBE_SEARCH.name})
    trials, seconds = probe_estimate(probe, s.max_connections // 2, {})
    return repeated(s, probes * trials, probes * seconds)


def lifetime(s: CapacitySettings, _connections: int, selected: Mapping[str, MetricSettings]) -> tuple[Lifetime, ...]:
    """A probe's slowest step: the cps search's (:func:`~natbench.metrics.cps.search_lifetime`) with the most
    connections the capacity search probes (``max_connections``)."""
    return search_lifetime(s, s.max_connections, selected)


NOT_REACHED = Column("not_reached", "bool", lambda r: r.value is not None and bool(r.extra.get("not_reached")))
"""A capacity search that reached ``max_connections`` (or the source port space) without the rate collapsing: the
table never filled, the value is a lower bound."""

TIMEOUT_UNKNOWN = Column(
    "timeout_unknown", "bool", lambda r: r.value is not None and bool(r.extra.get("timeout_unknown"))
)
"""A capacity whose collapse may be the DUT's connection timeout, which the DUT does not name: the value is a lower
bound of the table's size."""

CAPACITY = Metric(
    name="capacity",
    description="Connection tracking table capacity.",
    settings=CapacitySettings,
    run=capacity,
    unit="conn",
    order=70,
    label="capacity",
    scale_label="capacity rel. scale up",
    title="connection tracking table capacity",
    axis="connections",
    estimate=estimate,
    scaled=True,
    unit_words="connections",
    columns=(NOT_REACHED, UNVALIDATED, TIMEOUT_UNKNOWN),
    count_rows=(
        CountRow(
            "not_reached",
            "not reached reps.",
            "'not reached reps.' counts repetitions whose search probed up to max_connections (or every source port) "
            "without the rate collapsing: the table never filled, so their capacity is not reached, at least the "
            "value shown (>= N), and they have no error",
            "{title}: not reached in {n} of {total} repetitions: the search probed up to max_connections (or every "
            "source port) and the table never filled, so the capacity is at least the value shown (>= N), not that "
            "value; raise max_connections.",
        ),
    ),
    marks=(
        Mark(
            "not_reached",
            "[>=]",
            "[>=]: not reached: the capacity is at least this many connections (some repetitions never filled the "
            "table)",
            "",
        ),
        Mark(
            "unvalidated",
            "[u]",
            "[u]: some repetitions' probes were neither validated with reverse frames nor checked against the DUT's "
            "count (validation: off and no table check): a table that evicts old entries to make room for new ones "
            "would have looked as large as max_connections",
            "{n} capacity repetitions were neither validated with reverse frames nor checked against the DUT's count: "
            "marked [u] in the tables (an evicting table would look as large as max_connections).",
        ),
        Mark(
            "timeout_unknown",
            "[t]",
            "[t]: the DUT names no connection timeout, so the collapse that ended some repetitions' search may be "
            "connections expiring, not a full table: the table holds at least this many connections (a lower bound); "
            "each result stores how long its collapsed probe needed its connections (collapse_lifetime), and a "
            "timeout shorter than that collapses the rate there whatever the table's size",
            "{title}: in {n} of {total} repetitions the DUT named no connection timeout, so the rate's collapse that "
            "ended the search may be its connections expiring rather than a full table: the values (marked [t]) are "
            "lower bounds of the table's size, limited by the timeout if it is shorter than the probes needed "
            "(extra.collapse_lifetime); give the DUT's udp_timeout so that natbench refuses such steps instead.",
        ),
    ),
    lifetime=lifetime,
)
"""The connection tracking table capacity."""
