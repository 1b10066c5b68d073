#!/usr/bin/env python3
"""The binary search, the fast search and MLRsearch on real lab DUTs, side by side: time and results.

Runs lab campaigns (real namespaces, kernel NAT, the built-in tester) once per algorithm with ``natbench run``, in
the same run of this script: ``algorithm: binary`` (the reference), ``fast`` and ``mlr`` for every search metric that
offers it (MLRsearch has no cps search: the ``mlr`` run measures the metrics that offer it only). It prints per
working point and metric the median of each, its distance from the known ceiling in errors where the campaign has
one, and per metric the time it took (the sum over its repetitions of first trial start to last trial end, fills
included), its trials and trial seconds (the sum of the stored trials' durations), then each run's wall time, with
the ratios of each algorithm to binary. Metrics that do not search (tear-down) are left out.

* ``campaigns/lab-rate-limit.yaml``: nftables NAT44 with enforced limits (20,000 pps per direction, 8,000 new
  connections/s, token bucket 1,000) far below the tester: every search must end in ``(ceiling - error, ceiling]``
  of the known ceilings (20,100 fps per direction for 10 s trials, 8,889 cps).
* ``campaigns/quickstart.yaml``: iptables NAT44 whose rates on a shared 2-CPU machine are bound by the tester's
  own ceiling, which moves with the machine's load: the runs measure that ceiling at different times.

``mlr`` runs MLRsearch with its default ``rfc2544`` preset (final trials of the metric's ``duration``, exceed ratio
0, initial trials of ``short_duration``) and, where the ceiling is known, a relative width of ``error / (ceiling +
error)``: its final width (relative to the upper bound) is then at most the other searches' ``error`` near the
ceiling (the preset's own ``error / upper`` would search 2.5 times finer on lab-rate-limit's range). ``--repetitions
N`` sets every kept metric's repetitions (the campaign's own: 5 for lab-rate-limit).

``--tester trex`` runs the same campaigns with the TRex tester (``--tester software --tester trex``: both, one
after the other in the same sitting, a table each) against a TRex server and a DUT namespace built as in
docs/trex.md section 8 (without that section's iptables SNAT rule: the campaign's recipe brings its own NAT), named
by the environment: ``NATBENCH_TREX`` (the server, ``host[:port]``), ``NATBENCH_TREX_PRIVATE_MAC`` /
``NATBENCH_TREX_PUBLIC_MAC`` (the DUT's interface MACs), ``NATBENCH_TREX_DUT_NETNS`` (the DUT's namespace),
``NATBENCH_TREX_DUT_IFS`` (``private_if,public_if`` in it), ``NATBENCH_TREX_SOFTWARE=1`` for a ``--software``
server, and ``NATBENCH_TREX_NETNS`` for the namespace the client must run in to reach the server (the section's
``trex-nb1``). The TRex variant differs from the campaign in the testbed only: ``kind: trex``, the DUT reached with
``access: {kind: netns}`` and ``nat: masquerade`` on the lab's own addresses, and ``responder: compute`` (TRex cannot
learn tuples; the kernel's NAT keeps the ports of these 10,000 connections).

Every run's line ends with the machine's load average (one minute) at its start and end.

Needs root (it builds the lab). Run directories are written under ``--workdir`` (a temporary directory unless
given) and kept there.

    # a smoke test: 2 repetitions (7 minutes on a busy 2-CPU machine: binary 209 s, fast 136 s, mlr 87 s)
    sudo .venv/bin/python bench/fast_search_lab.py --only lab-rate-limit --repetitions 2
    # the full comparison on a quiet machine, 10 repetitions of cps and throughput (about 30 minutes: binary
    # ~17 min, fast ~6 min, mlr ~8 min for throughput alone):
    sudo .venv/bin/python bench/fast_search_lab.py --only lab-rate-limit --repetitions 10 --workdir /tmp/nb-lab10
    # the same with TRex (lab and server of docs/trex.md section 8), the built-in tester's figures beside them
    sudo NATBENCH_TREX=127.0.0.1 NATBENCH_TREX_NETNS=trex-nb1 NATBENCH_TREX_SOFTWARE=1 \
        NATBENCH_TREX_PRIVATE_MAC=02:00:00:00:bb:01 NATBENCH_TREX_PUBLIC_MAC=02:00:00:00:bb:02 \
        NATBENCH_TREX_DUT_NETNS=dut-nb1 NATBENCH_TREX_DUT_IFS=du0-nb1,du1-nb1 \
        .venv/bin/python bench/fast_search_lab.py --only lab-rate-limit --repetitions 10 --tester software --tester trex
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import natbench  # noqa: E402
from natbench.campaign import load_campaign  # noqa: E402
from natbench.campaign.estimate import has_algorithm  # noqa: E402
from natbench.metrics.settings import SearchSettings  # noqa: E402
from natbench.report.load import Run  # noqa: E402

CAMPAIGNS = ("quickstart", "lab-rate-limit")
"""The campaign files (under campaigns/) compared by default."""
ALGORITHMS = ("binary", "fast", "mlr")
"""The reference first, then the fast search and MLRsearch."""
TESTERS = ("software", "trex")
"""The built-in tester (the lab's own namespaces) and a TRex server (``--tester trex``)."""


@dataclass(frozen=True)
class TRexLab:
    """Where ``--tester trex`` runs: a TRex server and the DUT's namespace (docs/trex.md section 8), from the
    environment (the module docstring names the variables)."""

    server: str
    """``NATBENCH_TREX``: the server's RPC address."""
    private_mac: str
    """``NATBENCH_TREX_PRIVATE_MAC``: the DUT's private interface MAC (behind TRex port 0)."""
    public_mac: str
    """``NATBENCH_TREX_PUBLIC_MAC``: the DUT's public interface MAC (behind TRex port 1)."""
    dut_netns: str
    """``NATBENCH_TREX_DUT_NETNS``: the DUT's network namespace."""
    private_if: str
    """The DUT's private interface (first of ``NATBENCH_TREX_DUT_IFS``)."""
    public_if: str
    """The DUT's public interface (second of ``NATBENCH_TREX_DUT_IFS``)."""
    software: bool = False
    """``NATBENCH_TREX_SOFTWARE=1``: the server runs ``--software``."""
    client_netns: str | None = None
    """``NATBENCH_TREX_NETNS``: the namespace ``natbench run`` must run in to reach the server (None: here)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> TRexLab:
        """The lab the environment names; SystemExit naming the first variable missing or malformed."""
        names = ("NATBENCH_TREX", "NATBENCH_TREX_PRIVATE_MAC", "NATBENCH_TREX_PUBLIC_MAC", "NATBENCH_TREX_DUT_NETNS")
        missing = [n for n in (*names, "NATBENCH_TREX_DUT_IFS") if not env.get(n)]
        if missing:
            sys.exit(f"--tester trex: {missing[0]} is not set (bench/fast_search_lab.py's docstring names them all)")
        ifs = env["NATBENCH_TREX_DUT_IFS"].split(",")
        if len(ifs) != 2 or not all(ifs):
            sys.exit("--tester trex: NATBENCH_TREX_DUT_IFS must be private_if,public_if (two interface names)")
        server, private, public, netns = (env[n] for n in names)
        software = env.get("NATBENCH_TREX_SOFTWARE") == "1"
        return cls(server, private, public, netns, ifs[0], ifs[1], software, env.get("NATBENCH_TREX_NETNS") or None)

    def apply(self, data: dict[str, Any]) -> None:
        """Turn the campaign ``data`` (a lab campaign) into the same campaign with TRex: the tester, the DUT's
        access and interfaces, NAT to the public interface's address, compute responder mode."""
        data["testbed"]["tester"] = {
            "kind": "trex",
            "settings": {
                "server": self.server,
                "private_dst_mac": self.private_mac,
                "public_dst_mac": self.public_mac,
                "software": self.software,
            },
        }
        for dut in data["testbed"]["duts"]:
            dut["access"] = {"kind": "netns", "namespace": self.dut_netns}
            dut["params"] = {**dut.get("params", {}), "private_if": self.private_if, "public_if": self.public_if}
            dut["params"]["nat"] = "masquerade"
        data["traffic"]["responder"] = "compute"

    def command(self, cmd: list[str]) -> list[str]:
        """``cmd`` run where the server is reachable (inside :attr:`client_netns` when given)."""
        return ["ip", "netns", "exec", self.client_netns, *cmd] if self.client_netns else cmd


def variant(
    source: Path, algorithm: str, out: Path, repetitions: int | None = None, trex: TRexLab | None = None
) -> tuple[Path, list[str]]:
    """A copy of the campaign at ``source`` with ``algorithm`` for every search metric that offers it (the others
    left out), ``repetitions`` for each when given, and for ``mlr`` a relative width of ``error / (known ceiling +
    error)`` where the ceiling is known, with the TRex tester of ``trex`` when given; returns the file and the
    metrics it kept."""
    campaign = load_campaign(source)
    data: dict[str, Any] = yaml.safe_load(source.read_text())
    kept: list[str] = []
    for name in list(data["metrics"]):
        settings = campaign.metrics[name]
        if has_algorithm(settings, algorithm) and has_algorithm(settings, "binary"):
            section = data["metrics"][name]
            section["algorithm"] = algorithm
            if repetitions is not None:
                section["repetitions"] = repetitions
            known = known_ceiling(source, name)
            if algorithm == "mlr" and known is not None and isinstance(settings, SearchSettings):
                width = float(settings.error) / (known + float(settings.error))
                section["mlr"] = {"preset": "rfc2544", "relative_width": width}
            kept.append(name)
        else:
            del data["metrics"][name]
    data.pop("output", None)
    if trex is not None:
        trex.apply(data)
    path = out / f"{source.stem}-{'trex-' if trex is not None else ''}{algorithm}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path, kept


def run(campaign: Path, run_dir: Path, trex: TRexLab | None = None) -> float:
    """``natbench run`` of ``campaign`` into ``run_dir`` (where the TRex server is reachable, with ``trex``); its
    wall time in seconds. Prints the load average before and after."""
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "natbench", "run", str(campaign), "-o", str(run_dir), "--no-progress"]
    load0 = os.getloadavg()[0]
    proc = subprocess.run(trex.command(cmd) if trex else cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"natbench run {campaign.name} failed (exit {proc.returncode}):\n{proc.stderr[-2000:]}")
    took = time.monotonic() - t0
    print(f"  {campaign.stem}: {took:,.1f} s, load average {load0:.2f} -> {os.getloadavg()[0]:.2f}", flush=True)
    return took


