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

Before natbench has measured the DUT's own rate, the recipe's ``rates:`` (:class:`WorkRates`) say how slowly a DUT of
its kind may do the work::

    rates:                # connections per second: slower than any DUT of this kind, under load
      delete: 25k
      list: 25k
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

from pydantic import BeforeValidator

from natbench.duts.recipes.fields import RecipeModel
from natbench.values import MAX_RATE, parse_number


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


def _rate(value: Any) -> float | None:
    if value is None:
        return None
    rate = parse_number(value)
    if not 0 < rate <= MAX_RATE:
        raise ValueError(f"expected connections per second above 0 and at most {MAX_RATE:g}")
    return rate


class WorkRates(RecipeModel):
    """``rates:``: the slowest rate, in connections per second, at which a DUT of the recipe's kind does each table
    work, under load: a command's time limit is N / this rate until natbench has measured the DUT's own rate."""

    delete: Annotated[float | None, BeforeValidator(_rate)] = None
    """Connections deleted per second (``25k``); None: not stated (the floor alone until measured)."""
    list: Annotated[float | None, BeforeValidator(_rate)] = None
    """Connections listed per second; None: not stated."""

    def of(self, work: TableWork) -> float | None:
        """The rate stated for ``work``."""
        rate: float | None = getattr(self, work.value)
        return rate
