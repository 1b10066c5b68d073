"""Local executor, the DUT-side timing wrapper, and RecipeDut step semantics on this machine."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from natbench.campaign.schema import DutSpec
from natbench.duts.cores import LinuxCores
from natbench.duts.executors import CommandFailed, CommandTimeout, LocalExecutor, NetnsExecutor
from natbench.duts.group import DutGroup
from natbench.duts.monitor import idle_percent
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import parse_recipe
from natbench.duts.steps import timed_wrapper
from natbench.errors import ConfigError, DutError
from natbench.plugins import ACCESS
from natbench.testbed import build_dut
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

POINT = WorkingPoint(0, PortRange(1, 10), PortRange(1, 10), 64)


def test_local_executor_runs_through_sh() -> None:
    ex = LocalExecutor()
    res = ex.run("echo out; echo err >&2; exit 3")
    assert (res.returncode, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert not res.ok and res.duration >= 0
    with pytest.raises(CommandFailed, match="exit status 3: echo out; echo err >&2; exit 3 -- err"):
        ex.run("echo out; echo err >&2; exit 3", check=True)


def test_local_executor_kills_the_whole_group_on_timeout() -> None:
    start = time.monotonic()
    with pytest.raises(CommandTimeout, match=r"did not finish within 0\.5 s"):
        LocalExecutor().run("sleep 30 & sleep 30; wait", timeout=0.5)
    assert time.monotonic() - start < 5


def _setsid_child_holding_stdout(pidfile: Path) -> str:
    """A command that starts a child in a session of its own (out of reach of the group kill) that keeps
    stdout and stderr open for 20 s, then waits 30 s itself."""
    return f"setsid sh -c 'echo $$ > {pidfile}; exec sleep 20' & sleep 30"


def _kill_pid_in(pidfile: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pidfile.read_text()), signal.SIGKILL)


def test_a_timed_out_command_whose_detached_child_holds_stdout_ends_within_the_kill_grace(tmp_path: Path) -> None:
    from natbench.duts.executors import KILL_GRACE

    pidfile = tmp_path / "child.pid"
    start = time.monotonic()
    try:
        with pytest.raises(CommandTimeout, match=r"within 1 s and was killed \(a process outside its group"):
            LocalExecutor().run(_setsid_child_holding_stdout(pidfile), timeout=1.0)
        took = time.monotonic() - start
    finally:
        _kill_pid_in(pidfile)
    # 1 s limit + KILL_GRACE (2 s) for the pipes + up to KILL_GRACE for the reap (the killed sh exits at once)
    # + 1.5 s slack for a loaded machine; unbounded, the wait lasts until the child's sleep 20 ends (> 20 s)
    assert took <= 1.0 + KILL_GRACE + 1.5, took


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a network namespace needs root")
def test_the_netns_executor_bounds_the_wait_after_a_timeout_kill_too(tmp_path: Path) -> None:
    from natbench.duts.executors import KILL_GRACE

    ns = f"nb-relx-{os.getpid() % 100000}{secrets.token_hex(2)}"
    subprocess.run(["ip", "netns", "add", ns], check=True, timeout=30)
    pidfile = tmp_path / "child.pid"
    try:
        ex = NetnsExecutor(ns)
        assert ex.run("ip -o link show | wc -l").stdout.strip() == "1"  # only the namespace's own lo
        start = time.monotonic()
        with pytest.raises(CommandTimeout):
            ex.run(_setsid_child_holding_stdout(pidfile), timeout=1.0)
        took = time.monotonic() - start
        # the same bound as on this machine: 1 s limit + KILL_GRACE + 1.5 s slack (unbounded: > 20 s)
        assert took <= 1.0 + KILL_GRACE + 1.5, took
    finally:
        _kill_pid_in(pidfile)
        subprocess.run(["ip", "netns", "del", ns], check=True, timeout=30)


def test_netns_executor_wraps_the_command() -> None:
    ex = NetnsExecutor("nb-x", LocalExecutor())
    assert ex.wrap("echo a; echo 'b'") == "ip netns exec nb-x sh -c 'echo a; echo '\"'\"'b'\"'\"''"
    assert ex.namespaced and ex.host() is ex.inner
    with pytest.raises(ValueError):
        NetnsExecutor("../etc")


def test_timed_wrapper_measures_on_the_target_and_keeps_the_exit_status() -> None:
    ex = LocalExecutor()
    res = ex.run(timed_wrapper("sleep 0.2; echo done", "date +%s.%N"))
    lines = res.stdout.strip().splitlines()
    assert lines[0] == "done"
    _, t0, t1, rc = lines[-1].split()
    assert rc == "0" and 0.15 < float(t1) - float(t0) < 2.0
    assert ex.run(timed_wrapper("false", "date +%s.%N")).returncode == 1


# -- RecipeDut on a scratch directory (no root needed) ---------------------------------------

RECIPE = """\
recipe: scratch
stateful: true
params:
  dir: {type: str, required: true}
  fail_at_setup: {type: bool, default: false}
  count: {type: int, default: 7}
