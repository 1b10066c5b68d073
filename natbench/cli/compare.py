"""``natbench compare RUN_A RUN_B``: the change per metric and working point, with thresholds."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from natbench.cli.group import cli


@cli.command("compare")
@click.argument("run_a", type=click.Path(file_okay=False, path_type=Path))
@click.argument("run_b", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--fail",
    "fail",
    multiple=True,
    metavar="STAT:AMOUNT[%]",
    help="Exit 1 when STAT (median|min|max) of B is worse than A by more than AMOUNT "
    "(percent of A, or absolute in the metric's unit), e.g. median:5%. Repeatable.",
)
@click.option("--metric", "metrics", multiple=True, help="Only these metrics (repeatable).")
@click.option(
    "--allow-damaged",
    is_flag=True,
    help="Compare damaged run directories from their intact records (the damage is still listed on stderr).",
)
def compare(run_a: Path, run_b: Path, fail: tuple[str, ...], metrics: tuple[str, ...], allow_damaged: bool) -> None:
    """Compare RUN_B against RUN_A: median / min / max change per metric and working point.

    Points are matched by their id (same resolved parameters); points measured in only one run are
    listed. "Worse" means lower for rates and higher for latency, PDV and frame loss.
    A damaged run directory (records missing, duplicated, torn or altered) is refused with the list of
    damage on stderr unless --allow-damaged; warnings and a status other than complete are noted on stderr.
    Exit status: 0 no threshold exceeded, 1 some threshold exceeded, 2 bad input or a damaged run directory.
    """
    from natbench.cli.damage import check_damage, status_notes
    from natbench.errors import StoreError
    from natbench.report.compare import compare_summaries, exceeded, parse_threshold
    from natbench.report.formatting import fmt_value
    from natbench.report.load import Run

    thresholds = [parse_threshold(s) for s in fail]
    a, b = Run(run_a), Run(run_b)  # not load(): the damage is listed below, not as a Python warning
    runs = (("run A", a), ("run B", b))
    check_damage(runs, allow_damaged, "nothing was compared")
    status_notes(runs)
    labels_a = {str(k): str(v) for k, v in a.points["label"].items()}
    labels_b = {str(k): str(v) for k, v in b.points["label"].items()}
    cmp = compare_summaries(a.summary, b.summary, labels_a, labels_b)
    if metrics:
        cmp = cmp[cmp["metric"].isin(metrics)]
    if cmp.empty:
        raise StoreError(f"nothing to compare: no repetition results in {run_a} or {run_b}")
    flagged = cmp["presence"] != cmp["presence"]  # all False
    reasons: dict[int, list[str]] = {}
    for th in thresholds:
        hit = exceeded(cmp, th)
        flagged |= hit
        for i in cmp.index[hit]:
            reasons.setdefault(i, []).append(str(th))
    header = ("metric", "point", "A median", "B median", "change", "A min..max", "B min..max", "")
    rows = [header]
    for i, r in cmp.iterrows():
        pct = r["median_pct"]
        change = "-" if r["presence"] != "both" or pct != pct else f"{pct:+.2f} %"
        note = r["presence"] if r["presence"] != "both" else ""
        if i in reasons:
            note = "EXCEEDS " + ", ".join(reasons[i])
        rows.append(
            (
                str(r["metric"]),
                str(r["label"]),
                fmt_value(r["median_a"]),
                fmt_value(r["median_b"]),
                change,
                f"{fmt_value(r['min_a'])}..{fmt_value(r['max_a'])}" if r["presence"] != "only B" else "-",
                f"{fmt_value(r['min_b'])}..{fmt_value(r['max_b'])}" if r["presence"] != "only A" else "-",
                note,
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(len(header))]
    for n, row in enumerate(rows):
        pairs = enumerate(zip(row, widths, strict=True))
        cells = [v.ljust(w) if c in (0, 1, 7) else v.rjust(w) for c, (v, w) in pairs]
        click.echo("  ".join(cells).rstrip())
        if n == 0:
            click.echo("  ".join("-" * w for w in widths))
    only_a = int((cmp["presence"] == "only A").sum())
    only_b = int((cmp["presence"] == "only B").sum())
    if only_a or only_b:
        click.echo(f"{only_a} (metric, point) only in A, {only_b} only in B: not compared", err=True)
    n_bad = int(flagged.sum())
    if n_bad:
        click.echo(f"natbench compare: {n_bad} change(s) exceed the threshold", err=True)
        sys.exit(1)
