"""``points.json``: the working points of a run, one :class:`PointRecord` each."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from natbench.run.format.fields import (
    FieldError,
    as_int,
    as_list,
    as_object,
    as_optional_int,
    as_optional_str,
    as_str,
    plain_json,
    shown,
)
from natbench.traffic.ports import PortRange
from natbench.workingpoint import WorkingPoint


@dataclass(frozen=True)
class PointRecord:
    """One working point as points.json stores it: every :class:`~natbench.workingpoint.WorkingPoint` field, and
    the id, label and number of connections derived from them when the run was written."""

    id: str
    """Stable id of the working point (the hash of its parameters when it was stored)."""
    index: int
    """Position in the campaign's expansion order (0-based)."""
    label: str
    """Readable label (``iptables-4c-4M``)."""
    name: str
    """Short name of the DUT implementation used in labels."""
    cores: int | None
    """Active CPU cores of the swept DUT (None: left as is)."""
    src_ports: PortRange
    """Initiator source port range."""
    dst_ports: PortRange
    """Responder destination port range."""
    connections: int
    """Number of connections |S| x |D|."""
    frame_size: int
    """IPv4 frame size in bytes."""
    dut_params: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per DUT name: recipe parameters resolved for this point."""
    swept_dut: str | None = None
    """Name of the DUT whose cores are swept (dual-DUT campaigns)."""
    metric_settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per metric name: settings this point overrides (a per-column search error, acceptance, ...); stored only
    when the point has some (points.json of runs from before this field lists none)."""
    co_swept_duts: tuple[str, ...] = ()
    """Further DUTs whose active cores follow :attr:`cores`; stored only when there are some."""
    tag: str = ""
    """Extra label part that keeps labels unique in a campaign; stored only when set."""

    @classmethod
    def of(cls, point: WorkingPoint) -> PointRecord:
        """The record of a working point."""
        return cls(
            id=point.id,
            index=point.index,
            label=point.label,
            name=point.name,
            cores=point.cores,
            src_ports=point.src_ports,
            dst_ports=point.dst_ports,
            connections=point.connections,
            frame_size=point.frame_size,
            dut_params=point.dut_params,
            swept_dut=point.swept_dut,
            metric_settings=plain_json(point.metric_settings),
            co_swept_duts=tuple(point.co_swept_duts),
            tag=point.tag,
        )

    def to_working_point(self) -> WorkingPoint:
        """The working point this record stores (its id is recomputed from the parameters)."""
        return WorkingPoint(
            index=self.index,
            src_ports=self.src_ports,
            dst_ports=self.dst_ports,
            frame_size=self.frame_size,
            cores=self.cores,
            dut_params=self.dut_params,
            swept_dut=self.swept_dut,
            name=self.name,
            metric_settings=self.metric_settings,
            co_swept_duts=self.co_swept_duts,
            tag=self.tag,
        )

    def settings_of(self, metric: str) -> Mapping[str, Any]:
        """The settings of ``metric`` this point overrides (empty when none)."""
        return self.metric_settings.get(metric, {})

    def to_dict(self) -> dict[str, Any]:
        """The points.json entry (the optional fields only when set, so other points are stored as before)."""
        out: dict[str, Any] = {
            "id": self.id,
            "index": self.index,
            "label": self.label,
            "name": self.name,
            "cores": self.cores,
            "src_ports": [self.src_ports.first, self.src_ports.last],
            "dst_ports": [self.dst_ports.first, self.dst_ports.last],
            "connections": self.connections,
            "frame_size": self.frame_size,
            "dut_params": self.dut_params,
            "swept_dut": self.swept_dut,
        }
        if self.metric_settings:
            out["metric_settings"] = self.metric_settings
        if self.co_swept_duts:
            out["co_swept_duts"] = list(self.co_swept_duts)
        if self.tag:
            out["tag"] = self.tag
        return out

    @classmethod
    def from_dict(cls, data: Any) -> PointRecord:
        """The record of one points.json entry; :class:`FieldError` naming the first field that is wrong."""
        d = as_object(data, "point")
        for key in d:
            if key not in _KEYS:
                raise FieldError(key, "not a field of a working point")
        missing = [k for k in _REQUIRED if k not in d]
        if missing:
            raise FieldError(missing[0], "missing (every working point has it)")
        return cls(
            id=as_str(d["id"], "id"),
            index=as_int(d["index"], "index"),
            label=as_str(d["label"], "label"),
            name=as_str(d["name"], "name"),
            cores=as_optional_int(d["cores"], "cores"),
            src_ports=_ports(d["src_ports"], "src_ports"),
            dst_ports=_ports(d["dst_ports"], "dst_ports"),
            connections=as_int(d["connections"], "connections"),
            frame_size=as_int(d["frame_size"], "frame_size"),
            dut_params=_objects(d["dut_params"], "dut_params"),
            swept_dut=as_optional_str(d["swept_dut"], "swept_dut"),
            metric_settings=_objects(d.get("metric_settings", {}), "metric_settings"),
            co_swept_duts=tuple(
                as_str(v, "co_swept_duts") for v in as_list(d.get("co_swept_duts", []), "co_swept_duts")
            ),
            tag=as_str(d.get("tag", ""), "tag"),
        )


