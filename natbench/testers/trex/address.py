"""The TRex server address of the settings: ``host``, ``host:port``, ``[ipv6]`` or ``[ipv6]:port``."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

DEFAULT_SYNC_PORT = 4501
"""TRex's RPC (sync) port when none is given; its publisher (async) port is the one below it, 4500."""

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"^(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*\.?$")
_BRACKETED = re.compile(r"^\[(?P<host>[^\[\]]*)\](?::(?P<port>[^:]*))?$")
_FORMS = "write host, host:port or [ipv6]:port (port: the RPC sync port, default 4501)"


@dataclass(frozen=True)
class ServerAddress:
    """A parsed server address."""

    host: str
    """Host name, IPv4 address or IPv6 address (without brackets)."""
    port: int | None
    """The RPC (sync) port given with the host, None when there was none."""

    @property
    def is_ipv6(self) -> bool:
        """True for an IPv6 address literal."""
        return ":" in self.host

    @property
    def endpoint_host(self) -> str:
        """The host as it goes in front of ``:port`` in an endpoint: IPv6 addresses in brackets."""
        return f"[{self.host}]" if self.is_ipv6 else self.host


def _port(text: str, server: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise ValueError(f"TRex server {server!r}: port {text!r} is not a number from 1 to 65535; {_FORMS}")
    return int(text)


def _ipv6(text: str, server: str) -> str:
    try:
        return str(ipaddress.IPv6Address(text))
    except ValueError:
        raise ValueError(f"TRex server {server!r}: {text!r} is not an IPv6 address; {_FORMS}") from None


def parse_server(server: str) -> ServerAddress:
    """Split ``server`` into host and optional port; ValueError saying what is wrong and which forms work."""
    text = server.strip()
    if not text:
        raise ValueError(f"TRex server is empty; {_FORMS}")
    if "://" in text:
        raise ValueError(f"TRex server {server!r}: no scheme (the client adds tcp://); {_FORMS}")
    m = _BRACKETED.match(text)
    if m:
        port = m.group("port")
        return ServerAddress(_ipv6(m.group("host"), server), None if port is None else _port(port, server))
    if text.count(":") >= 2:  # a bare IPv6 address: it cannot carry a port
        try:
            return ServerAddress(str(ipaddress.IPv6Address(text)), None)
        except ValueError:
            raise ValueError(
                f"TRex server {server!r}: not an IPv6 address (with a port it is written [address]:port); {_FORMS}"
            ) from None
    host, colon, port_text = text.partition(":")
    if not _HOSTNAME.match(host) or (host.replace(".", "").isdigit() and not _is_ipv4(host)):
        raise ValueError(f"TRex server {server!r}: {host!r} is not a host name or an IPv4 address; {_FORMS}")
    return ServerAddress(host, _port(port_text, server) if colon else None)


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True
