"""SSH under faults: a real sshd reached through a veth path between two network namespaces, where the test
drops the packets silently (nftables DROP in the server's namespace: no RST, no FIN), and logins that must
fail once (a key the passphrase does not decrypt, a key the server refuses).

Nothing of this machine's own network is touched: the client end of the path is a namespace too (the
executor opens its TCP connection there), so the addresses below exist only inside the two namespaces.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from localsshd import SSHD, Sshd, local_sshd

from natbench.duts.executors import AuthenticationFailed, ConnectionLost
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import parse_recipe
from natbench.duts.ssh import SshExecutor
from natbench.errors import DutError
from natbench.testbed.lab.vm import netns_connect

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(os.geteuid() != 0, reason="namespaces, nftables and the sshd login as root need root"),
    pytest.mark.skipif(
        not Path(SSHD).exists() or shutil.which("ssh-keygen") is None, reason="openssh-server is not installed"
    ),
    pytest.mark.skipif(shutil.which("nft") is None, reason="nftables (nft) is not installed"),
]

CLIENT_ADDRESS = "10.99.0.1"
SERVER_ADDRESS = "10.99.0.2"

# Short keepalive settings so the tests take seconds: a keepalive after 0.5 s of silence, the connection
# lost after 3 unanswered ones, i.e. 0.5 x (3 + 1) = 2.0 s after the last packet from the server.
INTERVAL = 0.5
COUNT = 3
LOST_AFTER = INTERVAL * (COUNT + 1)
# Scheduling slack on a shared, loaded 2-CPU machine: the watchdog ticks every 0.125 s; the rest is thread
# wake-up and the time the test's own threads need to notice.
SLACK = 1.5


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@dataclass
class SshPath:
    """The sshd in the server namespace and how to reach it from the client namespace."""

    sshd: Sshd
    client_ns: str
    server_ns: str

    def executor(self, **kw: object) -> SshExecutor:
        """An executor whose TCP connection starts in the client namespace."""
        port = self.sshd.port

        def connect(timeout: float) -> object:
            return netns_connect(self.client_ns, SERVER_ADDRESS, port, timeout)

        args: dict[str, object] = {"keepalive_interval": INTERVAL, "keepalive_count": COUNT, "sock_factory": connect}
        args.update(kw)
        return self.sshd.executor(**args)

    def drop(self) -> None:
        """Drop every packet of the SSH port in both directions inside the server namespace, silently."""
        port = self.sshd.port
        rules = (
            "table inet nbdrop {\n"
            f"  chain in {{ type filter hook input priority -300; tcp dport {port} drop; }}\n"
            f"  chain out {{ type filter hook output priority -300; tcp sport {port} drop; }}\n"
            "}\n"
        )
        subprocess.run(
            ["ip", "netns", "exec", self.server_ns, "nft", "-f", "-"], input=rules.encode(), check=True, timeout=30
        )

    def restore(self) -> None:
        """Let the packets through again (no-op when nothing is dropped)."""
        subprocess.run(
            ["ip", "netns", "exec", self.server_ns, "nft", "delete", "table", "inet", "nbdrop"],
            capture_output=True,
            timeout=30,
        )

    def connections(self) -> int:
        """TCP connections sshd has accepted so far (its VERBOSE log has one "Connection from" line each)."""
        return len(self.sshd.log_lines("Connection from"))


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshPath]:
    tag = f"{os.getpid() % 100000}{secrets.token_hex(2)}"
    client, server = f"nb-sshc-{tag}", f"nb-sshs-{tag}"
    _sh("ip", "netns", "add", client)
    try:
        _sh("ip", "netns", "add", server)
        try:
            _sh("ip", "link", "add", "vc", "netns", client, "type", "veth", "peer", "name", "vs", "netns", server)
            for ns, ifname, addr in ((client, "vc", CLIENT_ADDRESS), (server, "vs", SERVER_ADDRESS)):
                _sh("ip", "-n", ns, "addr", "add", f"{addr}/30", "dev", ifname)
                _sh("ip", "-n", ns, "link", "set", ifname, "up")
                _sh("ip", "-n", ns, "link", "set", "lo", "up")
            with local_sshd(tmp_path_factory.mktemp("sshd-ns"), address=SERVER_ADDRESS, netns=server, log=True) as s:
                p = SshPath(s, client, server)
                try:
                    yield p
                finally:
                    p.restore()
        finally:
            _sh("ip", "netns", "del", server)
    finally:
        _sh("ip", "netns", "del", client)


def after(seconds: float, action: Callable[[], None]) -> threading.Thread:
    """Run ``action`` from another thread after ``seconds``."""

    def later() -> None:
        time.sleep(seconds)
        action()

    t = threading.Thread(target=later, daemon=True)
    t.start()
    return t


def test_a_silent_drop_mid_command_is_noticed_by_the_keepalive_and_the_next_command_reconnects(
    path: SshPath,
) -> None:
    ex = path.executor(retries=1, connect_timeout=2.0)
    try:
        assert ex.run("echo up").stdout == "up\n"
        dropped_at: list[float] = []

        def drop() -> None:
            path.drop()
            dropped_at.append(time.monotonic())

        t = after(1.0, drop)
        with pytest.raises(ConnectionLost) as err:
            # the command would run 30 s and its timeout is 60 s: only the keepalive can end this early
            ex.run("sleep 30; echo never", timeout=60)
        noticed = time.monotonic()
        t.join()
        try:
            since_drop = noticed - dropped_at[0]
            # Upper bound: the last packet from the server came at most at the drop, so the loss is declared
            # at most LOST_AFTER = 2.0 s later (+ slack). Lower bound: while the path was up the server
            # answered the keepalive sent after each INTERVAL of silence, so its last packet is at most one
            # INTERVAL (+ a round trip) older than the drop: declared no earlier than 2.0 - 0.5 = 1.5 s
            # after the drop (0.1 s for the round trip and the watchdog's tick).
            assert LOST_AFTER - INTERVAL - 0.1 <= since_drop <= LOST_AFTER + SLACK, since_drop
            msg = str(err.value)
            assert f"ssh root@{SERVER_ADDRESS}:{path.sshd.port}" in msg
            assert f"no answer to {COUNT} keepalives" in msg and "sleep 30" in msg
            assert "\n" not in msg
        finally:
            path.restore()
        # designed behaviour: the next command connects again once the path is back
        assert ex.run("echo back").stdout == "back\n"
        assert ex.reconnects == 1
    finally:
        path.restore()
        ex.close()


def test_a_dut_that_goes_silent_while_the_session_sends_and_a_rekey_is_requested_is_declared_lost_in_time(
    path: SshPath,
) -> None:
    """The keepalive's own send can wait (the DUT stops reading, so the TCP send buffer fills behind a bulk
    write and paramiko's send locks are held; a key re-exchange requested meanwhile waits on them too): the
    watchdog's deadline holds all the same."""
    ex = path.executor(retries=0, connect_timeout=2.0)
    workers: list[threading.Thread] = []
    try:
        assert ex.run("echo up").stdout == "up\n"
        assert ex._client is not None
        transport = ex._client.get_transport()
        assert transport is not None
        chan = transport.open_session(timeout=2.0)
        chan.exec_command("cat > /dev/null")
        path.drop()
        dropped_at = time.monotonic()

        def bulk() -> None:
            # 3 MB: more than sshd's 2 MB channel window and far more than a send buffer that sees no ACKs;
            # the connection closed under it is the expected end
            with contextlib.suppress(Exception):
                chan.sendall(b"\0" * 3_000_000)

        def rekey() -> None:
            # "Negotiation failed" once the watchdog closes the connection
            with contextlib.suppress(Exception):
                transport.renegotiate_keys()

        workers = [threading.Thread(target=bulk, daemon=True), threading.Thread(target=rekey, daemon=True)]
        workers[0].start()
        time.sleep(0.2)  # the bulk write is stuck in the socket by now (no ACK comes back)
        workers[1].start()
        # the last packet from the server came at most at the drop: the loss is due LOST_AFTER = 0.5 x (3 + 1)
        # = 2.0 s later (+ slack); poll a little longer than that so a late declaration is measured, not hung on
        while transport.is_active() and time.monotonic() - dropped_at < LOST_AFTER + SLACK + 3.0:
            time.sleep(0.05)
        since_drop = time.monotonic() - dropped_at
        assert not transport.is_active(), f"connection still open {since_drop:.1f} s after the DUT went silent"
        assert since_drop <= LOST_AFTER + SLACK, since_drop
        assert ex._keepalive is not None and ex._keepalive.reason is not None
        assert f"no answer to {COUNT} keepalives" in ex._keepalive.reason
    finally:
        path.restore()
        ex.close()
        for w in workers:
            w.join(timeout=5.0)


