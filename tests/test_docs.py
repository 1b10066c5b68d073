"""The documentation is true: the campaign reference matches the schema, and every command shown runs.

Every ``sh`` / ``python`` block in README.md and docs/*.md carries a tag in the HTML comment
right above it::

    <!-- natbench-doc-test: run -->              runs here, as any user
    <!-- natbench-doc-test: lab -->              needs root + network namespaces (marker lab)
    <!-- natbench-doc-test: slow REASON -->      lab, minutes long: runs with NATBENCH_DOCS_SLOW=1
    <!-- natbench-doc-test: skip REASON -->      cannot run here (hardware, installs, fragments)

A block without a tag fails :func:`test_every_command_block_is_tagged`. Blocks run in page
order in one scratch directory that holds links to campaigns/, docs/ and dut_recipes/, so a
later block can read what an earlier one wrote (``results/lab/latest``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from lab_helpers import need_lab

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    ROOT / "docs" / "index.md",
    *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "index.md"),
]
_BLOCK = re.compile(
    r"(?:<!--\s*natbench-doc-test:\s*(?P<tag>\w+)\s*(?P<reason>[^>]*?)\s*-->\s*\n)?```(?P<lang>sh|python)\n(?P<body>.*?)```",
    re.S,
)

# Pages written by other parts of the project whose blocks carry no tag yet: classified here.
UNTAGGED = {
    ("trex.md", "t-rex-64"): ("skip", "starts a TRex server: needs a TRex installation and DPDK or af_packet ports"),
    ("trex.md", "ip neigh replace"): ("skip", "configures a hardware DUT (placeholders for its MACs and interfaces)"),
    ("engine.md", "run_campaign("): ("slow", "runs the quickstart campaign (about 6 minutes)"),
    ("recipes.md", "natbench recipes list"): ("run", ""),
    ("report.md", "natbench report RUN_DIR"): ("skip", "RUN_DIR placeholders; results.md runs them on a real run"),
    ("report.md", 'extra["monitor"]'): ("skip", "a data structure, not a command"),
    ("report.md", "runs/quickstart"): ("skip", "needs a quickstart run; results.md runs the same calls on the lab run"),
}


@dataclass(frozen=True)
class Block:
    """One command block of a page."""

    page: str
    number: int
    line: int
    lang: str
    tag: str | None
    reason: str
    body: str

    @property
    def id(self) -> str:
        return f"{self.page}#{self.number}-{self.tag or 'untagged'}"


def _blocks() -> list[Block]:
    out: list[Block] = []
    for page in PAGES:
        if not page.exists():
            continue
        text = page.read_text(encoding="utf-8")
        for n, m in enumerate(_BLOCK.finditer(text), 1):
            tag, reason = m.group("tag"), m.group("reason") or ""
            if tag is None:
                for (name, needle), (t, r) in UNTAGGED.items():
                    if page.name == name and needle in m.group("body"):
                        tag, reason = t, r
            line = text.count("\n", 0, m.start("body"))
            out.append(Block(page.name, n, line, m.group("lang"), tag, reason, m.group("body")))
    return out


BLOCKS = _blocks()


def test_campaign_reference_matches_the_schema() -> None:
    """docs/campaign-schema.md is generated (natbench.campaign.reference) and committed in sync."""
    from natbench.campaign.reference import markdown

    committed = (ROOT / "docs" / "campaign-schema.md").read_text(encoding="utf-8")
    assert committed == markdown(), "stale: python -m natbench.campaign.reference > docs/campaign-schema.md"


def test_campaign_reference_documents_every_field() -> None:
    """Every model reachable from a campaign file, and every one of its fields, is in the reference."""
    from pydantic import BaseModel

    from natbench.campaign import schema

    text = (ROOT / "docs" / "campaign-schema.md").read_text(encoding="utf-8")
    seen: list[type[BaseModel]] = []

    def walk(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        for info in model.model_fields.values():
            for sub in _models_in(info.annotation):
                walk(sub)

    walk(schema.CampaignSpec)
    assert len(seen) > 10
    for model in seen:
        assert f"## {model.__name__}" in text, f"{model.__name__} missing"
        for field, info in model.model_fields.items():
            assert f"| `{field}` |" in text, f"{model.__name__}.{field} missing"
            assert info.description, f"{model.__name__}.{field} has no docstring"


def _models_in(annotation: object) -> list[type]:
    import typing

    from pydantic import BaseModel

    from natbench.plugins import ACCESS, TESTERS, AccessSettings, TesterSettings

    # a backend settings base is validated as the model of the kind a campaign names: every registered kind's
    if annotation is TesterSettings:
        return [backend.settings for _, backend in TESTERS.entries()]
    if annotation is AccessSettings:
        return [backend.settings for _, backend in ACCESS.entries()]
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models_in(arg)]


def test_monitor_interval_is_documented_as_the_testbed_setting_it_is() -> None:
    """The DUT CPU monitor is ``testbed.monitor_interval`` (TestbedSpec), not a metric setting; prose says so.

    Blocks the doc tests run are left out (a wrong key there fails them); the generated
    campaign reference is checked against the schema by the tests above.
    """
    from natbench.campaign import schema
    from natbench.metrics import all_metrics

    assert "monitor_interval" in schema.TestbedSpec.model_fields
    metric_models = [m.settings for m in all_metrics()]
    assert metric_models and not [m for m in metric_models if "monitor_interval" in m.model_fields]
    stale = []
    for page in PAGES:
        if page.name == "campaign-schema.md" or not page.exists():
            continue
        text = _BLOCK.sub(lambda m: "" if m.group("tag") == "run" else m.group(0), page.read_text(encoding="utf-8"))
        for m in re.finditer(r"(\S*)monitor_interval", text):
            if not m.group(1).endswith("testbed."):
                stale.append(f"{page.name}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}")
    assert not stale, f"monitor_interval written as something other than testbed.monitor_interval: {stale}"


def test_every_command_block_is_tagged() -> None:
    assert BLOCKS, "no command blocks found"
    untagged = [f"{b.page}:{b.line}" for b in BLOCKS if b.tag not in ("run", "lab", "slow", "skip")]
    assert not untagged, f"untagged (or badly tagged) command blocks: {untagged}"
    for b in BLOCKS:
        if b.tag in ("skip", "slow"):
            assert b.reason, f"{b.page}:{b.line}: a {b.tag} block needs a reason"


def test_docs_link_to_pages_that_exist() -> None:
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            if target.startswith("http"):
                continue
            if target == "examples/notebook.ipynb" and not (page.parent / target).exists():
                continue  # written by the reports work (issue 9); linked ahead of its arrival
            assert (page.parent / target).exists(), f"{page.name}: broken link {target}"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch directory that looks like a checkout to the documented commands."""
    d = tmp_path_factory.mktemp("docs")
    for name in ("campaigns", "docs", "dut_recipes"):
        (d / name).symlink_to(ROOT / name)
    shims = d / ".bin"
    shims.mkdir()
    for name in ("python", "python3"):  # a wrapper, not a symlink: a venv is found from the path run
        shim = shims / name
        shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
        shim.chmod(0o755)
    return d


