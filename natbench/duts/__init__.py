"""DUT control: the :class:`~natbench.duts.base.Dut` protocol, executors, recipes, monitor."""
