"""Read a run directory (GUIDE.md layout) into pandas: the notebook API ``natbench.load``.

The run directory is read leniently and typed (:func:`natbench.run.reader.read_run`), and its records
become frames through :mod:`natbench.run.frames`: the report must work on a run that is still being
written or was killed, so what is normal then (a torn last line of ``trials.jsonl``, one record not yet
counted in ``run.json``) is skipped and named in :attr:`Run.warnings`. Damage (missing, duplicated, torn
or altered records, or records whose fields have the wrong types, see :mod:`natbench.run.records`) is
named in :attr:`Run.damage`, one ``file:line: what`` each; the frames then hold the intact records, each
once, and ``natbench report`` refuses them unless ``--allow-damaged``.
"""

from __future__ import annotations

import warnings
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from natbench.errors import StoreError
from natbench.metrics import reported_metric
from natbench.metrics.registry import baseline_metric
from natbench.report import aggregate
from natbench.report.baseline import check_like_traffic, combined, match_baseline, refile
from natbench.report.bound import shares_host, with_bound_diagnosis
from natbench.report.tables import SeedTable, own_table, performance_table, report_tables
from natbench.run import frames
from natbench.run.format import PointRecord, RunMeta, StoredCampaign, slab_label
from natbench.run.reader import named_os_errors, read_run

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DamagedRunWarning", "Run", "load", "measured_per_connection"]


class DamagedRunWarning(UserWarning):
    """:func:`load` read a damaged run directory: the frames hold only its intact records (see ``Run.damage``)."""


