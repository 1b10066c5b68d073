"""Shared fixtures: synthetic run directories carrying the seeds' published numbers.

Each working point gets repetitions whose median / min / max are exactly the values a seed figure
PRINTS (natbench.testing.rundir.spread), stored as the engine stores them (natbench/metrics/):
frame rates per direction with ``directions`` = 2 and ``all_frames_per_second``, the search error
as the search's final width per direction (the seed's printed error: the stop error as set), and
tear-down delete times under the engine's keys. Nothing here is adjusted so that a derived cell
comes out: where a seed computed a cell from unrounded values it does not print, the test says so
and checks the printed cell against the interval the rounding of the printed inputs allows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from selectable_ids import spelled
from system_needs import MARKER_NEEDS, unmet

from natbench.campaign import load_campaign
from natbench.metrics.context import ProcedureContext
from natbench.metrics.throughput import _throughput_result
from natbench.metrics.trial import search_extra
from natbench.results import RepetitionResult
from natbench.run.spec import spec_from_campaign
from natbench.run.writer import RunStore
from natbench.search import SearchOutcome
from natbench.search.binary import search_steps
from natbench.testing.rundir import make_point, monitor_extra, result_record, spread, trial_record, write_run_dir
from natbench.workingpoint import WorkingPoint

# No property test has a time limit: on a loaded machine (or under the mutation run's instrumented code) an example
# may take longer than hypothesis's default 200 ms; speed is shown by bench/ scripts, never by timed unit tests.
settings.register_profile("natbench", deadline=None)
settings.load_profile("natbench")

_UNMET: dict[str, str | None] = {}


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """Spell a text parameter pytest would escape so that its test can be selected by id (selectable_ids)."""
    if not isinstance(val, str | bytes):
        return None
    shown = spelled(val)
    return None if shown == val else shown


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip a lab / ssh / vm test, naming why, when this machine lacks root or a program that part needs."""
    for marker in MARKER_NEEDS:
        if item.get_closest_marker(marker) is None:
            continue
        if marker not in _UNMET:
            _UNMET[marker] = unmet(marker)
        reason = _UNMET[marker]
        if reason:
            pytest.skip(f"{marker} test: {reason}")


CAMPAIGNS = Path(__file__).resolve().parent.parent / "campaigns"

# seed 000 Figure 2 (draft-lencse-v6ops-transition-scalability-02, section 2.2, page 5), typed in from
# /work/shared/seeds/000_623cf3fe42de359c.txt: iptables, 1..16 cores, 4,000 x 1,000 ports, conntrack and
# hash size 2^23, 10 experiments. tests/golden/seed000-fig2.txt holds the figure as printed.
FIG2_CORES = [1, 2, 4, 8, 16]
FIG2_ERROR = [100, 100, 100, 1000, 1000]
FIG2_CPS = [  # (median, min, max) in 1,000 cps
    (223.5, 221.6, 226.7),
    (371.1, 367.7, 375.9),
    (708.7, 701.7, 723.6),
    (1341, 1325, 1376),
    (2383, 2304, 2417),
]
FIG2_TP = [  # all frames per second, in 1,000 fps
    (414.9, 413.9, 416.1),
    (742.3, 740.6, 746.9),
    (1379, 1373, 1395),
    (2336, 2311, 2361),
    (4557, 4436, 4627),
]
FIG2_FWD_ERROR = [200, 500, 1000, 1000, 1000]
FIG2_FWD = [  # all frames per second, in 1,000 fps, as printed
    (910.9, 874.8, 914.3),
    (1523, 1485, 1534),
    (3016, 2951, 3037),
    (5920, 5811, 5940),
    (11561, 10998, 11627),
]


