"""TRex tester pieces that need no server: settings, client resolution, counting and rate checks, latency."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from trex_fakes import QuietSession

from natbench import plugins
from natbench.errors import ConfigError
from natbench.errors import TesterError as TRexFailure
from natbench.results import Direction
from natbench.testbed.file import load_testbed  # imports PyYAML before the TRex client puts its old copy on sys.path
from natbench.testers.trex import client as trex_client
from natbench.testers.trex.backend import create
from natbench.testers.trex.latency import latency_from_pgid
from natbench.testers.trex.program import Port
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan

SETTINGS = {"server": "127.0.0.1", "private_dst_mac": "02:00:00:00:00:01", "public_dst_mac": "02:00:00:00:00:02"}


def test_create_validates_settings_and_does_not_connect() -> None:
    tester = create(dict(SETTINGS), None)
    assert isinstance(tester, plugins.Tester)
    facts = tester.facts()
    assert facts["kind"] == "trex" and facts["ports"] == [0, 1] and "server_version" not in facts
    with pytest.raises(ConfigError) as err:
        create({**SETTINGS, "private_dst_mac": "02:00:00"}, None)
    assert err.value.field == "testbed.tester.settings.private_dst_mac"
    with pytest.raises(ConfigError, match=r"testbed\.tester\.settings\.colour"):
        create({**SETTINGS, "colour": "blue"}, None)
    with pytest.raises(ConfigError, match=r"testbed\.tester\.settings\.ports"):
        create({**SETTINGS, "ports": [1, 1]}, None)


def test_learn_mode_is_refused_before_connecting() -> None:
    plan = TrafficPlan(
        Family.NAT44, AddressPlan.default(Family.NAT44), PortRange(1, 100), PortRange(1, 10), 64, 1, ResponderMode.LEARN
    )
    with pytest.raises(TRexFailure, match="cannot learn"):
        create(dict(SETTINGS), None).prepare(plan)


def test_missing_client_names_every_option(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def no_trex() -> None:
        raise ImportError("No module named 'trex'")

    real_import = trex_client.importlib.import_module

    def no_lbr(name: str, *args: object) -> object:
        if name == "lbr_trex_client":
            raise ImportError("No module named 'lbr_trex_client'")
        return real_import(name)

    monkeypatch.setattr(trex_client, "_API", None)
    monkeypatch.setattr(trex_client, "_import_api", no_trex)
    monkeypatch.setattr(trex_client.importlib, "import_module", no_lbr)
    monkeypatch.setenv("TREX_CLIENT_PATH", str(tmp_path))
    with pytest.raises(TRexFailure) as err:
        trex_client.load_api()
    text = str(err.value)
    assert "natbench[trex]" in text and "lbr-trex-client" in text and "TREX_CLIENT_PATH" in text
    assert str(tmp_path) in text


def test_trex_client_path_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    import lbr_trex_client

    interactive = Path(lbr_trex_client.__file__).parent / "interactive"
    calls: list[str] = []
    real = trex_client._import_api

    def first_fails() -> object:
        calls.append("import")
        if len(calls) == 1:
            raise ImportError("not on sys.path yet")
        return real()

    monkeypatch.setattr(trex_client, "_API", None)
    monkeypatch.setattr(trex_client, "_import_api", first_fails)
    monkeypatch.setenv("TREX_CLIENT_PATH", str(interactive))
    api = trex_client.load_api()
    assert hasattr(api, "STLStream") and len(calls) == 2
    import sys

    assert str(interactive) in sys.path


# The client's trex/__init__.py swaps its bundled PyYAML 3.11 in for the loaded one; after load_api the rest
# of the process must still get the PyYAML it had (with yaml.resolver and the current dump signature).
_YAML_AFTER_LOAD_API = """
import sys
{before}
from natbench.testers.trex.client import load_api
api = load_api()
import yaml
from importlib.metadata import version
assert yaml.__version__ == version("PyYAML"), yaml.__file__
assert {same}
assert yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG == "tag:yaml.org,2002:map"
assert yaml.safe_dump({{"b": 1, "a": 2}}, sort_keys=False) == "b: 1\\na: 2\\n"
from natbench.duts.recipes import load_recipe  # first imported after the client: reads YAML with yaml's loader
load_recipe("iptables-nat44")
assert "external_libs" in sys.modules["trex.stl.trex_stl_packet_builder_scapy"].yaml.__file__  # TRex keeps its own
print(api.STLStream.__name__)
"""


@pytest.mark.parametrize("yaml_loaded_first", [True, False], ids=["yaml-loaded-first", "yaml-not-loaded"])
def test_loading_the_client_leaves_the_process_its_own_yaml(yaml_loaded_first: bool) -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    code = _YAML_AFTER_LOAD_API.format(
        before="import yaml; ours = yaml" if yaml_loaded_first else "",
        same="sys.modules['yaml'] is ours" if yaml_loaded_first else "'yaml' in sys.modules",
    )
    # a fresh interpreter: load_api caches the module, so in this process it may have run long ago
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "STLStream"


def test_version_parsing() -> None:
    assert trex_client.parse_version("v3.04") == (3, 4)
    assert trex_client.parse_version("v2.99") < trex_client.MIN_SERVER_VERSION
    with pytest.raises(TRexFailure):
        trex_client.parse_version("unknown")


def test_unreachable_server_is_a_tester_error() -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    session = trex_client.TRexSession("127.0.0.1", sync_port=port, async_port=port + 1, timeout=1)
    t0 = time.monotonic()
    with pytest.raises(TRexFailure, match=f"127.0.0.1:{port}"):
        session.connect()
    assert time.monotonic() - t0 < 30
    session.close()


def stats(sent0: int, recv0: int, sent1: int, recv1: int, queue_full: int = 0) -> dict[object, object]:
    return {
        0: {"opackets": sent0, "ipackets": recv0},
        1: {"opackets": sent1, "ipackets": recv1},
        "global": {"queue_full": queue_full},
    }


def test_counts_and_rate_checks() -> None:
    tester = create(dict(SETTINGS), None)
    s = stats(1000, 990, 1000, 1000)
    counts = tester._counts(s, [Port.PRIVATE, Port.PUBLIC])
    assert counts[Direction.FORWARD].sent == 1000 and counts[Direction.FORWARD].valid == 1000
    assert counts[Direction.REVERSE].received == 990 and counts[Direction.REVERSE].lost == 10
    # a burst that was sent whole and in time
    assert tester._rate_notes(s, counts, 1000, 1.0, 1.0, continuous=False) == []
    # late burst, send-queue full, short burst: each makes the trial invalid ('!')
    late = tester._rate_notes(s, counts, 1000, 1.5, 1.0, continuous=False)
    assert late and late[0].startswith("!fell behind")
    qf = tester._rate_notes(stats(1000, 990, 1000, 1000, queue_full=5), counts, 1000, 1.0, 1.0, continuous=False)
    assert any("queue full 5" in n for n in qf)
    short = tester._counts(stats(900, 0, 0, 900), [Port.PRIVATE])
    assert any("sent 900 of 1000" in n for n in tester._rate_notes(s, short, 1000, 1.0, 1.0, continuous=False))
    # continuous phase 2: 1 % tolerance on the frames sent
    ok = tester._counts(stats(99_500, 0, 0, 99_500), [Port.PRIVATE])
    assert tester._rate_notes(s, ok, 100_000, 1.0, 1.0, continuous=True) == []
    slow = tester._counts(stats(98_000, 0, 0, 98_000), [Port.PRIVATE])
    assert tester._rate_notes(s, slow, 100_000, 1.0, 1.0, continuous=True)[0].startswith("!forward: sent 98000")
    # more received than sent = foreign frames in the counters
    leak = tester._counts(stats(100, 0, 0, 101), [Port.PRIVATE])
    assert any("non-test frames" in n for n in tester._rate_notes(s, leak, 100, 1.0, 1.0, continuous=False))


def test_latency_conversion_from_pgid_stats() -> None:
    entry = {
        "latency": {
            "total_min": 7.0,
            "total_max": 480.0,
            "average": 20.0,
            "jitter": 3,
            "histogram": {"10": 600, "20": 390, "30": 9, "400": 1},
        }
    }
    lat = latency_from_pgid(entry, 1000)
    assert lat is not None
    assert lat.samples == 1000 and lat.minimum == pytest.approx(7e-6) and lat.maximum == pytest.approx(480e-6)
    assert lat.median == pytest.approx(10e-6) and lat.p99_9 == pytest.approx(30e-6)
    assert lat.pdv == pytest.approx(23e-6)
    assert latency_from_pgid({"latency": {"histogram": {}}}, 0) is None


def _nat64_plan() -> TrafficPlan:
    """A small NAT64 plan, Responder computing the tuples (no phase 1 needed)."""
    nat64 = AddressPlan.default(Family.NAT64)
    return TrafficPlan(Family.NAT64, nat64, PortRange(1, 100), PortRange(1, 10), 64, 1, ResponderMode.COMPUTE)


def test_nat64_latency_needs_software_mode() -> None:
    tester = create(dict(SETTINGS), None)
    tester._plan = _nat64_plan()
    from natbench.plugins import Directions, Phase2Options

    with pytest.raises(TRexFailure, match="--software"):
        tester.phase2(1000.0, 1.0, Directions.BIDIRECTIONAL, Phase2Options(latency=True))


# ---------------------------------------------------------------------------- the server address


@pytest.mark.parametrize(
    ("server", "host", "rpc", "publisher"),
    [
        ("trex.lab", "trex.lab", 4501, 4500),
        ("trex.lab:4511", "trex.lab", 4511, 4510),
        ("10.0.0.5:4601", "10.0.0.5", 4601, 4600),
        ("[2001:db8::5]:4511", "2001:db8::5", 4511, 4510),
        ("[2001:db8::5]", "2001:db8::5", 4501, 4500),
        ("2001:db8::5", "2001:db8::5", 4501, 4500),
    ],
)
def test_server_takes_host_host_port_and_bracketed_ipv6(server: str, host: str, rpc: int, publisher: int) -> None:
    s = create({**SETTINGS, "server": server}, None).settings
    assert (s.address.host, s.rpc_port, s.publisher_port) == (host, rpc, publisher)
    assert s.address.endpoint_host == (f"[{host}]" if ":" in host else host)  # what goes before ":port"


def test_explicit_ports_still_work_and_must_agree_with_the_server() -> None:
    s = create({**SETTINGS, "server": "trex.lab", "sync_port": 4511, "async_port": 4000}, None).settings
    assert (s.rpc_port, s.publisher_port) == (4511, 4000)
    assert create({**SETTINGS, "server": "trex.lab:4511", "sync_port": 4511}, None).settings.rpc_port == 4511
    with pytest.raises(ConfigError) as err:
        create({**SETTINGS, "server": "trex.lab:4511", "sync_port": 4501}, None)
    assert err.value.field == "testbed.tester.settings.sync_port" and "trex.lab:4511" in str(err.value)


@pytest.mark.parametrize(
    ("server", "why"),
    [
        ("", "is empty"),
        ("trex.lab:", "port '' is not a number"),
        ("trex.lab:rpc", "port 'rpc' is not a number"),
        ("trex.lab:70000", "port '70000' is not a number from 1 to 65535"),
        ("tcp://trex.lab:4501", "no scheme"),
        ("[trex.lab]:4501", "'trex.lab' is not an IPv6 address"),
        ("2001:db8::5:4501x", "with a port it is written [address]:port"),
        ("trex lab", "is not a host name or an IPv4 address"),
        ("300.1.2.3", "is not a host name or an IPv4 address"),
    ],
)
def test_a_malformed_server_is_one_clear_error_naming_the_field(server: str, why: str) -> None:
    with pytest.raises(ConfigError) as err:
        create({**SETTINGS, "server": server}, None)
    assert err.value.field == "testbed.tester.settings.server"
    text = str(err.value)
    assert why in text and "write host, host:port or [ipv6]:port" in text and "\n" not in text
    assert "Value error" not in text


def test_the_documented_trex_testbed_takes_host_and_port(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/examples/trex-testbed.yaml with NATBENCH_TREX=host:port, as docs/trex.md and experiments.md say."""
    root = Path(__file__).resolve().parents[1]
    monkeypatch.setenv("NATBENCH_TREX", "trex.lab:4511")
    monkeypatch.setenv("NATBENCH_DUT_HOST", "dut.lab")
    monkeypatch.setenv("NATBENCH_DUT_PRIV_MAC", "02:00:00:00:00:01")
    monkeypatch.setenv("NATBENCH_DUT_PUB_MAC", "02:00:00:00:00:02")
    tb = load_testbed(root / "docs" / "examples" / "trex-testbed.yaml")
    assert not tb.missing_env
    s = create(dict(tb.testbed["tester"]["settings"]), None).settings
    assert (s.address.host, s.rpc_port, s.publisher_port) == ("trex.lab", 4511, 4510)
    monkeypatch.setenv("NATBENCH_TREX", "[2001:db8::5]:4511")
    tb = load_testbed(root / "docs" / "examples" / "trex-testbed.yaml")
    s = create(dict(tb.testbed["tester"]["settings"]), None).settings
    assert (s.address.endpoint_host, s.rpc_port) == ("[2001:db8::5]", 4511)


