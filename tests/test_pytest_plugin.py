"""The pytest plugin and natbench.run.experiment: options, skips, sweep ids, storage, reports.

Measurements here drive the modelled NAT of natbench.testing (FakeTester / FakeDut),
injected by overriding the plugin's ``tester`` and ``dut`` fixtures in the inner
session's conftest - the plugin itself is the real one, loaded through its entry point.
The same experiment on the real local lab runs in tests/test_examples.py (marker lab).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from report_cli import report_text

from natbench.errors import ConfigError
from natbench.run.experiment import Experiment, split_connections, sweep_points
from natbench.run.reader import RunDirectory
from natbench.testbed.file import TestbedFile, load_testbed
from natbench.testbed.file import testbed_file_problems as problems_of
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic.ports import PortRange

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]

TESTBED = """\
tester:
  kind: software
duts:
  - name: fake
    recipe: iptables-nat44
    role: nat44
    access: {kind: local}
    params: {nat: snat, conntrack_max: 2^20, hashsize: 2^16}
"""

FAKE_CONFTEST = """\
import pytest
from natbench.testbed.file import load_testbed
from natbench.testing import FakeDut, FakeModel, FakeTester


@pytest.fixture(scope="session")
def testbed(pytestconfig):
    # the fake testbed needs neither root nor a lab: load it without the machine checks
    return load_testbed(pytestconfig.getoption("--nb-testbed"))


@pytest.fixture(scope="session")
def dut():
    return FakeDut(FakeModel(cps=150_000, forwarding=300_000))


@pytest.fixture(scope="session")
def tester(dut):
    return FakeTester(dut)
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", *args)


# ---------------------------------------------------------------------------- registration / inertness
def test_plugin_is_registered_as_pytest11_entry_point() -> None:
    eps = {ep.name: ep.value for ep in entry_points(group="pytest11")}
    assert eps.get("natbench") == "natbench.pytest_plugin"


def test_plugin_import_is_cheap() -> None:
    heavy = "('pandas', 'pydantic', 'paramiko', 'numpy')"
    code = f"import sys, natbench.pytest_plugin; print(sorted(m for m in {heavy} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_options_are_inert_when_not_given(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_plain():
            assert 1 + 1 == 2
        """
    )
    result = _run(pytester)
    result.assert_outcomes(passed=1)
    assert "natbench" not in result.stdout.str().split("short test summary")[0].split("passed")[-1]
    assert not (pytester.path / "results").exists()


def test_help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "--help")
    result.stdout.fnmatch_lines(["*--nb-testbed=FILE*", "*--nb-results=DIR*"])


def test_without_testbed_the_tests_are_skipped_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.natbench_sweep(connections=["1k"])
        def test_cps(nb_measure):
            nb_measure("cps", upper="1M", error="1k")

        def test_dut(dut):
            pass
        """
    )
    result = _run(pytester, "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*natbench: no natbench testbed: pass --nb-testbed FILE*"])


# ---------------------------------------------------------------------------- the sweep marker
def test_sweep_ids_are_readable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.natbench_sweep(cores=[1, 4], connections=["1k", "4M"])
        def test_a(nb_point):
            assert nb_point.cores in (1, 4)

        @pytest.mark.natbench_sweep(ports=[("1-4000", 1000)], frame_sizes=[64, 1518])
        def test_b(nb_point):
            assert nb_point.connections == 4_000_000
        """
    )
    result = _run(pytester, "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "*test_a[[]1c-1k[]]",
            "*test_a[[]1c-4M[]]",
            "*test_a[[]4c-1k[]]",
            "*test_a[[]4c-4M[]]",
            "*test_b[[]4M-64B[]]",
            "*test_b[[]4M-1518B[]]",
        ]
    )
    assert _run(pytester).ret == 0


def test_sweep_marker_misuse_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.natbench_sweep(cores=[1])
        def test_nothing():
            pass

        @pytest.mark.natbench_sweep(connections=[7919])
        def test_prime(nb_point):
            pass
        """
    )
    result = _run(pytester)
    assert result.ret != 0
    out = result.stdout.str() + result.stderr.str()
    assert "natbench_sweep needs the test to use nb_measure or nb_point" in out


