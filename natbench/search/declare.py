"""A search algorithm declared as a metric is: :class:`SearchAlgorithm`, and the registry :data:`ALGORITHMS`.

A declaration holds everything the rest of natbench needs of an algorithm: how it runs (:attr:`SearchAlgorithm.run`
over a :class:`~natbench.search.task.SearchTask`), what its results store, what it needs of a metric, its planning
figures for ``natbench plan``, and the words, columns and notes of reports. Metrics, the campaign schema, ``plan``
and the reports ask the declaration of the name a metric's ``algorithm`` setting gives; no code outside
:mod:`natbench.search` compares an algorithm's name. A new algorithm is one module that builds a declaration and one
:meth:`~natbench.plugins.Registry.register_lazy` line below (or an entry point of :data:`ALGORITHM_GROUP`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from natbench.plugins import Registry
from natbench.plugins.columns import Column
from natbench.results import RepetitionResult
from natbench.search.outcome import SearchOutcome
from natbench.search.task import SearchTask

ALGORITHM_GROUP = "natbench.search_algorithms"
"""Entry-point group of search algorithms: each names a :class:`SearchAlgorithm`."""

DEFAULT_ALGORITHM = "binary"
"""The algorithm a search metric runs unless its settings name another, and the one a result stored before results
named their algorithm came from: the seeds' RFC 2544 binary search."""


@dataclass(frozen=True)
class PlanQuery:
    """What ``natbench plan`` knows of one search metric at one working point, for an algorithm's planning figures."""

    lower: float
    """The search's lower bound."""
    upper: float
    """The search's upper bound."""
    error: float
    """The search's error."""
    repetitions: int
    """Repetitions of the metric at the point."""
    settings: Any
    """The metric's settings model."""
    short_seconds: float | None = None
    """Seconds of the metric's short trials (None: it has none)."""
    full_seconds: float | None = None
    """Seconds of its full trials (None: a phase 1's own length)."""


TrialGroups = tuple[tuple[int, float | None], ...]
"""Trials an algorithm plans over all repetitions at a point, by duration: (trials, seconds of traffic each; None: the
metric's full trial)."""


@dataclass(frozen=True)
class BlockFacts:
    """What a report knows of one table block's results that one algorithm produced: the words of its caption come
    from these."""

    prefix: str
    """The block's label prefix (``cps``)."""
    repetitions: int = 0
    """Its repetitions with a value."""
    counts: Mapping[str, int] = field(default_factory=dict)
    """Per ``count`` column the algorithm declares (:attr:`SearchAlgorithm.columns`): repetitions it is true for."""
    firsts: Mapping[str, str] = field(default_factory=dict)
    """Per ``first`` column the algorithm declares: its first value among the block's points."""


def _no_notes(_facts: BlockFacts) -> tuple[str, ...]:
    return ()


def _no_problems() -> list[str]:
    return []


@dataclass(frozen=True)
class SearchAlgorithm:
    """One rate search: how it runs, what it stores and needs, how ``natbench plan`` counts it and what reports say of
    its values."""

    name: str
    """Its name in campaigns (a search metric's ``algorithm``), results (``extra.algorithm``) and reports."""
    description: str
    """What it does, in a sentence (the campaign reference's ``algorithm`` entry)."""
    words: str
    """What it is called in captions and summaries (``binary search``)."""
    run: Callable[[SearchTask], SearchOutcome]
    """Runs one search of one repetition (every trial stored through the task's runner; a
    :class:`~natbench.errors.SearchError` fails the repetition)."""
    stored: Callable[[SearchTask, SearchOutcome], dict[str, Any]]
    """The fields its result stores beside the ones every search stores (at least ``algorithm``: its name)."""
    plan: Callable[[PlanQuery], TrialGroups]
    """Its planning figures: the trials of all repetitions at a point (``natbench plan``; a lower bound)."""
    meaning: Callable[[BlockFacts], str]
    """What a value and its error mean, in a caption's words."""
    summary: Callable[[BlockFacts], str]
    """Which search produced a value and what its error is, in the few words of a run summary."""
    requires: tuple[type, ...] = ()
    """Settings models a metric's settings must include for it to offer this algorithm (what it reads of them:
    short trials, MLRsearch's goal); a metric whose settings lack one does not offer it."""
    columns: tuple[Column, ...] = ()
    """What its results store beyond every search's, as columns of the results frame (every result gets them; a
    result of another algorithm reads False / None)."""
    notes: Callable[[BlockFacts], tuple[str, ...]] = _no_notes
    """Caption notes on a table block of its values (beside :attr:`meaning`)."""
    table_error: str | None = None
    """A table caption's whole error sentence when every search of the table is this algorithm (the seeds' own
    sentence for theirs); None: :attr:`meaning` per block, as for a table mixing algorithms."""
    validates_once: bool = False
    """A connection-establishment search may validate only its result, once, at the end (``validation: final``);
    False: ``final`` validates every step, as ``every_step`` (a search whose steps depend on earlier ones)."""
    reference: bool = False
    """The reference ``natbench plan`` compares the others with (the seeds' procedure)."""
    plan_note: str | None = None
    """How ``natbench plan`` counts its trials, when it compares it with the reference (None: it is not compared)."""
    problems: Callable[[], list[str]] = _no_problems
    """Why this machine cannot run it (a library it needs; empty when it can): ``natbench doctor`` says so."""

    def offered_by(self, settings: type) -> bool:
        """Whether a metric with the settings model ``settings`` offers this algorithm: it includes every model in
        :attr:`requires`."""
        return all(issubclass(settings, model) for model in self.requires)

    def facts(self, prefix: str, repetitions: int, counts: Mapping[str, int], firsts: Mapping[str, str]) -> BlockFacts:
        """The facts of a table block from the summary of its declared columns."""
        return BlockFacts(prefix, repetitions, dict(counts), dict(firsts))


