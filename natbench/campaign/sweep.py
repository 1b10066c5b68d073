"""Sweep expansion: a campaign's product and zip axes -> working points.

Order of expansion (first = outermost, varies slowest):

1. ``traffic.frame_sizes`` (when the sweep has no ``frame_size`` axis),
2. the ``product`` axes in the order written,
3. the ``zip`` columns (innermost), all advanced together.

Every value is checked where it is written, so an error names its exact
place (``sweep.zip.src_ports[2]``).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from natbench.campaign.schema import CampaignSpec, DutSpec, resolve_param_value
from natbench.config.source import LocatedError, Path_
from natbench.config.validation import plain_message
from natbench.metrics import MetricSettings
from natbench.traffic.ports import PortRange
from natbench.values import MAX_CORES, format_count, parse_count, parse_port_range
from natbench.workingpoint import WorkingPoint

MAX_POINTS = 10_000
"""Most working points a campaign may expand to unless a command is told otherwise (``--max-points``): the
number is computed from the axes before anything is expanded, so a sweep of 10 axes x 4 values (1,048,576
points) is refused at once instead of filling memory. The seed campaigns have at most a few dozen points."""

_POINTS_LIMIT: ContextVar[int] = ContextVar("natbench_points_limit", default=MAX_POINTS)


@contextmanager
def points_limit(limit: int) -> Iterator[None]:
    """Allow campaigns of up to ``limit`` working points inside the ``with`` block (``--max-points``)."""
    token = _POINTS_LIMIT.set(limit)
    try:
        yield
    finally:
        _POINTS_LIMIT.reset(token)


AXES_HELP = "cores, src_ports, dst_ports, frame_size, duts.<dut>.<param>, metrics.<metric>.<setting>"
"""The sweep axes a campaign may name."""


@dataclass(frozen=True)
class Axis:
    """One parsed sweep axis: its key, its kind, its values and where each value was written."""

    key: str
    """The axis as written, e.g. ``duts.iptables.conntrack_max``."""
    kind: str
    """``cores``, ``src_ports``, ``dst_ports``, ``frame_size``, ``dut`` or ``metric``."""
    values: tuple[Any, ...]
    """Parsed values."""
    paths: tuple[Path_, ...]
    """Source path of each value."""
    target: tuple[str, str] = ("", "")
    """For ``dut`` / ``metric`` axes: (DUT or metric name, parameter or setting)."""


@dataclass
class _Point:
    cores: int | None
    src: PortRange | None
    dst: PortRange | None
    frame_size: int
    dut_params: dict[str, dict[str, Any]]
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: dict[str, Path_] = field(default_factory=dict)  # axis key -> path of the value used


def _parse_axis(spec: CampaignSpec, group: str, key: str, raw: list[Any]) -> Axis:
    base: Path_ = ("sweep", group, key)
    paths = tuple((*base, i) for i in range(len(raw)))
    duts = {d.name: d for d in spec.testbed.duts}

    def each(fn: Any) -> tuple[Any, ...]:
        out = []
        for i, v in enumerate(raw):
            try:
                out.append(fn(v))
            except ValueError as exc:
                raise LocatedError(paths[i], str(exc)) from None
        return tuple(out)

    if key == "cores":

        def cores(v: Any) -> int:
            n = parse_count(v)
            if n < 1:
                raise ValueError(f"cores must be at least 1, got {n}")
            if n > MAX_CORES:
                raise ValueError(f"cores must be at most {MAX_CORES}, got {n}")
            return n

        return Axis(key, "cores", each(cores), paths)
    if key in ("src_ports", "dst_ports"):
        return Axis(key, key, each(parse_port_range), paths)
    if key == "frame_size":

        def frame(v: Any) -> int:
            n = parse_count(v)
            if not 64 <= n <= 1518:
                raise ValueError(f"frame size must be 64..1518 bytes (IPv4 size), got {n}")
            return n

        if "frame_sizes" in spec.traffic.model_fields_set:
            raise LocatedError(base, "frame_size is swept here and also set in traffic.frame_sizes: keep one")
        return Axis(key, "frame_size", each(frame), paths)
    parts = key.split(".")
    if parts[0] == "duts":
        if len(parts) != 3 or not all(parts):
            raise LocatedError(base, f"a DUT axis is written duts.<dut>.<param>, got {key!r}")
        if parts[1] not in duts:
            raise LocatedError(base, f"no DUT named {parts[1]!r} (DUTs: {', '.join(duts)})")
        return Axis(key, "dut", each(resolve_param_value), paths, (parts[1], parts[2]))
    if parts[0] == "metrics":
        if len(parts) != 3 or not all(parts):
            raise LocatedError(base, f"a metric axis is written metrics.<metric>.<setting>, got {key!r}")
        selected = spec.metrics.selected()
        if parts[1] not in selected:
            raise LocatedError(base, f"metric {parts[1]!r} is not selected (selected: {', '.join(selected)})")
        fields = type(selected[parts[1]]).model_fields
        if parts[2] not in fields:
            raise LocatedError(base, f"{parts[1]} has no setting {parts[2]!r} (settings: {', '.join(fields)})")
        return Axis(key, "metric", tuple(raw), paths, (parts[1], parts[2]))
    raise LocatedError(base, f"unknown sweep axis {key!r}; axes are {AXES_HELP}")


def axes(spec: CampaignSpec) -> tuple[list[Axis], list[Axis]]:
    """Parse and check the product and zip axes of a campaign."""
    product = [_parse_axis(spec, "product", k, v) for k, v in spec.sweep.product.items()]
    zipped = [_parse_axis(spec, "zip", k, v) for k, v in spec.sweep.zip.items()]
    for k in spec.sweep.zip:
        if k in spec.sweep.product:
            raise LocatedError(("sweep", "zip", k), f"axis {k!r} is both in sweep.product and sweep.zip")
    if zipped:
        n = len(zipped[0].values)
        for ax in zipped[1:]:
            if len(ax.values) != n:
                raise LocatedError(
                    ("sweep", "zip", ax.key),
                    f"zip columns must have equal lengths: {ax.key} has {len(ax.values)} values, "
                    f"{zipped[0].key} has {n}",
                )
    return product, zipped


def cores_duts(spec: CampaignSpec, cores_swept: bool) -> list[DutSpec]:
    """The DUTs whose cores a working point's ``cores`` sets (first = ``swept_dut``); empty: none."""
    duts = spec.testbed.duts
    wanted = spec.sweep.cores_dut
    if wanted is not None:
        names = [wanted] if isinstance(wanted, str) else list(wanted)
        by_name = {d.name: d for d in duts}
        out = []
        for i, name in enumerate(names):
            if name not in by_name:
                path: Path_ = ("sweep", "cores_dut") if isinstance(wanted, str) else ("sweep", "cores_dut", i)
                raise LocatedError(path, f"no DUT named {name!r} (DUTs: {', '.join(by_name)})")
            out.append(by_name[name])
        if not out:
            raise LocatedError(("sweep", "cores_dut"), "name at least one DUT")
        return out
    if len(duts) == 1:
        return [duts[0]]
    if cores_swept:
        raise LocatedError(
            ("sweep", "cores_dut"),
            "cores are swept and there are several DUTs: name the DUT whose cores vary in sweep.cores_dut",
        )
    return []


