"""One self-contained HTML report of a run: tables, plots (PNG inlined as base64), the resolved
campaign, versions, tester and DUT facts. No external files, scripts or fonts."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from matplotlib.figure import Figure

from natbench.metrics import Metric, reported_metric
from natbench.report import plots
from natbench.report.aggregate import MIN_CPU_SAMPLES, trial_summary
from natbench.report.headroom import cpu_headroom
from natbench.report.summary import RunSummary, summarize_run

if TYPE_CHECKING:
    from natbench.report.load import Run


#: At most this many CPU idle time plots go into one report (one per point, metric and DUT).
MAX_CPU_PLOTS = 24

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em;margin-bottom:.2em}
h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:2px 8px}
td{text-align:right;font-variant-numeric:tabular-nums}
tbody th{text-align:left;font-weight:normal;white-space:nowrap}
caption{caption-side:top;text-align:left;padding:4px 0;max-width:1100px}
table.facts th{text-align:left;font-weight:600;vertical-align:top;background:#f6f6f6}
table.facts td{text-align:left}
pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(440px,1fr));gap:1em}
figure{margin:0;border:1px solid #eee;padding:.5em;break-inside:avoid}
figcaption{font-size:13px;color:#444;margin-top:.3em}
img{max-width:100%;height:auto}
.warn li{color:#a40}
details{margin:1em 0}
summary{cursor:pointer;font-weight:600}
@media print{body{margin:0;max-width:none}.grid{grid-template-columns:1fr 1fr}h2{break-after:avoid}
table,figure{break-inside:avoid}}
"""

_PRINT_OPENS_DETAILS = (
    "<script>addEventListener('beforeprint',()=>document.querySelectorAll('details').forEach(d=>d.open=true))</script>"
)
"""Printing shows the collapsed sections too (inline, the page stays self-contained)."""


class ReportFigure(NamedTuple):
    """One plot of a report."""

    key: str
    """Stable short name: the file stem under ``plots/``."""
    caption: str
    """What the plot shows, in words, with its units."""
    section: str
    """Where the report shows it: ``results``, ``headroom`` or ``cpu_time`` (collapsed)."""
    figure: Figure
    """The matplotlib figure."""


def _metric_caption(run: Run, metric: Metric[Any]) -> str:
    title, axis = metric.title, metric.axis
    against = "DUT cores" if bool((run.points.groupby("cores_group")["cores"].nunique() > 1).any()) else "connections"
    unit = f" ({axis})" if axis else ""
    return f"{title[:1].upper()}{title[1:]}{unit} against the number of {against}: median, bars from min to max."


def run_figures(run: Run) -> list[ReportFigure]:
    """Every plot of a run: each metric against cores or connections, the tear-down plot, the DUT CPU headroom
    heatmaps (per core at the reported rate) and, for trials long enough to have several samples, per-core CPU
    idle time over the trial (at most :data:`MAX_CPU_PLOTS`)."""
    figs: list[ReportFigure] = []
    metrics = {name: reported_metric(name) for name in run.metrics}
    for name, m in metrics.items():
        if m.table is None:
            figs.append(ReportFigure(name, _metric_caption(run, m), "results", run.plot(name)))
    for name, m in metrics.items():  # a metric with a table of its own (tear-down) has a plot of its own
        if m.table is not None and not run.figures(name).empty:
            figs.append(ReportFigure(name, m.table.plot_caption, "results", run.plot(name)))
    head = cpu_headroom(run.trials, run.points)
    for key, g in head.groupby(["metric", "dut"], sort=False):
        metric, dut = (str(k) for k in key)
        m = reported_metric(metric)
        if m.own_table:
            continue  # tear-down reports times, not a rate: its CPU samples are in the time plots below
        title = f"{dut}, {metric}: CPU busy (%) per core"
        caption = (
            f"DUT {dut}, {m.title}: how busy each data-path core was (%, median of "
            f"{int(g['samples'].min())} or more samples) in the trial at the reported rate, per working point. "
            f"{_saturated_words(run.shares_host)}; low everywhere: the DUT had headroom."
        )
        figs.append(
            ReportFigure(
                f"cpu-busy-{dut}-{metric}",
                caption,
                "headroom",
                plots.plot_cpu_headroom(head, metric, dut, title),
            )
        )
    labels = run.points["label"].to_dict() if not run.points.empty else {}
    n = 0
    for mt in plots.monitored_trials(run.trials):
        samples = len(mt.extra["monitor"][mt.dut].get("t") or [])
        if samples < MIN_CPU_SAMPLES:
            continue  # one or two samples make no time series
        if n >= MAX_CPU_PLOTS:
            break
        n += 1
        where = labels.get(mt.point_id, mt.point_id)
        rate = f" at {mt.rate:,.0f} frames/s per direction" if mt.rate else ""
        title = f"{mt.dut} CPU idle: {mt.metric} {mt.kind} at {where}"
        caption = f"DUT {mt.dut}: idle time of each core (%) during the {mt.metric} {mt.kind} trial{rate} at {where}."
        figs.append(
            ReportFigure(
                f"cpu-{mt.dut}-{mt.metric}-{mt.point_id}",
                caption,
                "cpu_time",
                plots.plot_cpu_idle(mt.extra, mt.dut, title),
            )
        )
    return figs


