"""The settings of the TRex tester kind (``testbed.tester.settings`` of ``kind: trex``): light, no client.

The campaign schema validates a TRex campaign's settings with :class:`TRexSettings` (so they are checked by
``natbench validate`` and stored with every default in a run's campaign.yaml) without importing the tester.
"""

from __future__ import annotations

from pydantic import Field, ValidationInfo, field_validator

from natbench.plugins import TesterSettings
from natbench.testers.trex.address import DEFAULT_SYNC_PORT, ServerAddress, parse_server

DEFAULT_BIAS_TOLERANCE = 1e-4
"""Largest relative deviation from uniform of a phase-2 random port before its range is split (the default of
``bias_tolerance``)."""

_MAC = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"


class TRexSettings(TesterSettings):
    """The settings of ``testbed.tester.kind: trex`` (a TRex STL server)."""

    server: str
    """The TRex server (STL mode, started with ``-i``): ``host``, ``host:port`` or ``[ipv6]:port``
    (host name, IPv4 or IPv6 address; the port is the RPC sync port)."""
    sync_port: int | None = Field(default=None, ge=1, le=65535)
    """RPC (sync) port of the server; default: the port given in ``server``, else 4501."""
    async_port: int | None = Field(default=None, ge=1, le=65535)
    """Publisher (async) port of the server; default: the RPC port - 1 (TRex's 4500 next to 4501)."""
    ports: tuple[int, int] = (0, 1)
    """TRex ports (private / Initiator side, public / Responder side); a dual port pair."""
    private_dst_mac: str = Field(pattern=_MAC)
    """MAC address of the DUT's private interface (destination of Initiator frames)."""
    public_dst_mac: str = Field(pattern=_MAC)
    """MAC address of the DUT's public interface (destination of Responder frames)."""
    software: bool = False
    """The server runs with ``--software`` (needed for NAT64 latency; af_packet / veth setups)."""
    pin_cores: bool = True
    """Bidirectional traffic: give each port of the dual port its own half of the cores (CORE_MASK_PIN)."""
    rx_delay_ms: int = Field(default=200, ge=0)
    """Wait after the last frame before counters are read, used until the engine passes the metric's
    ``timeout`` through :meth:`TRexTester.set_receive_timeout` (which it does before every trial)."""
    rate_tolerance: float = Field(default=0.01, ge=0, lt=1)
    """Relative shortfall of the achieved TX rate that still counts as keeping the rate (TRex's own check and the
    engine's judgement of every trial of the run)."""
    timing_slack: float = Field(default=0.05, ge=0)
    """Seconds of start-RPC / idle-polling overhead allowed on top of a burst's or trial's nominal duration
    (live, v3.08 on the same host: 3 ms start RPC + up to 20 ms until the idle port is seen). It bounds how
    precisely a short burst's rate is known: N / R should be long against it."""
    timeout_margin: float = Field(default=30.0, gt=0)
    """Seconds added to a trial's nominal duration before natbench gives up waiting."""
    step: int = Field(default=1, ge=1)
    """Phase-1 source-list step (1 = the natbench order; another value coprime with N = another order)."""
    bias_tolerance: float = Field(default=DEFAULT_BIAS_TOLERANCE, gt=0)
    """Largest relative deviation from uniform of a phase-2 random port before its range is split."""
    connect_timeout: float | None = Field(default=None, gt=0)
    """RPC timeout in seconds (client default when unset)."""
    busy_core_pct: float = Field(default=90.0, gt=0, le=100)
    """A TRex data-plane thread at or above this one-second CPU utilisation during a trial gets the trial a
    pacing warning (a saturated core sends what fell behind in catch-up bursts)."""

    @field_validator("ports")
    @classmethod
    def _distinct(cls, v: tuple[int, int]) -> tuple[int, int]:
        if v[0] == v[1] or min(v) < 0:
            raise ValueError("need two different non-negative port numbers")
        return v

    @field_validator("server")
    @classmethod
    def _server_address(cls, v: str) -> str:
        parse_server(v)  # ValueError naming the value and the accepted forms
        return v.strip()

    @field_validator("sync_port")
    @classmethod
    def _one_sync_port(cls, v: int | None, info: ValidationInfo) -> int | None:
        server = info.data.get("server")
        given = parse_server(server).port if isinstance(server, str) else None
        if v is not None and given is not None and v != given:
            raise ValueError(f"{v} disagrees with the port in server {server!r}: give the RPC port once")
        return v

    @property
    def address(self) -> ServerAddress:
        """The server's host and the port given with it."""
        return parse_server(self.server)

    @property
    def rpc_port(self) -> int:
        """The RPC (sync) port natbench connects to."""
        return self.sync_port or self.address.port or DEFAULT_SYNC_PORT

    @property
    def publisher_port(self) -> int:
        """The publisher (async) port natbench subscribes to."""
        return self.async_port or self.rpc_port - 1
