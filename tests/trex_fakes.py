"""Stand-ins for natbench.testers.trex.client.TRexSession in unit tests.

``QuietSession``: every setup call is a no-op; tests subclass it and answer ``start`` / ``wait`` /
``stats`` the way their trial needs.

``LibrarySession``: a trial whose counters come out of the TRex client library's own stats classes
(``PortStats``, ``PortXStats``, ``GlobalStats``, ``UtilStats`` of lbr-trex-client): the test gives the
server's raw counters (the JSON fields trex-core's ``port_stats_to_json`` / ``global_stats_to_json`` /
``get_port_xstats_values`` / ``get_utilization`` send) before and after the trial, ``clear_stats``
makes the first the library's reference, and ``stats`` / ``xstats`` / ``utilization`` return exactly
what ``get_stats`` / ``get_xstats`` / ``get_util_stats`` would (values relative to the reference).

``SimulatedClient`` + ``TrialServer``: a trial that runs (in real time) while it is read, for the counts read during
a trial (natbench.testers.trex.watch). The client stands in for ``STLClient`` inside a real ``TRexSession``; its
counters come from the server's model of a DUT (a token-bucket policer, the tester's own receive misses) through the
library's real JsonRpcClient and stats classes.
"""

from __future__ import annotations

import importlib
import json
import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
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


# -- a running trial: a simulated server behind the real client library's RPC and stats classes ------------------


@dataclass(frozen=True)
class DutModel:
    """What the DUT does to one direction's frames: a token-bucket policer (``capacity`` frames per second, a bucket
    of ``bucket`` frames that starts full), ``latency`` seconds through it; ``missed``: the share of the frames it
    forwards that the tester's own receive path misses (counted in the receiving port's ``ierrors`` and the
    ``rx_missed_errors`` xstat, as DPDK's ``imissed``, never in ``ipackets``)."""

    capacity: float = math.inf
    bucket: float = 0.0
    latency: float = 0.0005
    missed: float = 0.0

    def forwarded(self, offered: float, seconds: float) -> float:
        """Frames forwarded of ``offered`` frames sent at a steady rate over ``seconds`` (from a full bucket)."""
        return min(offered, self.bucket + self.capacity * seconds)


