"""Rate searches, each declared as a :class:`SearchAlgorithm` in the registry :data:`ALGORITHMS`: the RFC 2544 binary
search (:mod:`~natbench.search.binary`), the fast search (:mod:`~natbench.search.fast`) and the MLRsearch adapter
(:mod:`~natbench.search.mlr`). None knows testers or DUTs: each is handed a :class:`SearchTask` whose runner runs and
stores the trial it asks for (:class:`TrialRequest`)."""

from natbench.search.declare import ALGORITHMS, BlockFacts, PlanQuery, SearchAlgorithm, TrialGroups
from natbench.search.grid import RateGrid
from natbench.search.outcome import SearchOutcome
from natbench.search.shorttrials import ShortTrialSettings
from natbench.search.task import SearchTask, TrialRequest, TrialRunner

__all__ = [
    "ALGORITHMS",
    "BlockFacts",
    "PlanQuery",
    "RateGrid",
    "SearchAlgorithm",
    "SearchOutcome",
    "SearchTask",
    "ShortTrialSettings",
    "TrialGroups",
    "TrialRequest",
    "TrialRunner",
]
