"""The TRex tester as a testbed backend (``testbed.tester.kind: trex``), with its preflight."""

from __future__ import annotations

from natbench.campaign.schema import TesterSpec
from natbench.testbed.backends import Endpoint, LabRequest, Locate, TesterContext
from natbench.testers.trex.address import DEFAULT_SYNC_PORT, parse_server
from natbench.testers.trex.tester import TRexSettings, TRexTester, check_settings, create

__all__ = ["TRexBackend"]


class TRexBackend:
    """A TRex STL server, reached over its RPC ports; needs no root on this machine."""

    needs_root = False
    """The TRex client only opens TCP connections."""
    default_rate_tolerance = TRexSettings.model_fields["rate_tolerance"].default
    """The achieved-rate tolerance a TRex trial is judged with when the campaign sets none (the engine uses
    the same: one tolerance per run)."""

    def check(self, spec: TesterSpec, locate: Locate | None) -> None:
        """Validate the settings (server, ports, MACs, ...) without connecting."""
        check_settings(spec.settings, locate)

    def lab_request(self, spec: TesterSpec) -> LabRequest | None:
        """None: TRex drives its own ports, not the local lab's."""
        return None

    def create(self, spec: TesterSpec, context: TesterContext) -> TRexTester:
        """The tester (it connects on its first ``prepare``)."""
        return create(spec.settings, locate=context.locate)

    def problems(self, spec: TesterSpec) -> list[str]:
        """The TRex client library must be importable."""
        from natbench.testers.trex.client import load_api

        try:
            load_api()
        except Exception as exc:  # TesterError or ImportError: either way no client
            return [f"no TRex client library: {exc}"]
        return []

    def endpoints(self, spec: TesterSpec) -> list[Endpoint]:
        """The server's RPC port (a malformed ``server`` is the factory's ConfigError, not a skip)."""
        server = spec.settings.get("server")
        if not server:
            return []
        try:
            address = parse_server(str(server))
        except ValueError:
            return []
        port = spec.settings.get("sync_port") or address.port or DEFAULT_SYNC_PORT
        return [("no TRex server reachable", address.host, int(port))]