def known_ceiling(campaign_file: Path, metric: str) -> float | None:
    """The rate per direction a full trial of ``metric`` passes at most on a DUT with the nftables-nat44 recipe's
    calibration limits (None without them): throughput ``limit_pps + limit_burst / duration`` (the token bucket
    holds ``limit_burst`` packets and refills at ``limit_pps``), cps ``limit_cps x N / (N - limit_burst)`` for a
    phase 1 of N connections."""
    campaign = load_campaign(campaign_file)
    params = campaign.testbed.duts[0].params
    burst = float(params.get("limit_burst", 100))
    point = campaign.points()[0]
    settings = campaign.settings_for(point, metric)
    if metric == "throughput" and params.get("limit_pps"):
        return float(params["limit_pps"]) + burst / float(getattr(settings, "duration", 60.0))
    if metric == "cps" and params.get("limit_cps"):
        n = campaign.traffic_plan(point).connections
        return float(params["limit_cps"]) * n / (n - burst)
    return None


@dataclass
class MetricCost:
    """What one metric of one run cost."""

    seconds: float = 0.0
    """Sum over its repetitions of first trial start to last trial end (fills included)."""
    trials: int = 0
    """Stored trials (fills included)."""
    trial_seconds: float = 0.0
    """Sum of the stored trials' durations (traffic time)."""
    short: int = 0
    """Short trials (fast: narrowing and probes; mlr: shorter than the final trial duration)."""
    stopped: int = 0
    """Full trials the tester ended early because they had failed (fast: ``stop_failed``)."""
    values: dict[str, list[float]] = field(default_factory=dict)
    """Point id -> the repetitions' values (per direction)."""
    error: dict[str, Any] = field(default_factory=dict)
    """Point id -> the median of the repetitions' final widths (``error``)."""


