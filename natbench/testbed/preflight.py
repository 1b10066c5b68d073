"""Can this machine drive a testbed? The checks of the backends, the lab and the network, in one list."""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING, Any

from natbench.errors import ConfigError
from natbench.plugins import ACCESS, TESTERS, AccessBackend, Endpoint, TesterBackend
from natbench.testbed.lab import lab_problems

if TYPE_CHECKING:
    from natbench.campaign.schema import TestbedSpec


NEEDS_ROOT = "needs root (the software tester and local DUTs use raw sockets and network namespaces)"
"""The problem a testbed that needs root has when natbench does not run as root."""


def testbed_problems(testbed: TestbedSpec, *, probe_network: bool = True) -> list[str]:
    """Why this machine cannot drive ``testbed`` (empty when it can): one reason per problem.

    In this order: root (when the tester or a DUT's access kind needs it), the local lab's tools
    (a DUT reached through the lab), each backend's own checks (the software tester's C engine,
    the TRex client library) and, with ``probe_network``, a TCP connection to every service the
    backends name (the TRex server, every SSH DUT).
    """
    problems: list[str] = []
    tester: TesterBackend[Any] | None = None
    try:
        tester = TESTERS.get(testbed.tester.kind, field="testbed.tester.kind")
    except ConfigError as exc:  # a plugin that cannot be loaded here
        problems.append(exc.message)
    duts: list[tuple[str, AccessBackend[Any]]] = [
        (d.name, ACCESS.get(d.access.kind, field=f"testbed.duts.{d.name}.access.kind")) for d in testbed.duts
    ]
    needs_root = (tester is not None and tester.needs_root) or any(b.needs_root for _, b in duts)
    if needs_root and os.geteuid() != 0:
        problems.insert(0, NEEDS_ROOT)
    if any(b.uses_lab for _, b in duts):
        problems += lab_problems()
    for d, (_, backend) in zip(testbed.duts, duts, strict=True):
        problems += backend.problems(d.access)
    endpoints: list[Endpoint] = []
    if tester is not None:
        problems += tester.problems(testbed.tester.settings)
        endpoints += tester.endpoints(testbed.tester.settings)
    for d, (name, backend) in zip(testbed.duts, duts, strict=True):
        endpoints += backend.endpoints(d.access, name)
    if probe_network:
        problems += [f"{what}: {why}" for what, host, port in endpoints if (why := tcp_unreachable(host, port))]
    return problems


def tcp_unreachable(host: str, port: int, timeout: float = 2.0) -> str | None:
    """Why a TCP connection to ``host:port`` fails within ``timeout`` seconds; None when it succeeds."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as exc:
        return f"{host}:{port}: {exc.strerror or exc}"