class TrialServer:
    """A TRex server running one phase-2 trial at a time, in real time: every started port sends its streams' rate
    (their pps times the start's multiplier; ``pace`` of it when the server falls behind) for the start's duration
    or until stopped, through ``dut``; it answers the JSON-RPC commands the stats classes send (``get_port_stats``,
    ``get_port_xstats_values``, ``get_global_stats``) with trex-core's fields, counters since the server began
    (earlier trials' included, as a real server's)."""

    def __init__(self, dut: DutModel, pace: float = 1.0, rpc_delay: float = 0.0) -> None:
        self.dut = dut
        self.pace = pace
        self.rpc_delay = rpc_delay
        self.rates: dict[int, float] = {}
        self.started: float | None = None
        self.duration = 0.0
        self.stopped_at: float | None = None
        self.sent_at_stop: dict[int, int] = {}
        self.base: dict[int, dict[str, int]] = {p: {"opackets": 0, "ipackets": 0, "ierrors": 0} for p in (0, 1)}
        self.requests: list[tuple[float, list[str]]] = []
        """Per RPC message the server received: when, and the methods it asked for."""

    def start(self, rates: Mapping[int, float], duration: float) -> None:
        self.base = {p: self.counters(p) for p in (0, 1)}  # what earlier trials left on the counters
        self.rates, self.duration = dict(rates), duration
        self.started, self.stopped_at, self.sent_at_stop = time.monotonic(), None, {}

    def _sending(self, now: float) -> float:
        if self.started is None:
            return 0.0
        end = self.duration if self.stopped_at is None else min(self.duration, self.stopped_at - self.started)
        return max(min(now - self.started, end), 0.0)

    def active(self) -> bool:
        return self.started is not None and self.stopped_at is None and time.monotonic() - self.started < self.duration

    def stop(self) -> None:
        if self.active():
            self.stopped_at = time.monotonic()
            self.sent_at_stop = {p: self.sent(p) for p in self.rates}

    def sent(self, port: int, now: float | None = None) -> int:
        seconds = self._sending(time.monotonic() if now is None else now)
        return int(self.rates.get(port, 0.0) * self.pace * seconds)

    def delivered(self, sender: int) -> float:
        """Frames of ``sender``'s direction that reached the other port by now."""
        now = time.monotonic()
        seconds = self._sending(now - self.dut.latency)
        return self.dut.forwarded(self.sent(sender, now - self.dut.latency), seconds)

    def counters(self, port: int) -> dict[str, int]:
        other = 1 - port
        arrived = int(self.delivered(other)) if other in self.rates else 0
        missed = int(arrived * self.dut.missed)
        base = self.base[port]
        return {
            "opackets": base["opackets"] + self.sent(port),
            "ipackets": base["ipackets"] + arrived - missed,
            "ierrors": base["ierrors"] + missed,
        }

    def answer(self, method: str, params: Mapping[str, Any]) -> Any:
        if method == "get_port_stats":
            c = self.counters(int(params["port_id"]))
            return raw_port(**c, obytes=60 * c["opackets"], ibytes=60 * c["ipackets"])
        if method == "get_port_xstats_values":
            c = self.counters(int(params["port_id"]))
            named = {
                "rx_missed_errors": c["ierrors"],
                "rx_good_packets": c["ipackets"],
                "tx_good_packets": c["opackets"],
            }
            return {"xstats_values": [named.get(n, 0) for n in DPDK_XSTATS]}
        if method == "get_global_stats":
            return raw_global()
        raise AssertionError(f"the simulated server does not answer {method}")


class _ServerSocket:
    """The ZeroMQ REQ socket of the library's JsonRpcClient, answered by a :class:`TrialServer`."""

    def __init__(self, server: TrialServer, zipper: Any) -> None:
        self.server = server
        self.zipper = zipper  # the library compresses a large request (trex-core's ZippedMsg), as a server expects
        self._reply = b""

    def send(self, buffer: bytes) -> None:
        if self.zipper.is_compressed(buffer):
            buffer = self.zipper.decompress(buffer)
        request = json.loads(buffer.decode())
        batch = request if isinstance(request, list) else [request]
        self.server.requests.append((time.monotonic(), [m["method"] for m in batch]))
        replies = [
            {"jsonrpc": "2.0", "id": m["id"], "result": self.server.answer(m["method"], m["params"])} for m in batch
        ]
        self._reply = json.dumps(replies if isinstance(request, list) else replies[0]).encode()

    def recv(self) -> bytes:
        if self.server.rpc_delay:
            time.sleep(self.server.rpc_delay)
        return self._reply


class _ClientPort:
    """What the client keeps per port: the library's own PortStats / PortXStats objects."""

    def __init__(self, port_id: int, stats_module: Any) -> None:
        self.port_id = port_id
        self.stats = stats_module.PortStats(_Port(port_id))
        self.xstats = stats_module.PortXStats(_Port(port_id))
        self.xstats.set_names(list(DPDK_XSTATS))

    def get_stats(self) -> Any:
        return self.stats

    def get_xstats(self) -> Any:
        return self.xstats


