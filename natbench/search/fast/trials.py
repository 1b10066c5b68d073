"""Running the trials the fast search nominates and writing what they tell into its ledger (:class:`Trials`), with the
retry rule for invalid trials (:class:`~natbench.search.retry.RetryRule`) and the full-trial verdict that a proof or
a probe may settle (:meth:`Trials.verdict`)."""

from __future__ import annotations

from collections.abc import Callable

from natbench.errors import SearchError
from natbench.results import Verdict
from natbench.search.fast.ledger import Ledger
from natbench.search.fast.probe import ProbePolicy
from natbench.search.fast.rule import ShortFailRule
from natbench.search.fast.trial import FastStep, TrialVerdict
from natbench.search.retry import RetryRule


class Trials:
    """Runs the fast search's trials through the caller's ``trial`` and books each in the ledger."""

    def __init__(
        self,
        trial: Callable[[FastStep], TrialVerdict],
        ledger: Ledger,
        retry: RetryRule,
        rule: ShortFailRule | None,
        probes: ProbePolicy,
    ) -> None:
        self._trial = trial
        self.ledger = ledger
        self.retry = retry
        self.rule = rule
        self.probes = probes

    def run(self, rate: float, full: bool, lower: float, upper: float) -> bool:
        """Run the trial at ``rate`` (full or short) until it is not invalid; True when it passed. A rate beyond the
        tester (:meth:`RetryRule.beyond_tester`) fails and is booked as the tester's; too many invalid trials in a row
        fail the search."""
        book = self.ledger
        attempt = streak = 0
        while True:
            tv = self._trial(FastStep(rate, lower, upper, attempt, full))
            if tv.verdict is not Verdict.INVALID:
                passed = tv.verdict is Verdict.PASS
                book.note(rate, tv)
                if full:
                    book.full += 1
                    book.stopped += int(tv.stopped and not passed)
                else:
                    book.short += 1
                    if passed:
                        book.short_passes.append(rate)
                    elif self.rule is not None and self.rule.proved_by(rate, tv):
                        book.proofs[rate] = int(tv.lost or 0)
                return passed
            book.invalid += 1
            attempt += 1
            streak = streak + 1 if tv.tester_limited else 0
            if self.retry.beyond_tester(rate, attempt, streak):
                book.tester_limited.append(rate)
                return False
            if self.retry.exhausted(attempt):
                raise SearchError(
                    f"{attempt} invalid trials in a row at rate {rate:g} (max_invalid={self.retry.max_invalid})"
                    + (f"; last: {tv.reason}" if tv.reason else "")
                )

    def probe(self, rate: float, lower: float, upper: float) -> bool:
        """A short trial before the full one at ``rate``; True when it proved ``rate`` an upper bound. An invalid probe
        proves nothing and is not retried (the full trial decides)."""
        book = self.ledger
        book.probes += 1
        tv = self._trial(FastStep(rate, lower, upper, 0, False, probe=True))
        if tv.verdict is Verdict.INVALID:
            book.invalid += 1
            return False
        book.short += 1
        book.note(rate, tv)
        if tv.verdict is Verdict.PASS:
            book.short_passes.append(rate)
        elif self.rule is not None and self.rule.proved_by(rate, tv):
            book.probe_proofs += 1
            book.proofs[rate] = int(tv.lost or 0)
            return True
        return False

    def verdict(self, rate: float, lower: float, upper: float) -> bool:
        """Whether ``rate`` passes for full trials: False at once when a short trial already proved it an upper bound;
        else a probe first when one is worth it (:class:`~natbench.search.fast.probe.ProbePolicy`; a proof ends it);
        else a full trial."""
        if rate in self.ledger.proofs:
            return False
        if self.probes.worth(rate) and self.probe(rate, lower, upper):
            return False
        return self.run(rate, True, lower, upper)
