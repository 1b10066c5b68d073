"""The natbench namespace labs on this host: recorded ones, found ones, and the sweep of stale ones.

Labs are found from the kernel (namespaces ``nb-NAME-tester`` / ``nb-NAME-dut``, whose ``lo``
alias names the owning process and the state file) and from state files, so ``natbench lab down
--stale`` (:func:`remove_stale_labs`) finds every lab, whatever state directory it was recorded
in, and removes those whose owner is gone; the host-wide lock keeps it from judging a lab while
it is built. It also names the processes a lab left running when it was taken down (a kernel-bound
``conntrack -F`` outlives its namespace: :mod:`natbench.testbed.lab.outliving`) until they have ended.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from natbench.testbed.lab.host import (
    LAB_NAME_RE,
    OWNER_MARK,
    SYSTEM_STATE_DIR,
    host_lock,
    netns_list,
    owner_alive,
    require_root,
    run,
    state_dir,
)
from natbench.testbed.lab.netns import NetnsLab
from natbench.testbed.lab.outliving import LeftProcess, left_processes, outliving_labs

UNOWNED_GRACE = 3600.0
"""Seconds a lab whose owner nobody recorded (no kernel mark, no state file found: made by an
older natbench, or killed between creating a namespace and marking it) is left alone."""

_LAB_NS_RE = re.compile(r"^nb-(?P<name>.+)-(?P<role>tester|dut)$")


def list_labs(directory: Path | str | None = None) -> list[str]:
    """Names of the labs recorded in ``directory`` (default: the default state directory)."""
    d = state_dir(directory)
    return sorted(p.stem for p in d.glob("*.json")) if d.exists() else []


def recorded_lab(directory: Path | str | None = None) -> NetnsLab | None:
    """The lab recorded in ``directory`` (default: the default state directory) when it is the only one
    there, e.g. one made with ``natbench lab up``; None otherwise."""
    names = list_labs(directory)
    return NetnsLab(names[0], state_dir=directory) if len(names) == 1 else None


@dataclass(frozen=True)
class FoundLab:
    """A natbench lab found on this host, from the kernel (namespaces ``nb-NAME-tester|dut``) or a state file."""

    name: str
    """The lab name (``nb-NAME-dut`` / ``nb-NAME-tester``)."""
    namespaces: tuple[str, ...]
    """Its namespaces that exist now."""
    state_files: tuple[Path, ...]
    """State files recording it (any state directory natbench knows of or the kernel mark names)."""
    owner_pid: int | None
    """The owning process as recorded (kernel mark first, else a state file); None when nobody recorded one."""
    owner_alive: bool
    """True while the recorded owner runs (a reused pid does not count)."""
    by_hand: bool
    """Made with ``natbench lab up``: kept until removed by name."""
    age: float | None
    """Seconds since its oldest namespace was created (None without namespaces)."""
    stale: bool
    """To be removed by ``lab down --stale``: its owner is gone, or unrecorded for longer than the grace time."""
    reason: str
    """Why it is (not) stale, in words."""
    left: tuple[LeftProcess, ...] = ()
    """Processes of its namespaces still running after it was taken down (recorded then; those that ended are
    dropped)."""


def _read_mark(ns: str) -> dict[str, Any] | None:
    proc = run(["ip", "-n", ns, "-j", "link", "show", "dev", "lo"], check=False)
    try:
        alias = str(json.loads(proc.stdout or "[]")[0].get("ifalias", ""))
        mark = json.loads(alias[len(OWNER_MARK) :]) if alias.startswith(OWNER_MARK) else None
    except (ValueError, IndexError, AttributeError):
        return None
    return mark if isinstance(mark, dict) and isinstance(mark.get("pid"), int) else None


def _ns_age(ns: str) -> float | None:
    # the namespace file's times are those of its nsfs inode: when the namespace was created
    try:
        return max(0.0, time.time() - (Path("/run/netns") / ns).stat().st_mtime)
    except OSError:
        return None


def _lab_states(dirs: Sequence[Path]) -> dict[str, dict[Path, dict[str, Any]]]:
    """name -> {state file: contents} for every lab state file in ``dirs``."""
    out: dict[str, dict[Path, dict[str, Any]]] = {}
    for d in dirs:
        if not d.is_dir():
            continue
        for f in d.glob("*.json"):
            try:
                data = json.loads(f.read_text())
            except (OSError, ValueError):
                data = {}
            if isinstance(data, dict) and LAB_NAME_RE.match(f.stem):
                out.setdefault(f.stem, {})[f.resolve()] = data
    return out


def _as_int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def find_labs(
    state_dirs: Sequence[Path | str] = (), *, unowned_grace: float = UNOWNED_GRACE, kernel: bool = True
) -> list[FoundLab]:
    """Every natbench lab on this host and whether it is stale.

    Labs are found from the kernel (``kernel``: namespaces named ``nb-NAME-tester`` /
    ``nb-NAME-dut``) and from the state files in ``state_dirs``, the default state
    directory, ``/run/natbench/labs`` and any directory a lab's kernel mark names. The
    owner is the one in the kernel mark, else the one in a state file. A lab is stale
    when its owner is gone (a reused pid does not count), or, when no owner is recorded
    anywhere, once its namespaces are ``unowned_grace`` seconds old; a lab with a live
    owner never is.
    """
    groups: dict[str, list[str]] = {}
    if kernel:
        for ns in sorted(netns_list()):
            m = _LAB_NS_RE.match(ns)
            if m and LAB_NAME_RE.match(m.group("name")):
                groups.setdefault(m.group("name"), []).append(ns)
    marks = {name: [mk for ns in nss if (mk := _read_mark(ns)) is not None] for name, nss in groups.items()}
    dirs = [Path(d) for d in state_dirs] + [state_dir(), SYSTEM_STATE_DIR]
    dirs += [Path(str(mk["state"])).parent for mks in marks.values() for mk in mks if mk.get("state")]
    known_dirs = list(dict.fromkeys(d.resolve() for d in dirs))
    states = _lab_states(known_dirs)
    outliving = outliving_labs(known_dirs)
    out = []
    for name in sorted(set(groups) | set(states) | set(outliving)):
        nss = tuple(groups.get(name, ()))
        files = states.get(name, {})
        owners = [(int(mk["pid"]), _as_int(mk.get("start"))) for mk in marks.get(name, [])]
        if not owners:
            owners = [
                (pid, _as_int(st.get("owner_start"))) for st in files.values() if (pid := _as_int(st.get("owner_pid")))
            ]
        live = [pid for pid, start in owners if owner_alive(pid, start)]
        by_hand = any(mk.get("by_hand") for mk in marks.get(name, [])) or any(
            st.get("by_hand") for st in files.values()
        )
        ages = [a for ns in nss if (a := _ns_age(ns)) is not None]
        age = max(ages) if ages else None
        left = tuple(left_processes(outliving[name], name)) if name in outliving else ()
        if not nss and not files and not left:
            continue  # only a record of processes that have ended since: nothing of the lab is left
        stale, reason = _staleness(name, live, by_hand, owners, nss, bool(files), age, unowned_grace)
        owner = owners[0][0] if owners else None
        out.append(FoundLab(name, nss, tuple(sorted(files)), owner, bool(live), by_hand, age, stale, reason, left))
    return out


def _staleness(
    name: str,
    live: list[int],
    by_hand: bool,
    owners: list[tuple[int, int | None]],
    nss: tuple[str, ...],
    recorded: bool,
    age: float | None,
    unowned_grace: float,
) -> tuple[bool, str]:
    """Whether a lab is stale, and why, in words (see :func:`find_labs`)."""
    if live:
        return False, f"owner process {live[0]} is running"
    if by_hand:
        return False, f"made by hand with `natbench lab up`; `natbench lab down --name {name}` removes it"
    if owners:
        return True, f"owner process {owners[0][0]} is gone"
    if not nss and not recorded:
        return True, "taken down already"
    if not nss:
        return True, "a state file without an owner and without namespaces"
    if age is not None and age >= unowned_grace:
        return True, f"no owner recorded anywhere and {age:.0f} s old"
    return False, (
        f"no owner recorded anywhere, {age or 0:.0f} s old: left for {unowned_grace:.0f} s;"
        f" `natbench lab down --name {name}` removes it now"
    )


def stale_labs(state_dir: Path | str | None = None, *, unowned_grace: float = UNOWNED_GRACE) -> list[str]:
    """Names of the labs on this host whose owning process is gone (left behind by a crash or a kill).

    Looks in the kernel and in ``state_dir`` besides the known state directories (see :func:`find_labs`).
    """
    return [f.name for f in find_labs([state_dir] if state_dir else (), unowned_grace=unowned_grace) if f.stale]


def remove_stale_labs(
    state_dirs: Sequence[Path | str] = (),
    *,
    unowned_grace: float = UNOWNED_GRACE,
    names: Collection[str] | None = None,
) -> list[tuple[FoundLab, bool]]:
    """Remove every stale lab on this host (:func:`find_labs`), or those of ``names`` only.

    Returns each lab found and whether it was removed, with the processes it left running (those its
    removal could not end among them). Holds the host-wide lab lock exclusively, so no lab is judged
    while a process builds one.
    """
    require_root()
    out = []
    with host_lock(exclusive=True):
        for found in find_labs(state_dirs, unowned_grace=unowned_grace):
            if names is not None and found.name not in names:
                continue
            if not found.stale:
                out.append((found, False))
                continue
            removed = False
            left = {p.pid: p for p in found.left}
            for f in found.state_files or (state_dir() / f"{found.name}.json",):
                lab = NetnsLab(found.name, state_dir=f.parent)
                removed = lab.down() or removed
                left.update({p.pid: p for p in lab.left})
            out.append((dataclasses.replace(found, left=tuple(left.values())), removed))
    return out
