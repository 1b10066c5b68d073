"""natbench's plugin seam: the protocols everything above is written against, and the registry of plugins.

It sits at the bottom of the package (it imports only :mod:`natbench.errors`, :mod:`natbench.results`,
:mod:`natbench.traffic`, :mod:`natbench.workingpoint` and :mod:`natbench.config`), so testers, DUTs,
metrics, the campaign schema and the testbed all import it downwards:

* the procedure seams: :class:`Tester` (and its optional hooks :class:`BeginsRepetition`,
  :class:`SetsReceiveTimeout`, :class:`LoadsMappings`, :class:`SamplesValidation`, :class:`DeclaresEvidence` with its
  :class:`TrialEvidence`, :class:`WatchesHostLoad` with its :class:`HostLoadProbe`)
  and :class:`Dut` (hooks :class:`ReportsSupport`, :class:`MonitorsCpu`, :class:`MeasuresMemory`,
  :class:`DeclaresRows` with what a DUT kind declares for reports: :class:`DutDeclarations`, :class:`TableParam`,
  :class:`SlabCache`), with the small types they exchange (:class:`Directions`, :class:`Phase2Options` with its
  :class:`LossStop`, :class:`Mapping`, :class:`Port`, :class:`LabPorts`) and the DUT's tuples in columns
  (:class:`MappingTable`);
* the backend seams: :class:`TesterBackend` (a tester kind), :class:`AccessBackend` (a DUT access kind) with
  their settings bases :class:`TesterSettings` and :class:`AccessSettings` (what an access knows of its DUT's
  machine: :class:`DutMachine`), :class:`LabResource` (a local lab),
  what they exchange (:class:`LabRequest`, :class:`TesterContext`, :class:`DutPlacement`, :class:`Executor`,
  :class:`CommandResult`, :data:`Locate`, :data:`Endpoint`; an executor's optional :class:`StreamsOutput`), and
  a DUT output :data:`Parser` (or a :class:`StreamingParser` reading it as it arrives);
* one :class:`Registry` mechanism, with :data:`TESTERS`, :data:`ACCESS`, :data:`PARSERS` (and the metrics'
  registry, :data:`natbench.metrics.registry.METRICS`), each fed in code and by an entry-point group.

A third-party tester kind is one object with the :class:`TesterBackend` methods, named in
``pyproject.toml``::

    [project.entry-points."natbench.testers"]
    mytester = "mypackage.natbench_backend:BACKEND"

docs/architecture.md walks through a tester kind and an access kind.
"""

from natbench.plugins.backends import (
    AccessBackend,
    Endpoint,
    LabRequest,
    LabResource,
    Locate,
    TesterBackend,
    TesterContext,
)
from natbench.plugins.dut import (
    SHARES_HOST,
    CommandResult,
    DeclaresRows,
    Dut,
    DutDeclarations,
    DutPlacement,
    Executor,
    MeasuresMemory,
    MonitorsCpu,
    ReportsSupport,
    SlabCache,
    StreamsOutput,
    TableParam,
)
from natbench.plugins.mappings import MappingTable, MappingTableBuilder
from natbench.plugins.parsers import ParseError, Parser, ParseSink, StreamingParser
from natbench.plugins.registry import (
    ACCESS,
    ACCESS_GROUP,
    METRIC_GROUP,
    PARSER_GROUP,
    PARSERS,
    TESTER_GROUP,
    TESTERS,
    Registry,
)
from natbench.plugins.settings import AccessSettings, DutMachine, TesterSettings
from natbench.plugins.tester import (
    NO_EVIDENCE,
    BeginsRepetition,
    DeclaresEvidence,
    Directions,
    HostLoadProbe,
    LabPorts,
    LoadsMappings,
    LossStop,
    Mapping,
    Phase2Options,
    Port,
    SamplesValidation,
    SetsReceiveTimeout,
    Tester,
    TrialEvidence,
    WatchesHostLoad,
    evidence_of,
)

__all__ = [
    "ACCESS",
    "ACCESS_GROUP",
    "METRIC_GROUP",
    "NO_EVIDENCE",
    "PARSERS",
    "PARSER_GROUP",
    "SHARES_HOST",
    "TESTERS",
    "TESTER_GROUP",
    "AccessBackend",
    "AccessSettings",
    "BeginsRepetition",
    "CommandResult",
    "DeclaresEvidence",
    "DeclaresRows",
    "Directions",
    "Dut",
    "DutDeclarations",
    "DutMachine",
    "DutPlacement",
    "Endpoint",
    "Executor",
    "HostLoadProbe",
    "LabPorts",
    "LabRequest",
    "LabResource",
    "LoadsMappings",
    "Locate",
    "LossStop",
    "Mapping",
    "MappingTable",
    "MappingTableBuilder",
    "MeasuresMemory",
    "MonitorsCpu",
    "ParseError",
    "ParseSink",
    "Parser",
    "Phase2Options",
    "Port",
    "Registry",
    "ReportsSupport",
    "SamplesValidation",
    "SetsReceiveTimeout",
    "SlabCache",
    "StreamingParser",
    "StreamsOutput",
    "TableParam",
    "Tester",
    "TesterBackend",
    "TesterContext",
    "TesterSettings",
    "TrialEvidence",
    "WatchesHostLoad",
    "evidence_of",
]
