"""The registries of testbed backends: tester kinds and DUT access kinds, by name.

natbench's own backends are registered here in code (loaded on first use, so the TRex client
or paramiko are imported only when a campaign uses them, and no reinstall is needed to change
them); a third-party package adds its own through an entry point (:data:`TESTER_GROUP`,
:data:`ACCESS_GROUP`, see :mod:`natbench.testbed.backends`), or code calls :meth:`Registry.register`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any, Generic, TypeVar

from natbench import plugins
from natbench.errors import ConfigError
from natbench.plugins import ACCESS_GROUP, TESTER_GROUP
from natbench.testbed.backends import AccessBackend, TesterBackend

__all__ = ["ACCESS", "TESTERS", "Registry"]

B = TypeVar("B")


class Registry(Generic[B]):
    """Backends of one sort by name: registered in code, or found in an entry-point group."""

    def __init__(self, what: str, group: str, protocol: type[Any]) -> None:
        self.what = what
        """What a name names, for messages (``tester kind``)."""
        self.group = group
        """The entry-point group third-party backends are found in."""
        self._protocol = protocol
        self._loaders: dict[str, Callable[[], B]] = {}
        self._backends: dict[str, B] = {}

    def register(self, name: str, backend: B) -> None:
        """Register (or replace) the backend of ``name``."""
        self._check(name, backend, "registered")
        self._loaders.pop(name, None)
        self._backends[name] = backend
        plugins.announce(self.group, name)

    def register_lazy(self, name: str, load: Callable[[], B]) -> None:
        """Register (or replace) ``name`` with a function that returns its backend, called on first use."""
        self._backends.pop(name, None)
        self._loaders[name] = load
        plugins.announce(self.group, name)

    def unregister(self, name: str) -> None:
        """Forget what was registered (or loaded) under ``name``; an entry point of that name stays findable."""
        self._backends.pop(name, None)
        self._loaders.pop(name, None)
        plugins.forget(self.group, name)

    def names(self) -> list[str]:
        """Every known name, registered or offered by an installed package's entry point, sorted."""
        found = {ep.name for ep in entry_points(group=self.group)}
        return sorted(set(self._backends) | set(self._loaders) | found)

    def known(self, name: str) -> bool:
        """True when :meth:`get` can give a backend for ``name`` (without loading it)."""
        return name in self._backends or name in self._loaders or name in self.names()

    def get(self, name: str, *, field: str | None = None) -> B:
        """The backend of ``name``; an unknown name is a ConfigError naming ``field`` and the known names."""
        if name in self._backends:
            return self._backends[name]
        load = self._loaders.get(name)
        if load is None:
            load = self._entry_point(name, field)
        backend = load()
        self._check(name, backend, "loaded")
        self._backends[name] = backend
        self._loaders.pop(name, None)
        return backend

    def _entry_point(self, name: str, field: str | None) -> Callable[[], B]:
        found = [ep for ep in entry_points(group=self.group) if ep.name == name]
        if not found:
            raise ConfigError(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}", field=field)
        ep = found[0]

        def load() -> B:
            try:
                obj = ep.load()
            except Exception as exc:  # a broken plugin is a configuration problem, named as such
                raise ConfigError(f"cannot load {self.what} {name!r} from {ep.value}: {exc}", field=field) from exc
            backend: B = obj() if isinstance(obj, type) else obj
            return backend

        return load

    def _check(self, name: str, backend: object, how: str) -> None:
        if not isinstance(backend, self._protocol):
            raise TypeError(f"{self.what} {name!r} {how} as {backend!r}, which is not a {self._protocol.__name__}")


def _software() -> TesterBackend:
    from natbench.testers.software.backend import SoftwareBackend

    return SoftwareBackend()


def _trex() -> TesterBackend:
    from natbench.testers.trex.backend import TRexBackend

    return TRexBackend()


def _access(kind: str) -> Callable[[], AccessBackend]:
    def load() -> AccessBackend:
        from natbench.duts.access import BUILTIN_ACCESS

        return BUILTIN_ACCESS[kind]

    return load


TESTERS: Registry[TesterBackend] = Registry("tester kind", TESTER_GROUP, TesterBackend)
"""Tester kinds (``testbed.tester.kind``): ``software``, ``trex``, and those of installed plugins."""
TESTERS.register_lazy("software", _software)
TESTERS.register_lazy("trex", _trex)

ACCESS: Registry[AccessBackend] = Registry("access kind", ACCESS_GROUP, AccessBackend)
"""DUT access kinds (``testbed.duts[].access.kind``): ``ssh``, ``local``, ``netns``, ``lab``, and plugins'."""
for _kind in ("ssh", "local", "netns", "lab"):
    ACCESS.register_lazy(_kind, _access(_kind))
