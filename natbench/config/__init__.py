"""What every file a user writes (campaign, testbed file, DUT recipe) is read with.

* :mod:`natbench.config.source`: YAML parsing that rejects duplicate keys and keeps the
  line of every value (:class:`~natbench.config.source.SourceMap`);
* :mod:`natbench.config.validation`: a pydantic ``ValidationError`` as one
  :class:`~natbench.errors.ConfigError` naming file, line and field.

Campaigns (:mod:`natbench.campaign`) and recipes (:mod:`natbench.duts.recipes`) both build on
these modules, which depend on neither; so does the number and port-range grammar they share
(:mod:`natbench.values`).
"""
