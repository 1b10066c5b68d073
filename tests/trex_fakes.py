"""Stand-ins for natbench.testers.trex.client.TRexSession in unit tests.

``QuietSession``: every setup call is a no-op; tests subclass it and answer ``start`` / ``wait`` /
``stats`` the way their trial needs.

``LibrarySession``: a trial whose counters come out of the TRex client library's own stats classes
(``PortStats``, ``PortXStats``, ``GlobalStats``, ``UtilStats`` of lbr-trex-client): the test gives the
server's raw counters (the JSON fields trex-core's ``port_stats_to_json`` / ``global_stats_to_json`` /
``get_port_xstats_values`` / ``get_utilization`` send) before and after the trial, ``clear_stats``
makes the first the library's reference, and ``stats`` / ``xstats`` / ``utilization`` return exactly
what ``get_stats`` / ``get_xstats`` / ``get_util_stats`` would (values relative to the reference).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Mapping
from typing import Any

DPDK_XSTATS = (
    # the generic names every DPDK port has (lib/ethdev/rte_ethdev.c: eth_dev_stats_strings, then one
    # queue's rx_q<N>_ / tx_q<N>_ names); net_af_packet (software mode over veth) has no others
    "rx_good_packets",
    "tx_good_packets",
    "rx_good_bytes",
    "tx_good_bytes",
    "rx_missed_errors",
    "rx_errors",
    "tx_errors",
    "rx_mbuf_allocation_errors",
    "rx_q0_packets",
    "rx_q0_bytes",
    "rx_q0_errors",
    "tx_q0_packets",
    "tx_q0_bytes",
)

PORT_FIELDS = ("opackets", "obytes", "ipackets", "ibytes", "ierrors", "oerrors")
"""Counters of trex-core ``CGlobalStats::port_stats_to_json`` (besides the rates and ``m_cpu_util``)."""


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

    def xstats(self, port: int) -> dict[str, Any]:
        return {}

    def utilization(self) -> dict[str, Any]:
        return {}


class _Port:
    """What the library's PortStats / PortXStats ask of their port object."""

    def __init__(self, port_id: int) -> None:
        self.port_id = port_id

    def get_speed_bps(self) -> float:
        return 10e9


def raw_port(**counters: float) -> dict[str, float]:
    """A ``get_port_stats`` reply: every field trex-core sends, 0 unless given."""
    keys = (*PORT_FIELDS, "m_total_tx_bps", "m_total_tx_pps", "m_total_rx_bps", "m_total_rx_pps", "m_cpu_util")
    return {k: float(counters.get(k, 0)) for k in keys} | {k: int(counters.get(k, 0)) for k in PORT_FIELDS}


def raw_global(**counters: float) -> dict[str, float]:
    """A ``get_global_stats`` reply (the fields GlobalStats reads), 0 unless given."""
    keys = [
        "m_active_flows",
        "m_active_sockets",
        "m_bw_per_core",
        "m_cpu_util",
        "m_cpu_util_raw",
        "m_open_flows",
        "m_platform_factor",
        "m_rx_bps",
        "m_rx_core_pps",
        "m_rx_cpu_util",
        "m_rx_drop_bps",
        "m_rx_pps",
        "m_socket_util",
        "m_tx_expected_bps",
        "m_tx_expected_cps",
        "m_tx_expected_pps",
        "m_tx_pps",
        "m_tx_bps",
        "m_tx_cps",
        "m_total_servers",
        "m_total_clients",
        "m_total_alloc_error",
        "m_total_queue_full",
        "m_total_queue_drop",
    ]
    return {k: counters.get(k, 0) for k in keys}


class LibrarySession(QuietSession):
    """One trial's counters as the real client library reports them (see the module docstring).

    ``before`` / ``after``: per port the raw port counters (``raw_port``) and per port the raw xstats by
    name (missing names 0); ``global_before`` / ``global_after``: ``raw_global``; ``util``: the raw
    ``get_utilization`` reply; ``wall``: seconds from the start of sending to idle; ``start_call``: seconds the
    start RPC takes before it returns, sending starting as it returns (78-117 ms seen live with many streams).
    """

    def __init__(
        self,
        before: Mapping[int, Mapping[str, float]],
        after: Mapping[int, Mapping[str, float]],
        *,
        xstats_before: Mapping[int, Mapping[str, int]] | None = None,
        xstats_after: Mapping[int, Mapping[str, int]] | None = None,
        global_before: Mapping[str, float] | None = None,
        global_after: Mapping[str, float] | None = None,
        util: Mapping[str, Any] | None = None,
        wall: float = 2.0,
        start_call: float = 0.0,
    ) -> None:
        from natbench.testers.trex.client import load_api

        load_api()  # puts the library's trex package on sys.path
        pstats = importlib.import_module("trex.common.stats.trex_port_stats")
        gstats = importlib.import_module("trex.common.stats.trex_global_stats")
        self._pstats = pstats
        self.before, self.after = before, after
        self.xstats_before, self.xstats_after = xstats_before or {}, xstats_after or {}
        self.global_before, self.global_after = global_before or raw_global(), global_after or raw_global()
        self.raw_util = dict(util or {"cpu": [], "mbuf_stats": {}})
        self.wall = wall
        self.start_call = start_call
        self.port_objs = {p: pstats.PortStats(_Port(p)) for p in before}
        self.xstat_objs = {p: pstats.PortXStats(_Port(p)) for p in before}
        for x in self.xstat_objs.values():
            x.set_names(list(DPDK_XSTATS))  # the client fetches the names once, at connect
        self.global_obj = gstats.GlobalStats(None)
        self.util_obj = gstats.UtilStats()
        self.cleared = False

    def _xraw(self, src: Mapping[int, Mapping[str, int]], port: int) -> dict[str, list[int]]:
        return {"xstats_values": [int(src.get(port, {}).get(n, 0)) for n in DPDK_XSTATS]}

    def clear_stats(self, ports: list[int]) -> None:
        # StatsBatch.reset: every object takes the server's counters of now as its reference
        for p, obj in self.port_objs.items():
            obj._reset_common(dict(self.before[p]))
            self.xstat_objs[p]._reset_common(self._xraw(self.xstats_before, p))
        self.global_obj._reset_common(dict(self.global_before))
        self.cleared = True

    def start(self, ports: list[int], **kw: Any) -> None:
        if self.start_call:
            time.sleep(self.start_call)
        self.started = time.monotonic()

    def wait(self, ports: list[int], timeout: float, rx_delay_ms: int) -> float:
        return self.started + self.wall

    def stats(self) -> dict[Any, Any]:
        # STLClient.get_stats = _get_stats_common (StatsBatch.update, to_dict, PortStatsSum) + pgid stats
        for p, obj in self.port_objs.items():
            obj._update_common(dict(self.after[p]))
        self.global_obj._update_common(dict(self.global_after))
        out: dict[Any, Any] = {"global": self.global_obj.to_dict()}
        out.update({p: obj.to_dict() for p, obj in self.port_objs.items()})
        total = self._pstats.PortStatsSum()
        for obj in self.port_objs.values():
            total += obj
        out["total"] = total.to_dict()
        out["flow_stats"] = {}
        out["latency"] = {}
        return out

    def xstats(self, port: int) -> dict[str, Any]:
        obj = self.xstat_objs[port]
        obj._update_common(self._xraw(self.xstats_after, port))
        return dict(obj.to_dict())

    def utilization(self) -> dict[str, Any]:
        self.util_obj._update_common(dict(self.raw_util))
        return dict(self.util_obj.to_dict())
