"""The software tester as a testbed backend (``testbed.tester.kind: software``), with its preflight.

Light on purpose: the campaign schema loads it for :class:`~natbench.testers.software.settings.SoftwareSettings`;
the tester and its C data path are imported when one is created.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from natbench.errors import ConfigError
from natbench.plugins import Endpoint, LabPorts, LabRequest, Locate, Port, TesterContext
from natbench.plugins.settings import TESTER_SETTINGS, validated
from natbench.testers.software.settings import PortSettings, SoftwareSettings

if TYPE_CHECKING:
    from natbench.testers.software.tester import SoftwareTester


def check_settings(settings: SoftwareSettings | Mapping[str, Any], locate: Locate | None = None) -> SoftwareSettings:
    """The settings validated (a mapping through :class:`SoftwareSettings`) and checked against this machine
    (the ``cpus`` must be available to natbench); nothing is built. A problem is one ConfigError naming
    ``testbed.tester.settings.<name>`` (and, through ``locate``, the campaign's file and line)."""
    checked = (
        settings if isinstance(settings, SoftwareSettings) else validated(SoftwareSettings, settings, locate=locate)
    )
    if checked.cpus is not None:
        allowed = os.sched_getaffinity(0)
        bad = [c for c in checked.cpus if c not in allowed]
        if bad:
            message = f"CPU(s) {bad} not available to this process (allowed: {sorted(allowed)})"
            if locate is not None:
                raise locate((*TESTER_SETTINGS, "cpus"), message)
            raise ConfigError(message, field=".".join((*TESTER_SETTINGS, "cpus")))
    return checked


def _port(spec: PortSettings) -> Port:
    from natbench.testers.software.probes import read_mac

    return Port(spec.interface, spec.mac or read_mac(spec.interface, spec.netns), spec.peer_mac, spec.netns)


def create(
    settings: SoftwareSettings | Mapping[str, Any],
    *,
    lab: LabPorts | None = None,
    receive_timeout: float | None = None,
    locate: Locate | None = None,
) -> SoftwareTester:
    """Build the software tester (``testbed.tester.kind: software``).

    With ``lab`` (the tester's side of the local lab the testbed built for DUTs reached through
    ``access: {kind: lab}``) the tester uses the lab's ports and CPUs; otherwise the settings name the
    ports (``initiator``, ``responder``). The receive ``timeout`` defaults to ``receive_timeout`` (the
    campaign's longest metric ``timeout``); ``locate`` names the campaign's file and line in a settings error.
    """
    from natbench.testers.software.tester import SoftwareTester

    s = check_settings(settings, locate)
    timeout = s.timeout if s.timeout is not None else receive_timeout
    options: dict[str, Any] = {
        "rate_tolerance": s.rate_tolerance,
        "lateness_slack": s.lateness_slack,
        "max_stall": s.max_stall,
        "catchup": s.catchup,
        "realtime": s.realtime,
        "rcvbuf": s.rcvbuf,
        "enumeration": str(s.enumeration),
    }
    if timeout is not None:  # the procedures do not pass it per trial
        options["timeout"] = timeout
    if lab is not None:
        return SoftwareTester(
            lab.initiator,
            lab.responder,
            cpus=s.cpus or lab.cpus,
            before_prepare=lab.after_dut_setup,
            host_load=lab.host_load,
            **options,
        )
    if s.initiator is None or s.responder is None:
        raise ConfigError(
            "the software tester needs a lab DUT (access: {kind: lab}) or settings initiator and responder",
            field=".".join(TESTER_SETTINGS),
        )
    return SoftwareTester(_port(s.initiator), _port(s.responder), cpus=s.cpus, **options)


class SoftwareBackend:
    """The built-in software tester: AF_PACKET sockets in this machine's (or the lab's) namespaces."""

    settings = SoftwareSettings
    """The settings model (ports, CPUs, lab, timing; ``rate_tolerance`` 0.001, responder mode ``learn``)."""
    needs_root = True
    """Raw sockets and network namespaces need root."""

    def check(self, settings: SoftwareSettings, locate: Locate | None) -> None:
        """The ``cpus`` must be available to this process (the model checked the rest)."""
        check_settings(settings, locate)

    def lab_request(self, settings: SoftwareSettings) -> LabRequest:
        """The lab from the settings ``lab`` (its name; default: one of its own per run), ``keep_lab``
        (leave it up afterwards) and ``cpus`` (the CPUs the lab sets aside for the tester)."""
        return LabRequest(
            name=settings.lab,
            keep=settings.keep_lab,
            tester_cpus=tuple(settings.cpus) if settings.cpus else None,
        )

    def create(self, settings: SoftwareSettings, context: TesterContext) -> SoftwareTester:
        """The tester on the lab's ports (``context.lab``) or on the ports the settings name."""
        return create(settings, lab=context.lab, receive_timeout=context.receive_timeout, locate=context.locate)

    def problems(self, settings: SoftwareSettings | None) -> list[str]:
        """The C data path must be built."""
        from natbench.testers.software import tester

        if getattr(tester, "_engine", None) is None:
            return ["the software tester's C engine is not built: pip install -e . builds it (needs gcc, python3-dev)"]
        return []

    def endpoints(self, settings: SoftwareSettings) -> list[Endpoint]:
        """None: the software tester talks to no server."""
        return []


BACKEND = SoftwareBackend()
"""The backend registered as tester kind ``software``."""