def count_points(spec: CampaignSpec, product: list[Axis], zipped: list[Axis]) -> int:
    """The number of working points the axes expand to, computed without expanding them."""
    swept_frames = any(a.kind == "frame_size" for a in product + zipped)
    n = 1 if swept_frames else len(spec.traffic.frame_sizes)
    for ax in product:
        n *= len(ax.values)
    return n * (len(zipped[0].values) if zipped else 1)


def expand(spec: CampaignSpec, label_name: str) -> list[WorkingPoint]:
    """Expand a campaign into its working points (ids stable, labels unique); raise LocatedError.

    A campaign of more than :data:`MAX_POINTS` points (or the limit :func:`points_limit` sets) is refused
    before it is expanded.
    """
    product, zipped = axes(spec)
    _refuse_too_many(spec, product, zipped)
    cduts = cores_duts(spec, any(a.kind == "cores" for a in product + zipped))
    selected = spec.metrics.selected()
    points: list[WorkingPoint] = []
    seen: dict[str, int] = {}
    for combo in itertools.product(*_choices(spec, product, zipped)):
        p = _combined(spec, combo, cduts[0] if cduts else None)
        wp = _working_point(p, len(points), cduts, _check_metrics(selected, p), label_name)
        if wp.id in seen:
            where = list(p.sources.values())[-1] if p.sources else ("sweep",)
            raise LocatedError(where, f"working points {seen[wp.id]} and {wp.index} are identical")
        seen[wp.id] = wp.index
        points.append(wp)
    return _unique_labels(points)


