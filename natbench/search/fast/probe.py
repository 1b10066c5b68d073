"""When a short trial is worth trying before a full one at the same rate (:class:`ProbePolicy`): a probe that proves
the rate an upper bound by the short-fail rule saves the full trial."""

from __future__ import annotations

from dataclasses import dataclass

from natbench.search.fast.ledger import Ledger
from natbench.search.fast.rule import ShortFailRule


@dataclass(frozen=True)
class ProbePolicy:
    """Probes of a search with the short-fail rule (none without it)."""

    rule: ShortFailRule | None
    """The short-fail rule, with what earlier repetitions at the point learnt of probes (None: no probe)."""
    ledger: Ledger
    """This search's evidence."""

    def worth(self, rate: float) -> bool:
        """Whether to try a short trial before the full one at ``rate``: the rule is given, no short trial passed at or
        above ``rate`` in this search, no failed short trial (of this search or an earlier repetition here) delivered
        ``rate`` or more per second (a short trial there would pass and prove nothing), and probes have paid here so
        far (:meth:`~natbench.search.fast.rule.ShortFailRule.worth_probing`)."""
        r = self.rule
        if r is None or self.ledger.passed_short_at_or_above(rate):
            return False
        delivered = max(self.ledger.delivered or 0.0, r.delivered or 0.0)
        if rate <= delivered:
            return False
        return r.worth_probing(r.probes + self.ledger.probes, r.proofs + self.ledger.probe_proofs)
