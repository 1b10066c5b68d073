"""How stored result values are reported: unit spellings and the all-frames convention (no pandas).

A result stores frame rates per direction (``fps``) with ``extra["directions"]`` and the engine's own
``extra["all_frames_per_second"]``; reports, the run summary and the progress lines show all frames per
second, as the seeds do. These functions are that one rule.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Unit spellings normalised in reports.
UNIT_ALIASES = {"conn/s": "cps", "pps": "fps"}

_DIRECTION_WORDS = {"bidirectional": 2, "both": 2, "forward": 1, "reverse": 1}


def directions_of(d: Any) -> int:
    """Number of active directions from ``extra["directions"]`` (2, "bidirectional", "forward", ...)."""
    if d is None:
        return 1
    if isinstance(d, int | float):
        return int(d) or 1
    return _DIRECTION_WORDS.get(str(d).lower(), 1)


def reported_factor(unit: str, value: float | None, extra: Mapping[str, Any]) -> float:
    """Factor from a stored result value to the reported one (the seeds' convention).

    Frame rates (``fps``) of bidirectional tests are reported as all frames per second:
    the engine's ``extra["all_frames_per_second"]`` when it stored one, else the
    per-direction value x the number of directions. Everything else is reported as stored.
    """
    if UNIT_ALIASES.get(unit, unit) != "fps":
        return 1.0
    all_fps = extra.get("all_frames_per_second")
    if all_fps is not None and value:
        return float(all_fps) / value  # the engine's own all-frames figure wins
    return float(directions_of(extra.get("directions")))


def reported_unit(unit: str, factor: float) -> str:
    """Short unit of a reported value: ``fps, all directions`` for the frames of several directions."""
    unit = UNIT_ALIASES.get(unit, unit)
    return "fps, all directions" if unit == "fps" and factor > 1 else unit
