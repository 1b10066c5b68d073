"""``natbench lab up|down|status``: the local lab (network namespaces + veth) by hand."""

from __future__ import annotations

import json

import click

from natbench.cli import cli
from natbench.traffic.plan import Family

__all__ = ["lab"]


@cli.group("lab")
def lab() -> None:
    """Build, inspect and remove the local lab (DUT and tester namespaces joined by veth pairs)."""


_name = click.option("--name", default="natbench", show_default=True, help="Lab name (namespaces nb-NAME-dut/-tester).")


@lab.command("up")
@_name
@click.option(
    "--family",
    type=click.Choice([f.value for f in Family]),
    default=Family.NAT44.value,
    show_default=True,
    help="nat44: IPv4 on both sides; nat64: IPv6 private side; ipv4 / ipv6: forwarding baselines, no translation.",
)
def up(name: str, family: str) -> None:
    """Create the lab (idempotent) and print its state as JSON."""
    from natbench.lab import Lab

    click.echo(json.dumps(Lab(name, family=Family(family)).up(), indent=1, sort_keys=True))


@lab.command("down")
@_name
@click.option("--stale", is_flag=True, help="Remove every recorded lab whose owning process is gone (after crashes).")
def down(name: str, stale: bool) -> None:
    """Remove every namespace, veth and rule of the lab (idempotent; also after a crash)."""
    from natbench.lab import Lab, stale_labs

    for n in stale_labs() if stale else [name]:
        removed = Lab(n).down()
        click.echo(f"lab {n}: {'removed' if removed else 'nothing to remove'}")


@lab.command("status")
@_name
def status(name: str) -> None:
    """Print the lab's recorded state and what exists now, as JSON."""
    from natbench.lab import Lab

    click.echo(json.dumps(Lab(name).status(), indent=1, sort_keys=True))
