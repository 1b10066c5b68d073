"""Running measurements: the one orchestrator, its two callers, the run-directory store, observers.

- :mod:`.orchestrator` measures the repetitions of a working point: DUT setup and facts,
  tester preparation, one procedure call per repetition with what the earlier ones left,
  every trial and result stored, the DUT torn down after an error;
- :mod:`.runner` runs a whole campaign through it (``natbench run``, ``--resume``);
- :mod:`.experiment` measures one metric at one working point at a time through it, outside
  a campaign file (the pytest plugin, scripts, notebooks);
- :mod:`.store` is the only reader and writer of run directories;
- :mod:`.observers` receive the events (progress display, logging).

The modules are imported one by one (``from natbench.run.runner import run_campaign``): the
package itself imports nothing, so that reading a run directory does not load the engine.
"""
