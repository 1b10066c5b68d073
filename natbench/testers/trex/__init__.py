"""TRex STL backend: offline program compiler, stream builder, live tester.

``create(settings)`` is the tester factory, :mod:`natbench.testers.trex.backend` the testbed
backend (kind ``trex``, with its preflight). The client library is only imported when streams
are built or a server is contacted.
"""

from natbench.testers.trex.tester import TRexSettings, TRexTester, check_settings, create

__all__ = ["TRexSettings", "TRexTester", "check_settings", "create"]
