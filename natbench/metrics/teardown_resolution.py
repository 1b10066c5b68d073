"""What a tear-down can time: how many connections stand out of the noise of the DUT's empty-table delete.

A tear-down repetition (:mod:`natbench.metrics.teardown`) fails when its deletion time T_N - T_0 lies within the
spread of its empty-table delete times T_0: the delete-all command itself varies by that much, so fewer connections
than it deletes in that time are no measurement. The same rule, applied before anything runs to what is known of a
DUT (its deletion rate and the noise of its empty-table delete, a :class:`DeletionProfile`), says whether a point's N
is likely below what can be timed and which N to use::

    expected deletion time   d = N / rate
    d <= noise               likely too few to time: the repetitions will most likely fail
    N < M                    timed coarsely: the noise is more than 1 / RESOLUTION of the deletion time
    M = ceil(RESOLUTION x noise x rate)

``natbench validate`` and ``natbench plan`` warn with it (:func:`natbench.campaign.teardown_check.teardown_check`);
a failed repetition advises the same M from the rate it saw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

RESOLUTION = 4.0
"""A deletion time is timed well when it is this many times the empty-table delete's spread (the noise then moves
it by at most a quarter): the connection count :func:`advised_connections` gives aims at it."""

MIN_NOISE = 1e-6
"""The smallest noise reckoned with (seconds): a spread of 0 (one timing, or equal ones) still has a clock's
resolution."""


def advised_connections(noise: float, rate: float) -> int:
    """The connections whose deletion takes ``RESOLUTION`` x ``noise`` seconds at ``rate`` connections per second."""
    return math.ceil(RESOLUTION * max(noise, MIN_NOISE) * rate)


@dataclass(frozen=True)
class DeletionProfile:
    """What is known of a DUT's delete-all before a campaign runs."""

    rate: float
    """Connections per second its delete-all removes (the tear-down rate)."""
    noise: float
    """Seconds its empty-table delete varies by: the spread (largest minus smallest) of T_0."""
    source: str
    """Where the two figures come from (a seed's figure, a run directory)."""


@dataclass(frozen=True)
class Resolution:
    """Whether a tear-down of ``connections`` can be timed on a DUT of a given :class:`DeletionProfile`."""

    connections: int
    """N, the connections the tear-down deletes."""
    deletion_time: float
    """Seconds deleting them is expected to take: N / rate."""
    noise: float
    """Seconds the empty-table delete varies by."""
    advised: int
    """M: the connections that stand ``RESOLUTION`` times out of the noise."""

    @property
    def too_few(self) -> bool:
        """The deletion time is within the noise: the repetitions will most likely fail ("too few connections to
        time")."""
        return self.deletion_time <= self.noise

    @property
    def coarse(self) -> bool:
        """Fewer than M connections: timed, if at all, with the noise more than a quarter of the deletion time."""
        return self.connections < self.advised

    def warning(self) -> str | None:
        """One line saying why N is too few and which M to use; None when N is at least M."""
        if not self.coarse:
            return None
        expected = (
            f"deleting {self.connections:,} connections takes about {_seconds(self.deletion_time)}, "
            f"{'within' if self.too_few else 'less than ' + f'{RESOLUTION:g} x'} the empty-table delete's noise "
            f"of about {_seconds(self.noise)}"
        )
        if self.too_few:
            return f"tear-down likely too few connections to time: {expected}; use at least {self.advised:,}"
        return f"tear-down timed coarsely: {expected}; at least {self.advised:,} connections time it well"


def resolution(connections: int, profile: DeletionProfile) -> Resolution:
    """Whether a tear-down of ``connections`` can be timed on a DUT of ``profile`` (see the module docstring)."""
    if profile.rate <= 0 or profile.noise < 0:
        raise ValueError(f"a deletion profile needs a positive rate and a noise >= 0, got {profile}")
    return Resolution(
        connections=connections,
        deletion_time=connections / profile.rate,
        noise=profile.noise,
        advised=advised_connections(profile.noise, profile.rate),
    )


def _seconds(s: float) -> str:
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"
