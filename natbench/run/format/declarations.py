"""run.json's ``dut_declarations``: what each DUT kind (its recipe) declared for reports, stored so that reports read
a run without the recipe files: the parameters sizing its connection and hash tables (with their rows) and the slab
caches of its table (:class:`~natbench.plugins.DutDeclarations`).

A run stored before natbench kept them has none: its reports read it with :data:`LEGACY`, the rows natbench's own
recipes had then (the table size from ``conntrack_max``, ``state_limit`` or ``table_size``, the hash size from
``hashsize`` or ``hash_size``, all named as conntrack's; the nf_conntrack and Jool session / BIB slab caches).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from natbench.plugins import DutDeclarations, SlabCache, TableParam
from natbench.run.format.fields import as_list, as_object, as_str

_TABLE = ("conntrack t. s.", "c.t.s/num.conn.")
_HASH = ("hash table size", "n.c./h.t.s.")

LEGACY_SLAB_LABELS: dict[str, str] = {
    "conntrack_slab": "conntrack slab / conn. (B)",
    "jool_session_slab": "Jool session slab / conn. (B)",
    "jool_bib_slab": "Jool BIB slab / conn. (B)",
}
"""The slab rows of runs stored before declarations (natbench read these three caches of every DUT then)."""

LEGACY: tuple[DutDeclarations, ...] = (
    DutDeclarations(
        TableParam("conntrack_max", *_TABLE),
        TableParam("hashsize", *_HASH),
        (
            SlabCache("conntrack_slab", "nf_conntrack", LEGACY_SLAB_LABELS["conntrack_slab"]),
            SlabCache("jool_session_slab", "session_nodes", LEGACY_SLAB_LABELS["jool_session_slab"]),
            SlabCache("jool_bib_slab", "bib_nodes", LEGACY_SLAB_LABELS["jool_bib_slab"]),
        ),
    ),
    DutDeclarations(TableParam("state_limit", *_TABLE)),
    DutDeclarations(TableParam("table_size", *_TABLE), TableParam("hash_size", *_HASH)),
)
"""How a run stored before declarations is read: every DUT as if it declared each of these, in order (the first
whose parameter a point sets gives its size)."""


def declarations_for(stored: Mapping[str, DutDeclarations], dut: str) -> tuple[DutDeclarations, ...]:
    """The declarations a report applies to DUT ``dut`` of a run that stored ``stored``: its own, none when the run
    stored others' but not its (a DUT kind that declares nothing), :data:`LEGACY` when the run stored none."""
    if not stored:
        return LEGACY
    own = stored.get(dut)
    return () if own is None else (own,)


def slab_label(stored: Mapping[str, DutDeclarations], key: str) -> str:
    """The row of slab cache ``key``: as a stored declaration names it, else as :data:`LEGACY_SLAB_LABELS` does, else
    ``<key> / conn. (B)``."""
    for d in stored.values():
        for slab in d.slabs:
            if slab.key == key:
                return slab.label
    return LEGACY_SLAB_LABELS.get(key, f"{key} / conn. (B)")


def _param(data: Any, where: str) -> TableParam | None:
    if data is None:
        return None
    d = as_object(data, where)
    return TableParam(
        as_str(d.get("param"), f"{where}.param"),
        as_str(d.get("label"), f"{where}.label"),
        as_str(d.get("ratio_label"), f"{where}.ratio_label"),
    )


def decode_declarations(data: Any) -> dict[str, DutDeclarations]:
    """run.json's ``dut_declarations`` (a FieldError naming the first wrong key)."""
    out: dict[str, DutDeclarations] = {}
    for name, value in as_object(data, "dut_declarations").items():
        where = f"dut_declarations.{name}"
        d = as_object(value, where)
        slabs = []
        for i, s in enumerate(as_list(d.get("slabs", []), f"{where}.slabs")):
            item = as_object(s, f"{where}.slabs[{i}]")
            slabs.append(
                SlabCache(
                    as_str(item.get("key"), f"{where}.slabs[{i}].key"),
                    as_str(item.get("cache"), f"{where}.slabs[{i}].cache"),
                    as_str(item.get("label"), f"{where}.slabs[{i}].label"),
                )
            )
        out[str(name)] = DutDeclarations(
            _param(d.get("table_size"), f"{where}.table_size"),
            _param(d.get("hash_size"), f"{where}.hash_size"),
            tuple(slabs),
        )
    return out


def _param_dict(p: TableParam | None) -> dict[str, str] | None:
    return None if p is None else {"param": p.param, "label": p.label, "ratio_label": p.ratio_label}


def encode_declarations(declared: Mapping[str, DutDeclarations]) -> dict[str, Any]:
    """run.json's ``dut_declarations`` (plain JSON; a size the DUT kind does not declare is left out)."""
    out: dict[str, Any] = {}
    for name, d in declared.items():
        entry: dict[str, Any] = {}
        for key, p in (("table_size", d.table_size), ("hash_size", d.hash_size)):
            if p is not None:
                entry[key] = _param_dict(p)
        entry["slabs"] = [{"key": s.key, "cache": s.cache, "label": s.label} for s in d.slabs]
        out[name] = entry
    return out