def _refuse_too_many(spec: CampaignSpec, product: list[Axis], zipped: list[Axis]) -> None:
    """LocatedError when the axes expand to more points than the limit, naming how many and the factors."""
    limit = _POINTS_LIMIT.get()
    n = count_points(spec, product, zipped)
    if n <= limit:
        return
    shown = f"{n:,}" if n < 10**15 else f"about 10^{len(str(n)) - 1}"
    factors = [len(a.values) for a in product] + ([len(zipped[0].values)] if zipped else [])
    if not any(a.kind == "frame_size" for a in product + zipped):
        factors.insert(0, len(spec.traffic.frame_sizes))
    sizes = " x ".join(str(f) for f in factors)
    raise LocatedError(
        ("sweep",),
        f"expands to {shown} working points ({sizes}), "
        f"more than the limit of {limit:,}: sweep fewer values, or give --max-points N for a deliberate giant",
    )


def _choices(spec: CampaignSpec, product: list[Axis], zipped: list[Axis]) -> list[list[list[tuple[Axis, int]]]]:
    """The choices to combine, one list per group: the frame sizes (when no axis sweeps them), each product axis,
    the zipped axes together; a choice sets one value of each of its axes."""
    groups: list[list[list[tuple[Axis, int]]]] = []
    if not any(a.kind == "frame_size" for a in product + zipped):
        fs_axis = Axis(
            "frame_size",
            "frame_size",
            tuple(spec.traffic.frame_sizes),
            tuple(("traffic", "frame_sizes", i) for i in range(len(spec.traffic.frame_sizes))),
        )
        groups.append([[(fs_axis, i)] for i in range(len(fs_axis.values))])
    for ax in product:
        groups.append([[(ax, i)] for i in range(len(ax.values))])
    if zipped:
        groups.append([[(ax, i) for ax in zipped] for i in range(len(zipped[0].values))])
    return groups


def _combined(spec: CampaignSpec, combo: tuple[list[tuple[Axis, int]], ...], cdut: DutSpec | None) -> _Point:
    """The campaign's values (``cdut``'s cores) with one combination of choices applied; LocatedError when it has no
    port range."""
    p = _Point(
        cores=cdut.cores if cdut is not None else None,
        src=spec.traffic.src_ports,
        dst=spec.traffic.dst_ports,
        frame_size=spec.traffic.frame_sizes[0],
        dut_params={d.name: dict(d.params) for d in spec.testbed.duts},
    )
    for choice in combo:
        for ax, i in choice:
            _apply(p, ax, i)
    if p.src is None or p.dst is None:
        which = "src_ports" if p.src is None else "dst_ports"
        raise LocatedError(("traffic", which), f"{which} is required: set traffic.{which} or sweep it")
    return p


def _working_point(
    p: _Point, index: int, cduts: list[DutSpec], overrides: dict[str, dict[str, Any]], label_name: str
) -> WorkingPoint:
    """The working point ``index`` of the combined values ``p`` (its cores set on ``cduts``, the first swept)."""
    assert p.src is not None and p.dst is not None  # _combined refuses a point without them
    cdut = cduts[0] if cduts else None
    return WorkingPoint(
        index=index,
        src_ports=p.src,
        dst_ports=p.dst,
        frame_size=p.frame_size,
        cores=p.cores,
        dut_params=p.dut_params,
        swept_dut=cdut.name if cdut is not None and p.cores is not None else None,
        co_swept_duts=tuple(d.name for d in cduts[1:]) if p.cores is not None else (),
        name=label_name,
        metric_settings=overrides,
    )


