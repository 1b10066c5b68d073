"""CLI subcommands; each module registers itself on :data:`natbench.cli.cli` (one import line in cli.py)."""
