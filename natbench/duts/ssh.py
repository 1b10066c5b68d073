"""SSH executor (paramiko): verified host keys, key/agent auth, timeouts, keepalive, reconnect with backoff.

Security defaults: the server's host key must be in ``known_hosts`` (the
user's ``~/.ssh/known_hosts`` unless another file is named); an unknown key
is refused unless ``allow_unknown_host_key`` is set, a changed key is always
refused. Only key files and the SSH agent authenticate (no passwords); the
key passphrase, if any, is never logged or shown in ``repr``.

Every wait is bounded: the TCP connect, the banner, the key exchange and the
authentication each by ``connect_timeout`` (paramiko's ``timeout``,
``banner_timeout``, ``auth_timeout``), a command by its timeout, and everything
on an established connection (opening a channel, starting a command, reading
its output) by the keepalive: when
nothing arrives from the DUT for ``keepalive_interval`` seconds a keepalive
request that the server must answer is sent, one every interval; after
``keepalive_count`` of them went unanswered (``keepalive_interval x
(keepalive_count + 1)`` seconds after the last packet from the DUT) the
connection is declared lost and closed, which ends every wait on it with
:class:`ConnectionLost`. Only transient network errors are retried; a host key
or authentication problem (a refused key, a key that the given passphrase
does not decrypt) is one :class:`AuthenticationFailed` error.
"""

from __future__ import annotations

import logging
import math
import shlex
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paramiko
from paramiko.common import cMSG_GLOBAL_REQUEST

from natbench.duts.executors import (
    DEFAULT_COMMAND_TIMEOUT,
    KILL_GRACE,
    AuthenticationFailed,
    CommandFailed,
    CommandTimeout,
    ConnectionLost,
    ExecutorError,
    ProcessState,
    keep_tail,
    seconds,
)
from natbench.plugins import CommandResult

log = logging.getLogger(__name__)

DEFAULT_KEEPALIVE_INTERVAL = 5.0
"""Seconds of silence from the DUT before natbench sends a keepalive, and between keepalives."""
DEFAULT_KEEPALIVE_COUNT = 3
"""Unanswered keepalives after which the connection is declared lost (5 s x (3 + 1) = 20 s of silence)."""