def _series(
    pid: str,
    metric: str,
    unit: str,
    mmm: tuple[float, float, float],
    n: int,
    *,
    scale: float,
    error: float | None,
    per_direction: bool = False,
) -> list[dict[str, Any]]:
    """``n`` repetitions of a search metric with the printed (median, min, max) x ``scale``.

    ``per_direction``: ``mmm`` are all-frames-per-second figures of a bidirectional test; the engine
    stores each repetition's per-direction rate (half of it), ``directions`` = 2 and the all-frames
    figure. ``error`` is the search's final width as the engine stores it (per direction, never halved
    or doubled: the seeds' error row is the search's stop error).
    """
    out = []
    for rep, v in enumerate(spread(mmm[0] * scale, mmm[1] * scale, mmm[2] * scale, n)):
        value = v
        extra: dict[str, Any] = {}
        if per_direction:  # natbench/metrics/throughput.py _throughput_result
            value = v / 2
            extra.update(directions=2, direction_mode="bidirectional", all_frames_per_second=value * 2)
        if error is not None:  # the search's final bounds: the value is the lower one
            extra.update(lower=value, upper=value + error)
        out.append(result_record(pid, metric, rep, value, unit, error=error, extra=extra))
    return out


def fig2_run(root: Path) -> Path:
    """Seed 000 Figure 2 as a run directory (cps, throughput and the forwarding baseline)."""
    points, records = [], []
    for i, cores in enumerate(FIG2_CORES):
        p = make_point(
            i,
            (1, 4000),
            (1, 1000),
            cores=cores,
            name="iptables",
            dut_params={"dut": {"conntrack_max": 2**23, "hashsize": 2**23}},
            swept_dut="dut",
        )
        points.append(p)
        records += _series(p.id, "cps", "cps", FIG2_CPS[i], 10, scale=1e3, error=FIG2_ERROR[i])
        records += _series(
            p.id, "throughput", "fps", FIG2_TP[i], 10, scale=1e3, error=FIG2_ERROR[i], per_direction=True
        )
        records += _series(
            p.id, "forwarding", "fps", FIG2_FWD[i], 10, scale=1e3, error=FIG2_FWD_ERROR[i], per_direction=True
        )
        # a few search steps with CPU idle samples of the DUT (seed 004 Figures 12-22 shape)
        records.append(
            trial_record(
                p.id,
                "throughput",
                0,
                0,
                rate=FIG2_TP[i][0] * 500,
                started_at=1000.0 + i,
                kind="phase2",
                extra=monitor_extra("dut", cores, 10),
            )
        )
    return write_run_dir(root, points, records, campaign_name="seed000-fig2")


# seed 000 Figure 5: iptables tear-down vs connections, delete times in seconds as printed.
FIG5_PORTS = [(2500, 625), (5000, 1250), (10000, 2500), (20000, 5000), (40000, 10000), (40000, 20000)]
FIG5_SIZES = [(21, 21), (23, 23), (25, 25), (27, 27), (29, 28), (30, 28)]
FIG5_EXP = [10, 10, 10, 10, 10, 5]
FIG5_FILLED = [
    (4.33, 4.25, 4.38),
    (18.05, 17.93, 18.20),
    (74.47, 72.04, 75.13),
    (305.33, 299.06, 310.05),
    (1178.3, 1164.0, 1188.3),
    (2263.1, 2259.6, 2275.2),
]
FIG5_EMPTY = [
    (0.55, 0.55, 0.57),
    (1.28, 1.26, 1.29),
    (4.17, 4.16, 4.22),
    (15.74, 15.73, 15.79),
    (31.2, 31.1, 31.2),
    (31.2, 31.1, 31.2),
]


