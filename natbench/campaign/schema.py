"""The campaign schema (version 1): pydantic models, one docstring per field.

Every model forbids unknown keys. Field docstrings become the field
descriptions (``use_attribute_docstrings``), so reference documentation can be
generated from :meth:`CampaignSpec.model_json_schema`.

Numbers that are counts, sizes or rates accept ``2^23``, ``200k`` or plain
integers; port ranges accept ``"1-4000"``, ``{first, last}``, ``{first, count}``
or a count ``N`` (= ports ``1..N``); see :mod:`natbench.values`.
"""

from __future__ import annotations

import enum
import ipaddress
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self, cast

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    IPvAnyAddress,
    PlainSerializer,
    PlainValidator,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from natbench.config.model import SchemaModel
from natbench.errors import ConfigError
from natbench.metrics import MetricSettings, all_metrics, metric_names
from natbench.metrics.settings import LossRatio
from natbench.plugins import ACCESS, TESTERS, AccessSettings, Directions, Registry, TesterSettings
from natbench.traffic.plan import AddressPlan, Family, ResponderMode
from natbench.traffic.ports import PortRange
from natbench.values import (
    MAX_CORES,
    MAX_VALUE,
    MAX_WAIT_SECONDS,
    MIN_MONITOR_INTERVAL,
    parse_bytes,
    parse_port_range,
    parse_power,
)