class _WatchedSocket:
    """A TCP socket that notes when bytes last arrived from the peer (read by :class:`_Keepalive`)."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.last_recv = time.monotonic()
        """``time.monotonic()`` of the last read that returned data."""

    def recv(self, n: int) -> bytes:
        """Read like ``socket.recv`` and note the time when data came."""
        data = self._sock.recv(n)
        if data:
            self.last_recv = time.monotonic()
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


class _Keepalive:
    """Watches one connection: sends keepalives while the DUT is silent, closes the connection when they go
    unanswered.

    The keepalive is the ``keepalive@openssh.com`` global request with *want reply* set: RFC 4254 section 4
    makes the server answer it (with SSH_MSG_REQUEST_FAILURE when it does not know it, which is enough), so
    any answer proves the path and the server are alive.
    paramiko's own ``set_keepalive`` asks for no reply and therefore cannot detect a dead peer.

    The watch loop itself never sends: a send can wait (for the end of a key re-exchange in paramiko's
    ``clear_to_send``, or for room in a full TCP send buffer when the DUT stops reading), and the deadline must
    hold meanwhile. Each keepalive is sent from a short-lived thread of its own, at most one at a time; a
    keepalive that falls due while the previous one is still waiting is not sent (the silence is counted all
    the same).
    """

    def __init__(
        self, transport: paramiko.Transport, sock: _WatchedSocket, interval: float, count: int, what: str
    ) -> None:
        self.transport = transport
        self.sock = sock
        self.interval = interval
        self.count = count
        self.what = what
        self.reason: str | None = None
        """Why the connection was declared lost (None while it is not)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"ssh-keepalive {what}", daemon=True)
        self._sender: threading.Thread | None = None

    @property
    def limit(self) -> float:
        """Seconds without a packet from the DUT after which the connection is lost."""
        return self.interval * (self.count + 1)

    def start(self) -> None:
        """Start watching."""
        self._thread.start()

    def stop(self) -> None:
        """Stop watching (the connection is being closed)."""
        self._stop.set()
        if self._thread is not threading.current_thread() and self._thread.is_alive():
            self._thread.join(timeout=2.0)

    def _run(self) -> None:
        tick = min(0.25, self.interval / 4)
        sent = 0  # keepalives sent since the last packet from the DUT
        last_seen = self.sock.last_recv
        while not self._stop.wait(tick):
            if not self.transport.is_active():
                return
            if self.sock.last_recv != last_seen:
                last_seen, sent = self.sock.last_recv, 0
            silent = time.monotonic() - last_seen
            if silent >= self.limit:
                self.reason = (
                    f"no answer to {self.count} keepalives (one every {self.interval:g} s, nothing received for "
                    f"{silent:.1f} s): connection declared lost"
                )
                log.warning("%s: %s", self.what, self.reason)
                self.transport.close()
                return
            if silent >= (sent + 1) * self.interval and sent < self.count:
                self._send_async()
                sent += 1

    def _send_async(self) -> None:
        """Send one keepalive from a thread of its own, unless the previous one is still waiting to go out."""
        if self._sender is not None and self._sender.is_alive():
            log.debug("%s: keepalive not sent: the previous one is still waiting to go out", self.what)
            return
        self._sender = threading.Thread(target=self._send, name=f"ssh-keepalive-send {self.what}", daemon=True)
        self._sender.start()

    def _send(self) -> None:
        if not self.transport.clear_to_send.is_set():
            return  # a key exchange is under way: sending would block; the silence is still counted
        m = paramiko.Message()
        m.add_byte(cMSG_GLOBAL_REQUEST)
        m.add_string("keepalive@openssh.com")
        m.add_boolean(True)  # want reply: the answer is the proof of life
        try:
            # paramiko's public global_request() either blocks for the answer or asks for none
            self.transport._send_user_message(m)  # type: ignore[attr-defined]
        except (paramiko.SSHException, OSError, EOFError) as exc:
            log.debug("%s: keepalive not sent: %s", self.what, exc)


PID_MARK = "@@natbench-pid"
"""Start of the line a command with a time limit prints on standard error before anything else: its process id on
the DUT (taken out of the output natbench hands on)."""

PID_LINE_MAX = 4096
"""Bytes of standard error searched for the pid line (what a ``sudo`` prints before it comes first)."""


class _PidLine:
    """Takes the pid line (:data:`PID_MARK`) out of a command's standard error as it arrives."""

    def __init__(self, take: Callable[[bytes], None]) -> None:
        self.take = take
        self.pid: int | None = None
        self.by_timeout = False
        """Whether the DUT's coreutils ``timeout`` runs the command (and sends SIGTERM one second after its limit)."""
        self._buffer: bytearray | None = bytearray()

    def feed(self, data: bytes) -> None:
        """Pass ``data`` on, without the pid line."""
        if self._buffer is None:
            self.take(data)
            return
        self._buffer += data
        mark = PID_MARK.encode()
        at = self._buffer.find(mark)
        end = self._buffer.find(b"\n", at) if at >= 0 else -1
        if end >= 0:
            line = bytes(self._buffer[at:end]).split()
            if len(line) == 3 and line[1].isdigit():
                self.pid = int(line[1])
                self.by_timeout = line[2] == b"timeout"
            rest = bytes(self._buffer[:at] + self._buffer[end + 1 :])
        elif len(self._buffer) > PID_LINE_MAX:
            rest = bytes(self._buffer)
        else:
            return
        self._buffer = None
        if rest:
            self.take(rest)

    def finish(self) -> None:
        """Pass on what is still held (a command that printed no pid line)."""
        if self._buffer:
            self.take(bytes(self._buffer))
        self._buffer = None


