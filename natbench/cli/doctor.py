"""``natbench doctor``: what the lab, VM DUTs, TRex, SSH and the report check need, what this machine has,
and the one command that installs the rest."""

from __future__ import annotations

import importlib
import os

import click

from natbench.cli.group import cli
from natbench.host import NEEDS, PackageCheck, check_packages, install_command

__all__ = ["doctor"]

_WHAT = {
    "build": "compile the software tester's C engine",
    "lab": "the local lab: namespaces, veth, kernel NAT (iptables, nftables, tayga)",
    "ssh": "DUTs reached over SSH; the ssh tests' local sshd",
    "vm": "DUTs in QEMU VMs (Jool) and their image build",
    "report": "the report check in a headless browser",
}


def _python_checks() -> list[tuple[str, str | None]]:
    """(what, problem or None) for the Python side: the C engine, the extras, the VM image, root."""
    out: list[tuple[str, str | None]] = []

    def importable(what: str, module: str, hint: str) -> None:
        try:
            importlib.import_module(module)
        except Exception as exc:  # any import failure means "not usable here"
            out.append((what, f"{hint} ({type(exc).__name__})"))
        else:
            out.append((what, None))

    importable(
        "software tester C engine",
        "natbench.testers.software._engine",
        "not built: pip install -e . builds it (needs gcc, python3-dev)",
    )
    from natbench.testers.trex.client import load_api

    try:
        load_api()
    except Exception:  # TesterError or ImportError: no client either way
        out.append(("TRex client", 'not installed: pip install -e ".[trex]" (Python < 3.12)'))
    else:
        out.append(("TRex client", None))
    importable("MLRsearch", "MLRsearch", 'not installed: pip install -e ".[mlr]"')
    from natbench.testbed.lab.vm_image import find_image

    image = find_image("jool")
    out.append(("Jool VM image", None if image else "not built: natbench lab image build jool (about 5 minutes)"))
    out.append(("root", None if os.geteuid() == 0 else "not root: the lab and VM DUTs need root"))
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
    python = _python_checks()
    click.echo(f"{'python':<7} {'ok' if all(p is None for _, p in python) else 'MISSING':<8} natbench's own parts")
    for what, problem in python:
        click.echo(f"{'':<16} {what}: {problem or 'ok'}")
    trex = os.environ.get("NATBENCH_TREX")
    click.echo(f"\nNATBENCH_TREX: {trex or 'unset (the trex tests and TRex campaigns need a TRex server)'}")
    if missing_packages:
        click.echo(f"\nInstall the missing system packages with:\n  {install_command(missing_packages)}")
        click.echo("or run ./dev setup in a natbench checkout (packages, virtual environment, natbench with extras).")
    if missing_packages or any(p for _, p in python):
        raise click.exceptions.Exit(1)
    click.echo("\nEverything natbench uses is here.")
