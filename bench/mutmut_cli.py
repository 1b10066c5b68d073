"""mutmut's command line with its stack-depth bound mended (run by bench/mutation.py).

``[tool.mutmut] max_stack_depth`` makes a mutant run only the tests that reach its function through a few
natbench frames. mutmut 3.8 measures that depth by resolving the file of every frame on the stack, and a frame
of generated code (a dataclass's ``__init__``, a pydantic validator: file name ``<string>``) has no file: the
stats run stopped with FileNotFoundError. Here such frames are skipped, as frames outside natbench are; the
rest of the rule is mutmut's: count the natbench frames from the function up to the test (pytest's frames end
the walk); a function reached through more than the bound is not recorded for that test.

Usage: ``python bench/mutmut_cli.py run [mutant names]`` from the repository root (as ``python -m mutmut``).
"""

from __future__ import annotations

import inspect
import os
import sys
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
    left = bound
    while left and frame is not None:
        filename = frame.f_code.co_filename
        frame = frame.f_back
        if filename.startswith("<"):
            continue
        path = os.path.realpath(filename)
        if path.startswith(runner):
            break
        if path.startswith(tuple(roots)):
            left -= 1
    return left > 0


def _record_hit(name: str, caller: str | None = None) -> None:
    """mutmut's ``record_trampoline_hit`` with :func:`within_depth` as its depth rule."""
    from mutmut.configuration import config
    from mutmut.state import state

    cfg = config()
    if cfg.max_stack_depth != -1:
        roots = [os.path.realpath(p) + os.sep for p in cfg.resolved_mutated_source_paths]
        here = inspect.currentframe()
        if not within_depth(here.f_back if here else None, roots, cfg.max_stack_depth, runner_roots()):
            return
    state()._stats.add(name)
    if caller is not None and cfg.track_dependencies:
        state().function_dependencies[name].add(caller)


def main() -> None:
    """Mend the depth rule, then run mutmut's command line on ``sys.argv[1:]``."""
    sys.path[0] = os.getcwd()  # as ``python -m mutmut``: the repository root first, not bench/
    import mutmut.mutation.trampoline as trampoline
    import mutmut.stats as stats
    from mutmut.__main__ import cli

    stats.record_trampoline_hit = _record_hit
    trampoline.record_trampoline_hit = _record_hit  # type: ignore[attr-defined]
    cli(prog_name="mutmut")


if __name__ == "__main__":
    main()