def _slow_facts_dut(ex: SshExecutor) -> RecipeDut:
    text = "recipe: slow\nstateful: false\nsteps:\n  facts:\n    - {run: sleep 4; echo 5, parse: int, as: five}\n"
    recipe = parse_recipe(text, "slow.yaml")
    return RecipeDut("nat-ssh", recipe, ex, retry_backoff=0.1)


def test_a_step_cut_by_a_silent_drop_is_retried_once_the_path_is_back(path: SshPath) -> None:
    ex = path.executor(retries=3, connect_timeout=1.0, backoff=0.5)
    dut = _slow_facts_dut(ex)
    # drop 1 s into the 4 s command; the loss is declared ~2 s later; the path comes back 4 s after the drop,
    # while the executor is still reconnecting (its attempts span 4 x 1 s timeouts + 0.5 + 1 + 2 s backoff)
    t1 = after(1.0, path.drop)
    t2 = after(5.0, path.restore)
    try:
        start = time.monotonic()
        assert dut.facts()["five"] == 5
        took = time.monotonic() - start
        t1.join()
        t2.join()
        assert ex.reconnects >= 1
        # the step ran once up to the drop (1 s), the path was down 4 s, then the whole step ran again (4 s):
        # at least 1 + 4 + 4 = 9 s; had the loss gone unnoticed, the first run of the step would have ended
        # only after TCP gave up (minutes), far beyond 9 s + reconnect backoff (3.5 s) + slack
        assert 9.0 <= took <= 9.0 + 3.5 + 3 * SLACK, took
    finally:
        t1.join()
        t2.join()
        path.restore()
        ex.close()