def _apply(p: _Point, ax: Axis, i: int) -> None:
    v = ax.values[i]
    p.sources[ax.key] = ax.paths[i]
    if ax.kind == "cores":
        p.cores = v
    elif ax.kind == "src_ports":
        p.src = v
    elif ax.kind == "dst_ports":
        p.dst = v
    elif ax.kind == "frame_size":
        p.frame_size = v
    elif ax.kind == "dut":
        dut, param = ax.target
        p.dut_params[dut][param] = v
    elif ax.kind == "metric":
        metric, setting = ax.target
        p.metrics.setdefault(metric, {})[setting] = v


def _check_metrics(selected: dict[str, MetricSettings], p: _Point) -> dict[str, dict[str, Any]]:
    """Validate per-point metric overrides merged into their base settings; return them parsed."""
    out: dict[str, dict[str, Any]] = {}
    for metric, over in p.metrics.items():
        base = selected[metric]
        merged = {**base.model_dump(exclude_unset=True), **over}
        try:
            settings = type(base).model_validate(merged)
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = [str(x) for x in err["loc"]]
            setting = loc[0] if loc and loc[0] in over else next(iter(over))
            path = p.sources[f"metrics.{metric}.{setting}"]
            raise LocatedError(path, plain_message(err["msg"])) from None
        out[metric] = {k: getattr(settings, k) for k in over}
    return out


def settings_for(base: MetricSettings, overrides: dict[str, Any]) -> MetricSettings:
    """``base`` with a working point's overrides applied (already validated by :func:`expand`)."""
    if not overrides:
        return base
    return base.model_copy(update=overrides)


def _unique_labels(points: list[WorkingPoint]) -> list[WorkingPoint]:
    """Add disambiguating parts (frame size, port split, DUT parameters, metric settings) until labels are unique.

    A part is added to every label of the campaign, and only when the labels
    would otherwise collide, so the common case stays ``iptables-4c-4M``.
    """
    from dataclasses import replace

    def dup(tags: list[list[str]]) -> bool:
        labels = [_with(p.label, t) for p, t in zip(points, tags, strict=True)]
        return len(set(labels)) != len(labels)

    tags: list[list[str]] = [[] for _ in points]
    candidates: list[Any] = [
        lambda p: f"{p.frame_size}B",
        lambda p: f"{len(p.src_ports)}x{len(p.dst_ports)}",
        lambda p: f"{p.src_ports}x{p.dst_ports}",
    ]
    dut_keys = sorted({(d, k) for p in points for d, ps in p.dut_params.items() for k in ps})
    for d, k in dut_keys:
        candidates.append(lambda p, d=d, k=k: f"{k}{_short(p.dut_params.get(d, {}).get(k))}")
    metric_keys = sorted({(m, k) for p in points for m, s in p.metric_settings.items() for k in s})
    for m, k in metric_keys:
        candidates.append(lambda p, m=m, k=k: f"{m}.{k}{_short(p.metric_settings.get(m, {}).get(k))}")
    for make in candidates:
        if not dup(tags):
            break
        parts = [make(p) for p in points]
        if len(set(parts)) > 1:  # only a part that varies can disambiguate
            for t, part in zip(tags, parts, strict=True):
                t.append(part)
    return [replace(p, tag="-".join(t)) for p, t in zip(points, tags, strict=True)]


def _with(label: str, tags: list[str]) -> str:
    return "-".join([label, *tags])


_UNPRINTABLE = re.compile(r"[\x00-\x20\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")
LABEL_VALUE_CHARS = 32
"""Longest part of a label taken from a value (labels name working points in tables and file names)."""


def _short(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v).lower()
    if isinstance(v, int):
        return format_count(v).replace(",", "") if v >= 1024 and v & (v - 1) == 0 else str(v)
    if isinstance(v, float):
        return f"{v:g}"
    text = _UNPRINTABLE.sub("_", str(v))  # blanks, escape sequences and other controls never reach a label
    if len(text) <= LABEL_VALUE_CHARS:
        return text
    digest = hashlib.sha256(str(v).encode("utf-8", "replace")).hexdigest()[:7]  # long values stay distinct
    return f"{text[: LABEL_VALUE_CHARS - 8]}~{digest}"
