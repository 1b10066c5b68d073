"""The local lab's host-load probe (natbench.testbed.lab.hostload) on a /proc tree written by the test: what the
lab's CPUs were busy with beyond the tester's process, the DUT namespace's processes and the lab CPUs' ksoftirqd is
the others' share, stolen time included; each of those counts on both sides; the bound follows the counters."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from natbench.testbed.lab.hostload import TICK, HostLoad, HostReading, host_figures, parse_cpu_stat

ME = 4000
"""The tester's pid in the fake tree."""


class FakeProc:
    """A /proc tree: /proc/stat per CPU, and processes with stat, comm, schedstat and a network namespace."""

    def __init__(self, root: Path) -> None:
        self.root = root / "proc"
        self.netns = root / "netns"
        self.root.mkdir()
        self.netns.mkdir()
        (self.netns / "dut").write_text("")
        (self.netns / "elsewhere").write_text("")
        self.cpu: dict[int, list[int]] = {0: [0] * 10, 1: [0] * 10, 2: [0] * 10}
        self.own = 0.0
        self.clock = 0.0

    def tick(self, cpu: int, user: int = 0, system: int = 0, steal: int = 0) -> None:
        """Add ticks to a CPU's counters."""
        v = self.cpu[cpu]
        v[0] += user
        v[2] += system
        v[7] += steal

    def write_stat(self) -> None:
        lines = ["cpu " + " ".join(str(sum(v[i] for v in self.cpu.values())) for i in range(10))]
        lines += [f"cpu{c} " + " ".join(map(str, v)) for c, v in self.cpu.items()]
        (self.root / "stat").write_text("\n".join(lines) + "\nintr 0\n")

    def process(self, pid: int, comm: str, *, ticks: int = 0, parent: int = 1, netns: str = "elsewhere") -> None:
        d = self.root / str(pid)
        (d / "ns").mkdir(parents=True, exist_ok=True)
        (d / "comm").write_text(comm + "\n")
        fields = ["S", str(parent)] + ["0"] * 9 + [str(ticks), "0", "0", "0"] + ["0"] * 30
        (d / "stat").write_text(f"{pid} ({comm}) " + " ".join(fields) + "\n")
        (d / "schedstat").write_text(f"{round(ticks * TICK * 1e9)} 0 0\n")
        net = d / "ns" / "net"
        if net.exists():
            net.unlink()
        os.link(self.netns / netns, net)

    def probe(self, cpus: tuple[int, ...] = (0, 1)) -> HostLoad:
        self.write_stat()
        return HostLoad(
            cpus, ["dut"], proc=self.root, netns_dir=self.netns, clock=lambda: self.clock, own=lambda: self.own, me=ME
        )


@pytest.fixture
def proc(tmp_path: Path) -> FakeProc:
    p = FakeProc(tmp_path)
    p.process(ME, "natbench")
    p.process(10, "ksoftirqd/0")
    p.process(11, "ksoftirqd/1")
    p.process(12, "ksoftirqd/2")
    return p


def window(proc: FakeProc, probe: HostLoad, seconds: float) -> dict[str, float]:
    probe.mark()
    proc.clock += seconds
    proc.write_stat()
    return probe.since_mark()


def test_a_window_of_only_the_lab_shows_no_others(proc: FakeProc) -> None:
    """10 s on CPUs 0 and 1: the tester's process took 4 s, its CPU's ksoftirqd 1 s, the DUT's daemon 3 s; the CPUs
    counted 8 s busy: nothing is the others'."""
    probe = proc.probe()
    proc.process(20, "tayga", netns="dut")
    probe.mark()
    proc.clock += 10
    proc.own += 4.0
    proc.process(10, "ksoftirqd/0", ticks=round(1 / TICK))
    proc.process(20, "tayga", ticks=round(3 / TICK), netns="dut")
    proc.tick(0, user=round(4 / TICK), system=round(1 / TICK))
    proc.tick(1, system=round(3 / TICK))
    proc.write_stat()
    load = probe.since_mark()
    assert load["others"] == 0.0 and load["steal"] == 0.0 and load["cpus"] == 2 and load["seconds"] == 10


def test_what_the_lab_cpus_did_beyond_the_lab_is_the_others_share(proc: FakeProc) -> None:
    """4 s busy beyond the lab's 1 s on two CPUs over 10 s: 3 / 20 = 0.15; the stolen 1 s adds 0.05."""
    probe = proc.probe()
    probe.mark()
    proc.clock += 10
    proc.own += 1.0
    proc.tick(0, user=round(2 / TICK))
    proc.tick(1, user=round(2 / TICK), steal=round(1 / TICK))
    proc.tick(2, user=round(9 / TICK))  # a CPU that is not the lab's: not counted
    proc.write_stat()
    load = probe.since_mark()
    assert load["others"] == pytest.approx(0.20) and load["steal"] == pytest.approx(0.05)


