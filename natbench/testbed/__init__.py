"""The testbed: the tester, the DUT(s) and the local lab they run in, built from a campaign explicitly.

:func:`build_testbed` is the one call that builds a campaign's testbed (:mod:`.build`), asking the tester
kind's and each DUT access kind's backend (registered in :data:`natbench.plugins.TESTERS` /
:data:`natbench.plugins.ACCESS`, protocols in :mod:`natbench.plugins`);
:func:`testbed_problems` says whether this machine can drive a testbed (:mod:`.preflight`);
:func:`load_testbed` reads a testbed file for the experiment API and the pytest plugin (:mod:`.file`);
the local lab, and its access kind ``lab``, live in :mod:`natbench.testbed.lab`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from natbench.testbed.build import Testbed as Testbed
    from natbench.testbed.build import build_dut as build_dut
    from natbench.testbed.build import build_testbed as build_testbed
    from natbench.testbed.preflight import testbed_problems as testbed_problems

_HOME = {
    "Testbed": "build",
    "build_dut": "build",
    "build_testbed": "build",
    "testbed_problems": "preflight",
}
"""The module of each name this package offers; imported on first use, so that validating a campaign with a lab DUT
(which loads the lab's access kind, :mod:`natbench.testbed.lab.access`) does not import the testbed builder."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
