"""``natbench plan FILE``: the working points of a campaign, its trials and an estimated duration.

The plan itself is a core object (:class:`natbench.campaign.planview.PlanView`); this command reads the arguments,
builds it and prints it as a rich table, plain text or JSON.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from natbench.campaign import load_campaign
from natbench.campaign.planview import PlanView
from natbench.cli.group import cli, max_points_option, printable
from natbench.errors import ConfigError, StoreError

VALUE_CHARS = 80
"""Longest cell of the working-point table shown (the rest is cut and counted)."""


def _plain_table(header: tuple[str, ...], rows: tuple[tuple[str, ...], ...]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header).rstrip(), fmt.format(*["-" * w for w in widths]).rstrip()]
    out += [fmt.format(*r).rstrip() for r in rows]
    return "\n".join(out)


def _redacted(data: Any) -> Any:
    """JSON data with every string's ``${NATBENCH_*}`` values named instead of shown (JSON escapes control
    characters itself)."""
    if isinstance(data, str):
        from natbench.config.source import redact_substituted

        return redact_substituted(data)
    if isinstance(data, dict):
        return {k: _redacted(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_redacted(v) for v in data]
    return data


def _measured(from_run: str | None, allow_damaged: bool) -> dict[str, Any]:
    """What an earlier run measured (``--from``), as :meth:`PlanView.build` takes it: the memory per connection and
    the delete-all's rate and noise. A directory that is no run is a ConfigError; a damaged one is refused as
    ``natbench report`` refuses it (its damage on stderr, exit 2) unless ``allow_damaged``."""
    if from_run is None:
        return {}
    from natbench.cli.damage import check_damage  # pandas only when --from is given
    from natbench.report.deletion import measured_deletion
    from natbench.report.load import Run, measured_per_connection

    try:
        run = Run(from_run)
    except StoreError as exc:
        raise ConfigError(str(exc), field="--from") from None
    check_damage([("run", run)], allow_damaged, "nothing was planned from it")
    measured, source = measured_per_connection(run)
    deletion, _ = measured_deletion(run)  # None: the seeds' figures per recipe
    return {"measured": measured, "measured_source": source, "deletion": deletion}


@cli.command("plan")
@click.argument("file", type=click.Path(path_type=str))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["auto", "rich", "plain", "json"]),
    default="auto",
    show_default=True,
    help="auto: a rich table on a terminal, plain text otherwise.",
)
@click.option("--no-recipes", is_flag=True, help="Do not check DUT recipes and their parameters.")
@click.option(
    "--from",
    "from_run",
    type=click.Path(file_okay=False, path_type=str),
    default=None,
    help="An earlier run directory whose measured memory per connection checks that the connections fit.",
)
@click.option("--allow-damaged", is_flag=True, help="With --from: use the intact records of a damaged run directory.")
@max_points_option
def plan(file: str, fmt: str, no_recipes: bool, from_run: str | None, allow_damaged: bool) -> None:
    """Show the working points of campaign FILE, the number of trials and an estimated duration.

    The estimate counts binary-search steps, ceil(log2((upper - lower) / error)), and
    per step the phase-1 time N / rate plus timeouts, gap and phase-2 duration
    (see natbench.campaign.estimate for the model). Each point's connections are checked against the DUTs'
    memory (duts[].memory, duts[].bytes_per_connection or --from RUN): a warning per point that may not fit; and
    each tear-down point's connections against what the DUT's delete-all can time (the seeds' figures per recipe, or
    what RUN measured): a warning per point likely too few to time.
    """
    campaign = load_campaign(file)
    view = PlanView.build(campaign, recipes=not no_recipes, **_measured(from_run, allow_damaged))
    for warning in view.warnings:
        click.echo(printable(f"natbench: warning: {file}: {warning}"), err=True)
    saving = view.algorithms.line() if view.algorithms is not None else None
    if fmt == "json":
        click.echo(json.dumps(_redacted(view.to_dict()), indent=2, default=str))
        return
    # a user's text: escape sequences and other control characters escaped, secrets from ${NATBENCH_*} named
    facts = [printable(line) for line in view.facts]
    header = tuple(printable(cell, VALUE_CHARS) for cell in view.header)
    rows = tuple(tuple(printable(cell, VALUE_CHARS) for cell in r) for r in view.rows)
    notes = [printable(note) for note in view.notes]
    if fmt == "rich" or (fmt == "auto" and sys.stdout.isatty()):
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        console = Console()
        for line in facts:
            console.print(line, highlight=False, markup=False)
        table = Table(*header, title=printable(f"working points of {campaign.name}"))
        for r in rows:
            table.add_row(*(Text(cell) for cell in r))  # Text: a value's [brackets] are no rich markup
        console.print(table)
        console.print(view.total, highlight=False, markup=False)
        if saving:
            console.print(saving, highlight=False, markup=False)
        for note in notes:
            console.print(f"  ({note})", highlight=False, markup=False)
        return
    click.echo("\n".join(facts))
    click.echo("")
    click.echo(_plain_table(header, rows))
    click.echo("")
    click.echo(view.total)
    if saving:
        click.echo(saving)
    for note in notes:
        click.echo(f"  ({note})")
