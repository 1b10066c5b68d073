"""DUT control: the :class:`~natbench.plugins.Dut` protocol, executors, recipes, monitor."""
