"""Where DUT commands run: this machine, a network namespace, or (see :mod:`natbench.duts.ssh`) SSH.

Every executor runs a command line the same way: ``sh -c <command>`` on the
target, so a recipe's shell text (``;``, ``>``, ``$(...)``) means the same thing
locally, inside a namespace and over SSH. A command that outlives its timeout
is killed and reported; nothing blocks forever.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Callable

from natbench.errors import DutError
from natbench.plugins import CommandResult, Executor, StreamsOutput

DEFAULT_COMMAND_TIMEOUT = 120.0

KILL_GRACE = 2.0
"""Seconds natbench still waits, after killing a timed-out command's process group, for its output pipes to
close and the process to be reaped; a child that left the group (``setsid``) and still holds the pipes is
then cut off: the pipes are closed on natbench's side and the command is reported as timed out."""


class ExecutorError(DutError):
    """An executor could not run a command (unreachable, refused, timed out)."""


class CommandTimeout(ExecutorError):
    """A command did not finish within its timeout and was killed."""


class ConnectionLost(ExecutorError):
    """The connection to the DUT dropped while a command ran; the step may be retried."""


class AuthenticationFailed(ExecutorError):
    """The DUT refused the login, or the key could not be used (wrong passphrase); never retried."""


class CommandFailed(DutError):
    """A command exited non-zero (``check=True``)."""

    def __init__(
        self, result: CommandResult, *, hint: str | None = None, step: str | None = None, dut: str | None = None
    ):
        self.result = result
        err = result.stderr.strip() or result.stdout.strip()
        if len(err) > 400:
            err = err[:400] + "..."
        msg = f"command failed with exit status {result.returncode}: {result.command}"
        if err:
            msg += f" -- {err}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg, step=step, dut=dut)


MAX_WAIT = 1e6
"""The longest wait an executor accepts, in seconds (11.6 days; the operating system's timers overflow
somewhere beyond, and no DUT command should take longer)."""


def seconds(value: float, what: str) -> float:
    """``value`` as seconds in (0, :data:`MAX_WAIT`], else :class:`ExecutorError` naming ``what``."""
    v = float(value)
    if not (math.isfinite(v) and 0 < v <= MAX_WAIT):
        raise ExecutorError(f"{what} must be a number of seconds above 0 and at most {MAX_WAIT:g}, not {value!r}")
    return v


STDERR_KEPT = 65536
"""Bytes of standard error a streamed command keeps (the last ones): its output goes to the sink, not memory."""

STREAM_PIECE = 1 << 16
"""Bytes read from a streamed command's output at a time."""


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def keep_tail(kept: bytearray, data: bytes) -> None:
    """Append ``data`` to ``kept``, keeping only its last :data:`STDERR_KEPT` bytes."""
    kept += data
    if len(kept) > STDERR_KEPT:
        del kept[: len(kept) - STDERR_KEPT]


