"""natbench NAT44 phase 2 as a TRex STL profile; tunables: `-t --help` lists them (natbench must be importable)."""

from natbench.testers.trex.profile import NatbenchProfile, register_profile


def register() -> NatbenchProfile:
    """TRex profile entry point."""
    return register_profile("nat44", 2)
