"""Two real testbeds on this machine (two namespace labs, iptables NAT44, the software tester), each owned by a
``natbench worker`` process, measure one small campaign through ``natbench run --scheduler`` into one run
directory. Marker ``lab``: run it under the lab lock."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

pytest.importorskip("distributed", reason="Dask distributed is not installed (pip install 'natbench[distributed]')")

from distributed import Client, LocalCluster
from lab_helpers import need_lab

from natbench.run.reader import RunDirectory

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "campaigns" / "quickstart.yaml"

pytestmark = pytest.mark.lab

NO_EXTRAS = ("--no-progress", "--no-parquet")


def _netns() -> str:
    return subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False).stdout


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    with LocalCluster(n_workers=0, processes=False, dashboard_address=None, protocol="tcp", host="127.0.0.1") as c:
        yield c


def test_two_namespace_lab_testbeds_measure_one_campaign_into_one_run_directory(
    tmp_path: Path, cluster: LocalCluster
) -> None:
    need_lab()
    tag = secrets.token_hex(3)
    quick = yaml.safe_load(QUICKSTART.read_text())
    files = {}
    for name in ("a", "b"):
        section = dict(quick["testbed"])
        section.pop("monitor_interval", None)
        # each worker brings up a lab of its own: namespaces nb-dist<tag><name>-tester / -dut
        section.update(name=f"ns-{name}", **{"class": "ns-iptables"})
        section["tester"] = {"kind": "software", "settings": {"lab": f"dist{tag}{name}"}}
        files[name] = tmp_path / f"tb-{name}.yaml"
        files[name].write_text(yaml.safe_dump(section, sort_keys=False))
    campaign = dict(quick)
    campaign["name"] = "dist-lab"
    campaign["testbed"] = {**quick["testbed"], "name": "any", "class": "ns-iptables"}
    campaign["sweep"] = {"zip": {"src_ports": [100, 200, 300, 400], "dst_ports": [10, 10, 10, 10]}}
    # one short cps search per point: 0..20k, stop at 10k wide (one step, at 10k: with two testbeds' testers and
    # DUTs sharing two CPUs a step at 20k was now and then lost to preemption, leaving a point without a passing rate)
    campaign["metrics"] = {"cps": {**quick["metrics"]["cps"], "repetitions": 1, "upper": "20k", "error": "10k"}}
    path = tmp_path / "dist-lab.yaml"
    path.write_text(yaml.safe_dump(campaign, sort_keys=False))

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    address = cluster.scheduler_address
    workers = {
        n: subprocess.Popen(
            [sys.executable, "-m", "natbench", "worker", address, "--testbed", str(f)],
            env=env,
            stderr=subprocess.DEVNULL,
        )
        for n, f in files.items()
    }
    out = tmp_path / "run"
    try:
        with Client(cluster, set_as_default=False) as client:
            client.wait_for_workers(2, timeout=60)
        proc = subprocess.run(
            [sys.executable, "-m", "natbench", "run", str(path), "--scheduler", address, "-o", str(out), *NO_EXTRAS],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        for w in workers.values():
            w.send_signal(signal.SIGTERM)  # the worker closes its testbed: its lab comes down
        for w in workers.values():
            w.wait(timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = RunDirectory.open(out)
    assert run.status == "complete"
    results = Counter((r.point_id, r.metric, r.repetition) for r in run.results())
    assert len(results) == 4 and set(results.values()) == {1}  # 4 points x cps x 1 repetition
    assert all(r.value is not None and r.value > 0 for r in run.results())
    trials = run.trials()
    assert trials and {t.extra["testbed"] for t in trials} <= {"ns-a", "ns-b"}
    by_point = run.meta.point_testbeds
    assert all(by_point[t.point_id] == (t.extra["testbed"],) for t in trials)
    assert {n for names in by_point.values() for n in names} == {"ns-a", "ns-b"}  # both testbeds measured
    # each testbed's DUT facts are stored per point, and its tester's facts under its name
    assert sorted(run.meta.point_facts) == sorted(p.id for p in run.points)
    assert set(run.meta.testbeds) == {"ns-a", "ns-b"}
    # the printed tables carry the testbed row
    assert any(line.startswith("testbed ") for line in proc.stdout.splitlines())
    # both labs were taken down when their workers closed
    assert f"dist{tag}" not in _netns()