SCHEMA_VERSION = 1
"""The campaign schema version this natbench reads and writes."""

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_CAMPAIGN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
"""A campaign name: it names the default run directory ``results/<name>``, so one path component, no dot first."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

PortRangeField = Annotated[PortRange, BeforeValidator(parse_port_range), PlainSerializer(str, return_type=str)]
"""A port range written as ``"1-4000"``, ``{first, last}``, ``{first, count}`` or a count."""
MemorySize = Annotated[int, BeforeValidator(parse_bytes), Field(gt=0, le=MAX_VALUE)]
"""A memory size in bytes written as ``64Gi`` (IEC, x 2^30), ``256G`` (SI, x 10^9), ``2^36`` or a number."""
MAX_BYTES_PER_CONNECTION = 1e6
"""Largest ``bytes_per_connection``: a connection entry is a few hundred bytes (seed 000: below 150 GB for 400M)."""
FrameSize = Annotated[int, Field(ge=64, le=1518)]
"""An IPv4 frame size in bytes (64..1518); the IPv6 frame of the same test is 20 bytes longer."""


# --------------------------------------------------------------------------- testbed


class DutRole(enum.StrEnum):
    """What a DUT does in the system under test."""

    NAT44 = "nat44"
    """Single-DUT stateful NAT44 gateway."""
    NAT64 = "nat64"
    """Single-DUT stateful NAT64 gateway."""
    FORWARDER = "forwarder"
    """Plain IP router (baseline measurements)."""
    CLAT = "clat"
    """464XLAT customer-side translator (stateless NAT46, SIIT)."""
    PLAT = "plat"
    """464XLAT provider-side translator (stateful NAT64)."""
    CE = "ce"
    """MAP-T customer edge (stateful NAT44 + stateless NAT46 in one device)."""
    CE_NAT44 = "ce-nat44"
    """The stateful NAT44 half of a MAP-T CE split over two devices (seed 004, Fig. 18)."""
    CE_NAT46 = "ce-nat46"
    """The stateless NAT46 half of a MAP-T CE split over two devices."""
    BR = "br"
    """MAP-T border relay (stateless)."""


def _unknown(registry: Registry[Any], value: Any) -> PydanticCustomError:
    return PydanticCustomError(
        "unknown_kind",
        "unknown {what} {kind}; known: {known}",
        {"what": registry.what, "kind": repr(value), "known": ", ".join(registry.names())},
    )


def _backend_model(registry: Registry[Any], kind: Any) -> type[SchemaModel]:
    """The settings model of ``kind``'s backend, looked up now (so a kind registered after import is known); an
    unknown kind, or a plugin that cannot be loaded, is a one-line error."""
    if not isinstance(kind, str) or kind not in registry:
        raise _unknown(registry, kind)
    try:
        return cast("type[SchemaModel]", registry.get(kind).settings)
    except ConfigError as exc:
        raise PydanticCustomError("plugin_error", "{message}", {"message": exc.message}) from None


class TesterSpec(SchemaModel):
    """The traffic generator."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    kind: str
    """``software`` (built-in tester, local lab), ``trex`` (a TRex STL server), or the kind of an installed
    tester plugin (entry-point group ``natbench.testers``)."""
    settings: SerializeAsAny[TesterSettings] = None  # type: ignore[assignment]
    """The tester kind's settings, validated by its settings model (below: one section per registered kind),
    with every default filled in."""

    @field_validator("kind", mode="before")
    @classmethod
    def _known_kind(cls, v: Any) -> Any:
        _backend_model(TESTERS, v)
        return v

    @field_validator("settings", mode="wrap")
    @classmethod
    def _kind_settings(cls, v: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
        kind = info.data.get("kind")
        if kind is None:  # the kind itself is wrong: that is the error to see
            return TesterSettings.model_construct()
        model = _backend_model(TESTERS, kind)
        if v is None:  # no settings written: the kind's defaults, unless it needs some
            required = [name for name, field in model.model_fields.items() if field.is_required()]
            if required:
                raise PydanticCustomError(
                    "settings_missing",
                    "required by tester kind {kind}: {names}",
                    {"kind": kind, "names": ", ".join(required)},
                )
            v = {}
        return v if type(v) is model else model.model_validate(v)


def _access(v: Any) -> Any:
    """A DUT's ``access`` validated by the model of its kind's backend (looked up now, so a kind registered
    after import is known); a problem with the kind itself is reported at ``access.kind``."""
    if isinstance(v, AccessSettings):
        v = v.model_dump()
    if not isinstance(v, dict):
        raise PydanticCustomError("dict_type", "must be a mapping with a kind")
    if "kind" not in v:
        error = PydanticCustomError("missing", "required field is missing")
    else:
        try:
            model = _backend_model(ACCESS, v["kind"])
        except PydanticCustomError as exc:
            error = exc
        else:
            return model.model_validate(v)
    raise ValidationError.from_exception_data("access", [InitErrorDetails(type=error, loc=("kind",), input=v)])


class DutSpec(SchemaModel):
    """One Device Under Test: a recipe, its parameters, and how to reach it."""

    name: str
    """Short unique name (lowercase letters, digits, ``-``, ``_``); used in labels and sweep axes."""
    recipe: str = Field(min_length=1)
    """Recipe name (``dut_recipes/<name>.yaml``) or path."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Recipe parameters (typed and defaulted by the recipe); ``2^23`` is accepted for sizes."""
    access: Annotated[SerializeAsAny[AccessSettings], PlainValidator(_access)]
    """How natbench reaches this DUT: ``kind`` and that access kind's settings, validated by its model (below: one
    section per registered kind), with every default filled in."""
    role: DutRole | None = None
    """Its role in the system (required when there are several DUTs)."""
    cores: int | None = Field(default=None, ge=1, le=MAX_CORES)
    """Active CPU cores of this DUT when its cores are not swept (None: leave as is; at most 4096)."""
    memory: MemorySize | None = None
    """The DUT's memory in bytes (``64Gi``, ``256G``, ``2^36``; at most 2^64), for ``natbench plan``'s check that each
    point's connections fit (None: a lab VM's ``access.memory``, else not checked)."""
    bytes_per_connection: float | None = Field(default=None, gt=0, le=MAX_BYTES_PER_CONNECTION)
    """Memory one connection takes on this DUT in bytes (at most 1 MB), for the same check (e.g. the
    ``memory / conn. (B)`` row of an earlier run; ``natbench plan --from RUN`` reads it from a run directory
    instead)."""

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"DUT name {v!r} must match [a-z][a-z0-9_-]* (it is used in sweep axes and labels)")
        return v

    @field_validator("params")
    @classmethod
    def _powers(cls, v: dict[str, Any]) -> dict[str, Any]:
        return {k: resolve_param_value(x) for k, x in v.items()}


def resolve_param_value(value: Any) -> Any:
    """Turn a ``B^E`` string into its integer; leave every other recipe parameter value alone."""
    power = parse_power(value)
    return value if power is None else power