class SimulatedClient:
    """Stands in for ``STLClient`` inside a real :class:`~natbench.testers.trex.client.TRexSession`: the session
    calls, wait loop and counter reads are natbench's own, every counter travels through the library's real
    JsonRpcClient (JSON requests and replies, a socket answered by ``server``) into its real stats classes
    (``StatsBatch``, ``PortStats``, ``PortXStats``, ``GlobalStats``), as ``get_stats`` / ``clear_stats`` /
    ``get_xstats`` do in the library. Port state (``get_active_ports``) follows the server, as the client's does
    from the server's events."""

    def __init__(self, api: Any, server: TrialServer) -> None:
        stats = importlib.import_module("trex.common.stats.trex_port_stats")
        gstats = importlib.import_module("trex.common.stats.trex_global_stats")
        self._batch = importlib.import_module("trex.common.stats.trex_stats").StatsBatch
        self._sum = stats.PortStatsSum
        self.server = server
        rpc = api.STLClient(server="127.0.0.1").conn.rpc  # the library's JSON-RPC client, never connected
        rpc.connected = True
        rpc.socket = _ServerSocket(server, rpc.zipper)
        rpc.set_api_h("simulated")
        self.conn = type("Connection", (), {"rpc": rpc})()
        self.ports = {p: _ClientPort(p, stats) for p in (0, 1)}
        self.global_stats = gstats.GlobalStats(None)
        self.util_stats = gstats.UtilStats()
        self.streams: dict[int, list[Any]] = {0: [], 1: []}
        self.stop_calls: list[float] = []

    # connecting and loading: nothing to simulate
    def connect(self) -> None: ...
    def get_server_version(self) -> dict[str, str]:
        return {"version": "v3.08"}

    def get_server_system_info(self) -> dict[str, int]:
        return {"dp_core_count_per_port": 1, "port_count": 2}

    def reset(self, ports: list[int]) -> None: ...
    def set_port_attr(self, **kw: Any) -> None: ...
    def set_service_mode(self, **kw: Any) -> None: ...
    def set_l2_mode(self, port: int, dst_mac: str) -> None: ...
    def get_port_info(self, ports: list[int]) -> list[dict[str, str]]:
        return [{"src_mac": f"02:00:00:00:00:1{p}"} for p in ports]

    def add_streams(self, streams: list[Any], ports: list[int]) -> list[int]:
        for p in ports:
            self.streams[p].extend(streams)
        return list(range(len(streams)))

    def remove_streams(self, ids: list[int], ports: list[int]) -> None: ...
    def remove_all_streams(self, ports: list[int]) -> None:
        for p in ports:
            self.streams[p] = []

    def disconnect(self) -> None: ...

    # a trial
    def clear_stats(self, ports: list[int], clear_xstats: bool = True) -> None:
        objs = [self.global_stats, *(p.xstats for p in self.ports.values()), *(p.stats for p in self.ports.values())]
        assert self._batch.reset(objs, self.conn.rpc)

    def start(self, ports: list[int], mult: str, force: bool, duration: float, core_mask: int) -> None:
        rates = {}
        for p in ports:
            pps = sum(float(s.to_json()["mode"]["rate"]["value"]) for s in self.streams[p])
            rates[p] = pps * float(mult)
        self.server.start(rates, duration)

    def get_active_ports(self) -> list[int]:
        return list(self.server.rates) if self.server.active() else []

    def stop(self, ports: list[int], rx_delay_ms: int | None = None) -> None:
        self.stop_calls.append(time.monotonic())
        self.server.stop()

    def wait_on_traffic(self, ports: list[int], timeout: float, rx_delay_ms: int) -> None: ...

    def get_stats(self) -> dict[Any, Any]:
        objs = {"global": self.global_stats, **{p: port.stats for p, port in self.ports.items()}}
        assert self._batch.update(list(objs.values()), self.conn.rpc)
        out: dict[Any, Any] = {k: v.to_dict() for k, v in objs.items()}
        total = self._sum()
        for port in self.ports.values():
            total += port.stats
        out["total"] = total.to_dict()
        out["flow_stats"], out["latency"] = {}, {}
        return out

    def get_xstats(self, port: int) -> dict[str, Any]:
        x = self.ports[port].xstats
        x.update_sync(self.conn.rpc)
        return dict(x.to_dict())

    def get_util_stats(self) -> dict[str, Any]:
        return {"cpu": [], "mbuf_stats": {}}

    def get_pgid_stats(self, pg_ids: list[int]) -> dict[str, Any]:
        return {}