def _facts(d: Any) -> str:
    if isinstance(d, dict) and d:
        rows = "".join(
            f"<tr><th>{html.escape(str(k))}</th><td style='text-align:left'>{_facts(v)}</td></tr>" for k, v in d.items()
        )
        return f"<table>{rows}</table>"
    if isinstance(d, list | dict):
        return html.escape(json.dumps(d))
    return html.escape(str(d))


def _baseline_section(run: Run) -> str:
    """Where the forwarding baseline came from: its run directory, status, matched points, tester and DUTs."""
    base = run.baseline
    assert base is not None
    meta = base.meta
    labels = {str(k): str(v) for k, v in run.points["label"].items()}
    base_labels = {str(k): str(v) for k, v in base.points["label"].items()}
    rows = "".join(
        f"<tr><th>{html.escape(labels.get(p, p))}</th><td style='text-align:left'>"
        f"{html.escape(base_labels.get(b, b))}</td></tr>"
        for p, b in run.baseline_points.items()
    )
    return (
        f"<h2>Baseline run</h2><p>The forwarding baseline comes from run directory "
        f"<code>{html.escape(str(base.path))}</code> ({html.escape(base.name)}), status "
        f"<strong>{html.escape(meta.status)}</strong>; each column's baseline is the point"
        " with the same cores, port ranges and frame size:</p>"
        f"<table><thead><tr><th>point</th><th>baseline point</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<h3>Baseline tester</h3>{_facts(meta.tester.to_dict())}<h3>Baseline DUTs</h3>{_facts(meta.duts)}"
    )


def _summary_html(summary: RunSummary) -> str:
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in summary.facts)
    parts = ["<h2>Summary</h2>", f"<table class='facts'>{rows}</table>"]
    if summary.key_results:
        items = "".join(f"<li><strong>{html.escape(t)}</strong>: {html.escape(v)}</li>" for t, v in summary.key_results)
        parts.append(f"<h3>Key results</h3><ul>{items}</ul>")
    if summary.warnings:
        items = "".join(f"<li>{html.escape(w)}</li>" for w in summary.warnings)
        parts.append(f"<h3>Warnings</h3><ul class='warn'>{items}</ul>")
    else:
        parts.append(
            "<h3>Warnings</h3><p>None: the run is complete, no result was limited by the tester, no trial "
            "was invalid and every record was read.</p>"
        )
    return "\n".join(parts)


def _saturated_words(host_shared: bool) -> str:
    """What a data-path core near 100 % busy means (where the tester and the DUT share the host's CPUs, next to a
    tester-bound result: the host's limit, not the DUT's; natbench.report.bound)."""
    if host_shared:
        return (
            "A core near 100 %: the DUT's CPU was saturated; the tester and the DUT share this host's CPUs, so next "
            "to a tester-bound result that is the host's limit, not the DUT's alone"
        )
    return "A core near 100 %: the DUT's bottleneck (next to a tester-bound result: both reached their limits)"


def _figures_html(images: Sequence[tuple[ReportFigure, bytes]]) -> str:
    out = []
    for fig, png in images:
        data = base64.b64encode(png).decode()
        out.append(
            f"<figure><img alt='{html.escape(fig.caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(fig.caption)}</figcaption></figure>"
        )
    return "<div class='grid'>" + "".join(out) + "</div>"


