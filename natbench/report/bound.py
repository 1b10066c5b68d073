"""What bounds a result at the tester's ceiling: the DUT's headroom, or the host the tester and the DUT share.

A search that ended at the tester's ceiling (``bound_by_rate``) shows that the DUT passed every rate the tester
could send: its value is a lower bound of the DUT's. Whether the DUT could have done more shows in its data-path
CPUs at that rate (the report's ``dut_cpu_busy``, from the monitored trials):

* **headroom** (``bound_headroom``): the DUT's data-path CPUs were busy for less than ``value / (value + error)``
  of the time: at the same CPU cost per frame they had room for at least one more search error, so the DUT can do
  more than the value says;
* **the host** (``bound_host``): no such room, and the tester and the DUT run on one host's CPUs (a local lab: the
  DUT fact :data:`~natbench.plugins.dut.SHARES_HOST`): the tester's ceiling and the DUT's saturated CPUs are one limit,
  the host's, and neither side's own can be told apart;
* **a lower bound only** (``bound_lower``): no DUT CPU figure at that rate, or the DUT's CPUs were saturated on a
  DUT of its own (then both reached their limits): the value is a lower bound, and nothing shows that the DUT can
  do more.

The three are exclusive and cover every tester-bound repetition; reports say which (the summary's warnings,
:data:`~natbench.metrics.declare.SEARCH_ROWS`), never that the DUT can do more where it showed no headroom.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from natbench.plugins.dut import SHARES_HOST

BOUND_COLUMNS = ("bound_headroom", "bound_host", "bound_lower")
"""The columns :func:`with_bound_diagnosis` adds (module docstring)."""


def shares_host(duts: Mapping[str, Any]) -> bool:
    """Whether a DUT of the run's stored facts (``{name: facts}``, a DUT group's members nested one level deeper) runs
    on the tester's host (:data:`~natbench.plugins.dut.SHARES_HOST`)."""
    for facts in duts.values():
        if not isinstance(facts, Mapping):
            continue
        if facts.get(SHARES_HOST) is True:
            return True
        if any(isinstance(m, Mapping) and m.get(SHARES_HOST) is True for m in facts.values()):
            return True
    return False


def has_headroom(busy: float, value: float, error: float) -> bool:
    """Whether a DUT whose data-path CPUs were ``busy`` % busy at ``value`` had room for one more ``error``: busy below
    ``100 x value / (value + error)`` (a rate in proportion to the CPU time spent on it)."""
    if not (math.isfinite(busy) and math.isfinite(value) and math.isfinite(error)) or value <= 0 or error <= 0:
        return False
    return busy < 100.0 * value / (value + error)


def with_bound_diagnosis(results: pd.DataFrame, host_shared: bool) -> pd.DataFrame:
    """``results`` (with ``dut_cpu_busy``: :func:`~natbench.report.aggregate.with_dut_cpu_busy`) with
    :data:`BOUND_COLUMNS`; ``host_shared``: the tester and the DUT share the host's CPUs (:func:`shares_host`)."""
    out = results.copy()
    n = len(out)
    if not n or "bound_by_rate" not in out:
        for c in BOUND_COLUMNS:
            out[c] = pd.Series(False, index=out.index, dtype=bool)
        return out
    bound = out["bound_by_rate"].fillna(False).astype(bool).tolist()
    busy = pd.to_numeric(out.get("dut_cpu_busy", pd.Series(math.nan, index=out.index)), errors="coerce").tolist()
    values = pd.to_numeric(out["value"], errors="coerce").tolist()
    errors = pd.to_numeric(out["error"], errors="coerce").tolist()
    headroom, host, lower = [], [], []
    for b, cpu, v, e in zip(bound, busy, values, errors, strict=True):
        room = b and has_headroom(float(cpu), float(v), float(e))
        by_host = b and not room and host_shared and math.isfinite(float(cpu))
        headroom.append(room)
        host.append(by_host)
        lower.append(b and not room and not by_host)
    out["bound_headroom"] = pd.Series(headroom, index=out.index, dtype=bool)
    out["bound_host"] = pd.Series(host, index=out.index, dtype=bool)
    out["bound_lower"] = pd.Series(lower, index=out.index, dtype=bool)
    return out
