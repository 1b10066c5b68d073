"""DUT recipes: declared, typed parameters and named steps of shell-quoted command templates.

A recipe is a YAML file ``dut_recipes/<name>.yaml``::

    recipe: iptables-nat44            # name (the file stem)
    description: Linux iptables stateful NAT44 (SNAT or MASQUERADE)
    implementation: iptables          # short name used in labels and tables
    family: nat44                     # nat44 | nat64 | siit | mapt-ce | mapt-br | forwarding | ...
    os: linux                         # linux | openbsd | ...
    stateful: true                    # false: no connection table (forwarding baseline)
    clock: date +%s.%N                # prints the DUT's clock in seconds (timed_flush); optional
    params:
      public_if: {type: interface, required: true, doc: public-side interface}
      nat: {type: choice, choices: [snat, masquerade], default: masquerade}
      conntrack_max: {type: int, min: 1, default: null}
    steps:
      setup:
        - iptables -t nat -A POSTROUTING -o {{ public_if }} -j MASQUERADE     # shorthand
        - run: echo {{ conntrack_max }} > /proc/sys/net/netfilter/nf_conntrack_max
          when: conntrack_max                  # skipped unless the parameter is set
          scope: host                          # a global kernel setting: outside the DUT's netns
          error: cannot set nf_conntrack_max   # hint added to the error when it fails
      count_connections:
        - run: conntrack -C
          parse: conntrack_count
      timed_flush:
        - run: conntrack -F
          timed: true                          # the duration is measured on the DUT
      set_cores: {builtin: linux-cores, interfaces: ["{{ private_if }}", "{{ public_if }}"]}

Command keys: ``run`` (template or a list of words, required), ``format`` (of the text it writes), ``when``
(condition), ``netns`` (run inside that namespace: rendered as an ``ip netns exec`` prefix), ``parse`` (parser
name from :mod:`natbench.duts.parsers`), ``select`` (pick one key of a parser's dict result), ``as`` (fact
name in the ``facts`` step), ``save`` (keep stdout as a template variable of later steps, e.g. an original
value restored by ``teardown``), ``timed``, ``ignore_errors``, ``error`` (hint), ``timeout`` (seconds),
``scope`` (``dut`` | ``host``).

Conditions: ``name`` (truthy), ``not name``, ``name == word``, ``name != word``,
``name in [a, b]``, joined by ``and`` / ``or`` (``and`` binds tighter).

``checks`` (top level) are rules over several parameters: ``{when: condition, error: message,
field: param}``; :meth:`Recipe.resolve` rejects parameters for which a check's condition holds.

Steps with a meaning to natbench: ``prepare`` (run before ``setup``: preconditions and
checks that are not part of the configuration itself, e.g. a version check or creating a
namespace the configuration assumes), ``setup``, ``teardown``, ``reset_connections``,
``count_connections`` (parser gives an int), ``timed_flush`` (one or more ``timed``
commands), ``show_mappings`` (parser gives mappings), ``set_cores``, ``rss``, ``facts``.
Other step names are allowed and can be run by name. The full description is docs/recipes.md.

The package: :mod:`~natbench.duts.recipes.schema` (the file as pydantic models),
:mod:`~natbench.duts.recipes.params` (parameter declarations and value types),
:mod:`~natbench.duts.recipes.conditions`, :mod:`~natbench.duts.recipes.template`,
:mod:`~natbench.duts.recipes.semantics` (rules across fields), :mod:`~natbench.duts.recipes.render`,
:mod:`~natbench.duts.recipes.loader` (search path, names and files), and where a value may stand:
:mod:`~natbench.duts.recipes.shellsyntax` (the shell subset commands are read in),
:mod:`~natbench.duts.recipes.programs` (the programs a recipe may run), :mod:`~natbench.duts.recipes.shell`
(the places and what each needs), :mod:`~natbench.duts.recipes.values` (what a type's values can be) and
:mod:`~natbench.duts.recipes.formats` (file formats and their writers).
"""

from natbench.duts.recipes.loader import list_recipes as list_recipes
from natbench.duts.recipes.loader import load_recipe as load_recipe
from natbench.duts.recipes.loader import parse_recipe as parse_recipe
from natbench.duts.recipes.loader import recipe_reference as recipe_reference
from natbench.duts.recipes.loader import shadowed_recipes as shadowed_recipes
from natbench.duts.recipes.render import RenderedCommand as RenderedCommand
from natbench.duts.recipes.schema import KNOWN_STEPS as KNOWN_STEPS
from natbench.duts.recipes.schema import Command as Command
from natbench.duts.recipes.schema import Recipe as Recipe
