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
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    BeforeValidator,
    ConfigDict,
    Field,
    IPvAnyAddress,
    PlainSerializer,
    create_model,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from natbench.metrics import MetricSettings, all_metrics, metric_names
from natbench.metrics.settings import LossRatio
from natbench.metrics.settings import SchemaModel as _Model
from natbench.plugins import TESTER_GROUP, known_names
from natbench.testers.base import Directions
from natbench.traffic.plan import AddressPlan, Family, ResponderMode
from natbench.traffic.ports import PortRange
from natbench.values import (
    MAX_CORES,
    MAX_DURATION_SECONDS,
    MAX_VALUE,
    MAX_WAIT_SECONDS,
    MIN_MONITOR_INTERVAL,
    parse_bytes,
    parse_port_range,
    parse_power,
)

__all__ = [
    "METRIC_NAMES",
    "SCHEMA_VERSION",
    "AddressSpec",
    "CampaignSpec",
    "DutAccess",
    "DutRole",
    "DutSpec",
    "LabAccess",
    "LocalAccess",
    "MetricsSection",
    "MetricsSpec",
    "NetnsAccess",
    "SshAccess",
    "SweepSpec",
    "TestbedSpec",
    "TesterSpec",
    "TrafficSpec",
]

SCHEMA_VERSION = 1
"""The campaign schema version this natbench reads and writes."""

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")
_CAMPAIGN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")
"""A campaign name: it names the default run directory ``results/<name>``, so one path component, no dot first."""
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_NETNS = r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*$"  # an ``ip netns`` name: no slash or blank, not . or ..

PortRangeField = Annotated[PortRange, BeforeValidator(parse_port_range), PlainSerializer(str, return_type=str)]
"""A port range written as ``"1-4000"``, ``{first, last}``, ``{first, count}`` or a count."""
MemorySize = Annotated[int, BeforeValidator(parse_bytes), Field(gt=0, le=MAX_VALUE)]
"""A memory size in bytes written as ``64Gi`` (IEC, x 2^30), ``256G`` (SI, x 10^9), ``2^36`` or a number."""
MAX_BYTES_PER_CONNECTION = 1e6
"""Largest ``bytes_per_connection``: a connection entry is a few hundred bytes (seed 000: below 150 GB for 400M)."""
FrameSize = Annotated[int, Field(ge=64, le=1518)]
"""An IPv4 frame size in bytes (64..1518); the IPv6 frame of the same test is 20 bytes longer."""


# --------------------------------------------------------------------------- testbed


