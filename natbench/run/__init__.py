"""Running measurements: the one orchestrator, its two callers, the run directory, observers.

- :mod:`.orchestrator` measures the repetitions of a working point: DUT setup and facts,
  tester preparation, one procedure call per repetition with what the earlier ones left,
  every trial and result stored, the DUT torn down after an error;
- :mod:`.runner` runs a whole campaign through it (``natbench run``, ``--resume``);
- :mod:`.experiment` measures one metric at one working point at a time through it, outside
  a campaign file (the pytest plugin, scripts, notebooks);
- the run directory: :mod:`.format` is its typed model and codec (the only code that knows what its
  files hold), :mod:`.reader` reads one (strictly, or leniently for reports), :mod:`.writer` creates and
  appends to one, :mod:`.repair` continues one (resume, repair), :mod:`.records` scans trials.jsonl and
  :mod:`.frames` turns records into pandas frames;
- :mod:`.observers` receive the events (progress display, logging).

The modules are imported one by one (``from natbench.run.runner import run_campaign``): the
package itself imports nothing, so that reading a run directory does not load the engine.
"""
