"""`natbench recipes list|show|render` (in process through click; errors through the real entry point)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from dataclasses import dataclass

from click.testing import CliRunner

from natbench.cli import cli


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


def natbench(*args: str) -> Result:
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return Result(res.exit_code, res.stdout, "")


def natbench_process(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "natbench", *args], capture_output=True, text=True, timeout=60)


def test_list_shows_the_linux_recipes() -> None:
    res = natbench("recipes", "list")
    assert res.returncode == 0, res.stderr
    names = [line.split()[0] for line in res.stdout.splitlines()]
    assert {"iptables-nat44", "nftables-nat44", "tayga-nat64", "linux-forwarding"} <= set(names)


def test_show_lists_parameters_and_steps() -> None:
    res = natbench("recipes", "show", "tayga-nat64")
    assert res.returncode == 0, res.stderr
    assert "pool6" in res.stdout and "ipv6_net" in res.stdout and "timed_flush" in res.stdout


def test_render_quotes_values_and_selects_steps() -> None:
    res = natbench(
        "recipes", "render", "iptables-nat44", "-p", "private_if=in0", "-p", "public_if=out0",
        "-p", "rule_comment=a b, c", "-p", "conntrack_max=2^20", "-s", "setup", "-s", "count_connections",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "# setup" and "# count_connections" in lines and "conntrack -C" in lines
    rule = next(line for line in lines if line.startswith("iptables -t nat -A"))
    assert shlex.split(rule)[shlex.split(rule).index("--comment") + 1] == "a b, c"
    assert any(line.startswith("v=1048576;") for line in lines)


def test_bad_parameter_is_one_line_and_exit_2() -> None:
    res = natbench_process(
        "recipes", "render", "iptables-nat44", "-p", "private_if=a", "-p", "public_if=b", "-p", "nat=dnat"
    )
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0
    assert "nat" in res.stderr and "not one of" in res.stderr and "Traceback" not in res.stderr
    res = natbench_process("recipes", "show", "no-such-recipe")
    assert res.returncode == 2 and "unknown recipe" in res.stderr
