"""``natbench worker SCHEDULER --testbed FILE`` and ``natbench scheduler``: the machines of a distributed run.

A worker is one Dask worker (one thread) that owns the testbed its file describes; the file is read here,
on the worker's machine, and never sent anywhere. ``natbench scheduler`` starts a Dask scheduler bound to
loopback unless told otherwise. TLS: ``--tls-ca-file``, ``--tls-cert``, ``--tls-key`` (or Dask's own
``distributed.comm.tls.*`` configuration); see docs/distributed.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import click

from natbench.cli.group import CountRange, NumberRange, cli
from natbench.errors import ConfigError, NatbenchError
from natbench.values import MAX_WAIT_SECONDS


def need_distributed(command: str) -> None:
    """Raise one ConfigError line when Dask distributed (the ``distributed`` extra) is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            f"natbench {command} needs Dask distributed ({exc.name or 'distributed'} is not installed): "
            "pip install 'natbench[distributed]'"
        ) from None


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals that stop a worker or the scheduler cleanly (Ctrl-C, ``kill``, a service manager's stop)."""


def close_on_stop_signals(close: Callable[[], Awaitable[object]]) -> None:
    """Run ``close`` (a Dask server's) on the first of :data:`STOP_SIGNALS`, in the running event loop.

    Whatever the disposition the process inherited: a shell starts a background command (``natbench scheduler
    &`` in a script) with SIGINT ignored, and Python then never turns Ctrl-C into KeyboardInterrupt. Outside
    the main thread (a worker served from a test's thread) signals cannot be caught and nothing is set."""
    loop = asyncio.get_running_loop()
    for sig in STOP_SIGNALS:
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):  # not the main thread
            loop.add_signal_handler(sig, lambda: asyncio.ensure_future(close()))


class WorkerFailed(NatbenchError):
    """The worker could not join the scheduler."""

    exit_code = 2


def security_from(ca_file: Path | None, cert: Path | None, key: Path | None, role: str) -> Any:
    """A Dask ``Security`` for ``role`` (scheduler, worker, client) from the TLS files; None: Dask's configuration.

    All three files or none (ConfigError naming the missing option).
    """
    given = {"--tls-ca-file": ca_file, "--tls-cert": cert, "--tls-key": key}
    if not any(given.values()):
        return None
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise ConfigError(f"TLS needs --tls-ca-file, --tls-cert and --tls-key together (missing {', '.join(missing)})")
    from distributed.security import Security

    # the process's own client (a worker's tasks talk to the scheduler through one) uses the same certificate
    roles = {role, "client"}
    return Security(
        require_encryption=True,
        tls_ca_file=str(ca_file),
        **{f"tls_{r}_{part}": str(path) for r in roles for part, path in (("cert", cert), ("key", key))},
    )


def worker_testbed(path: Path) -> Any:
    """The :class:`~natbench.run.remote.OwnedTestbed` of a testbed file (ConfigError: one line naming the file)."""
    from natbench.run.remote import OwnedTestbed
    from natbench.testbed.file import load_testbed

    tb = load_testbed(path)
    if tb.missing_env:
        raise ConfigError(f"needs environment variable(s) {', '.join(tb.missing_env)}", file=str(path))
    for key in ("name", "class"):
        if not tb.testbed.get(key):
            raise ConfigError(
                f"a worker's testbed needs a {key!r} (testbed name and class: see docs/distributed.md)",
                file=str(path),
                field=f"testbed.{key}",
            )
    return OwnedTestbed(str(tb.testbed["name"]), str(tb.testbed["class"]), dict(tb.testbed), path.resolve())


def serve_worker(
    scheduler: str, owned: Any, *, host: str = "127.0.0.1", security: Any = None, death_timeout: float = 10.0
) -> None:
    """Run one Dask worker owning ``owned`` until it is closed (or the scheduler goes away for ``death_timeout``)."""
    from distributed import Worker

    async def serve() -> None:
        kwargs: dict[str, Any] = {"security": security} if security is not None else {}
        worker = Worker(
            scheduler,
            nthreads=1,
            name=f"natbench-{owned.testbed_name}",
            resources=owned.resources,
            plugins=(owned,),
            host=host,
            death_timeout=death_timeout,
            **kwargs,
        )
        try:
            await worker
        except (OSError, TimeoutError, RuntimeError) as exc:
            raise WorkerFailed(f"no Dask scheduler reachable at {scheduler} within {death_timeout:g} s") from exc
        close_on_stop_signals(worker.close)  # closes the testbed (and a lab it brought up) too
        await worker.finished()

    asyncio.run(serve())


_TLS = [
    click.option("--tls-ca-file", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="TLS: CA file."),
    click.option("--tls-cert", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="TLS: certificate."),
    click.option("--tls-key", type=click.Path(exists=True, dir_okay=False, path_type=Path), help="TLS: private key."),
]


def _tls(f: Any) -> Any:
    for option in reversed(_TLS):
        f = option(f)
    return f


@cli.command("worker")
@click.argument("scheduler")
@click.option(
    "--testbed",
    "testbed_file",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The testbed this worker owns (a testbed section with name and class, or a whole campaign).",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="Address the worker listens on.")
@click.option(
    "--death-timeout",
    type=NumberRange(min=0.1, max=MAX_WAIT_SECONDS),
    default=10.0,
    show_default=True,
    help="Give up joining after SECONDS.",
)
@_tls
def worker_command(
    scheduler: str,
    testbed_file: Path,
    host: str,
    death_timeout: float,
    tls_ca_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
) -> None:
    """Serve one testbed to the Dask scheduler at SCHEDULER (tcp://HOST:PORT or tls://HOST:PORT)."""
    need_distributed("worker")
    owned = worker_testbed(testbed_file)
    security = security_from(tls_ca_file, tls_cert, tls_key, "worker")
    click.echo(
        f"natbench: worker for testbed {owned.testbed_name} (class {owned.testbed_class}) joining {scheduler}",
        err=True,
    )
    serve_worker(scheduler, owned, host=host, security=security, death_timeout=death_timeout)


@cli.command("scheduler")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told).")
@click.option("--port", type=CountRange(0, 65535), default=8786, show_default=True, help="Port to bind (0: any).")
@_tls
def scheduler_command(
    host: str, port: int, tls_ca_file: Path | None, tls_cert: Path | None, tls_key: Path | None
) -> None:
    """Run a Dask scheduler for distributed runs (no dashboard), until Ctrl-C or SIGTERM."""
    need_distributed("scheduler")
    from distributed import Scheduler

    security = security_from(tls_ca_file, tls_cert, tls_key, "scheduler")
    protocol = "tls" if security is not None else "tcp"

    async def serve() -> None:
        kwargs: dict[str, Any] = {"security": security} if security is not None else {}
        async with Scheduler(host=host, port=port, protocol=protocol, dashboard=False, **kwargs) as s:
            close_on_stop_signals(s.close)
            click.echo(f"natbench: scheduler listening at {s.address}", err=True)
            await s.finished()

    asyncio.run(serve())