def render_html(run: Run, scale: str = "1", images: Sequence[tuple[ReportFigure, bytes]] | None = None) -> str:
    """The report as one self-contained HTML string: the summary first, the seed-style tables, the plots in a
    grid with captions, the DUT CPU headroom, then the details collapsed (trials, facts, points, the resolved
    campaign). ``images`` are the plots already rendered (default: render :func:`run_figures`)."""
    meta = run.meta
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>natbench report: {html.escape(run.name)}</title><style>{_CSS}</style>{_PRINT_OPENS_DETAILS}",
        "</head><body>",
        f"<h1>natbench report: {html.escape(run.name)}</h1>",
        f"<p>Run directory <code>{html.escape(str(run.path))}</code>: {len(run.points)} working points, "
        f"{len(run.trials)} trials, {len(run.results)} repetition results.</p>",
        _summary_html(summarize_run(run)),
        "<h2>Results</h2>",
    ]
    tables = run.tables(scale)
    if not tables:
        parts.append("<p>No repetition results stored yet.</p>")
    for t in tables:
        parts.append(t.to_html())
    if images is None:
        images = [(f, plots.figure_bytes(f.figure, "png")) for f in run_figures(run)]
    by_section = {s: [(f, png) for f, png in images if f.section == s] for s in ("results", "headroom", "cpu_time")}
    if by_section["results"]:
        parts.append("<h2>Plots</h2>" + _figures_html(by_section["results"]))
    parts.append("<h2>DUT CPU headroom</h2>")
    if by_section["headroom"]:
        parts.append(
            "<p>How busy each DUT core was at the rate each metric reports (the highest passing trial with CPU "
            f"samples). {_saturated_words(run.shares_host)}; cores with room to spare next to a tester-bound "
            "result mean the DUT can do more.</p>" + _figures_html(by_section["headroom"])
        )
    else:
        parts.append(
            f"<p>No trial at a reported rate has {MIN_CPU_SAMPLES} or more CPU samples (the DUT is not monitored, "
            "or its trials are shorter than a few monitor intervals), so there is nothing to show.</p>"
        )
    if by_section["cpu_time"]:
        parts.append(
            f"<details><summary>CPU idle time during trials ({len(by_section['cpu_time'])} plots)</summary>"
            + _figures_html(by_section["cpu_time"])
            + "</details>"
        )
    ts = trial_summary(run.trials)
    if not ts.empty:
        labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
        tbl = ts.reset_index()
        tbl["point_id"] = tbl["point_id"].astype(str).map(lambda p: labels.get(p, p))
        tbl = tbl.rename(columns={"point_id": "point"}).round({"seconds": 1})
        parts.append(
            f"<details><summary>Trials ({len(run.trials)})</summary><p>Every stored trial (search step or timed "
            "operation) per working point and metric; invalid trials were retried and never counted as pass or "
            "fail.</p>" + tbl.to_html(index=False, classes="trials", border=0) + "</details>"
        )
    versions = {
        "natbench_version": meta.natbench_version,
        "git_commit": meta.git_commit,
        "campaign_file": meta.campaign_file,
        "campaign_name": meta.campaign_name,
    }
    facts = [
        "<h3>Versions and host</h3>" + _facts({**versions, "host": meta.host.to_dict()}),
        "<h3>Tester</h3>" + _facts(meta.tester.to_dict()),
        "<h3>DUTs</h3>" + _facts(meta.duts),
    ]
    if meta.point_facts:
        labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
        per_point = {labels.get(k, k): v for k, v in meta.point_facts.items()}
        facts.append("<h3>DUT facts per working point</h3>" + _facts(per_point))
    if run.baseline is not None:
        parts.append(_baseline_section(run))
    parts.append("<details><summary>Versions, host, tester and DUT facts</summary>" + "".join(facts) + "</details>")
    if not run.points.empty:
        cols = ["index", "label", "cores", "src_count", "dst_count", "connections", "frame_size"]
        parts.append(
            f"<details><summary>Working points ({len(run.points)})</summary>"
            + run.points[cols + (["testbed"] if "testbed" in run.points else [])].to_html(classes="points", border=0)
            + "</details>"
        )
    parts.append(f"<details><summary>Resolved campaign</summary><pre>{html.escape(run.campaign_text)}</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
