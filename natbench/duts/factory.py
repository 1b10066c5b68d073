"""Build the campaign's DUT(s) from ``campaign.testbed.duts`` (recipe + access + params).

Works on the campaign model (attributes) and on plain dicts alike. Access kinds:

``ssh``    :class:`~natbench.duts.ssh.SshExecutor` (host, user, port, key, known_hosts,
           allow_unknown_host_key, sudo, connect_timeout, command_timeout); with an extra
           ``namespace`` the recipe runs inside that namespace on the remote host.
``local``  :class:`~natbench.duts.executors.LocalExecutor` (this machine's current namespace).
``netns``  :class:`~natbench.duts.executors.NetnsExecutor` (``namespace``).
``lab``    the DUT namespace of natbench's local lab: ``access.namespace`` if given, else
           ``$NATBENCH_LAB_NETNS_<NAME>`` / ``$NATBENCH_LAB_NETNS``, else
           ``natbench.lab.dut_namespace(name)`` when the lab module provides it. The lab's
           namespace shares this machine's kernel, so ``host_settings`` defaults to true there
           (global conntrack table/hash sizes are applied, and restored at teardown).

One DUT gives a :class:`~natbench.duts.recipe_dut.RecipeDut`, several a
:class:`~natbench.duts.recipe_dut.DutGroup` (set up in path order).
"""

from __future__ import annotations

import importlib
import os
import re
from typing import Any

from natbench.duts.executors import Executor, LocalExecutor, NetnsExecutor
from natbench.duts.recipe_dut import DutGroup, RecipeDut
from natbench.duts.recipes import load_recipe, recipe_reference
from natbench.errors import ConfigError

__all__ = ["build_duts", "build_executor", "dut_facts"]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def _as_dict(obj: Any) -> dict[str, Any]:
    if obj is None:
        return {}
    if isinstance(obj, dict):
        return dict(obj)
    if hasattr(obj, "model_dump"):
        return dict(obj.model_dump())
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def build_executor(access: Any, *, dut: str = "dut") -> Executor:
    """The executor for one DUT's ``access`` section."""
    a = _as_dict(access)
    kind = a.get("kind")
    field = f"testbed.duts.{dut}.access"
    namespace = a.get("namespace")
    if kind == "local":
        return LocalExecutor()
    if kind == "netns":
        if not namespace:
            raise ConfigError("access kind netns needs 'namespace'", field=f"{field}.namespace")
        return NetnsExecutor(str(namespace))
    if kind == "lab":
        ns = namespace or _lab_namespace(dut)
        if not ns:
            raise ConfigError(
                "cannot find the lab's DUT namespace: start the lab (natbench lab) or set access.namespace",
                field=field,
            )
        return NetnsExecutor(str(ns))
    if kind == "ssh":
        from natbench.duts.ssh import SshExecutor  # paramiko only when SSH is used

        host = a.get("host")
        if not host:
            raise ConfigError("access kind ssh needs 'host'", field=f"{field}.host")
        key = a.get("key")
        known = a.get("known_hosts")
        ssh = SshExecutor(
            str(host),
            user=a.get("user") or None,
            port=int(a.get("port") or 22),
            key=str(key) if key else None,
            known_hosts=str(known) if known else None,
            allow_unknown_host_key=bool(a.get("allow_unknown_host_key", False)),
            sudo=bool(a.get("sudo", False)),
            connect_timeout=float(a.get("connect_timeout") or 10.0),
            command_timeout=float(a.get("command_timeout") or 3600.0),
        )
        return NetnsExecutor(str(namespace), ssh) if namespace else ssh
    raise ConfigError(f"unknown access kind {kind!r} (ssh, local, netns, lab)", field=f"{field}.kind")


def _lab_namespace(dut: str) -> str | None:
    env = os.environ.get("NATBENCH_LAB_NETNS_" + re.sub(r"[^A-Za-z0-9]", "_", dut).upper()) or os.environ.get(
        "NATBENCH_LAB_NETNS"
    )
    if env:
        return env
    return _ask_lab("dut_namespace", dut)


def _ask_lab(function: str, dut: str) -> Any:
    """Call ``natbench.lab.<function>(dut)`` if the lab module is there (imported late: the DUT layer does not
    depend on the lab, which pulls in the software tester)."""
    try:
        lab = importlib.import_module("natbench.lab")
    except ImportError:
        return None
    fn = getattr(lab, function, None)
    return fn(dut) if callable(fn) else None


def build_duts(campaign: Any) -> RecipeDut | DutGroup:
    """The campaign's DUT: one :class:`RecipeDut`, or a :class:`DutGroup` for several (path order)."""
    testbed = _get(campaign, "testbed")
    specs = list(_get(testbed, "duts", None) or [])
    if not specs:
        raise ConfigError("the campaign names no DUT", field="testbed.duts")
    duts: list[RecipeDut] = []
    for i, spec in enumerate(specs):
        name = str(_get(spec, "name", None) or f"dut{i}")
        recipe_name = _get(spec, "recipe")
        if not recipe_name:
            raise ConfigError("every DUT needs a recipe", field=f"testbed.duts[{i}].recipe")
        recipe = load_recipe(recipe_reference(str(recipe_name), _get(campaign, "file")))
        access = _get(spec, "access")
        executor = build_executor(access, dut=name)
        params = dict(_get(spec, "params", None) or {})
        if _get(access, "kind") == "lab" and "host_settings" in recipe.params:
            # the lab's DUT namespace shares this kernel: its global conntrack settings are the DUT's
            params.setdefault("host_settings", True)
        in_lab = _get(access, "kind") == "lab"
        duts.append(
            RecipeDut(
                name,
                recipe,
                executor,
                params,
                fixed_cores=_get(spec, "cores"),
                cpu_order=_ask_lab("dut_cpu_order", name) if in_lab else None,
                own_cpus=_ask_lab("dut_own_cpus", name) if in_lab else None,
            )
        )
    if len(duts) == 1:
        return duts[0]
    return DutGroup(duts)


def dut_facts(dut: Any) -> dict[str, dict[str, Any]]:
    """``{name: facts}`` for a RecipeDut or a DutGroup (the shape of run.json's ``duts``)."""
    if isinstance(dut, DutGroup):
        return dut.facts()
    if isinstance(dut, RecipeDut):
        return {dut.name: dut.facts()}
    return {"dut": dict(dut.facts())}