def test_split_connections_follows_seed_practice() -> None:
    assert split_connections(4_000_000) == (PortRange(1024, 5023), PortRange(1, 1000))
    assert split_connections(1000) == (PortRange(1024, 1123), PortRange(1, 10))
    assert split_connections(16_000) == (PortRange(1024, 1183), PortRange(1, 100))
    assert split_connections(3) == (PortRange(1024, 1026), PortRange(1, 1))
    assert split_connections(16_000, 40) == (PortRange(1024, 1423), PortRange(1, 40))
    with pytest.raises(ConfigError, match="cannot split 65537 connections"):
        split_connections(65537)  # a prime above the 64,511 usable source ports
    with pytest.raises(ConfigError, match="with 3 destination ports"):
        split_connections(1000, 3)
    with pytest.raises(ConfigError, match="at least 1"):
        split_connections(0)


def test_sweep_points_product_order() -> None:
    pts = sweep_points(cores=[1, 2], connections=["1k", "2^12"])
    assert [p.id for p in pts] == ["1c-1k", "1c-4.1k", "2c-1k", "2c-4.1k"]
    assert pts[1].connections == 4096
    with pytest.raises(ConfigError, match="not both"):
        sweep_points(connections=[1000], ports=[(1, 1)])


# ---------------------------------------------------------------------------- measuring and storing
def _fake_session(pytester: pytest.Pytester, tests: str) -> pytest.RunResult:
    pytester.makefile(".yaml", testbed=TESTBED)
    pytester.makeconftest(FAKE_CONFTEST)
    pytester.makepyfile(textwrap.dedent(tests))
    return _run(pytester, "--nb-testbed", "testbed.yaml", "--nb-results", "res", "-rs")


def test_measurements_land_in_a_run_directory_that_reports_read(pytester: pytest.Pytester) -> None:
    result = _fake_session(
        pytester,
        """
        import pytest

        @pytest.mark.natbench_sweep(cores=[1, 2], connections=["1k", "4k"])
        def test_cps(nb_measure):
            m = nb_measure("cps", repetitions=2, upper="1M", error="1k", timeout=0)
            assert len(m.values) == 2
            # the modelled DUT establishes 150,000 connections/s: the search brackets it within error
            assert 149_000 <= m.min <= m.max <= 150_000

        def test_cps_again(nb_measure):
            m = nb_measure("cps", cores=1, connections="1k", repetitions=1, upper="1M", error="1k", timeout=0)
            assert [r.repetition for r in m.results] == [2]   # continues test_cps[1c-1k]

        def test_teardown(nb_measure):
            m = nb_measure("teardown", connections="4k", repetitions=2, fill_rate="10k", gap=0)
            assert m.median > 0
        """,
    )
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*natbench: 6 measurement(s) stored in res/pytest-*", "*natbench report res/pytest-*"])
    run_dir = (pytester.path / "res" / "latest").resolve()
    assert run_dir.parent == pytester.path / "res"

    stored = RunDirectory.open(run_dir)
    assert stored.status == "complete"
    assert stored.meta.campaign_name == "pytest"
    assert [p.label for p in stored.points] == ["fake-1c-1k", "fake-1c-4k", "fake-2c-1k", "fake-2c-4k", "fake-4k"]
    assert [p.index for p in stored.points] == [0, 1, 2, 3, 4]
    results = stored.results()
    assert len(results) == 4 * 2 + 1 + 2
    assert all(t.point_id in {p.id for p in stored.points} for t in stored.trials())
    session = stored.campaign_text
    assert "kind: natbench-experiment" in session and "test_cps[2c-4k]" in session

    import natbench

    run = natbench.load(run_dir)
    assert set(run.metrics) == {"cps", "teardown"}
    summary = run.summary.reset_index()
    cps = summary[summary["metric"] == "cps"]
    assert len(cps) == 4
    assert cps["median"].between(149_000, 150_000).all()

    report = report_text(run_dir)
    assert "fake-2c-4k" in report


