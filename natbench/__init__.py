"""natbench: RFC 9693 benchmarking of stateful NATxy gateways.

The root package is a façade on top of the package: ``natbench.__version__``, for notebooks ``natbench.load``
(which imports pandas only when first used), and the errors a caller catches. Nothing inside natbench imports it.
"""

from __future__ import annotations

from typing import Any

from natbench.errors import ConfigError, DutError, NatbenchError, StoreError, TesterError
from natbench.version import __version__

__all__ = [
    "ConfigError",
    "DutError",
    "NatbenchError",
    "StoreError",
    "TesterError",
    "__version__",
    "load",
]


def __getattr__(name: str) -> Any:
    """Lazy attributes: ``natbench.load`` imports pandas only when first used."""
    if name == "load":
        from natbench.report.load import load

        return load
    raise AttributeError(f"module 'natbench' has no attribute {name!r}")
