"""Local labs natbench builds on this machine and hands to the tester and DUT factories.

:class:`NetnsLab` (:mod:`~natbench.testbed.lab.netns`) puts the DUT and the tester in network
namespaces joined by veth pairs; :mod:`~natbench.testbed.lab.inventory` finds the labs on this
host and removes stale ones; :mod:`~natbench.testbed.lab.host` holds what every lab needs from
the host (commands, locks, the state directory). A lab is a
:class:`~natbench.plugins.LabResource`; :class:`VmLab`
(:mod:`~natbench.testbed.lab.vm`) is the other one beside the namespace lab: its DUT is a QEMU
VM booted from an image :mod:`~natbench.testbed.lab.vm_image` builds from Debian's packages.
The lab owns its DUT access kind ``lab`` (:mod:`~natbench.testbed.lab.access`).
"""

from natbench.testbed.lab.host import HOST_LOCK, LabError
from natbench.testbed.lab.inventory import (
    UNOWNED_GRACE,
    FoundLab,
    find_labs,
    list_labs,
    recorded_lab,
    remove_stale_labs,
    stale_labs,
)
from natbench.testbed.lab.netns import NetnsLab, dut_recipe_params, lab_problems
from natbench.testbed.lab.vm import VmLab, VmSettings

__all__ = [
    "HOST_LOCK",
    "UNOWNED_GRACE",
    "FoundLab",
    "LabError",
    "NetnsLab",
    "VmLab",
    "VmSettings",
    "dut_recipe_params",
    "find_labs",
    "lab_problems",
    "list_labs",
    "recorded_lab",
    "remove_stale_labs",
    "stale_labs",
]
