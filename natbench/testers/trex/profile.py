"""TRex console profiles (``register()`` convention) built from natbench's compiler.

``profiles/*.py`` are three-line files that call :func:`register_profile`;
TRex's loader calls ``register().get_streams(direction, port_id, tunables=[...])``
and the tunables (``-t`` in the console) are parsed here with argparse, so
``start -f profiles/nat44_phase1.py -p 0 -t --src-ports 1024-2047 --rate 1e6``
sends exactly what natbench sends for that working point.
"""

from __future__ import annotations

import argparse
import csv
import ipaddress
from collections.abc import Sequence
from typing import Any

from natbench.plugins import Directions, Mapping, Phase2Options
from natbench.testers.trex import program as prg
from natbench.testers.trex.streams import build_streams
from natbench.traffic import AddressPlan, Family, PortRange, ResponderMode, TrafficPlan


def _port_range(text: str) -> PortRange:
    first, _, last = text.partition("-")
    try:
        return PortRange(int(first), int(last or first))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise argparse.ArgumentTypeError(f"expected 1/0/true/false, got {text!r}")


def read_mappings(path: str) -> tuple[Mapping, ...]:
    """Read DUT mappings from a CSV file: ``public_address,public_port,remote_port[,private_port]``."""
    out: list[Mapping] = []
    with open(path, newline="") as fh:
        for row in csv.reader(fh):
            if not row or row[0].startswith("#") or row[0] == "public_address":
                continue
            private = int(row[3]) if len(row) > 3 and row[3] else None
            out.append(Mapping(row[0], int(row[1]), int(row[2]), private))
    return tuple(out)


class NatbenchProfile:
    """One natbench phase as a TRex STL profile."""

    def __init__(self, family: Family, phase: int) -> None:
        self.family = family
        self.phase = phase

    def _parser(self) -> argparse.ArgumentParser:
        d = AddressPlan.default(self.family)
        p = argparse.ArgumentParser(
            prog=f"natbench {self.family} phase {self.phase}",
            description="natbench RFC 9693 traffic; rates in frames/s per direction",
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        p.add_argument("--src-ports", "--src_ports", type=_port_range, default=_port_range("1024-1123"))
        p.add_argument("--dst-ports", "--dst_ports", type=_port_range, default=_port_range("80-89"))
        p.add_argument("--frame-size", "--frame_size", type=int, default=64, help="IPv4 frame size (IPv6 +20)")
        p.add_argument("--seed", type=int, default=1, help="enumeration / random seed")
        p.add_argument("--rate", type=float, default=1e5, help="frames per second per direction")
        p.add_argument("--cores", type=int, default=prg.DEFAULT_MAX_CORES, help="cores per port to stay exact for")
        p.add_argument("--step", type=int, default=1, help="phase-1 source-list step")
        p.add_argument("--initiator", default=str(d.initiator))
        p.add_argument("--dut-private", "--dut_private", default=str(d.dut_private))
        p.add_argument("--dut-public", "--dut_public", default=str(d.dut_public))
        p.add_argument("--responder", default=str(d.responder))
        p.add_argument("--nat64-prefix", "--nat64_prefix", default=str(d.nat64_prefix))
        if self.phase == 2:
            p.add_argument("--responder-mode", "--responder_mode", choices=["compute", "read"], default="compute")
            p.add_argument("--mappings", help="CSV of DUT mappings (responder mode read)")
            p.add_argument("--selection", choices=["random", "linear", "fixed"], default="random")
            p.add_argument(
                "--latency", nargs="?", const="1", default="0", type=_flag, help="add a latency stream per direction"
            )
            p.add_argument("--latency-rate", "--latency_rate", type=float, default=1000.0)
        return p

    def plan(self, args: argparse.Namespace) -> TrafficPlan:
        """The TrafficPlan the tunables describe."""
        addresses = AddressPlan(
            initiator=ipaddress.ip_address(args.initiator),
            dut_private=ipaddress.ip_address(args.dut_private),
            dut_public=ipaddress.ip_address(args.dut_public),
            responder=ipaddress.ip_address(args.responder),
            nat64_prefix=ipaddress.IPv6Network(args.nat64_prefix),
            private_prefixlen=64 if self.family.private_ipv6 else 24,
            public_prefixlen=64 if self.family.public_ipv6 else 24,
        )
        mode = ResponderMode(getattr(args, "responder_mode", "compute"))
        return TrafficPlan(self.family, addresses, args.src_ports, args.dst_ports, args.frame_size, args.seed, mode)

    def get_streams(
        self, direction: int = 0, port_id: int = 0, tunables: Sequence[str] = (), **kwargs: Any
    ) -> list[Any]:
        """TRex entry point: direction 0 = private (Initiator) port, 1 = public (Responder) port."""
        args = self._parser().parse_args(list(tunables))
        plan = self.plan(args)
        port = prg.Port.PRIVATE if direction == 0 else prg.Port.PUBLIC
        if self.phase == 1:
            program = prg.compile_phase1(plan, args.rate, cores=args.cores, step=args.step)
        else:
            mappings = read_mappings(args.mappings) if args.mappings else None
            options = Phase2Options(args.latency, args.latency_rate, args.selection, mappings)
            program = prg.compile_phase2(plan, args.rate, Directions.BIDIRECTIONAL, options, cores=args.cores)
        return build_streams(program, port)


def register_profile(family: str, phase: int) -> NatbenchProfile:
    """What a profile file's ``register()`` returns."""
    return NatbenchProfile(Family(family), phase)
