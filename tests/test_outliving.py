"""A command that outlives its time limit is not started twice (natbench.duts.outstanding, the executors'
RunningCommand): with the real executors (this machine, a network namespace, the test's own sshd) and a command
that ignores SIGTERM, the DUT's next step waits for it, and with a real kernel-bound ``conntrack -F`` (lab), which no
signal ends before the kernel has deleted the table, the next step does not start and names it."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from localsshd import SSHD, Sshd, local_sshd

from natbench.duts.executors import KILL_GRACE, CommandTimeout, LocalExecutor, NetnsExecutor
from natbench.duts.outstanding import CommandStillRunning
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import parse_recipe
from natbench.errors import DutStepFailed
from natbench.plugins import Executor
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1, 10), PortRange(1, 10), 64)
"""A working point of 100 connections."""
ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(not ROOT, reason="a network namespace (and the sshd's root login) needs root")
needs_sshd = pytest.mark.skipif(
    not Path(SSHD).exists() or shutil.which("ssh-keygen") is None, reason="openssh-server is not installed"
)


def slow_reset_recipe(log: Path, seconds: int = 7) -> str:
    """A recipe whose reset ignores SIGTERM and, while the file ``slow`` beside ``log`` exists, takes ``seconds`` (and
    removes it): the first reset outlives a 3 s limit, the next one is quick. Every reset writes ``start`` and
    ``end`` (perl: a program recipes may run, with code written in the recipe)."""
    d = log.parent
    code = (
        "$SIG{TERM} = q(IGNORE); "
        f"open(my $f, q(>>), q({log})); print $f qq(start\\n); close $f; "
        f"if (-e q({d}/slow)) {{ unlink q({d}/slow); sleep {seconds} }} "
        f"open($f, q(>>), q({log})); print $f qq(end\\n); close $f"
    )
    return f"""
recipe: slow-reset
steps:
  setup: ["true"]
  teardown:
    - echo teardown >> {log}
  reset_connections:
    - run: perl -e '{code}'
      cost: delete
"""


def lines(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def outlive_then_wait(executor: Executor, tmp: Path, seconds: int, stop_check: float) -> None:
    """The reset outlives its limit (the floor, 3 s: no rate measured yet) and still runs when natbench has stopped
    looking at it, ``stop_check`` seconds after the limit; the next reset waits for it, as long again as its limit,
    and runs when it has ended on its own, ``seconds`` after it started (between the two)."""
    log = tmp / "log"
    (tmp / "slow").touch()
    text = slow_reset_recipe(log, seconds)
    dut = RecipeDut("d", parse_recipe(text, "slow-reset.yaml"), executor)
    dut.setup(POINT)
    start = time.monotonic()
    with pytest.raises(DutStepFailed) as failed:
        dut.reset_connections()
    message = str(failed.value)
    assert "its limit 3 s for deleting 100 connections: the floor (no delete rate measured on this DUT yet)" in message
    assert "asked to stop (SIGTERM), it is still running: pid " in message and "perl -e" in message
    assert "no step of this DUT starts before it has ended" in message
    assert lines(log) == ["start"]  # still running: not ended, not started again
    assert len(dut.outstanding.commands) == 1
    dut.reset_connections()  # waits for the first (ends ``seconds`` after it started), then runs
    took = time.monotonic() - start
    assert lines(log) == ["start", "end", "start", "end"]  # never two at once
    assert seconds <= took < 3.0 + stop_check + 3.0 + 2.0, took  # ended on its own, before the wait's SIGKILL
    assert not dut.outstanding.commands
    dut.teardown()


@pytest.fixture
def here(tmp_path: Path) -> Path:
    return tmp_path


def test_a_command_ignoring_sigterm_is_handed_back_still_running_and_can_be_waited_for() -> None:
    with pytest.raises(CommandTimeout) as timed_out:
        LocalExecutor().run("trap '' TERM; sleep 30", timeout=0.5)
    running = timed_out.value.running
    assert running is not None and running.pid is not None
    procs = running.processes()
    assert any("sleep 30" in p.args and p.state in "SR" for p in procs), procs
    assert not running.wait(0.2)  # it ignores SIGTERM: still there
    running.kill()
    assert running.wait(5.0) and running.processes() == []


def test_a_command_that_ends_when_asked_is_no_running_command() -> None:
    start = time.monotonic()
    with pytest.raises(CommandTimeout, match="was killed") as timed_out:
        LocalExecutor().run("sleep 30", timeout=0.5)
    assert timed_out.value.running is None and time.monotonic() - start < 3


def test_a_reset_that_outlives_its_limit_is_not_started_again_before_it_has_ended(here: Path) -> None:
    outlive_then_wait(LocalExecutor(command_timeout=3.0), here, 6, KILL_GRACE)


@needs_root
def test_in_a_namespace_too(here: Path) -> None:
    ns = f"nb-out-{os.getpid() % 100000}{secrets.token_hex(2)}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    try:
        outlive_then_wait(NetnsExecutor(ns, LocalExecutor(command_timeout=3.0)), here, 6, KILL_GRACE)
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=True, timeout=30)


def test_the_wait_ends_in_sigkill_and_the_teardown_waits_too(here: Path) -> None:
    log = here / "log"
    text = slow_reset_recipe(log, seconds=60)
    dut = RecipeDut("d", parse_recipe(text, "slow-reset.yaml"), LocalExecutor(command_timeout=1.0))
    dut.setup(POINT)
    (here / "slow").touch()
    start = time.monotonic()
    with pytest.raises(DutStepFailed, match="still running"):
        dut.reset_connections()
    dut.teardown()  # not beside it: waits as long again as its limit, kills it, then tears down
    took = time.monotonic() - start
    assert lines(log) == ["start", "teardown"]  # the reset was killed (no end), never run twice
    assert took < 1.0 + 2.0 + 1.0 + 2.0 + 3.0, took  # limit, stop grace, as long again, kill grace, slack
    assert not dut.outstanding.commands


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with local_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.mark.ssh
@needs_root
@needs_sshd
def test_over_ssh_the_command_is_named_by_its_pid_on_the_dut_and_waited_for(sshd: Sshd, here: Path) -> None:
    ex = sshd.executor(command_timeout=3.0)
    try:
        with pytest.raises(CommandTimeout) as timed_out:
            ex.run("trap '' TERM; sleep 30", timeout=1.0)
        running = timed_out.value.running
        assert running is not None and running.pid is not None, str(timed_out.value)
        assert any("sleep 30" in p.args for p in running.processes())
        running.kill()
        assert running.wait(5.0)
        with pytest.raises(CommandTimeout) as stopped:  # ends when asked: nothing left running
            ex.run("sleep 30", timeout=1.0)
        assert stopped.value.running is None
        assert ex.run("echo a").stderr == ""  # the pid line is natbench's, never the command's output
        # the DUT's `timeout` sends SIGTERM 1 s after the limit; natbench looks 2 s more (+1 s, in whole seconds)
        outlive_then_wait(ex, here, 9, 1.0 + KILL_GRACE + 1.5)
    finally:
        ex.close()


CT_RECIPE = """
recipe: kernel-flush
steps:
  setup: ["true"]
  teardown: ["true"]
  count_connections:
    - {run: conntrack -C, parse: conntrack_count}
  reset_connections:
    - {run: conntrack -F, cost: delete}
