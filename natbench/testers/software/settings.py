"""The settings of the built-in software tester (``testbed.tester.settings`` of ``kind: software``).

Every default lives here, so a run's stored campaign.yaml holds them; the receive ``timeout`` alone is
derived (None: the campaign's longest metric ``timeout``). What depends on this machine (whether the
``cpus`` are available to natbench, an interface's MAC address) is checked by the backend
(:mod:`natbench.testers.software.backend`), not here: a stored campaign is validated again on other hosts.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, Field, field_validator

from natbench.config.model import SchemaModel
from natbench.plugins import TesterSettings
from natbench.traffic.enumeration import EnumerationOrder
from natbench.traffic.plan import ResponderMode
from natbench.values import MAX_WAIT_SECONDS

_MAC = r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$"


class PortSettings(SchemaModel):
    """One tester port named in the settings (a software tester without a lab)."""

    interface: str = Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x20\x7f/]+$")
    """The interface (as seen inside ``netns``)."""
    peer_mac: str = Field(pattern=_MAC)
    """MAC address of the DUT interface on this link (destination of the frames)."""
    mac: str | None = Field(default=None, pattern=_MAC)
    """MAC address of the tester interface (None: read from the interface when the tester is built)."""
    netns: str | None = Field(default=None, min_length=1)
    """Network namespace of the interface (a name under /run/netns or a path; None: natbench's own)."""


def _one_cpu_is_a_list(value: Any) -> Any:
    return [value] if isinstance(value, int) and not isinstance(value, bool) else value


class SoftwareSettings(TesterSettings):
    """The settings of ``testbed.tester.kind: software`` (the built-in AF_PACKET tester).

    Its ``rate_tolerance`` is the largest accepted lateness of a trial's last frame, relative to the trial's
    intended duration.
    """

    default_responder: ClassVar[ResponderMode] = ResponderMode.LEARN
    """The software tester learns the translated tuples in phase 1 (responder mode ``learn``)."""

    initiator: PortSettings | None = None
    """The Initiator port (private side) when no lab DUT hands the tester its ports."""
    responder: PortSettings | None = None
    """The Responder port (public side) when no lab DUT hands the tester its ports."""
    cpus: Annotated[list[Annotated[int, Field(ge=0)]] | None, BeforeValidator(_one_cpu_is_a_list)] = Field(
        default=None, min_length=1, max_length=4096
    )
    """The tester's CPUs, distinct and available to natbench (one lane each, at most two used; a lab sets them
    aside for the tester); None: the lab's choice, else any."""
    lab: str | None = Field(default=None, min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")
    """The local lab's name, for DUTs reached through it (None: one of the run's own, taken down afterwards)."""
    keep_lab: bool = False
    """Leave a lab the testbed brought up in place after the run."""
    timeout: float | None = Field(default=None, ge=0, le=MAX_WAIT_SECONDS)
    """Seconds to keep receiving after the last frame was sent (None: the campaign's longest metric
    ``timeout``; the engine passes each metric's own before every trial)."""
    lateness_slack: float = Field(default=0.0005, ge=0)
    """Lateness (s) of a trial's last frame always accepted, for very short trials (scheduler wake-up jitter)."""
    max_stall: float = Field(default=0.002, ge=0)
    """Longest moment behind schedule (s) that is no deviation; beyond it (and beyond one batch) the trial
    records the backlog as a clump of its direction, weighed against the DUT's loss."""
    catchup: float = Field(default=2.0, ge=1, le=1000)
    """After falling behind (a stall), the backlog goes out at most at this multiple of the rate, never as one
    line-rate burst into the DUT."""
    realtime: bool = True
    """Run the data path as SCHED_FIFO (when permitted) so other processes cannot preempt it."""
    rcvbuf: int = Field(default=64 << 20, ge=0, le=2**31 - 1)
    """Receive socket buffer of each port in bytes."""
    enumeration: EnumerationOrder = EnumerationOrder.FEISTEL
    """Phase-1 order of the (source, destination) pairs: ``feistel`` (all pairs permuted) or ``product`` (the
    order of runs made before it, and of TRex)."""

    @field_validator("cpus")
    @classmethod
    def _distinct(cls, v: list[int] | None) -> list[int] | None:
        if v is not None and len(set(v)) != len(v):
            raise ValueError(f"cpus lists a CPU twice: {v}")
        return v
