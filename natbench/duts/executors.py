"""Where DUT commands run: this machine, a network namespace, or (see :mod:`natbench.duts.ssh`) SSH.

Every executor runs a command line the same way: ``sh -c <command>`` on the
target, so a recipe's shell text (``;``, ``>``, ``$(...)``) means the same thing
locally, inside a namespace and over SSH. A command that outlives its timeout
is asked to stop (SIGTERM to its process group) and reported; nothing blocks forever.

A command that does not end when asked is still running where it was started: a ``conntrack -F`` of millions of
connections works inside one system call, and no signal (SIGKILL neither) takes effect before that call returns; a
second flush started meanwhile waits on the kernel's lock in state D. Such a command is handed back with its
:class:`CommandTimeout` as a :class:`RunningCommand` (its process group, its processes and their states), so that
whoever started it can wait for it (:mod:`natbench.duts.outstanding`) instead of starting the work again beside it.
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
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from natbench.errors import DutError, DutStepFailed
from natbench.plugins import CommandResult, Executor, StreamsOutput

DEFAULT_COMMAND_TIMEOUT = 120.0
"""Seconds a DUT command may take when neither its recipe nor the DUT's access says otherwise (a command whose
time grows with the connection table gets a limit scaled to it: :mod:`natbench.duts.tablework`)."""

KILL_GRACE = 2.0
"""Seconds natbench waits, after asking a timed-out command's process group to stop (SIGTERM), for it to end and
its output pipes to close. A child that left the group (``setsid``) and still holds the pipes is then cut off: the
pipes are closed on natbench's side and the command is reported as timed out. A command whose group is still there
is reported as still running (:class:`RunningCommand`)."""


class ExecutorError(DutError):
    """An executor could not run a command (unreachable, refused, timed out)."""


@dataclass(frozen=True)
class ProcessState:
    """One process of a command that is still running, as the system shows it."""

    pid: int
    """Its process id."""
    state: str
    """Its state letter (``R`` running, ``D`` uninterruptible sleep, ``S`` sleeping, ``T`` stopped, ...)."""
    args: str
    """Its command line (cut to 200 characters)."""

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.args or '?'}, state {self.state})"


@runtime_checkable
class RunningCommand(Protocol):
    """A command that outlived its time limit and did not end when asked to stop: it still runs where it was
    started (this machine, a namespace, an SSH DUT), and whoever started it waits for it before starting more."""

    @property
    def pid(self) -> int | None:
        """The process (group) id natbench knows it by (None: not known)."""
        ...

    def processes(self) -> list[ProcessState]:
        """Its processes still running (empty: it has ended, or they cannot be listed)."""
        ...

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for it to end; True when it has (or cannot be found any more)."""
        ...

    def kill(self) -> None:
        """Send SIGKILL to its process group: it ends at once, or, inside a system call, when the call returns."""
        ...


class CommandTimeout(ExecutorError, DutStepFailed):
    """A command did not finish within its timeout; it was stopped, or, with :attr:`running`, it still runs."""

    def __init__(self, message: str, *, running: RunningCommand | None = None) -> None:
        super().__init__(message)
        self.running = running
        """The command, when asking it to stop did not end it (None: it has ended)."""


class ConnectionLost(ExecutorError):
    """The connection to the DUT dropped while a command ran; the step may be retried."""


class AuthenticationFailed(ExecutorError):
    """The DUT refused the login, or the key could not be used (wrong passphrase); never retried."""


class CommandFailed(DutStepFailed):
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


