"""One self-contained HTML report of a run: tables, plots (PNG inlined as base64), the resolved
campaign, versions, tester and DUT facts. No external files, scripts or fonts."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from natbench.metrics.teardown import TEARDOWN
from natbench.report import plots
from natbench.report.aggregate import trial_summary
from natbench.report.labels import in_performance_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from natbench.report.load import Run

__all__ = ["MAX_CPU_PLOTS", "render_html", "run_figures"]

#: At most this many CPU idle plots go into one report (one per point, metric and DUT).
MAX_CPU_PLOTS = 24

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1200px;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:2px 8px}
td{text-align:right;font-variant-numeric:tabular-nums}
tbody th{text-align:left;font-weight:normal;white-space:nowrap}
caption{caption-side:top;text-align:left;padding:4px 0;max-width:1100px}
pre{background:#f6f6f6;padding:1em;overflow:auto;font-size:12px}
figure{margin:1em 0}
img{max-width:100%}
.warn{color:#a40}
"""


def run_figures(run: Run) -> list[tuple[str, Figure]]:
    """Every plot of a run as (caption, figure): each metric against cores or connections, the
    tear-down plot, and per-core CPU idle plots of the monitored trials (at most MAX_CPU_PLOTS)."""
    figs: list[tuple[str, Figure]] = []
    for metric in run.metrics:
        if in_performance_table(metric):  # a metric with a table of its own (tear-down) has its own plot
            figs.append((f"{metric}", run.plot(metric)))
    if not run.teardown.empty:
        figs.append((TEARDOWN.name, run.plot(TEARDOWN.name)))
    labels = run.points["label"].to_dict() if not run.points.empty else {}
    for n, mt in enumerate(plots.monitored_trials(run.trials)):
        if n >= MAX_CPU_PLOTS:
            break
        rate = f", {mt.rate:,.0f} fps/dir." if mt.rate else ""
        title = f"{mt.dut} CPU idle: {mt.metric} {mt.kind} at {labels.get(mt.point_id, mt.point_id)}{rate}"
        figs.append((f"cpu-{mt.dut}-{mt.metric}-{mt.point_id}", plots.plot_cpu_idle(mt.extra, mt.dut, title)))
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
        f"<strong>{html.escape(str(meta.get('status', 'unknown')))}</strong>; each column's baseline is the point"
        " with the same cores, port ranges and frame size:</p>"
        f"<table><thead><tr><th>point</th><th>baseline point</th></tr></thead><tbody>{rows}</tbody></table>"
        f"<h3>Baseline tester</h3>{_facts(meta.get('tester', {}))}<h3>Baseline DUTs</h3>{_facts(meta.get('duts', {}))}"
    )


def render_html(run: Run, scale: str = "1", images: Sequence[tuple[str, bytes]] | None = None) -> str:
    """The report as one HTML string; ``images`` (caption, PNG bytes) are the plots already
    rendered (default: render :func:`run_figures`)."""
    meta = run.meta
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>natbench report: {html.escape(run.name)}</title><style>{_CSS}</style></head><body>",
        f"<h1>natbench report: {html.escape(run.name)}</h1>",
        f"<p>Run directory <code>{html.escape(str(run.path))}</code>, status "
        f"<strong>{html.escape(str(meta.get('status', 'unknown')))}</strong>, started "
        f"{html.escape(str(meta.get('started_at', '?')))}; {len(run.points)} working points, "
        f"{len(run.trials)} trials, {len(run.results)} repetition results.</p>",
    ]
    for w in run.warnings:
        parts.append(f"<p class='warn'>{html.escape(w)}</p>")
    parts.append("<h2>Results</h2>")
    tables = run.tables(scale)
    if not tables:
        parts.append("<p>No repetition results stored yet.</p>")
    for t in tables:
        parts.append(t.to_html())
    parts.append("<h2>Plots</h2>")
    if images is None:
        images = []
        for caption, fig in run_figures(run):
            images.append((caption, plots.figure_bytes(fig, "png")))
    for caption, png in images:
        data = base64.b64encode(png).decode()
        parts.append(
            f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        )
    ts = trial_summary(run.trials)
    if not ts.empty:
        parts.append(
            "<h2>Trials</h2><p>Every stored trial (search step or timed operation) per working point and"
            " metric; invalid trials were retried and never counted as pass or fail.</p>"
        )
        labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
        tbl = ts.reset_index()
        tbl["point_id"] = tbl["point_id"].astype(str).map(lambda p: labels.get(p, p))
        tbl = tbl.rename(columns={"point_id": "point"}).round({"seconds": 1})
        parts.append(tbl.to_html(index=False, classes="trials", border=0))
    parts.append("<h2>Versions and host</h2>")
    versions = {k: meta.get(k) for k in ("natbench_version", "git_commit", "campaign_file", "campaign_name")}
    parts.append(_facts({**versions, "host": meta.get("host", {})}))
    parts.append("<h2>Tester</h2>" + _facts(meta.get("tester", {})))
    parts.append("<h2>DUTs</h2>" + _facts(meta.get("duts", {})))
    if meta.get("point_facts"):
        labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
        per_point = {labels.get(k, k): v for k, v in meta["point_facts"].items()}
        parts.append("<h3>DUT facts per working point</h3>" + _facts(per_point))
    if run.baseline is not None:
        parts.append(_baseline_section(run))
    parts.append("<h2>Working points</h2>")
    if not run.points.empty:
        cols = ["index", "label", "cores", "src_count", "dst_count", "connections", "frame_size"]
        parts.append(run.points[cols].to_html(classes="points", border=0))
    parts.append("<h2>Resolved campaign</h2>")
    parts.append(f"<pre>{html.escape(run.campaign_text)}</pre>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