def costs(r: Run) -> dict[str, MetricCost]:
    """Per metric: time, trials, trial seconds, short trials and the values (per direction) of ``r``."""
    out: dict[str, MetricCost] = {}
    for metric, rows in r.trials.groupby("metric", observed=True):
        c = out.setdefault(str(metric), MetricCost())
        per_rep = rows.groupby(["point_id", "repetition"], observed=True)
        c.seconds = float((per_rep["ended_at"].max() - per_rep["started_at"].min()).sum())
        c.trials = len(rows)
        c.trial_seconds = float(sum(float(e.get("duration") or 0.0) for e in rows["extra"]))
        c.short = sum(1 for e in rows["extra"] if e.get("search_trial") == "short")
        c.stopped = sum(1 for e in rows["extra"] if e.get("stopped"))
    for row in r.results.to_dict("records"):
        c = out.setdefault(str(row["metric"]), MetricCost())
        pid = str(row["point_id"])
        if row["value"] == row["value"]:  # NaN: no value (failed, or no passing rate)
            c.values.setdefault(pid, []).append(float(row["value"]))
        if row["error"] == row["error"]:
            c.error.setdefault(pid, []).append(float(row["error"]))
    for c in out.values():
        c.error = {pid: statistics.median(v) for pid, v in c.error.items()}
    return out


