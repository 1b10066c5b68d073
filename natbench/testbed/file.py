"""Testbed files: a campaign's ``testbed`` section on its own, or a whole campaign read for its testbed.

The experiment API and the pytest plugin (``--nb-testbed FILE``) measure on the testbed such a
file describes. :func:`load_testbed` reads it (``${NATBENCH_*}`` variables are substituted as in
a campaign; a file needing unset ones is not an error but names them, so tests can be skipped);
:func:`testbed_file_problems` says why this machine cannot drive it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from natbench.errors import ConfigError


@dataclass
class TestbedFile:
    """A testbed (a campaign's ``testbed`` section) and, when read from a whole campaign, its defaults."""

    __test__ = False  # not a pytest test class

    testbed: dict[str, Any]
    """The validated testbed section as plain data (``tester`` and ``duts``)."""
    file: Path | None = None
    """Where it was read from."""
    traffic: dict[str, Any] = field(default_factory=dict)
    """Traffic defaults (the campaign's ``traffic`` section; empty for a bare testbed file)."""
    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Metric setting defaults (the campaign's ``metrics`` section; empty for a bare testbed file)."""
    missing_env: tuple[str, ...] = ()
    """``${NATBENCH_*}`` variables the file needs that are not set (the file is not loaded then)."""

    @property
    def tester_kind(self) -> str:
        """The tester kind (``software``, ``trex`` or an installed plugin's)."""
        return str(self.testbed.get("tester", {}).get("kind", ""))

    @property
    def family(self) -> str:
        """Traffic family: the file's traffic.family, else nat64 when a DUT is a NAT64 / PLAT, else nat44."""
        if self.traffic.get("family"):
            return str(self.traffic["family"])
        roles = {str(d.get("role") or "") for d in self.testbed.get("duts", [])}
        recipes = " ".join(str(d.get("recipe", "")) for d in self.testbed.get("duts", []))
        return "nat64" if roles & {"nat64", "plat"} or "nat64" in recipes else "nat44"


def load_testbed(path: str | os.PathLike[str]) -> TestbedFile:
    """Read a testbed file: a campaign's ``testbed`` section on its own, or a whole campaign.

    Errors are one :class:`~natbench.errors.ConfigError` naming the file, line
    and field. A file that refers to ``${NATBENCH_*}`` variables without a
    default which are not set is not an error here: :attr:`TestbedFile.missing_env`
    names them, so tests can be skipped with that reason.
    """
    from natbench.campaign.schema import TestbedSpec
    from natbench.config.source import parse_yaml, read_user_file, require_document, unset_variables

    p = Path(path)
    text = read_user_file(p, "testbed file")
    missing = unset_variables(text)
    if missing:
        return TestbedFile({}, p, missing_env=missing)
    data, source = parse_yaml(text, str(p))
    if isinstance(data, dict) and "testbed" in data:
        from natbench.campaign import parse_campaign

        campaign = parse_campaign(text, p)
        resolved = campaign.to_dict()
        return TestbedFile(resolved["testbed"], p, dict(resolved.get("traffic", {})), dict(resolved["metrics"]))
    if not isinstance(data, dict):
        raise ConfigError("a testbed file must be a YAML mapping with 'tester' and 'duts'", file=str(p), line=1)
    require_document(data, str(p), "testbed file", TestbedSpec.model_fields)
    from pydantic import ValidationError

    from natbench.config.validation import validation_error

    try:
        spec = TestbedSpec.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, source=source, file=str(p), model=TestbedSpec) from None
    return TestbedFile(json.loads(spec.model_dump_json(exclude_none=True)), p)


def testbed_file_problems(testbed: TestbedFile, *, probe_network: bool = True) -> list[str]:
    """Why this machine cannot drive the testbed (empty when it can): a skip reason per problem.

    Checked: ``${NATBENCH_*}`` variables, then what :func:`natbench.testbed.testbed_problems`
    checks: root for the software tester and for DUTs in local namespaces, the lab's tools,
    the software tester's C engine, the TRex client library, and (``probe_network``) a TCP
    connection to the TRex server and to every SSH DUT.
    """
    if testbed.missing_env:
        return [f"the testbed file {testbed.file} needs environment variable(s) {', '.join(testbed.missing_env)}"]
    from natbench.campaign.schema import TestbedSpec
    from natbench.testbed.preflight import testbed_problems as problems_of

    return problems_of(TestbedSpec.model_validate(testbed.testbed), probe_network=probe_network)