def test_the_client_reaches_an_ipv6_server() -> None:
    """The real client's RPC socket talks to an IPv6 endpoint (a local ZeroMQ REP on ::1 answering one call)."""
    import json
    import threading
    import zlib

    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    trex_client.load_api()
    import zmq  # the ZeroMQ the TRex client brings

    with socket.socket(socket.AF_INET6) as probe:
        try:
            probe.bind(("::1", 0))
        except OSError as exc:
            pytest.skip(f"no IPv6 loopback here: {exc}")
        port = probe.getsockname()[1]
    ctx = zmq.Context()
    rep = ctx.socket(zmq.REP)
    rep.setsockopt(zmq.IPV6, 1)
    rep.setsockopt(zmq.RCVTIMEO, 10_000)
    rep.bind(f"tcp://[::1]:{port}")
    seen: list[str] = []

    def serve() -> None:
        with contextlib.suppress(zmq.ZMQError):
            raw = rep.recv()
            if raw[:4] == b"\xab\xe8\x5c\xea":  # the client's compressed framing: magic, length, zlib data
                raw = zlib.decompress(raw[8:])
            request = json.loads(raw)
            seen.append(request["method"])
            rep.send(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": {"api_h": "h1"}}).encode())

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    session = trex_client.TRexSession("[::1]", sync_port=port, async_port=port - 1, timeout=5)
    rpc = session._client.conn.rpc
    try:
        with trex_client.ipv6_sockets():
            assert rpc.connect()
        rc = rpc.transmit("api_sync_v2", params={"name": "STL", "major": 5, "minor": 1})
        assert rc, rc.err()
        assert seen == ["api_sync_v2"] and rc.data()["api_h"] == "h1"
    finally:
        rpc.disconnect()
        server.join(15)
        rep.close()
        ctx.term()


def test_a_campaigns_malformed_server_names_file_line_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The campaign's TRex settings are checked when the campaign is validated (the tester kind's settings model):
    the error points at the campaign's line, before anything is built."""
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed

    root = Path(__file__).resolve().parents[1]
    text = (root / "campaigns" / "seed000-fig2-forwarding-cores.yaml").read_text()
    campaign_file = tmp_path / "c.yaml"
    campaign_file.write_text(text)
    line = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.strip().startswith("server:"))
    monkeypatch.setenv("NATBENCH_TREX_SERVER", "trex.lab:4511")
    with build_testbed(load_campaign(campaign_file)) as bed:  # neither the server nor the DUT is contacted
        assert bed.tester.settings.rpc_port == 4511  # type: ignore[attr-defined]
    monkeypatch.setenv("NATBENCH_TREX_SERVER", "trex.lab:rpc")
    with pytest.raises(ConfigError) as err:
        load_campaign(campaign_file)
    assert str(err.value).startswith(
        f"{campaign_file}:{line}: testbed.tester.settings.server: TRex server 'trex.lab:rpc'"
    )


