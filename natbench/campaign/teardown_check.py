"""Can a campaign's tear-down points be timed? The tear-down resolution check of ``natbench validate`` and ``plan``.

A tear-down repetition fails "too few connections to time" when deleting its N connections takes no longer than the
DUT's empty-table delete varies by (:mod:`natbench.metrics.teardown_resolution`). Before a campaign runs, the check
applies that rule to each working point with what is known of the DUT's delete-all (a
:class:`~natbench.metrics.teardown_resolution.DeletionProfile`):

* by default the figures of the seeds for the DUT's recipe (:data:`KNOWN_DELETION`): the fastest tear-down rate
  a seed measured for that kind of DUT (the shortest deletion time, so the check errs towards warning) and the
  spread of its empty-table delete times;
* with ``natbench plan --from RUN``, what an earlier run measured (its tear-down rate at its largest N, the median
  spread of its empty-table delete times; :func:`natbench.report.deletion.measured_deletion`), for the whole testbed.

A point whose expected deletion time N / rate is within the noise gets a warning (its repetitions will most likely
fail) naming the connections to use, M = RESOLUTION x noise x rate; a point below M but above the noise a note
(timed coarsely). Several DUTs that each keep a connection table are flushed one after another, so their deletion
times and their noises add up. A DUT whose recipe has no known figures is named in a note.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from natbench.metrics.teardown import TEARDOWN
from natbench.metrics.teardown_resolution import DeletionProfile, resolution

if TYPE_CHECKING:
    from natbench.campaign.model import Campaign


_CONNTRACK = DeletionProfile(
    rate=413_360,
    noise=0.02,
    source="seed 000 Figure 5, iptables: at most 413,360 connections/s deleted, the empty table 0.55..0.57 s",
)
_JOOL = DeletionProfile(
    rate=3_931_000,
    noise=0.08,
    source="seed 000 Figure 9 and 3.4, Jool: at most 3.931M connections/s deleted, the empty table 0.42..0.50 s",
)
_PF = DeletionProfile(
    rate=426_303,
    noise=0.01,
    source="seed 001's PF table, OpenBSD PF: at most 426,303 connections/s deleted, the empty table 0.36..0.37 s",
)

KNOWN_DELETION: dict[str, DeletionProfile] = {
    "iptables-nat44": _CONNTRACK,
    "nftables-nat44": _CONNTRACK,  # the same kernel connection tracking, deleted by `conntrack -F`
    "tayga-nat64": _CONNTRACK,  # its stateful NAT44 is conntrack's
    "jool-mapt-ce": _CONNTRACK,  # its NAPT is conntrack's
    "jool-nat64": _JOOL,
    "openbsd-pf-nat44": _PF,
    "openbsd-pf-nat64": _PF,
}
"""The deletion figures of the seeds per shipped recipe that keeps a connection table: the fastest tear-down rate a
seed reports for that kind of DUT and the spread of its empty-table delete at the smallest table measured (the
spread grows with the table: seed 000 Figure 5 has 0.02 s at 1.56M connections, 0.1 s at 400M)."""


@dataclass(frozen=True)
class TeardownCheck:
    """The outcome of :func:`teardown_check`."""

    warnings: tuple[str, ...] = field(default=())
    """One line per point whose tear-down is likely too few connections to time."""
    notes: tuple[str, ...] = field(default=())
    """The figures used, points timed only coarsely, and what could not be checked."""


def profile_for(recipe: str) -> DeletionProfile | None:
    """The seeds' deletion figures for a DUT's recipe (a name, or a path whose file name is a shipped recipe's);
    None when none are known."""
    return KNOWN_DELETION.get(Path(recipe).stem if recipe.endswith((".yaml", ".yml")) else recipe)


def teardown_check(campaign: Campaign, measured: DeletionProfile | None = None) -> TeardownCheck:
    """Check every working point's tear-down N against what the DUTs' delete-all can time (see the module docstring).

    ``measured``: what an earlier run measured (``natbench plan --from RUN``), used instead of the seeds' figures."""
    if TEARDOWN.name not in campaign.metrics:
        return TeardownCheck()
    notes: list[str] = []
    if measured is None:
        notes += [
            f"tear-down resolution of DUT {d.name} not checked: no known deletion rate for recipe {d.recipe} "
            "(natbench plan --from RUN uses an earlier run's)"
            for d in campaign.testbed.duts
            if profile_for(d.recipe) is None
        ]
    profile = deletion_profile(campaign, measured)
    if profile is None:
        return TeardownCheck((), tuple(notes))
    first = resolution(1, profile)
    notes.insert(
        0,
        f"tear-down resolution: {profile.rate:,.0f} connections/s deleted, empty-table delete noise "
        f"{profile.noise:.3g} s ({profile.source}): at least {first.advised:,} connections time it well",
    )
    warnings: list[str] = []
    for p in campaign.points():
        r = resolution(p.connections, profile)
        line = r.warning()
        if line is None:
            continue
        if r.too_few:
            warnings.append(f"point {p.index} ({p.label}): {line}")
        else:
            notes.append(f"point {p.index} ({p.label}): {line}")
    return TeardownCheck(tuple(warnings), tuple(notes))


def deletion_profile(campaign: Campaign, measured: DeletionProfile | None = None) -> DeletionProfile | None:
    """What is known of the campaign's delete-all: ``measured`` (an earlier run's), else the seeds' figures of the
    DUTs' recipes, flushed one after another; None when no DUT's figures are known."""
    if measured is not None:
        return measured
    known = [(d.name, p) for d in campaign.testbed.duts if (p := profile_for(d.recipe)) is not None]
    return _flushed_in_turn(known) if known else None


def _flushed_in_turn(known: list[tuple[str, DeletionProfile]]) -> DeletionProfile:
    """The profile of DUTs flushed one after another, each holding the N connections: their deletion times and
    noises add up (one DUT: its own profile, its source named after it)."""
    if len(known) == 1:
        name, p = known[0]
        return DeletionProfile(p.rate, p.noise, f"DUT {name}: {p.source}")
    rate = 1.0 / sum(1.0 / p.rate for _, p in known)
    noise = sum(p.noise for _, p in known)
    return DeletionProfile(rate, noise, "; ".join(f"DUT {name}: {p.source}" for name, p in known))
