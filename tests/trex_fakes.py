"""A stand-in for natbench.testers.trex.client.TRexSession in unit tests: every setup call is a no-op.

Tests subclass it and answer ``start`` / ``wait`` / ``stats`` the way their trial needs.
"""

from __future__ import annotations

from typing import Any


class QuietSession:
    """Two ports, one core per port, fixed MACs; connecting, acquiring, loading and clearing do nothing."""

    cores_per_port = 1

    def connect(self) -> None: ...
    def port_count(self) -> int:
        return 2

    def acquire(self, ports: list[int]) -> None: ...
    def set_promiscuous(self, ports: list[int], on: bool) -> None: ...
    def set_l2(self, port: int, mac: str) -> None: ...
    def port_macs(self, ports: list[int]) -> dict[int, str]:
        return {p: f"02:00:00:00:00:1{p}" for p in ports}

    def load(self, port: int, streams: list[Any]) -> None: ...
    def clear_stats(self, ports: list[int]) -> None: ...
    def start(self, ports: list[int], **kw: Any) -> None: ...
    def latency(self, pg_ids: list[int]) -> dict[Any, Any]:
        return {}
