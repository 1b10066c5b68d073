"""How long connections must live, and how long the DUT keeps them: the DUT-timeout guard (RFC 9693: no connection
may expire while a test relies on it).

:func:`connection_timeout` reads the DUT's shortest connection timeout from its facts; :func:`connection_limit` is
the limit a procedure must stay within (the smaller of the metric's ``refill_after`` and that timeout).
:func:`establishment_lifetime` is the time a connection-establishment step (phase 1, and the reverse frames of a
validation) needs its connections for; :func:`guard_establishment` refuses a step that needs longer than the limit:
it stores an INVALID trial without sending traffic (``extra.invalid_cause = "dut_timeout"``) and ends the
repetition with :class:`~natbench.errors.SearchError`. Retrying is pointless (the same rate needs the same time) and
a lower rate needs longer still, so neither a retry nor a FAIL (which would move the search lower) is honest: the
repetition is stored as failed, naming rate, lifetime and timeout, never reported as a DUT limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from natbench.errors import DutError, SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.declare import Lifetime
from natbench.metrics.settings import FilledTableSettings, MetricSettings
from natbench.plugins import Dut
from natbench.results import PhaseResult, Verdict

TIMEOUT_FACTS = ("udp_timeout", "udp_timeout_stream")
"""DUT facts (or recipe parameters under ``facts["params"]``) holding connection timeouts in seconds: iptables and
nftables read both from the kernel; Jool and PF recipes have ``udp_timeout`` as a parameter."""


def connection_timeout(dut: Dut) -> float | None:
    """The shortest connection timeout (seconds) the DUT's facts name, None when they name none.

    A DUT of several devices (``{name: facts}``) gives the shortest of its members'. The guard measures from the
    start of the fill, which over-counts each connection's idle time (a DUT refreshes the timer on every packet):
    the guard may refill early, never late.
    """
    read = getattr(dut, "facts", None)
    if not callable(read):  # a DUT (or a test's stand-in) without facts names no timeout
        return None
    try:
        facts = read()
    except (NotImplementedError, OSError, DutError):  # facts that cannot be read name no timeout
        return None
    return _shortest(facts, depth=0)


def _shortest(facts: Mapping[str, Any], depth: int) -> float | None:
    found: list[float] = []
    for key in TIMEOUT_FACTS:
        for source in (facts, facts.get("params")):
            value = source.get(key) if isinstance(source, Mapping) else None
            if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
                found.append(float(value))
    if not found and depth == 0:  # a DUT of several devices: {name: facts}
        found = [t for v in facts.values() if isinstance(v, Mapping) and (t := _shortest(v, 1)) is not None]
    return min(found) if found else None


def connection_limit(settings: MetricSettings, dut: Dut) -> tuple[float, str] | None:
    """Seconds after the start of phase 1 by which everything relying on its connections must have ended, and
    where the limit comes from (``refill_after`` or ``dut_timeout``); None when neither is known.

    ``refill_after`` (phase-2 metrics) may only shorten the limit: a value above the DUT's own timeout would let
    connections expire, so the smaller of the two wins.
    """
    given = getattr(settings, "refill_after", None)
    limits: list[tuple[float, str]] = []
    if given:
        limits.append((float(given), "refill_after"))
    timeout = connection_timeout(dut)
    if timeout is not None:
        limits.append((timeout, "dut_timeout"))
    return min(limits, key=lambda lim: lim[0]) if limits else None


def establishment_lifetime(
    connections: int, rate: float, timeout: float, reverse: float | None = None, gap: float = 0.0
) -> float:
    """Seconds the connections of one step must live: phase 1 sends ``connections`` frames at ``rate`` and waits
    ``timeout`` for the last ones; a validated step then waits ``gap`` and sends one reverse frame per connection at
    ``reverse`` and waits ``timeout`` again (RFC 9693, Sections 4.5 and 4.6). Infinite for a rate of 0."""
    if rate <= 0 or (reverse is not None and reverse <= 0):
        return float("inf")
    need = connections / rate + timeout
    if reverse is not None:
        need += gap + connections / reverse + timeout
    return need


def filled_table_lifetime(
    s: FilledTableSettings, connections: int, _selected: Mapping[str, MetricSettings]
) -> tuple[Lifetime, ...]:
    """The lifetime model of a metric that fills the table, then runs a phase-2 trial on it: ``N / fill_rate +
    timeout + gap + duration + timeout`` (RFC 9693: nothing may expire before the trial ends)."""
    need = connections / s.fill_rate + s.timeout + s.gap + s.duration + s.timeout
    return (Lifetime(need, "phase 1 + gap + phase 2", refused=False),)


def guard_establishment(
    ctx: ProcedureContext[MetricSettings],
    rate: float,
    reverse: float | None,
    *,
    gap: float = 0.0,
    lower: float | None = None,
    upper: float | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Refuse a connection-establishment step whose connections would have to outlive the limit.

    Nothing is sent: an INVALID ``phase1`` trial without counts is stored (``extra.invalid_cause = "dut_timeout"``,
    ``lifetime``, ``limit``, ``limit_source``) and :class:`~natbench.errors.SearchError` ends the repetition. A
    step within the limit (or with no limit known) returns and runs as before.
    """
    found = connection_limit(ctx.settings, ctx.dut)
    if found is None:
        return
    limit, source = found
    n = int((extra or {}).get("connections", ctx.point.connections))
    need = establishment_lifetime(n, rate, ctx.settings.timeout, reverse, gap)
    if need <= limit:
        return
    what = "phase 1" if reverse is None else "phase 1 and its validation"
    reason = (
        f"{what} of {n:,} connections at {rate:g}/s needs them for {need:.1f} s, longer than the {source} of "
        f"{limit:g} s: connections would expire before they are counted or validated (no traffic sent); "
        "use fewer connections or raise the DUT's timeout"
    )
    started = ctx.clock()
    phase = PhaseResult(intended_rate=rate, achieved_rate=0.0, duration=0.0, counts={})
    ext = {**(extra or {}), "invalid_cause": "dut_timeout", "lifetime": need, "limit": limit, "limit_source": source}
    ctx.record("phase1", phase, Verdict.INVALID, reason, started, lower=lower, upper=upper, extra=ext)
    raise SearchError(reason)
