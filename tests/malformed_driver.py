"""Run malformed-input cases through natbench's CLI entry point in one process (natbench imported once).

Reads a JSON list of argument lists on stdin; for each runs ``natbench.cli.main()`` with that
``sys.argv`` and records the exit code, stdout, stderr, the wall time and the peak memory of the
case, then prints the list of results as JSON on the real stdout.

Peak memory: before each case the process's peak RSS (``VmHWM``) is reset by writing ``5`` to
``/proc/self/clear_refs`` (Linux >= 4.0); after it ``VmHWM`` minus the RSS before the case is what
the case added. Where the reset is not allowed, ``tracemalloc``'s peak is used instead (Python
allocations only; ``method`` says which). ``RLIMIT_AS`` caps the whole driver at its size plus 1 GiB,
so a blow-up fails as a MemoryError case instead of exhausting the machine; an alarm ends a case
that runs longer than 20 s.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import signal
import sys
import time
import traceback
import tracemalloc
from typing import Any


def _status(key: str) -> int:
    """A ``kB`` field of /proc/self/status in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(key)


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


class _Timeout(Exception):
    pass


def _alarm(_signum: int, _frame: Any) -> None:
    raise _Timeout("case ran longer than 20 s")


def run_case(argv: list[str]) -> dict[str, Any]:
    """One CLI run: exit code, outputs, seconds, bytes of memory the case added, how that was measured."""
    from natbench.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = _status("VmRSS")
    method = "VmHWM" if _reset_peak() else "tracemalloc"
    if method == "tracemalloc":
        tracemalloc.start()
    code: Any = None
    signal.alarm(20)
    started, cpu_started = time.perf_counter(), time.process_time()
    try:
        sys.argv = ["natbench", *argv]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code
    except BaseException:  # a crash or a timeout: the traceback is what the test shows
        err.write(traceback.format_exc())
        code = "crash"
    finally:
        signal.alarm(0)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    if method == "VmHWM":
        added = max(_status("VmHWM") - before, 0)
    else:
        added = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return {
        "code": code,
        "stdout": out.getvalue(),
        "stderr": err.getvalue(),
        "seconds": seconds,
        "cpu": cpu,
        "memory": added,
        "method": method,
    }


def main() -> None:
    cases = json.load(sys.stdin)
    signal.signal(signal.SIGALRM, _alarm)
    import natbench.cli  # noqa: F401  (imported once, before any case is measured)

    size = _status("VmSize")
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]  # an inherited hard limit cannot be raised
    soft = size + (1 << 30) if hard == resource.RLIM_INFINITY else min(size + (1 << 30), hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    real_stdout = sys.stdout
    results = [run_case(argv) for argv in cases]
    real_stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
