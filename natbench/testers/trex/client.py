"""Finding the TRex client library and a small typed wrapper around it.

The TRex client is untyped and imports scapy; the rest of natbench only sees
:class:`TRexSession` and :func:`load_api`. Resolution order:

1. an importable ``trex.stl.api`` (a TRex install already on ``sys.path``);
2. ``TREX_CLIENT_PATH``: a TRex install (``.../v3.xx``), its
   ``automation/trex_control_plane/interactive`` directory, or any directory
   holding the ``trex`` package;
3. the ``lbr-trex-client`` wheel (``pip install 'natbench[trex]'``).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import time
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from natbench.errors import TesterError

if TYPE_CHECKING:
    from natbench.testers.trex.watch import TrialWatch


MIN_SERVER_VERSION = (3, 0)
"""Oldest TRex server natbench drives (value lists with next_var and the v3 core splitter)."""
IDLE_POLL = 0.01
"""Seconds between two looks at whether a trial's ports are still sending (the client's own port state: no RPC)."""

_HINT = (
    "TRex client library not found: install the 'trex' extra (pip install 'natbench[trex]', which brings "
    "lbr-trex-client, Python < 3.12), or set TREX_CLIENT_PATH to a TRex installation "
    "(its automation/trex_control_plane/interactive directory), or put trex.stl.api on PYTHONPATH"
)

_API: ModuleType | None = None


@contextlib.contextmanager
def _keeping_loaded_modules() -> Iterator[None]:
    """Give the process back the modules it had before importing the TRex client.

    The client's ``trex/__init__.py`` removes every loaded package that shares a name
    with one of its bundled ``external_libs`` (``yaml``, ``scapy``, ``zmq``, ...) from
    ``sys.modules`` and puts its own copies first on ``sys.path``. For PyYAML it removes
    only the package, not its submodules, so the next ``import yaml`` anywhere in the
    process got TRex's PyYAML 3.11 ``__init__`` over our ``yaml.resolver`` and friends:
    a module without ``yaml.resolver`` and with the 3.11 ``dump`` signature. The TRex
    modules keep the copies they imported; everybody else gets the original modules.
    PyYAML (natbench's own dependency) is imported first so it is among them.
    """
    importlib.import_module("yaml")
    loaded = dict(sys.modules)
    try:
        yield
    finally:
        for name, module in loaded.items():
            if sys.modules.get(name) is not module:
                sys.modules[name] = module


def _import_api() -> ModuleType:
    with warnings.catch_warnings(), _keeping_loaded_modules():
        warnings.simplefilter("ignore")
        return importlib.import_module("trex.stl.api")


def _candidates(root: Path) -> list[Path]:
    return [
        root,
        root / "interactive",
        root / "automation" / "trex_control_plane" / "interactive",
        root / "trex_client" / "interactive",
    ]


def load_api() -> ModuleType:
    """Return the ``trex.stl.api`` module, resolving the client as documented; TesterError if absent."""
    global _API
    if _API is not None:
        return _API
    tried: list[str] = []
    try:
        _API = _import_api()
        return _API
    except ImportError as exc:
        tried.append(f"trex.stl.api ({exc})")
    path = os.environ.get("TREX_CLIENT_PATH")
    if path:
        for cand in _candidates(Path(path)):
            if (cand / "trex" / "stl" / "api.py").is_file():
                sys.path.insert(0, str(cand))
                try:
                    _API = _import_api()
                    return _API
                except ImportError as exc:
                    sys.path.remove(str(cand))
                    tried.append(f"TREX_CLIENT_PATH {cand} ({exc})")
                    break
        else:
            tried.append(f"TREX_CLIENT_PATH={path} (no trex/stl/api.py below it)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            importlib.import_module("lbr_trex_client")
        _API = _import_api()
        return _API
    except ImportError as exc:
        tried.append(f"lbr_trex_client ({exc})")
    raise TesterError(_HINT + "; tried: " + "; ".join(tried))


def parse_version(text: str) -> tuple[int, int]:
    """``'v3.04'`` -> ``(3, 4)``; TesterError when the server reports something else."""
    m = re.search(r"(\d+)\.(\d+)", text or "")
    if not m:
        raise TesterError(f"cannot parse the TRex server version {text!r}")
    return int(m.group(1)), int(m.group(2))


@contextlib.contextmanager
def ipv6_sockets() -> Iterator[None]:
    """While the TRex client connects, its ZeroMQ sockets take IPv6 endpoints too (``tcp://[addr]:port``).

    The client creates its RPC and publisher sockets in ``connect()`` and never sets
    ``ZMQ_IPV6``, without which ZeroMQ silently never reaches an IPv6 address. The option
    makes a socket dual-stack (IPv4 still works); only the TRex client uses this ZeroMQ.
    """
    zmq = importlib.import_module("zmq")
    original = zmq.Context.socket

    def socket(ctx: Any, kind: int, *args: Any, **kwargs: Any) -> Any:
        sock = original(ctx, kind, *args, **kwargs)
        sock.setsockopt(zmq.IPV6, 1)
        return sock

    zmq.Context.socket = socket
    try:
        yield
    finally:
        zmq.Context.socket = original


class TRexSession:
    """The few TRex STL client calls natbench needs, typed, with TRex errors turned into TesterError."""

    def __init__(self, server: str, sync_port: int = 4501, async_port: int = 4500, timeout: float | None = None):
        self.api = load_api()
        self.server = server
        self.sync_port = sync_port
        self._client: Any = self.api.STLClient(
            server=server, sync_port=sync_port, async_port=async_port, verbose_level="error", sync_timeout=timeout
        )
        self.version: dict[str, Any] = {}
        self.system: dict[str, Any] = {}
        self._stream_ids: dict[int, list[int]] = {}
        self._stats_batch: Any = importlib.import_module("trex.common.stats.trex_stats").StatsBatch

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except self.api.TRexError as exc:
            raise TesterError(f"TRex {self.server}:{self.sync_port}: {what}: {exc}") from exc

    def connect(self) -> None:
        """Connect (the client negotiates the STL API version) and check the server version."""
        with ipv6_sockets() if self.server.startswith("[") else contextlib.nullcontext():
            self._call("connect (is the server running in STL mode and reachable?)", self._client.connect)
        self.version = dict(self._call("get_server_version", self._client.get_server_version) or {})
        self.system = dict(self._call("get_server_system_info", self._client.get_server_system_info) or {})
        found = parse_version(str(self.version.get("version", "")))
        if found < MIN_SERVER_VERSION:
            raise TesterError(
                f"TRex server {self.server} runs {self.version.get('version')}; natbench needs "
                f"v{MIN_SERVER_VERSION[0]}.{MIN_SERVER_VERSION[1]:02d} or newer"
            )

    @property
    def cores_per_port(self) -> int:
        """Data-plane cores serving one port (shared by the two ports of a dual port unless pinned)."""
        return int(self.system.get("dp_core_count_per_port") or self.system.get("dp_core_count") or 1)

    def port_count(self) -> int:
        """Ports the server has."""
        return int(self.system.get("port_count", 0))

    def acquire(self, ports: list[int]) -> None:
        """Take ownership of ``ports`` and reset them (streams removed, stopped)."""
        self._call("reset", self._client.reset, ports=ports)

    def set_l2(self, port: int, dst_mac: str) -> None:
        """L2 mode with an explicit destination MAC: no ARP / ND from the tester.

        The client only configures L2 mode on a port in service mode (checked live
        against v3.08: "port service mode must be enabled for configuring L2 mode"), so
        service mode is switched on for the call and off again: traffic is never started
        in service mode, where the port would also answer ARP and ping itself.
        """
        self._call(f"set_service_mode port {port}", self._client.set_service_mode, ports=[port], enabled=True)
        try:
            self._call(f"set_l2_mode port {port}", self._client.set_l2_mode, port, dst_mac=dst_mac)
        finally:
            self._call(f"set_service_mode port {port}", self._client.set_service_mode, ports=[port], enabled=False)

    def set_promiscuous(self, ports: list[int], enabled: bool) -> None:
        """Promiscuous mode off keeps frames for other MACs out of the counters."""
        self._call("set_port_attr", self._client.set_port_attr, ports=ports, promiscuous=enabled)

    def port_macs(self, ports: list[int]) -> dict[int, str]:
        """Source MAC address of every port."""
        info = self._call("get_port_info", self._client.get_port_info, ports=ports)
        return {port: str(i.get("src_mac", "")) for port, i in zip(ports, info, strict=False)}

    def load(self, port: int, batches: Iterable[list[Any]]) -> None:
        """Replace the streams of ``port`` with those of ``batches`` (lists of ``STLStream``, one ``add_streams``
        call each: a batch is built only when the one before has gone)."""
        self.unload(port)
        ids = self._stream_ids[port] = []
        for streams in batches:
            if streams:
                added = self._call("add_streams", self._client.add_streams, streams, ports=[port])
                ids.extend(int(i) for i in (added if isinstance(added, list) else [added]))

    def unload(self, port: int) -> None:
        """Remove the streams of ``port``: those this session added one ``remove_stream`` command each (in one
        batch), anything else with ``remove_all_streams``.

        The server's RPC thread has a watchdog of about one second per command (trex-core
        ``TrexRpcServerReqRes``: a monitor of 1 s, tickled before each command of a batch); removing 63 streams
        of 65,535-tuple lists in one ``remove_all_streams`` command outran it on a loaded machine and the server
        aborted ("WATCHDOG violation ... ZMQ sync request-response", seen live on v3.08), so natbench removes
        its own streams one command each."""
        ids = self._stream_ids.pop(port, None)
        if ids:
            self._call("remove_streams", self._client.remove_streams, ids, ports=[port])
        self._call("remove_all_streams", self._client.remove_all_streams, ports=[port])

    def clear_stats(self, ports: list[int]) -> None:
        """Zero port, global, extended (xstats) and latency counters: what is read next is the trial's delta.

        The library keeps a reference snapshot per counter object at this call and reports every later
        reading less that reference (``get_rel``); ``clear_xstats`` is its default, given here explicitly.
        """
        self._call("clear_stats", self._client.clear_stats, ports=ports, clear_xstats=True)

    def start(self, ports: list[int], *, duration: float = -1, pin: bool = False, mult: str = "1") -> None:
        """Start the loaded streams at ``mult`` times their own rates (a plain factor: every stream's pps, bursts
        keep their frame counts); ``pin`` splits each dual port's cores."""
        mask = self.api.STLClient.CORE_MASK_PIN if pin else self.api.STLClient.CORE_MASK_SPLIT
        self._call("start", self._client.start, ports=ports, mult=mult, force=True, duration=duration, core_mask=mask)

    def wait(self, ports: list[int], timeout: float, rx_delay_ms: int, watch: TrialWatch | None = None) -> float:
        """Block until traffic on ``ports`` ends, then wait ``rx_delay_ms``; return when traffic ended.

        The return value is the ``time.monotonic()`` at which the ports were seen idle (10 ms
        polling, no RPC: the client follows the ports' state from the server's events). The receive wait is
        natbench's own: the client's ``wait_on_traffic`` waits
        ``rx_delay_ms`` only on ports with RX-filtered (flow-stats / latency) streams and
        returns at once otherwise (seen live on v3.08: counters read before the frames in
        flight arrived). It is still called afterwards to remove the RX filters. TesterError
        (traffic stopped) after ``timeout`` seconds.

        With a ``watch`` (:class:`~natbench.testers.trex.watch.TrialWatch`) the port counters are read while the
        traffic runs, one :meth:`port_counters` batch per the watch's period at most, and handed to it; when it says
        the trial has failed, the traffic is stopped (:meth:`stop`, the frames sent so far stay counted) and the
        wait goes on as after any trial.
        """
        deadline = time.monotonic() + timeout
        busy = set(ports)
        while busy.intersection(self._call("get_active_ports", self._client.get_active_ports)):
            now = time.monotonic()
            if now > deadline:
                self._call("stop", self._client.stop, ports=ports)
                raise TesterError(f"TRex traffic did not end within {timeout:.1f} s")
            pause = IDLE_POLL
            if watch is not None and watch.stop_call is None:
                pause = min(pause, watch.wait_s(now))
                if pause <= 0:
                    before = time.monotonic()
                    counters = self.port_counters(watch.ports)
                    if watch.observe(before, time.monotonic(), counters):
                        called = time.monotonic()
                        self._call("stop", self._client.stop, ports=ports, rx_delay_ms=rx_delay_ms)
                        watch.stopped(called, time.monotonic())
                    continue
            time.sleep(pause)
        ended = time.monotonic()
        time.sleep(rx_delay_ms / 1000)
        try:
            self._client.wait_on_traffic(ports=ports, timeout=timeout, rx_delay_ms=rx_delay_ms)
        except self.api.TRexTimeoutError as exc:
            self._call("stop", self._client.stop, ports=ports)
            raise TesterError(f"TRex traffic did not end within {timeout:.1f} s") from exc
        except self.api.TRexError as exc:
            raise TesterError(f"TRex wait_on_traffic: {exc}") from exc
        return ended

    def stop(self, ports: list[int]) -> None:
        """Stop traffic on ``ports``."""
        self._call("stop", self._client.stop, ports=ports)

    def port_counters(self, ports: list[int]) -> dict[int, dict[str, Any]]:
        """The port counters of ``ports`` now, relative to the last ``clear_stats`` (``PortStats.to_dict()`` per port
        id): one RPC batch of ``get_port_stats`` commands through the client's own ``PortStats`` objects (the
        server reads the NIC counters for each, trex-core ``CGlobalTRex::port_stats_to_json``), without the global
        and per-stream statistics :meth:`stats` reads too: what a sample of a running trial costs."""
        objs = [self._client.ports[p].get_stats() for p in ports]
        rc = self._stats_batch.update(objs, self._client.conn.rpc)
        if not rc:
            raise TesterError(f"TRex {self.server}:{self.sync_port}: get_port_stats: {rc}")
        return {p: dict(o.to_dict()) for p, o in zip(ports, objs, strict=True)}

    def stats(self) -> dict[Any, Any]:
        """Port and global counters since the last clear (``get_stats``)."""
        return dict(self._call("get_stats", self._client.get_stats))

    def xstats(self, port: int) -> dict[str, Any]:
        """Extended (NIC) counters of ``port`` by name since the last ``clear_stats`` (``get_xstats``)."""
        return dict(self._call(f"get_xstats port {port}", self._client.get_xstats, port))

    def utilization(self) -> dict[str, Any]:
        """Per data-plane thread the last 20 one-second CPU utilisation values, newest first (``get_util_stats``)."""
        return dict(self._call("get_util_stats", self._client.get_util_stats))

    def latency(self, pg_ids: list[int]) -> dict[Any, Any]:
        """Latency statistics of the packet groups ``pg_ids``."""
        return dict(self._call("get_pgid_stats", self._client.get_pgid_stats, pg_ids))

    def close(self) -> None:
        """Remove the streams this session added (one command each, so the next session's reset is quick),
        release the ports and disconnect (never raises)."""
        for port in list(self._stream_ids):
            with contextlib.suppress(Exception):  # the session is going away anyway
                self.unload(port)
        with contextlib.suppress(Exception):
            self._client.disconnect()
