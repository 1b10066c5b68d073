"""What a software-tester trial's final counts say: whether the tester kept the rate, what it did without failing the
trial (a stall it caught up with, frames its own receive side dropped), and the tester facts stored with the trial.

Each function reads the C data path's raw counts (``_engine.run``'s result: a dict per stream and per port).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from natbench.results import Deviation, Direction
from natbench.testers.software.specs import _engine


@dataclass(frozen=True)
class Pacing:
    """How late and how far behind the tester may send before a trial fails or notes it."""

    rate_tolerance: float
    """Largest accepted lateness of the last frame, relative to the trial's intended duration."""
    lateness_slack: float
    """Lateness (s) always accepted, for very short trials (scheduler wake-up jitter)."""
    max_stall: float
    """Longest moment behind schedule (s) that is no deviation."""
    catchup: float
    """After falling behind, frames go out at most at this multiple of the rate until the backlog is sent."""


def span(t: dict[str, Any]) -> float:
    """Seconds from a stream's first frame to its last."""
    return max(float(t["last"]) - float(t["first"]), 0.0)


def rate_check(txs: list[dict[str, Any]], rate: float, pacing: Pacing) -> tuple[bool, list[str], float]:
    """Did every stream send all its frames, on time on average? (ok, why not, the slowest achieved rate)."""
    ok = True
    notes: list[str] = []
    achieved_all: list[float] = []
    for t in txs:
        sent, count = int(t["sent"]), int(t["count"])  # a stopped stream: the frames due when it stopped
        planned = int(t.get("planned", count))  # the full trial's frames: its tolerances are the full trial's
        took = span(t)
        if rate > 0 and math.isfinite(rate):
            took += 1.0 / rate  # the first frame is due at 0, the n-th at (n-1)/rate
        achieved = sent / took if took > 0 else 0.0
        achieved_all.append(achieved)
        if sent < count and rate > 0 and math.isfinite(rate):
            ok = False
            notes.append(f"sent {sent} of {count} frames")
        elif rate > 0 and math.isfinite(rate):
            # the n-th frame is due (n-1)/rate after the start; how late was the last one?
            lateness = float(t["last"]) - (count - 1) / rate
            allowed = max(pacing.rate_tolerance * planned / rate, pacing.lateness_slack)
            if lateness > allowed:
                ok = False
                notes.append(
                    f"fell behind: last frame {lateness * 1e3:.3f} ms late (allowed {allowed * 1e3:.3f} ms), "
                    f"{achieved:.0f} of {rate:.0f} fps"
                )
    return ok, notes, min(achieved_all) if achieved_all else 0.0


def deviations(
    directions: list[Direction],
    txs: list[dict[str, Any]],
    rxs: list[dict[str, Any]],
    rate: float,
    softnet_drops: int,
    pacing: Pacing,
) -> dict[Direction, Deviation]:
    """Per direction (its stream ``txs[i]``, received by ``rxs[i]``): a stall caught up in a burst, frames the
    receive socket dropped, frames the tester CPUs' backlog dropped (counted against every direction: the
    counter does not say whose)."""
    out: dict[Direction, Deviation] = {}
    for d, t, r in zip(directions, txs, rxs, strict=True):
        clump = 0
        notes: list[str] = []
        if rate > 0 and math.isfinite(rate):
            # a stall that was caught up later sent a burst the DUT never should have seen
            lag = int(t["max_lag"])
            planned = int(t.get("planned", t["count"]))  # a stopped trial keeps the full trial's allowance
            lag_allowed = max(pacing.max_stall * rate, pacing.rate_tolerance * planned, _engine.BATCH)
            if lag > lag_allowed:
                clump = lag
                notes.append(
                    f"stalled: {lag} frames ({lag / rate * 1e3:.1f} ms) behind schedule at one point, then caught"
                    f" up at up to {pacing.catchup:g} x the rate (allowed without note {lag_allowed:.0f} frames)"
                )
        missed = int(r["socket_drops"]) + int(softnet_drops)
        if r["socket_drops"]:
            notes.append(f"tester receive socket dropped {r['socket_drops']} frames")
        if softnet_drops:
            notes.append(f"backlog of the tester CPUs dropped {softnet_drops} frames")
        dev = Deviation(clump=clump, missed=missed, notes=tuple(notes))
        if dev:
            out[d] = dev
    return out


def tester_extra(raw: dict[str, Any]) -> dict[str, Any]:
    """The tester facts stored with a trial (its ``extra["tester"]``): elapsed time, lags, send calls and errors,
    receive drops, real-time scheduling, lanes."""
    return {
        "tester": {
            "elapsed": round(float(raw["elapsed"]), 6),
            "max_lag_frames": [int(t["max_lag"]) for t in raw["tx"]],
            "behind_s": [round(float(t.get("behind", 0.0)), 6) for t in raw["tx"]],
            "send_calls": [int(t["calls"]) for t in raw["tx"]],
            "send_errors": [int(t["errors"]) for t in raw["tx"]],
            "socket_drops": [int(r["socket_drops"]) for r in raw["rx"]],
            "softnet_drops_tester_cpus": int(raw.get("softnet_drops", 0)),
            "realtime": bool(raw.get("realtime", False)),
            "lanes": raw["lanes"],
        }
    }
