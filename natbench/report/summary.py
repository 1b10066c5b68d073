"""The summary a report opens with: what was measured, on what, by which tester and natbench, when, the key
results, and warnings in plain words. Data only; ``report.html`` renders it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from natbench.metrics import Metric, reported_metric
from natbench.metrics.declare import SEARCH_ROWS, search_summary
from natbench.metrics.hostload import HOST_MARKS
from natbench.report.formatting import fmt_value
from natbench.report.searchfacts import search_facts
from natbench.run.format import reported_unit

if TYPE_CHECKING:
    from natbench.report.load import Run


_FACT_ORDER = ("recipe", "kind", "kernel", "os", "version", "cores", "cpus", "memory")
"""DUT facts shown first in the summary, when a DUT reports them; table sizes follow (keys naming a max or
a size), then nothing else (the full facts are in the report's DUT section)."""

_TABLE_WORDS = ("max", "hashsize", "size", "limit", "buckets")


@dataclass(frozen=True)
class RunSummary:
    """What a reader needs before the tables."""

    title: str
    """The campaign's name."""
    facts: list[tuple[str, str]]
    """(label, value) rows: measured, working points, DUTs, tester, natbench, host, times, status."""
    key_results: list[tuple[str, str]] = field(default_factory=list)
    """(metric title, one line of results across the working points)."""
    warnings: list[str] = field(default_factory=list)
    """Plain-words warnings: tester-bound results, invalid trials, failed repetitions, damaged records."""


def fmt_time(ts: Any) -> str:
    """A stored time (Unix seconds, or ISO 8601 text) as local, readable time with its zone
    (``2026-11-24 08:25:03 UTC``); ``?`` when unknown."""
    when: datetime | None = None
    if isinstance(ts, str):
        with contextlib.suppress(ValueError):
            when = datetime.fromisoformat(ts)
    if when is None:
        try:
            value = float(ts)
        except (TypeError, ValueError):
            return "?"
        if not math.isfinite(value) or value <= 0:
            return "?"
        when = datetime.fromtimestamp(value).astimezone()
    return when.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def fmt_duration(seconds: float) -> str:
    """``1 h 02 min``, ``5 min 05 s`` or ``42 s``."""
    s = round(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def _scalar_facts(facts: Mapping[str, Any]) -> str:
    """The DUT facts worth a summary line, in :data:`_FACT_ORDER`, then table sizes."""
    flat = {str(k): v for k, v in facts.items() if isinstance(v, str | int | float | bool)}
    chosen = [k for key in _FACT_ORDER for k in flat if k == key or k.startswith(f"{key}_")]
    chosen += [k for k in flat if k not in chosen and any(w in k.lower() for w in _TABLE_WORDS)]
    return ", ".join(f"{k} {_fact(flat[k])}" for k in chosen)


def _fact(v: str | int | float | bool) -> str:
    if isinstance(v, bool | str):
        return str(v)
    return fmt_value(float(v))


def _range(values: pd.Series, unit: str = "") -> str | None:
    """``4,000 to 64,000 connections`` (or one value); None when no value is known."""
    known = pd.to_numeric(values, errors="coerce").dropna()
    if known.empty:
        return None
    lo, hi = int(known.min()), int(known.max())
    text = f"{lo:,}" if lo == hi else f"{lo:,} to {hi:,}"
    return f"{text}{unit}"


def _metrics(run: Run) -> list[Metric[Any]]:
    """The run's metrics, resolved once, in measurement order."""
    return sorted((reported_metric(name) for name in run.metrics), key=lambda m: m.sort_key)


def _measured(run: Run) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    metrics = _metrics(run)
    if metrics:
        rows.append(("measured", "; ".join(m.title for m in metrics)))
    p = run.points
    if not p.empty:
        ranges = [
            _range(p["connections"], " connections"),
            _range(p["cores"], " DUT cores"),
            _range(p["frame_size"], " B frames"),
        ]
        rows.append(("working points", f"{len(p)}: " + ", ".join(r for r in ranges if r)))
    return rows


def _search(s: pd.DataFrame) -> str:
    """Which search produced a metric's values and what its error is, in a few words (nothing for a metric that is
    no search)."""
    with_error = s[s["error"].notna()]
    names = [str(a) for a in with_error.get("algorithm", pd.Series(dtype=object)).dropna().unique()]
    if not names:
        return ""
    words = [search_summary(n, search_facts(with_error[with_error["algorithm"] == n], "")[1]) for n in names]
    return f" ({'; '.join(words)})"


def _key_results(run: Run) -> list[tuple[str, str]]:
    """Per performance metric: the range of the per-point medians, as the tables report them, and the search that
    produced them."""
    out: list[tuple[str, str]] = []
    summary = run.summary
    if summary.empty:
        return out
    labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
    flat = summary.reset_index()
    for m in _metrics(run):
        if m.own_table:
            continue
        metric = m.name
        s = flat[(flat["metric"].astype(str) == metric) & flat["median"].notna()]
        if s.empty:
            continue
        unit = reported_unit(str(s["unit"].iloc[0]), float(s["directions"].max()))
        ordered = s.sort_values("median", kind="stable")
        lo, hi = ordered.iloc[0], ordered.iloc[-1]
        if len(s) == 1:
            text = f"median {fmt_value(float(lo['median']))} {unit}"
        else:
            text = (
                f"medians from {fmt_value(float(lo['median']))} {unit} ({labels.get(str(lo['point_id']), '?')}) "
                f"to {fmt_value(float(hi['median']))} {unit} ({labels.get(str(hi['point_id']), '?')})"
            )
        out.append((m.title, text + _search(s)))
    return out


FAILED_SHOWN = 5
"""Failed repetitions whose reason the summary gives (the others are counted)."""


def _failed_reasons(run: Run, failed: pd.DataFrame) -> str:
    """``iptables-25M teardown #0: emptying the DUT's connection table failed: ...; ...`` for the first failed
    repetitions (each reason cut to 300 characters), and how many more there are."""
    labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
    parts = []
    for _, row in failed.head(FAILED_SHOWN).iterrows():
        extra = row.get("extra")
        reason = str(extra.get("failed", "no reason stored")) if isinstance(extra, dict) else "no reason stored"
        reason = reason if len(reason) <= 300 else reason[:300] + "..."
        parts.append(
            f"{labels.get(str(row['point_id']), row['point_id'])} {row['metric']} #{row['repetition']}: {reason}"
        )
    more = f"; and {len(failed) - FAILED_SHOWN} more (in the trial details)" if len(failed) > FAILED_SHOWN else ""
    return "; ".join(parts) + more


def _warnings(run: Run) -> list[str]:
    out: list[str] = []
    status = run.meta.status
    if status != "complete":
        failure = run.meta.failure
        out.append(f"The run is not complete (status {status}{f': {failure}' if failure else ''}).")
    out += list(run.warnings)
    if run.damage:
        out.append(
            f"The run directory is damaged ({len(run.damage)} problem(s) in its stored records, listed by"
            f" `natbench report`): {len(run.damaged_repetitions)} repetition(s) had damaged records; the tables use"
            f" only the intact records (`natbench run --resume {run.path} --repair` measures those repetitions again)."
        )
    r = run.results
    if not r.empty:
        names = r["metric"].astype(str)
        for m in _metrics(run):
            mine = r[(names == m.name).to_numpy(bool)]
            for row in (*SEARCH_ROWS, *m.count_rows):
                n = int(mine[row.column].fillna(False).astype(bool).sum())
                if n and row.warning:
                    out.append(row.warning.format(n=n, total=len(mine), title=m.title))
        no_pass = r["no_pass"].fillna(False).astype(bool)
        failed = r[r["value"].isna() & ~no_pass]
        if not failed.empty:
            out.append(
                f"{len(failed)} of {len(r)} repetitions failed and have no value; the tables leave them out "
                f"(the run went on after each): {_failed_reasons(run, failed)}."
            )
        if no_pass.any():
            out.append(
                f"{int(no_pass.sum())} of {len(r)} repetitions found no passing rate (every rate tried failed down to"
                " the search's lower bound): no value, counted in the tables' 'no passing rate' rows, not as 0."
            )
        for m in _metrics(run):
            mine = r[(names == m.name).to_numpy(bool)]
            for mark in (*m.marks, *HOST_MARKS):
                n = int(mine[mark.column].fillna(False).astype(bool).sum())
                if n and mark.warning:
                    out.append(mark.warning.format(n=n, total=len(mine), title=m.title))
    t = run.trials
    if not t.empty:
        paced = sum(1 for e in t["extra"] if (e.get("tester") or {}).get("pacing_warnings"))
        if paced:
            out.append(
                f"{paced} trials carry TRex pacing warnings (sending in clumps, a saturated TRex core, or software "
                "mode): against DUTs with small buffers or rate policers such results are lower bounds "
                "(docs/trex.md 4.5; the warnings are in each trial's extra.tester.pacing_warnings)."
            )
        invalid = int((t["verdict"].astype(str) == "invalid").sum())
        if invalid:
            out.append(
                f"{invalid} of {len(t)} trials were invalid (the tester could not keep the rate, or the counts or "
                "the DUT's table could not be trusted); each was repeated and none counted as pass or fail."
            )
    return out


def _seconds(ts: Any) -> float:
    """Unix seconds of a stored time (number or ISO 8601 text); NaN when unknown."""
    if isinstance(ts, str):
        with contextlib.suppress(ValueError):
            return datetime.fromisoformat(ts).timestamp()
    try:
        return float(ts)
    except (TypeError, ValueError):
        return float("nan")


def _testbed_facts(run: Run) -> list[tuple[str, str]]:
    """A distributed run (``point_testbeds`` in run.json): which testbed measured which working point."""
    by_point = run.meta.point_testbeds
    if not by_point:
        return []
    labels = {str(k): str(v) for k, v in run.points["label"].items()} if not run.points.empty else {}
    points: dict[str, list[str]] = {}
    for pid, names in by_point.items():
        for name in names:
            points.setdefault(str(name), []).append(labels.get(str(pid), str(pid)))
    klass = run.meta.testbed_class or "?"
    rows = [(f"testbed {name} (class {klass})", ", ".join(pts)) for name, pts in sorted(points.items())]
    return rows


def summarize_run(run: Run) -> RunSummary:
    """The summary of ``run``: facts, key results and warnings."""
    meta = run.meta
    facts = _measured(run)
    for name, dut in meta.duts.items():
        facts.append((f"DUT {name}", _scalar_facts(dut) if isinstance(dut, Mapping) else str(dut)))
    tester = _scalar_facts(meta.tester.details)  # its kind leads the line
    facts.append(("tester", (meta.tester.kind or "?") + (f": {tester}" if tester else "")))
    facts.extend(_testbed_facts(run))
    commit = meta.git_commit
    facts.append(("natbench", f"{meta.natbench_version or '?'}" + (f" (commit {commit[:12]})" if commit else "")))
    host = meta.host
    if host.to_dict():
        cpus = "?" if host.cpus is None else host.cpus
        facts.append(("host", f"{host.hostname or '?'}, {cpus} CPUs, {host.platform or ''}"))
    started, ended = meta.started_at, meta.ended_at
    facts.append(("started", fmt_time(started)))
    if ended:
        facts.append(("ended", fmt_time(ended)))
        seconds = _seconds(ended) - _seconds(started)
        if math.isfinite(seconds) and seconds >= 0:
            facts.append(("duration", fmt_duration(seconds)))
    facts.append(("status", meta.status))
    return RunSummary(run.name, facts, _key_results(run), _warnings(run))
