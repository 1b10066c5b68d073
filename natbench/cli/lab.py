"""``natbench lab up|down|status``: the local lab (network namespaces + veth) by hand."""

from __future__ import annotations

import json

import click
from click.core import ParameterSource

from natbench.cli.group import cli
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
    from natbench.testbed.lab import NetnsLab

    click.echo(json.dumps(NetnsLab(name, family=Family(family)).up(by_hand=True), indent=1, sort_keys=True))


@lab.command("down")
@_name
@click.option(
    "--stale",
    is_flag=True,
    help="Remove every natbench lab on this host whose owning process is gone (after crashes), found from its"
    " namespaces and from state files in any state directory (with --name: that lab only, if it is stale);"
    " a lab whose owner runs, or one made by hand with `lab up`, is kept.",
)
def down(name: str, stale: bool) -> None:
    """Remove every namespace, veth and rule of the lab (idempotent; also after a crash)."""
    from natbench.testbed.lab import NetnsLab, remove_stale_labs

    if not stale:
        removed = NetnsLab(name).down()
        click.echo(f"lab {name}: {'removed' if removed else 'nothing to remove'}")
        return
    named = click.get_current_context().get_parameter_source("name") is not ParameterSource.DEFAULT
    found = remove_stale_labs(names=[name] if named else None)
    for lab_found, removed in found:
        what = ("removed" if removed else "nothing to remove") if lab_found.stale else "kept"
        click.echo(f"lab {lab_found.name}: {what} ({lab_found.reason})")
    if not found:
        click.echo(f"no natbench lab {name} on this host" if named else "no natbench lab on this host")


@lab.command("status")
@_name
def status(name: str) -> None:
    """Print the lab's recorded state and what exists now, as JSON."""
    from natbench.testbed.lab import NetnsLab

    click.echo(json.dumps(NetnsLab(name).status(), indent=1, sort_keys=True))
