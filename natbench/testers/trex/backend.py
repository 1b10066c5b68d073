"""The TRex tester as a testbed backend (``testbed.tester.kind: trex``), with its preflight.

Light on purpose: the campaign schema loads it for :class:`~natbench.testers.trex.settings.TRexSettings`;
the tester itself (and, through it, the TRex client) is imported when one is created.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from natbench.plugins import Endpoint, LabRequest, Locate, TesterContext
from natbench.plugins.settings import validated
from natbench.testers.trex.settings import TRexSettings

if TYPE_CHECKING:
    from natbench.testers.trex.tester import TRexTester


def check_settings(settings: Mapping[str, Any], locate: Locate | None = None) -> TRexSettings:
    """``testbed.tester.settings`` of ``kind: trex`` given as a mapping, validated without connecting; a problem
    is one ConfigError naming ``testbed.tester.settings.<field>`` (and, through ``locate``, file and line)."""
    return validated(TRexSettings, settings, locate=locate)


def create(settings: TRexSettings | Mapping[str, Any], locate: Locate | None = None) -> TRexTester:
    """The TRex tester of ``settings`` (a mapping is validated first); it does not connect yet."""
    from natbench.testers.trex.tester import TRexTester

    return TRexTester(settings if isinstance(settings, TRexSettings) else check_settings(settings, locate))


class TRexBackend:
    """A TRex STL server, reached over its RPC ports; needs no root on this machine."""

    settings = TRexSettings
    """The settings model (server, ports, MACs, ...; ``rate_tolerance`` 0.01, responder mode ``read``)."""
    needs_root = False
    """The TRex client only opens TCP connections."""

    def check(self, settings: TRexSettings, locate: Locate | None) -> None:
        """Nothing depends on this machine: the model checked everything when the campaign was validated."""

    def lab_request(self, settings: TRexSettings) -> LabRequest | None:
        """None: TRex drives its own ports, not the local lab's."""
        return None

    def create(self, settings: TRexSettings, context: TesterContext) -> TRexTester:
        """The tester (it connects on its first ``prepare``)."""
        return create(settings)

    def problems(self, settings: TRexSettings | None) -> list[str]:
        """The TRex client library must be importable."""
        from natbench.testers.trex.client import load_api

        try:
            load_api()
        except Exception as exc:  # TesterError or ImportError: either way no client
            return [f'no TRex client library (pip install -e ".[trex]", Python < 3.12): {exc}']
        return []

    def endpoints(self, settings: TRexSettings) -> list[Endpoint]:
        """The server's RPC port."""
        return [("no TRex server reachable", settings.address.host, settings.rpc_port)]


BACKEND = TRexBackend()
"""The backend registered as tester kind ``trex``."""
