"""What `natbench report` and `natbench compare` say about the run directories they read: warnings, damage, status."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import click

from natbench.errors import StoreError
from natbench.report.load import Run


def check_damage(runs: Iterable[tuple[str, Run | None]], allow_damaged: bool, outcome: str) -> None:
    """Echo each run's warnings and damage on stderr (``natbench: damaged: file:line: what``) and, for a damaged
    run, how many repetitions the damage touched; StoreError (exit 2) naming every damaged run unless
    ``allow_damaged``. ``runs``: (what it is, e.g. "run" or "run A", the loaded run or None); ``outcome``: what
    was not done, for the error ("nothing was written")."""
    damaged: list[Path] = []
    for which, r in runs:
        if r is None:
            continue
        for w in r.warnings:  # always on stderr, whatever --out says
            click.echo(f"natbench: warning: {w}", err=True)
        for d in r.damage:
            click.echo(f"natbench: damaged: {d}", err=True)
        if r.damage:
            damaged.append(r.path)
            if allow_damaged:
                click.echo(
                    f"natbench: damaged: {which} {r.path}: {len(r.damaged_repetitions)} repetition(s) had damaged"
                    " records; only their intact records are used",
                    err=True,
                )
    if damaged and not allow_damaged:
        raise StoreError(
            f"{', '.join(map(str, damaged))}: damaged run directory (problems above): the tables would hold fewer or"
            f" more repetitions than were measured; {outcome}. `--allow-damaged` uses the intact records,"
            f" `natbench run --resume {damaged[0]} --repair` measures the damaged repetitions again"
        )


def status_notes(runs: Iterable[tuple[str, Run | None]]) -> None:
    """A note on stderr for each run whose status is not ``complete`` (killed, failed or still running)."""
    for which, r in runs:
        status = r.meta.status if r is not None else "complete"
        if status != "complete":
            click.echo(f"natbench: note: {which} status is {status!r}: the tables show what is stored so far", err=True)
