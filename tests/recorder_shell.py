"""An executor wrapper putting the test-only recorders (tests/recorders/recorder) first on PATH."""

from __future__ import annotations

import shlex
from pathlib import Path

from natbench.plugins import CommandResult, Executor

__all__ = ["RecorderShell"]


class RecorderShell:
    """Runs every command of ``inner`` with ``bindir`` (links to the recorder) first on PATH.

    The recorder appends its argv to ``record``, prints the canned output found in
    ``data`` and fails commands containing ``fail``. The wrapper is namespaced when
    ``inner`` is; commands for the host go where ``inner`` sends them: to this wrapper
    when ``inner`` is its own host (an SSH or local shell: recorded too), else to
    ``inner``'s host unrecorded (around a DUT namespace: the real tools).
    """

    def __init__(self, inner: Executor, bindir: Path, record: Path, data: Path, fail: str = "") -> None:
        self.inner = inner
        env = {"NATBENCH_RECORD": str(record), "NATBENCH_RECORD_DATA": str(data), "NATBENCH_RECORD_FAIL": fail}
        assigns = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        self.prefix = f'PATH={shlex.quote(str(bindir))}:"$PATH"; export PATH {assigns}; '

    @property
    def description(self) -> str:
        """``recorders via`` the inner executor's description."""
        return f"recorders via {self.inner.description}"

    @property
    def namespaced(self) -> bool:
        """As the inner executor."""
        return self.inner.namespaced

    def run(self, command: str, *, timeout: float | None = None, check: bool = False) -> CommandResult:
        """Run ``command`` through the inner executor with the recorders first on PATH."""
        return self.inner.run(self.prefix + command, timeout=timeout, check=check)

    def host(self) -> Executor:
        """This wrapper when the inner executor is its own host, else the inner executor's host."""
        host = self.inner.host()
        return self if host is self.inner else host

    def close(self) -> None:
        """Close the inner executor."""
        self.inner.close()
