"""The local lab: up/down idempotence, crash cleanup, topology facts (marker ``lab``, needs root)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from natbench.errors import ConfigError, NatbenchError
from natbench.testbed.lab import (
    LabError,
    NetnsLab,
    find_labs,
    list_labs,
    recorded_lab,
    remove_stale_labs,
    stale_labs,
)
from natbench.testbed.lab.host import owner_alive, proc_start

ROOT = os.geteuid() == 0
QUICKSTART = Path(__file__).resolve().parent.parent / "campaigns" / "quickstart.yaml"
pytestmark = pytest.mark.lab
needs_root = pytest.mark.skipif(not ROOT, reason="needs root: creates network namespaces, veth pairs, nftables rules")


def _netns() -> set[str]:
    out = subprocess.run(["ip", "-j", "netns", "list"], capture_output=True, text=True).stdout.strip()
    return {e["name"] for e in json.loads(out)} if out else set()


def _root_links() -> set[str]:
    out = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True).stdout
    return {e["ifname"] for e in json.loads(out)}


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[NetnsLab]:
    if not ROOT:
        pytest.skip("needs root: creates network namespaces, veth pairs, nftables rules")
    lab = NetnsLab(f"t{os.getpid()}{secrets.token_hex(2)}", state_dir=tmp_path)
    yield lab
    lab.down()


def _nothing_left(lab: NetnsLab) -> None:
    names = _netns()
    assert not any(n.startswith(f"nb-{lab.name}-") for n in names), names
    assert not {"nb-init", "nb-resp", "nb-priv", "nb-pub"} & _root_links()
    assert not lab.state_file.exists()
    assert not (lab.state_dir / f"{lab.name}.lock").exists()
    assert not (Path("/run/netns") / lab.tester_netns).exists()


def _up_then_owner_killed(lab: NetnsLab) -> None:
    """Bring ``lab`` up in another process that then dies by SIGKILL (a crashed run)."""
    code = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from natbench.testbed.lab import NetnsLab
        NetnsLab({lab.name!r}, state_dir=Path({str(lab.state_dir)!r})).up()
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr


def test_bad_name_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="invalid lab name"):
        NetnsLab("no spaces", state_dir=tmp_path)


@needs_root
def test_up_twice_down_twice_leaves_nothing(lab: NetnsLab) -> None:
    first = lab.up()
    assert first["up"] and all(first["namespaces"].values())
    assert lab.is_up()
    second = lab.up()  # idempotent: the intact lab is kept
    assert second["up"] and second["macs"] == first["macs"]
    assert _netns() >= {lab.tester_netns, lab.dut_netns}
    assert lab.down() is True
    assert lab.down() is False
    _nothing_left(lab)


@needs_root
def test_topology_addresses_neighbours_cpus(lab: NetnsLab) -> None:
    lab.up()
    addrs = json.loads(lab.dut_exec(["ip", "-j", "addr", "show"]))
    have = {(a["ifname"], i["local"]) for a in addrs for i in a.get("addr_info", [])}
    assert ("nb-priv", "198.18.0.1") in have and ("nb-pub", "198.19.0.1") in have
    neigh = lab.dut_exec(["ip", "neigh", "show", "nud", "permanent"])
    assert "198.18.0.2" in neigh and lab.macs["nb-init"] in neigh
    assert "198.19.0.2" in neigh and lab.macs["nb-resp"] in neigh
    assert lab.dut_exec(["sysctl", "-n", "net.ipv4.ip_forward"]).strip() == "1"
    # the tester side has no address and drops everything after AF_PACKET has seen it
    t_addrs = subprocess.run(["ip", "-n", lab.tester_netns, "-j", "addr", "show"], capture_output=True, text=True)
    assert not [i for a in json.loads(t_addrs.stdout) if a["ifname"] != "lo" for i in a.get("addr_info", [])]
    rules = subprocess.run(
        ["ip", "netns", "exec", lab.tester_netns, "nft", "list", "ruleset"], capture_output=True, text=True
    ).stdout
    assert "hook ingress" in rules and "policy drop" in rules
    # DUT and tester CPUs are disjoint when the machine has more than one CPU
    facts = lab.facts()
    if len(os.sched_getaffinity(0)) > 1:
        assert not set(facts["dut_cpus"]) & set(facts["tester_cpus"])
    mask = lab.dut_exec(["cat", "/sys/class/net/nb-priv/queues/rx-0/rps_cpus"]).strip()
    assert int(mask.replace(",", ""), 16) == sum(1 << c for c in facts["dut_cpus"])
    # each tester port's receive work goes to the CPU of the tester lane that reads that port
    for k, port in enumerate(("nb-init", "nb-resp")):
        tmask = _tester_rps(lab, port)
        assert tmask == 1 << facts["tester_cpus"][k % len(facts["tester_cpus"])]


def _tester_rps(lab: NetnsLab, port: str) -> int:
    out = subprocess.run(
        ["ip", "netns", "exec", lab.tester_netns, "cat", f"/sys/class/net/{port}/queues/rx-0/rps_cpus"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return int(out.replace(",", ""), 16)


@pytest.mark.parametrize(
    ("machine", "tester", "dut"),
    [
        ([0], (0,), (0,)),  # one CPU: shared, and the facts say so
        ([0, 1], (1,), (0,)),
        ([0, 1, 2], (2,), (0, 1)),
        ([0, 1, 2, 3], (2, 3), (0, 1)),  # from 4 CPUs on: one tester lane per port
        (list(range(16)), (14, 15), tuple(range(14))),
    ],
)
def test_default_cpu_split(
    machine: list[int], tester: tuple[int, ...], dut: tuple[int, ...], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("natbench.testbed.lab.netns.os.sched_getaffinity", lambda _pid: set(machine))
    lab = NetnsLab("split", state_dir=tmp_path)  # nothing is created before up()
    assert (lab.tester_cpus, lab.dut_cpus_available) == (tester, dut)


@needs_root
def test_cores_map_to_the_dut_cpu_set_as_far_as_possible(lab: NetnsLab) -> None:
    lab.up()
    avail = list(lab.dut_cpus_available)
    assert lab.set_dut_cores(1) == avail[:1]
    assert lab.set_dut_cores(64) == avail  # more than the machine has: all the DUT may get
    assert lab.status()["dut_cpus"] == avail and lab.status()["dut_cores_requested"] == 64


@needs_root
def test_a_broken_lab_is_rebuilt_by_up(lab: NetnsLab) -> None:
    lab.up()
    subprocess.run(["ip", "netns", "del", lab.dut_netns], check=True)
    assert not lab.is_up()
    assert lab.up()["up"]
    assert lab.is_up()


@needs_root
def test_crash_during_up_then_down_leaves_nothing(lab: NetnsLab) -> None:
    """A process building the lab is SIGKILLed half-way (one namespace made, a process inside it)."""
    code = textwrap.dedent(f"""
        import os, signal, subprocess
        from pathlib import Path
        from natbench.testbed.lab import NetnsLab
        lab = NetnsLab({lab.name!r}, state_dir=Path({str(lab.state_dir)!r}))
        def build():
            subprocess.run(["ip", "netns", "add", lab.dut_netns], check=True)
            subprocess.Popen(["ip", "netns", "exec", lab.dut_netns, "sleep", "300"], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run(["ip", "netns", "add", lab.tester_netns], check=True)
            os.kill(os.getpid(), signal.SIGKILL)
        lab._build = build
        lab.up()
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -9, proc.stderr
    assert lab.state_file.exists() and lab.dut_netns in _netns()
    pids = subprocess.run(["ip", "netns", "pids", lab.dut_netns], capture_output=True, text=True).stdout.split()
    assert pids  # the orphaned DUT process is still running
    assert lab.down() is True
    _nothing_left(lab)
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists() or "sleep" not in Path(f"/proc/{pid}/cmdline").read_text()


@needs_root
def test_crash_after_up_then_up_and_down(lab: NetnsLab) -> None:
    """After a crash of the owner, a new `up` reuses or rebuilds the lab and `down` removes all of it."""
    _up_then_owner_killed(lab)
    assert lab.is_up()
    assert lab.name in stale_labs(lab.state_dir)  # its owner is dead: `natbench lab down --stale` finds it
    assert lab.up()["up"]
    assert lab.name not in stale_labs(lab.state_dir)
    assert lab.down() is True
    _nothing_left(lab)


@needs_root
def test_the_only_recorded_lab_is_the_one_a_testbed_without_a_lab_of_its_own_uses(
    lab: NetnsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    from natbench.campaign.schema import DutSpec
    from natbench.duts.executors import NetnsExecutor
    from natbench.testbed import build_dut

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", lab.state_dir)
    lab.up()
    assert list_labs(lab.state_dir) == [lab.name]
    found = recorded_lab()
    assert found is not None and found.dut_netns == lab.dut_netns
    spec = DutSpec.model_validate({"name": "iptables", "recipe": "iptables-nat44", "access": {"kind": "lab"}})
    dut = build_dut([spec], lab=found)  # what the testbed does for a tester that brings no lab (trex)
    assert isinstance(dut.executor, NetnsExecutor) and dut.executor.namespace == lab.dut_netns  # type: ignore[attr-defined]


def test_needs_root_message(tmp_path: Path) -> None:
    if ROOT:
        pytest.skip("runs as root: the non-root error path cannot be reached")
    with pytest.raises(LabError, match="needs root"):
        NetnsLab("x", state_dir=tmp_path).up()


@needs_root
def test_a_lab_campaign_brings_its_lab_up_and_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The testbed of a campaign with `access: {kind: lab}` builds the lab, hands it to the tester and the DUT,
    and removes it on close."""
    from natbench.campaign import load_campaign
    from natbench.duts.executors import NetnsExecutor
    from natbench.duts.recipe_dut import RecipeDut
    from natbench.testbed import build_testbed
    from natbench.testers.software.tester import SoftwareTester

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", tmp_path)
    campaign = load_campaign(QUICKSTART)
    bed = build_testbed(campaign)
    try:
        lab, tester, dut = bed.lab, bed.tester, bed.dut
        assert isinstance(lab, NetnsLab) and isinstance(tester, SoftwareTester) and isinstance(dut, RecipeDut)
        assert recorded_lab() is not None
        ns = dut.executor.namespace if isinstance(dut.executor, NetnsExecutor) else None
        assert ns == lab.dut_netns and ns in _netns()
        params = dut.base_params  # the lab's recipe parameters reach the DUT; the campaign stays as written
        assert params["private_if"] == "nb-priv" and params["public_address"] == "198.19.0.1/24"
        assert "private_if" not in campaign.testbed.duts[0].params
        assert bed.duts[0].params["private_if"] == "nb-priv"
        assert tester.receive_timeout == max(m.timeout for m in campaign.metrics.values())
        assert tester.facts()["initiator"]["netns"].startswith("nb-quickstart-")
        # a cores sweep takes the DUT's own CPUs first and the tester's only beyond them
        assert dut.own_cpus == list(lab.dut_cpus_available)  # the monitor marks these as the data path
        assert dut.cpu_order == [
            *lab.dut_cpus_available,
            *(c for c in lab.tester_cpus if c not in lab.dut_cpus_available),
        ]
    finally:
        bed.close()
    assert ns not in _netns()
    assert list_labs(tmp_path) == []
    assert recorded_lab() is None


@needs_root
def test_a_failed_testbed_build_takes_its_lab_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lab is up before the tester and the DUT are built: when they fail, nothing is left behind."""
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", tmp_path)
    text = QUICKSTART.read_text().replace("recipe: iptables-nat44", "recipe: ./no-such-recipe.yaml")
    (tmp_path / "c.yaml").write_text(text)
    with pytest.raises(NatbenchError, match="no-such-recipe"):
        build_testbed(load_campaign(tmp_path / "c.yaml"))
    assert list_labs(tmp_path) == []
    assert not {f"nb-quickstart-{os.getpid()}-dut", f"nb-quickstart-{os.getpid()}-tester"} & _netns()


def _natbench(*args: str, state_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "NATBENCH_LAB_STATE"}  # the default state directory
    if state_dir is not None:
        env["NATBENCH_LAB_STATE"] = str(state_dir)
    return subprocess.run(
        [sys.executable, "-m", "natbench", *args], capture_output=True, text=True, timeout=120, env=env
    )


# Other people run labs on this machine: the tests judge their own lab by name (`--stale --name NAME`,
# the same discovery as the host-wide `--stale`), so they never remove someone else's.


@needs_root
def test_down_stale_finds_a_dead_owners_lab_recorded_in_another_state_directory(lab: NetnsLab) -> None:
    """A lab recorded in a test's temp state directory, its owner SIGKILLed: `lab down --stale` removes it."""
    _up_then_owner_killed(lab)
    assert lab.is_up() and lab.state_dir != Path("/run/natbench/labs")
    out = _natbench("lab", "down", "--stale", "--name", lab.name)
    assert out.returncode == 0, out.stderr
    assert f"lab {lab.name}: removed (owner process " in out.stdout and "is gone)" in out.stdout, out.stdout
    _nothing_left(lab)


@needs_root
def test_down_stale_keeps_a_lab_whose_owner_runs(lab: NetnsLab) -> None:
    lab.up()  # owned by this (live) process, recorded in a temp state directory
    out = _natbench("lab", "down", "--stale", "--name", lab.name)
    assert out.returncode == 0, out.stderr
    assert f"lab {lab.name}: kept (owner process {os.getpid()} is running)" in out.stdout, out.stdout
    assert lab.is_up()


@needs_root
def test_the_owner_is_recorded_in_the_kernel(lab: NetnsLab) -> None:
    """Without any state file the namespaces still name their owner (the alias of lo)."""
    lab.up()
    lab.state_file.unlink()
    (found,) = [f for f in find_labs() if f.name == lab.name]
    assert found.namespaces == (lab.dut_netns, lab.tester_netns)
    assert found.owner_pid == os.getpid() and found.owner_alive and not found.stale
    assert found.state_files == ()  # the mark names the state file, which is gone now


@needs_root
def test_a_lab_made_by_hand_is_not_stale(lab: NetnsLab) -> None:
    """`natbench lab up` exits at once; its lab stays until `lab down --name`, also when a run reused it."""
    out = _natbench("lab", "up", "--name", lab.name, state_dir=lab.state_dir)
    assert out.returncode == 0, out.stderr
    assert lab.is_up()
    out = _natbench("lab", "down", "--stale", "--name", lab.name)
    assert f"lab {lab.name}: kept (made by hand with `natbench lab up`" in out.stdout, out.stdout
    code = textwrap.dedent(f"""
        from pathlib import Path
        from natbench.testbed.lab import NetnsLab
        NetnsLab({lab.name!r}, state_dir=Path({str(lab.state_dir)!r})).up()
    """)  # a run reuses it (that process owns it now) and ends without taking it down
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    (found,) = [f for f in find_labs() if f.name == lab.name]
    assert found.by_hand and not found.owner_alive and not found.stale
    out = _natbench("lab", "down", "--name", lab.name, state_dir=lab.state_dir)
    assert f"lab {lab.name}: removed" in out.stdout
    _nothing_left(lab)


def test_a_reused_pid_is_not_the_owner() -> None:
    start = proc_start(os.getpid())
    assert start is not None
    assert owner_alive(os.getpid(), start)
    assert owner_alive(os.getpid(), None)
    assert not owner_alive(os.getpid(), start + 1)  # same pid, another process: the owner is gone


@needs_root
def test_a_lab_nobody_owns_is_left_alone_for_the_grace_time(tmp_path: Path) -> None:
    """Namespaces with the lab naming but no mark and no state file (an older natbench's lab, elsewhere)."""
    lab = NetnsLab(f"u{os.getpid()}{secrets.token_hex(2)}", state_dir=tmp_path)
    try:
        for ns in (lab.tester_netns, lab.dut_netns):
            subprocess.run(["ip", "netns", "add", ns], check=True)
        (found,) = [f for f in find_labs() if f.name == lab.name]
        assert found.owner_pid is None and not found.stale and "no owner recorded" in found.reason
        assert found.age is not None and 0 <= found.age < 60
        (found,) = [f for f in find_labs(unowned_grace=0) if f.name == lab.name]
        assert found.stale
        out = _natbench("lab", "down", "--stale", "--name", lab.name)
        assert f"lab {lab.name}: kept (no owner recorded anywhere" in out.stdout, out.stdout
        assert {lab.tester_netns, lab.dut_netns} <= _netns()
    finally:
        lab.down()
    _nothing_left(lab)


@needs_root
def test_the_stale_sweep_waits_for_labs_being_built() -> None:
    """`up` holds the host lock shared while it builds; the sweep takes it exclusively."""
    import threading

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from natbench.testbed.lab.host import host_lock\n"
            "with host_lock(exclusive=False):\n    print('held', flush=True); sys.stdin.readline()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "held"
        done = threading.Event()
        nobody = f"none{os.getpid()}{secrets.token_hex(2)}"  # the lock is the same whatever is judged
        sweep = threading.Thread(target=lambda: (remove_stale_labs(names=[nobody]), done.set()), daemon=True)
        sweep.start()
        assert not done.wait(1.0)  # blocked while a build holds the lock
        holder.stdin.write("\n")
        holder.stdin.flush()
        assert done.wait(60)
    finally:
        holder.kill()
        holder.wait()


@needs_root
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs to give the tester two lanes")
def test_the_tester_cpus_setting_reaches_the_lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`testbed.tester.settings.cpus` decides the tester's CPUs and the lab steers each port's receive work there."""
    from natbench.campaign import load_campaign
    from natbench.testbed import build_testbed
    from natbench.testers.software.tester import SoftwareTester

    monkeypatch.setattr("natbench.testbed.lab.host.DEFAULT_STATE_DIR", tmp_path)
    first, second = sorted(os.sched_getaffinity(0))[:2]
    text = QUICKSTART.read_text().replace(
        "    kind: software\n", f"    kind: software\n    settings: {{cpus: [{second}, {first}]}}\n", 1
    )
    (tmp_path / "quickstart.yaml").write_text(text)
    bed = build_testbed(load_campaign(tmp_path / "quickstart.yaml"))
    try:
        tester, lab = bed.tester, bed.lab
        assert isinstance(tester, SoftwareTester) and isinstance(lab, NetnsLab)
        assert tester.cpus == (second, first)
        assert lab.tester_netns == tester.initiator.netns
        assert lab.tester_cpus == (second, first)
        assert (_tester_rps(lab, "nb-init"), _tester_rps(lab, "nb-resp")) == (1 << second, 1 << first)
        assert tester.facts()["cpus"] == [second, first]
    finally:
        bed.close()
