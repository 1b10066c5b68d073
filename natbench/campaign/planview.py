"""The plan of a campaign as ``natbench plan`` shows it: a core object the command line only renders.

:meth:`PlanView.build` works out what ``natbench plan`` says about a campaign: its facts (tester, traffic, DUTs,
metric settings), the working points with the parameters that vary between them and each point's trials and
estimated duration (:mod:`natbench.campaign.estimate`), what the fast search saves against the binary one, the
memory check and each point's table memory, fill and delete-all times (:mod:`natbench.campaign.feasibility`),
whether the tear-down points have connections enough to time (:mod:`natbench.campaign.teardown_check`) and the
recipe check's warnings. The command line renders it as a rich table, plain text or JSON (:meth:`PlanView.to_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from natbench.campaign.estimate import Estimate, estimate, format_duration, has_algorithm
from natbench.campaign.feasibility import MemoryCheck, PointScale, memory_check
from natbench.campaign.recipes import check_recipes
from natbench.campaign.teardown_check import TeardownCheck, teardown_check
from natbench.search import SearchAlgorithm
from natbench.search.declare import algorithm, algorithm_names, reference_algorithm
from natbench.traffic.plan import wire_frame_sizes
from natbench.values import format_bytes, format_count

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign
    from natbench.metrics.teardown_resolution import DeletionProfile


SMALL_SAVING = 1.1
"""Below this ratio of tester time the plan says the saving in percent (``only 4 % less``), never ``1.0x``."""


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return format_count(v) if v >= 10_000 or (v >= 1024 and v & (v - 1) == 0) else str(v)
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() else f"{v:g}"
    return str(v)


def varying(campaign: Campaign) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(dut, param) and (metric, setting) pairs whose value differs between the campaign's working points (the
    repetitions of a metric aside: they have a column of their own)."""
    points = campaign.points()
    duts = sorted({(d, k) for p in points for d, ps in p.dut_params.items() for k in ps})
    dut_vary = [(d, k) for d, k in duts if len({repr(p.dut_params.get(d, {}).get(k)) for p in points}) > 1]
    mets = sorted({(m, k) for p in points for m, s in p.metric_settings.items() for k in s if k != "repetitions"})
    met_vary = [(m, k) for m, k in mets if len({repr(p.metric_settings.get(m, {}).get(k)) for p in points}) > 1]
    return dut_vary, met_vary


@dataclass(frozen=True)
class AlgorithmComparison:
    """The campaign estimated with every search metric on the reference search algorithm and on each algorithm that
    declares how ``natbench plan`` counts it (the rest of the campaign as it says)."""

    reference: SearchAlgorithm
    """The algorithm the others are compared with (the seeds' binary search)."""
    compared: tuple[SearchAlgorithm, ...]
    """The algorithms compared with it (each with its :attr:`~natbench.search.SearchAlgorithm.plan_note`)."""
    estimates: dict[str, Estimate]
    """Algorithm name -> the campaign's estimate with it."""

    def saving(self, other: SearchAlgorithm) -> float:
        """Seconds of tester time ``other`` saves against the reference (negative: it costs more)."""
        return self.estimates[self.reference.name].seconds - self.estimates[other.name].seconds

    def line(self) -> str:
        """What each compared algorithm saves against the reference, in one line; never a negative saving."""
        ref = self.reference.name
        old = self.estimates[ref]
        head = f"search algorithms: {ref} {old.trials:,} trials, {format_duration(old.seconds)}"
        return "; ".join([head, *(self._saving(other) for other in self.compared)])

    def _saving(self, other: SearchAlgorithm) -> str:
        old, new = self.estimates[self.reference.name], self.estimates[other.name]
        head = f"{other.name} {new.trials:,} trials, {format_duration(new.seconds)}"
        saving = self.saving(other)
        if saving <= 0:
            return f"{head}: {other.name} saves no tester time here ({other.plan_note})"
        ratio = old.seconds / new.seconds if new.seconds else float("inf")
        if ratio < SMALL_SAVING:
            what = f"only {100 * saving / old.seconds:.0f} % less tester time"
        else:
            what = f"{ratio:.1f}x less tester time"
        return f"{head}: {what} (saves {format_duration(saving)}; {other.plan_note})"

    def to_dict(self) -> dict[str, dict[str, float]]:
        """Per algorithm its trials and seconds."""
        return {a: {"trials": e.trials, "seconds": e.seconds} for a, e in self.estimates.items()}