class SshRunning:
    """A command on an SSH DUT that did not end when asked to stop: its process (group) there, watched over SSH."""

    def __init__(self, executor: SshExecutor, pid: int) -> None:
        self._executor = executor
        self._pid = pid

    @property
    def pid(self) -> int:
        """Its process id on the DUT (a process group id where the DUT has coreutils ``timeout``)."""
        return self._pid

    def _alive_test(self) -> str:
        """Shell text whose exit status is 0 while the process or a member of its group runs (a zombie, which only
        waits to be reaped, does not)."""
        return (
            f"ps -A -o pid= -o pgid= -o stat= | awk -v p={self._pid} "
            "'($1 == p || $2 == p) && $3 !~ /^Z/ {f = 1} END {exit !f}'"
        )

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` (whole seconds, at least 1) for it to end, in one command on the DUT."""
        n = max(1, math.ceil(seconds))
        script = f"i=0; while {self._alive_test()}; do [ $i -ge {n} ] && exit 1; sleep 1; i=$((i + 1)); done"
        return self._executor.run(script, timeout=n + self._executor.connect_timeout + 5).returncode == 0

    def signal(self, name: str) -> None:
        """Send signal ``name`` (``TERM``, ``KILL``) to its group, and to the process itself."""
        self._executor.run(
            f"kill -s {name} -- -{self._pid} 2>/dev/null; kill -s {name} {self._pid} 2>/dev/null; true",
            timeout=self._executor.connect_timeout + 5,
        )

    def kill(self) -> None:
        """SIGKILL to its group."""
        self.signal("KILL")

    def processes(self) -> list[ProcessState]:
        """Its processes on the DUT (``ps``; empty when it has ended or ``ps`` cannot say)."""
        try:
            res = self._executor.run("ps -A -o pid= -o pgid= -o stat= -o args=", timeout=self._executor.connect_timeout)
        except ExecutorError:
            return []
        out = []
        for line in res.stdout.splitlines():
            parts = line.split(None, 3)
            mine = len(parts) >= 3 and parts[0].isdigit() and self._pid in (int(parts[0]), _int(parts[1]))
            if mine and not parts[2].startswith("Z"):  # a zombie only waits to be reaped
                out.append(ProcessState(int(parts[0]), parts[2][:1], (parts[3] if len(parts) > 3 else "")[:200]))
        return out


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


class _AcceptUnknownPolicy(paramiko.MissingHostKeyPolicy):
    """Accept (for this session only) a host key that is not in known_hosts, with a warning."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        log.warning(
            "accepting unknown SSH host key %s %s for %s (allow_unknown_host_key)",
            key.get_name(),
            key.fingerprint,
            hostname,
        )
        client.get_host_keys().add(hostname, key.get_name(), key)


class SshExecutor:
    """Runs commands on a DUT over SSH as ``sh -c CMD`` (``sudo -n sh -c CMD`` with ``sudo``)."""

    def __init__(
        self,
        host: str,
        *,
        user: str | None = None,
        port: int = 22,
        key: str | None = None,
        known_hosts: str | None = None,
        allow_unknown_host_key: bool = False,
        sudo: bool = False,
        connect_timeout: float = 10.0,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        retries: int = 3,
        backoff: float = 0.5,
        passphrase: str | None = None,
        sock_factory: Callable[[float], socket.socket] | None = None,
        keepalive_interval: float = DEFAULT_KEEPALIVE_INTERVAL,
        keepalive_count: int = DEFAULT_KEEPALIVE_COUNT,
    ) -> None:
        self.host_name = host
        self.user = user
        self.port = int(port)
        self.key = str(Path(key).expanduser()) if key else None
        self.known_hosts = (
            str(Path(known_hosts).expanduser()) if known_hosts else str(Path("~/.ssh/known_hosts").expanduser())
        )
        self.allow_unknown_host_key = allow_unknown_host_key
        self.sudo = sudo
        self.connect_timeout = seconds(connect_timeout, f"{self.description}: connect_timeout")
        self.command_timeout = seconds(command_timeout, f"{self.description}: command_timeout")
        self.retries = int(retries)
        self.backoff = float(backoff)
        self._passphrase = passphrase
        self.sock_factory = sock_factory
        """Opens the TCP connection (given the connect timeout) instead of paramiko, e.g. inside a network
        namespace; the host key is still looked up for ``host:port``."""
        self.keepalive_interval = float(keepalive_interval)
        """Seconds of silence from the DUT before a keepalive is sent, and between keepalives."""
        self.keepalive_count = int(keepalive_count)
        """Unanswered keepalives after which the connection is declared lost."""
        seconds(self.keepalive_interval, f"{self.description}: keepalive_interval")
        if self.keepalive_count < 1:
            raise ExecutorError(f"{self.description}: keepalive_count must be at least 1, not {self.keepalive_count}")
        self._client: paramiko.SSHClient | None = None
        self._keepalive: _Keepalive | None = None
        self._pkey: paramiko.PKey | None = None
        self._last_loss: str | None = None
        self._lock = threading.RLock()
        self.reconnects = 0
        """How many times the connection was re-established after a drop."""

    def __repr__(self) -> str:
        return f"SshExecutor({self.description!r})"

    @property
    def description(self) -> str:
        """``ssh user@host:port`` (no secrets)."""
        who = f"{self.user}@" if self.user else ""
        return f"ssh {who}{self.host_name}:{self.port}" + (" (sudo)" if self.sudo else "")

    @property
    def namespaced(self) -> bool:
        """Commands run on the remote host itself."""
        return False

    def host(self) -> SshExecutor:
        """Itself."""
        return self

    # -- connection -------------------------------------------------------

    def _connect_once(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        kh = Path(self.known_hosts)
        if kh.is_file():
            try:
                client.load_host_keys(str(kh))
            except (OSError, paramiko.SSHException) as exc:
                raise ExecutorError(f"{self.description}: cannot read known_hosts {kh}: {exc}") from None
        elif not self.allow_unknown_host_key:
            raise ExecutorError(
                f"{self.description}: known_hosts file {kh} does not exist; host keys are verified by default "
                "(add the DUT's key, e.g. ssh-keyscan, or set allow_unknown_host_key: true)"
            )
        client.set_missing_host_key_policy(
            _AcceptUnknownPolicy() if self.allow_unknown_host_key else paramiko.RejectPolicy()
        )
        pkey = self._load_key()
        kwargs: dict[str, Any] = {
            "hostname": self.host_name,
            "port": self.port,
            "username": self.user,
            "timeout": self.connect_timeout,
            "banner_timeout": self.connect_timeout,
            "auth_timeout": self.connect_timeout,
            "allow_agent": True,
            "look_for_keys": self.key is None,
        }
        if pkey is not None:
            kwargs["pkey"] = pkey
        elif self.key:
            kwargs["key_filename"] = self.key  # encrypted and no passphrase given: the agent may hold it
        sock: _WatchedSocket | None = None
        try:
            if self.sock_factory is not None:
                raw = self.sock_factory(self.connect_timeout)
            else:
                raw = socket.create_connection((self.host_name, self.port), timeout=self.connect_timeout)
            sock = _WatchedSocket(raw)
            kwargs["sock"] = sock
            try:
                client.connect(**kwargs)
            except BaseException:
                sock.close()  # paramiko closes the sockets it opens, not a given one
                raise
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise ExecutorError(
                f"{self.description}: host key MISMATCH ({exc.key.get_name()} {exc.key.fingerprint} is not the key in "
                f"{self.known_hosts}); refusing to connect"
            ) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise AuthenticationFailed(
                f"{self.description}: authentication failed ({type(exc).__name__}: the server refused "
                f"{'key ' + self.key if self.key else 'the agent keys and default keys'}); check user and key"
            ) from None
        except paramiko.SSHException as exc:
            client.close()
            if "not found in known_hosts" in str(exc):
                raise ExecutorError(
                    f"{self.description}: unknown host key (not in {self.known_hosts}); refusing to connect. "
                    "Add the key to known_hosts or set allow_unknown_host_key: true"
                ) from None
            raise ConnectionLost(f"{self.description}: SSH error: {exc}") from None
        except (OSError, EOFError) as exc:
            client.close()
            raise ConnectionLost(f"{self.description}: cannot connect: {exc or type(exc).__name__}") from None
        transport = client.get_transport()
        if transport is None or sock is None:
            client.close()
            raise ConnectionLost(f"{self.description}: cannot connect: no transport")
        self._keepalive = _Keepalive(transport, sock, self.keepalive_interval, self.keepalive_count, self.description)
        self._keepalive.start()
        return client

    def _load_key(self) -> paramiko.PKey | None:
        """The key file decrypted here, before the DUT is contacted (None: no key file, or an encrypted one and
        no passphrase, left to the agent).

        A passphrase that does not decrypt the key is an :class:`AuthenticationFailed` at once: retrying
        cannot help, and no login attempt reaches the DUT.
        """
        if self.key is None:
            return None
        if self._pkey is not None:
            return self._pkey
        secret = self._passphrase.encode() if self._passphrase else None
        try:
            # paramiko 5 wants the passphrase as bytes here (its stubs still say str)
            self._pkey = paramiko.PKey.from_path(self.key, secret)  # type: ignore[arg-type]
        except OSError as exc:
            raise AuthenticationFailed(f"{self.description}: cannot read key {self.key}: {exc.strerror}") from None
        except paramiko.pkey.UnknownKeyType:  # a plain Exception: e.g. a DSA key, which paramiko 5 cannot load
            raise self._unsupported_key() from None
        except TypeError:
            if secret is None:
                return None  # encrypted, no passphrase: paramiko tries the agent
            try:  # a passphrase for a key that is not encrypted
                self._pkey = paramiko.PKey.from_path(self.key, None)
            except paramiko.pkey.UnknownKeyType:
                raise self._unsupported_key() from None
            except (TypeError, ValueError, paramiko.SSHException):
                raise AuthenticationFailed(f"{self.description}: cannot load key {self.key}") from None
        except (ValueError, paramiko.SSHException):
            if secret is not None:
                raise AuthenticationFailed(
                    f"{self.description}: authentication failed: the passphrase does not decrypt key {self.key} "
                    "(not retried)"
                ) from None
            raise AuthenticationFailed(
                f"{self.description}: authentication failed: key {self.key} is not a private key paramiko can read"
            ) from None
        return self._pkey

    def _unsupported_key(self) -> AuthenticationFailed:
        """The error for a key file of a type paramiko cannot load (names the file, never its content)."""
        return AuthenticationFailed(
            f"{self.description}: cannot load key {self.key}: a key type paramiko does not support"
            " (DSA, for one); use an Ed25519, ECDSA or RSA key"
        )

    def connect(self) -> None:
        """Connect (again) now, retrying transient failures with exponential backoff.

        Refused or unknown host keys and failed authentication are not retried.
        """
        self.close()
        delay = self.backoff
        last: ExecutorError | None = None
        for attempt in range(self.retries + 1):
            try:
                self._client = self._connect_once()
                log.debug("connected to %s", self.description)
                self._last_loss = None
                return
            except ConnectionLost as exc:
                last = exc
                if attempt < self.retries:
                    log.info("%s; retrying in %.1f s", exc, delay)
                    time.sleep(delay)
                    delay *= 2
        assert last is not None
        earlier = f"; before that: {self._last_loss}" if self._last_loss else ""
        raise ConnectionLost(f"{last} (gave up after {self.retries + 1} attempts{earlier})")

    def _alive(self) -> bool:
        if self._client is None:
            return False
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def close(self) -> None:
        """Close the connection (a later ``run`` reconnects)."""
        if self._keepalive is not None:
            self._keepalive.stop()
            if self._keepalive.reason:
                self._last_loss = self._keepalive.reason
            self._keepalive = None
        if self._client is not None:
            self._client.close()
            self._client = None

    def _dropped(self, what: str) -> ConnectionLost:
        """The error for a connection that went away; names the keepalive when it declared the loss."""
        ka = self._keepalive
        if ka is not None and ka.reason:
            return ConnectionLost(f"{self.description}: {ka.reason} {what}")
        return ConnectionLost(f"{self.description}: connection dropped {what}")

    # -- commands ---------------------------------------------------------

    def wrap(self, command: str, limit: float | None = None) -> str:
        """The remote command line.

        With ``limit``, it first prints its process id on standard error (:data:`PID_MARK`, and whether the DUT's
        coreutils ``timeout`` stops it), and the DUT stops the command itself one second after natbench stops
        waiting: ``timeout`` sends SIGTERM then, and SIGKILL as long again and 7 s later, after natbench's own SIGKILL
        at the end of its wait for a command still running (:mod:`natbench.duts.outstanding`), so a hung command does
        not linger there when natbench is gone. natbench never signals ``timeout`` before that: a second signal makes
        it send SIGKILL at its first expiry (it arms a timer of its own for each).
        """
        inner = f"sh -c {shlex.quote(command)}"
        if limit is not None:
            secs = math.ceil(limit) + 1
            kill_after = math.ceil(limit) + math.ceil(KILL_GRACE) + 5
            inner = (
                f"if command -v timeout >/dev/null 2>&1; then printf '%s %s timeout\\n' {PID_MARK} \"$$\" >&2; "
                f"exec timeout -k {kill_after} {secs} {inner}; "
                f"else printf '%s %s plain\\n' {PID_MARK} \"$$\" >&2; exec {inner}; fi"
            )
            inner = f"sh -c {shlex.quote(inner)}"
        return f"sudo -n {inner}" if self.sudo else inner

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        """Run ``command``; reconnect (with backoff) when the connection is gone before it starts.

        A connection that drops while the command runs raises :class:`ConnectionLost`
        (the caller decides whether the step is safe to retry; the next call reconnects).
        """
        limit = seconds(timeout, f"{self.description}: timeout") if timeout is not None else self.command_timeout
        chan = self._open_channel()
        start = time.monotonic()
        try:
            result = self._exec(chan, command, limit, start)
        finally:
            chan.close()
        if check and not result.ok:
            raise CommandFailed(result)
        return result

    def run_streaming(
        self, command: str, sink: Callable[[bytes], None], *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command``, handing its standard output to ``sink`` as it arrives (``StreamsOutput``); the
        result keeps the last 64 KiB of standard error. An exception from ``sink`` closes the channel (the DUT's
        ``timeout`` wrapper ends the command there) and propagates."""
        limit = seconds(timeout, f"{self.description}: timeout") if timeout is not None else self.command_timeout
        chan = self._open_channel()
        start = time.monotonic()
        try:
            return self._exec(chan, command, limit, start, sink)
        finally:
            chan.close()

    def _open_channel(self) -> paramiko.Channel:
        with self._lock:
            if not self._alive():
                if self._client is not None:
                    self.reconnects += 1
                    log.info("%s: connection dropped, reconnecting", self.description)
                self.connect()
            try:
                return self._new_session()
            except (paramiko.SSHException, OSError, EOFError):
                # the session could not even start: reconnect once and go on
                self.reconnects += 1
                self.connect()
                try:
                    return self._new_session()
                except (paramiko.SSHException, OSError, EOFError) as exc:
                    raise ConnectionLost(f"{self.description}: cannot open a session: {exc}") from None

    def _new_session(self) -> paramiko.Channel:
        """A session channel on the current connection (EOFError when there is no transport)."""
        assert self._client is not None
        transport = self._client.get_transport()
        if transport is None:
            raise EOFError("no transport")
        return transport.open_session(timeout=self.connect_timeout)

    def _exec(
        self,
        chan: paramiko.Channel,
        command: str,
        limit: float,
        start: float,
        sink: Callable[[bytes], None] | None = None,
    ) -> CommandResult:
        """Run ``command`` on ``chan``: its output kept, or standard output given to ``sink`` as it arrives (then
        only the last ``STDERR_KEPT`` bytes of standard error are kept)."""
        out: list[bytes] = []
        err: list[bytes] = []
        kept = bytearray()
        take_out: Callable[[bytes], None] = out.append if sink is None else sink

        def keep_err(data: bytes) -> None:
            if sink is None:
                err.append(data)
            else:
                keep_tail(kept, data)

        pid_line = _PidLine(keep_err)
        take_err = pid_line.feed
        try:
            chan.settimeout(min(1.0, limit))
            chan.exec_command(self.wrap(command, limit))
            chan.shutdown_write()
            deadline = start + limit
            idle = 0.001
            while True:
                got = False
                if chan.recv_ready():
                    take_out(chan.recv(65536))
                    got = True
                if chan.recv_stderr_ready():
                    take_err(chan.recv_stderr(65536))
                    got = True
                # sshd may send the exit status before the last output: stop only after EOF too
                if (
                    chan.exit_status_ready()
                    and chan.eof_received
                    and not chan.recv_ready()
                    and not chan.recv_stderr_ready()
                ):
                    break
                if chan.closed and not got:
                    break
                if time.monotonic() > deadline:
                    break
                if not got:
                    transport = chan.get_transport()
                    if transport is None or not transport.is_active():
                        raise self._dropped(f"while running: {command}")
                    time.sleep(idle)  # short commands answer fast; long ones (a 40-minute flush) poll slowly
                    idle = min(idle * 1.5, 0.05)
                else:
                    idle = 0.001
            if time.monotonic() > deadline and not chan.exit_status_ready():
                self._await_pid(chan, pid_line, take_out)
                raise self._timed_out(command, limit, pid_line)
            # drain what is left
            while chan.recv_ready():
                take_out(chan.recv(65536))
            while chan.recv_stderr_ready():
                take_err(chan.recv_stderr(65536))
            status = chan.recv_exit_status() if chan.exit_status_ready() else -1
            pid_line.finish()
        except (TimeoutError, paramiko.SSHException, OSError, EOFError) as exc:
            if self._keepalive is not None and self._keepalive.reason:
                raise self._dropped(f"while running: {command}") from None
            raise ConnectionLost(f"{self.description}: connection problem while running {command}: {exc}") from None
        if status == -1:
            if self._keepalive is not None and self._keepalive.reason:
                raise self._dropped(f"while running: {command}")
            raise ConnectionLost(f"{self.description}: no exit status (connection closed) for: {command}")
        return CommandResult(
            command,
            status,
            b"".join(out).decode("utf-8", errors="replace"),
            (b"".join(err) if sink is None else bytes(kept)).decode("utf-8", errors="replace"),
            time.monotonic() - start,
        )

    @staticmethod
    def _await_pid(chan: paramiko.Channel, pid_line: _PidLine, take_out: Callable[[bytes], None]) -> None:
        """Read the command's output a little longer (:data:`KILL_GRACE` at most) until its pid line has come: on a
        busy DUT the session may start late in the command's time."""
        until = time.monotonic() + KILL_GRACE
        while pid_line.pid is None and time.monotonic() < until and not chan.closed:
            if chan.recv_stderr_ready():
                pid_line.feed(chan.recv_stderr(65536))
            elif chan.recv_ready():
                take_out(chan.recv(65536))
            else:
                time.sleep(0.01)

    def _timed_out(self, command: str, limit: float, pid_line: _PidLine) -> CommandTimeout:
        """Have a command that outlived ``limit`` asked to stop and say what became of it: the DUT's ``timeout``
        sends SIGTERM one second after the limit (natbench waits for that), else natbench sends it."""
        pid = pid_line.pid
        if pid is None:
            return CommandTimeout(f"{self.description}: command did not finish within {limit:g} s: {command}")
        running = SshRunning(self, pid)
        if pid_line.by_timeout:
            grace = math.ceil(limit) + 1 - limit + KILL_GRACE + 1  # its SIGTERM, then as on this machine (+1 s late)
        else:
            running.signal("TERM")
            grace = KILL_GRACE
        if running.wait(grace):
            return CommandTimeout(
                f"{self.description}: command did not finish within {limit:g} s and was stopped: {command}"
            )
        now = "; ".join(map(str, running.processes())) or f"pid {pid}"
        return CommandTimeout(
            f"{self.description}: command did not finish within {limit:g} s; asked to stop (SIGTERM), it is still "
            f"running: {now}: {command}",
            running=running,
        )