class LocalExecutor:
    """Runs commands on this machine through ``sh -c`` (optionally under ``sudo -n``)."""

    def __init__(self, *, sudo: bool = False, command_timeout: float = DEFAULT_COMMAND_TIMEOUT) -> None:
        self.sudo = sudo
        self.command_timeout = seconds(command_timeout, "local: command_timeout")

    @property
    def description(self) -> str:
        """``local``."""
        return "local" + (" (sudo)" if self.sudo else "")

    @property
    def namespaced(self) -> bool:
        """Never namespaced."""
        return False

    def argv(self, command: str) -> list[str]:
        """The argv that runs ``command``."""
        argv = ["sh", "-c", command]
        return ["sudo", "-n", *argv] if self.sudo else argv

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        """Run ``command``; kill its whole process group when it times out."""
        return self._run_argv(self.argv(command), command, timeout, check)

    def _run_argv(self, argv: list[str], command: str, timeout: float | None, check: bool) -> CommandResult:
        limit = seconds(timeout, f"{self.description}: timeout") if timeout is not None else self.command_timeout
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            raise ExecutorError(f"cannot start {argv[0]}: {exc}") from None
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            held = _kill_and_reap(proc)
            extra = " (a process outside its group still held its output; natbench stopped waiting)" if held else ""
            raise CommandTimeout(
                f"{self.description}: command did not finish within {limit:g} s and was killed{extra}: {command}"
            ) from None
        result = CommandResult(command, proc.returncode, _decode(out), _decode(err), time.monotonic() - start)
        if check and not result.ok:
            raise CommandFailed(result)
        return result

    def run_streaming(
        self, command: str, sink: Callable[[bytes], None], *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command``, handing its standard output to ``sink`` as it arrives (:class:`StreamsOutput`)."""
        return self._stream_argv(self.argv(command), command, sink, timeout)

    def _stream_argv(
        self, argv: list[str], command: str, sink: Callable[[bytes], None], timeout: float | None
    ) -> CommandResult:
        limit = seconds(timeout, f"{self.description}: timeout") if timeout is not None else self.command_timeout
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
        except OSError as exc:
            raise ExecutorError(f"cannot start {argv[0]}: {exc}") from None
        assert proc.stdout is not None and proc.stderr is not None
        err = bytearray()
        done = False
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(proc.stdout, selectors.EVENT_READ, "out")
                sel.register(proc.stderr, selectors.EVENT_READ, "err")
                while sel.get_map():
                    left = start + limit - time.monotonic()
                    if left <= 0:
                        raise CommandTimeout(
                            f"{self.description}: command did not finish within {limit:g} s and was killed: {command}"
                        )
                    for key, _ in sel.select(timeout=min(left, 1.0)):
                        data = os.read(key.fd, STREAM_PIECE)
                        if not data:
                            sel.unregister(key.fileobj)
                        elif key.data == "out":
                            sink(data)
                        else:
                            keep_tail(err, data)
            try:
                code = proc.wait(timeout=max(0.1, start + limit - time.monotonic()))
            except subprocess.TimeoutExpired:
                raise CommandTimeout(
                    f"{self.description}: command did not finish within {limit:g} s and was killed: {command}"
                ) from None
            done = True
        finally:
            if not done:  # the sink refused the output, or the command outlived its time: stop it
                _kill_and_reap(proc)
            for pipe in (proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    pipe.close()
        return CommandResult(command, code, "", _decode(bytes(err)), time.monotonic() - start)

    def host(self) -> LocalExecutor:
        """Itself."""
        return self

    def close(self) -> None:
        """Nothing to release."""


def _kill_and_reap(proc: subprocess.Popen[bytes], grace: float = KILL_GRACE) -> bool:
    """Kill ``proc``'s process group and wait at most ``grace`` seconds for its pipes and its exit.

    Returns True when something outside the group (a child that called ``setsid``) still held the pipes:
    they are then closed on this side, so no wait depends on that child.
    """
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    held = False
    try:
        proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        held = True
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)
    return held


class NetnsExecutor:
    """Runs commands inside a named network namespace: ``ip netns exec NS sh -c CMD``.

    The namespace is entered on the machine of ``inner`` (default: this machine), so
    ``NetnsExecutor("dut", SshExecutor(...))`` drives a namespace on a remote host.
    Commands of ``scope: host`` run through ``inner`` directly.
    """

    def __init__(self, namespace: str, inner: Executor | None = None, *, command_timeout: float | None = None) -> None:
        if not namespace or "/" in namespace or namespace in (".", ".."):
            raise ValueError(f"bad network namespace name {namespace!r}")
        self.namespace = namespace
        self.inner: Executor = inner if inner is not None else LocalExecutor()
        self.command_timeout = command_timeout

    @property
    def description(self) -> str:
        """``netns NAME`` (on the inner executor's machine)."""
        return f"netns {self.namespace} via {self.inner.description}"

    @property
    def namespaced(self) -> bool:
        """Always namespaced."""
        return True

    def wrap(self, command: str) -> str:
        """The command line the inner executor runs."""
        return f"ip netns exec {shlex.quote(self.namespace)} sh -c {shlex.quote(command)}"

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        """Run ``command`` inside the namespace."""
        res = self.inner.run(self.wrap(command), timeout=timeout if timeout is not None else self.command_timeout)
        result = CommandResult(command, res.returncode, res.stdout, res.stderr, res.duration)
        if check and not result.ok:
            raise CommandFailed(result)
        return result

    def run_streaming(
        self, command: str, sink: Callable[[bytes], None], *, timeout: float | None = None
    ) -> CommandResult:
        """Run ``command`` inside the namespace, its standard output to ``sink`` as it arrives (when the inner
        executor can stream; TypeError otherwise: ask :attr:`streams` first)."""
        if not isinstance(self.inner, StreamsOutput):
            raise TypeError(f"{self.inner.description} cannot stream a command's output")
        res = self.inner.run_streaming(
            self.wrap(command), sink, timeout=timeout if timeout is not None else self.command_timeout
        )
        return CommandResult(command, res.returncode, "", res.stderr, res.duration)

    @property
    def streams(self) -> bool:
        """Whether :meth:`run_streaming` works (the inner executor streams)."""
        return isinstance(self.inner, StreamsOutput)

    def host(self) -> Executor:
        """The inner executor (outside the namespace)."""
        return self.inner

    def close(self) -> None:
        """Close the inner executor."""
        self.inner.close()
