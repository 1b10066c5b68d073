"""The ``fast`` rate search: short trials narrow, full-duration trials confirm (after FD.io CSIT's MLRsearch).

:mod:`~natbench.search.fast.search` is the search itself over the verdicts a caller gives it: its phases, made of
moves (:mod:`~natbench.search.fast.moves`) steered by small policies over a ledger of what the trials proved
(:mod:`~natbench.search.fast.ledger`; :mod:`~natbench.search.fast.rule`, :mod:`~natbench.search.fast.probe`,
:mod:`~natbench.search.fast.jump`, :mod:`~natbench.search.fast.guard`), whose trials
:mod:`~natbench.search.fast.trials` runs;
:mod:`~natbench.search.fast.algorithm` declares it (:data:`FAST`) and runs it for a metric: the trials it asks for,
the evidence it reads of them (:mod:`~natbench.search.fast.evidence`), when a failed full trial may stop
(:mod:`~natbench.search.fast.stop`), what the earlier repetitions tell it (:mod:`~natbench.search.fast.history`) and
how ``natbench plan`` counts it (:mod:`~natbench.search.fast.planning`).
"""

from natbench.search.fast.algorithm import FAST as FAST
from natbench.search.fast.jump import JUMPS as JUMPS
from natbench.search.fast.outcome import FastOutcome as FastOutcome
from natbench.search.fast.rule import ShortFailRule as ShortFailRule
from natbench.search.fast.search import run_fast_search as run_fast_search
from natbench.search.fast.trial import FastStep as FastStep
from natbench.search.fast.trial import TrialVerdict as TrialVerdict
