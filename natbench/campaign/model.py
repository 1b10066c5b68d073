"""The :class:`Campaign`: a validated campaign file and everything derived from it."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from natbench.campaign.schema import CampaignSpec, DutSpec, TestbedSpec, TrafficSpec
from natbench.campaign.sweep import expand, settings_for
from natbench.config.source import LocatedError, SourceMap, parse_yaml, read_user_file, require_document
from natbench.config.validation import validation_error
from natbench.errors import ConfigError
from natbench.metrics import MetricSettings, all_metrics, metric
from natbench.traffic.plan import Family, ResponderMode, TrafficPlan
from natbench.workingpoint import WorkingPoint

_FILE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
"""A file stem that may name the default run directory (as ``name:`` must)."""


class Campaign:
    """A validated campaign: the schema data (:attr:`spec`) plus its working points.

    Build one with :func:`load_campaign` (a file), :func:`parse_campaign`
    (YAML text) or :meth:`from_dict` (a dict, e.g. in a notebook).
    """

    def __init__(self, spec: CampaignSpec, *, file: Path | None = None, _source: SourceMap | None = None) -> None:
        self.spec = spec
        """The validated campaign data."""
        self.file = file
        """The file it was read from (None when built from a dict)."""
        self._source = _source or SourceMap(None)
        if spec.name is None and file is not None and not _FILE_NAME.match(file.stem):
            raise ConfigError(
                "the file name cannot name the run directory results/<name>: set name: (letters, digits, '.', '_', "
                "'+', '-')",
                file=str(file),
                line=1,
            )
        try:
            _check(spec)
            self._points = expand(spec, self.label)
        except LocatedError as exc:
            raise self._source.error(_show(file), exc.path, exc.message, exact=True) from None

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_dict(cls, data: Any, *, file: str | Path | None = None) -> Campaign:
        """Validate plain data (as YAML would give) into a Campaign; errors name the field (no line)."""
        return _build(data, Path(file) if file is not None else None, SourceMap(None))

    # ------------------------------------------------------------------ the agreed API
    @property
    def name(self) -> str:
        """Campaign name (``name:`` or the file name without its suffix)."""
        if self.spec.name:
            return self.spec.name
        return self.file.stem if self.file is not None else "campaign"

    @property
    def label(self) -> str:
        """First part of every working-point label."""
        if self.spec.label:
            return self.spec.label
        duts = self.spec.testbed.duts
        if isinstance(self.spec.sweep.cores_dut, str):
            return self.spec.sweep.cores_dut
        return duts[0].name if len(duts) == 1 else self.name

    @property
    def testbed(self) -> TestbedSpec:
        """Tester (kind + settings) and DUTs (in path order)."""
        return self.spec.testbed

    @property
    def traffic(self) -> TrafficSpec:
        """The traffic section."""
        return self.spec.traffic

    @property
    def metrics(self) -> dict[str, MetricSettings]:
        """Selected metrics, name -> settings, in run order (per-point overrides: :meth:`settings_for`)."""
        return self.spec.metrics.selected()

    @property
    def output(self) -> Path:
        """Run directory (default ``results/<name>``)."""
        return self.spec.output if self.spec.output is not None else Path("results") / self.name

    def points(self) -> list[WorkingPoint]:
        """The working points in expansion order."""
        return list(self._points)

    def point(self, key: str | int) -> WorkingPoint:
        """One working point by index, id or label."""
        for p in self._points:
            if key in (p.index, p.id, p.label):
                return p
        raise KeyError(key)

    def settings_for(self, point: WorkingPoint, metric: str) -> MetricSettings:
        """Settings of ``metric`` at ``point`` (the campaign's, with the point's sweep overrides)."""
        return settings_for(self.metrics[metric], point.metric_settings.get(metric, {}))

    def acceptance(self, point: WorkingPoint, metric: str) -> float:
        """Loss ratio accepted by ``metric`` at ``point`` (its own or traffic.acceptance)."""
        s = self.settings_for(point, metric)
        return s.acceptance if s.acceptance is not None else self.traffic.acceptance

    def dut(self, name: str) -> DutSpec:
        """A DUT by name."""
        for d in self.testbed.duts:
            if d.name == name:
                return d
        raise KeyError(name)

    @property
    def responder_mode(self) -> ResponderMode:
        """traffic.responder, or the natural mode: compute without translation (families ipv4, ipv6), else
        the tester kind's default (its settings model's ``default_responder``; software: learn, trex: read)."""
        if self.traffic.responder is not None:
            return self.traffic.responder
        if not self.traffic.family.translates:
            return ResponderMode.COMPUTE
        return self.testbed.tester.settings.default_responder

    def traffic_plan(self, point: WorkingPoint) -> TrafficPlan:
        """What the tester needs for ``point``: family, addresses, ranges, frame size, seed, responder mode."""
        return TrafficPlan(
            family=self.traffic.family,
            addresses=self.traffic.address_plan(),
            src_ports=point.src_ports,
            dst_ports=point.dst_ports,
            frame_size=point.frame_size,
            seed=self.traffic.seed,
            responder_mode=self.responder_mode,
        )

    # ------------------------------------------------------------------ resolved form
    def error_at(self, path: Sequence[str | int], message: str) -> ConfigError:
        """A :class:`ConfigError` for the field at ``path`` (e.g. ``("testbed", "tester", "settings", "server")``)
        naming this campaign's file and, when read from YAML, the line: for checks made later, e.g. by a tester."""
        return self._source.error(_show(self.file), path, message)

    def to_dict(self) -> dict[str, Any]:
        """The resolved campaign (env substituted, defaults filled) as plain JSON-able data."""
        data: dict[str, Any] = json.loads(self.spec.model_dump_json(exclude_none=True))
        data["name"] = self.name
        data["output"] = str(self.output)
        return data

    def to_yaml(self) -> str:
        """:meth:`to_dict` as YAML (what a run directory's campaign.yaml holds); it loads back unchanged.

        ``$`` in values is written as ``$$`` so that loading it substitutes nothing.
        """
        return yaml.safe_dump(_escape_dollars(self.to_dict()), sort_keys=False, default_flow_style=None, width=100)

    def __repr__(self) -> str:
        return f"Campaign({self.name!r}, {len(self._points)} points, metrics={list(self.metrics)})"


