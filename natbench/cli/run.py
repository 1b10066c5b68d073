"""``natbench run FILE`` and ``natbench run --resume RUN_DIR``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from natbench.campaign import load_campaign
from natbench.cli.group import NumberRange, cli, max_points_option, printable, writable_directory
from natbench.errors import ConfigError, NatbenchError, StoreError
from natbench.run.format import TRIALS
from natbench.run.observers import LoggingObserver, Observer, PlainProgress, RichProgress
from natbench.run.reader import RunDirectory
from natbench.run.records import Scan
from natbench.run.runner import RunInterrupted, default_run_dir, resume_campaign, run_campaign
from natbench.values import MAX_WAIT_SECONDS, MIN_MONITOR_INTERVAL


@cli.command("run")
@click.argument("campaign_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Continue the run in RUN_DIR where it stopped (finished repetitions are kept, a cut-off one restarts;"
    " a damaged RUN_DIR stops with the list of damage unless --repair).",
)
@click.option(
    "--repair",
    is_flag=True,
    help="With --resume: accept a damaged trials.jsonl (kept as trials.damaged-TIME.jsonl) and measure the"
    " repetitions the damage touched again.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run directory (default: the campaign's output, or a time-stamped sibling when that exists).",
)
@click.option("--parquet/--no-parquet", default=True, show_default=True, help="Export trials.parquet at the end.")
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Live progress display (default: when stderr is a tty; otherwise plain progress lines).",
)
@click.option(
    "--monitor",
    "monitor_interval",
    type=NumberRange(min=MIN_MONITOR_INTERVAL, max=MAX_WAIT_SECONDS),
    default=None,
    help="Sample every DUT's per-core CPU idle time every SECONDS during each traffic trial (stored with it).",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Log run events to stderr (-v results and the DUT commands whose time grows with the table, with their time"
    " and limit; -vv every trial).",
)
@click.option(
    "--scheduler",
    default=None,
    metavar="ADDR",
    help="Measure on the testbeds of the campaign's testbed.class served by `natbench worker`s of the Dask"
    " scheduler at ADDR (tcp://127.0.0.1:8786, tls://...); see docs/distributed.md.",
)
@click.option(
    "--connect-timeout",
    type=NumberRange(min=0.1),
    default=10.0,
    show_default=True,
    help="With --scheduler: give up reaching the scheduler after SECONDS.",
)
@max_points_option
def run_command(
    campaign_file: Path | None,
    resume_dir: Path | None,
    repair: bool,
    output: Path | None,
    parquet: bool,
    progress: bool | None,
    monitor_interval: float | None,
    verbose: int,
    scheduler: str | None,
    connect_timeout: float,
) -> None:
    """Run a campaign (FILE), or resume an interrupted run (--resume RUN_DIR)."""
    if (campaign_file is None) == (resume_dir is None):
        raise click.UsageError("give either a campaign FILE or --resume RUN_DIR (exactly one)")
    if repair and resume_dir is None:
        raise click.UsageError("--repair goes with --resume RUN_DIR")
    if resume_dir is not None and output is not None:
        raise click.UsageError("--output cannot be used with --resume (the run stays in RUN_DIR)")
    if campaign_file is not None and not campaign_file.is_file():
        raise click.UsageError(f"campaign file {campaign_file} does not exist")
    observers: list[Observer] = []
    if verbose:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger = logging.getLogger("natbench.run")
        logger.addHandler(handler)
        logger.setLevel(logging.DEBUG if verbose > 1 else logging.INFO)
        observers.append(LoggingObserver(logger))
        steps = logging.getLogger("natbench.duts.steps")  # each table-sized command's time and limit (INFO)
        steps.addHandler(handler)
        steps.setLevel(logging.INFO)
    if progress if progress is not None else sys.stderr.isatty():
        observers.append(RichProgress())
    elif progress is None and not verbose:  # a pipe or a log file: the same progress as plain lines
        observers.append(PlainProgress(lambda line: click.echo(line, err=True)))
    if campaign_file is not None:
        where = output or default_run_dir(load_campaign(campaign_file))  # ConfigError: one line, exit 2
    else:
        assert resume_dir is not None
        existing = RunDirectory.open(resume_dir)  # StoreError: one line, exit 2
        existing.check_resumable()
        found = existing.check_resume(repair)  # damage without --repair: the list of it, exit 2, nothing measured
        for note in found.notes:
            click.echo(f"natbench: note: {note}", err=True)
        if found.damage:
            _announce_repair(existing, found)
        where = existing.path
    writable_directory(where, "--output", "the run")  # before a testbed is built or anything measured
    click.echo(f"natbench: run directory {printable(str(where))}", err=True)
    if scheduler is not None and monitor_interval:
        raise click.UsageError("with --scheduler, --monitor goes in the workers' testbed files (monitor_interval)")
    try:
        if scheduler is not None:
            run = _run_distributed(scheduler, campaign_file, resume_dir, where, observers, repair, connect_timeout)
        elif resume_dir is not None:
            run = resume_campaign(resume_dir, observers=observers, monitor_interval=monitor_interval, repair=repair)
        else:
            assert campaign_file is not None
            run = run_campaign(campaign_file, where, observers=observers, monitor_interval=monitor_interval)
    except (KeyboardInterrupt, RunInterrupted, NatbenchError) as exc:
        if (where / TRIALS).exists() and not isinstance(exc, ConfigError | StoreError):
            click.echo(f"natbench: the run can be resumed: natbench run --resume {where}", err=True)
        raise
    if parquet:
        run.export_parquet()
    _print_report(run.path)
    click.echo(f"run directory: {run.path} ({run.status}); full report: natbench report {run.path}")


def _run_distributed(
    scheduler: str,
    campaign_file: Path | None,
    resume_dir: Path | None,
    where: Path,
    observers: list[Observer],
    repair: bool,
    connect_timeout: float,
) -> RunDirectory:
    """``--scheduler``: the same run (or resume) on the scheduler's workers (natbench.run.distributed)."""
    try:
        from natbench.run import distributed
    except ImportError as exc:
        raise ConfigError(f"--scheduler needs Dask distributed ({exc}): pip install 'natbench[distributed]'") from None
    if resume_dir is not None:
        return distributed.resume_distributed(
            resume_dir, scheduler, observers=observers, repair=repair, connect_timeout=connect_timeout
        )
    assert campaign_file is not None
    return distributed.run_distributed(
        campaign_file, scheduler, where, observers=observers, connect_timeout=connect_timeout
    )


def _announce_repair(run: RunDirectory, found: Scan) -> None:
    """Say on stderr what --repair accepts and what it will measure again, before it does."""
    for d in found.damage:
        click.echo(f"natbench: damaged: {d}", err=True)
    labels = {p.id: p.label for p in run.points}
    click.echo(
        f"natbench: repair: {run.path / TRIALS} is copied to trials.damaged-<UTC time>.jsonl first;"
        f" {len(found.tainted)} finished or touched repetition(s) lose their records and are measured again",
        err=True,
    )
    for pid, metric, rep in sorted(found.tainted):
        click.echo(f"natbench: repair: re-measure {labels.get(pid, pid)} {metric} repetition {rep}", err=True)


def _print_report(run_dir: Path) -> None:
    """Print the seed-style text tables of a finished run (what `natbench report` prints first), then the report
    summary's key results and warnings (what the tables cannot show at a glance)."""
    from natbench.report.load import load
    from natbench.report.summary import summarize_run

    report = load(run_dir)
    for table in report.tables():
        click.echo(table.to_text())
    summary = summarize_run(report)
    for title, text in summary.key_results:
        click.echo(f"{title}: {text}")
    for warning in summary.warnings:
        click.echo(f"warning: {warning}")
