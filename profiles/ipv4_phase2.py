"""natbench IPv4 forwarding (no translation) phase 2 as a TRex STL profile; `-t --help` lists the tunables."""

from natbench.testers.trex.profile import NatbenchProfile, register_profile


def register() -> NatbenchProfile:
    """TRex profile entry point."""
    return register_profile("ipv4", 2)
