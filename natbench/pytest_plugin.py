"""pytest plugin: natbench experiments written as pytest tests.

Registered as the ``pytest11`` entry point ``natbench``; it does nothing
unless a test asks for its fixtures or marker, so it is safe to have installed
in any test run. Importing it imports only pytest and the standard library.

Options:

--nb-testbed FILE  the testbed: a campaign's ``testbed`` section on its own, or a whole
                   campaign (then its ``traffic`` and ``metrics`` sections are the defaults).
--nb-results DIR   where the session's run directory is created (default ``results``).

Fixtures:

``testbed``
    (session) the :class:`~natbench.testbed.file.TestbedFile`; skips the test when no
    ``--nb-testbed`` was given or this machine cannot drive it (not root, no TRex
    reachable, no lab tools, ...), naming the reason.
``tester``
    (session) the built tester (the local lab is brought up for ``kind: lab`` DUTs).
``dut``
    (session) the built DUT(s).
``nb_session``
    (session) the :class:`~natbench.run.experiment.Experiment` collecting the session's run.
``nb_point``
    the :class:`~natbench.run.experiment.SweepPoint` of a ``natbench_sweep`` test.
``nb_measure``
    ``nb_measure(metric, **settings) -> Measurement``: runs every repetition of one
    procedure at one working point (the test's sweep point unless given) and stores
    each trial in the session's run directory.

Marker: ``@pytest.mark.natbench_sweep(cores=[1, 2, 4], connections=["1k", "4M"])`` parametrises
a test over the product, with ids like ``4c-4M``; also ``ports=[(src, dst), ...]``,
``dst_ports=N`` and ``frame_sizes=[...]``.

At the end of the session the run directory is printed; ``natbench report RUN_DIR`` renders it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from natbench.run.experiment import Experiment, Measurement, SweepPoint
    from natbench.testbed.file import TestbedFile

__all__ = [
    "dut",
    "nb_measure",
    "nb_point",
    "nb_session",
    "pytest_addoption",
    "pytest_configure",
    "pytest_generate_tests",
    "testbed",
    "tester",
]

_MARKER = "natbench_sweep"
_STATE = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register --nb-testbed and --nb-results."""
    group = parser.getgroup("natbench", "natbench experiments")
    group.addoption(
        "--nb-testbed",
        metavar="FILE",
        default=None,
        help="natbench testbed file (a campaign's testbed section, or a whole campaign); "
        "tests using the testbed fixtures are skipped without it",
    )
    group.addoption(
        "--nb-results",
        metavar="DIR",
        default=None,
        help="directory in which the session's natbench run directory is created (default: results)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker (so --strict-markers accepts it) and the session state."""
    config.addinivalue_line(
        "markers",
        f"{_MARKER}(cores=None, connections=None, ports=None, dst_ports=None, frame_sizes=None): "
        "run a natbench experiment at every working point of the product; ids like 4c-4M",
    )
    config.stash[_STATE] = {}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrise ``natbench_sweep`` tests over their working points (indirectly through ``nb_point``)."""
    marks = list(metafunc.definition.iter_markers(_MARKER))
    if not marks:
        return
    if len(marks) > 1:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: use one {_MARKER} marker per test")
    if "nb_point" not in metafunc.fixturenames:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: {_MARKER} needs the test to use nb_measure or nb_point")
    from natbench.errors import NatbenchError
    from natbench.run.experiment import sweep_points

    mark = marks[0]
    if mark.args:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: {_MARKER} takes keyword arguments only")
    try:
        points = sweep_points(**mark.kwargs)
    except TypeError as exc:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: {_MARKER}: {exc}") from None
    except NatbenchError as exc:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: {_MARKER}: {exc}") from None
    metafunc.parametrize("nb_point", points, ids=[p.id for p in points], indirect=True)


def _state(config: pytest.Config) -> dict[str, Any]:
    return config.stash.setdefault(_STATE, {})


@pytest.fixture(scope="session")
def testbed(pytestconfig: pytest.Config) -> TestbedFile:
    """The testbed of ``--nb-testbed``; skips with the reason when it is absent or cannot be driven here."""
    state = _state(pytestconfig)
    if "testbed" not in state:
        path = pytestconfig.getoption("--nb-testbed")
        if not path:
            state["testbed"] = None
            state["skip"] = "no natbench testbed: pass --nb-testbed FILE"
        else:
            from natbench.errors import ConfigError
            from natbench.testbed.file import load_testbed, testbed_file_problems

            try:
                tb = load_testbed(path)
            except ConfigError as exc:
                raise pytest.UsageError(f"--nb-testbed: {exc}") from None
            state["testbed"] = tb
            problems = testbed_file_problems(tb)
            state["skip"] = "; ".join(problems) if problems else None
    if state.get("skip"):
        pytest.skip(f"natbench: {state['skip']}")
    tb = state["testbed"]
    assert tb is not None
    return tb


@pytest.fixture(scope="session")
def nb_session(pytestconfig: pytest.Config, testbed: TestbedFile) -> Any:
    """The :class:`~natbench.run.experiment.Experiment` of this session (one run directory)."""
    from natbench.run.experiment import Experiment

    results = pytestconfig.getoption("--nb-results") or "results"
    exp = Experiment(testbed, results, name="pytest")
    state = _state(pytestconfig)
    state["experiment"] = exp
    try:
        yield exp
    finally:
        state["closed"] = True
        exp.close("complete", pytest={"args": list(pytestconfig.invocation_params.args), "pid": os.getpid()})


@pytest.fixture(scope="session")
def tester(nb_session: Experiment) -> Any:
    """The testbed's tester (software tester on the local lab, or TRex), built once per session."""
    from natbench.errors import TesterError

    try:
        return nb_session.tester
    except TesterError as exc:
        pytest.skip(f"natbench: tester not available: {exc}")


@pytest.fixture(scope="session")
def dut(nb_session: Experiment, tester: Any) -> Any:
    """The testbed's DUT(s), built once per session together with the tester (and the lab they need)."""
    return nb_session.dut


@pytest.fixture
def nb_point(request: pytest.FixtureRequest) -> SweepPoint | None:
    """The working point of a ``natbench_sweep`` test (None for unmarked tests)."""
    return getattr(request, "param", None)


@pytest.fixture
def nb_measure(
    request: pytest.FixtureRequest, nb_session: Experiment, tester: Any, dut: Any, nb_point: SweepPoint | None
) -> Any:
    """``nb_measure(metric, **settings) -> Measurement``; the test's sweep point fills cores / ports."""

    def measure(metric: str, **kwargs: Any) -> Measurement:
        if nb_point is not None:
            if nb_point.cores is not None:
                kwargs.setdefault("cores", nb_point.cores)
            if nb_point.src_ports is not None and "connections" not in kwargs:
                kwargs.setdefault("src_ports", nb_point.src_ports)
                kwargs.setdefault("dst_ports", nb_point.dst_ports)
            if nb_point.frame_size is not None:
                kwargs.setdefault("frame_size", nb_point.frame_size)
        return nb_session.measure(metric, test=request.node.nodeid, tester=tester, dut=dut, **kwargs)

    return measure


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Name the run directory and the command that reports it."""
    exp = _state(config).get("experiment")
    if exp is None or not exp.stored:
        return
    run_dir = Path(exp.run_dir)
    terminalreporter.write_sep("-", "natbench")
    terminalreporter.write_line(f"natbench: {len(exp.measurements)} measurement(s) stored in {run_dir}")
    terminalreporter.write_line(f"natbench: tables: natbench report {run_dir}")
