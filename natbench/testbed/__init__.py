"""The testbed: the tester, the DUT(s) and the local lab they run in, built from a campaign explicitly.

:func:`build_testbed` is the one call that builds a campaign's testbed (:mod:`.build`);
tester kinds and DUT access kinds are backends in :data:`TESTERS` / :data:`ACCESS`
(:mod:`.registry`, API in :mod:`.backends`), extensible through entry points;
:func:`testbed_problems` says whether this machine can drive a testbed (:mod:`.preflight`);
:func:`load_testbed` reads a testbed file for the experiment API and the pytest plugin (:mod:`.file`);
the local lab lives in :mod:`natbench.testbed.lab`.
"""

from natbench.plugins import ACCESS_GROUP, TESTER_GROUP
from natbench.testbed.backends import (
    AccessBackend,
    Endpoint,
    LabRequest,
    Locate,
    TesterBackend,
    TesterContext,
)
from natbench.testbed.build import Testbed, build_dut, build_testbed
from natbench.testbed.file import TestbedFile, load_testbed, testbed_file_problems
from natbench.testbed.preflight import testbed_problems
from natbench.testbed.registry import ACCESS, TESTERS, Registry

__all__ = [
    "ACCESS",
    "ACCESS_GROUP",
    "TESTERS",
    "TESTER_GROUP",
    "AccessBackend",
    "Endpoint",
    "LabRequest",
    "Locate",
    "Registry",
    "Testbed",
    "TestbedFile",
    "TesterBackend",
    "TesterContext",
    "build_dut",
    "build_testbed",
    "load_testbed",
    "testbed_file_problems",
    "testbed_problems",
]
