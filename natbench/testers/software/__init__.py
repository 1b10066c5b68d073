"""The built-in software tester (AF_PACKET, C data path) and its factory."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from natbench.errors import ConfigError
from natbench.testers.base import LabPorts, Port
from natbench.testers.software.tester import SoftwareTester, read_mac
from natbench.traffic.enumeration import EnumerationOrder

if TYPE_CHECKING:
    from natbench.testbed.backends import Locate

__all__ = ["SoftwareTester", "check_settings", "create"]

_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "timeout": float,
    "rate_tolerance": float,
    "lateness_slack": float,
    "max_stall": float,
    "catchup": float,
    "realtime": bool,
    "rcvbuf": int,
}
"""Settings handed to :class:`SoftwareTester` as keyword arguments, with the type each is converted to."""

_CHOICES: dict[str, tuple[str, ...]] = {"enumeration": tuple(str(o) for o in EnumerationOrder)}
"""Settings handed to :class:`SoftwareTester` that take one of a few names (the first is the default)."""

_KNOWN = {"initiator", "responder", "cpus", "lab", "keep_lab", *_OPTIONS, *_CHOICES}
"""Every setting of ``testbed.tester.settings`` the software tester accepts."""


def _port(spec: Any, field: str) -> Port:
    if not isinstance(spec, dict) or "interface" not in spec:
        raise ConfigError("needs {interface, peer_mac[, mac, netns]}", field=f"testbed.tester.settings.{field}")
    if "peer_mac" not in spec:
        raise ConfigError("needs peer_mac (the DUT interface's MAC address)", field=f"testbed.tester.settings.{field}")
    netns = spec.get("netns")
    mac = spec.get("mac") or read_mac(str(spec["interface"]), netns)
    return Port(str(spec["interface"]), str(mac), str(spec["peer_mac"]), netns)


def create(
    settings: Mapping[str, Any],
    *,
    lab: LabPorts | None = None,
    receive_timeout: float | None = None,
    locate: Locate | None = None,
) -> SoftwareTester:
    """Build the software tester (``testbed.tester.kind: software``).

    With ``lab`` (the tester's side of the local lab the testbed built for DUTs reached through
    ``access: {kind: lab}``) the tester uses the lab's ports and CPUs; otherwise ``settings``
    names the ports: ``initiator`` / ``responder`` = ``{interface, peer_mac, mac?, netns?}``.
    Optional settings: ``cpus`` (tester CPUs), ``timeout`` (receive wait after sending, s;
    default: ``receive_timeout``, the longest metric ``timeout`` of the campaign),
    ``rate_tolerance``, ``lateness_slack``, ``max_stall``, ``catchup``, ``realtime``, ``rcvbuf``,
    ``enumeration`` (phase-1 order: ``feistel``, the default, or ``product`` to reproduce runs
    made before it); ``lab``
    (lab name) and ``keep_lab`` (leave a lab the testbed created up after it) are the lab's
    (see :mod:`natbench.testers.software.backend`). ``locate`` names the campaign's file and
    line in a settings error.
    """
    checked, options = check_settings(settings, locate)
    if "timeout" not in options and receive_timeout is not None:
        options["timeout"] = receive_timeout  # the procedures do not pass it per trial
    if lab is not None:
        return SoftwareTester(
            lab.initiator,
            lab.responder,
            cpus=checked.get("cpus") or lab.cpus,
            before_prepare=lab.after_dut_setup,
            **options,
        )
    if "initiator" not in checked or "responder" not in checked:
        raise ConfigError(
            "the software tester needs a lab DUT (access: {kind: lab}) or settings initiator and responder",
            field="testbed.tester.settings",
        )
    return SoftwareTester(
        _port(checked["initiator"], "initiator"),
        _port(checked["responder"], "responder"),
        cpus=checked.get("cpus"),
        **options,
    )


def check_settings(settings: Mapping[str, Any], locate: Locate | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The settings with ``cpus`` checked, and the tester options converted; nothing is built.

    A problem is a ConfigError naming ``testbed.tester.settings.<name>`` (and, through ``locate``,
    the campaign's file and line).
    """
    try:
        return _checked(dict(settings))
    except ConfigError as exc:  # name the campaign's file and line where the setting is
        if exc.field and exc.file is None and locate is not None:
            raise locate(tuple(exc.field.split(".")), exc.message) from None
        raise


def _cpus(value: Any) -> list[int]:
    """The ``cpus`` setting: distinct CPU numbers this process may run on (one lane each, at most two used)."""
    field = "testbed.tester.settings.cpus"
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    numbers = isinstance(value, list) and all(isinstance(c, int) and not isinstance(c, bool) for c in value)
    if not numbers or not value:
        raise ConfigError(f"cpus must be a non-empty list of CPU numbers, got {value!r}", field=field)
    allowed = os.sched_getaffinity(0)
    bad = [c for c in value if c not in allowed]
    if bad:
        raise ConfigError(f"CPU(s) {bad} not available to this process (allowed: {sorted(allowed)})", field=field)
    if len(set(value)) != len(value):
        raise ConfigError(f"cpus lists a CPU twice: {value}", field=field)
    return list(value)


def _checked(settings: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The settings with ``cpus`` checked, and the tester options converted; all before anything is built."""
    unknown = set(settings) - _KNOWN
    if unknown:
        raise ConfigError(
            f"unknown software tester setting(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_KNOWN))}",
            field="testbed.tester.settings",
        )
    if "cpus" in settings:
        settings["cpus"] = _cpus(settings["cpus"])
    options = {name: _option(name, kind, settings[name]) for name, kind in _OPTIONS.items() if name in settings}
    for name, names in _CHOICES.items():
        if name in settings:
            if settings[name] not in names:
                raise ConfigError(
                    f"{name} must be one of {', '.join(names)}, got {settings[name]!r}",
                    field=f"testbed.tester.settings.{name}",
                )
            options[name] = str(settings[name])
    return settings, options


def _option(name: str, kind: Callable[[Any], Any], value: Any) -> Any:
    """One tester setting converted to its type; a bad value is a ConfigError naming the setting."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{name} must be true or false, got {value!r}", field=f"testbed.tester.settings.{name}")
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(f"{name} must be a number, got {value!r}", field=f"testbed.tester.settings.{name}")
    try:
        number = kind(value)
    except ValueError:
        raise ConfigError(f"{name} must be a number, got {value!r}", field=f"testbed.tester.settings.{name}") from None
    if number < 0:
        raise ConfigError(f"{name} must not be negative, got {value!r}", field=f"testbed.tester.settings.{name}")
    return number
