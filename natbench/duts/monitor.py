"""CPU and memory monitor of a DUT during a trial (seed 004, sections 5.3 and 6.6).

A background thread reads ``/proc/uptime``, ``/proc/stat``, ``MemAvailable`` and the slab caches
the DUT's recipe declares through the DUT's executor every ``interval`` seconds (one
command per sample, so it works locally, in a namespace and over SSH alike), or one
sampler loop runs on the DUT for the whole trial (``mode="remote"``). Each
sample after the first gives the **per-core idle percentage** over the interval just
ended (idle + iowait ticks / all ticks), timed by the DUT's own uptime clock, so the
bottleneck graphs (idle time of each core versus time, not averaged) can be drawn.

Samples are plain dicts, ready to be stored with the trial (a slab cache under the key its recipe declares)::

    {"t": 1.02, "idle": {"cpu0": 3.0, "cpu1": 97.9}, "mem_available": 24375568384,
     "conntrack_slab": 4096}
"""

from __future__ import annotations

import secrets
import shlex
import threading
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from natbench.duts.parsers import parse_meminfo, parse_proc_stat, parse_slabinfo
from natbench.errors import DutError
from natbench.plugins import Executor, ParseError, SlabCache

_SEP = "@@natbench@@"
_END = "@@natbench-sample-end@@"


def sample_command(slabs: Sequence[SlabCache] = ()) -> str:
    """The one command a sample runs on the DUT: uptime, per-core CPU ticks, MemAvailable / MemTotal and the lines
    of the declared slab caches in /proc/slabinfo (each name quoted; a cache the kernel does not list, or an
    unreadable /proc/slabinfo, gives no line)."""
    head = (
        f"cat /proc/uptime; echo {_SEP}; grep '^cpu' /proc/stat; echo {_SEP}; "
        f"grep -E '^(MemAvailable|MemTotal|Slab):' /proc/meminfo; echo {_SEP}; "
    )
    if not slabs:
        return head + "true"
    patterns = " ".join(f"-e {shlex.quote('^' + s.cache + ' ')}" for s in slabs)
    return head + f"grep {patterns} /proc/slabinfo 2>/dev/null; true"


def _parse_sample(out: str, slabs: Sequence[SlabCache] = ()) -> dict[str, Any]:
    parts = out.split(_SEP)
    if len(parts) != 4:
        raise ParseError("monitor", "unexpected sample output", out)
    try:
        uptime = float(parts[0].split()[0])
    except (IndexError, ValueError):
        raise ParseError("monitor", "bad /proc/uptime", parts[0]) from None
    stat = parse_proc_stat(parts[1])
    mem = parse_meminfo(parts[2])
    caches = parse_slabinfo(parts[3])
    sample: dict[str, Any] = {
        "uptime": uptime,
        "stat": stat,
        "mem_available": mem.get("MemAvailable"),
        "mem_total": mem.get("MemTotal"),
    }
    for slab in slabs:  # bytes of the cache's objects under its declared key; None: the kernel lists no such cache
        sample[slab.key] = _slab_bytes(caches.get(slab.cache))
    return sample


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


def read_memory(executor: Executor, slabs: Sequence[SlabCache] = ()) -> dict[str, int]:
    """``mem_available``, ``mem_total`` and each declared slab cache's bytes (under its key) on the DUT now (one
    command); a slab only when /proc/slabinfo is readable and lists its cache. DutError (or ParseError, a
    ValueError) when MemAvailable cannot be read."""
    res = executor.run(sample_command(slabs))
    if not res.ok:
        raise DutError(f"cannot read memory: {res.stderr.strip()}")
    s = _parse_sample(res.stdout, slabs)
    if s["mem_available"] is None:
        raise DutError("cannot read memory: no MemAvailable in /proc/meminfo")
    keys = ("mem_available", "mem_total", *(slab.key for slab in slabs))
    return {k: int(s[k]) for k in keys if s.get(k) is not None}


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
        slabs: Sequence[SlabCache] = (),
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
        self.slabs = tuple(slabs)
        """The slab caches of the DUT's connection table (its recipe's), sampled beside MemAvailable."""
        self.command = sample_command(self.slabs)
        """The sampling command."""
        self.samples: list[dict[str, Any]] = []
        """One dict per interval: t (s since the first reading, DUT clock), idle per core (%),
        mem_available and each slab cache's bytes under its key."""
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
                    **{slab.key: s[slab.key] for slab in self.slabs},
                }
            )
        self._last = s

    def _sample(self) -> None:
        try:
            res = self.executor.run(self.command, timeout=max(5.0, 4 * self.interval))
            if not res.ok:
                raise DutError(res.stderr.strip() or f"exit status {res.returncode}")
            s = _parse_sample(res.stdout, self.slabs)
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
            f"{self.command}; echo {_END}; n=$((n + 1)); sleep {self.interval:g}; done; "
            f"rm -f {f}; {self.command}; echo {_END}"
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
                    self._add(_parse_sample(chunk, self.slabs))
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
