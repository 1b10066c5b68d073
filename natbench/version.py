"""natbench's version: the installed distribution's, or ``0.0.0+unknown`` in a source tree that was not installed.

Modules inside natbench import it from here (the root package only re-exports it as ``natbench.__version__``).
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("natbench")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"