def teardown_run(
    root: Path,
    ports: list[tuple[int, int]],
    filled: list[tuple[float, float, float]],
    empty: list[tuple[float, float, float]],
    exps: list[int],
    *,
    name: str,
    sizes: list[tuple[int, int]] | None = None,
    cores: int | None = None,
) -> Path:
    """A tear-down run: per point, repetitions with the given filled / empty delete times."""
    points, records = [], []
    for i, (src, dst) in enumerate(ports):
        params = {"dut": {"conntrack_max": 2 ** sizes[i][0], "hashsize": 2 ** sizes[i][1]}} if sizes else {}
        p = make_point(
            i, (1, src), (1, dst), cores=cores, name=name, dut_params=params, swept_dut="dut" if sizes else None
        )
        points.append(p)
        n = p.connections
        for rep, (tn, t0) in enumerate(zip(spread(*filled[i], exps[i]), spread(*empty[i], exps[i]), strict=True)):
            extra = {  # natbench/metrics/teardown.py: every repetition timed its own empty table
                "T_N": tn,
                "T_0": t0,
                "filled_delete_s": tn,
                "empty_delete_s": t0,
                "deletion_time": tn - t0,
                "connections": n,
                "T_0_measured": True,
            }
            records.append(result_record(p.id, "teardown", rep, n / (tn - t0), "conn/s", extra=extra))
    return write_run_dir(root, points, records, campaign_name=f"{name}-teardown")


@pytest.fixture
def fig2_dir(tmp_path: Path) -> Path:
    """Run directory reproducing seed 000 Figure 2."""
    return fig2_run(tmp_path / "fig2")


@pytest.fixture
def fig5_dir(tmp_path: Path) -> Path:
    """Run directory reproducing seed 000 Figure 5."""
    return teardown_run(
        tmp_path / "fig5", FIG5_PORTS, FIG5_FILLED, FIG5_EMPTY, FIG5_EXP, name="iptables", sizes=FIG5_SIZES
    )


def perf_run(
    root: Path,
    ports: list[tuple[int, int]],
    series: dict[str, list[tuple[float, float, float]]],
    *,
    name: str,
    cores: list[int | None] | None = None,
    scale: float = 1.0,
    exps: list[int] | None = None,
    errors: dict[str, list[float]] | None = None,
    sizes: list[tuple[int, int]] | None = None,
) -> Path:
    """A run with the given (median, min, max) per metric and point; throughput and forwarding
    values are all-frames-per-second figures, stored per direction with directions = 2."""
    points, records = [], []
    n = len(ports)
    for i, (src, dst) in enumerate(ports):
        params = {"dut": {"conntrack_max": 2 ** sizes[i][0], "hashsize": 2 ** sizes[i][1]}} if sizes else {}
        p = make_point(
            i,
            (1, src),
            (1, dst),
            cores=(cores or [None] * n)[i],
            name=name,
            dut_params=params,
            swept_dut="dut" if sizes else None,
        )
        points.append(p)
        for metric, mmm in series.items():
            unit = "cps" if metric == "cps" else "fps"
            err = (errors or {}).get(metric, [None] * n)[i]  # type: ignore[list-item]
            records += _series(
                p.id,
                metric,
                unit,
                mmm[i],
                (exps or [10] * n)[i],
                scale=scale,
                error=err,
                per_direction=unit == "fps",
            )
    return write_run_dir(root, points, records, campaign_name=name)


def engine_result(
    ctx: ProcedureContext[Any], value: float, width: float, lower: float, upper: float
) -> RepetitionResult:
    """The RepetitionResult the engine's procedure stores for a binary search that ended at ``value`` with final
    bounds ``value`` .. ``value + width``: built by the engine's own result code (natbench/metrics/throughput.py
    ``_throughput_result`` for throughput and forwarding; natbench/metrics/cps.py's last line for cps).
    ``lower`` / ``upper``: the search range the campaign sets (the number of steps the search took)."""
    steps = search_steps(lower, upper, width)
    out = SearchOutcome(value=value, lower=value, upper=value + width, steps=steps, invalid=0, at_upper_limit=False)
    if ctx.metric == "forwarding":  # forwarding(): a stateless DUT has no table to empty (_optional_reset)
        return _throughput_result(ctx, out, table_reset=False, algorithm="binary")
    if ctx.metric == "throughput":
        return _throughput_result(ctx, out, algorithm="binary")
    # natbench/metrics/cps.py's last lines, with its default validation (every step, so the result is validated)
    return ctx.result(
        out.value,
        error=out.error,
        **search_extra(out),
        validation="every_step",
        validated=True,
        algorithm="binary",
        rejected=[],
    )


