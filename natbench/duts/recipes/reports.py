"""What a recipe declares for reports: ``table:`` (the parameters that size the DUT kind's connection table and its
hash table, with their rows) and ``memory:`` (the slab caches its connection table lives in)::

    table:
      size: {param: conntrack_max, label: conntrack t. s., ratio_label: c.t.s/num.conn.}
      hash: {param: hashsize, label: hash table size, ratio_label: n.c./h.t.s.}
    memory:
      slabs:
        conntrack_slab: {cache: nf_conntrack, label: conntrack slab / conn. (B)}

A run stores them (:class:`~natbench.plugins.DutDeclarations`, run.json ``dut_declarations``), so a new DUT kind with
a new slab cache is its recipe file alone: the DUT's memory snapshots read the declared caches from
/proc/slabinfo under their keys, and report tables name them with their labels.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from natbench.duts.recipes.fields import Declared, RecipeModel, Text, must
from natbench.plugins import DutDeclarations, SlabCache, TableParam

_KEY = re.compile(r"[a-z][a-z0-9_]*")
_CACHE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_:.-]*")
RESERVED_KEYS = ("mem_available", "mem_total")
"""Memory snapshot keys natbench reads itself (/proc/meminfo): no slab may be declared under them."""


def _slab_key(value: Any) -> Any:
    if not isinstance(value, str) or not _KEY.fullmatch(value):
        raise ValueError("slab keys are lowercase identifiers (conntrack_slab)")
    if value in RESERVED_KEYS:
        raise ValueError(f"{value!r} is read from /proc/meminfo, not a slab cache")
    return value


def _mapping(value: Any) -> Any:
    if not isinstance(value, dict):
        raise ValueError("expected a mapping")
    return value


class TableSize(Declared):
    """A table size parameter: ``{param: ..., label: ..., ratio_label: ...}``."""

    param: Text
    """The recipe parameter whose value is the size (declared under ``params``)."""
    label: Text
    """Its row in report tables (``conntrack t. s.``)."""
    ratio_label: Text | None = None
    """The row of its ratio to the number of connections (default: built from ``label``)."""


class TableSpec(RecipeModel):
    """``table:``: the parameters sizing the DUT kind's connection table (``size``) and hash table (``hash``)."""

    size: Annotated[TableSize | None, BeforeValidator(_mapping)] = None
    """Its connection table's size (e.g. ``conntrack_max``, PF's ``state_limit``)."""
    hash: Annotated[TableSize | None, BeforeValidator(_mapping)] = None
    """Its hash table's size (e.g. ``hashsize``)."""


class SlabSpec(RecipeModel):
    """A slab cache of the connection table: ``{cache: ..., label: ...}``."""

    cache: Annotated[
        str, must(lambda v: isinstance(v, str) and _CACHE.fullmatch(v), "expected a /proc/slabinfo cache name")
    ]
    """Its name in /proc/slabinfo (``nf_conntrack``)."""
    label: Text
    """Its row in report tables (``conntrack slab / conn. (B)``)."""


class MemorySpec(RecipeModel):
    """``memory:``: the slab caches the DUT kind's connection table lives in, by the key its memory is stored under."""

    slabs: Annotated[
        dict[Annotated[str, BeforeValidator(_slab_key)], Annotated[SlabSpec, BeforeValidator(_mapping)]],
        BeforeValidator(_mapping),
    ] = Field(default_factory=dict)
    """Key (``conntrack_slab``) -> the cache and its row."""


def _param(spec: TableSize | None, ratio: str) -> TableParam | None:
    if spec is None:
        return None
    return TableParam(spec.param, spec.label, spec.ratio_label or ratio.format(label=spec.label))


def declarations(table: TableSpec | None, memory: MemorySpec | None) -> DutDeclarations:
    """A recipe's declarations as a run stores them."""
    t = table or TableSpec()
    slabs = tuple(SlabCache(k, s.cache, s.label) for k, s in (memory.slabs if memory else {}).items())
    return DutDeclarations(
        _param(t.size, "{label} / num. conn."),
        _param(t.hash, "num. conn. / {label}"),
        slabs,
    )
