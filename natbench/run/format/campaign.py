"""``campaign.yaml`` of a run: the resolved campaign as stored, or an experiment session's record.

Reports need three things from it without the campaign schema of the version that reads it (a run outlives
its schema): whether it records an experiment session, the traffic family, and the acceptances. A file
that does not parse (or a missing one) gives none of them: the report then says less, it does not fail.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from natbench.config.source import YamlLimitError, load_yaml_data
from natbench.errors import ConfigError
from natbench.run.format.files import EXPERIMENT_KIND


class NestingError(ValueError):
    """campaign.yaml is beyond the limits of natbench's YAML reader (nested deeper than any campaign, an alias bomb,
    a value that contains itself): the message says which."""


@dataclass(frozen=True)
class StoredCampaign:
    """A run's campaign.yaml as stored, with the few facts reports read from it."""

    text: str
    """The file's text ("" when the run directory has none)."""
    readable: bool = False
    """True when the text is a YAML mapping (a campaign, or an experiment session's record)."""
    kind: str | None = None
    """The top-level ``kind`` (:data:`~natbench.run.format.files.EXPERIMENT_KIND` for an experiment session)."""
    family: str | None = None
    """``traffic.family`` (nat44, nat64, ipv4, ipv6); None when not stated."""
    traffic_acceptance: float | None = None
    """``traffic.acceptance`` (None: not stated, the schema's 0)."""
    metric_acceptance: dict[str, float] = field(default_factory=dict)
    """``metrics.<name>.acceptance`` where stated."""
    metric_repetitions: dict[str, int] = field(default_factory=dict)
    """``metrics.<name>.repetitions`` where stated (a campaign's plan; an experiment session states none)."""

    @classmethod
    def parse(cls, text: str) -> StoredCampaign:
        """Read ``text`` leniently: what cannot be read is None; :class:`NestingError` when it is beyond the limits
        of natbench's YAML reader (:func:`~natbench.config.source.load_yaml_data`: nested deeper than any campaign,
        an alias bomb, a value that contains itself; natbench never writes such a file, so it is damage)."""
        try:
            data = load_yaml_data(text, max_values=None) if text else None
        except YamlLimitError as exc:
            raise NestingError(
                f"{exc.message} (a campaign nests a few)" if exc.limit == "depth" else exc.message
            ) from None
        except ConfigError:  # no YAML, or a value YAML cannot convert: a file that says nothing
            return cls(text)
        if not isinstance(data, dict):
            return cls(text)
        traffic = data.get("traffic")
        traffic = traffic if isinstance(traffic, dict) else {}
        metrics = data.get("metrics")
        accepted: dict[str, float] = {}
        repetitions: dict[str, int] = {}
        for name, section in (metrics if isinstance(metrics, dict) else {}).items():
            value = _number(section.get("acceptance")) if isinstance(section, dict) else None
            if value is not None:
                accepted[str(name)] = value
            count = section.get("repetitions") if isinstance(section, dict) else None
            if isinstance(count, int) and not isinstance(count, bool):
                repetitions[str(name)] = count
        family = traffic.get("family")
        kind = data.get("kind")
        return cls(
            text,
            readable=True,
            kind=None if kind is None else str(kind),
            family=None if family is None else str(family),
            traffic_acceptance=_number(traffic.get("acceptance")),
            metric_acceptance=accepted,
            metric_repetitions=repetitions,
        )

    @property
    def experiment_session(self) -> bool:
        """True when a pytest session or an experiment script wrote it."""
        return self.kind == EXPERIMENT_KIND

    def acceptance(self, metric: str, overrides: Mapping[str, Any] | None = None) -> float | None:
        """The loss ratio ``metric`` accepted: the point's override (``overrides``: the point's settings of
        ``metric``), else the metric's own, else ``traffic.acceptance`` (0 when unset, the schema's default);
        None without a readable campaign."""
        if not self.readable:
            return None
        own = _number((overrides or {}).get("acceptance"))
        if own is not None:
            return own
        if metric in self.metric_acceptance:
            return self.metric_acceptance[metric]
        return 0.0 if self.traffic_acceptance is None else self.traffic_acceptance


def _number(value: Any) -> float | None:
    """``value`` as a float when it is a number (not a boolean), else None."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
