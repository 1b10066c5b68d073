"""``natbench validate FILE...``: check campaign files; one line per file, exit 2 if any is bad."""

from __future__ import annotations

import click

from natbench.campaign import check_recipes, estimate, load_campaign
from natbench.campaign.estimate import format_duration
from natbench.cli.group import cli, one_line
from natbench.errors import ConfigError

__all__ = ["validate"]


@cli.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--no-recipes", is_flag=True, help="Do not check DUT recipes and their parameters.")
def validate(files: tuple[str, ...], no_recipes: bool) -> None:
    """Validate campaign FILES: schema, sweep, recipes.

    Prints one OK line per good file and one error line (file:line: field: message)
    per bad file; exits 2 if any file is bad.
    """
    bad = 0
    for path in files:
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
            click.echo(f"natbench: error: {one_line(str(exc))}", err=True)
            continue
        est = estimate(campaign)
        click.echo(
            f"OK {path}: {len(est.points)} working points, {est.trials} trials, "
            f"~{format_duration(est.seconds)}; {recipes}"
        )
        for warning in warnings:
            click.echo(f"natbench: warning: {path}: {warning}", err=True)
    if bad:
        # SystemExit, not click's Exit: natbench.cli.main runs click with standalone_mode=False,
        # where click turns Exit into a return value that main does not pass on.
        raise SystemExit(2)
