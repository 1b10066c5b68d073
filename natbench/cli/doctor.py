"""``natbench doctor``: what the lab, VM DUTs, TRex, SSH and the report check need, what this machine has,
and the one command that installs the rest.

The host packages come from natbench's package list (:mod:`natbench.host`); natbench's own parts are asked
themselves: every registered tester kind and DUT access kind (its backend's ``problems(None)``, which names what
to install) and every registered search algorithm (MLRsearch needs a library of its own).
"""

from __future__ import annotations

import os

import click

from natbench.cli.group import cli, printable
from natbench.host import NEEDS, PackageCheck, check_packages, install_command
from natbench.plugins import ACCESS, TESTERS
from natbench.search import ALGORITHMS

_WHAT = {
    "build": "compile the software tester's C engine",
    "lab": "the local lab: namespaces, veth, kernel NAT (iptables, nftables, tayga)",
    "ssh": "DUTs reached over SSH; the ssh tests' local sshd",
    "vm": "DUTs in QEMU VMs (Jool) and their image build",
    "report": "the report check in a headless browser",
}


def _part_checks() -> list[tuple[str, str | None]]:
    """(part, problem or None) for natbench's own parts, each asked itself: one row per problem."""
    out: list[tuple[str, str | None]] = []
    root: list[str] = []
    parts = [(f"tester {k}", b) for k, b in TESTERS.entries()] + [(f"access {k}", b) for k, b in ACCESS.entries()]
    for what, backend in parts:
        problems = backend.problems(None)
        out += [(what, p) for p in problems] or [(what, None)]
        if backend.needs_root:
            root.append(what)
    for name, algo in ALGORITHMS.entries():
        out += [(f"search algorithm {name}", p) for p in algo.problems()] or [(f"search algorithm {name}", None)]
    out.append(("root", None if os.geteuid() == 0 else f"not root: needed by {', '.join(root)}"))
    return out


def _package_line(checks: list[PackageCheck]) -> str:
    parts = []
    for c in checks:
        names = c.package.commands or (c.package.package,)
        for n in names:
            parts.append(f"{n} MISSING ({c.package.package})" if n in c.missing else n)
    return ", ".join(parts)


@cli.command("doctor")
def doctor() -> None:
    """List what natbench's parts need, what this machine has, and the command that installs the rest.

    Exit status 0 when everything is there, 1 when something is missing.
    """
    checks = check_packages()
    missing_packages = sorted({c.package.package for c in checks if not c.present})
    click.echo("natbench doctor: what each part of natbench needs on this machine\n")
    for need in NEEDS:
        mine = [c for c in checks if c.package.need == need]
        status = "ok" if all(c.present for c in mine) else "MISSING"
        click.echo(f"{need:<7} {status:<8} {_WHAT[need]}")
        click.echo(f"{'':<16} {_package_line(mine)}")
    parts = _part_checks()
    status = "ok" if all(p is None for _, p in parts) else "MISSING"
    click.echo(f"{'parts':<7} {status:<8} natbench's tester kinds, DUT access kinds and search algorithms, asked")
    for what, problem in parts:
        click.echo(f"{'':<16} {what}: {problem or 'ok'}")
    trex = os.environ.get("NATBENCH_TREX")
    shown = printable(trex, 200) if trex else "unset (the trex tests and TRex campaigns need a TRex server)"
    click.echo(f"\nNATBENCH_TREX: {shown}")
    if missing_packages:
        click.echo(f"\nInstall the missing system packages with:\n  {install_command(missing_packages)}")
        click.echo("or run ./dev setup in a natbench checkout (packages, virtual environment, natbench with extras).")
    if missing_packages or any(p for _, p in parts):
        raise click.exceptions.Exit(1)
    click.echo("\nEverything natbench uses is here.")
