"""The DUT factory: recipe-driven DUT(s) from their specs and the places they run in.

:mod:`natbench.testbed` decides where every DUT runs: its access kind's backend
(:mod:`natbench.duts.access`) gives a :class:`DutPlacement` (the executor and, in a local lab,
the CPUs and whether the DUT shares this machine's kernel), and the lab's recipe parameters are
filled into the DUT's spec. This module only turns specs and placements into DUT objects.

One DUT gives a :class:`~natbench.duts.recipe_dut.RecipeDut`, several a
:class:`~natbench.duts.recipe_dut.DutGroup` (set up in path order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from natbench.duts.executors import Executor
from natbench.duts.recipe_dut import DutGroup, RecipeDut
from natbench.duts.recipes import load_recipe, recipe_reference
from natbench.errors import ConfigError

if TYPE_CHECKING:
    from natbench.campaign.schema import DutSpec

__all__ = ["DutPlacement", "build_duts"]


@dataclass(frozen=True)
class DutPlacement:
    """Where one DUT runs and how natbench reaches it (made by the DUT's access backend or its lab)."""

    executor: Executor
    """Runs the DUT's recipe commands."""
    host_settings: bool = False
    """The DUT shares this machine's kernel (a lab namespace): the recipe's ``host_settings`` defaults to
    true, so global conntrack table/hash sizes are applied on the host (and restored at teardown)."""
    cpu_order: tuple[int, ...] | None = None
    """The order in which a ``cores`` sweep takes CPUs (a lab: the DUT's own first, the tester's last)."""
    own_cpus: tuple[int, ...] | None = None
    """The DUT's own CPUs (its data path when no cores are set); None: not known."""
    facts: dict[str, Any] = field(default_factory=dict)
    """Facts of the place itself, added to the DUT's facts (a lab VM: ``vm`` with accelerator, vCPUs, memory,
    image and boot time)."""


def build_duts(
    duts: Sequence[DutSpec], placements: Sequence[DutPlacement], *, base_dir: Path | None = None
) -> RecipeDut | DutGroup:
    """The DUT of a testbed: one :class:`RecipeDut`, or a :class:`DutGroup` for several (path order).

    ``placements[i]`` is where ``duts[i]`` runs; ``base_dir`` resolves relative recipe paths.
    """
    if not duts:
        raise ConfigError("the campaign names no DUT", field="testbed.duts")
    if len(placements) != len(duts):
        raise ValueError(f"{len(duts)} DUT(s) but {len(placements)} placement(s)")
    built: list[RecipeDut] = []
    for spec, place in zip(duts, placements, strict=True):
        recipe = load_recipe(recipe_reference(spec.recipe, base_dir))
        params = dict(spec.params)
        if place.host_settings and "host_settings" in recipe.params:
            params.setdefault("host_settings", True)
        built.append(
            RecipeDut(
                spec.name,
                recipe,
                place.executor,
                params,
                fixed_cores=spec.cores,
                cpu_order=list(place.cpu_order) if place.cpu_order is not None else None,
                own_cpus=list(place.own_cpus) if place.own_cpus is not None else None,
                place_facts=place.facts,
            )
        )
    if len(built) == 1:
        return built[0]
    return DutGroup(built)