steps:
  setup:
    - run: cat {{ dir }}/orig
      save: orig
    - echo setup {{ dut }} >> {{ dir }}/log
    - run: "false"
      when: fail_at_setup
      error: the hint
    - echo never >> {{ dir }}/log
  teardown:
    - echo teardown {{ dut }} {{ orig }} >> {{ dir }}/log
    - run: exit 4
      ignore_errors: true
  reset_connections:
    - echo reset >> {{ dir }}/log
  count_connections:
    - run: echo {{ count }}
      parse: conntrack_count
  timed_flush:
    - echo before >> {{ dir }}/log
    - run: sleep 0.1
      timed: true
    - run: sleep 0.05
      timed: true
  show_mappings:
    - run: cat {{ dir }}/ct
      parse: conntrack_mappings
  facts:
    - run: "printf 'a=1\\\\nb: two\\\\n'"
      parse: key_value
    - run: echo 12
      parse: int
      as: twelve
    - run: echo not-a-number
      parse: int
      as: broken
"""


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    (tmp_path / "orig").write_text("v0\n")
    (tmp_path / "log").write_text("")
    return tmp_path


def make(scratch: Path, name: str = "d1", batch: bool = True, **params: object) -> RecipeDut:
    recipe = parse_recipe(RECIPE, "scratch.yaml")
    return RecipeDut(name, recipe, LocalExecutor(), {"dir": str(scratch), **params}, batch=batch)


@pytest.mark.parametrize("batch", [True, False], ids=["one-script-per-step", "one-call-per-command"])
def test_recipe_dut_runs_steps_in_order_and_saves_values(scratch: Path, batch: bool) -> None:
    dut = make(scratch, batch=batch)
    dut.setup(POINT)
    assert dut.count_connections() == 7
    dut.reset_connections()
    flush = dut.timed_flush()
    assert 0.12 < flush < 2.0  # the two timed commands only, measured by the DUT's clock
    facts = dut.facts()
    assert facts["a"] == 1 and facts["b"] == "two" and facts["twelve"] == 12 and "broken" not in facts
    assert facts["recipe"] == "scratch" and facts["access"] == "local"
    assert any("parser int" in w for w in facts["warnings"])
    dut.teardown()
    assert (scratch / "log").read_text().splitlines() == [
        "setup d1",
        "never",
        "reset",
        "before",
        "teardown d1 v0",
    ]
    assert any("ignored exit status 4" in w for w in dut.warnings)


@pytest.mark.parametrize("batch", [True, False], ids=["one-script-per-step", "one-call-per-command"])
def test_failing_setup_stops_at_the_first_failing_command_and_tears_down(scratch: Path, batch: bool) -> None:
    dut = make(scratch, batch=batch, fail_at_setup=True)
    with pytest.raises(DutError) as err:
        dut.setup(POINT)
    msg = str(err.value)
    assert "DUT d1: step setup: command failed with exit status 1: false" in msg and "(the hint)" in msg
    assert (scratch / "log").read_text().splitlines() == ["setup d1", "teardown d1 v0"]


def test_unparseable_output_names_the_step(scratch: Path) -> None:
    dut = make(scratch)
    (scratch / "ct").write_text("Operation not permitted\n")
    dut.setup(POINT)
    with pytest.raises(DutError, match="DUT d1: step show_mappings: parser conntrack_mappings: unexpected line"):
        dut.mappings()
    dut.teardown()


def test_bad_static_params_fail_when_the_dut_is_built(scratch: Path) -> None:
    with pytest.raises(ConfigError, match=r"duts\.d1\.params\.count"):
        make(scratch, count="many")


def test_dut_group_sets_up_in_order_and_tears_down_in_reverse(scratch: Path) -> None:
    group = DutGroup([make(scratch, "ce"), make(scratch, "br")], stateful=["br"])
    group.setup(POINT)
    assert group.count_connections() == 7  # only the stateful member counts
    assert set(group.facts()) == {"ce", "br"}
    group.teardown()
    assert (scratch / "log").read_text().splitlines() == [
        "setup ce", "never", "setup br", "never", "teardown br v0", "teardown ce v0",
    ]  # fmt: skip


def test_dut_group_undoes_a_partial_setup(scratch: Path) -> None:
    group = DutGroup([make(scratch, "ce"), make(scratch, "br", fail_at_setup=True)])
    with pytest.raises(DutError, match="DUT br"):
        group.setup(POINT)
    assert (scratch / "log").read_text().splitlines() == [
        "setup ce",
        "never",
        "setup br",
        "teardown br v0",
        "teardown ce v0",
    ]


def test_cores_requested_from_a_recipe_without_set_cores_is_an_error(scratch: Path) -> None:
    dut = make(scratch)
    with pytest.raises(DutError, match="no set_cores step"):
        dut.setup(WorkingPoint(0, PortRange(1, 1), PortRange(1, 1), 64, cores=2))
    assert (scratch / "log").read_text() == ""  # setup never ran; teardown skipped what it cannot render
    assert any("not run" in w and "orig" in w for w in dut.warnings)


# -- CPU hotplug against a scratch sysfs tree (the real one is shared with other engineers) -------


def fake_sysfs(root: Path, n: int) -> None:
    cpu = root / "devices/system/cpu"
    cpu.mkdir(parents=True)
    (cpu / "present").write_text(f"0-{n - 1}\n")
    (cpu / "online").write_text(f"0-{n - 1}\n")
    for i in range(n):
        (cpu / f"cpu{i}").mkdir()
        if i:
            (cpu / f"cpu{i}" / "online").write_text("1\n")


def test_hotplug_takes_cpus_offline_and_restores_them(tmp_path: Path) -> None:
    fake_sysfs(tmp_path, 4)
    cores = LinuxCores(LocalExecutor(), method="hotplug", sysfs=str(tmp_path))
    assert cores.hotplug_possible()
    # the fake kernel does not update 'online' by itself: emulate it after each write
    cpu = tmp_path / "devices/system/cpu"
    orig_write = cores._write

    def write(path: str, value: str) -> None:
        orig_write(path, value)
        online = [0] + [i for i in range(1, 4) if (cpu / f"cpu{i}" / "online").read_text().strip() == "1"]
        (cpu / "online").write_text(",".join(map(str, online)) + "\n")

    cores._write = write  # type: ignore[method-assign]
    st = cores.apply(2)
    assert st.method == "hotplug" and st.active_cpus == [0, 1]
    assert [(cpu / f"cpu{i}" / "online").read_text().strip() for i in (1, 2, 3)] == ["1", "0", "0"]
    cores.restore()
    assert [(cpu / f"cpu{i}" / "online").read_text().strip() for i in (1, 2, 3)] == ["1", "1", "1"]
    with pytest.raises(DutError, match="has 4 CPUs"):
        cores.apply(5)


def test_rps_takes_cpus_in_the_given_order(tmp_path: Path) -> None:
    """The lab's order (DUT CPUs first, the tester's last): n cores land on the DUT's CPUs while it has n."""
    fake_sysfs(tmp_path, 4)
    queue = tmp_path / "class/net/nb-priv/queues/rx-0"
    queue.mkdir(parents=True)
    (queue / "rps_cpus").write_text("0\n")
    cores = LinuxCores(
        LocalExecutor(), method="rps", interfaces=["nb-priv"], sysfs=str(tmp_path), cpu_order=[1, 2, 0, 3]
    )
    assert cores.apply(2).active_cpus == [1, 2]
    assert int((queue / "rps_cpus").read_text(), 16) == 0b0110
    assert cores.apply(3).active_cpus == [0, 1, 2]  # beyond the DUT's own: the next in the order
    cores.restore()
    assert (queue / "rps_cpus").read_text().strip() == "0"
    plain = LinuxCores(LocalExecutor(), method="rps", interfaces=["nb-priv"], sysfs=str(tmp_path))
    assert plain.apply(2).active_cpus == [0, 1]  # no order: CPUs 0..n-1, as on a real DUT
    plain.restore()


