"""A working point: one column of a seed result table."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from natbench.traffic.ports import PortRange


def point_id(params: dict[str, Any]) -> str:
    """Stable id of a working point: the first 12 hex digits of SHA-256 of its canonical JSON."""
    blob = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def si_count(n: int) -> str:
    """Short human form of a connection count: 4000000 -> '4M', 1562500 -> '1.56M'."""
    for div, suffix in ((10**9, "G"), (10**6, "M"), (10**3, "k")):
        if n >= div:
            v = n / div
            text = f"{v:.3g}" if v < 100 else f"{v:.0f}"
            return text + suffix
    return str(n)


@dataclass(frozen=True)
class WorkingPoint:
    """One set of resolved parameters at which every selected metric is measured."""

    index: int
    """Position in the campaign's expansion order (0-based)."""
    src_ports: PortRange
    """Initiator source port range."""
    dst_ports: PortRange
    """Responder destination port range."""
    frame_size: int
    """IPv4 frame size in bytes."""
    cores: int | None = None
    """Active CPU cores of the swept DUT (None: leave as is)."""
    dut_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per DUT name: recipe parameters resolved for this point (table sizes, ...)."""
    swept_dut: str | None = None
    """Name of the DUT whose cores are swept (dual-DUT campaigns)."""
    name: str = ""
    """Short name of the DUT implementation used in labels (e.g. ``iptables``)."""
    metric_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per metric name: settings this point overrides (e.g. seed 000's per-column search error)."""
    co_swept_duts: tuple[str, ...] = ()
    """Further DUTs whose active cores also follow :attr:`cores` (seed 004 baseline: both routers)."""
    tag: str = ""
    """Extra label part that keeps labels unique in a campaign (e.g. ``128B``); not part of the id."""

    @property
    def connections(self) -> int:
        """Number of connections: |S| * |D|."""
        return len(self.src_ports) * len(self.dst_ports)

    @property
    def params(self) -> dict[str, Any]:
        """The resolved parameters as plain JSON (what the id hashes)."""
        out: dict[str, Any] = {
            "src_ports": [self.src_ports.first, self.src_ports.last],
            "dst_ports": [self.dst_ports.first, self.dst_ports.last],
            "frame_size": self.frame_size,
            "cores": self.cores,
            "dut_params": self.dut_params,
            "swept_dut": self.swept_dut,
        }
        # the optional parts only when present, so ids of points without them stay as before
        if self.metric_settings:
            out["metric_settings"] = self.metric_settings
        if self.co_swept_duts:
            out["co_swept_duts"] = list(self.co_swept_duts)
        return out

    @property
    def id(self) -> str:
        """Stable id (hash of :attr:`params`), identical across processes."""
        return point_id(self.params)

    @property
    def label(self) -> str:
        """Readable label, e.g. ``iptables-4c-4M`` or ``jool-1.56M-128B``."""
        parts = [self.name] if self.name else []
        if self.cores is not None:
            parts.append(f"{self.cores}c")
        parts.append(si_count(self.connections))
        if self.tag:
            parts.append(self.tag)
        return "-".join(parts)