def _env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    path = [str(workdir / ".bin"), str(Path(sys.executable).parent)]
    env["PATH"] = os.pathsep.join([*path, env.get("PATH", "")])
    env.pop("PYTEST_ADDOPTS", None)
    env["NO_COLOR"] = "1"
    return env


def _execute(block: Block, workdir: Path) -> subprocess.CompletedProcess[str]:
    cmd = ["bash", "-euo", "pipefail", "-c", block.body] if block.lang == "sh" else [sys.executable, "-c", block.body]
    env = _env(workdir)
    env["MPLBACKEND"] = "Agg"
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=900, check=False)


def _producer(name: str) -> Block | None:
    for b in BLOCKS:
        if b.tag == "lab" and f"--nb-results {name}" in b.body:
            return b
    return None


_DONE: set[str] = set()


def _run_block(block: Block, workdir: Path) -> None:
    if block.body in _DONE:
        return  # the same commands on another page already ran in this session
    # a block that reads a run another block writes: make sure that run exists (e.g. with -k)
    for m in re.finditer(r"(results/[\w-]+)/latest", block.body):
        producer = _producer(m.group(1))
        if producer is not None and producer != block and not (workdir / m.group(0)).exists():
            _run_block(producer, workdir)
    proc = _execute(block, workdir)
    where = f"{block.page}:{block.line}"
    assert proc.returncode == 0, f"{where} exited {proc.returncode}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, f"{where}\n{proc.stderr[-3000:]}"
    if block.lang == "sh":  # a command prints something; a library snippet need not
        assert proc.stdout.strip() or proc.stderr.strip(), f"{where}: printed nothing"
    _DONE.add(block.body)


def _params(tag: str, marks: tuple[pytest.MarkDecorator, ...] = ()) -> list[object]:
    return [pytest.param(b, id=b.id, marks=marks) for b in BLOCKS if b.tag == tag]


