"""The known-answer table of damaged run directories: its base run, its damage operations, its resume.

``tests/data/damaged-runs/base/`` is one complete run directory, written once by the engine with the fakes
(:func:`make_spec`, :func:`write_base`) and kept as it was written, so the table checks what readers make of
files as they lie on disk, whatever the writer does today. ``tests/data/damaged-runs/cases.yaml`` lists the
cases: each one damages a copy of the base (:func:`apply`) and names the exact damage and note lines a reader
reports and the repetitions the next resume measures again (with ``--repair`` when there is damage).

``python tests/damaged_runs.py write-base DIR`` writes the base again (the table's line numbers refer to it: a
new base needs every case checked again).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from natbench.metrics import MetricSettings
from natbench.metrics.cps import CpsSettings
from natbench.metrics.teardown import TeardownSettings
from natbench.plugins import Directions
from natbench.run.format import PointRecord, encode
from natbench.run.runner import RunSpec, start_run
from natbench.testing import FakeDut, FakeModel, FakeTester
from natbench.traffic import AddressPlan, Family, PortRange, TrafficPlan
from natbench.workingpoint import WorkingPoint

DATA = Path(__file__).resolve().parent / "data" / "damaged-runs"
BASE = DATA / "base"
CASES = DATA / "cases.yaml"

MODEL = FakeModel(cps=200_000, forwarding=400_000, noise=0.02, seed=5, flush_per_connection=1e-5)

RESUME_CLOCK = 1_800_000_000.0
"""Where the clock of a resume starts: every trial it stores starts after it, every trial of the base before."""


def make_points(src_last: int = 1199) -> list[WorkingPoint]:
    """The base's two working points: 100 x 10 and 200 x 10 connections (``src_last``: the second one's last
    source port, for a resume with other points)."""
    return [
        WorkingPoint(0, PortRange(1000, 1099), PortRange(80, 89), 64, cores=1, name="fake"),
        WorkingPoint(1, PortRange(1000, src_last), PortRange(80, 89), 64, cores=2, name="fake"),
    ]


def make_spec(points: list[WorkingPoint] | None = None) -> RunSpec:
    """cps (binary search, two repetitions) and tear-down (two repetitions) at each point."""
    metrics: dict[str, MetricSettings] = {
        "cps": CpsSettings(repetitions=2, upper=400_000, error=100_000, validation="final"),
        "teardown": TeardownSettings(repetitions=2, fill_rate=50_000, gap=0.0),
    }
    resolved = {name: s.resolved(0.0, Directions.BIDIRECTIONAL) for name, s in metrics.items()}

    def plan_for(point: WorkingPoint) -> TrafficPlan:
        return TrafficPlan(
            Family.NAT44, AddressPlan.default(Family.NAT44), point.src_ports, point.dst_ports, point.frame_size, seed=3
        )

    return RunSpec("damaged-runs-base", points or make_points(), plan_for, resolved, CAMPAIGN_TEXT)


CAMPAIGN_TEXT = """\
name: damaged-runs-base
metrics:
  cps: {repetitions: 2, upper: 400000, error: 100000, validation: final}
  teardown: {repetitions: 2, fill_rate: 50000, gap: 0}
"""
"""The base's campaign.yaml: as a resolved campaign states it, the metrics and their planned repetitions."""


def make_testbed() -> tuple[FakeTester, FakeDut]:
    """A fresh fake tester and DUT of the base's model."""
    dut = FakeDut(MODEL)
    return FakeTester(dut), dut


class Clock:
    """One second per reading from ``start``."""

    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def write_base(path: Path) -> None:
    """Write the base run directory at ``path`` (complete, numbered 1..N)."""
    tester, dut = make_testbed()
    run = start_run(make_spec(), path, tester, dut, clock=Clock(1_700_000_000.0), sleep=lambda s: None)
    assert run.status == "complete"


# ---------------------------------------------------------------------------------------------- damage operations
def _lines(run: Path) -> list[bytes]:
    return (run / "trials.jsonl").read_bytes().splitlines(keepends=True)


