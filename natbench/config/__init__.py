"""What every file a user writes (campaign, testbed file, DUT recipe) is read with.

* :mod:`natbench.config.source`: YAML parsing that rejects duplicate keys and keeps the
  line of every value (:class:`~natbench.config.source.SourceMap`);
* :mod:`natbench.config.validation`: a pydantic ``ValidationError`` as one
  :class:`~natbench.errors.ConfigError` naming file, line and field;
* :mod:`natbench.config.paths`: paths from outside (environment variables, links) checked against
  the kernel's limits, and files of ``/proc`` and ``/sys`` told apart;
* :mod:`natbench.config.redact`: passwords in URLs kept out of everything printed.

Campaigns (:mod:`natbench.campaign`) and recipes (:mod:`natbench.duts.recipes`) both build on
these modules, which depend on neither; so does the number and port-range grammar they share
(:mod:`natbench.values`).
"""
