"""The moves of the fast search over its rate grid: a bisection, walks up and down, a walk from a start. Each move
*nominates* trials (it yields a :class:`Nominee`) and is sent back whether the trial passed; it never runs a trial.
The search's phases are made of these moves (:mod:`natbench.search.fast.search`), and the policies steer them:
where a walk down goes after a failure (:class:`~natbench.search.fast.jump.JumpPolicy`), when a bisection is left
(:class:`~natbench.search.fast.jump.LeaveOnFailure`, :class:`~natbench.search.fast.jump.LeaveOnBurst`)."""

from __future__ import annotations

import enum
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Protocol

WALK_STEPS = 3
"""Steps of one error a walk takes before its steps double. A DUT whose full trials pass and fail at random around
its ceiling (trial-to-trial jitter of a few errors) ends a walk from a good seed soonest with steps of one error;
doubling after three keeps a seed that is far off (a changed DUT) within about ``2 log2(distance / error) + 4``
full trials."""


class Ask(enum.Enum):
    """Which trial a move nominates."""

    VERDICT = "verdict"
    """A full-trial verdict: none when a short trial proved the rate an upper bound, else a probe first when one is
    worth it, else a full trial."""
    FULL = "full"
    """A full trial, whatever short trials proved (the confirmations and the guard)."""
    SHORT = "short"
    """A short trial (the narrowing of a search with short trials)."""


@dataclass(frozen=True)
class Nominee:
    """The trial a move nominates: at grid index :attr:`k`, within the move's bounds."""

    k: int
    """The grid index of the rate to test."""
    lo: int
    """The move's lower bound (grid index) before this trial."""
    hi: int
    """The move's upper bound (grid index) before this trial."""
    ask: Ask
    """Which trial."""


Move = Generator[Nominee, bool, tuple[int, int]]
"""A move: it yields the trials it nominates, is sent whether each passed, and returns its final ``(lo, hi)``."""


class Steer(Protocol):
    """Where a walk down goes after the failure at ``k`` instead of its usual next step ``below`` (None: there)."""

    def target(self, k: int, lo: int, below: int) -> int | None:
        """The grid index to go to, above ``lo`` and below ``below`` (None: the usual step)."""
        ...


class Exit(Protocol):
    """When a bisection is left after the failure at ``mid``, and for which grid index to walk from."""

    def start(self, mid: int, lo: int) -> int | None:
        """The grid index to walk from (None: bisect on)."""
        ...


def widths() -> Iterator[int]:
    """A walk's steps in grid cells: :data:`WALK_STEPS` of one, then doubling."""
    width, n = 1, 0
    while True:
        yield width
        n += 1
        if n >= WALK_STEPS:
            width *= 2


def bisect(
    lo: int, hi: int, ask: Ask, leave: Exit | None = None
) -> Generator[Nominee, bool, tuple[int, int, int | None]]:
    """The binary search of the grid indices ``[lo, hi]`` (lo passed or is the lower bound, hi failed or is the upper
    bound) down to one cell: ``(lo, hi, None)``; left as soon as ``leave`` names a start after a failure: ``(lo, hi,
    start)``."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if (yield Nominee(mid, lo, hi, ask)):
            lo = mid
            continue
        hi = mid
        start = leave.start(mid, lo) if leave is not None else None
        if start is not None:
            return lo, hi, start
    return lo, hi, None


def walk_up(lo: int, hi: int) -> Move:
    """From a passed ``lo`` up (:func:`widths`) until a rate fails or ``hi`` is reached."""
    steps = widths()
    while True:
        k = lo + next(steps)
        if k >= hi:
            return lo, hi
        if not (yield Nominee(k, lo, hi, Ask.VERDICT)):
            return lo, k
        lo = k


def walk_down(lo: int, hi: int, steer: Steer) -> Move:
    """From a failed ``hi`` down (:func:`widths`) until a rate passes or ``lo`` is reached. A failed trial's word may
    send the next step further down (``steer``); when the rate there passes, the walk goes up from it (:func:`walk_up`):
    the ceiling is then likely just above."""
    steps = widths()
    while True:
        k = hi - next(steps)
        jumped = steer.target(hi, lo, k)
        k = k if jumped is None else jumped
        if k <= lo:
            return lo, hi
        if (yield Nominee(k, lo, hi, Ask.VERDICT)):
            if jumped is None:
                return k, hi
            return (yield from walk_up(k, hi))
        hi = k


def walk(start: int, lo: int, hi: int, steer: Steer) -> Move:
    """The walk of full-trial verdicts from the grid index ``start`` between a lower bound ``lo`` (it passed a full
    trial, or is the search's) and an upper bound ``hi``: up while rates pass, down while they fail, then a bisection
    of the last step."""
    if (yield Nominee(start, lo, hi, Ask.VERDICT)):
        lo, hi = yield from walk_up(start, hi)
    else:
        lo, hi = yield from walk_down(lo, start, steer)
    lo, hi, _ = yield from bisect(lo, hi, Ask.VERDICT)
    return lo, hi
