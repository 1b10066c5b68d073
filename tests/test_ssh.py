"""A real SSH path: the test starts its own sshd on a free localhost port with keys it generates
(tests/localsshd.py: no system SSH configuration is used or changed)."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from localsshd import SSHD, Sshd, free_port, local_sshd
from nslab import global_conntrack_lock, ns_lab, send_udp

from natbench.campaign.schema import DutSpec
from natbench.duts.executors import CommandTimeout, ExecutorError, NetnsExecutor
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.duts.ssh import SshExecutor
from natbench.errors import DutError
from natbench.testbed import build_dut
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(os.geteuid() != 0, reason="the sshd test logs in as root (and the lab part needs root)"),
    pytest.mark.skipif(
        not Path(SSHD).exists() or shutil.which("ssh-keygen") is None, reason="openssh-server is not installed"
    ),
]


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    with local_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


def test_runs_commands_through_sh_with_exit_status_and_both_streams(sshd: Sshd) -> None:
    ex = sshd.executor()
    try:
        res = ex.run("echo out; echo err >&2; exit 3")
        assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "err\n")
        assert ex.run("printf '%s' \"$(id -u)\"").stdout == "0"
        assert "key" not in repr(ex) and "ssh root@127.0.0.1" in ex.description
    finally:
        ex.close()


def test_a_listing_streams_over_ssh_into_its_parser_and_a_refusing_parser_ends_the_command(sshd: Sshd) -> None:
    from natbench.duts.parsers import parse_conntrack_mappings
    from natbench.plugins import ParseError

    line = (
        "udp      17 298 src=198.18.0.2 dst=198.19.0.2 sport=$s dport=80 [UNREPLIED] "
        "src=198.19.0.2 dst=198.19.0.1 sport=80 dport=$s mark=0 use=1"
    )
    ex = sshd.executor()
    try:
        sink = parse_conntrack_mappings.stream()
        res = ex.run_streaming(f'for s in $(seq 1024 31023); do echo "{line}"; done; echo done >&2', sink.feed)
        table = sink.finish()
        assert (res.returncode, res.stdout, res.stderr) == (0, "", "done\n")
        assert len(table) == 30_000 and table[0].public_port == 1024 and table[-1].private_port == 31023
        t0 = time.monotonic()
        with pytest.raises(ParseError, match="unexpected line"):
            ex.run_streaming("yes natbench", parse_conntrack_mappings.stream().feed, timeout=60)
        assert time.monotonic() - t0 < 20
        assert ex.run("echo still here").stdout == "still here\n"  # the connection survived the closed channel
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
            ex.run("sleep 20; echo natbench-timeout-test-$$", timeout=0.5)
        assert time.monotonic() - start < 5
        # the DUT ends the command itself shortly after (it does not linger for 20 s)
        deadline = time.monotonic() + 8
        while "natbench-timeout-test" in ex.run("ps -eo args").stdout:
            assert time.monotonic() < deadline, "the timed-out command still runs on the DUT"
            time.sleep(0.3)
        assert ex.run("echo a").stdout == "a\n"
        # drop the connection under the executor's feet: the next command reconnects
        transport = ex._client.get_transport() if ex._client else None
        assert transport is not None
        transport.close()
        assert ex.run("echo b").stdout == "b\n"
        assert ex.reconnects == 1
    finally:
        ex.close()


def test_remote_monitor_samples_every_100_ms_over_ssh(sshd: Sshd) -> None:
    from natbench.duts.monitor import Monitor

    ex = sshd.executor()
    try:
        with Monitor(ex, interval=0.1, mode="remote", name="ssh") as mon:
            time.sleep(2.0)
        assert not mon.errors
        # The cadence is judged on the DUT's own clock (the samples' uptime stamps), not on how many samples
        # fit into the test's wall time: opening the SSH channel can take a second on a loaded machine.
        t = [s["t"] for s in mon.samples]
        assert len(t) >= 4, (t, mon.errors)
        steps = sorted(b - a for a, b in itertools.pairwise(t))
        median = steps[len(steps) // 2]
        # lower bound: the loop sleeps 0.1 s per sample and /proc/uptime ticks in 10 ms; upper bound: one
        # sample forks 4 short commands, which a loaded 2-core machine has delayed by up to ~0.1 s, so a
        # median step beyond 0.35 s would mean the sampler does not follow the requested interval
        assert 0.09 <= median <= 0.35, steps
        assert all(set(s["idle"]) >= {"cpu0"} for s in mon.samples)
        assert ex.run("ls /tmp").stdout.count("natbench-monitor-") == 0  # the stop file is gone
    finally:
        ex.close()


def drop_connection_after(ex: SshExecutor, seconds: float) -> threading.Thread:
    """Close ``ex``'s SSH transport from another thread after ``seconds`` (a dropped connection)."""

    def drop() -> None:
        time.sleep(seconds)
        assert ex._client is not None
        transport = ex._client.get_transport()
        assert transport is not None
        transport.close()

    t = threading.Thread(target=drop)
    t.start()
    return t


