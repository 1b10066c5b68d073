"""CLI command modules (one per command group), registered in natbench.cli."""
