"""What a run measured of its DUTs' delete-all: the figures ``natbench plan --from RUN`` checks tear-down N with.

From the timed deletes a tear-down stored (``flush_filled``, ``flush_empty`` trials), per repetition that timed its
empty table: N (the connections its fill verified), T_N, T_0 (the median of the empty-table times) and their spread.
The run's :class:`~natbench.metrics.teardown_resolution.DeletionProfile` is

* rate: the median of N / (T_N - T_0) over the repetitions at the largest N that timed a positive deletion (where
  the noise weighs least), failed ones included: a "too few connections" repetition still shows a rate;
* noise: the median spread of the empty-table times over every repetition that timed the empty table 2 or more
  times.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from natbench.metrics.teardown import TEARDOWN
from natbench.metrics.teardown_resolution import DeletionProfile

if TYPE_CHECKING:
    from natbench.report.load import Run


def measured_deletion(run: Run) -> tuple[DeletionProfile | None, str]:
    """(the run's deletion profile, where it came from); None, with the reason, when the run timed no tear-down with a
    positive deletion time or never timed an empty table twice in a repetition."""
    t = run.trials
    if not t.empty:
        t = t[(t["metric"].astype(str) == TEARDOWN.name) & t["kind"].astype(str).isin(("flush_filled", "flush_empty"))]
    if t.empty:
        return None, f"run {run.path} timed no tear-down"
    rates: dict[int, list[float]] = {}
    spreads: list[float] = []
    for _, rep in t.groupby(["point_id", "repetition"], observed=True, sort=False):
        filled = rep[rep["kind"].astype(str) == "flush_filled"]
        empties = [float(v) for v in rep.loc[rep["kind"].astype(str) == "flush_empty", "value"].dropna()]
        if filled.empty or not empties:
            continue  # a repetition that reused an earlier T_0, or was cut off
        if len(empties) >= 2:
            spreads.append(max(empties) - min(empties))
        extra = filled["extra"].iloc[0]
        n = extra.get("connections") if isinstance(extra, dict) else None
        deletion = float(filled["value"].iloc[0]) - statistics.median(empties)
        if isinstance(n, int) and n > 0 and deletion > 0:
            rates.setdefault(n, []).append(n / deletion)
    if not rates or not spreads:
        missing = "a positive deletion time" if not rates else "an empty table timed twice in a repetition"
        return None, f"run {run.path} stored no tear-down with {missing}"
    largest = max(rates)
    where = (
        f"run {run.name} ({run.path}): median of {len(rates[largest])} tear-down(s) of {largest:,} connections, "
        f"median empty-table spread of {len(spreads)} repetition(s)"
    )
    return DeletionProfile(statistics.median(rates[largest]), statistics.median(spreads), where), where
