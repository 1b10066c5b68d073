"""A plain-forwarding baseline measured in another run (``natbench report RUN --baseline OTHER_RUN``).

Seed 000 Figure 2 prints the NAT's throughput and, below it, "IPv4 packet forwarding (using the same
port number ranges)" of the same machine with a stateless DUT, then "throughput ratio (%)". The NAT
campaign and the forwarding campaign write two run directories. This module matches the working points
of the two: a run's point that measured the compared metric (throughput) takes the baseline (forwarding)
results of the baseline run's point with the same cores, source and destination port ranges and frame
size (the DUT parameters differ by design: a forwarding DUT has no connection table). The baseline's
results and trials are then re-filed under the run's point ids, so every table, plot and summary treats
them as the one-run case (a campaign that measured both) does. Pure functions; nothing is printed.

The two runs must also have measured the same kind of traffic (:func:`check_like_traffic`): the same IP
versions on the wire on both sides (:data:`WIRE`: a ``nat44`` run takes an ``ipv4`` or ``nat44`` baseline, seed
000 Figure 2's pair, but not an ``ipv6`` one; a ``nat64`` run only a ``nat64`` one) and the same acceptance (loss
ratio) at every matched point: a frame rate with 0.1 % loss allowed over one with none is no "throughput ratio".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

import pandas as pd

from natbench.errors import ConfigError

MATCH_COLUMNS = ("cores", "src_first", "src_last", "dst_first", "dst_last", "frame_size")
"""Columns of :func:`~natbench.report.aggregate.points_frame` that must be equal for a baseline point to match."""


def _key(points: pd.DataFrame, point_id: str) -> str:
    """The working point of ``point_id`` as a string of :data:`MATCH_COLUMNS` (NaN cores as 'nan' on both sides)."""
    row = points.loc[point_id]
    return "|".join(str(row[c]) for c in MATCH_COLUMNS)


def point_words(points: pd.DataFrame, point_id: str) -> str:
    """A working point in words for messages: ``iptables-8c-4M (8 cores, ports 1-4000 x 1-1000, 64-byte frames)``."""
    p = points.loc[point_id]
    parts: list[str] = [] if pd.isna(p["cores"]) else [f"{int(p['cores'])} cores"]
    parts.append(f"ports {p['src_first']}-{p['src_last']} x {p['dst_first']}-{p['dst_last']}")
    if p["frame_size"] is not None and not pd.isna(p["frame_size"]):
        parts.append(f"{int(p['frame_size'])}-byte frames")
    return f"{p['label']} ({', '.join(parts)})"


def _with_results(results: pd.DataFrame, metric: str) -> list[str]:
    """Point ids with at least one stored result (a value or a failed repetition) of ``metric``, in order."""
    ids = results.loc[results["metric"].astype(str) == metric, "point_id"].astype(str)
    return list(dict.fromkeys(ids))


def _directions(results: pd.DataFrame, point_id: str, metric: str) -> int | None:
    """The number of active directions ``metric``'s results at ``point_id`` were measured in (None: no result)."""
    rows = results[(results["point_id"].astype(str) == point_id) & (results["metric"].astype(str) == metric)]
    return None if rows.empty else int(rows["directions"].max())


def match_baseline(
    points: pd.DataFrame,
    results: pd.DataFrame,
    base_points: pd.DataFrame,
    base_results: pd.DataFrame,
    *,
    baseline: str,
    compared: str,
    run_dir: Path,
    base_dir: Path,
) -> dict[str, str]:
    """For every point of the run that has ``compared`` results, the baseline run's point with ``baseline``
    results at the same working point (:data:`MATCH_COLUMNS`): run point id -> baseline point id.

    Raises :class:`~natbench.errors.ConfigError` (naming the baseline run directory) when the baseline run
    has no ``baseline`` results, when the run has no ``compared`` results or ``baseline`` results of its
    own, when some points have no baseline (all of them are named), when two baseline points match one, or when a
    matched baseline ran in another number of directions (bidirectional against forward-only).
    """
    held = sorted({str(m) for m in base_results["metric"].unique()})
    base_ids = [pid for pid in _with_results(base_results, baseline) if pid in base_points.index]
    if not base_ids:
        holds = ", ".join(held) if held else "no results"
        raise ConfigError(
            f"no {baseline} (plain forwarding throughput) results to use as the baseline of {run_dir};"
            f" it holds {holds}",
            file=str(base_dir),
        )
    own = _with_results(results, baseline)
    if own:
        raise ConfigError(
            f"holds {baseline} results of its own (a campaign that measured both): its tables already show them;"
            f" drop --baseline {base_dir}",
            file=str(run_dir),
        )
    wanted = [pid for pid in _with_results(results, compared) if pid in points.index]
    if not wanted:
        raise ConfigError(f"no {compared} results to compare with the baseline in {base_dir}", file=str(run_dir))
    by_key: dict[str, list[str]] = {}
    for pid in base_ids:
        by_key.setdefault(_key(base_points, pid), []).append(pid)
    mapping: dict[str, str] = {}
    missing: list[str] = []
    for pid in wanted:
        found = by_key.get(_key(points, pid), [])
        if len(found) > 1:
            names = "; ".join(point_words(base_points, b) for b in found)
            raise ConfigError(
                f"{len(found)} working points with {baseline} results match {point_words(points, pid)} of {run_dir}:"
                f" {names}; cannot tell which one is its baseline",
                file=str(base_dir),
            )
        if found:
            mapping[pid] = found[0]
        else:
            missing.append(point_words(points, pid))
    unlike = [
        f"{point_words(points, pid)}: {mine} vs {theirs}"
        for pid, bid in mapping.items()
        if (mine := _directions(results, pid, compared)) != (theirs := _directions(base_results, bid, baseline))
        and mine is not None
        and theirs is not None
    ]
    if unlike:
        raise ConfigError(
            f"the {baseline} baseline ran in another number of directions than the {compared} of {run_dir}"
            f" ({'; '.join(unlike)}): their ratio would compare unlike frame rates",
            file=str(base_dir),
        )
    if missing:
        have = "; ".join(point_words(base_points, b) for b in base_ids)
        raise ConfigError(
            f"no {baseline} result at {len(missing)} of the {len(wanted)} working points of {run_dir} with {compared}"
            f" results (matched by cores, port ranges and frame size): {'; '.join(missing)}."
            f" The baseline run has {baseline} at: {have}",
            file=str(base_dir),
        )
    return mapping


