"""One registration mechanism for every plugin kind: :class:`Registry`, fed in code and by entry points.

Four registries use it: :data:`TESTERS` (tester kinds), :data:`ACCESS` (DUT access kinds) and
:data:`PARSERS` (DUT output parsers) here, and the metrics' registry in :mod:`natbench.metrics.registry`
(whose entries are :class:`~natbench.metrics.registry.Metric` objects). natbench's own entries are registered
in code by dotted path (``"natbench.testers.software.backend:BACKEND"``), so this module imports none of them
and a backend is imported only when it is first asked for; another package adds its own through an entry
point of the registry's group (:data:`TESTER_GROUP`, :data:`ACCESS_GROUP`, :data:`PARSER_GROUP`,
:data:`METRIC_GROUP`), and code (a test) may call :meth:`Registry.register`.

A name means one plugin: a name registered twice (in code, by dotted path, or by an installed package's entry point,
natbench's own names included) is a one-line :class:`~natbench.errors.ConfigError` naming where each came from,
never a silent choice between them.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import EntryPoint, entry_points
from types import FrameType
from typing import Any, Generic, TypeVar

from natbench.errors import ConfigError
from natbench.plugins.backends import AccessBackend, TesterBackend
from natbench.plugins.parsers import Parser

TESTER_GROUP = "natbench.testers"
"""Entry-point group of tester kinds: each names a :class:`~natbench.plugins.backends.TesterBackend`."""
ACCESS_GROUP = "natbench.access"
"""Entry-point group of DUT access kinds: each names an :class:`~natbench.plugins.backends.AccessBackend`."""
PARSER_GROUP = "natbench.parsers"
"""Entry-point group of DUT output parsers: each names a :data:`~natbench.plugins.parsers.Parser`."""
METRIC_GROUP = "natbench.metrics"
"""Entry-point group of metrics: each names a :class:`~natbench.metrics.registry.Metric`."""

T = TypeVar("T")


class Registry(Generic[T]):
    """Plugins of one sort by name: registered in code (now, or by dotted path on first use), or found in an
    entry-point group. A name has one source: registering a name a second time, or an installed package offering by
    entry point a name registered otherwise (or offered by another package too), is a ConfigError naming both."""

    def __init__(
        self, what: str, group: str, accepts: Callable[[object], bool], *, modules: Sequence[str] = ()
    ) -> None:
        self.what = what
        """What a name names, for messages (``tester kind``)."""
        self.group = group
        """The entry-point group third-party plugins are found in."""
        self._accepts = accepts
        self._modules = list(modules)
        self._loaders: dict[str, tuple[Callable[[], T], str]] = {}  # name -> (loader, where it loads from)
        self._entries: dict[str, T] = {}
        self._sources: dict[str, str] = {}  # name -> where its entry came from, for messages
        self._checked: set[str] = set()  # names whose entry points were looked at (at their first look-up)
        self._owner = str(sys._getframe(1).f_globals.get("__name__", "?"))  # who made it (its helpers register)

    def register(self, name: str, entry: T, *, source: str | None = None) -> None:
        """Register the entry of ``name``; ``source`` says where it comes from (default: the module calling).
        TypeError when it is not of this registry's sort; ConfigError naming both sources when ``name`` is
        registered already (registering the same object again changes nothing)."""
        if not self._accepts(entry):
            raise TypeError(f"{self.what} {name!r} registered as {entry!r}, which is not one")
        if name in self._entries and self._entries[name] is entry:
            return
        where = source or f"code in {_caller_module(frozenset({__name__, self._owner}))}"
        self._refuse_taken(name, where)
        self._entries[name] = entry
        self._sources[name] = where
        self._checked.discard(name)  # an entry point of that name is looked for at its next look-up

    def register_lazy(self, name: str, target: str | Callable[[], T]) -> None:
        """Register ``name`` with a dotted path ``"module:attribute"`` (or a function) that gives its entry, imported
        (called) on first use; ConfigError naming both sources when ``name`` is registered already (the same path
        again changes nothing)."""
        if isinstance(target, str):
            loader, where = _importer(target), target
        else:
            loader, where = target, getattr(target, "__qualname__", repr(target))
        if name in self._loaders and self._loaders[name][1] == where:
            return
        self._refuse_taken(name, where)
        self._loaders[name] = (loader, where)
        self._sources[name] = where
        self._checked.discard(name)

    def unregister(self, name: str) -> None:
        """Forget what was registered (or loaded) under ``name``; an entry point of that name stays findable."""
        self._entries.pop(name, None)
        self._loaders.pop(name, None)
        self._sources.pop(name, None)
        self._checked.discard(name)

    def names(self) -> list[str]:
        """Every known name, registered or offered by an installed package's entry point, sorted."""
        self._modules_loaded()
        return sorted(set(self._entries) | set(self._loaders) | {ep.name for ep in self._entry_points()})

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in self.names()

    def get(self, name: str, *, field: str | None = None) -> T:
        """The entry of ``name``, loaded on first use; an unknown name, a plugin that cannot be loaded or is not of
        this registry's sort, or a name with two sources, is a one-line ConfigError naming ``field``."""
        found = self.find(name, field=field)
        if found is None:
            raise ConfigError(f"unknown {self.what} {name!r}; known: {', '.join(self.names())}", field=field)
        return found

    def find(self, name: str, *, field: str | None = None) -> T | None:
        """The entry of ``name``, or None when nothing has that name (a broken plugin, or a name with two sources,
        is still a ConfigError)."""
        self._modules_loaded()
        if name not in self._checked:
            self._check_entry_points(name, field)
        if name in self._entries:
            return self._entries[name]
        if name in self._loaders:
            load, source = self._loaders[name]
        else:
            ep = next((e for e in self._entry_points() if e.name == name), None)
            if ep is None:
                return None
            load, source = _entry_point_loader(ep), ep.value
        try:
            entry = load()
        except Exception as exc:  # a broken plugin is a configuration problem, named as such in one line
            raise ConfigError(f"cannot load {self.what} {name!r} from {source}: {_one_line(exc)}", field=field) from exc
        if not self._accepts(entry):
            raise ConfigError(f"cannot load {self.what} {name!r} from {source}: {entry!r} is not one", field=field)
        self._entries[name] = entry
        self._loaders.pop(name, None)
        return entry

    def loaded(self, name: str) -> T | None:
        """The entry registered (or already loaded) under ``name``, without loading or importing anything."""
        return self._entries.get(name)

    def entries(self) -> list[tuple[str, T]]:
        """Every entry by name, each loaded (a broken plugin is a ConfigError), sorted by name."""
        return [(name, self.get(name)) for name in self.names()]

    def _refuse_taken(self, name: str, source: str) -> None:
        """ConfigError when ``name`` is registered (or loaded) already: one line naming both sources."""
        if name in self._entries or name in self._loaders:
            raise ConfigError(self._twice(name, self._sources.get(name, "?"), source))

    def _check_entry_points(self, name: str, field: str | None) -> None:
        """At the first look-up of ``name``: ConfigError when an installed package's entry point offers it and so
        does natbench, code or another package (entry points are read once a name, not at every look-up)."""
        offered = [_entry_point_source(ep) for ep in self._entry_points() if ep.name == name]
        sources = ([self._sources.get(name, "?")] if name in self._entries or name in self._loaders else []) + offered
        if len(sources) > 1:
            raise ConfigError(self._twice(name, sources[0], sources[1]), field=field)
        if offered:
            self._sources[name] = offered[0]
        self._checked.add(name)

    def _twice(self, name: str, first: str, second: str) -> str:
        return f"{self.what} {name!r} is registered twice: first by {first}, again by {second} (rename or remove one)"

    def _entry_points(self) -> list[EntryPoint]:
        return list(entry_points(group=self.group))

    def _modules_loaded(self) -> None:
        """Import the modules whose import registers natbench's own entries (once, on first use)."""
        while self._modules:
            importlib.import_module(self._modules.pop(0))


