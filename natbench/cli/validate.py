"""``natbench validate FILE...``: check campaign files; one line per file, exit 2 if any is bad."""

from __future__ import annotations

import click

from natbench.campaign import load_campaign
from natbench.campaign.estimate import estimate, format_duration
from natbench.campaign.feasibility import memory_check
from natbench.campaign.recipes import check_recipes
from natbench.campaign.teardown_check import teardown_check
from natbench.cli.group import cli, max_points_option, printable
from natbench.errors import ConfigError


@cli.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--no-recipes", is_flag=True, help="Do not check DUT recipes and their parameters.")
@click.option(
    "--testbed",
    "testbeds",
    is_flag=True,
    help="FILES are testbed files (a campaign's testbed section on its own, as pytest --nb-testbed reads).",
)
@max_points_option
def validate(files: tuple[str, ...], no_recipes: bool, testbeds: bool) -> None:
    """Validate campaign FILES: schema, sweep, recipes (with --testbed: testbed files).

    Prints one OK line per good file and one error line (file:line: field: message)
    per bad file; exits 2 if any file is bad. Warns (stderr) where a point's connections may not fit the DUT's
    memory or its tear-down is likely too few connections to time (the seeds' deletion figures for its recipe).
    """
    bad = 0
    for path in files:
        if testbeds:
            bad += _validate_testbed(path)
            continue
        try:
            campaign = load_campaign(path)
            warnings: tuple[str, ...] = ()
            if no_recipes:
                recipes = "recipes not checked (--no-recipes)"
            else:
                check = check_recipes(campaign)
                recipes, warnings = check.detail, check.warnings
        except ConfigError as exc:
            bad += 1
            click.echo(f"natbench: error: {printable(str(exc))}", err=True)
            continue
        est = estimate(campaign)
        click.echo(
            f"OK {printable(path)}: {len(est.points)} working points, {est.trials} trials, "
            f"~{format_duration(est.seconds)}; {recipes}"
        )
        for warning in (*warnings, *memory_check(campaign).warnings, *teardown_check(campaign).warnings):
            click.echo(printable(f"natbench: warning: {path}: {warning}"), err=True)
    if bad:
        # SystemExit, not click's Exit: natbench.cli.main runs click with standalone_mode=False,
        # where click turns Exit into a return value that main does not pass on.
        raise SystemExit(2)


def _validate_testbed(path: str) -> int:
    """Check one testbed file; print its OK or error line; 1 when it is bad."""
    from natbench.testbed.file import load_testbed

    try:
        testbed = load_testbed(path)
    except ConfigError as exc:
        click.echo(f"natbench: error: {printable(str(exc))}", err=True)
        return 1
    if testbed.missing_env:
        click.echo(
            f"OK {printable(path)}: needs environment variable(s) {', '.join(testbed.missing_env)} to be checked"
        )
    else:
        click.echo(f"OK {printable(path)}: tester {testbed.tester_kind}, {len(testbed.testbed.get('duts', []))} DUT(s)")
    return 0