ALGORITHMS: Registry[SearchAlgorithm] = Registry(
    "search algorithm", ALGORITHM_GROUP, lambda o: isinstance(o, SearchAlgorithm)
)
"""Every search algorithm by name: natbench's own (``binary``, ``fast``, ``mlr``, registered here by dotted path,
imported on first use) and those of installed plugins (entry-point group :data:`ALGORITHM_GROUP`)."""
ALGORITHMS.register_lazy("binary", "natbench.search.binary:BINARY")
ALGORITHMS.register_lazy("fast", "natbench.search.fast:FAST")
ALGORITHMS.register_lazy("mlr", "natbench.search.mlr:MLR")


def algorithm(name: str) -> SearchAlgorithm:
    """The algorithm registered as ``name``; a one-line ConfigError naming the known ones otherwise."""
    return ALGORITHMS.get(name, field="algorithm")


def reference_algorithm() -> SearchAlgorithm:
    """The registered algorithm declared the reference (the seeds' binary search): what ``natbench plan`` compares the
    others with, and the search of a method defined on it (capacity's probes)."""
    return next(algorithm(n) for n in algorithm_names() if algorithm(n).reference)


def algorithm_names() -> tuple[str, ...]:
    """Every registered algorithm's name, the default first, then by name."""
    names = ALGORITHMS.names()
    return (DEFAULT_ALGORITHM, *(n for n in names if n != DEFAULT_ALGORITHM))


def offered(settings: type, name: str) -> bool:
    """Whether a metric with the settings model ``settings`` offers the registered algorithm ``name``."""
    found = ALGORITHMS.find(name)
    return found is not None and found.offered_by(settings)


def offered_names(settings: type) -> tuple[str, ...]:
    """The algorithms a metric with the settings model ``settings`` offers, as :func:`algorithm_names` orders them."""
    return tuple(n for n in algorithm_names() if algorithm(n).offered_by(settings))


def reported_algorithm(name: str | None) -> SearchAlgorithm:
    """The algorithm a stored result names (the default for a result stored before results named one), or, for one
    this natbench does not know (stored by another version), a stand-in that reports its values as stored."""
    found = ALGORITHMS.find(name or DEFAULT_ALGORITHM)
    return found if found is not None else _stand_in(str(name))


def _stand_in(name: str) -> SearchAlgorithm:
    def run(_task: SearchTask) -> SearchOutcome:
        raise NotImplementedError(f"search algorithm {name!r} is not registered in this natbench")

    return SearchAlgorithm(
        name=name,
        description="A search algorithm this natbench does not know (stored by another version).",
        words=f"{name} search",
        run=run,
        stored=lambda _t, _o: {"algorithm": name},
        plan=lambda _q: (),
        meaning=lambda _f: f"final width (upper - lower) of the {name} search",
        summary=lambda _f: f"{name} search; error: as the search stored it",
    )


def stored_algorithm(result: RepetitionResult) -> str | None:
    """The algorithm a stored search result came from: the one it names, or (stored before results named theirs) the
    default for a result with an error; None for a result that is no search's."""
    stored = result.extra.get("algorithm")
    if isinstance(stored, str):
        return stored
    return DEFAULT_ALGORITHM if result.error is not None else None
