"""Local labs natbench builds on this machine and hands to the tester and DUT factories.

:class:`NetnsLab` (:mod:`~natbench.testbed.lab.netns`) puts the DUT and the tester in network
namespaces joined by veth pairs; :mod:`~natbench.testbed.lab.inventory` finds the labs on this
host and removes stale ones; :mod:`~natbench.testbed.lab.host` holds what every lab needs from
the host (commands, locks, the state directory). A lab is a
:class:`~natbench.plugins.LabResource`; :class:`VmLab`
(:mod:`~natbench.testbed.lab.vm`) is the other one beside the namespace lab: its DUT is a QEMU
VM booted from an image :mod:`~natbench.testbed.lab.vm_image` builds from Debian's packages (and, for
``jool-mapt``, from a Jool source taken within the limits of :mod:`~natbench.testbed.lab.source_tree`).
The lab owns its DUT access kind ``lab`` (:mod:`~natbench.testbed.lab.access`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from natbench.testbed.lab.host import LabError as LabError
    from natbench.testbed.lab.inventory import (
        find_labs as find_labs,
    )
    from natbench.testbed.lab.inventory import (
        list_labs as list_labs,
    )
    from natbench.testbed.lab.inventory import (
        recorded_lab as recorded_lab,
    )
    from natbench.testbed.lab.inventory import (
        remove_stale_labs as remove_stale_labs,
    )
    from natbench.testbed.lab.inventory import (
        stale_labs as stale_labs,
    )
    from natbench.testbed.lab.netns import NetnsLab as NetnsLab
    from natbench.testbed.lab.netns import lab_problems as lab_problems
    from natbench.testbed.lab.vm import VmLab as VmLab
    from natbench.testbed.lab.vm import VmSettings as VmSettings

_HOME = {
    "LabError": "host",
    "find_labs": "inventory",
    "list_labs": "inventory",
    "recorded_lab": "inventory",
    "remove_stale_labs": "inventory",
    "stale_labs": "inventory",
    "NetnsLab": "netns",
    "lab_problems": "netns",
    "VmLab": "vm",
    "VmSettings": "vm",
}
"""The module of each name this package offers; imported on first use, so that importing one light module of the
lab (its access kind, which validating a campaign loads) does not import them all."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