def _write(run: Path, lines: list[bytes]) -> None:
    (run / "trials.jsonl").write_bytes(b"".join(lines))


def _meta(run: Path) -> dict[str, Any]:
    meta: dict[str, Any] = json.loads((run / "run.json").read_text(encoding="utf-8"))
    return meta


def _set_meta(run: Path, meta: Mapping[str, Any]) -> None:
    (run / "run.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _record(line: bytes) -> tuple[str, dict[str, Any], int]:
    obj = json.loads(line)
    kind = obj.pop("type")
    seq = obj.pop("seq")
    obj.pop("crc32")
    return kind, obj, seq


def _set_path(obj: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        obj = obj[key]
    obj[last] = value


def apply(run: Path, op: Mapping[str, Any]) -> None:
    """Damage the run directory ``run`` as one operation of cases.yaml says (line numbers from 1)."""
    [(name, arg)] = op.items()
    lines = _lines(run) if (run / "trials.jsonl").exists() else []
    if name == "duplicate_line":  # an exact copy of line N right after it
        _write(run, [*lines[:arg], lines[arg - 1], *lines[arg:]])
    elif name == "swap_lines":  # lines N and N + 1 change places
        lines[arg - 1], lines[arg] = lines[arg], lines[arg - 1]
        _write(run, lines)
    elif name == "delete_lines":
        _write(run, [ln for i, ln in enumerate(lines, 1) if i not in set(arg)])
    elif name == "cut_last_line":  # keep the first N bytes of the last line, no newline
        _write(run, [*lines[:-1], lines[-1][:arg]])
    elif name == "replace_line":
        lines[arg["line"] - 1] = arg["text"].encode() + b"\n"
        _write(run, lines)
    elif name == "set_field":  # change one field of a record; its checksum kept (stale) or computed anew
        line = lines[arg["line"] - 1]
        if arg.get("checksum", "keep") == "keep":
            obj = json.loads(line)
            _set_path(obj, arg["field"], arg["value"])
            lines[arg["line"] - 1] = (json.dumps(obj, sort_keys=True, separators=(",", ":")) + "\n").encode()
        else:
            obj = json.loads(line)
            del obj["crc32"]
            _set_path(obj, arg["field"], arg["value"])
            kind, seq = obj.pop("type"), obj.pop("seq")
            lines[arg["line"] - 1] = encode(kind, obj, seq).encode()
        _write(run, lines)
    elif name == "append_copy":  # line N's record again at the end, numbered ``seq``, checksum computed
        kind, data, _ = _record(lines[arg["line"] - 1])
        _write(run, [*lines, encode(kind, data, arg["seq"]).encode()])
    elif name == "kill_after":  # as a kill -9 leaves it after N counted records: status running, counts at N
        kept = lines[:arg]
        _write(run, kept)
        kinds = [json.loads(ln)["type"] for ln in kept]
        meta = _meta(run)
        meta["records"] |= {"written": arg, "trial": kinds.count("trial"), "result": kinds.count("result")}
        meta["status"] = "running"
        meta.pop("ended_at", None)
        _set_meta(run, meta)
    elif name == "append_bytes_of_line":  # the first ``bytes`` bytes of the BASE's line N appended (a torn record)
        base = (BASE / "trials.jsonl").read_bytes().splitlines(keepends=True)
        _write(run, [*lines, base[arg["line"] - 1][: arg["bytes"]]])
    elif name == "append_base_line":  # the BASE's line N appended whole
        base = (BASE / "trials.jsonl").read_bytes().splitlines(keepends=True)
        _write(run, [*lines, base[arg - 1]])
    elif name == "run_json":  # set keys of run.json (dotted paths)
        meta = _meta(run)
        for key, value in arg.items():
            _set_path(meta, key, value)
        _set_meta(run, meta)
    elif name == "delete_file":
        (run / arg).unlink()
    elif name == "symlink_file":  # the file replaced by a symlink to ``target`` (a device, a FIFO, a directory)
        (run / arg["file"]).unlink()
        target = arg["target"]
        if target == "fifo":
            fifo = run.parent / "fifo"
            os.mkfifo(fifo)
            target = str(fifo)
        elif target == "directory":
            (run.parent / "dir").mkdir()
            target = str(run.parent / "dir")
        (run / arg["file"]).symlink_to(target)
    elif name == "write_file":  # a file's whole text
        (run / arg["file"]).write_text(arg["text"], encoding="utf-8")
    elif name == "nest":  # a file's text nested ``depth`` levels: JSON arrays (or YAML flow lists)
        (run / arg["file"]).write_text("[" * arg["depth"] + "]" * arg["depth"] + "\n", encoding="utf-8")
    elif name == "grow_file":  # a file made larger than any natbench writes (its text repeated as whitespace)
        with open(run / arg["file"], "ab") as f:
            f.write(b" " * arg["bytes"])
    elif name == "nest_record":  # line N's record with its extra nested ``depth`` levels, checksum computed
        obj = json.loads(lines[arg["line"] - 1])
        del obj["crc32"]
        value: Any = 0
        for _ in range(arg["depth"]):
            value = [value]
        obj["extra"] = {"deep": value}
        kind, seq = obj.pop("type"), obj.pop("seq")
        lines[arg["line"] - 1] = encode(kind, obj, seq).encode()
        _write(run, lines)
    elif name == "points_json":  # set fields of points.json entries (``0.src_ports``: entry 0's src_ports)
        points = json.loads((run / "points.json").read_text(encoding="utf-8"))
        for key, value in arg.items():
            index, _, dotted = key.partition(".")
            _set_path(points[int(index)], dotted, value)
        (run / "points.json").write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    elif name == "add_point":  # one more working point in points.json, written as natbench writes one (real id)
        points = json.loads((run / "points.json").read_text(encoding="utf-8"))
        extra = dataclasses.replace(make_points(src_last=arg["src_last"])[1], index=len(points))
        points.append(PointRecord.of(extra).to_dict())
        (run / "points.json").write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    elif name == "duplicate_point":  # points.json's entry N once more at the end
        points = json.loads((run / "points.json").read_text(encoding="utf-8"))
        points.append(points[arg])
        (run / "points.json").write_text(json.dumps(points, indent=2) + "\n", encoding="utf-8")
    elif name == "duplicate_key":  # the first line of a JSON file holding ``"key":`` written twice
        text = (run / arg["file"]).read_text(encoding="utf-8").splitlines(keepends=True)
        i = next(i for i, ln in enumerate(text) if ln.lstrip().startswith(f'"{arg["key"]}":'))
        copy = text[i] if text[i].rstrip().endswith(",") else text[i].rstrip("\n") + ",\n"
        (run / arg["file"]).write_text("".join([*text[:i], copy, *text[i:]]), encoding="utf-8")
    elif name == "duplicate_key_in_line":  # line N with ``key`` written twice (the second copy, read last, as stored)
        line = lines[arg["line"] - 1]
        value = json.loads(line)[arg["key"]]
        head = json.dumps({arg["key"]: value}, separators=(",", ":"))[:-1].encode()
        lines[arg["line"] - 1] = head + b"," + line[1:]
        _write(run, lines)
    else:
        raise ValueError(f"unknown damage operation {name!r}")


def damaged_copy(case: Mapping[str, Any], tmp: Path) -> Path:
    """A copy of the base with ``case``'s damage applied."""
    run = Path(shutil.copytree(BASE, tmp / "run"))
    for op in case.get("damage", []):
        apply(run, op)
    return run


def load_cases() -> list[dict[str, Any]]:
    """The cases of cases.yaml."""
    cases: list[dict[str, Any]] = yaml.safe_load(CASES.read_text(encoding="utf-8"))
    return cases


def expand(lines: list[str], run: Path) -> list[str]:
    """Table lines name files relative to the run directory; readers name them by path."""
    return [f"{run}/{line}" for line in lines]


def main(argv: list[str]) -> int:
    """``write-base DIR``: write a new base run directory (see the module docstring)."""
    if len(argv) != 2 or argv[0] != "write-base":
        print(__doc__, file=sys.stderr)
        return 2
    write_base(Path(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
