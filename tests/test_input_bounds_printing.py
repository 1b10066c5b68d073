"""Bounds and printing of user input: the working-point cap, YAML 1.1 numbers, secrets from the environment,
control characters and line length in what natbench prints, settings and their CLI twins, the recipe search
order, writable output directories checked first, and lab tests that skip with a reason."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from natbench.campaign import parse_campaign
from natbench.campaign.schema import TestbedSpec
from natbench.campaign.sweep import MAX_POINTS, _short, points_limit
from natbench.cli.group import MAX_LINE_CHARS, printable, writable_directory
from natbench.config.source import parse_yaml
from natbench.errors import ConfigError
from natbench.values import MAX_WAIT_SECONDS, MIN_MONITOR_INTERVAL

ROOT = Path(__file__).resolve().parent.parent

CAMPAIGN = """schema_version: 1
name: bounds
testbed:
  tester: {kind: software}
  duts:
    - name: nat
      recipe: iptables-nat44
      access: {kind: lab}
traffic:
  family: nat44
  src_ports: 1-100
  dst_ports: 1-10
  frame_sizes: [64, 128]
sweep:
  product:
    cores: [1, 2, 3, 4, 5]
    src_ports: [100, 200, 300]
metrics:
  cps: {upper: 100k, error: 1k}
