"""The software tester as a testbed backend (``testbed.tester.kind: software``), with its preflight."""

from __future__ import annotations

from natbench.campaign.schema import TesterSpec
from natbench.testbed.backends import Endpoint, LabRequest, Locate, TesterContext
from natbench.testers.software import check_settings, create
from natbench.testers.software.tester import SoftwareTester

__all__ = ["SoftwareBackend"]


class SoftwareBackend:
    """The built-in software tester: AF_PACKET sockets in this machine's (or the lab's) namespaces."""

    needs_root = True
    """Raw sockets and network namespaces need root."""

    def check(self, spec: TesterSpec, locate: Locate | None) -> None:
        """Check the settings (unknown names, ``cpus``, option types) before anything is built."""
        check_settings(spec.settings, locate)

    def lab_request(self, spec: TesterSpec) -> LabRequest:
        """The lab from the settings ``lab`` (its name; default: one of its own per run), ``keep_lab``
        (leave it up afterwards) and ``cpus`` (the CPUs the lab sets aside for the tester)."""
        settings, _ = check_settings(spec.settings)
        cpus = settings.get("cpus")
        return LabRequest(
            name=str(settings["lab"]) if settings.get("lab") else None,
            keep=bool(settings.get("keep_lab")),
            tester_cpus=tuple(int(c) for c in cpus) if cpus else None,
        )

    def create(self, spec: TesterSpec, context: TesterContext) -> SoftwareTester:
        """The tester on the lab's ports (``context.lab``) or on the ports the settings name."""
        return create(spec.settings, lab=context.lab, receive_timeout=context.receive_timeout, locate=context.locate)

    def problems(self, spec: TesterSpec) -> list[str]:
        """The C data path must be built."""
        from natbench.testers.software import tester

        if getattr(tester, "_engine", None) is None:
            return ["the software tester's C engine is not built (pip install -e . builds it)"]
        return []

    def endpoints(self, spec: TesterSpec) -> list[Endpoint]:
        """None: the software tester talks to no server."""
        return []
