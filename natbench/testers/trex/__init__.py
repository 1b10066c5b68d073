"""TRex STL backend: offline program compiler, stream builder, live tester.

:mod:`~natbench.testers.trex.settings` is the settings model, :mod:`~natbench.testers.trex.backend` the
testbed backend (kind ``trex``, with its preflight and the ``create`` factory), :mod:`~natbench.testers.trex.tester`
the tester. The client library is only imported when streams are built or a server is contacted.
"""
