"""Paths natbench is given from outside (an environment variable, a command-line value, a link inside a source
tree or a run directory): what is refused before the file system is asked.

* Lengths: a path longer than :data:`PATH_MAX` or with a component longer than :data:`NAME_MAX` is one the
  kernel refuses anyway (``ENAMETOOLONG``); natbench names the limit instead of a traceback, and never prints
  such a path whole.
* Kernel file systems (:data:`PSEUDO_ROOTS`): ``/proc`` and ``/sys`` hold views of the kernel, not data. A
  "regular file" there states size 0 and reading it can fail (``/proc/self/mem``), never end or hand out
  another process's secrets (``/proc/self/environ``): no input natbench reads lives there.
* Directory lists in environment variables (``NATBENCH_RECIPES``): :func:`env_paths` splits and checks them,
  :func:`env_path` does the same for one directory (``NATBENCH_IMAGE_CACHE``, ``NATBENCH_LAB_STATE``).
"""

from __future__ import annotations

import os
from pathlib import Path

from natbench.errors import ConfigError

PATH_MAX = 4096
"""Longest path (bytes, with its terminating NUL counted by the kernel) Linux accepts (``<linux/limits.h>``)."""
NAME_MAX = 255
"""Longest component of a path (bytes) Linux file systems accept (``<linux/limits.h>``)."""
MAX_PATH_ENTRIES = 256
"""Most directories a list variable may name (``NATBENCH_RECIPES``: a handful; each is searched in turn)."""
PSEUDO_ROOTS = ("/proc", "/sys")
"""Kernel file systems whose files are views of the kernel, never a file natbench should read."""


def path_problem(text: str) -> str | None:
    """Why the path ``text`` cannot name a file, worded to follow "is" (``10,000 bytes long: more than PATH_MAX
    ...``), or None. It names the limit, never the path."""
    if "\x00" in text:
        return "a path with a NUL byte"
    size = _size(text)
    if size >= PATH_MAX:
        return f"{size:,} bytes long: more than PATH_MAX allows ({PATH_MAX - 1:,} bytes)"
    longest = max(_size(part) for part in text.split("/"))
    if longest > NAME_MAX:
        return f"a path with a component of {longest:,} bytes: more than NAME_MAX allows ({NAME_MAX} bytes)"
    return None


def _size(text: str) -> int:
    """Bytes of ``text`` as the kernel gets it (a character the file system encoding cannot hold: 4, the most)."""
    try:
        return len(os.fsencode(text))
    except UnicodeEncodeError:  # a lone surrogate that did not come from the OS
        return len(text.encode("utf-8", "surrogatepass"))


def pseudo_root(path: str | os.PathLike[str]) -> str | None:
    """The kernel file system (:data:`PSEUDO_ROOTS`) ``path`` leads into, symlinks followed; None otherwise."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):  # a NUL byte, a name too long: the caller's own check names it
        return None
    return next((root for root in PSEUDO_ROOTS if real == root or real.startswith(root + "/")), None)


def env_paths(name: str) -> list[Path]:
    """The directories of the ``os.pathsep``-separated environment variable ``name`` (empty entries skipped; an
    unset or empty variable: none). ConfigError naming the variable, the entry's position and the limit when an
    entry cannot be a path (:func:`path_problem`)."""
    value = os.environ.get(name, "")
    entries = value.split(os.pathsep)
    if len(entries) > MAX_PATH_ENTRIES:
        raise ConfigError(
            f"environment variable {name}: {len(entries):,} entries, more than the {MAX_PATH_ENTRIES} a directory"
            " list may hold"
        )
    out: list[Path] = []
    for i, entry in enumerate(entries, 1):
        if not entry:
            continue
        problem = path_problem(entry)
        if problem is not None:
            where = f"entry {i} " if os.pathsep in value else ""
            raise ConfigError(f"environment variable {name}: {where}is {problem}: not a directory name")
        out.append(Path(entry))
    return out


def env_path(name: str) -> Path | None:
    """The one directory the environment variable ``name`` names (None when unset or empty); ConfigError naming the
    variable and the limit when it cannot be a path."""
    value = os.environ.get(name, "")
    if not value:
        return None
    problem = path_problem(value)
    if problem is not None:
        raise ConfigError(f"environment variable {name}: is {problem}: not a directory name")
    return Path(value)
