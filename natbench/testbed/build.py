"""Build a campaign's testbed in one explicit call: the lab (when DUTs live in it), the tester, the DUT(s).

:func:`build_testbed` checks the tester's settings, brings the local lab up when a DUT is
reached through it (``access: {kind: lab}``), then calls the tester backend and the DUT
factory with what the lab hands over (the tester's ports and CPUs; each DUT's namespace, CPUs
and recipe parameters). Nothing is looked up behind the caller's back and the campaign is not
changed. The :class:`Testbed` owns what it built: closing it closes the tester and takes down a
lab it brought up (unless ``keep_lab``).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from natbench.duts.group import DutGroup
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe, recipe_reference
from natbench.errors import ConfigError, NatbenchError
from natbench.plugins import (
    ACCESS,
    TESTERS,
    Dut,
    DutPlacement,
    LabRequest,
    LabResource,
    Tester,
    TesterContext,
)
from natbench.testbed.lab import NetnsLab, recorded_lab
from natbench.testbed.lab.access import vm_settings
from natbench.testbed.lab.vm import VmLab, VmSettings

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign
    from natbench.campaign.schema import DutSpec, TrafficSpec


@dataclass
class Testbed:
    """A built tester and DUT, and the lab they run in; closing it closes the tester and releases the lab
    it brought up (unless the tester's settings asked to keep it)."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    tester: Tester
    """The traffic generator."""
    dut: Dut
    """The device(s) under test."""
    lab: LabResource | None = None
    """The local lab the tester and DUTs use (None: no DUT is reached through a lab)."""
    lab_created: bool = False
    """:func:`build_testbed` brought :attr:`lab` up (it was not up before)."""
    keep_lab: bool = False
    """Leave a lab this testbed brought up in place when it closes (the tester's ``keep_lab``)."""
    duts: tuple[DutSpec, ...] = field(default=())
    """The DUT specs the DUT was built from: the campaign's, with the recipe parameters the lab decides
    filled in where the campaign left them unset."""

    def close(self) -> None:
        """Close the tester, then take down a lab this testbed brought up (also when closing the tester failed)."""
        try:
            self.tester.close()
        finally:
            if self.lab is not None and self.lab_created and not self.keep_lab:
                self.lab.release()

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_testbed(campaign: Campaign, *, lab_name: str | None = None) -> Testbed:
    """Build the tester and the DUT of ``campaign`` (and the lab they need); see the module docstring.

    ``lab_name`` names a lab brought up for the testbed when the tester's settings name none (default:
    ``<campaign name>-<pid>``).

    Whatever fails, nothing built is left behind: the tester is closed again when the DUT cannot be
    built, and a lab brought up for the testbed is taken down again.
    """
    spec = campaign.testbed
    tester_backend = TESTERS.get(spec.tester.kind, field="testbed.tester.kind")
    access = [ACCESS.get(d.access.kind, field=f"testbed.duts.{d.name}.access.kind") for d in spec.duts]
    tester_backend.check(spec.tester.settings, campaign.error_at)  # before anything is built
    lab: LabResource | None = None
    request: LabRequest | None = None
    created = keep = False
    if any(a.uses_lab for a in access):
        request = tester_backend.lab_request(spec.tester.settings)
        if request is not None:
            vms = vm_settings([(d.name, d.access) for d in spec.duts])
            lab, created = _bring_up(request, campaign.name, campaign.traffic, vms, named=lab_name)
            keep = request.keep
        else:  # a tester that does not use the lab's ports: the lab made by hand, if there is exactly one
            lab = recorded_lab()
    try:
        timeouts = [m.timeout for m in campaign.metrics.values()]
        context = TesterContext(
            lab=lab.tester_ports() if lab is not None and request is not None else None,
            receive_timeout=max(timeouts) if timeouts else None,
            locate=campaign.error_at,
        )
        tester = tester_backend.create(spec.tester.settings, context)
        try:
            base_dir = campaign.file.parent if campaign.file is not None else None
            dut, duts = _build_dut(spec.duts, lab, base_dir)
        except BaseException:
            tester.close()
            raise
    except BaseException:
        if lab is not None and created:
            with contextlib.suppress(Exception):  # the build's own error is the one to see
                lab.release()
        raise
    return Testbed(tester, dut, lab, created, keep, duts)


def build_dut(duts: Sequence[DutSpec], *, lab: LabResource | None = None, base_dir: Path | None = None) -> Dut:
    """The DUT of ``duts`` (one, or a group in path order) placed by their access kinds, in ``lab`` for
    those reached through it; ``base_dir`` resolves relative recipe paths."""
    return _build_dut(duts, lab, base_dir)[0]


def _build_dut(
    duts: Sequence[DutSpec], lab: LabResource | None, base_dir: Path | None
) -> tuple[Dut, tuple[DutSpec, ...]]:
    """:func:`build_dut`'s DUT and the DUT specs it was built from (the lab's recipe parameters filled in),
    which :func:`build_testbed` keeps in :attr:`Testbed.duts`."""
    placed = _place_duts(duts, lab, base_dir)
    specs = tuple(d for d, _ in placed)
    return build_duts(specs, [p for _, p in placed], base_dir=base_dir), specs


def _bring_up(
    request: LabRequest,
    campaign: str,
    traffic: TrafficSpec,
    vms: list[tuple[str, VmSettings]] | None = None,
    *,
    named: str | None = None,
) -> tuple[NetnsLab, bool]:
    """The namespace lab (or, with ``vms``, the VM lab) of ``request`` with the campaign's family and addresses,
    up; and whether it was not up before. Unnamed by the request, it is ``named``, else
    ``<campaign name>-<pid>``: others may run the same campaign here."""
    if request.name:
        name = request.name
    elif named:
        name = named
    else:
        base = re.sub(r"[^A-Za-z0-9_.-]", "-", campaign or "natbench")
        name = f"{base[:20]}-{os.getpid()}"
    lab = (
        VmLab(name, vms=vms, family=traffic.family, addresses=traffic.address_plan(), tester_cpus=request.tester_cpus)
        if vms
        else NetnsLab(name, family=traffic.family, addresses=traffic.address_plan(), tester_cpus=request.tester_cpus)
    )
    created = not lab.is_up()
    lab.up()
    return lab, created


def _place_duts(
    duts: Sequence[DutSpec], lab: LabResource | None, base_dir: Path | None
) -> list[tuple[DutSpec, DutPlacement]]:
    """Each DUT's placement from its access backend and, for a DUT in ``lab``, its spec with the lab's
    recipe parameters filled in where the recipe declares them and the campaign left them unset."""
    out = []
    for d in duts:
        backend = ACCESS.get(d.access.kind, field=f"testbed.duts.{d.name}.access.kind")
        in_lab = lab if backend.uses_lab else None
        placement = backend.place(d.access, d.name, in_lab)
        if in_lab is not None:
            declared = _recipe_params(d.recipe, base_dir)
            supplied = {k: v for k, v in in_lab.dut_params(d.name).items() if k in declared and k not in d.params}
            if supplied:
                d = d.model_copy(update={"params": {**d.params, **supplied}})
        out.append((d, placement))
    return out


def _recipe_params(recipe: str, base_dir: Path | None) -> set[str]:
    """Parameter names a recipe declares (empty when it cannot be loaded: the DUT factory says why)."""
    try:
        return set(load_recipe(recipe_reference(recipe, base_dir)).params)
    except NatbenchError:
        return set()


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
