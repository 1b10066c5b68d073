"""Each Jool / MAP-T / PF recipe executed over SSH (a real sshd on localhost, keys made here)
against a shell in which jool, jool_siit, jool_mapt, pfctl, ip, iptables, sysctl, modprobe,
ethtool, conntrack and ifconfig are test-only recorders (tests/recorders/recorder) on a PATH
the executor wrapper prepends.

Proves that the SSH executor sends the rendered commands in order, that counts, mappings and
the DUT-timed flush are parsed from the commands' output, and that setup stops at the first
failing command with an error naming the step and the command (then tears down).
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import seed004_params as seed
from recorder_shell import RecorderShell
from test_ssh import Sshd
from test_ssh import sshd as issue5_sshd  # noqa: F401 - issue-5's fixture: real sshd on localhost, keys made by the test

from natbench.duts.group import DutGroup
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import load_recipe
from natbench.errors import DutError
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint

pytestmark = [
    pytest.mark.ssh,
    pytest.mark.skipif(os.geteuid() != 0, reason="the test sshd logs in as root"),
    pytest.mark.skipif(not Path("/usr/sbin/sshd").exists(), reason="openssh-server is not installed"),
]

HERE = Path(__file__).parent
RECORDED = (
    "jool",
    "jool_siit",
    "jool_mapt",
    "pfctl",
    "ip",
    "iptables",
    "sysctl",
    "modprobe",
    "ethtool",
    "conntrack",
    "ifconfig",
)
POINT = WorkingPoint(index=0, src_ports=PortRange(1, 4000), dst_ports=PortRange(1, 1000), frame_size=64)


@dataclass
class Lab:
    """One recorder shell reached over SSH."""

    root: Path
    sshd: Sshd
    record: Path = field(init=False)
    data: Path = field(init=False)
    bindir: Path = field(init=False)
    sysfs: Path = field(init=False)

    def __post_init__(self) -> None:
        self.bindir = self.root / "bin"
        self.data = self.root / "data"
        self.sysfs = self.root / "sys"
        self.record = self.root / "record.tsv"
        self.bindir.mkdir()
        self.data.mkdir()
        for name in RECORDED:
            os.symlink(HERE / "recorders" / "recorder", self.bindir / name)
        for iface in ("to_global", "to_napt"):
            (self.sysfs / "class/net" / iface / "queues/rx-0").mkdir(parents=True)
        self.record.touch()

    def canned(self, name: str, sample: str) -> None:
        shutil.copy(HERE / "data" / sample, self.data / name)

    def executor(self, fail: str = "") -> RecorderShell:
        return RecorderShell(self.sshd.executor(command_timeout=30.0), self.bindir, self.record, self.data, fail)

    def take(self) -> list[list[str]]:
        lines = [ln.split("\t") for ln in self.record.read_text().splitlines()]
        self.record.write_text("")
        for argv in lines:  # `ip -n NS link set IF netns $$`: the shell's pid, whatever it was
            if argv[:2] == ["ip", "-n"] and argv[-2] == "netns" and argv[-1].isdigit():
                argv[-1] = "$$"
        return lines


@pytest.fixture
def lab(issue5_sshd: Sshd, tmp_path: Path) -> Lab:  # noqa: F811 - the imported fixture, by name
    lab = Lab(tmp_path, issue5_sshd)
    lab.canned("jool-version.txt", "jool/version-4.2.0-rc2.txt")
    lab.canned("jool-stats.txt", "jool/stats-display-all.txt")
    lab.canned("jool-sessions.csv", "jool/session-display-udp-numeric-csv.csv")
    lab.canned("pfctl-si.txt", "pf/pfctl-si.txt")
    lab.canned("pfctl-ss.txt", "pf/pfctl-ss-vv-nat64.txt")
    lab.canned("conntrack-C.txt", "linux/conntrack-C.txt")
    lab.canned("conntrack-L.txt", "linux/conntrack-L.txt")
    return lab


def recorded_part(command: str) -> list[list[str]]:
    """The recorder invocations a rendered command line makes (pipes and redirections removed)."""
    lex = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
    lex.whitespace_split = True
    out: list[list[str]] = []
    words: list[str] = []
    skip_next = False
    for tok in [*list(lex), ";"]:
        if skip_next:
            skip_next = False
            continue
        if tok in (">", ">>", "<"):
            skip_next = True
            continue
        if tok in (";", "|", "&&", "||"):
            if words and words[0] in RECORDED:
                out.append(words)
            words = []
            continue
        words.append(tok)
    return out


def expected(recipe: Any, steps: list[str], params: dict[str, Any], context: dict[str, Any] | None = None) -> list:
    out: list[list[str]] = []
    for step in steps:
        if recipe.has_step(step):
            for cmd in recipe.render(step, params, context):
                out.extend(recorded_part(cmd))
    return out


def pf_params(lab: Lab, recipe: str) -> dict[str, Any]:
    common = {"private_if": "ix0", "public_if": "ix1", "pf_conf": str(lab.root / "pf.conf"), "state_limit": "2^22"}
    if recipe == "openbsd-pf-nat64":
        return {**common, "pool4": "198.19.0.1", "udp_timeout": 1000}
    return {**common, "public_address": "198.19.0.1/24", "private_net": "198.18.0.0/24", "static_port": True}


CASES: dict[str, dict[str, Any]] = {
    "jool-nat64": {"params": seed.PLAT, "fail": "jool\tpool4\tadd", "count": 1_000_000, "mappings": 4},
    "jool-siit": {"params": seed.CLAT, "fail": "jool_siit\teamt\tadd"},
    "jool-mapt-ce": {"params": seed.MAPT_CE, "fail": "global\tupdate\tbmr", "count": 6, "mappings": 6},
    "jool-mapt-br": {"params": seed.MAPT_BR, "fail": "jool_mapt\t-i\tBR\tfmrt\tadd"},
    "openbsd-pf-nat64": {"params": None, "fail": "pfctl\t-f", "count": 4_000_000, "mappings": 4},
    "openbsd-pf-nat44": {"params": None, "fail": "pfctl\t-f", "count": 4_000_000, "mappings": 3},
}


def params_for(lab: Lab, name: str) -> dict[str, Any]:
    p = CASES[name]["params"]
    if p is None:
        return pf_params(lab, name)
    p = dict(p)
    if name == "jool-mapt-ce":
        p["sysfs"] = str(lab.sysfs)
    return p


@pytest.mark.parametrize("name", list(CASES))
def test_recipe_over_ssh_sends_commands_in_order(lab: Lab, name: str) -> None:
    recipe = load_recipe(name)
    params = params_for(lab, name)
    if name == "openbsd-pf-nat44":
        lab.canned("pfctl-ss.txt", "pf/pfctl-ss-vv-nat44.txt")
    dut = RecipeDut(name, recipe, lab.executor(), params)
    try:
        dut.setup(POINT)
        assert lab.take() == expected(recipe, ["prepare", "setup", "rss", "facts"], params), (
            "setup commands or their order"
        )
        case = CASES[name]
        if recipe.stateful:
            assert dut.count_connections() == case["count"]
            maps = dut.mappings()
            assert len(maps) == case["mappings"]
            assert all(m.public_port > 0 for m in maps)
            seconds = dut.timed_flush()
            assert 0 <= seconds < 30
            lab.take()
        facts = dut.facts()
        assert facts["recipe"] == name
        if name.startswith("jool-mapt"):
            assert facts["jool_version"] == "4.1.255.3"
            assert facts["jool_mapt_release"] == "4.2.0-rc2"
        lab.take()
    finally:
        dut.teardown()
    torn = lab.take()
    assert torn == expected(recipe, ["teardown"], params, dut.saved or None)
    assert torn, "teardown sent no command"
    if name.startswith("openbsd-pf"):
        conf = (lab.root / "pf.conf").read_text().splitlines()
        assert conf[0] == "set limit states 4194304"
        assert "set timeout adaptive.start 0" in conf and "set timeout adaptive.end 0" in conf
        rule = "af-to inet from 198.19.0.1" if name.endswith("nat64") else "nat-to 198.19.0.1 static-port"
        assert any(rule in line for line in conf), conf


@pytest.mark.parametrize("name", list(CASES))
def test_setup_stops_at_the_first_failing_command(lab: Lab, name: str) -> None:
    recipe = load_recipe(name)
    params = params_for(lab, name)
    fail = CASES[name]["fail"]
    dut = RecipeDut(name, recipe, lab.executor(fail=fail), params)
    with pytest.raises(DutError) as info:
        dut.setup(POINT)
    message = str(info.value)
    assert f"DUT {name}: step setup: command failed with exit status 3" in message
    assert "simulated failure" in message
    want = expected(recipe, ["prepare", "setup"], params)
    failing = next(i for i, argv in enumerate(want) if fail in "\t".join(argv))
    assert shlex.join(want[failing]).split()[0] in message
    got = lab.take()
    # everything up to and including the failing command, in order, and nothing of setup after it ...
    assert got[: failing + 1] == want[: failing + 1]
    # ... then straight to teardown
    torn = expected(recipe, ["teardown"], params, dut.saved or None)
    assert got[failing + 1 :] == torn


def test_mapt_on_a_jool_without_mapt_fails_clearly(lab: Lab) -> None:
    lab.canned("jool-version.txt", "jool/version-4.1.6.txt")
    for name in ("jool-mapt-ce", "jool-mapt-br"):
        dut = RecipeDut(name, load_recipe(name), lab.executor(), params_for(lab, name))
        with pytest.raises(DutError, match=r"step prepare: .*Jool 4\.1\.6\.0 has no MAP-T: MAP-T exists only in"):
            dut.setup(POINT)
        got = lab.take()
        assert got[0] == ["jool_mapt", "--version"]
        assert ["modprobe", "jool_mapt"] not in got  # nothing of the configuration was sent


def test_464xlat_pair_over_ssh(lab: Lab) -> None:
    """Fig. 11 as a dual DUT: CLAT then PLAT set up in path order, the PLAT counted, torn down in reverse."""
    clat = RecipeDut("clat", load_recipe("jool-siit"), lab.executor(), dict(seed.CLAT))
    plat = RecipeDut("plat", load_recipe("jool-nat64"), lab.executor(), dict(seed.PLAT))
    group = DutGroup([clat, plat])
    assert [d.name for d in group.stateful] == ["plat"]
    group.setup(POINT)
    try:
        got = lab.take()
        want = expected(clat.recipe, ["prepare", "setup", "rss", "facts"], seed.CLAT) + expected(
            plat.recipe, ["prepare", "setup", "rss", "facts"], seed.PLAT
        )
        assert got == want
        assert group.count_connections() == 1_000_000
        assert lab.take() == [["jool", "stats", "display", "--all"]]  # only the stateful PLAT is asked
        assert set(group.facts()) == {"clat", "plat"}
    finally:
        group.teardown()
    torn = lab.take()
    # PLAT first (reverse order), then the CLAT
    assert torn == expected(plat.recipe, ["teardown"], seed.PLAT) + expected(clat.recipe, ["teardown"], seed.CLAT)
    assert torn[-1] == ["modprobe", "-r", "jool_siit"]
