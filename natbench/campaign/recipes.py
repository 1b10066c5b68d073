"""The one hook between campaigns and the recipe engine (:mod:`natbench.duts.recipes`).

:func:`check_recipes` loads every DUT's recipe and resolves the parameters of
every working point through it (``load_recipe(name).resolve(params)``), so
``natbench validate`` catches a misspelt recipe or parameter before a run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from natbench.campaign.schema import resolve_param_value
from natbench.duts.recipes import load_recipe, recipe_reference, shadowed_recipes
from natbench.errors import ConfigError
from natbench.metrics import metric
from natbench.metrics.declare import Lifetime
from natbench.plugins import ACCESS

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign


@dataclass(frozen=True)
class RecipeCheck:
    """Outcome of :func:`check_recipes`."""

    checked: bool
    """True when every DUT's recipe was loaded and every point's parameters resolved."""
    detail: str
    """What was checked."""
    warnings: tuple[str, ...] = ()
    """Problems that do not stop a run but spoil it (e.g. a DUT timeout shorter than a trial)."""


def check_recipes(campaign: Campaign) -> RecipeCheck:
    """Check DUT recipe names and per-point parameters against the recipe engine.

    Raises :class:`ConfigError` naming the campaign file, line and field of the
    offending recipe name or parameter.
    """
    source = campaign._source
    shown = str(campaign.file) if campaign.file is not None else None
    points = campaign.points()
    resolved = 0
    warnings: list[str] = []
    shadowed = shadowed_recipes()
    for i, dut in enumerate(campaign.testbed.duts):
        if dut.recipe in shadowed:
            warnings.append(
                f"DUT {dut.name}: recipe {dut.recipe} is the shipped one; {shadowed[dut.recipe]} of the working "
                f"directory is ignored (name that file in recipe:, or list its directory in NATBENCH_RECIPES)"
            )
        try:
            base_dir = campaign.file.parent if campaign.file is not None else None
            recipe = load_recipe(recipe_reference(dut.recipe, base_dir))
        except ConfigError as exc:  # RecipeError is a ConfigError
            # a broken recipe file: keep its own file:line; an unknown name: just the message
            detail = str(exc) if exc.file else exc.message
            raise source.error(shown, ("testbed", "duts", i, "recipe"), detail, exact=True) from None
        supplied = place_params(campaign, i)
        declared = recipe.params
        cache: list[tuple[dict[str, Any], dict[str, Any]]] = []
        worst: dict[tuple[bool, str], tuple[Lifetime, int, str]] = {}  # (refused, metric) -> the longest need
        for p in points:
            params = p.dut_params.get(dut.name, {})
            values = next((r for q, r in cache if q == params), None)
            if values is None:
                given = {k: v for k, v in supplied.items() if k in declared and k not in params}
                try:
                    values = dict(recipe.resolve({**given, **params}))
                except ConfigError as exc:
                    path = _param_path(campaign, i, dut.name, exc.field, params)
                    raise source.error(shown, path, f"recipe {dut.recipe!r}: {exc.message}", exact=True) from None
                cache.append((params, values))
                resolved += 1
            limit = values.get("udp_timeout")
            if isinstance(limit, int | float) and not isinstance(limit, bool):
                for name, need in _lifetimes(campaign, p):
                    key = (need.refused, name)
                    if need.seconds > limit and (key not in worst or need.seconds > worst[key][0].seconds):
                        worst[key] = (need, int(limit), p.label)
        for refused in (True, False):  # steps refused first, then connections that would expire
            for (was_refused, name), (need, limit, label) in worst.items():
                if was_refused is not refused:
                    continue
                consequence = (
                    "a step that slow is refused as invalid (dut_timeout) and ends the repetition"
                    if refused
                    else "connections would expire during the trial"
                )
                warnings.append(
                    f"DUT {dut.name}: udp_timeout {limit} s is shorter than {name}'s {need.step} at {label} "
                    f"(~{need.seconds:.0f} s): {consequence}"
                )
    detail = f"recipes checked: {len(campaign.testbed.duts)} DUT(s), {resolved} parameter set(s)"
    return RecipeCheck(True, detail, tuple(warnings))


def _lifetimes(campaign: Campaign, point: Any) -> list[tuple[str, Lifetime]]:
    """(metric, need) for every metric of the campaign that keeps connections: how long its steps need them at
    ``point``, as the metric's lifetime model says (:attr:`~natbench.metrics.Metric.lifetime`)."""
    selected = {name: campaign.settings_for(point, name) for name in campaign.metrics}
    out: list[tuple[str, Lifetime]] = []
    for name, settings in selected.items():
        model = metric(name).lifetime
        if model is not None:
            out += [(name, need) for need in model(settings, point.connections, selected)]
    return out


def place_params(campaign: Campaign, index: int) -> dict[str, Any]:
    """Recipe parameters the place of DUT ``index`` supplies where the campaign leaves them unset (the local lab's
    interface names and DUT addresses), from its access kind's backend
    (:meth:`~natbench.plugins.AccessBackend.recipe_params`): the same as the run gets from the place."""
    duts = campaign.testbed.duts
    access = duts[index].access
    peers = [i for i, d in enumerate(duts) if d.access.kind == access.kind]
    backend = ACCESS.get(access.kind, field=f"testbed.duts.{duts[index].name}.access.kind")
    return backend.recipe_params(access, campaign.traffic.address_plan(), peers.index(index), len(peers))


def _param_path(
    campaign: Campaign, index: int, dut: str, field: str | None, params: dict[str, Any]
) -> tuple[str | int, ...]:
    """Where the offending parameter was written: the swept value, else the DUT's params entry."""
    base: tuple[str | int, ...] = ("testbed", "duts", index, "params")
    if field is None:
        return base
    name = field.split(".")[-1]
    key = f"duts.{dut}.{name}"
    for group in ("zip", "product"):
        values = getattr(campaign.spec.sweep, group).get(key)
        if values is not None:
            for j, raw in enumerate(values):
                if resolve_param_value(raw) == params.get(name):
                    return ("sweep", group, key, j)
            return ("sweep", group, key)
    return (*base, name)