def test_wrong_port_fails_after_bounded_retries(sshd: Sshd) -> None:
    ex = sshd.executor(port=free_port(), retries=2, backoff=0.05, connect_timeout=1.0)
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

    t = drop_connection_after(ex, 0.4)
    try:
        assert dut.facts()["five"] == 5
    finally:
        t.join()
        ex.close()
    assert ex.reconnects >= 1


def test_a_timed_flush_cut_by_a_drop_is_an_error_not_a_second_measurement(sshd: Sshd, tmp_path: Path) -> None:
    recipe = tmp_path / "flush.yaml"
    recipe.write_text("recipe: flush\nstateful: false\nsteps:\n  timed_flush:\n    - run: sleep 1\n      timed: true\n")
    ex = sshd.executor()
    dut = RecipeDut("flush", load_recipe(str(recipe)), ex, retry_backoff=0.1)
    assert 0.9 < dut.timed_flush() < 5

    t = drop_connection_after(ex, 0.4)
    try:
        with pytest.raises(DutError, match="not retried: the step is a measurement") as err:
            dut.timed_flush()
        assert "step timed_flush" in str(err.value)
    finally:
        t.join()
        ex.close()


@pytest.mark.lab
def test_iptables_recipe_configures_a_namespace_over_ssh(sshd: Sshd) -> None:
    """Table size set, rule installed, UDP frames create connections, the DUT-timed flush empties them,
    teardown leaves nothing behind (the namespace's and the host's settings as before)."""
    with ns_lab(configure_dut_addresses=False) as lab, global_conntrack_lock():

        def state() -> str:
            # the namespace's own state; the global nf_conntrack_max / hashsize are checked by GlobalWatch
            return subprocess.run(
                ["ip", "netns", "exec", lab.dut, "sh", "-c",
                 "iptables -t nat -S; nft list ruleset; ip -br -4 addr; cd /proc/sys/net; "
                 "cat ipv4/ip_forward netfilter/nf_conntrack_udp_timeout; conntrack -C"],
                capture_output=True, text=True, check=True,
            ).stdout  # fmt: skip

        before = state()
        host_max = int(Path("/proc/sys/net/netfilter/nf_conntrack_max").read_text())
        host_hashsize = int(Path("/sys/module/nf_conntrack/parameters/hashsize").read_text())
        watch = GlobalWatch(host_max + 4096, host_hashsize + 512)
        duts = [
            DutSpec.model_validate(
                    {
                        "name": "iptables",
                        "recipe": "iptables-nat44",
                        "access": {"kind": "ssh", "host": "127.0.0.1", "port": sshd.port, "user": "root",
                                   "key": str(sshd.key), "known_hosts": str(sshd.known_hosts),
                                   "namespace": lab.dut, "connect_timeout": 5, "command_timeout": 30},
                        "params": {"private_if": lab.dut_private_if, "public_if": lab.dut_public_if,
                                   "private_address": lab.dut_private_address, "public_address": lab.dut_public_address,
                                   "nat": "snat", "conntrack_max": host_max + 4096, "hashsize": host_hashsize + 512,
                                   "host_settings": True,
                                   "udp_timeout": 600},
                    }
            )
        ]  # fmt: skip
        dut = build_dut(duts)
        assert isinstance(dut, RecipeDut)
        assert isinstance(dut.executor, NetnsExecutor) and isinstance(dut.executor.inner, SshExecutor)
        watch.start()
        dut.setup(WorkingPoint(0, PortRange(40000, 40007), PortRange(1000, 1002), 64))
        try:
            facts = dut.facts()
            # set (globally, through the host scope), unless another test run on this machine changed it since
            assert facts["conntrack_max"] == host_max + 4096 or watch.foreign_max()
            assert facts["hashsize"] == host_hashsize + 512 or watch.foreign_hashsize()
            assert watch.saw_ours()  # the recipe's values reached the kernel
            assert facts["udp_timeout"] == 600
            assert any("-j SNAT --to-source 198.19.0.1" in r for r in facts["nat_rules"])
            assert dut.count_connections() == 0
            n = send_udp(lab, (40000, 40007), (1000, 1002))
            time.sleep(0.2)
            count = dut.count_connections()
            # a smaller table set meanwhile by another test run (global nf_conntrack_max) drops new connections
            assert count == n == 24 or (0 < count < n and watch.foreign_max()), (count, watch.seen[0])
            assert len(dut.mappings()) == count
            flush = dut.timed_flush()
            assert 0 < flush < 5
            assert dut.count_connections() == 0
        finally:
            dut.teardown()
            dut.executor.close()
        watch.stop()
        assert state() == before
        # teardown restores the host's values - or, when another test run changed them meanwhile (seen by the
        # watcher), leaves that run's values alone; never does it leave natbench's own values behind
        final_max = int(Path("/proc/sys/net/netfilter/nf_conntrack_max").read_text())
        final_hashsize = int(Path("/sys/module/nf_conntrack/parameters/hashsize").read_text())
        assert final_max == host_max or (watch.foreign_max() and final_max != host_max + 4096)
        assert final_hashsize == host_hashsize or (watch.foreign_hashsize() and final_hashsize != host_hashsize + 512)


