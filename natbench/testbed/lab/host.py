"""What every local lab needs from this host: commands, namespaces, processes, locks, the state directory.

The lab's state files live in :data:`DEFAULT_STATE_DIR` (``NATBENCH_LAB_STATE`` overrides it;
read through :func:`state_dir` at call time). :data:`HOST_LOCK` is one lock for the whole host:
``up`` holds it shared while it builds, the stale sweep exclusively while it judges and removes.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

from natbench.config.paths import path_problem
from natbench.errors import ConfigError, NatbenchError

SYSTEM_STATE_DIR = Path("/run/natbench/labs")
"""The state directory natbench uses without ``NATBENCH_LAB_STATE`` (the stale sweep always looks there)."""

DEFAULT_STATE_DIR = Path(os.environ.get("NATBENCH_LAB_STATE") or SYSTEM_STATE_DIR)
"""Where lab state files are written unless a lab is given another directory (checked when used:
:func:`state_dir`)."""

HOST_LOCK = Path("/run/lock/natbench-labs.lock")
"""One lock for the whole host, whatever the state directory: ``up`` holds it shared while it
builds, the stale sweep exclusively while it judges and removes."""

OWNER_MARK = "natbench-lab "
"""Prefix of the alias of ``lo`` in a lab's namespaces that names its owner (a JSON object follows)."""

LAB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,30}$")
"""A valid lab name."""


class LabError(NatbenchError):
    """The local lab could not be built, inspected or removed."""


def state_dir(given: Path | str | None = None) -> Path:
    """``given``, else the default state directory (:data:`DEFAULT_STATE_DIR`); ConfigError naming
    ``NATBENCH_LAB_STATE`` (or the directory given) and the limit when it cannot be a path."""
    path = Path(given) if given else DEFAULT_STATE_DIR
    problem = path_problem(str(path))
    if problem is not None:
        where = "the lab state directory" if given else "environment variable NATBENCH_LAB_STATE"
        raise ConfigError(f"{where}: is {problem}: not a directory name")
    return path


def run(cmd: Sequence[str], *, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command (60 s at most); with ``check`` a failure is a :class:`LabError` with its output."""
    try:
        proc = subprocess.run(list(cmd), capture_output=True, text=True, input=input, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise LabError(f"{' '.join(cmd)}: {exc}") from exc
    if check and proc.returncode != 0:
        raise LabError(f"{' '.join(cmd)}: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def netns_list() -> set[str]:
    """Names of the network namespaces that exist now (``ip netns list``)."""
    out = run(["ip", "-j", "netns", "list"], check=False).stdout.strip()
    if not out:
        return set()
    try:
        return {str(e["name"]) for e in json.loads(out)}
    except ValueError:
        return set()


@contextlib.contextmanager
def host_lock(*, exclusive: bool) -> Iterator[None]:
    """The host-wide lab lock (:data:`HOST_LOCK`); taken before any lab's own lock."""
    HOST_LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(HOST_LOCK, os.O_CREAT | os.O_RDWR, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def alive(pid: int) -> bool:
    """True while a process ``pid`` exists (also one this process may not signal)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def proc_start(pid: int) -> int | None:
    """Start time of process ``pid`` (clock ticks after boot, /proc/PID/stat field 22); None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner_alive(pid: int, start: int | None) -> bool:
    """True while the process ``pid`` that started at ``start`` (when known) runs: a reused pid is not the owner."""
    if pid <= 0 or not alive(pid):
        return False
    if start is None:
        return True
    now = proc_start(pid)
    return now is None or now == start


def require_root() -> None:
    """A :class:`LabError` unless this process is root and has ``ip``, ``nft`` and ``sysctl``."""
    if os.geteuid() != 0:
        raise LabError("the local lab needs root (network namespaces, veth, nftables)")
    for tool in ("ip", "nft", "sysctl"):
        if shutil.which(tool) is None:
            raise LabError(f"the local lab needs {tool!r} on PATH")
