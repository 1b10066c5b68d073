"""What the Responder needs after a phase 1 in the campaign's responder mode (read, compute or learn)."""

from __future__ import annotations

from natbench.errors import DutError, SearchError
from natbench.metrics.context import ProcedureContext
from natbench.metrics.settings import MetricSettings
from natbench.metrics.trial import dut_supports
from natbench.plugins import LoadsMappings, MappingTable
from natbench.traffic.plan import ResponderMode

PRESERVATION_SAMPLE = 256
"""Mappings compared with the phase-1 enumeration before computed (ResponderMode.COMPUTE) tuples are trusted."""


def responder_tuples(ctx: ProcedureContext[MetricSettings]) -> MappingTable | None:
    """After a phase 1: what the Responder needs to answer the DUT's tuples in the campaign's responder mode.

    * READ: the DUT's mappings, handed to a tester with the ``load_mappings`` hook (for ``validate``)
      and returned for :attr:`Phase2Options.mappings`;
    * COMPUTE: the tester computes public tuples as if the DUT kept every source port, so the first
      time in a repetition a sample of the DUT's mappings is checked against the phase-1 enumeration
      (SearchError when a port moved, the wrong public address was used or the pair was never sent);
      a DUT that cannot list its mappings is trusted as configured (the trial records ``unverified``);
    * LEARN: nothing (the tester learned the tuples itself).
    """
    mode = ctx.plan.responder_mode
    if mode is ResponderMode.READ:
        mappings = MappingTable.of(ctx.dut.mappings())
        if not mappings:
            raise SearchError("responder mode read: the DUT listed no mappings after phase 1")
        if isinstance(ctx.tester, LoadsMappings):
            ctx.tester.load_mappings(mappings)
        return mappings
    if mode is ResponderMode.COMPUTE and ctx.preservation is None:
        ctx.preservation = check_preservation(ctx)
    return None


def check_preservation(ctx: ProcedureContext[MetricSettings]) -> str:
    """``verified`` or ``unverified`` (the DUT cannot list mappings); SearchError when ports were not preserved."""
    if not dut_supports(ctx.dut, "mappings"):
        return "unverified"
    try:
        mappings = MappingTable.of(ctx.dut.mappings())
    except (NotImplementedError, DutError):
        return "unverified"
    plan = ctx.plan
    if not mappings:
        raise SearchError("responder mode compute: the DUT listed no mappings after phase 1, cannot check ports")
    step = max(1, len(mappings) // PRESERVATION_SAMPLE)
    public = str(plan.addresses.dut_public)
    for m in mappings[::step][:PRESERVATION_SAMPLE]:  # a few hundred of them: Mapping objects are fine
        moved = m.private_port is not None and m.private_port != m.public_port
        if moved or m.public_port not in plan.src_ports or m.remote_port not in plan.dst_ports:
            raise SearchError(
                f"responder mode compute, but the DUT does not preserve source ports: mapping "
                f"{m.private_port}->{m.public_address}:{m.public_port} (remote port {m.remote_port}) is not a "
                f"phase-1 pair of {plan.src_ports} x {plan.dst_ports}; use responder: read"
            )
        if m.public_address != public:
            raise SearchError(
                f"responder mode compute, but the DUT used public address {m.public_address}, not {public}; "
                "set traffic.addresses.dut_public or use responder: read"
            )
    return "verified"
