"""CPU and memory monitor of a DUT during a trial (seed 004, sections 5.3 and 6.6).

A background thread reads ``/proc/uptime``, ``/proc/stat``, ``MemAvailable`` and the
``nf_conntrack`` slab through the DUT's executor every ``interval`` seconds (one
command per sample, so it works locally, in a namespace and over SSH alike), or one
sampler loop runs on the DUT for the whole trial (``mode="remote"``). Each
sample after the first gives the **per-core idle percentage** over the interval just
ended (idle + iowait ticks / all ticks), timed by the DUT's own uptime clock, so the
bottleneck graphs (idle time of each core versus time, not averaged) can be drawn.

Samples are plain dicts, ready to be stored with the trial::

    {"t": 1.02, "idle": {"cpu0": 3.0, "cpu1": 97.9}, "mem_available": 24375568384,
     "conntrack_slab": 4096}
"""

from __future__ import annotations

import secrets
import shlex
import threading
import time
from types import TracebackType
from typing import Any

from natbench.duts.parsers import parse_meminfo, parse_proc_stat, parse_slabinfo
from natbench.errors import DutError
from natbench.plugins import Executor, ParseError

__all__ = [
    "JOOL_BIB_CACHE",
    "JOOL_SESSION_CACHE",
    "MEMORY_KEYS",
    "SAMPLE_COMMAND",
    "Monitor",
    "idle_percent",
    "memory_per_connection",
    "read_memory",
]

_SEP = "@@natbench@@"
_END = "@@natbench-sample-end@@"
SAMPLE_COMMAND = (
    f"cat /proc/uptime; echo {_SEP}; grep '^cpu' /proc/stat; echo {_SEP}; "
    f"grep -E '^(MemAvailable|MemTotal|Slab):' /proc/meminfo; echo {_SEP}; "
    "grep -E '^(nf_conntrack|session_nodes|bib_nodes) ' /proc/slabinfo 2>/dev/null; true"
)
"""The one command a sample runs on the DUT."""


def _parse_sample(out: str) -> dict[str, Any]:
    parts = out.split(_SEP)
    if len(parts) != 4:
        raise ParseError("monitor", "unexpected sample output", out)
    try:
        uptime = float(parts[0].split()[0])
    except (IndexError, ValueError):
        raise ParseError("monitor", "bad /proc/uptime", parts[0]) from None
    stat = parse_proc_stat(parts[1])
    mem = parse_meminfo(parts[2])
    slabs = parse_slabinfo(parts[3])
    slab = slabs.get("nf_conntrack")
    return {
        "uptime": uptime,
        "stat": stat,
        "mem_available": mem.get("MemAvailable"),
        "mem_total": mem.get("MemTotal"),
        "jool_session_slab": _slab_bytes(slabs.get(JOOL_SESSION_CACHE)),
        "jool_bib_slab": _slab_bytes(slabs.get(JOOL_BIB_CACHE)),
        "conntrack_slab": _slab_bytes(slab),
        "conntrack_objs": slab["active_objs"] if slab else None,
    }


JOOL_SESSION_CACHE = "session_nodes"
"""The slab cache Jool 4.1 keeps its session entries in (``kmem_cache_create`` in jool_common.ko). A kernel that
merges slab caches (the default, ``slab_nomerge`` turns it off) may fold it into another cache of the same size;
/proc/slabinfo then has no line of that name and no Jool figure is read."""
JOOL_BIB_CACHE = "bib_nodes"
"""The slab cache of Jool 4.1's BIB entries (same caveat as :data:`JOOL_SESSION_CACHE`)."""


def _slab_bytes(slab: dict[str, int] | None) -> int | None:
    """Bytes a slab cache's objects occupy (allocated objects x object size), None without the cache."""
    return slab["num_objs"] * slab["objsize"] if slab else None


def idle_percent(before: dict[str, dict[str, int]], after: dict[str, dict[str, int]]) -> dict[str, float]:
    """Per-core idle percentage between two /proc/stat readings (idle + iowait over all ticks).

    Cores missing from either reading (offline) are left out; a core with no ticks in
    between is reported as 100 % idle only if it had no busy ticks either.
    """
    out: dict[str, float] = {}
    for cpu, a in after.items():
        if cpu == "cpu" or cpu not in before:
            continue
        b = before[cpu]
        idle = (a.get("idle", 0) + a.get("iowait", 0)) - (b.get("idle", 0) + b.get("iowait", 0))
        fields = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
        total = sum(a.get(k, 0) for k in fields) - sum(b.get(k, 0) for k in fields)
        out[cpu] = round(100.0 * idle / total, 2) if total > 0 else 100.0
    return dict(sorted(out.items(), key=lambda kv: int(kv[0][3:] or -1)))


MEMORY_KEYS = ("mem_available", "mem_total", "conntrack_slab", "jool_session_slab", "jool_bib_slab")
"""What :func:`read_memory` returns, in bytes, each when the DUT shows it."""


def read_memory(executor: Executor) -> dict[str, int]:
    """``{"mem_available", "mem_total", "conntrack_slab", "jool_session_slab", "jool_bib_slab"}`` in bytes on the
    DUT now (one command); a slab only when /proc/slabinfo is readable and lists its cache. DutError (or ParseError,
    a ValueError) when MemAvailable cannot be read."""
    res = executor.run(SAMPLE_COMMAND)
    if not res.ok:
        raise DutError(f"cannot read memory: {res.stderr.strip()}")
    s = _parse_sample(res.stdout)
    if s["mem_available"] is None:
        raise DutError("cannot read memory: no MemAvailable in /proc/meminfo")
    return {k: int(s[k]) for k in MEMORY_KEYS if s.get(k) is not None}


