"""Campaign schema reference as Markdown, generated from the pydantic models and their field docstrings.

``python -m natbench.campaign.reference > docs/campaign-schema.md`` regenerates the
committed reference; a test keeps the two identical.
"""

from __future__ import annotations

import enum
import typing
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from natbench.campaign.schema import SCHEMA_VERSION, CampaignSpec
from natbench.metrics import SearchSettings
from natbench.plugins import ACCESS, TESTERS, AccessSettings, TesterSettings
from natbench.search.declare import algorithm, offered_names


def _models(annotation: Any) -> list[tuple[type[BaseModel], str | None]]:
    """The models a field's annotation names, each with the backend kind it belongs to (None: not a backend's).

    A backend settings base stands for the model of every registered kind (the schema validates each by its
    kind), so each kind's model gets a section of its own."""
    if annotation is TesterSettings:
        return [(backend.settings, kind) for kind, backend in TESTERS.entries()]
    if annotation is AccessSettings:
        return [(backend.settings, kind) for kind, backend in ACCESS.entries()]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [(annotation, None)]
    out: list[tuple[type[BaseModel], str | None]] = []
    for arg in typing.get_args(annotation):
        out += _models(arg)
    return out


def _type_name(annotation: Any) -> str:
    if annotation in (TesterSettings, AccessSettings):
        return "mapping (by kind, below)"
    if annotation is type(None):
        return "null"
    if isinstance(annotation, type):
        if issubclass(annotation, enum.Enum):
            return " \\| ".join(str(m.value) for m in annotation)
        return annotation.__name__
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin is typing.Literal:
        return " \\| ".join(str(a) for a in args)
    if origin in (list, tuple):
        return f"list[{_type_name(args[0])}]" if args else "list"
    if origin is dict:
        return "mapping"
    if args:
        return " \\| ".join(_type_name(a) for a in args)
    return str(annotation).replace("typing.", "")


def _default(field: Any) -> str:
    if field.is_required():
        return "**required**"
    if field.default_factory is not None:
        value = field.default_factory()
        value = value.model_dump(exclude_none=True) if isinstance(value, BaseModel) else value
        return f"`{value}`" if value not in ({}, []) else "empty"
    if field.default is PydanticUndefined or field.default is None:
        return "unset"
    d = field.default
    if d == "":
        return '`""`'
    return f"`{d.value if isinstance(d, enum.Enum) else d}`"


def _range(field: Any) -> str:
    """The field's numeric range from its constraints: ``1 .. 10,000``, ``> 0 .. 604,800``; empty if none."""
    low = high = ""
    for m in field.metadata:
        for attr, side in (("ge", "low"), ("gt", "low"), ("le", "high"), ("lt", "high")):
            value = getattr(m, attr, None)
            if value is None or isinstance(value, bool):
                continue
            text = f"{value:,}" if isinstance(value, int) else f"{value:,g}"
            if side == "low":
                low = text if attr == "ge" else f"> {text}"
            else:
                high = text if attr == "le" else f"< {text}"
    if not (low or high):
        return ""
    return f"{low or '..'} .. {high}" if high else f">= {low}" if not low.startswith(">") else low


def markdown() -> str:
    """The reference of every campaign section and field."""
    lines = [
        f"# Campaign schema reference (schema_version {SCHEMA_VERSION})",
        "",
        "Generated from `natbench/campaign/schema.py`, the metrics' settings models (`natbench/metrics/`) and the",
        "settings models of every registered tester kind and DUT access kind (`natbench.plugins`)",
        "by `python -m natbench.campaign.reference`;",
        "see the README's *Campaigns* section for the rules (numbers, port ranges, sweeps, environment).",
        "",
        "Every number must be finite (no `.inf` or `.nan`) and lie in its field's *range*; a power `B^E` or an SI",
        "value is refused before it is computed when it would exceed 2^64. A campaign, recipe or testbed file is",
        "a regular file of at most 1 MiB of UTF-8 text without NUL bytes, nested at most 64 levels deep, with at",
        "most 20,000 values, or 100,000 once YAML aliases are expanded (`natbench.config.source`).",
        "",
    ]
    seen: set[type[BaseModel]] = set()
    queue: list[tuple[str, type[BaseModel], str | None]] = [("(top level)", CampaignSpec, None)]
    while queue:
        where, model, kind = queue.pop(0)
        if model in seen:
            continue
        seen.add(model)
        title = f"## {model.__name__}: `{where}`" + (f" (kind `{kind}`)" if kind else "")
        lines += [title, "", (model.__doc__ or "").strip().splitlines()[0], ""]
        lines += ["| field | type | default | range | description |", "|---|---|---|---|---|"]
        for name, field in model.model_fields.items():
            desc = (field.description or "").replace("|", "\\|").replace("\n", " ")
            kind, default = _type_name(field.annotation), _default(field)
            if name == "algorithm" and issubclass(model, SearchSettings):  # the choices come from the declarations
                names = offered_names(model)
                kind = " \\| ".join(names)
                desc += " " + "; ".join(f"``{n}``: {algorithm(n).description}" for n in names) + "."
            lines.append(f"| `{name}` | {kind} | {default} | {_range(field)} | {desc} |")
            for sub, sub_kind in _models(field.annotation):
                path = name if where == "(top level)" else f"{where}.{name}"
                queue.append((path, sub, sub_kind))
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    print(markdown(), end="")
