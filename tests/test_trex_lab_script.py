"""bench/fast_search_lab.py --tester trex without a lab: the TRex variant of a lab campaign (tester, DUT access,
NAT, responder mode) is a valid campaign that differs in the testbed only, and the lab comes from the environment,
a missing variable named."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import yaml

import natbench

ROOT = Path(__file__).resolve().parents[1]
RATE_LIMIT = ROOT / "campaigns" / "lab-rate-limit.yaml"
ENV = {
    "NATBENCH_TREX": "127.0.0.1",
    "NATBENCH_TREX_PRIVATE_MAC": "02:00:00:00:bb:01",
    "NATBENCH_TREX_PUBLIC_MAC": "02:00:00:00:bb:02",
    "NATBENCH_TREX_DUT_NETNS": "dut-nb1",
    "NATBENCH_TREX_DUT_IFS": "du0-nb1,du1-nb1",
    "NATBENCH_TREX_SOFTWARE": "1",
    "NATBENCH_TREX_NETNS": "trex-nb1",
}


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_fast_search_lab_trex", ROOT / "bench" / "fast_search_lab.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


lab = _bench()


def test_the_trex_variant_is_the_same_campaign_with_the_trex_tester(tmp_path: Path) -> None:
    trex = lab.TRexLab.from_env(ENV)
    path, kept = lab.variant(RATE_LIMIT, "fast", tmp_path, repetitions=10, trex=trex)
    plain, _ = lab.variant(RATE_LIMIT, "fast", tmp_path, repetitions=10)
    assert path != plain and kept == ["cps", "throughput"]
    data, base = yaml.safe_load(path.read_text()), yaml.safe_load(plain.read_text())
    assert data["testbed"]["tester"] == {
        "kind": "trex",
        "settings": {
            "server": "127.0.0.1",
            "private_dst_mac": "02:00:00:00:bb:01",
            "public_dst_mac": "02:00:00:00:bb:02",
            "software": True,
        },
    }
    (dut,) = data["testbed"]["duts"]
    assert dut["access"] == {"kind": "netns", "namespace": "dut-nb1"}
    limits = {k: dut["params"][k] for k in ("limit_pps", "limit_cps", "limit_burst")}
    assert limits == {"limit_pps": 20_000, "limit_cps": 8_000, "limit_burst": 1_000}  # the DUT's known ceilings
    assert (dut["params"]["private_if"], dut["params"]["public_if"], dut["params"]["nat"]) == (
        "du0-nb1",
        "du1-nb1",
        "masquerade",
    )
    assert data["traffic"].pop("responder") == "compute" and "responder" not in base["traffic"]
    assert data["metrics"] == base["metrics"] and data["traffic"] == base["traffic"]  # searches and traffic alike
    campaign = natbench.campaign.load_campaign(path)  # a valid campaign
    assert campaign.testbed.tester.kind == "trex" and campaign.responder_mode.value == "compute"
    assert lab.known_ceiling(path, "throughput") == lab.known_ceiling(RATE_LIMIT, "throughput") == 20_100


def test_the_trex_run_goes_where_the_server_is_reachable() -> None:
    trex = lab.TRexLab.from_env(ENV)
    assert trex.command(["natbench", "run"]) == ["ip", "netns", "exec", "trex-nb1", "natbench", "run"]
    here = lab.TRexLab.from_env({k: v for k, v in ENV.items() if k != "NATBENCH_TREX_NETNS"})
    assert here.client_netns is None and here.command(["natbench", "run"]) == ["natbench", "run"]


@pytest.mark.parametrize("name", ["NATBENCH_TREX", "NATBENCH_TREX_PRIVATE_MAC", "NATBENCH_TREX_DUT_IFS"])
def test_a_missing_variable_is_named(name: str) -> None:
    with pytest.raises(SystemExit, match=name):
        lab.TRexLab.from_env({k: v for k, v in ENV.items() if k != name})


def test_the_dut_interfaces_must_be_two() -> None:
    with pytest.raises(SystemExit, match="private_if,public_if"):
        lab.TRexLab.from_env(dict(ENV, NATBENCH_TREX_DUT_IFS="du0-nb1"))
    assert lab.TRexLab.from_env(dict(ENV, NATBENCH_TREX_SOFTWARE="0")).software is False