@pytest.mark.parametrize(
    ("pid", "comm", "netns", "parent", "subtracted"),
    [
        (20, "tayga", "dut", 1, True),  # a DUT daemon
        (21, "conntrack", "dut", ME, False),  # the tester's own child: counted in its own time once waited for
        (22, "cc1", "elsewhere", 1, False),  # someone else's
        (12, "ksoftirqd/2", "elsewhere", 2, False),  # the softirq thread of a CPU that is not the lab's
        (11, "ksoftirqd/1", "elsewhere", 2, True),  # of a lab CPU
    ],
)
def test_which_processes_are_the_labs(
    proc: FakeProc, pid: int, comm: str, netns: str, parent: int, subtracted: bool
) -> None:
    proc.process(pid, comm, netns=netns, parent=parent)
    probe = proc.probe()
    probe.mark()
    proc.clock += 10
    proc.process(pid, comm, ticks=round(2 / TICK), netns=netns, parent=parent)
    proc.tick(0, user=round(2 / TICK))
    proc.write_stat()
    others = probe.since_mark()["others"]
    assert others == pytest.approx(0.0 if subtracted else 0.1)


def test_the_bound_follows_the_counters_rounding_and_sampling() -> None:
    a = HostReading(0.0, 0.0, 0.0, 0.0, {30: 0.0}, ticked=1)
    b = HostReading(10.0, 5.0, 0.0, 5.0, {30: 0.0}, ticked=1)
    load = host_figures(a, b, 2)
    rounding = (4 * 2 + 4 * 1) * TICK
    sampling = math.sqrt(20 * 100) / 100
    assert load["bound"] == pytest.approx((rounding + sampling) / 20, abs=1e-6)
    longer = host_figures(a, HostReading(40.0, 20.0, 0.0, 20.0, {30: 0.0}, ticked=1), 2)
    assert longer["bound"] < load["bound"]  # a longer window tells a smaller share


def test_a_process_that_started_in_the_window_counts_whole_and_one_that_ended_counts_as_the_others() -> None:
    a = HostReading(0.0, 0.0, 0.0, 0.0, {7: 5.0})
    b = HostReading(10.0, 4.0, 0.0, 0.0, {8: 1.0})
    # pid 8 (new) is the lab's: 1 s; pid 7 ended: its time in the window is unknown, the rest is the others'
    assert host_figures(a, b, 2)["others"] == pytest.approx(3 / 20)


def test_parse_cpu_stat_sums_user_nice_and_system_of_the_cpus_asked() -> None:
    text = "cpu  9 9 9 9 9 9 9 9 9 9\ncpu0 1 2 3 100 5 6 7 8 0 0\ncpu1 10 20 30 100 5 6 7 80 0 0\n"
    assert parse_cpu_stat(text, [0]) == pytest.approx((6 * TICK, 8 * TICK))
    assert parse_cpu_stat(text, [0, 1]) == pytest.approx((66 * TICK, 88 * TICK))
    assert parse_cpu_stat(text, [5]) == (0.0, 0.0)


def test_this_machines_counters_read(tmp_path: Path) -> None:
    """The real /proc: a window reads, whatever the load (every figure a share of the capacity)."""
    probe = HostLoad(sorted(os.sched_getaffinity(0)), ["no-such-netns"])
    probe.mark()
    sum(i * i for i in range(200_000))
    load = probe.since_mark()
    assert load["cpus"] == len(os.sched_getaffinity(0)) and load["seconds"] > 0
    assert load["others"] >= 0.0 and 0.0 <= load["steal"] <= load["others"] + 1e-9 and load["bound"] > 0


def test_a_window_from_a_reading_leaves_the_marks_alone(proc: FakeProc) -> None:
    """The whole repetition's window (since a reading) and the trials' (since the last mark) overlap freely."""
    probe = proc.probe()
    start = probe.reading()
    probe.mark()
    proc.clock += 10
    proc.tick(0, user=round(4 / TICK))
    proc.write_stat()
    assert probe.since(start)["others"] == pytest.approx(0.2)
    assert probe.since_mark()["others"] == pytest.approx(0.2)  # the mark was not moved by since()
    proc.clock += 10
    proc.write_stat()
    assert probe.since(start)["others"] == pytest.approx(0.1)  # 4 s over 20 s x 2 CPUs
    assert probe.since_mark()["others"] == 0.0
    with pytest.raises(TypeError):
        probe.since(object())
