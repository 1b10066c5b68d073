"""``natbench plan FILE``: the working points of a campaign, its trials and an estimated duration."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from natbench.campaign import Campaign, Estimate, check_recipes, estimate, load_campaign
from natbench.campaign.estimate import format_duration, has_algorithm
from natbench.campaign.feasibility import MemoryCheck, memory_check
from natbench.cli.group import cli, max_points_option, printable
from natbench.errors import ConfigError, StoreError
from natbench.search.fast import SEEDED_FULL, SEEDED_PROBES, SEEDED_TRIALS
from natbench.traffic.plan import wire_frame_sizes
from natbench.values import format_count

__all__ = ["plan", "plan_rows", "saving_line"]

ALGORITHMS = ("binary", "fast")
"""The search algorithms ``natbench plan`` compares: the seeds' binary search and the fast one."""


VALUE_CHARS = 80
"""Longest parameter or setting value shown in the plan (the rest is cut and counted)."""


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return format_count(v) if v >= 10_000 or (v >= 1024 and v & (v - 1) == 0) else str(v)
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() else f"{v:g}"
    # a user's text: escape sequences and other control characters escaped, secrets from ${NATBENCH_*} named
    return printable(str(v), VALUE_CHARS)


def _redacted(data: Any) -> Any:
    """JSON data with every string made printable (see :func:`_value`); JSON escapes control characters itself."""
    if isinstance(data, str):
        from natbench.config.source import redact_substituted

        return redact_substituted(data)
    if isinstance(data, dict):
        return {k: _redacted(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_redacted(v) for v in data]
    return data


def _varying(campaign: Campaign) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(dut, param) and (metric, setting) pairs whose value differs between working points."""
    points = campaign.points()
    duts = sorted({(d, k) for p in points for d, ps in p.dut_params.items() for k in ps})
    dut_vary = [(d, k) for d, k in duts if len({repr(p.dut_params.get(d, {}).get(k)) for p in points}) > 1]
    # repetitions have their own column
    mets = sorted({(m, k) for p in points for m, s in p.metric_settings.items() for k in s if k != "repetitions"})
    met_vary = [(m, k) for m, k in mets if len({repr(p.metric_settings.get(m, {}).get(k)) for p in points}) > 1]
    return dut_vary, met_vary


def _repetitions(campaign: Campaign, pe: Any) -> str:
    reps = {m.metric: m.repetitions for m in pe.metrics}
    if len(set(reps.values())) == 1:
        return str(next(iter(reps.values())))
    return " ".join(f"{k}:{v}" for k, v in reps.items())


def _frame(campaign: Campaign, frame_size: int) -> str:
    """The frame size column: the IPv4 size, or the IPv6 frames' when both sides carry IPv6 (RFC 8219: +20)."""
    family = campaign.traffic.family
    if family.private_ipv6 and family.public_ipv6:
        return f"{wire_frame_sizes(family, frame_size)[0]} (IPv6)"
    return str(frame_size)


def plan_rows(campaign: Campaign, est: Estimate) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the working-point table."""
    dut_vary, met_vary = _varying(campaign)
    multi = len(campaign.testbed.duts) > 1
    cores_head = "cores"
    swept = {d for p in campaign.points() if p.swept_dut for d in (p.swept_dut, *p.co_swept_duts)}
    if multi and swept:
        cores_head = f"cores ({', '.join(sorted(swept))})"
    header = ["#", "label", "id", cores_head, "src ports", "dst ports", "connections", "frame"]
    header += [f"{d}.{k}" if multi else k for d, k in dut_vary]
    header += [f"{m}.{k}" for m, k in met_vary]
    header += ["reps", "trials", "est."]
    rows = []
    for pe in est.points:
        p = pe.point
        row = [
            str(p.index),
            printable(p.label),
            p.id,
            "-" if p.cores is None else str(p.cores),
            f"{p.src_ports} ({len(p.src_ports):,})",
            f"{p.dst_ports} ({len(p.dst_ports):,})",
            f"{p.connections:,}",
            _frame(campaign, p.frame_size),
        ]
        row += [_value(p.dut_params.get(d, {}).get(k)) for d, k in dut_vary]
        row += [_value(campaign.settings_for(p, m).model_dump()[k]) for m, k in met_vary]
        row += [_repetitions(campaign, pe), f"{pe.trials:,}", format_duration(pe.seconds)]
        rows.append(row)
    return header, rows


def _preamble(campaign: Campaign) -> list[str]:
    dut_vary, _ = _varying(campaign)
    varying = set(dut_vary)
    lines = [f"campaign {campaign.name} ({campaign.file}), schema_version {campaign.spec.schema_version}"]
    t = campaign.traffic
    lines.append(
        f"tester: {campaign.testbed.tester.kind}; traffic: {t.family.value}, {t.directions.value}, "
        f"acceptance {t.acceptance:g} loss, seed {t.seed}, responder {campaign.responder_mode.value}"
    )
    for d in campaign.testbed.duts:
        fixed = {k: v for k, v in d.params.items() if (d.name, k) not in varying}
        parts = [f"recipe {d.recipe}", f"access {d.access.kind}"]
        if d.role is not None:
            parts.append(f"role {d.role.value}")
        if d.cores is not None:
            parts.append(f"{d.cores} cores")
        if fixed:
            parts.append(", ".join(f"{k}={_value(v)}" for k, v in fixed.items()))
        lines.append(f"DUT {d.name}: " + "; ".join(parts))
    for name, s in campaign.metrics.items():
        shown = {k: v for k, v in s.model_dump(exclude_none=True).items() if k != "repetitions"}
        settings = ", ".join(f"{k}={_value(v)}" for k, v in shown.items())
        lines.append(f"metric {name}: {s.repetitions} repetitions; {settings}")
    lines.append(f"output: {campaign.output}")
    return [printable(line) for line in lines]


def _compared(campaign: Campaign) -> dict[str, Estimate] | None:
    """The campaign estimated with every search metric on each of :data:`ALGORITHMS` (None: no metric offers both)."""
    offered = any(
        all(has_algorithm(campaign.settings_for(p, m), a) for a in ALGORITHMS)
        for p in campaign.points()
        for m in campaign.metrics
    )
    return {a: estimate(campaign, a) for a in ALGORITHMS} if offered else None


def saving_line(compared: dict[str, Estimate]) -> str:
    """What ``algorithm: fast`` saves against ``binary`` for the search metrics that offer both."""
    old, new = compared["binary"], compared["fast"]
    ratio = old.seconds / new.seconds if new.seconds else float("inf")
    return (
        f"search algorithms: binary {old.trials:,} trials, {format_duration(old.seconds)}; "
        f"fast {new.trials:,} trials, {format_duration(new.seconds)}: {ratio:.1f}x less tester time "
        f"(saves {format_duration(old.seconds - new.seconds)}; fast counted with {SEEDED_FULL} full trials and "
        f"{SEEDED_PROBES} short ones per seeded repetition, {SEEDED_TRIALS} full ones for cps, typical of "
        "bench/campaign_time.py's simulation; a DUT with queues needs more)"
    )


def _plain_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*header).rstrip(), fmt.format(*["-" * w for w in widths]).rstrip()]
    out += [fmt.format(*r).rstrip() for r in rows]
    return "\n".join(out)


def measured_per_connection(run_dir: str, allow_damaged: bool = False) -> tuple[float | None, str]:
    """(bytes per connection, where it came from) measured in an earlier run: the median ``memory / conn. (B)``
    (MemAvailable based) over the passing fills at the run's largest number of connections (where the fixed costs
    of a fill weigh least); None when the run stored none. A directory that is no run is a ConfigError; a damaged
    one is refused as ``natbench report`` refuses it (its damage on stderr, exit 2) unless ``allow_damaged``."""
    from natbench.cli.damage import check_damage
    from natbench.report.load import Run  # pandas only when --from is given

    try:
        run = Run(run_dir)
    except StoreError as exc:
        raise ConfigError(str(exc), field="--from") from None
    check_damage([("run", run)], allow_damaged, "nothing was planned from it")
    fills = run.memory.dropna(subset=["mem_available"])
    if fills.empty:
        return None, f"run {run_dir} stored no memory per connection"
    largest = fills[fills["created_connections"] == fills["created_connections"].max()]
    n = int(largest["created_connections"].iloc[0])
    where = f"median of {len(largest)} fills of {n:,} connections in run {run.name} ({run_dir})"
    return float(largest["mem_available"].median()), where


def _memory(campaign: Campaign, from_run: str | None, allow_damaged: bool) -> MemoryCheck:
    if from_run is None:
        return memory_check(campaign)
    measured, where = measured_per_connection(from_run, allow_damaged)
    check = memory_check(campaign, measured, where)
    if measured is None:
        return MemoryCheck(check.warnings, (where, *check.notes))
    return check


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
    memory (duts[].memory, duts[].bytes_per_connection or --from RUN): a warning per point that may not fit.
    """
    campaign = load_campaign(file)
    if not no_recipes:  # what natbench validate checks: a campaign validate rejects is never planned
        for warning in check_recipes(campaign).warnings:
            click.echo(printable(f"natbench: warning: {file}: {warning}"), err=True)
    est = estimate(campaign)
    mem = _memory(campaign, from_run, allow_damaged)
    for warning in mem.warnings:
        click.echo(printable(f"natbench: warning: {file}: {warning}"), err=True)
    header, rows = plan_rows(campaign, est)
    total = (
        f"{len(est.points)} working points, {est.trials:,} trials, estimated duration {format_duration(est.seconds)}"
    )
    compared = _compared(campaign)
    saving = saving_line(compared) if compared else None
    if fmt == "json":
        data = {
            "campaign": campaign.name,
            "file": str(campaign.file),
            "points": [
                {
                    "index": pe.point.index,
                    "label": pe.point.label,
                    "id": pe.point.id,
                    "cores": pe.point.cores,
                    "src_ports": [pe.point.src_ports.first, pe.point.src_ports.last],
                    "dst_ports": [pe.point.dst_ports.first, pe.point.dst_ports.last],
                    "connections": pe.point.connections,
                    "frame_size": pe.point.frame_size,
                    "wire_frame_sizes": list(wire_frame_sizes(campaign.traffic.family, pe.point.frame_size)),
                    "dut_params": _redacted(pe.point.dut_params),
                    "swept_dut": pe.point.swept_dut,
                    "metric_settings": pe.point.metric_settings,
                    "metrics": {
                        m.metric: {"repetitions": m.repetitions, "trials": m.trials, "seconds": m.seconds}
                        for m in pe.metrics
                    },
                    "trials": pe.trials,
                    "seconds": pe.seconds,
                }
                for pe in est.points
            ],
            "trials": est.trials,
            "seconds": est.seconds,
            "algorithms": {a: {"trials": e.trials, "seconds": e.seconds} for a, e in (compared or {}).items()},
            "notes": list(est.notes),
            "memory": {"warnings": list(mem.warnings), "notes": list(mem.notes)},
        }
        click.echo(json.dumps(data, indent=2, default=str))
        return
    if fmt == "rich" or (fmt == "auto" and sys.stdout.isatty()):
        from rich.console import Console
        from rich.table import Table

        console = Console()
        for line in _preamble(campaign):
            console.print(line, highlight=False, markup=False)
        table = Table(*header, title=f"working points of {campaign.name}")
        from rich.text import Text

        for r in rows:
            table.add_row(*(Text(cell) for cell in r))  # Text: a value's [brackets] are no rich markup
        console.print(table)
        console.print(total, highlight=False, markup=False)
        if saving:
            console.print(saving, highlight=False, markup=False)
        for note in (*est.notes, *mem.notes):
            console.print(f"  ({note})", highlight=False, markup=False)
        return
    click.echo("\n".join(_preamble(campaign)))
    click.echo("")
    click.echo(_plain_table(header, rows))
    click.echo("")
    click.echo(total)
    if saving:
        click.echo(saving)
    for note in (*est.notes, *mem.notes):
        click.echo(f"  ({note})")
