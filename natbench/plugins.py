"""Names of the backend kinds natbench can use, for checks that must not load the backends.

Tester kinds and DUT access kinds are backends registered in :mod:`natbench.testbed.registry`
(natbench's own in code, third-party ones through an entry point in :data:`TESTER_GROUP` or
:data:`ACCESS_GROUP`). The campaign schema only needs to know whether a kind *exists*: it asks
:func:`known_names`, which sees every name registered so far and every installed entry point,
without importing a backend (so validating a campaign never imports the TRex client or paramiko).
"""

from __future__ import annotations

from importlib.metadata import entry_points

__all__ = ["ACCESS_GROUP", "TESTER_GROUP", "announce", "forget", "known_names"]

TESTER_GROUP = "natbench.testers"
"""Entry-point group of third-party tester kinds."""
ACCESS_GROUP = "natbench.access"
"""Entry-point group of third-party DUT access kinds."""

_ANNOUNCED: dict[str, set[str]] = {TESTER_GROUP: set(), ACCESS_GROUP: set()}


def announce(group: str, name: str) -> None:
    """Record that a backend of ``group`` is registered under ``name``."""
    _ANNOUNCED.setdefault(group, set()).add(name)


def forget(group: str, name: str) -> None:
    """Record that ``name`` is no longer registered in ``group`` (an installed entry point stays known)."""
    _ANNOUNCED.get(group, set()).discard(name)


def known_names(group: str) -> list[str]:
    """Every name of ``group``: registered in code or offered by an installed package's entry point, sorted."""
    return sorted(_ANNOUNCED.get(group, set()) | {ep.name for ep in entry_points(group=group)})