class Run:
    """A loaded run directory: pandas frames, seed-style tables and matplotlib plots.

    ``baseline``: another run directory (or a loaded :class:`Run`) holding the plain-forwarding baseline
    (seed 000 Figure 2's "IPv4 packet forwarding" block and "throughput ratio (%)" row): its forwarding
    results and trials are matched to this run's throughput points by cores, port ranges and frame size
    (:func:`natbench.report.baseline.match_baseline`, a ConfigError naming every point without one) and
    re-filed under this run's point ids, so :attr:`results`, :attr:`trials` and every table include them.
    """

    def __init__(self, path: str | Path, baseline: str | Path | Run | None = None) -> None:
        self.path = Path(path)
        """The run directory."""
        with named_os_errors(self.path):
            if not self.path.is_dir():
                raise StoreError(f"{self.path}: not a directory")
        stored = read_run(self.path)
        self.meta: RunMeta = stored.meta
        """run.json: versions, host, tester and DUT facts, status."""
        self.campaign: StoredCampaign = stored.campaign
        """campaign.yaml: the resolved campaign as stored."""
        self.campaign_text: str = stored.campaign_text
        """The resolved campaign's text as stored."""
        self.point_records: list[PointRecord] = stored.points
        """points.json as stored."""
        self.warnings: list[str] = stored.warnings
        """What is normal after a kill or during a run and was skipped (a torn last line of trials.jsonl, ...)."""
        self.damage: list[str] = stored.damage
        """Every damaged, missing or duplicated record (``file:line: what``); empty for an intact run."""
        self.damaged_repetitions: list[tuple[str, str, int]] = stored.damaged_repetitions
        """(point id, metric, repetition) of every repetition the damage may have touched (``--repair`` measures
        them again); empty for an intact run."""
        self.trials: pd.DataFrame = frames.trials_frame(stored.trials)
        """One row per trial (search step or timed operation)."""
        self.shares_host: bool = shares_host(stored.meta.duts)
        """The tester and the DUT ran on this host's CPUs (a local lab: the DUT fact ``shares_host_cpus``)."""
        self.results: pd.DataFrame = with_bound_diagnosis(
            aggregate.with_dut_cpu_busy(frames.results_frame(stored.results), self.trials), self.shares_host
        )
        """One row per repetition result (the final value of each repetition; ``dut_cpu_busy`` from the
        monitored trials, and what bounds a tester-bound one: :mod:`natbench.report.bound`)."""
        self.points: pd.DataFrame = _with_testbeds(
            frames.points_frame(stored.points, stored.meta.dut_declarations), stored.meta
        )
        """Working points, indexed by id, in campaign order, with the table sizes the DUT kinds declared (a
        distributed run: with the testbed of each)."""
        self._figures: dict[str, pd.DataFrame] = {}
        self.baseline: Run | None = None
        """The run the forwarding baseline came from (None: this run's own, if any)."""
        self.baseline_points: dict[str, str] = {}
        """This run's point id -> the baseline run's point id whose forwarding results it shows."""
        if baseline is not None:
            self.attach_baseline(baseline if isinstance(baseline, Run) else Run(baseline))

    def attach_baseline(self, base: Run) -> None:
        """Take the plain-forwarding baseline from the loaded run ``base`` (see the class); ConfigError naming every
        point without one. Once only: a second baseline would be matched against this run's own and the first."""
        if self.baseline is not None:
            raise StoreError(f"{self.path}: a baseline run is attached already ({self.baseline.path})")
        registered = baseline_metric()
        if registered is None or registered.baseline_for is None:
            raise StoreError("no plain-forwarding baseline metric is registered")
        mapping = match_baseline(
            self.points,
            self.results,
            base.points,
            base.results,
            baseline=registered.name,
            compared=registered.baseline_for,
            run_dir=self.path,
            base_dir=base.path,
        )
        notes = check_like_traffic(
            self.family,
            base.family,
            mapping,
            lambda pid: self.acceptance(pid, registered.baseline_for or ""),
            lambda pid: base.acceptance(pid, registered.name),
            self.points,
            run_dir=self.path,
            base_dir=base.path,
        )
        result_cats = ("point_id", "metric", "unit")
        trial_cats = ("point_id", "metric", "kind", "verdict")
        self.results = combined(self.results, refile(base.results, mapping, registered.name, result_cats), result_cats)
        self.trials = combined(self.trials, refile(base.trials, mapping, registered.name, trial_cats), trial_cats)
        self.warnings = [*self.warnings, *(f"baseline: {w}" for w in [*base.warnings, *notes])]
        self.baseline = base
        self.baseline_points = mapping
        for derived in ("summary", "memory"):  # computed from the results and trials before they were combined
            self.__dict__.pop(derived, None)
        self._figures = {}

    @property
    def baseline_source(self) -> str | None:
        """Where the baseline was measured, for captions (None without a baseline run)."""
        if self.baseline is None:
            return None
        return f"the baseline run {self.baseline.name} ({self.baseline.path})"

    def __repr__(self) -> str:
        return (
            f"Run({str(self.path)!r}, points={len(self.points)}, trials={len(self.trials)}, "
            f"results={len(self.results)}, status={self.meta.status!r})"
        )

    @property
    def name(self) -> str:
        """The campaign's name (or the directory's)."""
        return self.meta.campaign_name or self.path.name

    @property
    def family(self) -> str | None:
        """The campaign's traffic family (``nat44``, ``nat64``, ``ipv4``, ``ipv6``) from the stored campaign.yaml; None
        when the run directory has no readable campaign (frame sizes are then stated as stored)."""
        return self.campaign.family

    def acceptance(self, point_id: str, metric: str) -> float | None:
        """The loss ratio ``metric`` accepted at ``point_id``: the point's sweep override, else the metric's own,
        else ``traffic.acceptance`` (0 when unset, the schema's default); None without a readable campaign."""
        point = next((p for p in self.point_records if p.id == point_id), None)
        return self.campaign.acceptance(metric, None if point is None else point.settings_of(metric))

    def slab_label(self, key: str) -> str:
        """The row of the slab cache stored under ``key``, as the run's DUT kinds declared it."""
        return slab_label(self.meta.dut_declarations, key)

    @property
    def metrics(self) -> list[str]:
        """Metrics with at least one result."""
        return sorted({str(m) for m in self.results["metric"].unique()})

    @cached_property
    def summary(self) -> pd.DataFrame:
        """median / min / max / experiments / error / invalid trials per (point_id, metric)."""
        return aggregate.with_invalid_trials(aggregate.summarize(self.results), self.trials)

    def figures(self, metric: str) -> pd.DataFrame:
        """The per-point figures of a metric with a table of its own (tear-down: T_N, T_0, deletion time, rate;
        :attr:`~natbench.metrics.Metric.table`); ValueError for a metric reported in the performance table."""
        if metric not in self._figures:
            self._figures[metric] = aggregate.own_summary(self.results, reported_metric(metric), self.points)
        return self._figures[metric]

    @cached_property
    def memory(self) -> pd.DataFrame:
        """The DUT's memory per connection of every kept fill that stored it (one row per fill)."""
        return aggregate.fill_memory_frame(self.trials)

    def seed_table(self, metric: str | None = None, scale: str = "1") -> SeedTable:
        """The seed-style table of one metric (a metric with a table of its own, such as ``teardown``, gives that
        table), or of all performance metrics when ``metric`` is None."""
        if metric is not None and metric not in self.metrics:
            raise KeyError(f"no results for metric {metric!r} in {self.path}; have {', '.join(self.metrics)}")
        if metric is not None and reported_metric(metric).own_table:
            return own_table(
                reported_metric(metric),
                self.figures(metric),
                self.points,
                scale=scale,
                summary=self.summary,
                memory=self.memory,
                slab_labels=self.slab_label,
            )
        return performance_table(
            self.summary,
            self.points,
            None if metric is None else [metric],
            scale=scale,
            family=self.family,
            baseline_source=self.baseline_source,
            memory=self.memory,
            slab_labels=self.slab_label,
        )

    def tables(self, scale: str = "1") -> list[SeedTable]:
        """Every table of the run (performance, then each metric's with a table of its own, e.g. tear-down)."""
        own = {m: self.figures(m) for m in self.metrics if reported_metric(m).own_table}
        return report_tables(
            self.summary,
            self.points,
            own=own,
            scale=scale,
            family=self.family,
            baseline_source=self.baseline_source,
            memory=self.memory,
            slab_labels=self.slab_label,
        )

    def table(self, metric: str | None = None, scale: str = "1") -> pd.DataFrame:
        """The seed-style table as a DataFrame of formatted cells (``.attrs`` hold title and caption)."""
        t = self.seed_table(metric, scale)
        df = t.cells.copy()
        df.attrs["title"] = t.title
        df.attrs["caption"] = t.caption
        return df

    def plot(self, metric: str, kind: str = "auto") -> Figure:
        """A matplotlib Figure of one metric: ``kind`` = auto | cores | connections | own (auto: a metric with a
        table of its own, such as tear-down, its own plot; else against cores when some series' cores vary, else
        against connections)."""
        from natbench.report import plots  # matplotlib only when a plot is asked for

        if metric not in self.metrics:
            raise KeyError(f"no results for metric {metric!r} in {self.path}; have {', '.join(self.metrics)}")
        m = reported_metric(metric)
        if m.table is not None and kind in ("auto", "own"):
            return plots.plot_own(m, self.figures(metric), self.points)
        if kind == "own":
            raise ValueError(f"metric {metric!r} has no plot of its own; choose auto, cores or connections")
        if kind == "auto":
            cores_vary = bool((self.points.groupby("cores_group")["cores"].nunique() > 1).any())
            kind = "cores" if cores_vary else "connections"
        if kind == "cores":
            return plots.plot_cores(self.summary, self.points, metric)
        if kind == "connections":
            return plots.plot_connections(self.summary, self.points, metric)
        raise ValueError(f"unknown plot kind {kind!r}; choose auto, cores, connections or own")