def test_auto_method_never_hotplugs_a_namespaced_dut() -> None:
    assert LinuxCores(NetnsExecutor("nb-any"), interfaces=["x"]).choose_method() == "rps"


# -- monitor arithmetic ---------------------------------------------------------------------------


def test_idle_percent_per_core() -> None:
    before = {"cpu": {"idle": 0}, "cpu0": {"user": 100, "idle": 100}, "cpu1": {"user": 0, "idle": 200}}
    after = {"cpu": {"idle": 0}, "cpu0": {"user": 190, "idle": 110}, "cpu1": {"user": 0, "idle": 300, "iowait": 0}}
    assert idle_percent(before, after) == {"cpu0": 10.0, "cpu1": 100.0}


# -- factory ----------------------------------------------------------------------------------------


def _specs(*duts: dict) -> list[DutSpec]:
    return [DutSpec.model_validate(d) for d in duts]


def test_factory_builds_one_dut_or_a_group(scratch: Path) -> None:
    recipe = scratch / "scratch.yaml"
    recipe.write_text(RECIPE)
    one = _specs({"name": "a", "recipe": str(recipe), "access": {"kind": "local"}, "params": {"dir": str(scratch)}})
    dut = build_dut(one)
    assert isinstance(dut, RecipeDut) and dut.name == "a"
    two = _specs(
        {"name": "ce", "recipe": str(recipe), "access": {"kind": "local"}, "params": {"dir": str(scratch)}},
        {"name": "br", "recipe": str(recipe), "access": {"kind": "netns", "namespace": "nb-br"},
         "params": {"dir": "x"}},
    )  # fmt: skip
    group = build_dut(two)
    assert isinstance(group, DutGroup) and [d.name for d in group.members()] == ["ce", "br"]
    assert group.members()[1].executor.description.startswith("netns nb-br")
    with pytest.raises(ConfigError, match="unknown access kind"):
        ACCESS.get("telnet")
    with pytest.raises(ValidationError, match="namespace"):  # the typed access model refuses it before any factory
        _specs({"name": "x", "recipe": str(recipe), "access": {"kind": "netns"}})