def memory_per_connection(before: dict[str, int], after: dict[str, int], connections: int) -> dict[str, float]:
    """Bytes per connection: MemAvailable decrease / N and nf_conntrack slab growth / N."""
    if connections <= 0:
        raise ValueError("connections must be positive")
    out = {"mem_available": (before["mem_available"] - after["mem_available"]) / connections}
    if "conntrack_slab" in before and "conntrack_slab" in after:
        out["conntrack_slab"] = (after["conntrack_slab"] - before["conntrack_slab"]) / connections
    return out


class Monitor:
    """Samples a DUT's per-core idle time and memory during a trial.

    Two modes, same samples:

    ``thread`` (default)
        a background thread runs one short sampling command per interval through the
        executor (one round trip per sample: right for local/namespace DUTs and SSH at >= 1 s);
    ``remote``
        one sampler loop runs on the DUT for the whole trial (``sleep interval`` between
        readings) and is stopped through a stop file; its output comes back in one piece at
        ``stop()`` (right for sub-second intervals over SSH).

    Use ``with dut.monitor(0.5) as mon: ...trial...`` then ``mon.samples``; or
    ``start()`` / ``stop()``. A failing sample is recorded in ``errors``, never raised
    into the trial.
    """

    def __init__(
        self,
        executor: Executor,
        *,
        interval: float = 1.0,
        name: str = "",
        mode: str = "thread",
        max_duration: float = 3600.0,
    ) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        if mode not in ("thread", "remote"):
            raise ValueError(f"unknown monitor mode {mode!r} (thread, remote)")
        self.executor = executor
        self.interval = interval
        self.name = name
        self.mode = mode
        self.max_duration = max_duration
        """Remote mode: the sampler ends by itself after this many seconds."""
        self.samples: list[dict[str, Any]] = []
        """One dict per interval: t (s since the first reading, DUT clock), idle per core (%),
        mem_available and conntrack_slab (bytes)."""
        self.errors: list[str] = []
        """Sampling failures (time and message)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._first: dict[str, Any] | None = None
        self._last: dict[str, Any] | None = None
        self._stop_file = f"/tmp/natbench-monitor-{secrets.token_hex(8)}"
        self._remote_out: str | None = None

    def _add(self, s: dict[str, Any]) -> None:
        if self._first is None:
            self._first = s
        elif self._last is not None:
            self.samples.append(
                {
                    "t": round(s["uptime"] - self._first["uptime"], 3),
                    "idle": idle_percent(self._last["stat"], s["stat"]),
                    "mem_available": s["mem_available"],
                    "conntrack_slab": s["conntrack_slab"],
                }
            )
        self._last = s

    def _sample(self) -> None:
        try:
            res = self.executor.run(SAMPLE_COMMAND, timeout=max(5.0, 4 * self.interval))
            if not res.ok:
                raise DutError(res.stderr.strip() or f"exit status {res.returncode}")
            s = _parse_sample(res.stdout)
        except Exception as exc:
            self.errors.append(f"{time.time():.3f} {exc}")
            return
        self._add(s)

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self._sample()
            next_at += self.interval
            delay = next_at - time.monotonic()
            if delay < 0:  # sampling is slower than the interval: do not pile up
                next_at = time.monotonic()
                delay = 0
            if self._stop.wait(delay):
                break
        self._sample()  # close the last interval at stop time

    def remote_command(self) -> str:
        """The sampler loop run on the DUT in ``remote`` mode."""
        f = shlex.quote(self._stop_file)
        rounds = max(1, int(self.max_duration / self.interval))
        return (
            f'rm -f {f}; n=0; while [ ! -e {f} ] && [ "$n" -lt {rounds} ]; do '
            f"{SAMPLE_COMMAND}; echo {_END}; n=$((n + 1)); sleep {self.interval:g}; done; "
            f"rm -f {f}; {SAMPLE_COMMAND}; echo {_END}"
        )

    def _remote(self) -> None:
        try:
            res = self.executor.run(self.remote_command(), timeout=self.max_duration + 60)
            if not res.ok:
                raise DutError(res.stderr.strip() or f"exit status {res.returncode}")
            self._remote_out = res.stdout
        except Exception as exc:
            self.errors.append(f"{time.time():.3f} {exc}")

    def start(self) -> Monitor:
        """Take the first reading and start sampling."""
        if self._thread is not None:
            raise RuntimeError("monitor already started")
        target = self._remote if self.mode == "remote" else self._loop
        self._thread = threading.Thread(target=target, name=f"natbench-monitor-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> list[dict[str, Any]]:
        """Stop sampling (takes a final reading) and return the samples."""
        if self._thread is None:
            return self.samples
        if self.mode == "remote":
            try:
                self.executor.run(f"touch {shlex.quote(self._stop_file)}", timeout=30)
            except Exception as exc:
                self.errors.append(f"{time.time():.3f} cannot stop the remote sampler: {exc}")
            self._thread.join(timeout=max(30.0, 5 * self.interval))
            for chunk in (self._remote_out or "").split(_END)[:-1]:
                try:
                    self._add(_parse_sample(chunk))
                except ParseError as exc:
                    self.errors.append(str(exc))
        else:
            self._stop.set()
            self._thread.join(timeout=max(10.0, 5 * self.interval))
        self._thread = None
        return self.samples

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
