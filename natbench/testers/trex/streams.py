"""Program -> TRex ``STLStream`` objects (needs the client library, never a server)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

from natbench.testers.trex.client import load_api
from natbench.testers.trex.program import FieldWrite, FlowVar, Port, Program, StreamPlan


def _packet(api: ModuleType, plan: StreamPlan) -> Any:
    f = plan.frame
    if f.ip_version == 4:
        l3 = api.IP(src=str(f.src), dst=str(f.dst), ttl=64)
    else:
        l3 = api.IPv6(src=str(f.src), dst=str(f.dst), hlim=64)
    pkt = api.Ether() / l3 / api.UDP(sport=f.sport, dport=f.dport) / api.Raw(f.payload)
    if len(pkt) != f.packet_len:
        raise AssertionError(f"packet of {len(pkt)} bytes, expected {f.packet_len}")
    return pkt


def _var(api: ModuleType, v: FlowVar) -> Any:
    if v.value_list is not None:
        return api.STLVmFlowVar(
            name=v.name,
            size=v.size,
            op=v.op,
            value_list=v.value_list.tolist(),
            step=v.step,
            split_to_cores=v.split_to_cores,
            next_var=v.next_var,
        )
    return api.STLVmFlowVar(
        name=v.name,
        size=v.size,
        op=v.op,
        min_value=v.min_value,
        max_value=v.max_value,
        step=v.step,
        split_to_cores=v.split_to_cores,
        next_var=v.next_var,
    )


def _write(api: ModuleType, w: FieldWrite) -> Any:
    if w.cast_size is None:
        return api.STLVmWrFlowVar(fv_name=w.var, pkt_offset=w.offset)
    return api.STLVmWrMaskFlowVar(fv_name=w.var, pkt_offset=w.offset, pkt_cast_size=w.cast_size, mask=w.mask)


def build_stream(plan: StreamPlan, api: ModuleType | None = None) -> Any:
    """One ``STLStream`` for ``plan``."""
    api = api or load_api()
    instructions: list[Any] = [_var(api, v) for v in plan.variables]
    instructions += [_write(api, w) for w in plan.writes]
    # TRex writes its 16-byte latency trailer (magic, pg id, sequence, timestamp) into the payload
    # of every latency frame after the packet was built, so the UDP checksum scapy computed no
    # longer holds (trex-core issue 478); seen live on v3.08: the DUT's conntrack marked the
    # frames invalid, forwarded them untranslated one way and dropped them the other way.
    # The checksum instruction makes the NIC (or TRex, in software) fill it at transmit time.
    if (plan.variables or plan.latency_pg_id is not None) and plan.fix_checksum_hw:
        instructions.append(
            api.STLVmFixChecksumHw(
                l3_offset=14, l4_offset=plan.frame.udp_offset, l4_type=api.CTRexVmInsFixHwCs.L4_TYPE_UDP
            )
        )
    builder = api.STLPktBuilder(pkt=_packet(api, plan), vm=api.STLScVmRaw(instructions) if instructions else None)
    if plan.frames is None:
        mode = api.STLTXCont(pps=plan.pps)
    else:
        mode = api.STLTXSingleBurst(total_pkts=plan.frames, pps=plan.pps)
    kwargs: dict[str, Any] = {}
    if plan.latency_pg_id is not None:
        kwargs["flow_stats"] = api.STLFlowLatencyStats(pg_id=plan.latency_pg_id)
    if plan.isg > 0:
        kwargs["isg"] = plan.isg * 1e6  # TRex's inter-stream gap is in microseconds
    return api.STLStream(
        name=plan.name,
        packet=builder,
        mode=mode,
        self_start=plan.self_start,
        next=plan.next,
        random_seed=plan.random_seed,
        core_id=-1 if plan.core_id is None else plan.core_id,
        **kwargs,
    )


def build_streams(program: Program, port: Port, api: ModuleType | None = None) -> list[Any]:
    """The ``STLStream`` objects of ``program`` sent from ``port``."""
    api = api or load_api()
    return [build_stream(s, api) for s in program.on(port)]


def to_json(program: Program, api: ModuleType | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{port: [stream JSON, ...]}``: exactly what the client would send to the server."""
    api = api or load_api()
    return {str(p): [build_stream(s, api).to_json() for s in program.on(p)] for p in Port}