class TestbedSpec(SchemaModel):
    """The tester and the DUTs, in path order from the Initiator side to the Responder side."""

    __test__: ClassVar[bool] = False  # not a pytest test class
    model_config = ConfigDict(**SchemaModel.model_config, serialize_by_alias=True, validate_by_name=True)

    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    """Name of this testbed (distributed runs: the resource a ``natbench worker`` advertises; recorded with every
    point and trial it measures)."""
    testbed_class: str | None = Field(default=None, alias="class", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    """What the testbed is equivalent to (same DUT hardware and software), written ``class:`` (or ``testbed_class:``):
    a distributed run measures a campaign only on testbeds of the class its own testbed section names, so results
    of different classes never mix."""
    tester: TesterSpec
    """The traffic generator: its kind (the built-in software tester, TRex, a plugin's) and that kind's settings."""
    duts: list[DutSpec] = Field(min_length=1)
    """One DUT, or several in path order (464XLAT: CLAT then PLAT; MAP-T: CE then BR)."""
    monitor_interval: float | None = Field(default=None, ge=MIN_MONITOR_INTERVAL, le=MAX_WAIT_SECONDS)
    """Sample every DUT's per-core CPU idle time every this many seconds during each traffic trial
    (seed 004, 5.3 and 6.6: which device is the bottleneck; at most one day); None: off. ``natbench run
    --monitor`` overrides it."""


# --------------------------------------------------------------------------- traffic


class AddressSpec(SchemaModel):
    """Overrides of the default address plan (seed 000 Figures 1 and 6); unset fields keep the default."""

    initiator: IPvAnyAddress | None = None
    """Tester address on the private side (IPv4 for nat44 and ipv4, IPv6 for nat64 and ipv6)."""
    dut_private: IPvAnyAddress | None = None
    """DUT address on the private side (same family as ``initiator``)."""
    dut_public: IPvAnyAddress | None = None
    """DUT address on the public side (IPv6 for ipv6, else IPv4)."""
    responder: IPvAnyAddress | None = None
    """Tester address on the public side (same family as ``dut_public``)."""
    nat64_prefix: ipaddress.IPv6Network | None = None
    """NAT64 prefix (nat64 only; default 64:ff9b::/96)."""
    private_prefixlen: int | None = Field(default=None, ge=1, le=128)
    """Prefix length of the private-side subnet."""
    public_prefixlen: int | None = Field(default=None, ge=1, le=128)
    """Prefix length of the public-side subnet (at most 32 for an IPv4 public side)."""


class TrafficSpec(SchemaModel):
    """The test traffic shared by every working point."""

    family: Family
    """``nat44`` (also dual-DUT IPv4aaS systems, measured as one NAT44), ``nat64``, or, for forwarding baselines
    without translation (only the ``forwarding`` metric), ``ipv4`` (seed 004 Table 2) or ``ipv6`` (IPv6 on both
    sides, seed 004 Table 3)."""
    addresses: AddressSpec = Field(default_factory=lambda: AddressSpec())
    """Address plan overrides; defaults: natbench.traffic.AddressPlan.default(family)."""
    src_ports: PortRangeField | None = None
    """Initiator source port range (unless swept), e.g. ``1-4000`` or ``4000``."""
    dst_ports: PortRangeField | None = None
    """Responder destination port range (unless swept), e.g. ``1-1000`` or ``1000``."""
    frame_sizes: list[FrameSize] = Field(default_factory=lambda: [64], min_length=1)
    """IPv4 frame sizes in bytes (64..1518); IPv6 frames are 20 bytes longer. Several sizes are swept."""
    directions: Directions = Directions.BIDIRECTIONAL
    """Phase-2 directions (RFC 8219 requires bidirectional; metrics may override)."""
    acceptance: LossRatio = 0.0
    """Acceptance criterion as a loss ratio: 0 (RFC 2544) or 0.0001 (99.99 %, seed 004)."""
    seed: int = Field(default=1, ge=0, lt=2**64)
    """Seed of the phase-1 enumeration and of phase-2 pseudorandom ports."""
    responder: ResponderMode | None = None
    """How public -> private tuples are known: learn, read or compute (None: compute for ipv4 and ipv6, else the
    tester kind's default: learn with software, read with trex)."""
    selection: Literal["random", "linear", "fixed"] = "random"
    """Phase-2 Responder state-table entry selection."""

    @field_validator("frame_sizes")
    @classmethod
    def _unique_sizes(cls, v: list[int]) -> list[int]:
        if len(set(v)) != len(v):
            raise ValueError(f"frame sizes must be unique, got {v}")
        return v

    def address_plan(self) -> AddressPlan:
        """The default address plan of ``family`` with this section's overrides applied."""
        base = AddressPlan.default(self.family)
        over = {k: v for k, v in self.addresses.model_dump().items() if v is not None}
        if not over:
            return base
        from dataclasses import replace

        return replace(base, **over)


# --------------------------------------------------------------------------- metrics


class MetricsSection(SchemaModel):
    """Which metrics to measure at every working point, with their settings. At least one.

    One optional field per registered metric (:mod:`natbench.metrics`), its settings model as the type:
    :data:`MetricsSpec` is this class with those fields.
    """

    @model_validator(mode="after")
    def _at_least_one(self) -> Self:
        if not self.selected():
            raise ValueError(f"select at least one metric: {', '.join(METRIC_NAMES)}")
        return self

    def selected(self) -> dict[str, MetricSettings]:
        """The selected metrics, name -> settings, in :data:`METRIC_NAMES` order."""
        out: dict[str, MetricSettings] = {}
        for name in METRIC_NAMES:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


METRIC_NAMES: tuple[str, ...] = metric_names()
"""Metric (procedure) names in the order a working point runs them."""

if TYPE_CHECKING:
    MetricsSpec = MetricsSection
else:
    MetricsSpec = create_model(
        "MetricsSpec",
        __base__=MetricsSection,
        __doc__=MetricsSection.__doc__.split("\n\n")[0],
        __module__=__name__,
        **{m.name: (m.settings | None, Field(default=None, description=m.description)) for m in all_metrics()},
    )
"""The campaign's ``metrics`` section: one optional field per registered metric."""


# --------------------------------------------------------------------------- sweep


class SweepSpec(SchemaModel):
    """What varies between working points.

    Axes: ``cores``, ``src_ports``, ``dst_ports``, ``frame_size``,
    ``duts.<dut>.<param>`` (a recipe parameter of one DUT) and
    ``metrics.<metric>.<setting>`` (e.g. a per-point search error).
    Points = ``traffic.frame_sizes`` (outermost) x ``product`` axes in the
    order written x the ``zip`` columns (innermost, varied together).
    """

    cores_dut: str | list[str] | None = None
    """The DUT (or DUTs) whose active cores ``cores`` sets (default: the only DUT); others keep their ``cores``."""
    product: dict[str, list[Any]] = Field(default_factory=dict)
    """Named lists combined as a cartesian product (first axis outermost)."""
    zip: dict[str, list[Any]] = Field(default_factory=dict)
    """Columns of equal length varied together, column by column (seed 000 Figure 4)."""

    @field_validator("product", "zip")
    @classmethod
    def _non_empty(cls, v: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for key, values in v.items():
            if not values:
                raise ValueError(f"sweep axis {key!r} has no values")
        return v


# --------------------------------------------------------------------------- campaign


class CampaignSpec(SchemaModel):
    """A campaign file: testbed, traffic, sweep, metrics and output directory."""

    schema_version: int
    """Version of this schema the file is written for (currently 1)."""
    name: str | None = None
    """Campaign name (default: the file name without .yaml): letters, digits, ``.``, ``_``, ``+``, ``-``, at most
    128 characters, not starting with a dot (it names the default run directory ``results/<name>``)."""
    description: str = ""
    """Free text: what the campaign reproduces and why (no NUL byte)."""
    label: str | None = None
    """First part of every working-point label, e.g. ``iptables`` (default: the swept or only DUT's name); at most
    128 characters, no control characters."""
    testbed: TestbedSpec
    """Tester and DUTs."""
    traffic: TrafficSpec
    """Test traffic shared by all working points."""
    sweep: SweepSpec = Field(default_factory=SweepSpec)
    """What varies between working points (empty: one working point)."""
    metrics: MetricsSpec
    """Metrics measured at every working point."""
    output: Path | None = None
    """Run directory, relative to the directory natbench runs in and inside it (no ``..``, not absolute; default
    results/<name>). A run directory anywhere else is given on the command line: ``natbench run -o DIR``."""

    @field_validator("name")
    @classmethod
    def _name_is_one_component(cls, v: str | None) -> str | None:
        if v is not None and not _CAMPAIGN_NAME.match(v):
            raise ValueError(
                "a campaign name is letters, digits, '.', '_', '+', '-' (at most 128, not starting with a dot): "
                "it names the run directory results/<name>"
            )
        return v

    @field_validator("label")
    @classmethod
    def _label_printable(cls, v: str | None) -> str | None:
        if v is not None and (_CONTROL.search(v) or not v.strip() or len(v) > 128):
            raise ValueError("a label is 1..128 printable characters (no NUL, newline or other control character)")
        return v

    @field_validator("description")
    @classmethod
    def _description_text(cls, v: str) -> str:
        if "\x00" in v:
            raise ValueError("the description contains a NUL byte")
        return v

    @field_validator("output", mode="before")
    @classmethod
    def _output_inside(cls, v: Any) -> Any:
        if v is None:
            return v
        text = str(v)
        if _CONTROL.search(text):
            raise ValueError("the run directory contains a control character (NUL, newline, ...)")
        path = Path(text)
        if not text.strip() or path.is_absolute() or ".." in path.parts or text.startswith("~"):
            raise ValueError(
                "output must be a relative path inside the directory natbench runs in (no '..', not absolute); "
                "give any other run directory on the command line: natbench run -o DIR"
            )
        return v

    @field_validator("schema_version", mode="before")
    @classmethod
    def _version(cls, v: Any) -> Any:
        if type(v) is not int or v != SCHEMA_VERSION:  # not true (== 1) nor 1.0
            raise ValueError(f"unsupported schema_version {v!r}: this natbench reads schema_version {SCHEMA_VERSION}")
        return v
