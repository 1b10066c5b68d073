"""A finished fast search (:class:`FastOutcome`): the binary search's outcome fields plus how it got there."""

from __future__ import annotations

from dataclasses import dataclass

from natbench.search.fast.ledger import Ledger
from natbench.search.outcome import SearchOutcome


@dataclass(frozen=True)
class FastOutcome(SearchOutcome):
    """A finished fast search: the binary search's outcome fields plus how it got there."""

    short_steps: int = 0
    """Short trials counted as pass or fail (probes included)."""
    full_steps: int = 0
    """Full-duration trials counted as pass or fail."""
    seeded: bool = False
    """True when the search started from a seed (a walk, no narrowing)."""
    rejected: tuple[float, ...] = ()
    """Rates the short trials narrowed to whose full-duration confirmation disagreed (the search moved on)."""
    probes: int = 0
    """Short trials run before a full one at the same rate (:attr:`FastStep.probe`)."""
    probe_proofs: int = 0
    """Probes that proved their rate an upper bound (no full trial ran there)."""
    short_bound: bool = False
    """True when the final upper bound was proven by a short trial (the short-fail rule), not by a full one."""
    guard_trials: int = 0
    """Full trials the guard ran at an upper bound a short trial with a small loss had set."""
    disproved: tuple[float, ...] = ()
    """Upper bounds set by a short trial that a full trial of the guard then passed."""
    stopped: int = 0
    """Failed full trials the tester ended early (a failed full trial all the same)."""
    jumps: int = 0
    """Times the search went to the rate a failed trial forwarded instead of its usual next step (:data:`JUMPS`)."""
    short_delivered: float | None = None
    """The most a failed short trial of this search delivered per second (:attr:`TrialVerdict.delivered`): the next
    repetitions' :attr:`ShortFailRule.delivered`."""
    remeasured: int = 0
    """Full trials measured again at once because their stop proved nothing and the tester could not tell the DUT's
    shortfall (too few samples): a second draw at that rate (docs/engine.md, "No second draw")."""

    @classmethod
    def of(cls, ledger: Ledger, lo: int, hi: int, *, seeded: bool) -> FastOutcome:
        """The outcome of a search that ended in the grid cell ``[lo, hi]`` with the evidence of ``ledger``: the value
        at ``lo`` (it passed a full trial, unless it is the search's lower bound), the upper bound at ``hi`` or the
        tester's ceiling below it."""
        grid = ledger.grid
        value, bound = grid.rate(lo), grid.rate(hi)
        tester_ceiling = ledger.tester_ceiling(value)
        if tester_ceiling is not None and bound > tester_ceiling:
            bound = tester_ceiling
        return cls(
            value=value,
            lower=value,
            upper=bound,
            passed=lo > 0,  # the lower bound is never tested: above it, lo passed a full trial
            steps=ledger.short + ledger.full,
            invalid=ledger.invalid,
            at_upper_limit=bound == grid.upper,
            tester_ceiling=tester_ceiling,
            short_steps=ledger.short,
            full_steps=ledger.full,
            seeded=seeded,
            rejected=tuple(ledger.rejected),
            probes=ledger.probes,
            probe_proofs=ledger.probe_proofs,
            short_bound=bound in ledger.proofs and bound != tester_ceiling,
            guard_trials=ledger.guards,
            disproved=tuple(ledger.disproved),
            stopped=ledger.stopped,
            jumps=ledger.jumps,
            short_delivered=ledger.delivered,
        )
