"""Campaigns: the YAML schema, loading with line-numbered errors, and sweep expansion.

>>> from natbench.campaign import load_campaign
>>> c = load_campaign("campaigns/seed000-fig2-iptables-cores.yaml")   # doctest: +SKIP
>>> [p.label for p in c.points()]                                        # doctest: +SKIP
['iptables-1c-4M', 'iptables-2c-4M', 'iptables-4c-4M', 'iptables-8c-4M', 'iptables-16c-4M']
"""

from natbench.campaign.model import Campaign, load_campaign, parse_campaign

__all__ = [
    "Campaign",
    "load_campaign",
    "parse_campaign",
]
