"""How a phase-2 step asks the tester to measure: latency, the Responder's entry selection, the DUT's tuples."""

from __future__ import annotations

from natbench.metrics.context import RunOptions
from natbench.metrics.phase2 import phase2_options
from natbench.plugins import Mapping, Phase2Options

TUPLES = (Mapping("198.51.100.1", 40000, 80, 1000),)


def test_a_plain_phase_2_step_passes_the_runs_selection_and_the_duts_tuples() -> None:
    options = phase2_options(RunOptions(selection="linear"), None, TUPLES)
    assert options == Phase2Options(latency=False, selection="linear", mappings=TUPLES)


def test_a_latency_step_sends_tagged_frames_at_the_given_rate_with_the_same_selection_and_tuples() -> None:
    # every field differs from Phase2Options' defaults (no latency, 1,000 tagged fps, random, no tuples)
    options = phase2_options(RunOptions(selection="fixed"), 250.0, TUPLES)
    assert options == Phase2Options(latency=True, latency_rate=250.0, selection="fixed", mappings=TUPLES)
