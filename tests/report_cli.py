"""Rendering a run directory the way a user does: ``natbench report RUN_DIR`` in a child process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

__all__ = ["report_text"]


def report_text(run_dir: Path) -> str:
    """The text tables ``python -m natbench report RUN_DIR --format text --out -`` prints (asserts it exits 0)."""
    report = subprocess.run(
        [sys.executable, "-m", "natbench", "report", str(run_dir), "--format", "text", "--out", "-"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert report.returncode == 0, report.stderr
    return report.stdout