WIRE = {"nat44": "IPv4 -> IPv4", "ipv4": "IPv4 -> IPv4", "nat64": "IPv6 -> IPv4", "ipv6": "IPv6 -> IPv6"}
"""Traffic family -> the IP versions of the frames on the private and the public side. A baseline's family must
have the run's: an IPv6 frame is 20 bytes longer than the IPv4 frame of the same test (RFC 8219),
so frame rates of different IP versions are rates of different frames."""


def check_like_traffic(
    family: str | None,
    base_family: str | None,
    mapping: Mapping[str, str],
    acceptance: Callable[[str], float | None],
    base_acceptance: Callable[[str], float | None],
    points: pd.DataFrame,
    *,
    run_dir: Path,
    base_dir: Path,
) -> list[str]:
    """Refuse a baseline run that measured other traffic than the run: another IP version on either side
    (:data:`WIRE`) or another acceptance (loss ratio) at a matched point (``mapping``: run point id -> baseline
    point id; ``acceptance`` / ``base_acceptance``: a point id's loss ratio of the compared / baseline metric).

    Raises :class:`~natbench.errors.ConfigError` naming the baseline run directory. Returns the notes for what
    could not be compared (a run without a readable campaign: unknown family or acceptance).
    """
    notes: list[str] = []
    if family is None or base_family is None:
        notes.append(f"traffic family of {run_dir if family is None else base_dir} unknown: not compared")
    elif WIRE.get(family, family) != WIRE.get(base_family, base_family):
        raise ConfigError(
            f"the baseline run measured traffic family {base_family} ({WIRE.get(base_family, base_family)}), "
            f"{run_dir} measured {family} ({WIRE.get(family, family)}): frame rates of other IP versions are not "
            "a throughput ratio",
            file=str(base_dir),
        )
    unlike: list[str] = []
    unknown = 0
    for pid, bid in mapping.items():
        mine, theirs = acceptance(pid), base_acceptance(bid)
        if mine is None or theirs is None:
            unknown += 1
        elif mine != theirs:
            unlike.append(f"{point_words(points, pid)}: {mine:g} vs {theirs:g}")
    if unlike:
        raise ConfigError(
            f"the baseline run accepted another loss ratio than {run_dir} ({'; '.join(unlike)}): the ratio of rates"
            " measured with different acceptance criteria compares unlike rates",
            file=str(base_dir),
        )
    if unknown:
        notes.append(f"acceptance unknown at {unknown} matched point(s): not compared")
    return notes


def refile(frame: pd.DataFrame, mapping: Mapping[str, str], metric: str, categories: tuple[str, ...]) -> pd.DataFrame:
    """The rows of ``metric`` in a baseline run's results or trials frame, re-filed under the run's point ids
    (``mapping``: run point id -> baseline point id; a baseline point used by several run points is repeated).
    ``categories``: the frame's categorical columns, kept categorical."""
    rows = frame[frame["metric"].astype(str) == metric]
    parts = []
    for pid, base_id in mapping.items():
        part = rows[rows["point_id"].astype(str) == base_id].copy()
        part["point_id"] = pid
        parts.append(part)
    if not parts:
        return frame.iloc[0:0]
    out = pd.concat(parts, ignore_index=True)
    for c in categories:
        out[c] = out[c].astype(str).astype("category")
    return out


def combined(own: pd.DataFrame, added: pd.DataFrame, categories: tuple[str, ...]) -> pd.DataFrame:
    """``own`` and ``added`` rows in one frame of the same columns and dtypes (categorical columns re-made)."""
    if added.empty:
        return own
    out = pd.concat([own.astype({c: str for c in categories}), added.astype({c: str for c in categories})])
    out = out.reset_index(drop=True)
    for c in categories:
        out[c] = out[c].astype("category")
    return out
