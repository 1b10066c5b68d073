"""Campaigns: the YAML schema, loading with line-numbered errors, and sweep expansion.

>>> from natbench.campaign import load_campaign
>>> c = load_campaign("campaigns/seed000-fig2-iptables-cores.yaml")   # doctest: +SKIP
>>> [p.label for p in c.points()]                                        # doctest: +SKIP
['iptables-1c-4M', 'iptables-2c-4M', 'iptables-4c-4M', 'iptables-8c-4M', 'iptables-16c-4M']
"""

from natbench.campaign.estimate import Estimate, PointEstimate, estimate
from natbench.campaign.model import Campaign, load_campaign, parse_campaign
from natbench.campaign.recipes import RecipeCheck, check_recipes
from natbench.campaign.schema import (
    METRIC_NAMES,
    SCHEMA_VERSION,
    CampaignSpec,
    DutRole,
    DutSpec,
    MetricsSpec,
    SweepSpec,
    TestbedSpec,
    TesterSpec,
    TrafficSpec,
)
from natbench.metrics import MetricSettings, SearchSettings
from natbench.values import format_count, parse_count, parse_number, parse_port_range

__all__ = [
    "METRIC_NAMES",
    "SCHEMA_VERSION",
    "Campaign",
    "CampaignSpec",
    "DutRole",
    "DutSpec",
    "Estimate",
    "MetricSettings",
    "MetricsSpec",
    "PointEstimate",
    "RecipeCheck",
    "SearchSettings",
    "SweepSpec",
    "TestbedSpec",
    "TesterSpec",
    "TrafficSpec",
    "check_recipes",
    "estimate",
    "format_count",
    "load_campaign",
    "parse_campaign",
    "parse_count",
    "parse_number",
    "parse_port_range",
]
