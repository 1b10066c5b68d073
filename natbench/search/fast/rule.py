"""The short-fail rule (:class:`ShortFailRule`): when a short trial proves its rate an upper bound for full trials,
when a probe is worth its time, and when the guard wants a full trial anyway (docs/engine.md, "The short-fail
rule")."""

from __future__ import annotations

from dataclasses import dataclass

from natbench.results import Verdict
from natbench.search.fast.trial import TrialVerdict


@dataclass(frozen=True)
class ShortFailRule:
    """When a short trial proves its rate an upper bound for full trials, when a short trial is worth trying before a
    full one (a probe), and when the guard wants a full trial anyway (docs/engine.md, "The short-fail rule")."""

    acceptance: float
    """Loss ratio a full trial may show in each direction."""
    full_seconds: float
    """Duration of a full trial."""
    short_seconds: float
    """Duration of a short trial."""
    full_cost: float
    """Seconds a full trial takes in all (duration, receive wait, DUT commands): what a proving probe saves."""
    short_cost: float
    """Seconds a short trial takes in all: what a probe costs."""
    probes: int = 0
    """Probes earlier repetitions at this working point ran."""
    proofs: int = 0
    """Of them, the probes that proved their rate an upper bound."""
    delivered: float | None = None
    """The most frames per second a failed short trial of an earlier repetition at this working point delivered in
    its worst direction (:attr:`TrialVerdict.delivered`; None: none known). A short trial at or below it would pass:
    no probe there."""

    def allowance(self, rate: float) -> float:
        """Frames a full trial at ``rate`` may lose in one direction: acceptance x its frames (rate x duration)."""
        return self.acceptance * rate * self.full_seconds

    def proves(self, rate: float, lost: int) -> bool:
        """Whether a short trial at ``rate`` that lost ``lost`` frames in its worst direction proves ``rate`` an upper
        bound: more than a full trial there may lose in that direction (with acceptance 0: any frame)."""
        return lost > self.allowance(rate)

    def small(self, lost: int, rate: float, value: float) -> bool:
        """Whether the loss of the short trial that set the final upper bound ``rate`` is small: below half the
        frames it offered above ``value``, the rate whose full trial passed (``(rate - value) x short_seconds / 2``).

        A DUT that forwarded ``value`` and is out of capacity at ``rate`` drops the excess; had its capacity been in
        the lower half of (value, rate), the short trial would have lost at least that many frames (less only what
        its buffers absorbed). A smaller loss is either a ceiling within half an error below ``rate``, where a full
        trial at ``rate`` is the close call, or no overload at all (a start-up transient, a one-off loss): a full
        trial at ``rate`` tells which."""
        return lost < (rate - value) * self.short_seconds / 2

    def proved_by(self, rate: float, tv: TrialVerdict) -> bool:
        """Whether the short trial ``tv`` at ``rate`` proves ``rate`` an upper bound: it failed for the DUT's sake
        (not the tester's), its loss is known and more than a full trial there may lose (:meth:`proves`)."""
        failed = tv.verdict is Verdict.FAIL and not tv.tester_limited
        return failed and tv.lost is not None and self.proves(rate, tv.lost)

    def worth_probing(self, probes: int, proofs: int) -> bool:
        """Whether a probe is worth its time: the share of probes that proved their rate, by the rule of succession
        ``(proofs + 1) / (probes + 2)`` over this point's probes so far, times a full trial's time exceeds a short
        trial's. With no probe yet: when a short trial costs less than half a full one."""
        return (proofs + 1) / (probes + 2) * self.full_cost > self.short_cost
