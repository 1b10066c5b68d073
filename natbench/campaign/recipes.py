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
from natbench.metrics.lifetime import establishment_lifetime
from natbench.metrics.settings import SearchSettings
from natbench.metrics.validation import EstablishmentSettings, ValidationSettings
from natbench.plugins import ACCESS

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign

__all__ = ["RecipeCheck", "check_recipes", "place_params"]


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
        worst: dict[str, tuple[float, int, str]] = {}
        slowest: dict[str, tuple[float, int, str, str]] = {}
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
                for metric, need in _connection_lifetimes(campaign, p).items():
                    if need > limit and need > worst.get(metric, (0.0, 0, ""))[0]:
                        worst[metric] = (need, int(limit), p.label)
                for metric, (need, step) in _establishment_lifetimes(campaign, p).items():
                    if need > limit and need > slowest.get(metric, (0.0, 0, "", ""))[0]:
                        slowest[metric] = (need, int(limit), p.label, step)
        for metric, (need, limit, label, step) in slowest.items():
            warnings.append(
                f"DUT {dut.name}: udp_timeout {limit} s is shorter than {metric}'s {step} at {label} "
                f"(~{need:.0f} s): a step that slow is refused as invalid (dut_timeout) and ends the repetition"
            )
        for metric, (need, limit, label) in worst.items():
            warnings.append(
                f"DUT {dut.name}: udp_timeout {limit} s is shorter than {metric}'s phase 1 + gap + phase 2 "
                f"at {label} (~{need:.0f} s): connections would expire during the trial"
            )
    detail = f"recipes checked: {len(campaign.testbed.duts)} DUT(s), {resolved} parameter set(s)"
    return RecipeCheck(True, detail, tuple(warnings))


def _connection_lifetimes(campaign: Campaign, point: Any) -> dict[str, float]:
    """Seconds connections must live per metric that fills the table at ``fill_rate`` (RFC 9693: nothing may expire)."""
    out: dict[str, float] = {}
    for name in campaign.metrics:
        s = campaign.settings_for(point, name)
        fill = getattr(s, "fill_rate", None)
        if not fill:
            continue
        phase2 = float(getattr(s, "duration", 0.0))
        out[name] = point.connections / fill + s.timeout + float(getattr(s, "gap", 0.0)) + phase2 + s.timeout
    return out


def _establishment_lifetimes(campaign: Campaign, point: Any) -> dict[str, tuple[float, str]]:
    """Per connection-establishment metric (cps, capacity, validation): the seconds its slowest step needs its
    connections for (:func:`~natbench.metrics.lifetime.establishment_lifetime`) and what that step is.

    A binary search only tries midpoints of intervals at least ``error`` wide, so its lowest rate is
    ``lower + error / 2``; capacity probes up to ``max_connections``; validation runs at its ``rate`` (else at the
    lowest rate cps could report). Steps are validated (reverse frames at alpha x rate) unless ``validation: off``.
    """
    out: dict[str, tuple[float, str]] = {}
    for name in campaign.metrics:
        s = campaign.settings_for(point, name)
        if isinstance(s, EstablishmentSettings) and isinstance(s, SearchSettings):
            rate = s.lower + s.error / 2
            n = int(getattr(s, "max_connections", point.connections))
            validates = s.validation != "off"
            need = establishment_lifetime(n, rate, s.timeout, rate * s.alpha if validates else None)
            what = "phase 1 and its validation" if validates else "phase 1"
            out[name] = (need, f"{what} of {n:,} connections at {rate:g}/s, the lowest rate its search could try")
        elif isinstance(s, ValidationSettings):
            cps = campaign.settings_for(point, "cps") if "cps" in campaign.metrics else None
            given = s.rate or (cps.lower + cps.error / 2 if isinstance(cps, SearchSettings) else None)
            if given:
                reverse = s.reverse_rate or given * s.alpha
                need = establishment_lifetime(point.connections, given, s.timeout, reverse, s.gap)
                out[name] = (need, f"phase 1, gap and reverse frames at {given:g}/s")
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
