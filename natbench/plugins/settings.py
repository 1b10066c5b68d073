"""The bases of a backend's settings model: what every tester kind's and every access kind's settings have.

A backend owns one pydantic model of its settings (``testbed.tester.settings`` of a tester kind, the
``access`` mapping of a DUT access kind) with every default. The campaign schema validates a campaign's
section with the model of the kind it names, looked up in the registry when the campaign is validated,
so the resolved campaign a run stores holds every default, and docs/campaign-schema.md documents each
registered kind. A model holds what can be checked anywhere; what depends on this machine (a CPU's
availability, an interface's MAC address) is the backend's ``check()``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import Field, ValidationError

from natbench.config.model import SchemaModel
from natbench.config.validation import first_error, validation_error
from natbench.errors import ConfigError
from natbench.traffic.plan import ResponderMode

M = TypeVar("M", bound=SchemaModel)

DEFAULT_RATE_TOLERANCE = 0.001
"""The achieved-rate tolerance of a tester kind that names none of its own (and of a run built by hand)."""
TESTER_SETTINGS: tuple[str, ...] = ("testbed", "tester", "settings")
"""Where a tester kind's settings sit in a campaign."""


class TesterSettings(SchemaModel):
    """Base of every tester kind's settings model (the campaign's ``testbed.tester.settings``)."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    default_responder: ClassVar[ResponderMode] = ResponderMode.READ
    """How public -> private tuples are known when the campaign's ``traffic.responder`` names no mode and the
    family translates: ``read`` (from the DUT, through its recipe) unless the tester can learn them itself."""

    rate_tolerance: float = Field(default=DEFAULT_RATE_TOLERANCE, ge=0, lt=1)
    """Relative shortfall of the achieved rate that still counts as keeping the intended rate: the tester's own
    check and the engine's judgement of every trial of the run."""


@dataclass(frozen=True)
class DutMachine:
    """What a DUT's access kind knows, before anything runs, of the machine the DUT runs on (``natbench plan``'s
    memory check)."""

    memory: int | None = None
    """Its memory in bytes (None: the access does not say; ``duts[].memory`` may)."""
    shares_host: bool = False
    """The DUT runs on this machine's kernel (a namespace of the local lab): its memory and the sizes of its slab
    caches are this host's."""


class AccessSettings(SchemaModel):
    """Base of every DUT access kind's model (the campaign's ``testbed.duts[].access``)."""

    kind: str
    """The access kind (a subclass narrows it to its own name with a ``Literal``)."""

    def machine(self) -> DutMachine:
        """What this access knows of the DUT's machine (by default: nothing)."""
        return DutMachine()


def validated(
    model: type[M],
    data: Mapping[str, Any],
    *,
    where: Sequence[str | int] = TESTER_SETTINGS,
    locate: Callable[[Sequence[str | int], str], ConfigError] | None = None,
) -> M:
    """``data`` validated with a backend's ``model`` outside a campaign (a test, a bench script, a backend given
    a plain mapping); the first problem is one ConfigError naming ``<where>.<field>`` and, through ``locate``
    (a campaign's ``error_at``), the file and line."""
    try:
        return model.model_validate(dict(data))
    except ValidationError as exc:
        if locate is None:
            raise validation_error(exc, model=model, prefix=where) from None
        loc, message = first_error(exc, model=model)
        raise locate((*where, *loc), message) from None
