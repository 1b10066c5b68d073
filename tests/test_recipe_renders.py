"""The shipped recipes render, for every campaign of campaigns/ (and the extra parameter sets of
tests/recipe_renders.py), exactly the commands they rendered before the placement checker was rebuilt on a shell
parser (tests/data/recipe-renders.json, recorded at 3a87381): the model refuses hostile recipes and values, not the
shipped ones. Campaigns added since bring parameter sets of their own; they must render (the checker accepts them)
but have nothing to compare with.
"""

from __future__ import annotations

import json
from pathlib import Path

from recipe_renders import renders

SNAPSHOT = Path(__file__).parent / "data" / "recipe-renders.json"


def test_the_shipped_recipes_render_the_same_commands_as_before() -> None:
    before = json.loads(SNAPSHOT.read_text())
    now = renders()
    assert sorted(now) == sorted(before)
    for recipe, param_sets in before.items():
        assert not set(param_sets) - set(now[recipe]), f"{recipe}: a parameter set of 3a87381 no longer rendered"
        for params, steps in param_sets.items():
            assert now[recipe][params] == steps, f"{recipe} with {params}"
    assert sum(len(c) for p in before.values() for s in p.values() for c in s.values()) > 1400
