"""Processes of a lab that outlived it: started in its namespaces by natbench, still running after the lab was taken
down, and named by ``natbench lab down --stale`` until they have ended.

Taking a lab down kills the processes of its namespaces (SIGTERM, then SIGKILL) before it deletes them. A process
working inside one system call does not die before the call returns: a ``conntrack -F`` of millions of connections
goes on deleting them, in a namespace that has no name any more, for minutes. Such a process is recorded beside the
lab's state (``<state dir>/<lab>.outliving``, one JSON object per line: pid, start time, command line, namespace,
when it was recorded), so that whoever looks for what natbench left behind finds it. Each record is looked at again
whenever the lab's leftovers are listed; a process that has ended (or whose pid now belongs to another process) is
dropped, and the file with its last record.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from natbench.testbed.lab.host import owner_alive, proc_start

SUFFIX = ".outliving"
"""The file name ending of a lab's record of its leftover processes (beside its ``.json`` state file)."""


@dataclass(frozen=True)
class LeftProcess:
    """A process of a lab's namespace that outlived the lab."""

    pid: int
    """Its process id."""
    start: int | None
    """Its start time (clock ticks after boot): a pid used again by another process is not it."""
    args: str
    """Its command line (cut to 200 characters)."""
    namespace: str
    """The namespace it was started in (deleted since: the process still holds it)."""
    lab: str
    """The lab's name."""
    since: float
    """When it was found still running as the lab was taken down (seconds since the epoch)."""

    def alive(self) -> bool:
        """Whether it still runs."""
        return owner_alive(self.pid, self.start)

    def state(self) -> str:
        """Its state letter now (``R`` running, ``D`` uninterruptible, ...; ``?`` when it cannot be read)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
            return stat[stat.rindex(")") + 2 :].split()[0]
        except (OSError, ValueError, IndexError):
            return "?"

    def words(self, now: float | None = None) -> str:
        """``pid 4242 (conntrack -F, state R), started in nb-x-dut, still running 412 s after the lab was taken
        down``."""
        age = (now if now is not None else time.time()) - self.since
        return (
            f"pid {self.pid} ({self.args or '?'}, state {self.state()}), started in {self.namespace}, still running "
            f"{age:.0f} s after lab {self.lab} was taken down: inside a system call no signal ends it before the call "
            "returns (a kernel-bound flush ends when the kernel has deleted the table)"
        )


def _read(path: Path) -> list[LeftProcess]:
    out: list[LeftProcess] = []
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        try:
            data: Any = json.loads(line)
            out.append(
                LeftProcess(
                    int(data["pid"]),
                    int(data["start"]) if data.get("start") is not None else None,
                    str(data.get("args", "")),
                    str(data.get("namespace", "")),
                    str(data.get("lab", "")),
                    float(data.get("since", 0.0)),
                )
            )
        except (ValueError, TypeError, KeyError):
            continue  # a damaged line names nothing that could be checked
    return out


def _write(path: Path, left: Iterable[LeftProcess]) -> None:
    lines = [json.dumps(asdict(p), sort_keys=True) for p in left]
    if not lines:
        with contextlib.suppress(OSError):
            path.unlink()
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def record_left(state_dir: Path, lab: str, namespace: str, pids: Iterable[int]) -> list[LeftProcess]:
    """Record the processes ``pids`` of ``namespace`` still running as lab ``lab`` is taken down; return them."""
    now = time.time()
    new: list[LeftProcess] = []
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue  # it has ended meanwhile
        new.append(LeftProcess(pid, proc_start(pid), args[:200], namespace, lab, now))
    if new:
        path = state_dir / f"{lab}{SUFFIX}"
        state_dir.mkdir(parents=True, exist_ok=True)
        _write(path, [*(p for p in _read(path) if p.alive()), *new])
    return new


def left_processes(state_dir: Path, lab: str) -> list[LeftProcess]:
    """The recorded processes of lab ``lab`` that still run (those that have ended are dropped from the record)."""
    path = state_dir / f"{lab}{SUFFIX}"
    if not path.exists():
        return []
    alive = [p for p in _read(path) if p.alive()]
    _write(path, alive)
    return alive


def outliving_labs(state_dirs: Iterable[Path]) -> dict[str, Path]:
    """Lab name -> the state directory of each lab with a record of leftover processes in ``state_dirs``."""
    out: dict[str, Path] = {}
    for d in state_dirs:
        if d.is_dir():
            for f in d.glob(f"*{SUFFIX}"):
                out.setdefault(f.name[: -len(SUFFIX)], d)
    return out