class _ClientRecorder:
    """Stands in for ``STLClient`` in session tests: records calls, enforces what the real one checks."""

    def __init__(self, api: object, busy_polls: int = 0) -> None:
        self.api = api
        self.calls: list[tuple[str, object]] = []
        self.service: set[int] = set()
        self.busy_polls = busy_polls

    def set_service_mode(self, ports: list[int], enabled: bool) -> None:
        self.calls.append(("service", enabled))
        self.service = self.service | set(ports) if enabled else self.service - set(ports)

    def set_l2_mode(self, port: int, dst_mac: str) -> None:
        # the client's own rule (trex/common/trex_port.py), which a live v3.08 server run hit
        if port not in self.service:
            raise self.api.TRexError("port service mode must be enabled for configuring L2 mode")  # type: ignore[attr-defined]
        self.calls.append(("l2", dst_mac))

    def get_active_ports(self) -> list[int]:
        self.calls.append(("poll", time.monotonic()))
        self.busy_polls -= 1
        return [0] if self.busy_polls >= 0 else []

    def wait_on_traffic(self, ports: list[int], timeout: float, rx_delay_ms: int) -> None:
        # like the real client for ports without flow-stats streams: no receive wait at all
        self.calls.append(("wait_on_traffic", time.monotonic()))