def _importer(target: str) -> Callable[[], Any]:
    """A function importing ``"module:attribute"``."""
    module, _, attribute = target.partition(":")

    def load() -> Any:
        return getattr(importlib.import_module(module), attribute)

    return load


def _entry_point_loader(ep: EntryPoint) -> Callable[[], Any]:
    """A function loading ``ep``'s object (a class is instantiated: its instances are the plugin)."""

    def load() -> Any:
        obj = ep.load()
        return obj() if isinstance(obj, type) else obj

    return load


def _entry_point_source(ep: EntryPoint) -> str:
    """Where an entry point's plugin comes from: its group, name and object, and the package offering it."""
    dist = getattr(ep, "dist", None)
    package = f" of {dist.name} {dist.version}" if dist is not None else ""
    return f"entry point {ep.group}: {ep.name} = {ep.value}{package}"


def _caller_module(skip: frozenset[str]) -> str:
    """The module of the innermost calling frame outside the modules ``skip`` names."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") in skip:
        frame = frame.f_back
    return str(frame.f_globals.get("__name__", "?")) if frame is not None else "?"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:200] + "..."


TESTERS: Registry[TesterBackend[Any]] = Registry("tester kind", TESTER_GROUP, lambda o: isinstance(o, TesterBackend))
"""Tester kinds (``testbed.tester.kind``): ``software``, ``trex``, and those of installed plugins."""
TESTERS.register_lazy("software", "natbench.testers.software.backend:BACKEND")
TESTERS.register_lazy("trex", "natbench.testers.trex.backend:BACKEND")

ACCESS: Registry[AccessBackend[Any]] = Registry("access kind", ACCESS_GROUP, lambda o: isinstance(o, AccessBackend))
"""DUT access kinds (``testbed.duts[].access.kind``): ``ssh``, ``local``, ``netns``, ``lab``, and plugins'."""
ACCESS.register_lazy("ssh", "natbench.duts.access:SSH")
ACCESS.register_lazy("local", "natbench.duts.access:LOCAL")
ACCESS.register_lazy("netns", "natbench.duts.access:NETNS")
ACCESS.register_lazy("lab", "natbench.testbed.lab.access:LAB")

PARSERS: Registry[Parser] = Registry(
    "parser", PARSER_GROUP, callable, modules=("natbench.duts.parsers", "natbench.duts.parsers_jool_pf")
)
"""DUT output parsers by name (a recipe step's ``parse:``): natbench's own register themselves when their
modules are imported (on the first look-up), plugins' come through entry points."""
