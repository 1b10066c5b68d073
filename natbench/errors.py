"""The natbench error hierarchy.

Every error a user can cause or meet derives from :class:`NatbenchError`; the
CLI turns one into a single clear line and exit code 2 (user error) or 1
(a failure of the testbed during a run).
"""

from __future__ import annotations


class NatbenchError(Exception):
    """Root of all natbench errors."""

    #: exit code the CLI uses for this kind of error
    exit_code: int = 1


class ConfigError(NatbenchError):
    """Bad user input: a campaign, a CLI flag, a testbed file.

    ``file``, ``line`` and ``field`` locate the problem when they are known;
    ``str(err)`` renders them as ``file:line: field: message``.
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.field = field
        super().__init__(self._render())

    def _render(self) -> str:
        where = ""
        if self.file is not None:
            where = self.file
            if self.line is not None:
                where += f":{self.line}"
            where += ": "
        what = f"{self.field}: " if self.field else ""
        return f"{where}{what}{self.message}"


class RecipeError(ConfigError):
    """A DUT recipe file is malformed or a recipe parameter is invalid."""


class DutError(NatbenchError):
    """A DUT command failed, timed out, or its output could not be parsed.

    ``step`` names the recipe step (``setup``, ``count_connections``, ...).
    """

    def __init__(self, message: str, *, step: str | None = None, dut: str | None = None) -> None:
        self.step = step
        self.dut = dut
        prefix = ""
        if dut:
            prefix += f"DUT {dut}: "
        if step:
            prefix += f"step {step}: "
        super().__init__(prefix + message)


class DutStepFailed(DutError):
    """A DUT step ran and did not do its work while the DUT answered: a command failed, outlived its time limit, or
    could not start because an earlier one is still running. A procedure whose repetition needed the step ends that
    repetition with this reason (the run goes on); a connection that is gone is a plain :class:`DutError`."""


class TesterError(NatbenchError):
    """The traffic generator could not be reached, configured or driven."""


class SearchError(NatbenchError):
    """A search could not reach a result (e.g. too many invalid steps)."""


class StoreError(NatbenchError):
    """A run directory is missing, corrupt, or does not match its campaign."""

    exit_code = 2