class SshAccess(_Model):
    """Reach a DUT over SSH (paramiko); the host key is verified unless explicitly allowed."""

    kind: Literal["ssh"]
    """Access kind: ``ssh``."""
    host: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x20\x7f]+$")
    """Host name or address of the DUT's management interface (no blank or control character)."""
    user: str = Field(default="root", min_length=1, max_length=255, pattern=r"^[^\x00-\x20\x7f]+$")
    """Login user (no blank or control character)."""
    port: int = Field(default=22, ge=1, le=65535)
    """SSH port."""
    key: Path | None = None
    """Private key file (None: the SSH agent or the default keys)."""
    known_hosts: Path | None = None
    """known_hosts file used to verify the host key (None: ~/.ssh/known_hosts)."""
    allow_unknown_host_key: bool = False
    """Accept a host key that is not in known_hosts (off by default; never for production DUTs)."""
    sudo: bool = False
    """Run recipe commands through ``sudo -n``."""
    connect_timeout: float = Field(default=10.0, gt=0, le=MAX_WAIT_SECONDS)
    """Seconds to wait for the SSH connection (at most one day)."""
    command_timeout: float = Field(default=3600.0, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds one recipe command may take (deleting 800M connections took ~40 minutes in seed 000; at most
    seven days)."""
    namespace: str | None = Field(default=None, pattern=_NETNS)
    """Run the recipe inside this network namespace on the remote host (``ip netns exec NAME``; None: the host's)."""
    keepalive_interval: float = Field(default=5.0, gt=0, le=600)
    """Seconds of silence from the DUT after which natbench sends an SSH keepalive (a request the server must
    answer), and between keepalives."""
    keepalive_count: int = Field(default=3, ge=1, le=100)
    """Unanswered keepalives after which the connection is declared lost (a silent drop is noticed at most
    keepalive_interval x (keepalive_count + 1) seconds after the last packet from the DUT: 20 s by default)."""

    @field_validator("key", "known_hosts")
    @classmethod
    def _home(cls, v: Path | None) -> Path | None:
        return v.expanduser() if v is not None else None


class LocalAccess(_Model):
    """Run the recipe on this machine, in the current network namespace."""

    kind: Literal["local"]
    """Access kind: ``local``."""


class NetnsAccess(_Model):
    """Run the recipe on this machine inside an existing network namespace."""

    kind: Literal["netns"]
    """Access kind: ``netns``."""
    namespace: str = Field(pattern=_NETNS)
    """Name of the network namespace (``ip netns exec NAME``)."""


class LabAccess(_Model):
    """Run the recipe in a namespace of the local lab that natbench builds (``natbench lab``)."""

    kind: Literal["lab"]
    """Access kind: ``lab``."""
    namespace: str | None = Field(default=None, pattern=_NETNS)
    """Run the recipe in this namespace instead of the lab's DUT namespace (None: the DUT namespace of the lab
    the testbed brings up, or, for a tester that brings none, of the one lab made with ``natbench lab up``)."""
    vm: str | None = Field(default=None, pattern=r"^[a-z0-9][a-z0-9-]{0,30}$")
    """Run the DUT in a QEMU virtual machine booted from natbench's image of this name (``jool``: Debian 12
    with Jool 4.1.9 from Debian's packages, built and cached by ``natbench lab image build jool``) instead of
    the lab's DUT namespace. The VM's data NICs (``eth1`` towards the Initiator, ``eth2`` towards the
    Responder) are taps wired to the tester's two ports; natbench reaches it over SSH with the image's pinned
    host key. Several VM DUTs (464XLAT: CLAT, then PLAT) boot one VM each, wired in path order, each VM's
    ``eth2`` to the next one's ``eth1``; then every lab DUT must be a VM. None: the DUT namespace."""
    vcpus: int | None = Field(default=None, ge=1, le=64)
    """Virtual CPUs of the VM (``vm`` only; None: 1)."""
    memory: int | None = Field(default=None, ge=256, le=262144)
    """Memory of the VM in MiB (``vm`` only; None: 1536)."""
    accel: Literal["auto", "kvm", "tcg"] | None = None
    """QEMU accelerator (``vm`` only; None: ``auto``): ``auto`` tries KVM where this machine has hardware
    virtualisation (vmx/svm) and falls back to software emulation (TCG) when the guest does not come up with
    it; ``kvm`` or ``tcg`` force one. The one used is in the DUT's facts (``vm.accel``)."""
    boot_timeout: float | None = Field(default=None, gt=0, le=MAX_DURATION_SECONDS)
    """Seconds the VM may take from start to SSH (``vm`` only; None: 600; at most seven days); beyond it the boot
    fails with the last lines of its serial console."""

    @model_validator(mode="after")
    def _vm_settings_need_vm(self) -> LabAccess:
        vm_only = (self.vcpus, self.memory, self.accel, self.boot_timeout)
        if self.vm is None and any(v is not None for v in vm_only):
            raise ValueError("vcpus, memory, accel and boot_timeout are settings of a VM DUT: set access.vm too")
        if self.vm is not None and self.namespace is not None:
            raise ValueError("a VM DUT runs in its VM: access.namespace does not apply with access.vm")
        return self


DutAccess = Annotated[SshAccess | LocalAccess | NetnsAccess | LabAccess, Field(discriminator="kind")]
"""How natbench reaches a DUT, chosen by ``kind``."""


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


_BUILTIN_TESTERS = ("software", "trex")


def _tester_kind(kind: Any) -> Any:
    """A tester kind natbench knows: built in, or registered by a plugin (:mod:`natbench.plugins`)."""
    if kind in _BUILTIN_TESTERS:
        return kind
    names = sorted(set(_BUILTIN_TESTERS) | set(known_names(TESTER_GROUP)))
    if isinstance(kind, str) and kind in names:
        return kind
    quoted = [repr(n) for n in names]
    expected = " or ".join([", ".join(quoted[:-1]), quoted[-1]]) if len(quoted) > 1 else "".join(quoted)
    raise PydanticCustomError("literal_error", "Input should be {expected}", {"expected": expected})


class TesterSpec(_Model):
    """The traffic generator."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    kind: Annotated[str, BeforeValidator(_tester_kind)]
    """``software`` (built-in tester, local lab), ``trex`` (a TRex STL server), or the kind of an installed
    tester plugin (entry-point group ``natbench.testers``)."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Backend settings (TRex server, ports, MAC addresses, ...); checked by the backend and passed to it."""


class DutSpec(_Model):
    """One Device Under Test: a recipe, its parameters, and how to reach it."""

    name: str
    """Short unique name (lowercase letters, digits, ``-``, ``_``); used in labels and sweep axes."""
    recipe: str = Field(min_length=1)
    """Recipe name (``dut_recipes/<name>.yaml``) or path."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Recipe parameters (typed and defaulted by the recipe); ``2^23`` is accepted for sizes."""
    access: DutAccess
    """How natbench reaches this DUT."""
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


class TestbedSpec(_Model):
    """The tester and the DUTs, in path order from the Initiator side to the Responder side."""

    __test__: ClassVar[bool] = False  # not a pytest test class
    model_config = ConfigDict(**_Model.model_config, serialize_by_alias=True, validate_by_name=True)

    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    """Name of this testbed (distributed runs: the resource a ``natbench worker`` advertises; recorded with every
    point and trial it measures)."""
    testbed_class: str | None = Field(default=None, alias="class", pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    """What the testbed is equivalent to (same DUT hardware and software), written ``class:`` (or ``testbed_class:``):
    a distributed run measures a campaign only on testbeds of the class its own testbed section names, so results
    of different classes never mix."""
    tester: TesterSpec
    """The traffic generator: TRex or the built-in software tester."""
    duts: list[DutSpec] = Field(min_length=1)
    """One DUT, or several in path order (464XLAT: CLAT then PLAT; MAP-T: CE then BR)."""
    monitor_interval: float | None = Field(default=None, ge=MIN_MONITOR_INTERVAL, le=MAX_WAIT_SECONDS)
    """Sample every DUT's per-core CPU idle time every this many seconds during each traffic trial
    (seed 004, 5.3 and 6.6: which device is the bottleneck; at most one day); None: off. ``natbench run
    --monitor`` overrides it."""


# --------------------------------------------------------------------------- traffic


class AddressSpec(_Model):
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


class TrafficSpec(_Model):
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
    """How public -> private tuples are known: learn, read or compute (None: learn with software, read with trex)."""
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


class MetricsSection(_Model):
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


class SweepSpec(_Model):
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


class CampaignSpec(_Model):
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