def compare_algorithms(campaign: Campaign) -> AlgorithmComparison | None:
    """The reference search algorithm against each that declares a plan note, for the metrics that offer both;
    None when no metric of the campaign offers any such pair."""
    algorithms = [algorithm(n) for n in algorithm_names()]
    reference = reference_algorithm()
    settings = [campaign.settings_for(p, m) for p in campaign.points() for m in campaign.metrics]
    compared = tuple(
        a
        for a in algorithms
        if a.plan_note is not None
        and any(has_algorithm(s, reference.name) and has_algorithm(s, a.name) for s in settings)
    )
    if not compared:
        return None
    estimates = {a.name: estimate(campaign, a.name) for a in (reference, *compared)}
    return AlgorithmComparison(reference, compared, estimates)


@dataclass(frozen=True)
class PlanView:
    """What ``natbench plan`` shows of one campaign (build it with :meth:`build`)."""

    campaign: Campaign
    """The campaign."""
    estimate: Estimate
    """Its trials and duration per working point and metric."""
    facts: tuple[str, ...]
    """The lines before the table: campaign, tester and traffic, each DUT, each metric's settings, the output."""
    header: tuple[str, ...]
    """The working-point table's columns (the parameters that vary between points among them)."""
    rows: tuple[tuple[str, ...], ...]
    """One row of cells per working point."""
    algorithms: AlgorithmComparison | None
    """What the fast search saves (None: no metric offers it)."""
    memory: MemoryCheck
    """Whether the points' connections fit in the DUTs' memory."""
    recipe_warnings: tuple[str, ...] = field(default=())
    """The recipe check's warnings (a DUT timeout shorter than a trial, ...); empty when recipes were not checked."""
    teardown: TeardownCheck = field(default_factory=TeardownCheck)
    """Whether each tear-down point's delete-all lasts long enough to time (the seeds' or a run's figures)."""

    @classmethod
    def build(
        cls,
        campaign: Campaign,
        *,
        recipes: bool = True,
        measured: float | None = None,
        measured_source: str | None = None,
        deletion: DeletionProfile | None = None,
    ) -> PlanView:
        """The plan of ``campaign``; ``recipes``: check the DUT recipes and their parameters first (a ConfigError
        for a campaign ``natbench validate`` rejects); ``measured``: bytes per connection an earlier run measured
        (``measured_source`` says where), for the memory check; ``deletion``: the delete-all rate and empty-table
        noise an earlier run measured, for the tear-down check (else the seeds' figures per recipe)."""
        warnings = check_recipes(campaign).warnings if recipes else ()
        est = estimate(campaign)
        mem = memory_check(campaign, measured, measured_source, deletion=deletion)
        if measured is None and measured_source is not None:  # an earlier run was asked, but it stored no figure
            mem = MemoryCheck(mem.warnings, (measured_source, *mem.notes), mem.points, mem.time_notes)
        header, rows = _table(campaign, est, mem.points)
        facts = tuple(_facts(campaign))
        algorithms = compare_algorithms(campaign)
        return cls(campaign, est, facts, header, rows, algorithms, mem, warnings, teardown_check(campaign, deletion))

    @property
    def total(self) -> str:
        """The line under the table: points, trials, estimated duration."""
        e = self.estimate
        return f"{len(e.points)} working points, {e.trials:,} trials, estimated duration {format_duration(e.seconds)}"

    @property
    def warnings(self) -> tuple[str, ...]:
        """Everything that may spoil the run: the recipe check's warnings, then the memory and tear-down checks'."""
        return (*self.recipe_warnings, *self.memory.warnings, *self.teardown.warnings)

    @property
    def notes(self) -> tuple[str, ...]:
        """What the estimate leaves out, what the memory check could not check, the figures of the fill and
        delete-all times and the tear-down check's figures."""
        return (*self.estimate.notes, *self.memory.notes, *self.memory.time_notes, *self.teardown.notes)

    def to_dict(self) -> dict[str, Any]:
        """The plan as plain JSON data (``natbench plan --format json``)."""
        c, e = self.campaign, self.estimate
        return {
            "campaign": c.name,
            "file": str(c.file),
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
                    "wire_frame_sizes": list(wire_frame_sizes(c.traffic.family, pe.point.frame_size)),
                    "dut_params": pe.point.dut_params,
                    "swept_dut": pe.point.swept_dut,
                    "metric_settings": pe.point.metric_settings,
                    "metrics": {
                        m.metric: {"repetitions": m.repetitions, "trials": m.trials, "seconds": m.seconds}
                        for m in pe.metrics
                    },
                    "trials": pe.trials,
                    "seconds": pe.seconds,
                    **_scale_dict(self.memory.points, pe.point.index),
                }
                for pe in e.points
            ],
            "trials": e.trials,
            "seconds": e.seconds,
            "algorithms": self.algorithms.to_dict() if self.algorithms is not None else {},
            "notes": list(e.notes),
            "memory": {
                "warnings": list(self.memory.warnings),
                "notes": list(self.memory.notes),
                "time_notes": list(self.memory.time_notes),
            },
            "teardown": {"warnings": list(self.teardown.warnings), "notes": list(self.teardown.notes)},
        }


