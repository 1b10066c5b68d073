"""What a recipe DUT reports about itself (run.json ``dut_facts``): its recipe, access and parameters, what its
``facts`` step read from the DUT, its cores, its place and its warnings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from natbench.duts.recipes import Recipe
from natbench.duts.steps import StepResult


def _stored(value: Any) -> Any:
    """A parameter as the facts keep it: a plain value as is, anything else (an address, a path) as text."""
    return value if isinstance(value, int | float | bool | str | list | type(None)) else str(value)


def recipe_dut_facts(
    recipe: Recipe,
    access: str,
    params: Mapping[str, Any],
    measured: StepResult | None,
    *,
    cores: Mapping[str, Any],
    place: Mapping[str, Any],
    warnings: Sequence[str],
) -> dict[str, Any]:
    """The facts of a DUT running ``recipe`` through ``access`` (the executor's description) with ``params``:
    ``measured``, the run of its ``facts`` step (each parsed value under its command's ``as:`` key, or a parsed dict
    merged), then the facts of its ``cores`` and its ``place``, the recipe's reason it cannot set cores, and
    ``warnings`` when there are any."""
    facts: dict[str, Any] = {
        "recipe": recipe.name,
        "implementation": recipe.implementation,
        "access": access,
        "params": {k: _stored(v) for k, v in params.items()},
    }
    for rec in measured.records if measured is not None else []:
        if rec.value is None:
            continue
        key = rec.source.as_ if rec.source is not None else None
        if key:
            facts[key] = rec.value
        elif isinstance(rec.value, dict):
            facts.update(rec.value)
    facts.update(cores)
    facts.update(place)
    step = recipe.steps.get("set_cores")
    if step is not None and step.unsupported:
        facts["cores_unsupported"] = step.unsupported
    if warnings:
        facts["warnings"] = list(warnings)
    return facts
