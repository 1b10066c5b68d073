"""What a report knows of the searches behind a metric's summary rows, in the terms of their algorithms'
declarations (:class:`~natbench.search.BlockFacts`): reports ask the declaration for its words, never the name."""

from __future__ import annotations

import pandas as pd

from natbench.search import BlockFacts
from natbench.search.declare import reported_algorithm


def search_facts(d: pd.DataFrame, prefix: str) -> tuple[str | None, BlockFacts]:
    """The algorithm named by the summary rows ``d`` of one metric (its first point's that has one; None: none stored)
    and what they tell of it: repetitions with a value, and per column the algorithm declares the repetitions it is
    true for (``count``) or its first value (``first``)."""
    names = [str(a) for a in d.get("algorithm", pd.Series(dtype=object)) if isinstance(a, str) and a]
    name = names[0] if names else None
    algo = reported_algorithm(name)
    counts: dict[str, int] = {}
    firsts: dict[str, str] = {}
    for c in algo.columns:
        if c.name not in d:
            continue
        if c.summary == "count":
            counts[c.name] = int(d[c.name].fillna(0).astype("int64").sum())
        elif c.summary == "first":
            found = next((str(v) for v in d[c.name] if isinstance(v, str) and v), None)
            if found is not None:
                firsts[c.name] = found
    repetitions = int(d["experiments"].fillna(0).sum()) if "experiments" in d else 0
    return name, algo.facts(prefix, repetitions, counts, firsts)
