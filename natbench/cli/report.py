"""``natbench report RUN_DIR``: seed-style tables, plots and a self-contained HTML report."""

from __future__ import annotations

from pathlib import Path

import click

from natbench.cli.group import cli, writable_directory
from natbench.errors import ConfigError

FORMATS = ("text", "md", "tex", "csv", "html")


@cli.command("report")
@click.argument("run_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--format",
    "formats",
    type=click.Choice(FORMATS),
    multiple=True,
    help="Output format; repeat for several. Default: text (printed) and html.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Directory for the files (default RUN_DIR/report); '-' prints the tables to stdout only.",
)
@click.option(
    "--scale",
    type=click.Choice(["1", "k", "M"]),
    default="1",
    show_default=True,
    help="Unit of rates in the tables: 1, k (1,000) or M (1,000,000); errors stay in plain units.",
)
@click.option(
    "--baseline",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Run directory of the plain-forwarding campaign (stateless DUT): its forwarding results become the"
    " baseline block and the throughput ratio (%) row, matched by cores, port ranges and frame size.",
)
@click.option(
    "--allow-damaged",
    is_flag=True,
    help="Report a damaged run directory from its intact records (the damage is still listed on stderr).",
)
def report(
    run_dir: Path, formats: tuple[str, ...], out: Path | None, scale: str, baseline: Path | None, allow_damaged: bool
) -> None:
    """Write the tables of RUN_DIR (text, Markdown, LaTeX, CSV) and an HTML report with plots.

    Text tables are also printed. Throughput is shown as all frames per second of
    bidirectional traffic (the engine stores per-direction rates), as in the seed documents.
    With --baseline OTHER_RUN the forwarding baseline measured in another run is shown
    beside the throughput, with the ratio row (seed 000 Figure 2).
    A damaged run directory (records missing, duplicated, torn or altered) is refused with the
    list of damage on stderr (exit 2) unless --allow-damaged.
    """
    from natbench.cli.damage import check_damage, status_notes
    from natbench.report.load import Run
    from natbench.report.output import check_report_dir, write_report

    run = Run(run_dir)  # not load(): the damage is listed below, not as a Python warning
    base = Run(baseline) if baseline is not None else None
    check_damage((("run", run), ("baseline run", base)), allow_damaged, "nothing was written")
    if base is not None:  # matched once both are known to be intact (or their damage accepted)
        run.attach_baseline(base)
    fmts = formats or ("text", "html")
    if out is not None and str(out) == "-":
        if "html" in fmts:
            raise click.UsageError("--format html needs a directory: use --out DIR")
        for t in run.tables(scale):
            for f in fmts:
                click.echo(t.render(f))
        return
    target = out if out is not None else run.path / "report"
    option = "--out" if out is not None else None
    check_report_dir(target, option)  # before any table is printed: never written through a link
    writable_directory(target, "--out", "the report")
    if "text" in fmts:
        for t in run.tables(scale):
            click.echo(t.to_text())
    status_notes((("run", run), ("baseline run", run.baseline)))
    try:
        written = write_report(run, target, fmts, scale=scale, option=option)
    except OSError as exc:  # the disk filled up, or the directory changed since it was checked
        raise ConfigError(f"cannot write the report into {target}: {exc.strerror or exc}", field="--out") from None
    for path in written:
        click.echo(f"wrote {path}", err=True)