class GlobalWatch:
    """Polls the kernel-global nf_conntrack_max and hashsize every 2 ms while a test changes them, so the test
    can tell its own changes from those of other test runs sharing this kernel (they need not use our lock)."""

    MAX = Path("/proc/sys/net/netfilter/nf_conntrack_max")
    HASH = Path("/sys/module/nf_conntrack/parameters/hashsize")

    def __init__(self, our_max: int, our_hashsize: int) -> None:
        self.ours = (our_max, our_hashsize)
        self.start_values = (int(self.MAX.read_text()), int(self.HASH.read_text()))
        self.seen: tuple[set[int], set[int]] = ({self.start_values[0]}, {self.start_values[1]})
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.002):
            self.seen[0].add(int(self.MAX.read_text()))
            self.seen[1].add(int(self.HASH.read_text()))

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self.seen[0].add(int(self.MAX.read_text()))
        self.seen[1].add(int(self.HASH.read_text()))

    def saw_ours(self) -> bool:
        """Both of the recipe's values were in the kernel at some moment."""
        return self.ours[0] in self.seen[0] and self.ours[1] in self.seen[1]

    def foreign_max(self) -> bool:
        """nf_conntrack_max took a value that is neither the host's nor ours (someone else set it)."""
        return bool(self.seen[0] - {self.start_values[0], self.ours[0]})

    def foreign_hashsize(self) -> bool:
        """The hash size took a value that is neither the host's nor ours."""
        return bool(self.seen[1] - {self.start_values[1], self.ours[1]})
