"""The injection probes of issue 43 (tests/data/injection-probes.yaml): every probe is refused by the recipe checker
with one line naming file, line and field, or runs, with every hostile value it accepts, under dash and bash
without an escape (tests/recipe_injection.py says what an escape is and how a command runs).

Each probe is tried twice: ``v`` as a campaign parameter of its declared type (the value passes the type and the
place check when the campaign is validated), and ``v`` as a value learnt at run time (a saved output: only the
place check of every rendering meets it).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from recipe_injection import PAYLOADS, SHELLS, escapes, render_runtime, run_each

from natbench.duts.recipes import Recipe, parse_recipe
from natbench.errors import RecipeError

PROBES: list[dict[str, Any]] = yaml.safe_load((Path(__file__).parent / "data" / "injection-probes.yaml").read_text())
_ONE_LINE = re.compile(r"probe-[a-z]\.yaml:\d+: (steps\.setup\[\d+\]\.(run|netns|format)|params\.v(\.\w+)?): \S")


def probe_recipe(probe: dict[str, Any], saved: bool) -> str:
    """The recipe of a probe: ``v`` a declared parameter, or (``saved``) a value a first command saves."""
    lines = ["recipe: probe", "family: forwarding", "os: linux", "stateful: false"]
    declared = probe.get("type", {"type": "str", "pattern": ".*", "default": "a"})
    lines += [] if saved else ["params:", f"  v: {json.dumps(declared)}"]
    lines += ["steps:", "  setup:"]
    if saved:
        lines += ["    - run: cat /dev/null", "      save: v"]
    for run in probe["run"]:
        lines.append(f"    - run: {json.dumps(run)}")
        if "format" in probe:
            lines.append(f"      format: {probe['format']}")
        if "netns" in probe:
            lines.append(f"      netns: {json.dumps(probe['netns'])}")
    return "\n".join(lines) + "\n"


def rendered(recipe: Recipe, payload: str, saved: bool) -> list[str] | None:
    """The probe's commands rendered with ``payload`` in ``v`` (None: natbench refused the value)."""
    commands = recipe.steps["setup"].commands[1:] if saved else recipe.steps["setup"].commands
    if not saved:
        try:
            return [c.text for c in recipe.plan("setup", {"v": payload})]
        except RecipeError:
            return None
    out = []
    for cmd in commands:
        text = render_runtime(recipe, cmd.run, cmd.netns, cmd.format, {"v": payload}, "v")
        if text is None:
            return None
        out.append(text)
    return out


@pytest.mark.skipif(not (shutil.which("dash") and shutil.which("bash")), reason="needs dash and bash")
def test_every_probe_is_refused_or_runs_without_an_escape(tmp_path: Path) -> None:
    refused: dict[str, str] = {}
    accepted: set[str] = set()
    cases: list[tuple[str, list[str]]] = []
    meta: dict[str, tuple[str, str, str | None]] = {}
    values_refused = 0
    for probe in PROBES:
        for saved in (False, True):
            file = f"probe-{'b' if saved else 'a'}.yaml"
            try:
                recipe = parse_recipe(probe_recipe(probe, saved), file)
            except RecipeError as exc:
                message = str(exc)
                assert "\n" not in message and _ONE_LINE.match(message), message
                refused.setdefault(probe["id"], message)
                continue
            accepted.add(probe["id"])
            for payload in PAYLOADS:
                texts = rendered(recipe, payload, saved)
                if texts is None:
                    values_refused += 1
                    continue
                case_id = f"c{len(cases)}"
                cases.append((case_id, texts))
                meta[case_id] = (probe["id"], payload, probe.get("format"))
    found: list[str] = []
    for shell in SHELLS:
        results = run_each(cases, tmp_path / shell, shell)
        assert len(results) == len(cases)
        for case_id, outcome in results.items():
            probe_id, payload, fmt = meta[case_id]
            found += [f"{shell}: {probe_id} <- {payload!r}: {kind}" for kind in escapes(payload, outcome, fmt)]
    places = {p["id"] for p in PROBES if p["class"] == "place"}
    print(
        f"{len(PROBES)} probes: {len(refused)} refused by the checker, {len(accepted)} accepted "
        f"({len(places)} places); {values_refused} values refused, {len(cases)} cases run under "
        f"{' and '.join(SHELLS)}, {len(found)} escapes; accepted beyond the places (their values are checked as "
        f"they come): {', '.join(sorted(accepted - places))}"
    )
    assert not found, "\n".join(found[:50])
    assert places <= accepted, f"places refused: {sorted(places - accepted)}"  # the checker is not merely closed
    assert len(cases) > 100  # values that fit their place do run: the test exercises the shells
    assert len(PROBES) >= 103


def test_the_probes_run_as_written_when_the_checker_is_bypassed(tmp_path: Path) -> None:
    """A control for the 0 above: the probes of the issue's classes, rendered without natbench's checks, do escape
    (so the harness and the probes are sharp)."""
    from natbench.duts.recipes.template import render_template

    samples = {
        "variable-sh-c": ["x=sh; $x -c {{ v }}"],
        "echo-script": ["echo {{ v }} > s.sh", "sh s.sh"],
        "group-into-pf-conf": ["{ printf 'set skip on lo\\n'; printf '%s\\n' {{ v }}; } > pf.conf"],
        "ip-netns-e": ["ip netns e ns {{ v }}"],
    }
    cases = [(k, [render_template(t, {"v": "nb_canary"}) for t in texts]) for k, texts in samples.items()]
    cases.append(("rule", [render_template(samples["group-into-pf-conf"][0], {"v": "x\nblock drop all"})]))
    results = run_each(cases, tmp_path, "dash")
    assert escapes("nb_canary", results["variable-sh-c"]) == ["code"]
    assert "code" in escapes("nb_canary", results["echo-script"])
    assert escapes("block drop all", results["rule"]) == ["a line of its own in a written file"]
    assert escapes("nb_canary", results["ip-netns-e"]) == []  # the stub ip runs nothing: refused by the checker
