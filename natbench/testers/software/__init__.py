"""The built-in software tester: AF_PACKET sockets, a C data path (:mod:`~natbench.testers.software.tester`),
its settings model (:mod:`~natbench.testers.software.settings`) and its testbed backend with the
``create`` factory (:mod:`~natbench.testers.software.backend`)."""