def test_a_silent_drop_that_lasts_fails_the_step_with_one_error_naming_the_dut_and_the_keepalive(
    path: SshPath,
) -> None:
    ex = path.executor(retries=1, connect_timeout=1.0, backoff=0.1)
    dut = _slow_facts_dut(ex)
    t = after(1.0, path.drop)
    try:
        start = time.monotonic()
        with pytest.raises(DutError) as err:
            dut.facts()
        took = time.monotonic() - start
        msg = str(err.value)
        assert msg.startswith("DUT nat-ssh: step facts: "), msg
        assert f"no answer to {COUNT} keepalives" in msg and "gave up after" in msg
        assert "\n" not in msg
        # 1 s until the drop + 2.0 s until the loss is declared + 2 step retries (RecipeDut's step_retries), each
        # a 0.1 / 0.2 s pause and 2 connect attempts of 1 s with a 0.1 s backoff: 1 + 2 + 0.3 + 2 x 2.1 = 7.5 s
        assert took <= 1.0 + LOST_AFTER + 0.3 + 2 * 2.1 + 2 * SLACK, took
    finally:
        t.join()
        path.restore()
        ex.close()


@pytest.fixture
def encrypted_key(path: SshPath, tmp_path: Path) -> Path:
    """An ed25519 key encrypted with the passphrase "right passphrase", authorised on the server."""
    key = tmp_path / "enc_key"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "right passphrase", "-C", "enc", "-f", str(key))
    auth = path.sshd.key.parent / "authorized_keys"
    with auth.open("a") as f:
        f.write(key.with_suffix(".pub").read_text())
    return key


def _settled_connections(path: SshPath) -> int:
    time.sleep(0.5)  # sshd writes the line from the forked session process
    return path.connections()


def test_a_wrong_key_passphrase_is_one_authentication_error_that_never_reaches_the_dut(
    path: SshPath, encrypted_key: Path
) -> None:
    before = _settled_connections(path)
    ex = path.executor(key=str(encrypted_key), passphrase="wrong passphrase", retries=3, backoff=0.2)
    start = time.monotonic()
    with pytest.raises(AuthenticationFailed) as err:
        ex.run("true")
    took = time.monotonic() - start
    msg = str(err.value)
    assert "passphrase does not decrypt key" in msg and str(encrypted_key) in msg and "\n" not in msg
    assert "wrong passphrase" not in msg  # the secret itself is never shown
    assert not isinstance(err.value, ConnectionLost)
    # retried 3 times the backoff alone would take 0.2 + 0.4 + 0.8 = 1.4 s
    assert took < 1.4, took
    # the key is decrypted before the DUT is contacted: no connection reached sshd
    assert _settled_connections(path) == before
    # the counting itself works: the right passphrase makes exactly one connection and logs in
    ok = path.executor(key=str(encrypted_key), passphrase="right passphrase")
    try:
        assert ok.run("echo in").stdout == "in\n"
    finally:
        ok.close()
    assert _settled_connections(path) == before + 1


def test_a_refused_key_is_one_authentication_error_after_one_login_attempt(path: SshPath, tmp_path: Path) -> None:
    stranger = tmp_path / "stranger_key"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "stranger", "-f", str(stranger))
    before = _settled_connections(path)
    ex = path.executor(key=str(stranger), retries=3, backoff=0.2)
    with pytest.raises(AuthenticationFailed, match=f"authentication failed .*{stranger.name}.*check user and key"):
        ex.run("true")
    # one TCP connection, not four (retries=3 would make 4)
    assert _settled_connections(path) == before + 1
