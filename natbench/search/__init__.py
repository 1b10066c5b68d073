"""Rate searches, each declared as a :class:`SearchAlgorithm` in the registry :data:`ALGORITHMS`: the RFC 2544 binary
search (:mod:`~natbench.search.binary`), the fast search (:mod:`~natbench.search.fast`) and the MLRsearch adapter
(:mod:`~natbench.search.mlr`). None knows testers or DUTs: each is handed a :class:`SearchTask` whose runner runs and
stores the trial it asks for (:class:`TrialRequest`)."""

from natbench.search.binary import BinarySearch, SearchStep, run_binary_search, search_steps
from natbench.search.declare import (
    ALGORITHMS,
    DEFAULT_ALGORITHM,
    BlockFacts,
    PlanQuery,
    SearchAlgorithm,
    TrialGroups,
    algorithm,
    algorithm_names,
    offered,
    offered_names,
    reference_algorithm,
    reported_algorithm,
    stored_algorithm,
)
from natbench.search.grid import RateGrid
from natbench.search.outcome import SearchOutcome
from natbench.search.shorttrials import ShortTrialSettings
from natbench.search.task import SearchTask, TrialRequest, TrialRunner

__all__ = [
    "ALGORITHMS",
    "DEFAULT_ALGORITHM",
    "BinarySearch",
    "BlockFacts",
    "PlanQuery",
    "RateGrid",
    "SearchAlgorithm",
    "SearchOutcome",
    "SearchStep",
    "SearchTask",
    "ShortTrialSettings",
    "TrialGroups",
    "TrialRequest",
    "TrialRunner",
    "algorithm",
    "algorithm_names",
    "offered",
    "offered_names",
    "reference_algorithm",
    "reported_algorithm",
    "run_binary_search",
    "search_steps",
    "stored_algorithm",
]
