"""Several DUTs acting as one: a :class:`DutGroup` (dual-DUT IPv4aaS: CE + PE) implements the
:class:`~natbench.plugins.Dut` protocol over its members, each a :class:`~natbench.duts.recipe_dut.RecipeDut`."""

from __future__ import annotations

import logging
from typing import Any

from natbench.duts.recipe_dut import RecipeDut
from natbench.errors import DutError
from natbench.plugins import DutDeclarations, MappingTable
from natbench.workingpoint import WorkingPoint

log = logging.getLogger(__name__)


class DutGroup:
    """Several DUTs acting as one (dual-DUT IPv4aaS: CE + PE).

    Set up in order, torn down in reverse; counts, flushes and mappings come from the
    stateful member(s) (by default those whose recipe is ``stateful``). Like :class:`RecipeDut` it has the
    optional :class:`~natbench.plugins.MonitorsCpu` hook (every member is sampled), not
    :class:`~natbench.plugins.ReportsSupport`.
    """

    def __init__(self, duts: list[RecipeDut], *, stateful: list[str] | None = None) -> None:
        if not duts:
            raise ValueError("a DUT group needs at least one DUT")
        names = [d.name for d in duts]
        if len(set(names)) != len(names):
            raise ValueError(f"DUT names must be unique: {names}")
        self.duts = list(duts)
        chosen = stateful if stateful is not None else [d.name for d in duts if d.recipe.stateful]
        unknown = set(chosen) - set(names)
        if unknown:
            raise ValueError(f"unknown stateful DUT(s): {sorted(unknown)}")
        self.stateful = [d for d in duts if d.name in chosen]

    def members(self) -> list[RecipeDut]:
        """All member DUTs in setup order."""
        return list(self.duts)

    def setup(self, point: WorkingPoint) -> None:
        """Set up every DUT in order; if one fails, tear down those already set up (reverse order)."""
        done: list[RecipeDut] = []
        try:
            for dut in self.duts:
                dut.setup(point)
                done.append(dut)
        except BaseException:
            for dut in reversed(done):
                try:
                    dut.teardown()
                except Exception as exc:
                    log.warning("DUT %s: teardown after failed group setup: %s", dut.name, exc)
            raise

    def _need_stateful(self, what: str) -> list[RecipeDut]:
        if not self.stateful:
            raise DutError(f"no stateful DUT in the group to {what}")
        return self.stateful

    def reset_connections(self) -> None:
        """Empty the tables of the stateful DUTs."""
        for dut in self._need_stateful("reset"):
            dut.reset_connections()

    def count_connections(self) -> int:
        """Sum of the stateful DUTs' connection counts."""
        return sum(d.count_connections() for d in self._need_stateful("count connections of"))

    def timed_flush(self) -> float:
        """Sum of the stateful DUTs' DUT-timed flushes (run one after another)."""
        return sum(d.timed_flush() for d in self._need_stateful("flush"))

    def mappings(self) -> MappingTable:
        """Mappings of the stateful DUTs, concatenated."""
        return MappingTable.concat([d.mappings() for d in self._need_stateful("read mappings of")])

    def facts(self) -> dict[str, Any]:
        """``{dut name: facts}``."""
        return {d.name: d.facts() for d in self.duts}

    def swept(self, point: WorkingPoint) -> list[str]:
        """Names of the members whose cores ``point.cores`` sets (the others keep their fixed cores)."""
        return [d.name for d in self.duts if d.swept_by(point)]

    def declarations(self) -> dict[str, DutDeclarations]:
        """The :class:`~natbench.plugins.DeclaresRows` hook of the group: each member's recipe's declarations."""
        out: dict[str, DutDeclarations] = {}
        for d in self.duts:
            out.update(d.declarations())
        return out

    def memory_snapshot(self) -> dict[str, int]:
        """The :class:`~natbench.plugins.MeasuresMemory` hook of the group: each key summed over the members that
        show it (the group is measured as one stateful box, seed 004 section 2.2, so its memory per connection is
        what all its devices together spend; ``mem_total`` is the members' memory together). One round trip per
        member; a member that cannot be read fails the whole snapshot (a partial sum would understate it)."""
        out: dict[str, int] = {}
        for d in self.duts:
            for key, value in d.memory_snapshot().items():
                out[key] = out.get(key, 0) + int(value)
        return out

    def start_monitor(self, interval: float = 1.0) -> None:
        """Start sampling every member DUT (each is monitored: seed 004 finds the bottleneck this way)."""
        for d in self.duts:
            d.start_monitor(interval)

    def stop_monitor(self) -> dict[str, list[dict[str, Any]]]:
        """Stop sampling; ``{dut name: samples}`` for every member."""
        out: dict[str, list[dict[str, Any]]] = {}
        for d in self.duts:
            out.update(d.stop_monitor())
        return out

    def teardown(self) -> None:
        """Tear down in reverse order; every DUT is tried, the first error is raised."""
        errors: list[BaseException] = []
        for dut in reversed(self.duts):
            try:
                dut.teardown()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
