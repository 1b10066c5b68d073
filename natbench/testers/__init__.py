"""Traffic generator backends behind the :class:`~natbench.testers.base.Tester` protocol."""