def test_phase2_metric_fills_the_table_first(tmp_path: Path) -> None:
    dut = FakeDut(FakeModel(cps=150_000, forwarding=300_000))
    tester = FakeTester(dut)
    tb = load_testbed(_write(tmp_path / "tb.yaml", TESTBED))
    with Experiment(tb, tmp_path / "res", tester=tester, dut=dut, sleep=lambda s: None) as exp:
        m = exp.measure(
            "throughput", connections="4k", repetitions=1, upper="1M", error="1k", fill_rate="10k", duration=1, gap=0
        )
        assert 299_000 <= m.median <= 300_000
        kinds = [t.kind for t in RunDirectory.open(exp.run_dir).trials()]
        assert kinds[0] == "fill" and "phase2" in kinds
    assert RunDirectory.open(exp.run_dir).status == "complete"
    assert dut.events[-1] == "teardown"
    assert tester.closed


def test_a_bad_setting_names_the_field(tmp_path: Path) -> None:
    dut = FakeDut()
    tb = load_testbed(_write(tmp_path / "tb.yaml", TESTBED))
    with Experiment(tb, tmp_path / "res", tester=FakeTester(dut), dut=dut) as exp:
        with pytest.raises(ConfigError, match=r"metrics\.cps\.upper"):
            exp.measure("cps", connections="1k", error="1k")
        with pytest.raises(ConfigError, match="unknown metric 'speed'"):
            exp.measure("speed", connections="1k")
        with pytest.raises(ConfigError, match="no port ranges"):
            exp.measure("cps", upper="1M", error="1k")
    assert not exp.stored  # nothing was measured: no half-written run directory