def compare(
    name: str, workdir: Path, repetitions: int | None = None, again: bool = False, trex: TRexLab | None = None
) -> None:
    """Run campaign ``name`` with each algorithm (with the TRex tester of ``trex`` when given, else the built-in
    one) and print the comparison; ``again``: run binary a second time after the others, as the yardstick of how
    well the campaign reproduces at all."""
    source = ROOT / "campaigns" / f"{name}.yaml"
    tag = f"{name}-trex" if trex is not None else name
    wall: dict[str, float] = {}
    cost: dict[str, dict[str, MetricCost]] = {}
    kept: dict[str, list[str]] = {}
    for alg in ALGORITHMS:
        path, kept[alg] = variant(source, alg, workdir, repetitions, trex)
        run_dir = workdir / f"{tag}-{alg}"
        wall[alg] = run(path, run_dir, trex)
        cost[alg] = costs(natbench.load(run_dir))
    tester = "trex" if trex is not None else "software"
    print(f"\n{name} ({tester} tester): " + "; ".join(f"{alg}: {', '.join(kept[alg])}" for alg in ALGORITHMS))
    print(table(source, cost, wall))
    if again:
        path, _ = variant(source, "binary", workdir, repetitions, trex)
        run(path, workdir / f"{tag}-binary-again", trex)
        again_cost = costs(natbench.load(workdir / f"{tag}-binary-again"))
        agreed = total = 0
        for m, c in cost["binary"].items():
            for pid, vals in c.values.items():
                other = again_cost.get(m, MetricCost()).values.get(pid)
                if other:
                    total += 1
                    agreed += abs(statistics.median(other) - statistics.median(vals)) <= c.error.get(pid, 0.0)
        print(f"binary run again (the campaign's own reproducibility): {agreed} of {total} medians within the error")