def command_timeout(executor: Executor) -> float:
    """The time limit ``executor`` gives a command that names none: its ``command_timeout`` (a namespace executor:
    the executor it wraps), else :data:`DEFAULT_COMMAND_TIMEOUT`."""
    own = getattr(executor, "command_timeout", None)
    if isinstance(own, int | float) and not isinstance(own, bool):
        return float(own)
    inner = getattr(executor, "inner", None)
    return command_timeout(inner) if inner is not None and inner is not executor else DEFAULT_COMMAND_TIMEOUT


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
        proc = self._start(argv)
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            raise self._timed_out(proc, limit, command) from None
        result = CommandResult(command, proc.returncode, _decode(out), _decode(err), time.monotonic() - start)
        if check and not result.ok:
            raise CommandFailed(result)
        return result

    @staticmethod
    def _start(argv: list[str]) -> subprocess.Popen[bytes]:
        """``argv`` started in a session (and process group) of its own, its output on pipes."""
        try:
            return subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
            )
        except OSError as exc:
            raise ExecutorError(f"cannot start {argv[0]}: {exc}") from None

    def _timed_out(self, proc: subprocess.Popen[bytes], limit: float, command: str) -> CommandTimeout:
        """Ask a command that outlived ``limit`` to stop (:func:`stop_group`) and say what became of it."""
        ended, held = stop_group(proc)
        if not ended:
            running = LocalRunning(proc)
            now = "; ".join(map(str, running.processes())) or f"process group {proc.pid}"
            return CommandTimeout(
                f"{self.description}: command did not finish within {limit:g} s; asked to stop (SIGTERM), it is "
                f"still running: {now}: {command}",
                running=running,
            )
        extra = " (a process outside its group still held its output; natbench stopped waiting)" if held else ""
        return CommandTimeout(
            f"{self.description}: command did not finish within {limit:g} s and was killed{extra}: {command}"
        )

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
        proc = self._start(argv)
        err = bytearray()
        try:
            code = self._pump(proc, sink, err, start + limit)
        except BaseException:  # the sink refused the output: stop the command at once
            _kill_and_reap(proc)
            raise
        if code is None:
            raise self._timed_out(proc, limit, command)
        return CommandResult(command, code, "", _decode(bytes(err)), time.monotonic() - start)

    @staticmethod
    def _pump(
        proc: subprocess.Popen[bytes], sink: Callable[[bytes], None], err: bytearray, deadline: float
    ) -> int | None:
        """Hand ``proc``'s standard output to ``sink`` and keep the tail of its standard error in ``err`` until it
        ends (its exit status) or ``deadline`` passes (None; its pipes are still open then)."""
        assert proc.stdout is not None and proc.stderr is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ, "out")
            sel.register(proc.stderr, selectors.EVENT_READ, "err")
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                for key, _ in sel.select(timeout=min(left, 1.0)):
                    data = os.read(key.fd, STREAM_PIECE)
                    if not data:
                        sel.unregister(key.fileobj)
                    elif key.data == "out":
                        sink(data)
                    else:
                        keep_tail(err, data)
        try:
            code = proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            return None
        for pipe in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                pipe.close()
        return code

    def host(self) -> LocalExecutor:
        """Itself."""
        return self

    def close(self) -> None:
        """Nothing to release."""


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` still has a member on this machine that is not a zombie (one whose parent died
    waits for init to reap it: it runs no more)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return any(p.state != "Z" for p in group_processes(pgid))


def group_processes(pgid: int, proc_dir: str = "/proc") -> list[ProcessState]:
    """The processes of group ``pgid`` on this machine (read from /proc), by pid."""
    out: list[ProcessState] = []
    for entry in Path(proc_dir).iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            if int(fields[2]) != pgid:
                continue
            args = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError, IndexError):
            continue
        out.append(ProcessState(int(entry.name), fields[0], args[:200]))
    return sorted(out, key=lambda p: p.pid)


class LocalRunning:
    """A command on this machine (or in a namespace of it) that did not end when asked to stop: its process group."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self._proc = proc

    @property
    def pid(self) -> int:
        """Its process group id (the pid natbench started)."""
        return self._proc.pid

    def alive(self) -> bool:
        """Whether the process natbench started, or anything of its group, still runs."""
        return self._proc.poll() is None or group_alive(self._proc.pid)

    def processes(self) -> list[ProcessState]:
        """Its group's processes but zombies (empty once it has ended)."""
        return [p for p in group_processes(self._proc.pid) if p.state != "Z"] if self.alive() else []

    def wait(self, seconds: float) -> bool:
        """Wait at most ``seconds`` for the group to end (polled every 0.1 s)."""
        deadline = time.monotonic() + seconds
        while self.alive():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            time.sleep(min(0.1, left))
        return True

    def kill(self) -> None:
        """SIGKILL to the group."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self._proc.pid, signal.SIGKILL)


def _kill_and_reap(proc: subprocess.Popen[bytes], grace: float = KILL_GRACE) -> None:
    """Kill ``proc``'s process group at once (its output was refused) and wait at most ``grace`` seconds for its pipes
    and its exit; pipes still held then (by a child that called ``setsid``) are closed on this side."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    try:
        proc.communicate(timeout=grace)
    except (subprocess.TimeoutExpired, ValueError):
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=grace)


def stop_group(proc: subprocess.Popen[bytes], grace: float = KILL_GRACE) -> tuple[bool, bool]:
    """Ask ``proc``'s process group to stop (SIGTERM) and wait at most ``grace`` seconds for it to end and its pipes
    to close; the pipes are then closed on this side in any case.

    Returns (ended, held): ``ended`` False when the process or another of its group still runs (it ignores SIGTERM,
    or works inside a system call); ``held`` True when the group has ended but something outside it (a child that
    called ``setsid``) still held the pipes.
    """
    deadline = time.monotonic() + grace
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGTERM)
    held = False
    try:
        proc.communicate(timeout=grace)
    except subprocess.TimeoutExpired:
        held = True
    except ValueError:  # the pipes were closed already
        pass
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    # a member that has closed its pipes may still be exiting (not yet a zombie): it has the rest of the grace
    while (proc.poll() is None or group_alive(proc.pid)) and time.monotonic() < deadline:
        time.sleep(0.01)
    if proc.poll() is None or group_alive(proc.pid):
        return False, False
    return True, held


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
