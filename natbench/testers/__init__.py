"""Traffic generator backends behind the :class:`~natbench.plugins.Tester` protocol."""