def test_lab_access_applies_global_conntrack_settings_on_the_host_by_default() -> None:
    lab = {"name": "ipt", "recipe": "iptables-nat44", "access": {"kind": "lab", "namespace": "nb-lab-x"},
           "params": {"private_if": "a", "public_if": "b"}}  # fmt: skip
    dut = build_dut(_specs(lab))
    assert isinstance(dut, RecipeDut) and dut.base_params["host_settings"] is True
    assert isinstance(dut.executor, NetnsExecutor) and dut.executor.namespace == "nb-lab-x"
    explicit = {**lab, "params": {"private_if": "a", "public_if": "b", "host_settings": False}}
    dut = build_dut(_specs(explicit))
    assert isinstance(dut, RecipeDut) and dut.base_params["host_settings"] is False


def test_ssh_connect_never_blocks_on_a_silent_server() -> None:
    """A TCP peer that accepts but never speaks SSH: the connect timeout ends the wait."""
    import contextlib
    import socket
    import threading

    from natbench.duts.executors import ExecutorError
    from natbench.duts.ssh import SshExecutor

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    port = srv.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                held.append(srv.accept()[0])

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        ex = SshExecutor("127.0.0.1", port=port, connect_timeout=0.5, retries=1, backoff=0.05,
                         allow_unknown_host_key=True, passphrase="s3cret-passphrase")  # fmt: skip
        assert "s3cret" not in repr(ex) and "s3cret" not in ex.description
        start = time.monotonic()
        with pytest.raises(ExecutorError) as err:
            ex.run("true")
        assert time.monotonic() - start < 6
        assert "s3cret" not in str(err.value)
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


