"""What the trials of one fast search proved and told (:class:`Ledger`): every policy of the search reads it. The trials
write what they proved and told (:class:`~natbench.search.fast.trials.Trials`); the policies and phases write what
they did with it: the jumps taken (:class:`~natbench.search.fast.jump.JumpPolicy`), the guard's trials and the bounds
it withdrew (:class:`~natbench.search.fast.guard.GuardPolicy`), the confirmations that disagreed
(:class:`~natbench.search.fast.search.ShortNarrowing`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from natbench.results import Verdict
from natbench.search.fast.trial import TrialVerdict
from natbench.search.grid import RateGrid


@dataclass
class Ledger:
    """The evidence of one fast search: the bounds short trials proved, the rates they passed, what failed trials
    forwarded and delivered, the tester's ceiling, and the counts an outcome reports."""

    grid: RateGrid
    """The rates the search may test."""
    proofs: dict[float, int] = field(default_factory=dict)
    """Rates a short trial proved upper bounds (the short-fail rule) -> the frames it lost in its worst direction."""
    short_passes: list[float] = field(default_factory=list)
    """Rates a short trial passed (no bound for full trials: a short trial at or below one would pass again)."""
    forwarded: dict[float, float] = field(default_factory=dict)
    """Rates whose latest trial failed -> what a full trial there would forward (:attr:`TrialVerdict.forwarded`)."""
    bursts: dict[float, float] = field(default_factory=dict)
    """Rates whose latest short trial failed -> its :attr:`TrialVerdict.burst`."""
    delivered: float | None = None
    """The most a failed short trial of this search delivered per second (:attr:`TrialVerdict.delivered`)."""
    tester_limited: list[float] = field(default_factory=list)
    """Rates the tester repeatedly could not send (each counted as a failed trial)."""
    rejected: list[float] = field(default_factory=list)
    """Rates the short trials narrowed to whose full-duration confirmation disagreed (the search moved on)."""
    disproved: list[float] = field(default_factory=list)
    """Upper bounds set by a short trial that a full trial of the guard then passed."""
    short: int = 0
    """Short trials counted as pass or fail (probes included)."""
    full: int = 0
    """Full trials counted as pass or fail."""
    invalid: int = 0
    """Invalid trials (retried, or an invalid probe: not retried)."""
    stopped: int = 0
    """Failed full trials the tester ended early."""
    probes: int = 0
    """Short trials run before a full one at the same rate."""
    probe_proofs: int = 0
    """Probes that proved their rate an upper bound."""
    guards: int = 0
    """Full trials the guard ran."""
    jumps: int = 0
    """Times the search went to where a failed trial's forwarding said the ceiling is."""

    def rate(self, k: int) -> float:
        """The rate of grid index ``k``."""
        return self.grid.rate(k)

    def proven(self, k: int) -> bool:
        """Whether a short trial proved the rate of grid index ``k`` an upper bound."""
        return self.grid.rate(k) in self.proofs

    def lowest_proof(self, k: int) -> int:
        """The grid index of the lowest rate at or above index ``k``'s that a short trial proved an upper bound (the
        grid's top, the search's upper bound, when none did)."""
        floor = self.grid.rate(k)
        return min((self.grid.index(r) for r in self.proofs if r >= floor), default=self.grid.top)

    def passed_short_at_or_above(self, rate: float) -> bool:
        """Whether a short trial passed at ``rate`` or above."""
        return any(p >= rate for p in self.short_passes)

    def note(self, rate: float, tv: TrialVerdict) -> None:
        """Remember what the counted trial ``tv`` at ``rate`` tells of where to look: what it forwarded and its burst
        when it failed for the DUT's sake (forgotten when it passed), and the most a failed short trial delivered."""
        failed = tv.verdict is Verdict.FAIL and not tv.tester_limited
        for latest, value in ((self.forwarded, tv.forwarded), (self.bursts, tv.burst)):
            if failed and value is not None:
                latest[rate] = value
            else:
                latest.pop(rate, None)
        if failed and tv.delivered is not None:
            self.delivered = max(self.delivered or 0.0, tv.delivered)

    def withdraw(self, rate: float, *, disproved: bool) -> None:
        """Forget the short trial's proof at ``rate``: a full trial there decided (``disproved``: it passed)."""
        del self.proofs[rate]
        if disproved:
            self.disproved.append(rate)

    def tester_ceiling(self, value: float) -> float | None:
        """The tester's ceiling above the result ``value``: the lowest rate it could not send above it (one at or
        below it was disproved by a valid passing trial at or above it, a short trial that lost its pace to a
        preemption, say); None when there is none."""
        return min((r for r in self.tester_limited if r > value), default=None)
