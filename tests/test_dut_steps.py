"""The step engine of a recipe DUT (natbench.duts.steps, natbench.duts.batch, natbench.duts.facts): where a command's
time limit comes from, a batch script's output read back per command, and the facts a recipe DUT reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from natbench.duts.batch import batch_script, batch_token, read_batch
from natbench.duts.executors import LocalExecutor
from natbench.duts.facts import recipe_dut_facts
from natbench.duts.recipe_dut import RecipeDut
from natbench.duts.recipes import Command, parse_recipe
from natbench.duts.steps import CommandRecord, StepResult, TimeLimits
from natbench.plugins import CommandResult

RECIPE = """
recipe: limits
params:
  dir: {type: str, required: true}
steps:
  setup:
    - run: echo one >> {{ dir }}/log
      timeout: 5
    - echo two >> {{ dir }}/log
    - echo three >> {{ dir }}/log
  teardown:
    - echo four >> {{ dir }}/log
"""


def command(timeout: float | None) -> Command:
    return Command(run="true", timeout=timeout)


def test_a_commands_time_limit_is_its_declared_timeout_else_the_executors() -> None:
    limits = TimeLimits()
    assert limits.command(command(7.5)) == 7.5
    assert limits.command(command(None)) is None  # the executor's command timeout


def test_a_batch_allows_the_sum_of_its_commands_limits_and_a_share_for_each_without_one() -> None:
    limits = TimeLimits()
    assert limits.batch([command(None), command(None)]) is None  # none declared: the executor's command timeout
    assert limits.batch([command(5.0), command(None), command(None)]) == 5.0 + 2 * 60.0
    assert limits.batch([command(5.0), command(2.5)]) == 7.5  # all declared: no share added
    assert TimeLimits(batch_share=10.0).batch([command(5.0), command(None)]) == 15.0


class RecordingExecutor(LocalExecutor):
    """A local executor that remembers the time limit each run was given."""

    def __init__(self) -> None:
        super().__init__()
        self.limits: list[float | None] = []

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        self.limits.append(timeout)
        return super().run(command, timeout=timeout, check=check)


@dataclass(frozen=True)
class Doubled(TimeLimits):
    """Limits of another rule: twice the declared timeout, 1 s for a command declaring none."""

    def command(self, command: Command) -> float | None:
        return 2 * command.timeout if command.timeout is not None else 1.0


@pytest.mark.parametrize("batch", [True, False], ids=["one-script-per-step", "one-call-per-command"])
def test_every_command_runs_with_the_limit_its_dut_time_limits_give(tmp_path: Path, batch: bool) -> None:
    executor = RecordingExecutor()
    dut = RecipeDut("d", parse_recipe(RECIPE, "limits.yaml"), executor, {"dir": str(tmp_path)}, batch=batch)
    dut.run_step("setup")
    assert executor.limits == ([5.0 + 2 * 60.0] if batch else [5.0, None, None])
    executor.limits.clear()
    dut.time_limits = Doubled()  # the one place a step's time limit is decided
    dut.run_step("setup")
    assert executor.limits == ([10.0 + 1.0 + 1.0] if batch else [10.0, 1.0, 1.0])
    assert (tmp_path / "log").read_text().split() == ["one", "two", "three"] * 2


def test_a_batch_script_gives_each_commands_output_and_stops_after_a_failure_that_counts() -> None:
    token = batch_token()
    commands = [
        ("echo out0; echo err0 >&2", True),
        ("echo out1; exit 3", False),  # may fail: the script goes on
        ("echo out2; echo err2 >&2; exit 4", True),  # must not fail: the script stops here
        ("echo never", True),
    ]
    res = LocalExecutor().run(batch_script(token, commands))
    output = read_batch(res.stdout, res.stderr, token)
    assert output.stdout == {0: ("out0\n", 0), 1: ("out1\n", 3), 2: ("out2\n", 4)}  # each as it printed it
    assert output.stderr == {0: "err0\n", 1: "", 2: "err2\n"}
    assert 3 not in output.stdout and res.returncode == 0  # not reached; the script itself ends well


def test_a_command_printing_the_marker_text_of_another_token_does_not_confuse_the_reading() -> None:
    token, other = batch_token(), batch_token()
    assert token != other
    res = LocalExecutor().run(batch_script(token, [(f"echo '{other} x 0 9'", True), ("printf 'a\\nb'", True)]))
    assert read_batch(res.stdout, res.stderr, token).stdout == {0: (f"{other} x 0 9\n", 0), 1: ("a\nb", 0)}


FACTS_RECIPE = """
recipe: facts
implementation: test
params:
  where: {type: str, default: lab}
steps:
  setup: []
  teardown: []
  set_cores:
    unsupported: no CPU hotplug here
"""


def test_the_facts_name_the_recipe_its_parameters_and_what_the_dut_said() -> None:
    recipe = parse_recipe(FACTS_RECIPE, "facts.yaml")
    measured = StepResult(
        "facts",
        [
            CommandRecord("k", 0, 0.1, value={"kernel": "6.1", "hz": 250}),
            CommandRecord("n", 0, 0.1, value=12, source=Command(run="echo 12", **{"as": "twelve"})),
            CommandRecord("x", 0, 0.1, value=None, source=Command(run="false", **{"as": "broken"})),
            CommandRecord("s", 0, 0.1, value="not a dict, no key"),
        ],
    )
    params: dict[str, Any] = {"where": "lab", "path": Path("/tmp/x"), "n": 3}
    facts = recipe_dut_facts(
        recipe, "netns nb", params, measured, cores={"cores_active": 2}, place={"vcpus": 4}, warnings=["w1"]
    )
    assert facts == {
        "recipe": "facts",
        "implementation": "test",
        "access": "netns nb",
        "params": {"where": "lab", "path": "/tmp/x", "n": 3},  # a value that is no plain type is kept as text
        "kernel": "6.1",
        "hz": 250,
        "twelve": 12,
        "cores_active": 2,
        "vcpus": 4,
        "cores_unsupported": "no CPU hotplug here",
        "warnings": ["w1"],
    }
    bare = recipe_dut_facts(recipe, "local", {}, None, cores={}, place={}, warnings=[])
    assert "warnings" not in bare and bare["params"] == {} and bare["cores_unsupported"] == "no CPU hotplug here"
