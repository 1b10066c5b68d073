"""``natbench lab up|down|status``: the local lab (network namespaces + veth) by hand."""

from __future__ import annotations

import json

import click
from click.core import ParameterSource

from natbench.cli.group import CountRange, cli, printable
from natbench.traffic.plan import Family


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
@click.option(
    "--vm", default=None, help="Boot a QEMU VM from this image (e.g. jool) as the DUT instead of a namespace."
)
@click.option("--vcpus", type=CountRange(1, 64), default=1, show_default=True, help="vCPUs of the VM (--vm).")
@click.option("--memory", type=CountRange(256, 262144), default=1536, show_default=True, help="MiB of the VM (--vm).")
def up(name: str, family: str, vm: str | None, vcpus: int, memory: int) -> None:
    """Create the lab (idempotent) and print its state as JSON."""
    from natbench.testbed.lab import LabError, NetnsLab, VmLab, VmSettings

    lab = (
        VmLab(name, vm=VmSettings(vm, vcpus=vcpus, memory=memory), family=Family(family))
        if vm
        else NetnsLab(name, family=Family(family))
    )
    try:
        state = lab.up(by_hand=True)
    except LabError as exc:
        click.echo(f"Error: {exc}", err=True)
        raise SystemExit(2 if "install the Debian package" in str(exc) else 1) from None
    click.echo(json.dumps(state, indent=1, sort_keys=True))


@lab.command("down")
@_name
@click.option(
    "--stale",
    is_flag=True,
    help="Remove every natbench lab on this host whose owning process is gone (after crashes), found from its"
    " namespaces and from state files in any state directory (with --name: that lab only, if it is stale);"
    " a lab whose owner runs, or one made by hand with `lab up`, is kept. Processes a lab left running when it was"
    " taken down (a kernel-bound conntrack -F outlives its namespace) are named until they have ended.",
)
def down(name: str, stale: bool) -> None:
    """Remove every namespace, veth and rule of the lab (idempotent; also after a crash)."""
    from natbench.testbed.lab import NetnsLab, remove_stale_labs
    from natbench.testbed.lab.outliving import left_processes

    if not stale:
        lab = NetnsLab(name)
        removed = lab.down()
        click.echo(f"lab {name}: {'removed' if removed else 'nothing to remove'}")
        for p in {p.pid: p for p in (*left_processes(lab.state_dir, name), *lab.left)}.values():
            click.echo(f"lab {name}: still running: {p.words()}")
        return
    named = click.get_current_context().get_parameter_source("name") is not ParameterSource.DEFAULT
    found = remove_stale_labs(names=[name] if named else None)
    for lab_found, removed in found:
        what = ("removed" if removed else "nothing to remove") if lab_found.stale else "kept"
        click.echo(f"lab {lab_found.name}: {what} ({lab_found.reason})")
        for p in lab_found.left:
            click.echo(f"lab {lab_found.name}: still running: {p.words()}")
    if not found:
        click.echo(f"no natbench lab {name} on this host" if named else "no natbench lab on this host")


@lab.command("status")
@_name
def status(name: str) -> None:
    """Print the lab's recorded state and what exists now, as JSON."""
    from natbench.testbed.lab import NetnsLab

    click.echo(json.dumps(NetnsLab(name).status(), indent=1, sort_keys=True))


@lab.group("image")
def image() -> None:
    """Build and list the VM disk images of the lab (Debian 12 from Debian's packages, cached)."""


_cache = click.option(
    "--cache",
    type=click.Path(file_okay=False),
    default=None,
    help="Image cache directory (default: NATBENCH_IMAGE_CACHE, else /var/cache/natbench/images).",
)


@image.command("build")
@click.argument("name", default="jool")
@_cache
@click.option("--force", is_flag=True, help="Rebuild even when the cache holds the image.")
@click.option(
    "--jool-source",
    default=None,
    metavar="PATH|URL",
    help="jool-mapt: the Jool 4.2 source to compile (a source tree, a release tarball or an http(s) URL;"
    " default: the public v4.2.0-rc3 archive, pinned by its sha256).",
)
def image_build(name: str, cache: str | None, force: bool, jool_source: str | None) -> None:
    """Build image NAME (default: jool; jool-mapt: Jool 4.2 from source) unless the cache holds it; every step
    is timed and shown."""
    from natbench.testbed.lab import LabError
    from natbench.testbed.lab.jool_source import JoolSourceError
    from natbench.testbed.lab.vm_image import build_image, missing_tools

    problems = missing_tools(("debootstrap", "qemu-system-x86_64", "qemu-img"))
    if problems:
        click.echo(f"Error: {problems[0]}", err=True)
        raise SystemExit(2)
    try:
        built = build_image(
            name,
            cache=cache,
            force=force,
            progress=lambda msg: click.echo(printable(msg), err=True),
            jool_source=jool_source,
        )
    except JoolSourceError as exc:  # one line: escaped, URL passwords as ***, cut (the source is the user's text)
        click.echo(f"Error: {printable(str(exc))}", err=True)
        raise SystemExit(2) from None
    except LabError as exc:
        click.echo(f"Error: {printable(str(exc))}", err=True)
        raise SystemExit(1) from None
    click.echo(json.dumps({"path": str(built.path), **built.manifest}, indent=1, sort_keys=True))


@image.command("list")
@_cache
def image_list(cache: str | None) -> None:
    """Print the images natbench knows and whether the cache holds each, as JSON."""
    from natbench.testbed.lab.vm_image import IMAGES, find_image

    out = {}
    for name in sorted(IMAGES):
        found = find_image(name, cache=cache)
        out[name] = {"cached": str(found.path) if found else None}
    click.echo(json.dumps(out, indent=1, sort_keys=True))