"""


@pytest.mark.lab
@needs_root
@pytest.mark.skipif(shutil.which("conntrack") is None, reason="conntrack (conntrack-tools) is not installed")
def test_a_kernel_bound_flush_is_named_and_no_second_flush_starts_beside_it(tmp_path: Path) -> None:
    """6M connections (about 8 s to delete here): a flush outlives a 0.2 s floor, SIGTERM and SIGKILL alike (it is
    inside its system call)."""

    ns = f"nb-ct-{os.getpid() % 100000}{secrets.token_hex(2)}"
    n = 6_000_000
    with big_conntrack(n):
        try:
            subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
            fill_local_conntrack(ns, n)
            dut = RecipeDut("d", parse_recipe(CT_RECIPE, "kernel-flush.yaml"), NetnsExecutor(ns, LocalExecutor()))
            dut.time_limits = type(dut.time_limits)(table=dut.table, floor=0.2)
            assert dut.count_connections() >= n
            with pytest.raises(DutStepFailed, match=r"its limit 0\.2 s for deleting 6,0\d\d,\d\d\d connections"):
                dut.reset_connections()
            with pytest.raises(CommandStillRunning) as still:
                dut.reset_connections()  # waits 0.2 s, SIGKILL, 2 s: the kernel is still deleting
            message = str(still.value)
            assert "not started: 'conntrack -F' of step reset_connections" in message and "state " in message
            assert count_flushes(ns) == 1  # the first only: the second was never started
            running = dut.outstanding.commands[0].running
            assert running.wait(300.0)  # it ends when the kernel has deleted them all
            dut.reset_connections()  # then the step runs again (quickly: the table is empty)
            assert dut.count_connections() == 0
        finally:
            subprocess.run(["ip", "netns", "del", ns], check=False, timeout=30)


@contextlib.contextmanager
def big_conntrack(n: int) -> Iterator[None]:
    """The kernel's connection tracking sized for ``n`` more entries while the block runs: nf_conntrack_max and the
    hash size (a hash chain longer than the kernel allows drops the packet, as a full table does), both global,
    restored afterwards; serialised with the other tests that change them."""
    from nslab import global_conntrack_lock

    ct_max = Path("/proc/sys/net/netfilter/nf_conntrack_max")
    hashsize = Path("/sys/module/nf_conntrack/parameters/hashsize")
    with global_conntrack_lock():
        old_max, old_hash = ct_max.read_text().strip(), hashsize.read_text().strip()
        try:
            ct_max.write_text(str(max(int(old_max), 2 * n)))
            hashsize.write_text(str(max(int(old_hash), n)))
            yield
        finally:
            hashsize.write_text(old_hash)
            ct_max.write_text(old_max)


def fill_local_conntrack(ns: str, n: int) -> None:
    """``n`` UDP conntrack entries in namespace ``ns``: datagrams to closed ports of 127/8, dropped on input."""
    script = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
        "n=int(sys.argv[1])\n"
        "for i in range(n):\n"
        "    a=1+i//60000\n"
        "    s.sendto(b'x',('127.%d.%d.1'%((a>>8)&255,a&255),1+i%60000))\n"
    )
    for cmd in (
        ["ip", "-n", ns, "link", "set", "lo", "up"],
        ["ip", "netns", "exec", ns, "sysctl", "-q", "-w", "net.netfilter.nf_conntrack_udp_timeout=3600"],
        ["ip", "netns", "exec", ns, "iptables", "-A", "OUTPUT", "-m", "conntrack", "--ctstate", "NEW", "-j", "ACCEPT"],
        ["ip", "netns", "exec", ns, "iptables", "-A", "INPUT", "-p", "udp", "-j", "DROP"],
        ["ip", "netns", "exec", ns, "python3", "-c", script, str(n)],
    ):
        subprocess.run(cmd, check=True, capture_output=True, timeout=600)


def count_flushes(ns: str) -> int:
    """The ``conntrack -F`` processes running in namespace ``ns``."""
    pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, check=False).stdout.split()
    out = 0
    for pid in pids:
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"conntrack", b"-F"]:
                out += 1
        except OSError:
            continue
    return out
