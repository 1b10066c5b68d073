"""SSH executor (paramiko): verified host keys, key/agent auth, timeouts, reconnect with backoff.

Security defaults: the server's host key must be in ``known_hosts`` (the
user's ``~/.ssh/known_hosts`` unless another file is named); an unknown key
is refused unless ``allow_unknown_host_key`` is set, a changed key is always
refused. Only key files and the SSH agent authenticate (no passwords); the
key passphrase, if any, is never logged or shown in ``repr``.
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

from natbench.duts.executors import (
    DEFAULT_COMMAND_TIMEOUT,
    CommandFailed,
    CommandResult,
    CommandTimeout,
    ConnectionLost,
    ExecutorError,
)

__all__ = ["SshExecutor"]

log = logging.getLogger(__name__)


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
        self.connect_timeout = float(connect_timeout)
        self.command_timeout = float(command_timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self._passphrase = passphrase
        self.sock_factory = sock_factory
        """Opens the TCP connection (given the connect timeout) instead of paramiko, e.g. inside a network
        namespace; the host key is still looked up for ``host:port``."""
        self._client: paramiko.SSHClient | None = None
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
        if self.key:
            kwargs["key_filename"] = self.key
        if self._passphrase:
            kwargs["passphrase"] = self._passphrase
        try:
            if self.sock_factory is not None:
                kwargs["sock"] = self.sock_factory(self.connect_timeout)
            client.connect(**kwargs)
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise ExecutorError(
                f"{self.description}: host key MISMATCH ({exc.key.get_name()} {exc.key.fingerprint} is not the key in "
                f"{self.known_hosts}); refusing to connect"
            ) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise ExecutorError(
                f"{self.description}: authentication failed ({type(exc).__name__}); check user and key"
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
            raise ConnectionLost(f"{self.description}: cannot connect: {exc}") from None
        return client

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
                return
            except ConnectionLost as exc:
                last = exc
                if attempt < self.retries:
                    log.info("%s; retrying in %.1f s", exc, delay)
                    time.sleep(delay)
                    delay *= 2
        assert last is not None
        raise ConnectionLost(f"{last} (gave up after {self.retries + 1} attempts)")

    def _alive(self) -> bool:
        if self._client is None:
            return False
        transport = self._client.get_transport()
        return transport is not None and transport.is_active()

    def close(self) -> None:
        """Close the connection (a later ``run`` reconnects)."""
        if self._client is not None:
            self._client.close()
            self._client = None

    # -- commands ---------------------------------------------------------

    def wrap(self, command: str, limit: float | None = None) -> str:
        """The remote command line.

        With ``limit``, the DUT ends the command itself one second after natbench stops
        waiting (coreutils ``timeout`` where the DUT has it), so a hung command does not
        linger there after its channel is closed.
        """
        inner = f"sh -c {shlex.quote(command)}"
        if limit is not None:
            secs = math.ceil(limit) + 1
            inner = (
                f"if command -v timeout >/dev/null 2>&1; then exec timeout -k 2 {secs} {inner}; else exec {inner}; fi"
            )
            inner = f"sh -c {shlex.quote(inner)}"
        return f"sudo -n {inner}" if self.sudo else inner

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        """Run ``command``; reconnect (with backoff) when the connection is gone before it starts.

        A connection that drops while the command runs raises :class:`ConnectionLost`
        (the caller decides whether the step is safe to retry; the next call reconnects).
        """
        limit = timeout if timeout is not None else self.command_timeout
        chan = self._open_channel()
        start = time.monotonic()
        try:
            result = self._exec(chan, command, limit, start)
        finally:
            chan.close()
        if check and not result.ok:
            raise CommandFailed(result)
        return result

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

    def _exec(self, chan: paramiko.Channel, command: str, limit: float, start: float) -> CommandResult:
        out: list[bytes] = []
        err: list[bytes] = []
        try:
            chan.settimeout(min(1.0, limit))
            chan.exec_command(self.wrap(command, limit))
            chan.shutdown_write()
            deadline = start + limit
            idle = 0.001
            while True:
                got = False
                if chan.recv_ready():
                    out.append(chan.recv(65536))
                    got = True
                if chan.recv_stderr_ready():
                    err.append(chan.recv_stderr(65536))
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
                    raise CommandTimeout(f"{self.description}: command did not finish within {limit:g} s: {command}")
                if not got:
                    transport = chan.get_transport()
                    if transport is None or not transport.is_active():
                        raise ConnectionLost(f"{self.description}: connection dropped while running: {command}")
                    time.sleep(idle)  # short commands answer fast; long ones (a 40-minute flush) poll slowly
                    idle = min(idle * 1.5, 0.05)
                else:
                    idle = 0.001
            # drain what is left
            while chan.recv_ready():
                out.append(chan.recv(65536))
            while chan.recv_stderr_ready():
                err.append(chan.recv_stderr(65536))
            status = chan.recv_exit_status() if chan.exit_status_ready() else -1
        except (TimeoutError, paramiko.SSHException, OSError, EOFError) as exc:
            raise ConnectionLost(f"{self.description}: connection problem while running {command}: {exc}") from None
        if status == -1:
            raise ConnectionLost(f"{self.description}: no exit status (connection closed) for: {command}")
        return CommandResult(
            command,
            status,
            b"".join(out).decode("utf-8", errors="replace"),
            b"".join(err).decode("utf-8", errors="replace"),
            time.monotonic() - start,
        )