"""


def natbench(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**{k: v for k, v in os.environ.items() if not k.startswith("NATBENCH_")}, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "natbench", *args], capture_output=True, text=True, cwd=ROOT, env=full, timeout=120
    )


# -- the working-point cap -----------------------------------------------------------------------------------


def test_the_number_of_points_is_capped_before_expansion_and_the_cap_can_be_raised() -> None:
    assert len(parse_campaign(CAMPAIGN, "c.yaml").points()) == 30  # 2 frame sizes x 5 cores x 3 port ranges
    with points_limit(29), pytest.raises(ConfigError) as info:
        parse_campaign(CAMPAIGN, "c.yaml")
    assert str(info.value) == (
        "c.yaml:14: sweep: expands to 30 working points (2 x 5 x 3), more than the limit of 29: sweep fewer values, "
        "or give --max-points N for a deliberate giant"
    )
    with points_limit(30):
        assert len(parse_campaign(CAMPAIGN, "c.yaml").points()) == 30
    assert MAX_POINTS == 10_000


def test_max_points_flag_of_validate() -> None:
    ok = natbench("validate", "--max-points", "3", "campaigns/quickstart.yaml")
    assert ok.returncode == 0 and ok.stdout.startswith("OK campaigns/quickstart.yaml: 3 working points")


# -- YAML 1.1 numbers ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: {b: [64, 0100]}", "f.yaml:1: a.b[1]: 0100 is a YAML 1.1 octal number (read as 64)"),
        ("r: 1:30", "f.yaml:1: r: 1:30 is a YAML 1.1 base-60 number (read as 90)"),
        ("t: -1:00:00.5", "f.yaml:1: t: -1:00:00.5 is a YAML 1.1 base-60 number (read as -3600.5)"),
        ("x:\n  - 00", "f.yaml:2: x[0]: 00 is a YAML 1.1 octal number (read as 0)"),
    ],
)
def test_yaml_11_octal_and_base_60_numbers_are_refused_saying_what_was_written(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_yaml(text, "f.yaml")
    assert str(info.value).startswith(message)


def test_other_numbers_and_quoted_text_stay_as_they_are() -> None:
    text = "a: '0100'\nb: 0x10\nc: 0\nd: 100\ne: 00:11:22:33:44:55\nf: 1.5\ng: '1:30'\nh: 2001:db8::1"
    assert parse_yaml(text, "f")[0] == {
        "a": "0100", "b": 16, "c": 0, "d": 100, "e": "00:11:22:33:44:55", "f": 1.5, "g": "1:30", "h": "2001:db8::1",
    }  # fmt: skip


# -- secrets, control characters, line length -------------------------------------------------------------------


def test_a_value_from_the_environment_is_named_not_printed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NATBENCH_TEST_SECRET", "s3cret-value")
    text = CAMPAIGN.replace(
        "      access: {kind: lab}\n",
        "      access: {kind: lab}\n      params: {private_if: '-${NATBENCH_TEST_SECRET}'}\n",
    )
    from natbench.campaign.recipes import check_recipes

    with pytest.raises(ConfigError) as info:
        check_recipes(parse_campaign(text, "c.yaml"))
    assert "s3cret-value" in str(info.value)  # the message itself holds the value ...
    shown = printable(str(info.value))
    assert "s3cret-value" not in shown and "'-${NATBENCH_TEST_SECRET}'" in shown  # ... printing names the variable


def test_plan_names_the_variable_of_a_parameter_from_the_environment() -> None:
    proc = natbench(
        "plan", "--no-recipes", "--format", "plain", "tests/data/hostile/campaigns/plan-secret.yaml",
        env={"NATBENCH_PLAN_SECRET": "hunter2-in-the-plan"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "hunter2" not in proc.stdout + proc.stderr
    assert "rule_comment=${NATBENCH_PLAN_SECRET}" in proc.stdout
    assert "\x1b" not in proc.stdout and "snat_address=addr\\x1b[31m" in proc.stdout  # an escape sequence, escaped


def test_printable_escapes_controls_and_cuts_long_lines() -> None:
    assert printable("a\nb\x1b[31mc\x9bd\u202ee\x00") == "a\\x0ab\\x1b[31mc\\x9bd\\u202ee\\x00"
    long = printable("x" * 50_000)
    assert len(long) < MAX_LINE_CHARS + 40 and long.endswith("... (49,000 more characters)")


def test_label_parts_from_values_are_printable_and_short() -> None:
    assert _short("a\x1b[31m b") == "a_[31m_b"
    one, two = _short("v" * 100 + "1"), _short("v" * 100 + "2")
    assert len(one) == 32 and one != two


# -- settings and their CLI twins -------------------------------------------------------------------------------


def test_monitor_interval_has_the_range_of_run_monitor() -> None:
    from natbench.cli.run import run_command

    (option,) = [p for p in run_command.params if p.name == "monitor_interval"]
    assert (option.type.min, option.type.max) == (MIN_MONITOR_INTERVAL, MAX_WAIT_SECONDS)  # type: ignore[attr-defined]
    base = {"tester": {"kind": "software"}, "duts": [{"name": "n", "recipe": "r", "access": {"kind": "lab"}}]}
    assert TestbedSpec.model_validate({**base, "monitor_interval": MIN_MONITOR_INTERVAL}).monitor_interval == 0.05
    for bad in (1e-9, 0.049, MAX_WAIT_SECONDS * 2):
        with pytest.raises(ValidationError):
            TestbedSpec.model_validate({**base, "monitor_interval": bad})


# -- the recipe search order ---------------------------------------------------------------------------------


def test_shipped_recipes_win_over_the_working_directory_unless_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from natbench.duts.recipes import load_recipe, shadowed_recipes

    local = tmp_path / "dut_recipes"
    local.mkdir()
    own = "recipe: {name}\ndescription: mine\nfamily: forwarding\nstateful: false\nsteps:\n  setup: [ip link]\n"
    (local / "iptables-nat44.yaml").write_text(own.format(name="iptables-nat44"))
    (local / "mine.yaml").write_text(own.format(name="mine"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NATBENCH_RECIPES", raising=False)
    assert load_recipe("iptables-nat44").description != "mine"
    assert load_recipe("mine").description == "mine"  # a name natbench does not ship is found there
    assert list(shadowed_recipes()) == ["iptables-nat44"]
    assert load_recipe("./dut_recipes/iptables-nat44.yaml").description == "mine"  # named as a file
    monkeypatch.setenv("NATBENCH_RECIPES", str(local))
    assert load_recipe("iptables-nat44").description == "mine"  # the directory named explicitly
    assert shadowed_recipes() == {}


# -- output directories checked first ------------------------------------------------------------------------


def test_writable_directory_refuses_without_creating_anything(tmp_path: Path) -> None:
    afile = tmp_path / "file"
    afile.write_text("x")
    for bad, reason in ((afile, "is not a directory"), (afile / "sub", "not a directory"), (Path("/proc/nb"), "")):
        with pytest.raises(ConfigError) as info:
            writable_directory(bad, "--out", "the report")
        assert str(info.value).startswith(f"--out: cannot write the report into {bad}")
        assert reason in str(info.value).lower()
    writable_directory(tmp_path / "new" / "deeper", "--out", "the report")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # neither the directory nor the probe is left


# -- lab tests skip with their reason ----------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="the PATH check comes after the root check")
def test_a_lab_program_installed_off_path_skips_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    from system_needs import unmet

    if unmet("lab") is not None:
        pytest.skip(f"the lab's programs are missing here anyway: {unmet('lab')}")
    monkeypatch.setenv("PATH", "/nonexistent")
    reason = unmet("lab")
    assert reason is not None and "nft" in reason and "on PATH" in reason


def test_the_lab_and_dut_settings_have_the_ranges_of_their_cli_twins() -> None:
    from natbench.campaign.schema import DutSpec
    from natbench.cli.lab import lab
    from natbench.cli.recipes import render
    from natbench.testbed.lab.access import LabAccess
    from natbench.values import MAX_CORES

    def bounds(model: type, name: str) -> tuple[float, float]:
        info = model.model_fields[name]
        low = next(m.ge for m in info.metadata if hasattr(m, "ge"))
        high = next(m.le for m in info.metadata if hasattr(m, "le"))
        return low, high

    up = lab.commands["up"]  # type: ignore[attr-defined]
    options = {p.name: p.type for p in up.params}
    assert (options["vcpus"].min, options["vcpus"].max) == bounds(LabAccess, "vcpus")
    assert (options["memory"].min, options["memory"].max) == bounds(LabAccess, "memory")
    (cores,) = [p for p in render.params if p.name == "cores"]
    assert (cores.type.min, cores.type.max) == bounds(DutSpec, "cores") == (1, MAX_CORES)  # type: ignore[attr-defined]


def test_recipes_validate_prints_one_line_per_recipe() -> None:
    proc = natbench("recipes", "validate", "iptables-nat44", "tests/data/hostile/recipes/shell-eval.yaml")
    assert proc.returncode == 2
    assert proc.stdout == "OK iptables-nat44: recipe iptables-nat44, 20 parameter(s), 70 command(s)\n"
    assert proc.stderr.startswith("natbench: error: tests/data/hostile/recipes/shell-eval.yaml:13: steps.setup[0].run:")


# -- issue 43: environment variables holding paths, standard output that fails ----------------------------------


@pytest.mark.parametrize(
    ("variable", "args"),
    [
        ("NATBENCH_RECIPES", ["validate", "campaigns/quickstart.yaml"]),
        ("NATBENCH_RECIPES", ["recipes", "list"]),
        ("NATBENCH_IMAGE_CACHE", ["lab", "image", "list"]),
        ("NATBENCH_LAB_STATE", ["lab", "status"]),
    ],
)
def test_a_path_variable_longer_than_path_max_is_one_line_naming_it(variable: str, args: list[str]) -> None:
    """NATBENCH_RECIPES of 10,000 characters gave a traceback and a 10,042-character line: now one line naming the
    variable and the limit, never the value."""
    proc = natbench(*args, env={variable: "a" * 10_000})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr == (
        f"natbench: error: environment variable {variable}: is 10,000 bytes long: more than PATH_MAX allows"
        " (4,095 bytes): not a directory name\n"
    )


def test_a_path_variable_at_its_limits_is_taken() -> None:
    """An entry of 4,095 bytes with components of 255 is a name the kernel takes: no refusal (the directory does not
    exist, so the shipped recipes answer)."""
    longest = "/".join(["d" * 255] * 16)[:4095]
    proc = natbench("validate", "campaigns/quickstart.yaml", env={"NATBENCH_RECIPES": longest})
    assert proc.returncode == 0, proc.stderr


def _with_stdout(stdout: object, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "natbench", *args],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "campaigns/quickstart.yaml"],
        ["plan", "campaigns/quickstart.yaml"],
        ["report", "tests/data/damaged-runs/base", "--format", "text", "--out", "-"],
        ["--help"],
    ],
)
def test_stdout_on_dev_full_is_one_line_and_exit_1(args: list[str]) -> None:
    """Standard output on /dev/full (a traceback before): one line on stderr, exit 1, nothing more."""
    with open("/dev/full", "w") as full:
        proc = _with_stdout(full, *args)
    assert (proc.returncode, proc.stderr) == (
        1,
        "natbench: error: cannot write to standard output: No space left on device\n",
    )


def test_a_closed_stdout_is_named_and_a_broken_pipe_ends_quietly() -> None:
    """``>&-``: Python has no sys.stdout, and the output would vanish with exit 0: one line and exit 1. A reader
    that stops early (``| head -1``): exit 141, as a shell reports SIGPIPE, and no message."""
    proc = subprocess.run(  # started with descriptor 1 closed (the shell's >&-): Python has no sys.stdout
        [sys.executable, "-m", "natbench", "validate", "campaigns/quickstart.yaml"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert (proc.returncode, proc.stderr) == (1, "natbench: error: cannot write to standard output: it is closed\n")
    # a reader that has gone before the first write (as ``| head -1`` is gone before a long report's later writes):
    # the write meets a pipe without a reader, however small the output and however busy the machine
    reader = subprocess.Popen(["true"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    assert reader.stdin is not None
    reader.wait()
    proc = _with_stdout(reader.stdin, "report", "tests/data/damaged-runs/base", "--format", "text", "--out", "-")
    reader.stdin.close()
    assert (proc.returncode, proc.stderr) == (141, "")


def test_stderr_on_dev_full_keeps_the_exit_status_of_the_error() -> None:
    """An error that cannot be said (stderr on /dev/full) still ends with its own exit status, no traceback."""
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "natbench", "validate", "no-such-campaign.yaml"],
            stdout=subprocess.PIPE,
            stderr=full,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
    assert proc.returncode == 2 and proc.stdout == ""


def test_a_negative_number_after_a_number_option_is_a_value() -> None:
    """The option-like check spares numbers: ``--monitor -1`` is refused by its range, not as an option."""
    proc = natbench("run", "--monitor", "-1", "campaigns/quickstart.yaml")
    assert proc.returncode == 2 and "--monitor: -1.0 is not in the range" in proc.stderr
