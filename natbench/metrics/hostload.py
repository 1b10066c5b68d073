"""When other processes on a shared host took a share of its CPUs that can change a result: the rule, the column it
flags and the mark and warning reports show (for every metric's results).

In the local lab the tester and the DUT run on this machine's CPUs, and what they measure is bound by CPU: at the
tester's ceiling its CPU is saturated, at the DUT's its data-path CPU (docs/lab.md). A CPU-second another process
takes there is one the bound side may have needed, so others taking a share s of the lab's CPUs can lower a rate
(or stretch a timed deletion) by up to about s. Every trial stores that share (``extra.host_load``, measured by the
lab: :mod:`natbench.testbed.lab.hostload`) with the bound its counters may be off by; a repetition stores the
share over its whole span (``extra.host_load``: trials too short for the counters to tell one by one add up there)
and the largest share beyond the bound, in that span or in a trial of it that is no table fill
(``extra.host_others``).

**The rule** (:func:`tolerance`): what a result can absorb without changing is its own precision. A search reports
a rate to within its ``error``: a share up to ``error / value`` cannot move it by a whole error (its rates are one
error apart), a larger one can. A result without an error (a deletion time, a loss ratio at a fixed rate, a
latency) tells no precision of its own, and every CPU-second taken from it changes it in proportion (a delete-all is
a process that shares its CPU with any other): any share measurably above zero, beyond the bound, can change it. A
repetition whose share exceeds its tolerance is flagged ``host_busy``; the tables mark its cells ``[h]`` and the
summary warns.
"""

from __future__ import annotations

from natbench.metrics.declare import Column, Mark
from natbench.results import RepetitionResult


def tolerance(r: RepetitionResult) -> float:
    """The share of the host's CPUs other processes may take without changing ``r``: its relative precision,
    ``error / value`` for a search's result; 0 for a result without an error."""
    if r.error is None or not r.value:
        return 0.0
    return abs(float(r.error) / float(r.value))


def host_busy(r: RepetitionResult) -> bool:
    """Whether other processes took more of the host's CPUs during a trial of ``r`` than ``r`` can absorb (module
    docstring); False where nothing was measured."""
    share = r.extra.get("host_others")
    if r.value is None or not isinstance(share, int | float) or isinstance(share, bool):
        return False
    return float(share) > tolerance(r)


HOST_COLUMNS: tuple[Column, ...] = (Column("host_busy", "bool", host_busy),)
"""The column every result gets: ``host_busy`` (:func:`host_busy`)."""

HOST_MARKS: tuple[Mark, ...] = (
    Mark(
        "host_busy",
        "[h]",
        "[h]: while some repetitions were measured, other processes on the host took more of the tester's and the "
        "DUT's CPUs than the result can absorb (beyond its search error, or measurably for a result without one; "
        "each trial stores the share in extra.host_load): the value may be theirs as much as the DUT's",
        "{title}: in {n} of {total} repetitions other processes on the host took more of the tester's and the DUT's "
        "CPUs than the result can absorb (marked [h]): measure those points again on a quiet host.",
    ),
)
"""The mark of every result flagged ``host_busy``."""
