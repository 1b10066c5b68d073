"""What makes a recipe command's time grow with the DUT's connection table: its declared ``cost``.

::

    reset_connections:
      - run: conntrack -F
        cost: delete        # its time is N / the rate at which this DUT deletes connections
    show_mappings:
      - run: conntrack -L -p udp
        parse: conntrack_mappings
        cost: list          # N / the rate at which this DUT lists them

A command with a cost does :class:`TableWork` on each of the N connections in the table, so its time is N divided by
the rate the DUT does that work at: natbench measures the rate on the DUT and sets the command's time limit from it
and N (:mod:`natbench.duts.tablework`). A command without one takes about the same time at any table size.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["TableWork"]


class TableWork(StrEnum):
    """The work a command does on each connection of the DUT's table."""

    DELETE = "delete"
    """It deletes them all (``conntrack -F``, ``pfctl -F states``, ``jool pool4 flush``): the table is empty after."""
    LIST = "list"
    """It lists them (``conntrack -L``, ``pfctl -ss``, ``jool session display``)."""

    @property
    def doing(self) -> str:
        """The work in a message: ``deleting``, ``listing``."""
        return {TableWork.DELETE: "deleting", TableWork.LIST: "listing"}[self]

    @property
    def rate_name(self) -> str:
        """The rate it is done at, in a message: ``delete rate``, ``listing rate``."""
        return {TableWork.DELETE: "delete rate", TableWork.LIST: "listing rate"}[self]