def load(run_dir: str | Path, baseline: str | Path | Run | None = None) -> Run:
    """Load a run directory for analysis: ``natbench.load("runs/2026-01-01-quickstart")``; ``baseline``: a run
    directory holding the plain-forwarding baseline (``natbench.load("results/nat", baseline="results/fwd")``).

    A damaged run directory (records missing, duplicated, torn or altered) still loads from its intact records,
    with a :class:`DamagedRunWarning` naming how many problems ``Run.damage`` lists (``natbench report`` refuses
    such a directory unless ``--allow-damaged``)."""
    run = Run(run_dir, baseline)
    for r in (run, run.baseline):
        if r is not None and r.damage:
            warnings.warn(
                f"{r.path}: damaged run directory: {len(r.damage)} problem(s) in its records (listed in .damage),"
                f" {len(r.damaged_repetitions)} repetition(s) touched; the frames hold only the intact records",
                DamagedRunWarning,
                stacklevel=2,
            )
    return run


def _with_testbeds(points: pd.DataFrame, meta: RunMeta) -> pd.DataFrame:
    """A distributed run's points get a ``testbed`` column: the testbed(s) that measured each (run.json
    ``point_testbeds``); other runs' points are returned as they are."""
    by_point = meta.point_testbeds
    if not by_point or points.empty:
        return points
    names = pd.Series([", ".join(by_point.get(str(pid), [])) for pid in points.index], index=points.index, dtype=object)
    return points.assign(testbed=names.where(names != "", None))


def measured_per_connection(run: Run | str | Path) -> tuple[float | None, str]:
    """(bytes per connection, where it came from) that an earlier run measured, for ``natbench plan --from``: the
    median ``memory / conn. (B)`` (:func:`~natbench.report.aggregate.fill_memory_frame`) over the kept fills at the
    run's largest number of connections (where the fixed costs of a fill weigh least); None when the run stored none.
    ``run``: a loaded :class:`Run` (its damage already judged by the caller) or a run directory, read through the
    run-directory format (a directory that is no run: StoreError)."""
    loaded = run if isinstance(run, Run) else Run(run)
    fills = aggregate.fill_memory_frame(loaded.trials).dropna(subset=["per_connection"])
    if fills.empty:
        return None, f"run {loaded.path} stored no memory per connection"
    largest = fills[fills["created_connections"] == fills["created_connections"].max()]
    n = int(largest["created_connections"].iloc[0])
    name = loaded.meta.campaign_name or loaded.path.name
    where = f"median of {len(largest)} fills of {n:,} connections in run {name} ({loaded.path})"
    return float(largest["per_connection"].median()), where