def _frame(campaign: Campaign, frame_size: int) -> str:
    """The frame size column: the IPv4 size, or the IPv6 frames' when both sides carry IPv6 (RFC 8219: +20)."""
    family = campaign.traffic.family
    if family.private_ipv6 and family.public_ipv6:
        return f"{wire_frame_sizes(family, frame_size)[0]} (IPv6)"
    return str(frame_size)


def _repetitions(pe: Any) -> str:
    reps = {m.metric: m.repetitions for m in pe.metrics}
    if len(set(reps.values())) == 1:
        return str(next(iter(reps.values())))
    return " ".join(f"{k}:{v}" for k, v in reps.items())


def _scale_dict(points: tuple[PointScale, ...], index: int) -> dict[str, Any]:
    """The JSON of one point's table memory (bytes per DUT), fill and delete-all seconds (None: not known)."""
    s = next((s for s in points if s.index == index), None)
    if s is None:
        return {}
    return {"table_memory": dict(s.tables), "fill_seconds": s.fill_seconds, "flush_seconds": s.flush_seconds}


def _scale_cells(s: PointScale | None, multi: bool) -> list[str]:
    """The table memory, fill and delete-all cells of one point."""
    if s is None:
        return ["-", "-", "-"]
    tables = ", ".join(f"{d} {_gb(b)}" if multi else _gb(b) for d, b in s.tables) or "-"
    return [tables, _duration(s.fill_seconds), _duration(s.flush_seconds)]


def _duration(seconds: float | None) -> str:
    """A fill's or a delete-all's time: ``0.039 s``, ``3.8 s``, ``60 s``, ``3 min``; ``-``: not known."""
    if seconds is None:
        return "-"
    return f"{seconds:.2g} s" if seconds < 10 else format_duration(seconds)


def _gb(n: float) -> str:
    """A table's memory, short: ``12.8 GB``, ``400 MB``."""
    return format_bytes(n).split(" (")[0]


def _table(
    campaign: Campaign, est: Estimate, scale: tuple[PointScale, ...] = ()
) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """Header and rows of the working-point table (with the table memory, fill and delete-all columns when any
    of them is known)."""
    dut_vary, met_vary = varying(campaign)
    multi = len(campaign.testbed.duts) > 1
    cores_head = "cores"
    swept = {d for p in campaign.points() if p.swept_dut for d in (p.swept_dut, *p.co_swept_duts)}
    if multi and swept:
        cores_head = f"cores ({', '.join(sorted(swept))})"
    header = ["#", "label", "id", cores_head, "src ports", "dst ports", "connections", "frame"]
    header += [f"{d}.{k}" if multi else k for d, k in dut_vary]
    header += [f"{m}.{k}" for m, k in met_vary]
    header += ["reps", "trials", "est."]
    shown = any(s.tables or s.fill_seconds is not None or s.flush_seconds is not None for s in scale)
    if shown:
        header += ["table mem.", "fill", "delete-all"]
    by_index = {s.index: s for s in scale}
    rows = []
    for pe in est.points:
        p = pe.point
        row = [
            str(p.index),
            p.label,
            p.id,
            "-" if p.cores is None else str(p.cores),
            f"{p.src_ports} ({len(p.src_ports):,})",
            f"{p.dst_ports} ({len(p.dst_ports):,})",
            f"{p.connections:,}",
            _frame(campaign, p.frame_size),
        ]
        row += [_value(p.dut_params.get(d, {}).get(k)) for d, k in dut_vary]
        row += [_value(campaign.settings_for(p, m).model_dump()[k]) for m, k in met_vary]
        row += [_repetitions(pe), f"{pe.trials:,}", format_duration(pe.seconds)]
        if shown:
            row += _scale_cells(by_index.get(p.index), multi)
        rows.append(tuple(row))
    return tuple(header), tuple(rows)


def _facts(campaign: Campaign) -> list[str]:
    dut_vary, _ = varying(campaign)
    vary = set(dut_vary)
    lines = [f"campaign {campaign.name} ({campaign.file}), schema_version {campaign.spec.schema_version}"]
    t = campaign.traffic
    lines.append(
        f"tester: {campaign.testbed.tester.kind}; traffic: {t.family.value}, {t.directions.value}, "
        f"acceptance {t.acceptance:g} loss, seed {t.seed}, responder {campaign.responder_mode.value}"
    )
    for d in campaign.testbed.duts:
        fixed = {k: v for k, v in d.params.items() if (d.name, k) not in vary}
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
    return lines
