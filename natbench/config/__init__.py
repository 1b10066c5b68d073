"""What every file a user writes (campaign, testbed file, DUT recipe) is read with.

* :mod:`natbench.config.source`: YAML parsing that rejects duplicate keys and keeps the
  line of every value (:class:`~natbench.config.source.SourceMap`);
* :mod:`natbench.config.values`: the one grammar of numbers (``2^23``, ``200k``) and
  port ranges (``"1-4000"``);
* :mod:`natbench.config.validation`: a pydantic ``ValidationError`` as one
  :class:`~natbench.errors.ConfigError` naming file, line and field.

Campaigns (:mod:`natbench.campaign`) and recipes (:mod:`natbench.duts.recipes`) both build on
these modules, which depend on neither.
"""