@pytest.mark.parametrize("block", _params("run"))
def test_run_block(block: Block, workdir: Path) -> None:
    _run_block(block, workdir)


@pytest.mark.lab
@pytest.mark.parametrize("block", _params("lab"))
def test_lab_block(block: Block, workdir: Path) -> None:
    need_lab()
    _run_block(block, workdir)


@pytest.mark.lab
@pytest.mark.parametrize("block", _params("slow"))
def test_slow_block(block: Block, workdir: Path) -> None:
    if os.environ.get("NATBENCH_DOCS_SLOW") != "1":
        pytest.skip(f"{block.reason}: set NATBENCH_DOCS_SLOW=1 to run it")
    need_lab()
    _run_block(block, workdir)


@pytest.mark.parametrize("block", _params("skip"))
def test_skip_block(block: Block) -> None:
    pytest.skip(f"{block.page}:{block.line}: {block.reason}")


@pytest.mark.lab
def test_notebook_runs_on_a_real_lab_run(workdir: Path) -> None:
    """docs/examples/notebook.ipynb (its code cells, in order) on the lab example's run directory."""
    import json

    need_lab()
    notebook = ROOT / "docs" / "examples" / "notebook.ipynb"
    assert notebook.is_file(), "docs/examples/notebook.ipynb is missing"
    producer = _producer("results/lab")
    assert producer is not None, "no documented command writes results/lab"
    if not (workdir / "results/lab/latest").exists():
        _run_block(producer, workdir)
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    code = "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    env = _env(workdir)
    env.update(MPLBACKEND="Agg", NATBENCH_RUN=str(workdir / "results/lab/latest"))
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=workdir, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


# --- the documentation site (./dev docs: Sphinx, docs/conf.py, docs/_ext/natbench_api.py) -------------------------


def _build_site(src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """The build ``./dev docs`` runs (warnings as errors), of the pages in ``src`` with docs/conf.py."""
    pytest.importorskip("sphinx", reason="the docs extra is not installed (./dev setup installs it)")
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-E", "-a", "-n", "-W", "--keep-going", "-q"]
    cmd += ["-c", str(ROOT / "docs"), str(src), str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=False)


_SITE_INDEX = """# index

| page | what |
|---|---|
| [api.md](api.md) | the API |
"""

_SITE_API = """# api

```{eval-rst}
.. currentmodule:: natbench.plugins

.. autoclass:: Tester
   :members: phase1

A link: :class:`Tester`; written as defined: :class:`~natbench.plugins.tester.Tester`,
:meth:`~natbench.plugins.tester.Tester.phase1`; real but not documented
here: :class:`~natbench.results.PhaseResult`, :data:`TESTERS`; a builtin: :class:`str`. %s
```
"""


def test_site_links_documented_objects_and_shows_real_undocumented_ones_as_code(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "index.md").write_text(_SITE_INDEX, encoding="utf-8")
    (src / "api.md").write_text(_SITE_API % "", encoding="utf-8")
    proc = _build_site(src, tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    page = (tmp_path / "out" / "api.html").read_text(encoding="utf-8")
    html = page[page.index("A link:") :].split("</p>")[0]
    links = re.findall(r'<a class="reference internal" href="#([\w.]+)"[^>]*><code[^>]*><span class="pre">(\w+)', html)
    assert links.count(("natbench.plugins.Tester", "Tester")) == 2, links  # both spellings link to the one entry
    assert ("natbench.plugins.Tester.phase1", "phase1") in links, links
    for name in ("PhaseResult", "TESTERS", "str"):
        assert f'<span class="pre">{name}</span>' in html
        assert name not in {text for _, text in links}, f"{name} is not documented here, yet linked"


def test_site_build_fails_on_a_broken_reference_link_anchor_or_unlisted_page(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    broken = ":class:`Testr`, :func:`natbench.plugins.no_such_function`"
    (src / "index.md").write_text(_SITE_INDEX + "\n[gone](gone.md), [no anchor](api.md#no-such-heading)\n")
    (src / "api.md").write_text(_SITE_API % broken, encoding="utf-8")
    (src / "orphan.md").write_text("# orphan\n\nIn no table.\n", encoding="utf-8")
    proc = _build_site(src, tmp_path / "out")
    assert proc.returncode != 0
    for problem in (
        "reference target not found: Testr",
        "reference target not found: natbench.plugins.no_such_function",
        "cross-reference target not found: 'gone.md'",
        "no-such-heading",
        "orphan.md: WARNING: document isn't included in any toctree",
    ):
        assert problem in proc.stderr, f"{problem!r} not reported:\n{proc.stderr}"
