"""The files of a run directory, by name.

Layout (fixed by the developers' guide)::

    RUN_DIR/
      campaign.yaml   the resolved campaign (an experiment session: its testbed and measurements)
      run.json        versions, host, tester and DUT facts, status, record counts  (RunMeta)
      points.json     the working points                                          (PointRecord)
      trials.jsonl    one record per line: trials and repetition results          (natbench.run.format.lines)
      trials.parquet  optional export (and results.parquet beside it)
      trials.abandoned.jsonl   only after a resume: trials of repetitions that were cut off
"""

from __future__ import annotations

CAMPAIGN = "campaign.yaml"
"""The resolved campaign as stored."""
RUN = "run.json"
"""The run's metadata (:class:`~natbench.run.format.meta.RunMeta`)."""
POINTS = "points.json"
"""The working points (:class:`~natbench.run.format.points.PointRecord` list)."""
TRIALS = "trials.jsonl"
"""The record lines (:mod:`natbench.run.format.lines`)."""
TRIALS_PARQUET = "trials.parquet"
"""The trials exported as Parquet."""
RESULTS_PARQUET = "results.parquet"
"""The repetition results exported as Parquet (beside :data:`TRIALS_PARQUET`)."""
ABANDONED = "trials.abandoned.jsonl"
"""Trials of repetitions a resume (or a lost testbed) cut off; kept, never deleted."""
REPAIRED = ".trials.repaired.jsonl"
"""The repaired trials.jsonl before its rename (named in run.json under ``repair_pending`` until then)."""
DAMAGED = "trials.damaged-{stamp}.jsonl"
"""A repair's copy of the damaged trials.jsonl (``stamp``: UTC time, ``%Y%m%dT%H%M%SZ``)."""

EXPERIMENT_KIND = "natbench-experiment"
"""``kind`` of the campaign.yaml an experiment session (pytest plugin, natbench.run.experiment) writes."""

RepKey = tuple[str, str, int]
"""(point id, metric, repetition): the unit of completion."""