def test_resume_of_an_experiment_run_directory_says_what_it_is(tmp_path: Path) -> None:
    """`natbench run --resume` on a pytest session's run directory: one clear line, exit 2, nothing changed."""
    from natbench.errors import StoreError
    from natbench.run.runner import resume_campaign

    dut = FakeDut(FakeModel(cps=50_000))
    tb = load_testbed(_write(tmp_path / "tb.yaml", TESTBED))
    with Experiment(tb, tmp_path / "res", tester=FakeTester(dut), dut=dut) as exp:
        exp.measure("cps", connections="1k", repetitions=1, upper="100k", error="1k")
    before = {f.name: f.read_bytes() for f in exp.run_dir.iterdir() if f.is_file()}
    proc = subprocess.run(
        [sys.executable, "-m", "natbench", "run", "--resume", str(exp.run_dir)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert f"{exp.run_dir}: written by a pytest session" in lines[0]
    assert "cannot be resumed" in lines[0] and "re-run the pytest session" in lines[0]
    assert f"natbench report {exp.run_dir}" in lines[0]
    assert "schema_version" not in lines[0]  # not the campaign loader's complaint about the session record
    with pytest.raises(StoreError, match="written by a pytest session"):
        resume_campaign(exp.run_dir)
    assert {f.name: f.read_bytes() for f in exp.run_dir.iterdir() if f.is_file()} == before


# ---------------------------------------------------------------------------- testbed files and skips
def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_testbed_file_errors_name_file_line_and_field(tmp_path: Path) -> None:
    bad = _write(tmp_path / "bad.yaml", TESTBED.replace("kind: software", "kind: hardware"))
    with pytest.raises(ConfigError) as exc:
        load_testbed(bad)
    assert "bad.yaml:2" in str(exc.value) and "tester.kind" in str(exc.value)
    extra = _write(tmp_path / "extra.yaml", TESTBED + "frobnicate: 1\n")
    with pytest.raises(ConfigError, match=r"extra.yaml:9.*frobnicate.*unknown key"):
        load_testbed(extra)


def test_a_testbed_file_names_the_unset_variables_it_needs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same ${NATBENCH_*} rules as a campaign: defaults, ``$$`` and comments need nothing from the environment."""
    for var in ("NATBENCH_T_HOST", "NATBENCH_T_IF", "NATBENCH_T_LITERAL", "NATBENCH_T_COMMENT", "NATBENCH_T_SET"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NATBENCH_T_SET", "02:00:00:00:00:01")
    text = TESTBED.replace(
        "access: {kind: local}", "access: {kind: ssh, host: '${NATBENCH_T_HOST}'}  # ${NATBENCH_T_COMMENT}"
    )
    text = text.replace(
        "nat: snat,", "nat: snat, private_if: '${NATBENCH_T_IF:-eth1}', comment: '$${NATBENCH_T_LITERAL}',"
    )
    text += "    # ${NATBENCH_T_COMMENT} in a comment line\n"
    tb = load_testbed(_write(tmp_path / "env.yaml", text))
    assert tb.missing_env == ("NATBENCH_T_HOST",)
    assert problems_of(tb) == [
        f"the testbed file {tmp_path / 'env.yaml'} needs environment variable(s) NATBENCH_T_HOST"
    ]
    monkeypatch.setenv("NATBENCH_T_HOST", "192.0.2.1")
    tb = load_testbed(_write(tmp_path / "env.yaml", text.replace(", comment: '$${NATBENCH_T_LITERAL}'", "")))
    assert tb.missing_env == () and tb.testbed["duts"][0]["access"]["host"] == "192.0.2.1"
    assert tb.testbed["duts"][0]["params"]["private_if"] == "eth1"


def test_a_whole_campaign_is_a_testbed_with_defaults(tmp_path: Path) -> None:
    tb = load_testbed(ROOT / "campaigns" / "quickstart.yaml")
    assert tb.tester_kind == "software" and tb.family == "nat44"
    from natbench.campaign import load_campaign

    cps_settings = load_campaign(ROOT / "campaigns" / "quickstart.yaml").metrics["cps"]
    assert tb.metrics["cps"]["upper"] == cps_settings.upper
    dut = FakeDut(FakeModel(cps=50_000))
    with Experiment(tb, tmp_path / "res", tester=FakeTester(dut), dut=dut) as exp:
        m = exp.measure("cps", connections="1k", repetitions=1)  # bounds from the campaign's metrics.cps
        assert 50_000 - cps_settings.error <= m.median <= 50_000


def test_missing_environment_skips_the_trex_experiment(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in ("NATBENCH_TREX", "NATBENCH_DUT_HOST", "NATBENCH_DUT_PRIV_MAC", "NATBENCH_DUT_PUB_MAC"):
        monkeypatch.delenv(var, raising=False)
    example = ROOT / "docs" / "examples"
    result = _run(
        pytester, str(example / "test_trex_experiment.py"), "--nb-testbed", str(example / "trex-testbed.yaml"), "-rs"
    )
    result.assert_outcomes(skipped=11)
    result.stdout.fnmatch_lines(
        ["*needs environment variable(s) NATBENCH_DUT_HOST, NATBENCH_DUT_PRIV_MAC*NATBENCH_TREX*"]
    )


def test_unreachable_trex_server_and_dut_skip_with_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as s:  # a port on localhost that nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("NATBENCH_TREX", f"127.0.0.1:{port}")  # host:port, as the example documents
    monkeypatch.setenv("NATBENCH_DUT_HOST", "127.0.0.1")
    monkeypatch.setenv("NATBENCH_DUT_PRIV_MAC", "02:00:00:00:00:01")
    monkeypatch.setenv("NATBENCH_DUT_PUB_MAC", "02:00:00:00:00:02")
    text = (ROOT / "docs" / "examples" / "trex-testbed.yaml").read_text()
    text = text.replace("user: root", f"user: root\n      port: {port}")
    tb = load_testbed(_write(tmp_path / "trex.yaml", text))
    problems = problems_of(tb)
    assert any(p.startswith(f"no TRex server reachable: 127.0.0.1:{port}") for p in problems), problems
    assert any(p.startswith(f"DUT iptables not reachable over SSH: 127.0.0.1:{port}") for p in problems), problems


def test_local_testbeds_need_root(monkeypatch: pytest.MonkeyPatch) -> None:
    tb = TestbedFile(
        {"tester": {"kind": "software"}, "duts": [{"name": "d", "recipe": "x", "access": {"kind": "lab"}}]}
    )
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert any("needs root" in p for p in problems_of(tb, probe_network=False))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert not any("needs root" in p for p in problems_of(tb, probe_network=False))


def test_lab_testbed_example_is_valid() -> None:
    tb = load_testbed(ROOT / "docs" / "examples" / "lab-testbed.yaml")
    assert tb.tester_kind == "software"
    assert json.loads(json.dumps(tb.testbed))["duts"][0]["access"] == {"kind": "lab"}
