"""A real SSH path: the test starts its own sshd on a free localhost port with keys it generates.

Nothing of the system's SSH configuration is used or changed: the host key, the user key,
authorized_keys, known_hosts and sshd_config live in a temporary directory. (OpenSSH needs
its privilege-separation directory /run/sshd; when it is missing it is created empty, as the
openssh-server package does at boot, and left in place.)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from nslab import ns_lab, send_udp

from natbench.duts.executors import CommandTimeout, ExecutorError, NetnsExecutor
from natbench.duts.factory import build_duts
from natbench.duts.recipe import load_recipe
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.ssh import SshExecutor
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

SSHD = "/usr/sbin/sshd"

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(os.geteuid() != 0, reason="the sshd test logs in as root (and the lab part needs root)"),
    pytest.mark.skipif(
        not Path(SSHD).exists() or shutil.which("ssh-keygen") is None, reason="openssh-server is not installed"
    ),
]


@dataclass
class Sshd:
    port: int
    key: Path
    known_hosts: Path
    other_known_hosts: Path
    proc: subprocess.Popen[bytes]

    def executor(self, **kw: object) -> SshExecutor:
        args: dict[str, object] = {"user": "root", "port": self.port, "key": str(self.key)}
        args.update(known_hosts=str(self.known_hosts), connect_timeout=5.0, backoff=0.1)
        args.update(kw)
        return SshExecutor("127.0.0.1", **args)  # type: ignore[arg-type]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "natbench", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    d = tmp_path_factory.mktemp("sshd")
    d.chmod(0o700)
    host_pub = _keygen(d / "host_key")
    other_pub = _keygen(d / "other_host_key")
    user_pub = _keygen(d / "user_key")
    (d / "authorized_keys").write_text(user_pub + "\n")
    Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    proc: subprocess.Popen[bytes] | None = None
    port = 0
    for _ in range(5):
        port = _free_port()
        (d / "sshd_config").write_text(
            f"Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile {d}/sshd.pid\n"
            f"AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            "PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nUsePAM no\nStrictModes no\n"
            "MaxSessions 50\nMaxStartups 50\nLogLevel ERROR\n"
        )
        proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(d / "sshd_config")], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                    if s.recv(4).startswith(b"SSH-"):
                        break
            except OSError:
                time.sleep(0.05)
        if proc.poll() is None:
            break
    assert proc is not None and proc.poll() is None, f"sshd did not start: {proc.stderr.read() if proc else ''!r}"
    (d / "known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(host_pub.split()[:2])}\n")
    (d / "other_known_hosts").write_text(f"[127.0.0.1]:{port} {' '.join(other_pub.split()[:2])}\n")
    try:
        yield Sshd(port, d / "user_key", d / "known_hosts", d / "other_known_hosts", proc)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_runs_commands_through_sh_with_exit_status_and_both_streams(sshd: Sshd) -> None:
    ex = sshd.executor()
    try:
        res = ex.run("echo out; echo err >&2; exit 3")
        assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "err\n")
        assert ex.run("printf '%s' \"$(id -u)\"").stdout == "0"
        assert "key" not in repr(ex) and "ssh root@127.0.0.1" in ex.description
    finally:
        ex.close()


def test_unknown_host_key_is_refused_and_a_changed_one_too(sshd: Sshd, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(ExecutorError, match="unknown host key"):
        sshd.executor(known_hosts=str(empty)).run("true")
    with pytest.raises(ExecutorError, match="does not exist"):
        sshd.executor(known_hosts=str(tmp_path / "missing")).run("true")
    with pytest.raises(ExecutorError, match="MISMATCH"):
        sshd.executor(known_hosts=str(sshd.other_known_hosts)).run("true")
    # only when the campaign says so explicitly
    ex = sshd.executor(known_hosts=str(empty), allow_unknown_host_key=True)
    assert ex.run("echo ok").stdout == "ok\n"
    ex.close()


def test_command_timeout_and_reconnect_after_a_drop(sshd: Sshd) -> None:
    ex = sshd.executor()
    try:
        start = time.monotonic()
        with pytest.raises(CommandTimeout):
            ex.run("sleep 20", timeout=0.5)
        assert time.monotonic() - start < 5
        assert ex.run("echo a").stdout == "a\n"
        # drop the connection under the executor's feet: the next command reconnects
        transport = ex._client.get_transport() if ex._client else None
        assert transport is not None
        transport.close()
        assert ex.run("echo b").stdout == "b\n"
        assert ex.reconnects == 1
    finally:
        ex.close()


def test_wrong_port_fails_after_bounded_retries(sshd: Sshd) -> None:
    ex = sshd.executor(port=_free_port(), retries=2, backoff=0.05, connect_timeout=1.0)
    start = time.monotonic()
    with pytest.raises(ExecutorError, match="gave up after 3 attempts"):
        ex.run("true")
    assert time.monotonic() - start < 10


def test_a_step_interrupted_by_a_dropped_connection_is_retried(sshd: Sshd, tmp_path: Path) -> None:
    recipe = tmp_path / "slow.yaml"
    recipe.write_text(
        "recipe: slow\nstateful: false\nsteps:\n"
        "  facts:\n    - run: sleep 1; echo 5\n      parse: int\n      as: five\n"
    )
    ex = sshd.executor()
    dut = RecipeDut("slow", load_recipe(str(recipe)), ex, retry_backoff=0.1)

    def drop() -> None:
        time.sleep(0.4)
        assert ex._client is not None
        transport = ex._client.get_transport()
        assert transport is not None
        transport.close()

    t = threading.Thread(target=drop)
    t.start()
    try:
        assert dut.facts()["five"] == 5
    finally:
        t.join()
        ex.close()
    assert ex.reconnects >= 1


@pytest.mark.lab
def test_iptables_recipe_configures_a_namespace_over_ssh(sshd: Sshd) -> None:
    """Table size set, rule installed, UDP frames create connections, the DUT-timed flush empties them,
    teardown leaves nothing behind (the namespace's and the host's settings as before)."""
    with ns_lab(configure_dut_addresses=False) as lab:

        def state() -> str:
            return subprocess.run(
                ["ip", "netns", "exec", lab.dut, "sh", "-c",
                 "iptables -t nat -S; nft list ruleset; ip -br -4 addr; cd /proc/sys/net; "
                 "cat ipv4/ip_forward netfilter/nf_conntrack_udp_timeout netfilter/nf_conntrack_max; conntrack -C"],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip

        before = state()
        host_max = int(Path("/proc/sys/net/netfilter/nf_conntrack_max").read_text())
        campaign = {
            "testbed": {
                "duts": [
                    {
                        "name": "iptables",
                        "recipe": "iptables-nat44",
                        "access": {"kind": "ssh", "host": "127.0.0.1", "port": sshd.port, "user": "root",
                                   "key": str(sshd.key), "known_hosts": str(sshd.known_hosts),
                                   "namespace": lab.dut, "connect_timeout": 5, "command_timeout": 30},
                        "params": {"private_if": lab.dut_private_if, "public_if": lab.dut_public_if,
                                   "private_address": lab.dut_private_address, "public_address": lab.dut_public_address,
                                   "nat": "snat", "conntrack_max": host_max + 4096, "host_settings": True,
                                   "udp_timeout": 600},
                    }
                ]
            }
        }  # fmt: skip
        dut = build_duts(campaign)
        assert isinstance(dut, RecipeDut)
        assert isinstance(dut.executor, NetnsExecutor) and isinstance(dut.executor.inner, SshExecutor)
        dut.setup(WorkingPoint(0, PortRange(40000, 40007), PortRange(1000, 1002), 64))
        try:
            facts = dut.facts()
            assert facts["conntrack_max"] == host_max + 4096  # set (globally, through the host scope)
            assert facts["udp_timeout"] == 600
            assert any("-j SNAT --to-source 198.19.0.1" in r for r in facts["nat_rules"])
            assert dut.count_connections() == 0
            n = send_udp(lab, (40000, 40007), (1000, 1002))
            time.sleep(0.2)
            assert dut.count_connections() == n == 24
            assert len(dut.mappings()) == 24
            flush = dut.timed_flush()
            assert 0 < flush < 5
            assert dut.count_connections() == 0
        finally:
            dut.teardown()
            dut.executor.close()
        assert state() == before
        assert int(Path("/proc/sys/net/netfilter/nf_conntrack_max").read_text()) == host_max
