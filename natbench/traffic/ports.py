"""Port ranges: the reported parameter of every stateful test."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class PortRange:
    """An inclusive range of UDP ports ``first..last`` (RFC 4814 restricted range)."""

    first: int
    """First port of the range (1..65535)."""
    last: int
    """Last port of the range, inclusive (>= first)."""

    def __post_init__(self) -> None:
        if not (0 < self.first <= self.last <= 65535):
            raise ValueError(f"invalid port range {self.first}-{self.last}: need 1 <= first <= last <= 65535")

    def __len__(self) -> int:
        return self.last - self.first + 1

    def __contains__(self, port: object) -> bool:
        return isinstance(port, int) and self.first <= port <= self.last

    def __str__(self) -> str:
        return f"{self.first}-{self.last}"
