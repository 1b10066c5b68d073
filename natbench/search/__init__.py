"""Rate searches: the RFC 2544 binary search (:mod:`~natbench.search.binary`), the fast search
(:mod:`~natbench.search.fast`) and the MLRsearch adapter (:mod:`~natbench.search.mlr`). None knows testers or DUTs:
each is handed the trial to run."""

from natbench.search.binary import BinarySearch, RateGrid, SearchOutcome, SearchStep, run_binary_search
from natbench.search.mlr import mlr_search

__all__ = ["BinarySearch", "RateGrid", "SearchOutcome", "SearchStep", "mlr_search", "run_binary_search"]
