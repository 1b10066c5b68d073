"""natbench: RFC 9693 benchmarking of stateful NATxy gateways."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("natbench")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

__all__ = ["__version__", "load"]


def __getattr__(name: str) -> Any:
    """Lazy attributes: ``natbench.load`` imports pandas only when first used."""
    if name == "load":
        from natbench.report.load import load

        return load
    raise AttributeError(f"module 'natbench' has no attribute {name!r}")
