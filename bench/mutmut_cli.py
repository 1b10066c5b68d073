"""mutmut's command line with its stack-depth bound mended (run by bench/mutation.py).

``[tool.mutmut] max_stack_depth`` makes a mutant run only the tests that reach its function through a few
natbench frames. mutmut 3.8 measures that depth by resolving the file of every frame on the stack, and a frame
of generated code (a dataclass's ``__init__``, a pydantic validator: file name ``<string>``) has no file: the
stats run stopped with FileNotFoundError. Here such frames are skipped, as frames outside natbench are; the
rest of the rule is mutmut's: count the natbench frames from the function up to the test (pytest's frames end
the walk); a function reached through more than the bound is not recorded for that test.

``[tool.natbench-mutation] max_memory_gib`` caps the address space of mutmut and of every test process it forks
(a mutant that allocates without end then fails with MemoryError rather than exhausting the machine).

Usage: ``python bench/mutmut_cli.py run [mutant names]`` from the repository root (as ``python -m mutmut``).
"""

from __future__ import annotations

import functools
import inspect
import os
import resource
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from types import FrameType


def runner_roots() -> tuple[str, ...]:
    """The directories of the test runner's packages loaded (pytest, unittest), each ending in a separator."""
    found = []
    for name in ("_pytest", "pytest", "unittest"):
        module = sys.modules.get(name)
        if module is not None and getattr(module, "__file__", None):
            found.append(os.path.dirname(os.path.realpath(module.__file__ or "")) + os.sep)
    return tuple(found)


def within_depth(frame: FrameType | None, roots: list[str], bound: int, runner: tuple[str, ...]) -> bool:
    """True when the natbench frames from ``frame`` up to the first frame of the test runner (``runner``: its
    package directories) are fewer than ``bound`` (``roots``: the mutated source directories, each ending in a
    separator).

    Frames without a file (``<string>``, ``<frozen ...>``) and frames outside ``roots`` are not counted."""
    kinds = _kinds(tuple(roots), runner)
    left = bound
    while left and frame is not None:
        kind = kinds(frame.f_code.co_filename)
        frame = frame.f_back
        if kind == "runner":
            break
        if kind == "natbench":
            left -= 1
    return left > 0


@functools.cache
def _kinds(roots: tuple[str, ...], runner: tuple[str, ...]) -> Callable[[str], str]:
    """What a frame's file is, remembered per file name (a test makes millions of calls, through a few hundred
    files): ``runner``, ``natbench`` (one of ``roots``) or ``other`` (also a frame without a file)."""

    @functools.cache
    def kind(filename: str) -> str:
        if filename.startswith("<"):
            return "other"
        path = os.path.realpath(filename)
        return "runner" if path.startswith(runner) else "natbench" if path.startswith(roots) else "other"

    return kind


def _whole_number(pyproject: Path, key: str) -> int | None:
    """``[tool.natbench-mutation] key`` of ``pyproject``: a whole number >= 1, or None when not set."""
    value = tomllib.loads(pyproject.read_text("utf-8")).get("tool", {}).get("natbench-mutation", {}).get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{pyproject}: [tool.natbench-mutation] {key}: a whole number >= 1, not {value!r}")
    return value


def max_stack_depth(pyproject: Path) -> int | None:
    """``[tool.natbench-mutation] max_stack_depth`` of ``pyproject`` (None: no bound)."""
    return _whole_number(pyproject, "max_stack_depth")


def max_memory_bytes(pyproject: Path) -> int | None:
    """``[tool.natbench-mutation] max_memory_gib`` of ``pyproject`` in bytes (None: no cap)."""
    gib = _whole_number(pyproject, "max_memory_gib")
    return None if gib is None else gib * 2**30


def cap_memory(limit: int) -> None:
    """Cap this process's address space at ``limit`` bytes; every process it forks inherits the cap."""
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _bounded(record: Callable[..., None], bound: int) -> Callable[..., None]:
    """mutmut's ``record_trampoline_hit`` recording only the hits within ``bound`` natbench frames of the test."""
    from mutmut.configuration import config

    roots: list[str] = []
    runner: list[tuple[str, ...]] = []

    def record_hit(name: str, caller: str | None = None) -> None:
        if not runner:  # once pytest runs (its packages are loaded then)
            roots.extend(os.path.realpath(p) + os.sep for p in config().resolved_mutated_source_paths)
            runner.append(runner_roots())
        here = inspect.currentframe()
        if within_depth(here.f_back if here else None, roots, bound, runner[0]):
            record(name, caller)

    return record_hit


def main() -> None:
    """Mend the depth rule, then run mutmut's command line on ``sys.argv[1:]``."""
    sys.path[0] = os.getcwd()  # as ``python -m mutmut``: the repository root first, not bench/
    import mutmut.mutation.trampoline as trampoline
    import mutmut.stats as stats
    from mutmut.__main__ import cli

    memory = max_memory_bytes(Path("pyproject.toml"))
    if memory is not None:
        cap_memory(memory)
    bound = max_stack_depth(Path("pyproject.toml"))
    if bound is not None:
        record = _bounded(stats.record_trampoline_hit, bound)
        stats.record_trampoline_hit = record
        trampoline.record_trampoline_hit = record  # type: ignore[attr-defined]
    cli(prog_name="mutmut")


if __name__ == "__main__":
    main()