def table(source: Path, cost: dict[str, dict[str, MetricCost]], wall: dict[str, float]) -> str:
    """The comparison's lines: per metric and point the medians and their distance from the known ceiling, per
    metric the costs, then the runs' wall times; ratios to binary."""
    algs = list(cost)
    lines = [f"{'':30}" + "".join(f"{a:>18}" for a in algs) + "".join(f"{a + '/binary':>14}" for a in algs[1:])]

    def row(label: str, cells: list[str], ratios: tuple[str, ...] | list[str] = ()) -> None:
        lines.append(f"{label:30}" + "".join(f"{c:>18}" for c in cells) + "".join(f"{r:>14}" for r in ratios))

    def ratio(values: list[float]) -> list[str]:
        return [f"{v / values[0]:.3f}" if values[0] else "-" for v in values[1:]]

    for m in cost["binary"]:
        known = known_ceiling(source, m)
        row(f"{m}" + (f" (known ceiling {known:,.0f})" if known else ""), ["" for _ in algs])
        subs = [cost[a].get(m) for a in algs]
        for pid in cost["binary"][m].values:
            meds = [statistics.median(s.values[pid]) if s and s.values.get(pid) else None for s in subs]
            row(f"  {pid[:10]} median", [f"{v:,.0f}" if v is not None else "-" for v in meds])
            err = cost["binary"][m].error.get(pid)
            if known is not None and err:
                marks = []
                for v in meds:
                    if v is None:
                        marks.append("-")
                        continue
                    inside = "in" if known - err < v <= known else "OUT"
                    marks.append(f"{(v - known) / err:+.2f} {inside}")
                row("    (median - known) / error", marks)
            spans = [(min(s.values[pid]), max(s.values[pid])) if s and s.values.get(pid) else None for s in subs]
            row("    min .. max", [f"{v[0]:,.0f} .. {v[1]:,.0f}" if v else "-" for v in spans])
        present = [s for s in subs if s is not None]
        if len(present) == len(subs):
            row("  metric time (s)", [f"{s.seconds:,.1f}" for s in present], ratio([s.seconds for s in present]))
            row("  trials", [f"{s.trials:,}" for s in present], ratio([float(s.trials) for s in present]))
            row("    of them short", [f"{s.short:,}" for s in present])
            row("    of them stopped early", [f"{s.stopped:,}" for s in present])
            tsec = [s.trial_seconds for s in present]
            row("  trial seconds", [f"{v:,.1f}" for v in tsec], ratio(tsec))
        else:
            row("  metric time (s)", [f"{s.seconds:,.1f}" if s else "-" for s in subs])
            row("  trials", [f"{s.trials:,}" if s else "-" for s in subs])
    w = [wall[a] for a in algs]
    row("run wall time (s)", [f"{v:,.1f}" for v in w], ratio(w))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=CAMPAIGNS, action="append", help="compare only this campaign (repeatable)")
    ap.add_argument("--workdir", type=Path, help="where the run directories go (default: a temporary directory)")
    ap.add_argument("--repetitions", type=int, help="repetitions of every compared metric (default: the campaign's)")
    ap.add_argument("--again", action="store_true", help="run binary a second time: how well the campaign reproduces")
    ap.add_argument(
        "--tester",
        choices=TESTERS,
        action="append",
        help="the tester to run the campaigns with (repeatable, in order; default: software; trex: see the docstring)",
    )
    args = ap.parse_args()
    testers = args.tester or ["software"]
    trex = TRexLab.from_env(os.environ) if "trex" in testers else None
    if os.geteuid() != 0:
        sys.exit("needs root: builds the local lab (network namespaces, veth, iptables, nftables, conntrack)")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="natbench-fast-"))
    workdir.mkdir(parents=True, exist_ok=True)
    print(__doc__.split("\n\n")[0])
    print(f"run directories: {workdir}")
    for name in args.only or CAMPAIGNS:
        for tester in testers:
            compare(name, workdir, args.repetitions, args.again, trex if tester == "trex" else None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
