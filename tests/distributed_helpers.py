"""Helpers of the distributed-run tests: a small campaign, fake testbeds, and a worker process serving one.

Run as a script (``python tests/distributed_helpers.py SCHEDULER NAME CLASS``) it is a worker process whose
testbed is a :mod:`natbench.testing` fake, so that a test can kill it (SIGKILL) in the middle of a point.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "campaigns" / "quickstart.yaml"


def small_campaign(tmp_path: Path, testbed_class: str = "fake-x", repetitions: int = 2) -> Path:
    """The quickstart reduced to 4 points (4k, 8k, 16k, 32k connections) x cps, ``repetitions`` each."""
    data = yaml.safe_load(QUICKSTART.read_text())
    data["name"] = "dist"
    data["output"] = "results/dist"  # a campaign names a relative output; the tests give run directories explicitly
    data["testbed"]["name"] = "any"
    data["testbed"]["class"] = testbed_class
    data["sweep"] = {"zip": {"src_ports": [400, 800, 1600, 3200], "dst_ports": [10, 10, 10, 10]}}
    data["metrics"] = {"cps": {**data["metrics"]["cps"], "repetitions": repetitions, "error": "20k"}}
    path = tmp_path / "dist.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def fake_build(campaign: Any) -> Any:
    """A fake testbed (every worker gets the same modelled DUT: results depend on the point only); its DUT declares
    rows as a recipe DUT does (a workers' message carries them to the run directory)."""
    from natbench.plugins import DutDeclarations, SlabCache, TableParam
    from natbench.testbed import Testbed
    from natbench.testing import FakeDut, FakeModel, FakeTester

    class DeclaringDut(FakeDut):
        def declarations(self) -> dict[str, DutDeclarations]:
            slab = SlabCache("conntrack_slab", "nf_conntrack", "conntrack slab / conn. (B)")
            return {
                "fake": DutDeclarations(
                    TableParam("conntrack_max", "conntrack t. s.", "c.t.s/num.conn."), None, (slab,)
                )
            }

    dut = DeclaringDut(FakeModel(cps=150_000, forwarding=120_000))
    return Testbed(FakeTester(dut), dut)


def owned(name: str, testbed_class: str) -> Any:
    """An OwnedTestbed with a fake build (its section: the quickstart's, never built)."""
    from natbench.run.remote import OwnedTestbed

    section = yaml.safe_load(QUICKSTART.read_text())["testbed"]
    return OwnedTestbed(name, testbed_class, {**section, "name": name, "class": testbed_class}, build=fake_build)


if __name__ == "__main__":
    from natbench.cli.worker import serve_worker

    scheduler, name, klass = sys.argv[1:4]
    serve_worker(scheduler, owned(name, klass))
