"""Build the tester and the DUT(s) of a campaign through a tiny registry with lazy imports.

A tester kind names a ``"module:factory"`` target; the module is imported only
when a campaign uses that kind, so the core never imports the TRex client or
paramiko. A factory is called as ``factory(settings: dict, campaign) -> Tester``.
DUTs are built by ``natbench.duts.factory:build_duts(campaign) -> Dut``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, ClassVar

from natbench.duts.base import Dut
from natbench.errors import ConfigError
from natbench.testers.base import Tester

__all__ = ["DUT_FACTORY", "TESTERS", "Testbed", "build_dut", "build_testbed", "build_tester", "register_tester"]

TESTERS: dict[str, str] = {
    "software": "natbench.testers.software:create",
    "trex": "natbench.testers.trex:create",
}
"""Tester kind -> ``"module:factory"``."""

DUT_FACTORY = "natbench.duts.factory:build_duts"
"""``"module:function"`` that builds the campaign's DUT(s)."""


def register_tester(kind: str, target: str) -> None:
    """Register (or replace) the factory of a tester kind, e.g. ``register_tester("fake", "mypkg:create")``."""
    if ":" not in target:
        raise ValueError(f"tester target must look like 'module:factory', got {target!r}")
    TESTERS[kind] = target


def _resolve(target: str) -> Any:
    module, _, name = target.partition(":")
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {target}: {exc}") from exc
    except AttributeError as exc:
        raise ConfigError(f"{module} has no {name}") from exc


def _field(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _settings(tester_section: Any) -> dict[str, Any]:
    settings = _field(tester_section, "settings", None)
    if settings is None:
        if hasattr(tester_section, "model_dump"):
            settings = tester_section.model_dump()
        elif isinstance(tester_section, dict):
            settings = dict(tester_section)
        else:
            settings = {}
        settings.pop("kind", None)
    elif hasattr(settings, "model_dump"):
        settings = settings.model_dump()
    return dict(settings)


def build_tester(campaign: Any) -> Tester:
    """The campaign's tester (``campaign.testbed.tester``: kind + settings)."""
    section = _field(_field(campaign, "testbed"), "tester")
    kind = str(_field(section, "kind", "") or "")
    if kind not in TESTERS:
        raise ConfigError(
            f"unknown tester kind {kind!r}; known: {', '.join(sorted(TESTERS))}", field="testbed.tester.kind"
        )
    factory = _resolve(TESTERS[kind])
    tester: Tester = factory(_settings(section), campaign)
    return tester


def build_dut(campaign: Any) -> Dut:
    """The campaign's DUT (one object acting for all of ``campaign.testbed.duts``)."""
    dut: Dut = _resolve(DUT_FACTORY)(campaign)
    return dut


@dataclass
class Testbed:
    """A built tester and DUT; closing it closes the tester."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    tester: Tester
    """The traffic generator."""
    dut: Dut
    """The device(s) under test."""

    def close(self) -> None:
        """Release the tester."""
        self.tester.close()

    def __enter__(self) -> Testbed:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def build_testbed(campaign: Any) -> Testbed:
    """Build the tester and the DUT of ``campaign`` (the tester is closed again if the DUT cannot be built)."""
    tester = build_tester(campaign)
    try:
        dut = build_dut(campaign)
    except BaseException:
        tester.close()
        raise
    return Testbed(tester, dut)
