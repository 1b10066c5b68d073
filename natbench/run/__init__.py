"""Running measurements: the campaign runner, the experiment API, the run-directory store, observers.

- :mod:`.runner` runs a whole campaign (``natbench run``, ``--resume``);
- :mod:`.experiment` measures one metric at one working point at a time, outside a campaign
  file (the pytest plugin, scripts, notebooks);
- :mod:`.store` is the only reader and writer of run directories;
- :mod:`.observers` receive the runner's events (progress display, logging).

The modules are imported one by one (``from natbench.run.runner import run_campaign``): the
package itself imports nothing, so that reading a run directory does not load the engine.
"""