def _session(busy_polls: int = 0) -> tuple[trex_client.TRexSession, _ClientRecorder]:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    session = trex_client.TRexSession("127.0.0.1")  # the real STLClient is built but never connects
    recorder = _ClientRecorder(session.api, busy_polls)
    session._client = recorder
    return session, recorder


def test_l2_mode_is_set_in_service_mode_and_service_mode_is_left() -> None:
    session, client = _session()
    session.set_l2(0, "02:00:00:00:00:01")
    assert client.calls == [("service", True), ("l2", "02:00:00:00:00:01"), ("service", False)]
    assert not client.service  # traffic never starts in service mode


def test_wait_keeps_the_receive_timeout_even_without_rx_filters() -> None:
    session, client = _session(busy_polls=3)
    t0 = time.monotonic()
    ended = session.wait([0, 1], timeout=5, rx_delay_ms=300)
    polls = [t for what, t in client.calls if what == "poll"]
    (removed,) = [t for what, t in client.calls if what == "wait_on_traffic"]
    assert len(polls) == 4 and polls[-1] <= ended  # idle seen on the 4th poll
    assert removed - ended >= 0.3  # counters are read only after the receive timeout
    assert time.monotonic() - t0 >= 0.3


def test_wait_gives_up_after_the_timeout() -> None:
    session, client = _session(busy_polls=10_000)
    client.stop = lambda ports: client.calls.append(("stop", ports))  # type: ignore[attr-defined]
    with pytest.raises(TRexFailure, match=r"did not end within 0\.1 s"):
        session.wait([0], timeout=0.1, rx_delay_ms=0)
    assert ("stop", [0]) in client.calls