_REQUIRED = (
    "id",
    "index",
    "label",
    "name",
    "cores",
    "src_ports",
    "dst_ports",
    "connections",
    "frame_size",
    "dut_params",
    "swept_dut",
)
"""Keys every points.json entry has (natbench has written them since its first run directory)."""
_KEYS = frozenset((*_REQUIRED, "metric_settings", "co_swept_duts", "tag"))


def _ports(value: Any, name: str) -> PortRange:
    pair = as_list(value, name)
    if len(pair) != 2:
        raise FieldError(name, f"expected [first, last], got a list of {len(pair)}")
    first, last = (as_int(v, name) for v in pair)
    try:
        return PortRange(first, last)
    except ValueError as exc:
        raise FieldError(name, str(exc)) from None


def _objects(value: Any, name: str) -> dict[str, dict[str, Any]]:
    return {str(k): as_object(v, f"{name}.{k}") for k, v in as_object(value, name).items()}


def points_from_json(data: Any) -> list[PointRecord]:
    """The records of points.json's JSON value (a list); :class:`FieldError` naming the entry (``[3].cores``).

    Each entry must be what natbench wrote for it (:func:`derived_problem`), and each point is listed once: a
    parameter changed or a point listed twice after the run is damage.
    """
    if not isinstance(data, list):
        raise FieldError("points", "expected a list of working points")
    out: list[PointRecord] = []
    first: dict[str, int] = {}
    for i, entry in enumerate(data):
        try:
            point = PointRecord.from_dict(entry)
        except FieldError as exc:
            where = FieldError(f"[{i}]", exc.problem) if exc.field == "point" else exc.within(f"[{i}]")
            raise where from None
        problem = derived_problem(point)
        if problem is not None:
            raise problem.within(f"[{i}]")
        if point.id in first:
            raise FieldError(f"[{i}].id", f"{point.id} again (entry [{first[point.id]}]): a working point listed twice")
        first[point.id] = i
        out.append(point)
    return out


def derived_problem(point: PointRecord) -> FieldError | None:
    """Why ``point`` is not what natbench wrote (its id is the hash of its parameters, its number of connections
    and its label follow from them), or None. Reports print the stored connections and label, and ``compare``
    matches points by id: a stored value that disagrees with the parameters would be shown or matched as it is."""
    wp = point.to_working_point()
    if point.id != wp.id:
        return FieldError(
            "id",
            f"{shown(point.id)} is not the hash of this point's parameters (they hash to {wp.id}):"
            " its parameters were changed after the run",
        )
    if point.connections != wp.connections:
        return FieldError(
            "connections",
            f"{point.connections}, but its port ranges hold {len(wp.src_ports)} x {len(wp.dst_ports)}"
            f" = {wp.connections}",
        )
    if point.label != wp.label:
        return FieldError("label", f"{shown(point.label)}, but its parameters give {wp.label!r}")
    return None


def points_to_json(points: Iterable[PointRecord]) -> list[dict[str, Any]]:
    """points.json's JSON value."""
    return [p.to_dict() for p in points]