def test_ssh_key_exchange_that_stalls_after_the_banner_is_bounded_by_the_connect_timeout() -> None:
    """A peer that sends an SSH banner and then nothing: the key exchange waits connect_timeout, not paramiko's
    fixed 15 s."""
    import socket
    import threading

    from natbench.duts.executors import ConnectionLost
    from natbench.duts.ssh import SshExecutor

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(5)
    port = srv.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                conn = srv.accept()[0]
                conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
                held.append(conn)

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        ex = SshExecutor("127.0.0.1", port=port, connect_timeout=1.0, retries=1, backoff=0.05,
                         allow_unknown_host_key=True)  # fmt: skip
        start = time.monotonic()
        with pytest.raises(ConnectionLost, match="gave up after 2 attempts"):
            ex.run("true")
        took = time.monotonic() - start
        # 2 attempts x 1 s key exchange + 0.05 s backoff + 2 s slack; with paramiko's 15 s it is >= 30 s
        assert took < 2 * 1.0 + 0.05 + 2.0, took
        assert len(held) == 2  # both attempts got as far as the banner
    finally:
        stop.set()
        t.join()
        for c in held:
            c.close()
        srv.close()


def test_ssh_command_wrapping_with_sudo() -> None:
    from natbench.duts.ssh import SshExecutor

    assert SshExecutor("h").wrap("echo 'a'; id") == "sh -c 'echo '\"'\"'a'\"'\"'; id'"
    assert SshExecutor("h", sudo=True).wrap("id") == "sudo -n sh -c id"


def test_a_value_saved_and_used_in_the_same_step_works_in_batch_mode(tmp_path: Path) -> None:
    # the saved value is assigned first: a placeholder inside $(( )) is refused (bash evaluates a[$(cmd)] there)
    text = (
        "recipe: s\nstateful: false\nsteps:\n  facts:\n"
        "    - {run: echo 41, save: base}\n"
        "    - {run: 'v={{ base }}; echo $((v + 1))', parse: int, as: answer}\n"
        "    - {run: echo 'a b', parse: text, as: words}\n"
    )
    dut = RecipeDut("s", parse_recipe(text, "s.yaml"), LocalExecutor(), batch=True)
    facts = dut.facts()
    assert facts["answer"] == 42 and facts["words"] == "a b"


def test_factory_builds_from_real_campaign_files() -> None:
    from natbench.campaign import load_campaign
    from natbench.duts.ssh import SshExecutor

    root = Path(__file__).resolve().parents[1] / "campaigns"
    dut = build_dut(load_campaign(root / "seed000-fig2-iptables-cores.yaml").testbed.duts)
    assert isinstance(dut, RecipeDut) and dut.recipe.name == "iptables-nat44"
    assert isinstance(dut.executor, SshExecutor) and dut.executor.allow_unknown_host_key is False
    assert dut.base_params["conntrack_max"] == 2**23
    group = build_dut(load_campaign(root / "seed004-table2-ipv4-forwarding.yaml").testbed.duts)
    assert isinstance(group, DutGroup) and len(group.members()) == 2
    assert all(d.recipe.name == "linux-forwarding" for d in group.members()) and group.stateful == []


@pytest.mark.parametrize("bad", [float("inf"), float("nan"), 0.0, -1.0, 2e6])
def test_timeouts_that_are_not_a_sane_number_of_seconds_are_one_clear_error(bad: float) -> None:
    """An infinite, NaN, zero, negative or absurd (beyond MAX_WAIT = 1e6 s) wait is refused before anything runs
    or connects: without the check, inf reaches the OS timers (OverflowError) or means waiting forever."""
    from natbench.duts.executors import ExecutorError
    from natbench.duts.ssh import SshExecutor

    with pytest.raises(ExecutorError, match=r"local: command_timeout must be a number of seconds above 0"):
        LocalExecutor(command_timeout=bad)
    with pytest.raises(ExecutorError, match=r"local: timeout must be a number of seconds above 0"):
        LocalExecutor().run("true", timeout=bad)
    with pytest.raises(ExecutorError, match=r"ssh h:22: connect_timeout must be"):
        SshExecutor("h", connect_timeout=bad)
    with pytest.raises(ExecutorError, match=r"ssh h:22: keepalive_interval must be"):
        SshExecutor("h", keepalive_interval=bad)
    # a per-command timeout is checked before any connection is attempted (host "h" does not resolve)
    with pytest.raises(ExecutorError, match=r"ssh h:22: timeout must be"):
        SshExecutor("h").run("true", timeout=bad)