def _escape_dollars(data: Any) -> Any:
    if isinstance(data, str):
        return data.replace("$", "$$")
    if isinstance(data, dict):
        return {k: _escape_dollars(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_escape_dollars(v) for v in data]
    return data


def _show(file: Path | None) -> str | None:
    return str(file) if file is not None else None


def _check(spec: CampaignSpec) -> None:
    """Cross-field checks that pydantic models cannot place on one field."""
    duts = spec.testbed.duts
    names: dict[str, int] = {}
    for i, d in enumerate(duts):
        if d.name in names:
            raise LocatedError(
                ("testbed", "duts", i, "name"), f"duplicate DUT name {d.name!r} (also DUT {names[d.name]})"
            )
        names[d.name] = i
        if len(duts) > 1 and d.role is None:
            raise LocatedError(("testbed", "duts", i), "role is required when there are several DUTs")
    _check_roles(spec)
    _check_addresses(spec)
    selected = spec.metrics.selected()
    _check_family_metrics(spec, selected)
    for name, settings in selected.items():
        source = metric(name).rate_from
        if source is not None and getattr(settings, "rate", None) is None and source not in selected:
            raise LocatedError(("metrics", name, "rate"), f"{name}.rate is required unless {source} is measured too")


def _check_addresses(spec: CampaignSpec) -> None:
    """Address overrides must be of the IP version the family uses on their side."""
    fam = spec.traffic.family
    addresses = spec.traffic.addresses
    for key, ipv6 in (
        ("initiator", fam.private_ipv6),
        ("dut_private", fam.private_ipv6),
        ("dut_public", fam.public_ipv6),
        ("responder", fam.public_ipv6),
    ):
        addr = getattr(addresses, key)
        want = 6 if ipv6 else 4
        if addr is not None and addr.version != want:
            raise LocatedError(
                ("traffic", "addresses", key), f"{key} must be an IPv{want} address for family {fam.value}, got {addr}"
            )
    if addresses.public_prefixlen is not None and not fam.public_ipv6 and addresses.public_prefixlen > 32:
        raise LocatedError(
            ("traffic", "addresses", "public_prefixlen"),
            f"public_prefixlen must be at most 32 for the IPv4 public side of family {fam.value}, "
            f"got {addresses.public_prefixlen}",
        )
    if addresses.private_prefixlen is not None and not fam.private_ipv6 and addresses.private_prefixlen > 32:
        raise LocatedError(
            ("traffic", "addresses", "private_prefixlen"),
            f"private_prefixlen must be at most 32 for the IPv4 private side of family {fam.value}, "
            f"got {addresses.private_prefixlen}",
        )
    if addresses.nat64_prefix is not None and fam is not Family.NAT64:
        raise LocatedError(("traffic", "addresses", "nat64_prefix"), "nat64_prefix applies to family nat64 only")


def _check_family_metrics(spec: CampaignSpec, selected: dict[str, MetricSettings]) -> None:
    """A family without translation (plain forwarding) has no connection state: stateless metrics only."""
    fam = spec.traffic.family
    if fam.translates:
        return
    responder = spec.traffic.responder
    if responder is not None and responder is not ResponderMode.COMPUTE:
        raise LocatedError(
            ("traffic", "responder"),
            f"traffic.family {fam.value} translates nothing, so the public -> private tuples are the private -> "
            f"public ones swapped: use responder: compute (the default for {fam.value}), not {responder.value}",
        )
    for name in selected:
        if metric(name).stateful:
            allowed = ", ".join(m.name for m in all_metrics() if not m.stateful)
            raise LocatedError(
                ("metrics", name),
                f"metric {name} needs a stateful DUT (phase 1 fills a connection table), but traffic.family "
                f"{fam.value} is plain forwarding without translation; use {allowed}",
            )


# Roles that must come before others on the path from the Initiator to the Responder.
_ROLE_ORDER = {"clat": 0, "ce": 0, "ce-nat44": 0, "ce-nat46": 1, "plat": 2, "br": 2}
# The traffic family a role implies (a dual-DUT IPv4aaS system is measured as one NAT44).
_ROLE_FAMILY = {
    "nat44": "nat44",
    "nat64": "nat64",
    "clat": "nat44",
    "plat": "nat44",
    "ce": "nat44",
    "ce-nat44": "nat44",
    "ce-nat46": "nat44",
    "br": "nat44",
}


def _check_roles(spec: CampaignSpec) -> None:
    family = spec.traffic.family.value
    previous: tuple[int, str] | None = None
    for i, d in enumerate(spec.testbed.duts):
        if d.role is None:
            continue
        role = d.role.value
        implied = _ROLE_FAMILY.get(role)
        if implied is not None and implied != family:
            raise LocatedError(
                ("testbed", "duts", i, "role"),
                f"role {role} needs traffic.family {implied} (the campaign says {family})",
            )
        if role == "nat64" and len(spec.testbed.duts) > 1:
            raise LocatedError(
                ("testbed", "duts", i, "role"), "role nat64 is a single-DUT role; 464XLAT uses clat + plat"
            )
        rank = _ROLE_ORDER.get(role)
        if rank is not None:
            if previous is not None and rank < previous[0]:
                raise LocatedError(
                    ("testbed", "duts", i, "role"),
                    f"{role} must come before {previous[1]}: list DUTs in path order, Initiator side first",
                )
            previous = (rank, role)


def _build(data: Any, file: Path | None, source: SourceMap) -> Campaign:
    shown = _show(file)
    if not isinstance(data, dict):
        raise ConfigError("a campaign must be a YAML mapping (key: value pairs)", file=shown, line=1)
    require_document(data, shown, "campaign", CampaignSpec.model_fields)
    try:
        spec = CampaignSpec.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source=source, file=shown, model=CampaignSpec) from None
    return Campaign(spec, file=file, _source=source)


def parse_campaign(text: str, file: str | Path | None = None) -> Campaign:
    """Parse campaign YAML text; ``file`` is only used in error messages and as the default name."""
    shown = str(file) if file is not None else None
    data, source = parse_yaml(text, shown)
    return _build(data, Path(file) if file is not None else None, source)


def load_campaign(path: str | Path) -> Campaign:
    """Read, validate and expand a campaign file; any problem is one ConfigError naming file, line and field."""
    p = Path(path)
    return parse_campaign(read_user_file(p, "campaign file"), p)