def store_campaign_run(
    root: Path,
    campaign_file: str,
    series: dict[str, list[tuple[float, float, float]]],
    widths: dict[str, list[float]],
    *,
    scale: float,
    repetitions: int,
    only: list[int] | None = None,
    edit: Callable[[str], str] | None = None,
    points: Callable[[list[WorkingPoint]], list[WorkingPoint]] | None = None,
) -> Path:
    """A run directory written by the engine's store (RunStore) for a campaign of ``campaigns/``: its working
    points and resolved settings, and per point and metric ``repetitions`` results whose reported median / min /
    max are ``series`` x ``scale`` (frame rates: all frames per second, stored per direction as the engine
    does) with the search's final width ``widths`` (as stored: per direction for frame rates).

    ``only``: the indexes of the points that get results (the others are listed but unmeasured: the run is marked
    failed, as one that stopped before them; a complete run holds every point's records); ``edit``: a change
    of the campaign's text before it is loaded; ``points``: a change of its list of working points."""
    source = CAMPAIGNS / campaign_file
    if edit is not None:
        root.parent.mkdir(parents=True, exist_ok=True)
        source = root.parent / f"{root.name}.yaml"
        source.write_text(edit((CAMPAIGNS / campaign_file).read_text()))
    campaign = load_campaign(source)
    text = campaign.to_yaml()
    spec = spec_from_campaign(campaign, text, campaign_file)
    pts = spec.points if points is None else points(spec.points)
    with RunStore.create(root, campaign_text=text, points=pts, campaign_name=campaign.name) as store:
        for i, point in enumerate(pts):
            if only is not None and i not in only:
                continue
            for metric, mmm in series.items():
                settings = spec.settings(point, metric)
                n = len(settings.directions.active) if metric in ("throughput", "forwarding") else 1
                values = spread(mmm[i][0] * scale, mmm[i][1] * scale, mmm[i][2] * scale, repetitions)
                for rep, reported in enumerate(values):
                    ctx = _result_context(point, metric, rep, settings)
                    res = engine_result(ctx, reported / n, widths[metric][i], settings.lower, settings.upper)
                    store.append_result(res)
        store.set_status("complete" if only is None else "failed")
    return root


def _result_context(point: WorkingPoint, metric: str, repetition: int, settings: Any) -> ProcedureContext[Any]:
    """The context a procedure builds its result in; no traffic runs here, so no tester, DUT or plan."""
    return ProcedureContext(
        tester=None,  # type: ignore[arg-type]
        dut=None,  # type: ignore[arg-type]
        point=point,
        plan=None,  # type: ignore[arg-type]
        metric=metric,
        repetition=repetition,
        settings=settings,
        emit=lambda rec: None,
    )


def fig2_store_runs(root: Path) -> tuple[Path, Path]:
    """Seed 000 Figure 2 as the two run directories its two campaigns write: the NAT run (cps, throughput) and
    the plain forwarding run (the baseline), written by the engine's store with the figure's printed values.

    The stored search widths are the figure's error rows (100 / 1,000; 200 / 500 / 1,000): the width every
    search ends with (its grid of lower + k x error, docs/report.md)."""
    nat = store_campaign_run(
        root / "nat",
        "seed000-fig2-iptables-cores.yaml",
        {"cps": FIG2_CPS, "throughput": FIG2_TP},
        {"cps": [float(e) for e in FIG2_ERROR], "throughput": [float(e) for e in FIG2_ERROR]},
        scale=1e3,
        repetitions=10,
    )
    fwd = store_campaign_run(
        root / "fwd",
        "seed000-fig2-forwarding-cores.yaml",
        {"forwarding": FIG2_FWD},
        {"forwarding": [float(e) for e in FIG2_FWD_ERROR]},
        scale=1e3,
        repetitions=10,
    )
    return nat, fwd