class _Cores:
    def __init__(self, cores: int) -> None:
        self.cores_per_port = cores


def test_cores_are_pinned_only_when_a_dual_port_has_two() -> None:
    tester = create(dict(SETTINGS), None)
    # one data-plane core (software mode on veth, low_end): CORE_MASK_PIN would leave port 1 none
    assert not tester._pin(_Cores(1), 2)  # type: ignore[arg-type]
    assert tester._pin(_Cores(2), 2) and not tester._pin(_Cores(4), 1)  # type: ignore[arg-type]
    assert not create(dict(SETTINGS, pin_cores=False), None)._pin(_Cores(4), 2)  # type: ignore[arg-type]


def test_a_stretched_continuous_trial_is_invalid() -> None:
    tester = create(dict(SETTINGS), None)
    s = stats(600_001, 592_012, 600_001, 592_221)
    counts = tester._counts(s, [Port.PRIVATE, Port.PUBLIC])
    # every frame was sent, but over 8.8 s instead of 2 s (what a live software-mode server did)
    notes = tester._rate_notes(s, counts, 600_000, 8.8, 2.0, continuous=True)
    assert notes == ["!fell behind: 8.800 s for a 2.000 s trial"]
    assert tester._rate_notes(s, counts, 600_000, 2.05, 2.0, continuous=True) == []


def test_achieved_rate_leaves_out_the_allowed_overhead() -> None:
    tester = create(dict(SETTINGS, timing_slack=0.05), None)
    # a 4000-frame burst at 100k fps (40 ms) seen idle after 43 ms: start RPC and polling, not slowness
    assert tester._sending_time(0.043, 0.04) == 0.04
    # a 2 s trial that took 8.8 s sent its frames at frames / 8.75 s
    assert tester._sending_time(8.8, 2.0) == pytest.approx(8.75)


class _TrialSession(QuietSession):
    """The session calls of one phase-2 trial, answered with counters of a lossless trial."""

    def __init__(self, frames: int) -> None:
        self.frames = frames

    def start(self, ports: list[int], **kw: object) -> None:
        self.started = time.monotonic()

    def wait(self, ports: list[int], timeout: float, rx_delay_ms: int) -> float:
        return self.started + 2.0  # idle right after the 2 s trial

    def stats(self) -> dict[object, object]:
        return stats(self.frames, self.frames, self.frames, self.frames)


def test_a_software_mode_nat64_latency_trial_carries_no_software_reminder() -> None:
    pytest.importorskip("lbr_trex_client", reason="the TRex client library (the 'trex' extra) is not installed")
    from natbench.plugins import Directions, Phase2Options
    from natbench.testers.trex.backend import check_settings
    from natbench.testers.trex.tester import TRexTester

    tester = TRexTester(check_settings(dict(SETTINGS, software=True)), session=_TrialSession(10_000))  # type: ignore[arg-type]
    plan = _nat64_plan()
    tester.prepare(plan)
    r = tester.phase2(5000.0, 2.0, Directions.BIDIRECTIONAL, Phase2Options(latency=True))
    assert r.tester_ok and r.tester_note == ""  # live v3.08 trials said "needs --software" on a --software server
