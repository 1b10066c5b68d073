"""``python -m natbench`` runs the CLI."""

from natbench.cli import main

main()
