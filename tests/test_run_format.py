"""The typed run-directory format (natbench.run.format): what it reads from old files, what it writes, what it refuses.

The files are checked byte for byte against the stored known-answer run (tests/data/damaged-runs/base, written by
natbench before this format had a model): decoding and encoding again gives the same bytes, except the tester
facts' old key ``backend``, now ``kind``.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import subprocess
import sys
import zlib
from pathlib import Path

import damaged_runs
import pandas as pd
import pytest

import natbench
from natbench.campaign import load_campaign
from natbench.config.source import MAX_DEPTH as YAML_DEPTH
from natbench.config.source import MAX_NODES
from natbench.errors import StoreError
from natbench.report.bound import BOUND_COLUMNS
from natbench.results import RepetitionResult, TrialRecord
from natbench.run import format as fmt
from natbench.run import frames
from natbench.run.format import (
    FieldError,
    HostFacts,
    MalformedCounts,
    PointRecord,
    RecordCounts,
    RunMeta,
    StoredCampaign,
    decode_meta,
    decode_points,
    decode_record,
    encode,
    encode_meta,
    encode_points,
    encode_record,
    parse_line,
    record_data,
)
from natbench.run.format.campaign import NestingError
from natbench.run.format.codec import decode_campaign, load_json
from natbench.run.format.fields import MAX_DEPTH, MAX_MEASURE, SHOWN_CHARS, DuplicateKey, depth, no_duplicate_keys
from natbench.run.format.lines import NonFinite, checksum
from natbench.run.format.meta import counts_problem
from natbench.run.format.points import points_from_json
from natbench.run.reader import RunDirectory, read_run
from natbench.run.writer import RunStore
from natbench.testing.rundir import make_point, result_record, trial_record, write_run_dir
from natbench.traffic import PortRange
from natbench.workingpoint import WorkingPoint

ROOT = Path(__file__).resolve().parents[1]
BASE = damaged_runs.BASE


# ----------------------------------------------------------------------------- byte compatibility with old files
def test_the_stored_run_json_reads_and_writes_back_byte_for_byte_but_for_the_tester_key() -> None:
    raw = (BASE / "run.json").read_bytes()
    meta = decode_meta(raw, BASE / "run.json")
    assert meta.tester == fmt.TesterFacts("fake", {"max_rate": 5_000_000.0})  # stored under the old key "backend"
    assert meta.status == "complete" and meta.records == RecordCounts(written=37, trial=29, result=8)
    assert meta.host == HostFacts("vm", "Linux-6.18.44-fc-v669-x86_64-with-glibc2.36", "3.11.7", "x86_64", 2)
    # the same file again, with the one key set for tester facts; "kind" sorts where "backend" did
    assert encode_meta(meta) == raw.decode().replace('"backend": "fake"', '"kind": "fake"')


def test_the_stored_points_json_reads_and_writes_back_byte_for_byte() -> None:
    raw = (BASE / "points.json").read_bytes()
    points = decode_points(raw, BASE / "points.json")
    assert [p.label for p in points] == ["fake-1c-1k", "fake-2c-2k"]
    assert encode_points(points) == raw.decode()
    # and each entry is the working point the run measured
    assert [p.to_working_point() for p in points] == damaged_runs.make_points()


def test_every_stored_record_line_decodes_and_encodes_to_the_same_bytes() -> None:
    lines = (BASE / "trials.jsonl").read_text().splitlines(keepends=True)
    assert len(lines) == 37
    for line in lines:
        obj = parse_line(line)
        record = decode_record(obj)
        assert isinstance(record, TrialRecord if obj["type"] == "trial" else RepetitionResult)
        assert encode_record(record, obj["seq"]) == line


# ----------------------------------------------------------------------------- run.json
def test_old_tester_facts_under_backend_read_as_kind_and_are_written_as_kind() -> None:
    old = fmt.TesterFacts.from_dict({"backend": "trex", "server": "10.0.0.1"})
    assert old == fmt.TesterFacts("trex", {"server": "10.0.0.1"})
    assert old.to_dict() == {"kind": "trex", "server": "10.0.0.1"}
    assert fmt.TesterFacts.from_dict({}).to_dict() == {}  # no facts stay no facts


def test_a_synthetic_run_of_older_versions_with_an_iso_start_time_reads() -> None:
    meta = RunMeta.from_dict({"started_at": "2026-01-01T00:00:00Z", "status": "complete", "pytest": {"pid": 7}})
    assert meta.started_at == 1_767_225_600.0
    assert meta.other == {"pytest": {"pid": 7}}  # a key natbench does not know is kept, and written back
    assert meta.to_dict()["pytest"] == {"pid": 7}
    assert meta.records is None  # from before record counts


def test_a_run_json_without_a_status_is_written_back_without_one_and_a_known_status_is_written() -> None:
    unknown = RunMeta.from_dict({"campaign_name": "t"})
    assert unknown.status == "unknown"
    assert "status" not in unknown.to_dict()  # "unknown" is the reader's word for none, never stored
    assert "status" not in json.loads(encode_meta(unknown))
    for status in ("running", "complete", "failed"):
        assert RunMeta(status=status).to_dict()["status"] == status


def test_a_distributed_run_s_id_class_and_testbeds_are_written_under_their_keys_and_read_back() -> None:
    meta = RunMeta(
        run_id="r-1",
        testbed_class="lab-a",
        point_testbeds={"p1": ("tb1", "tb2"), "p2": ("tb2",)},
        testbeds={"tb1": {"class": "lab-a", "tester": {"kind": "trex"}}, "tb2": {"class": "lab-a"}},
    )
    stored = json.loads(encode_meta(meta))
    assert stored["run_id"] == "r-1"
    assert stored["testbed_class"] == "lab-a"
    assert stored["point_testbeds"] == {"p1": ["tb1", "tb2"], "p2": ["tb2"]}  # JSON lists, in order
    assert stored["testbeds"] == {"tb1": {"class": "lab-a", "tester": {"kind": "trex"}}, "tb2": {"class": "lab-a"}}
    back = decode_meta(encode_meta(meta).encode(), Path("run.json"))
    assert back == meta and back.other == {}  # nothing read as a key natbench does not know
    plain = RunMeta().to_dict()  # not a distributed run: none of these keys
    assert not {"run_id", "testbed_class", "point_testbeds", "testbeds"} & plain.keys()


def test_run_json_writes_a_fact_json_cannot_hold_as_its_text() -> None:
    # a DUT fact parsed from YAML may be a date, a file name a Path: run.json stores their text, never fails
    meta = RunMeta(duts={"dut": {"built": datetime.date(2026, 12, 6), "config": Path("/etc/nat.conf")}})
    assert json.loads(encode_meta(meta))["duts"] == {"dut": {"built": "2026-12-06", "config": "/etc/nat.conf"}}


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("status", "done", "status: expected one of running, complete, failed, got 'done'"),
        ("started_at", [1], "started_at: expected a finite number, got [1]"),
        ("tester", "trex", "tester: expected an object, got 'trex'"),
        ("host", {"cpus": "2"}, "host.cpus: expected a whole number, got '2'"),
        ("point_testbeds", {"p": "a"}, "point_testbeds.p: expected a list, got 'a'"),
        ("point_testbeds", ["p"], "point_testbeds: expected an object, got ['p']"),
        ("resumed_at", 5.5, "resumed_at: expected a list, got 5.5"),
        ("resumed_at", [1.0, None], "resumed_at: expected a finite number, got None"),
        ("natbench_version", 1, "natbench_version: expected a string, got 1"),
        ("git_commit", 1, "git_commit: expected a string, got 1"),
        ("host", {"hostname": 1}, "host.hostname: expected a string, got 1"),
        ("host", {"platform": 1}, "host.platform: expected a string, got 1"),
        ("host", {"python": 1}, "host.python: expected a string, got 1"),
        ("host", {"machine": 1}, "host.machine: expected a string, got 1"),
        ("host", [], "host: expected an object, got []"),
        ("campaign_file", 1, "campaign_file: expected a string, got 1"),
        ("campaign_name", 1, "campaign_name: expected a string, got 1"),
        ("tester", {"kind": 1}, "tester.kind: expected a string, got 1"),
        ("tester", {"backend": 1}, "tester.kind: expected a string, got 1"),
        ("duts", [], "duts: expected an object, got []"),
        ("failure", 1, "failure: expected a string, got 1"),
        ("ended_at", "noon", "ended_at: expected Unix seconds or an ISO 8601 time, got 'noon'"),
        ("point_facts", [], "point_facts: expected an object, got []"),
        ("repairs", {}, "repairs: expected a list, got {}"),
        ("repairs", [{"at": None}], "repairs[0].at: expected a finite number, got None"),
        ("repairs", [{"at": 1.0, "backup": 1}], "repairs[0].backup: expected a string, got 1"),
        ("repairs", [{"at": 1.0, "damage": [1]}], "repairs[0].damage: expected a string, got 1"),
        ("repairs", [{"at": 1.0, "damage": "x"}], "repairs[0].damage: expected a list, got 'x'"),
        (
            "repairs",
            [{"at": 1.0, "remeasured": [["p", "cps"]]}],
            "repairs[0].remeasured: expected [point id, metric, repetition], got ['p', 'cps']",
        ),
        (
            "repairs",
            [{"at": 1.0, "remeasured": [["p", "cps", "0"]]}],
            "repairs[0].remeasured: expected a whole number, got '0'",
        ),
        (
            "repairs",
            [{"at": 1.0, "dropped_results": "2"}],
            "repairs[0].dropped_results: expected a whole number, got '2'",
        ),
        ("repair_pending", 1, "repair_pending: expected a string, got 1"),
        ("run_id", 1, "run_id: expected a string, got 1"),
        ("testbed_class", 1, "testbed_class: expected a string, got 1"),
        ("point_testbeds", {"p": [1]}, "point_testbeds.p: expected a string, got 1"),
        ("testbeds", [], "testbeds: expected an object, got []"),
        ("testbeds", {"tb1": 1}, "testbeds.tb1: expected an object, got 1"),
        ("resumed_at", [5.5, True], "resumed_at: expected a finite number, got True"),
        ("resumed_at", [float("nan")], "resumed_at: expected a finite number, got nan"),
        ("resumed_at", [float("inf")], "resumed_at: expected a finite number, got inf"),
    ],
)
def test_a_run_json_value_of_the_wrong_type_is_one_error_naming_the_file_and_the_field(
    tmp_path: Path, key: str, value: object, message: str
) -> None:
    data = json.loads((BASE / "run.json").read_text()) | {key: value}
    path = tmp_path / "run.json"
    with pytest.raises(StoreError) as err:
        decode_meta(json.dumps(data).encode(), path)
    assert str(err.value) == f"{path}: {message}"


def test_a_repair_in_run_json_reads_back_as_written_and_its_optional_fields_default() -> None:
    repair = fmt.Repair(
        at=5.5, backup="trials.damaged-x.jsonl", damage=("t:3: x",), remeasured=(("p", "cps", 2),), dropped_results=1
    )
    stored = repair.to_dict()
    assert stored == {
        "at": 5.5,
        "backup": "trials.damaged-x.jsonl",
        "damage": ["t:3: x"],
        "remeasured": [["p", "cps", 2]],
        "dropped_results": 1,
    }
    assert fmt.Repair.from_dict(stored, "repairs[0]") == repair
    assert RunMeta.from_dict({"repairs": [stored]}).repairs == (repair,)
    bare = fmt.Repair.from_dict({"at": 5.5}, "repairs[0]")
    assert bare == fmt.Repair(at=5.5, backup=None, damage=(), remeasured=(), dropped_results=0)
    for key, message in (
        (["p", 1, 2], "repairs[0].remeasured: expected a string, got 1"),
        ([1, "cps", 2], "repairs[0].remeasured: expected a string, got 1"),
        ("p", "repairs[0].remeasured: expected a list, got 'p'"),
    ):
        with pytest.raises(FieldError) as err:
            fmt.Repair.from_dict({"at": 5.5, "remeasured": [key]}, "repairs[0]")
        assert str(err.value) == message
    with pytest.raises(FieldError) as err:
        fmt.Repair.from_dict({"at": 5.5, "remeasured": "p"}, "repairs[0]")
    assert str(err.value) == "repairs[0].remeasured: expected a list, got 'p'"
    with pytest.raises(FieldError) as err:
        fmt.Repair.from_dict([], "repairs[3]")
    assert str(err.value) == "repairs[3]: expected an object, got []"


def test_run_json_s_model_takes_only_an_object() -> None:
    with pytest.raises(FieldError) as err:
        RunMeta.from_dict(["running"])
    assert str(err.value) == "run.json: expected a JSON object"


def test_moved_records_need_records_written_to_lie_within() -> None:
    """A moved range lies within the records written: with no ``written`` (none), no range fits."""
    problem = "moved: [1, 1] is no [first, last] range after 0 within the records written"
    assert counts_problem({"moved": [[1, 1]]}) == problem
    assert counts_problem({"written": 0, "moved": [[1, 1]]}) == problem
    assert counts_problem({"written": 1, "moved": [[1, 1]]}) is None
    assert counts_problem({"moved": []}) is None


def test_record_counts_left_out_of_run_json_read_as_none_written() -> None:
    """Each count run.json's ``records`` leaves out is 0 (a kind of record never written), the others as stored."""
    assert RunMeta.from_dict({"records": {}}).records == RecordCounts()
    results_only = RunMeta.from_dict({"records": {"written": 2, "result": 2}}).records
    assert results_only == RecordCounts(written=2, trial=0, result=2, legacy=0, moved=())
    stored = {"written": 4, "trial": 2, "result": 1, "legacy": 1, "moved": [[1, 2]]}
    assert RunMeta.from_dict({"records": stored}).records == RecordCounts(4, 2, 1, 1, ((1, 2),))


def test_a_run_json_without_a_status_reads_as_unknown_and_is_written_back_without_one() -> None:
    meta = RunMeta.from_dict({"natbench_version": "1.0"})
    assert meta.status == "unknown"
    assert "status" not in meta.to_dict()
    assert RunMeta.from_dict(meta.to_dict()).status == "unknown"
    assert RunMeta.from_dict({"status": "failed"}).status == "failed"


def test_host_facts_this_version_does_not_know_are_kept_and_written_back() -> None:
    stored = {"hostname": "vm", "cpus": 2, "numa_nodes": 1, "kernel": {"release": "6.1"}}
    host = HostFacts.from_dict(stored)
    assert host == HostFacts(hostname="vm", cpus=2, other={"numa_nodes": 1, "kernel": {"release": "6.1"}})
    assert host.to_dict() == {"cpus": 2, "hostname": "vm", "kernel": {"release": "6.1"}, "numa_nodes": 1}
    assert RunMeta.from_dict({"host": stored}).to_dict()["host"] == host.to_dict()


def test_a_distributed_run_s_testbeds_read_back_under_their_names() -> None:
    testbeds = {"tb1": {"class": "lab", "tester": {"kind": "fake"}}, "tb2": {"class": "lab"}}
    meta = RunMeta.from_dict({"testbeds": testbeds, "point_testbeds": {"p": ["tb2", "tb1"]}})
    assert meta.testbeds == testbeds
    assert meta.point_testbeds == {"p": ("tb2", "tb1")}
    assert meta.to_dict()["testbeds"] == testbeds


def test_malformed_record_counts_are_kept_as_stored_and_never_trusted() -> None:
    counts = {"written": 3, "moved": [[2, 9]]}
    meta = RunMeta.from_dict({"status": "running", "records": counts})
    assert isinstance(meta.records, MalformedCounts) and "moved: [2, 9]" in meta.records.problem
    assert meta.to_dict()["records"] == counts and meta.counts == counts  # the scanner names the problem


# ----------------------------------------------------------------------------- points.json
def test_a_point_stores_every_working_point_field_and_reads_back_as_that_point() -> None:
    wp = WorkingPoint(
        index=3,
        src_ports=PortRange(1000, 1999),
        dst_ports=PortRange(80, 89),
        frame_size=128,
        cores=4,
        dut_params={"ce": {"conntrack_max": 2**20}, "br": {}},
        swept_dut="ce",
        name="jool",
        metric_settings={"throughput": {"acceptance": 0.001, "error": 1000.0}},
        co_swept_duts=("br",),
        tag="128B",
    )
    record = PointRecord.of(wp)
    stored = json.loads(encode_points([record]))[0]
    assert stored["metric_settings"] == {"throughput": {"acceptance": 0.001, "error": 1000.0}}
    assert (stored["co_swept_duts"], stored["tag"], stored["id"]) == (["br"], "128B", wp.id)
    back = decode_points(encode_points([record]).encode(), Path("points.json"))
    assert back == [record] and back[0].to_working_point() == wp and back[0].to_working_point().id == wp.id
    # a point without them is stored as natbench always stored points
    plain = json.loads(encode_points([PointRecord.of(damaged_runs.make_points()[0])]))[0]
    assert not {"metric_settings", "co_swept_duts", "tag"} & set(plain)


def test_a_point_overriding_no_setting_of_a_metric_gives_empty_settings() -> None:
    wp = WorkingPoint(0, PortRange(1, 10), PortRange(1, 10), 64, metric_settings={"throughput": {"error": 5.0}})
    record = PointRecord.of(wp)
    assert record.settings_of("throughput") == {"error": 5.0}
    assert record.settings_of("cps") == {}
    assert PointRecord.of(damaged_runs.make_points()[0]).settings_of("throughput") == {}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cores": "4"}, "[1].cores: expected a whole number, got '4'"),
        ({"src_ports": [2000, 1000]}, "[1].src_ports: invalid port range 2000-1000"),
        ({"src_ports": [1]}, "[1].src_ports: expected [first, last], got a list of 1"),
        ({"dut_params": {"dut": 5}}, "[1].dut_params.dut: expected an object, got 5"),
        ({"colour": "red"}, "[1].colour: not a field of a working point"),
        ({"src_ports": "1000-2000"}, "[1].src_ports: expected a list, got '1000-2000'"),
        ({"id": 5}, "[1].id: expected a string, got 5"),
        ({"index": "1"}, "[1].index: expected a whole number, got '1'"),
        ({"label": None}, "[1].label: expected a string, got None"),
        ({"name": []}, "[1].name: expected a string, got []"),
        ({"connections": 2000.0}, "[1].connections: expected a whole number, got 2000.0"),
        ({"frame_size": "64"}, "[1].frame_size: expected a whole number, got '64'"),
        ({"swept_dut": 1}, "[1].swept_dut: expected a string, got 1"),
        ({"co_swept_duts": "dut"}, "[1].co_swept_duts: expected a list, got 'dut'"),
        ({"co_swept_duts": ["dut", 2]}, "[1].co_swept_duts: expected a string, got 2"),
        ({"tag": 7}, "[1].tag: expected a string, got 7"),
        ({"dst_ports": [1000, "2000"]}, "[1].dst_ports: expected a whole number, got '2000'"),
        ({"dut_params": []}, "[1].dut_params: expected an object, got []"),
        ({"metric_settings": 5}, "[1].metric_settings: expected an object, got 5"),
    ],
)
def test_a_points_json_entry_of_the_wrong_type_is_one_error_naming_the_entry_and_field(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    entries = json.loads((BASE / "points.json").read_text())
    entries[1] |= change
    path = tmp_path / "points.json"
    with pytest.raises(StoreError) as err:
        decode_points(json.dumps(entries).encode(), path)
    assert str(err.value).startswith(f"{path}: {message}")
    entries = json.loads((BASE / "points.json").read_text())
    del entries[1]["id"]
    with pytest.raises(StoreError) as err:
        decode_points(json.dumps(entries).encode(), path)
    assert str(err.value) == f"{path}: [1].id: missing (every working point has it)"


def test_points_json_s_model_takes_only_a_list_of_working_points() -> None:
    with pytest.raises(FieldError) as err:
        points_from_json({"points": []})
    assert (err.value.field, err.value.problem) == ("points", "expected a list of working points")
    assert str(err.value) == "points: expected a list of working points"
    assert points_from_json([]) == []


def test_a_working_point_listed_twice_is_named_with_the_entry_that_listed_it_first() -> None:
    entries = json.loads((BASE / "points.json").read_text())
    assert len(entries) == 2 and entries[0]["id"] != entries[1]["id"]
    assert [p.id for p in points_from_json(entries)] == [entries[0]["id"], entries[1]["id"]]
    again = entries[1]["id"]
    with pytest.raises(FieldError) as err:
        points_from_json([*entries, entries[1]])
    assert (err.value.field, err.value.problem) == (
        "[2].id",
        f"{again} again (entry [1]): a working point listed twice",
    )
    assert str(err.value) == f"[2].id: {again} again (entry [1]): a working point listed twice"


def test_a_points_json_entry_changed_after_the_run_is_named_with_what_its_parameters_give(tmp_path: Path) -> None:
    """The id is the hash of the parameters; connections and label follow from them: each mismatch is named."""
    path = tmp_path / "points.json"

    def refused(change: dict[str, object]) -> str:
        entries = json.loads((BASE / "points.json").read_text())
        entries[1] |= change
        with pytest.raises(StoreError) as err:
            decode_points(json.dumps(entries).encode(), path)
        return str(err.value)

    changed = json.loads((BASE / "points.json").read_text())[1] | {"frame_size": 128}
    rehashed = PointRecord.from_dict(changed).to_working_point().id
    assert rehashed != changed["id"]
    assert refused({"frame_size": 128}) == (
        f"{path}: [1].id: {changed['id']!r} is not the hash of this point's parameters (they hash to {rehashed}):"
        " its parameters were changed after the run"
    )
    assert refused({"connections": 2001}) == f"{path}: [1].connections: 2001, but its port ranges hold 200 x 10 = 2000"
    assert refused({"label": "fake-x"}) == f"{path}: [1].label: 'fake-x', but its parameters give 'fake-2c-2k'"


def test_a_points_acceptance_override_is_stored_and_reported(tmp_path: Path) -> None:
    """points.json stores each point's metric settings, so the report reads a per-point acceptance (swept) instead
    of the campaign's (before, it read a key the store never wrote and fell back to the campaign's)."""
    text = (ROOT / "campaigns" / "seed000-fig2-iptables-cores.yaml").read_text()
    swept = "    cores: [1, 2, 4, 8, 16]\n"
    src = tmp_path / "c.yaml"
    src.write_text(text.replace(swept, swept + "    metrics.throughput.acceptance: [0, 0, 0, 0.001, 0.01]\n"))
    campaign = load_campaign(src)
    points = campaign.points()
    RunStore.create(tmp_path / "run", campaign_text=campaign.to_yaml(), points=points, campaign_name="c").close()
    expected = [campaign.acceptance(p, "throughput") for p in points]
    assert expected == [0.0, 0.0, 0.0, 0.001, 0.01]
    run = natbench.load(tmp_path / "run")
    assert [run.acceptance(p.id, "throughput") for p in points] == expected
    assert [run.acceptance(p.id, "cps") for p in points] == [0.0] * 5  # no override: traffic.acceptance
    assert [p.to_working_point().id for p in run.point_records] == [p.id for p in points]


# ----------------------------------------------------------------------------- campaign.yaml
def test_a_stored_campaign_gives_its_family_and_acceptances_and_nothing_when_unreadable() -> None:
    c = StoredCampaign.parse("traffic: {family: nat64, acceptance: 0.01}\nmetrics: {cps: {acceptance: 0.1}}\n")
    assert (c.family, c.acceptance("cps"), c.acceptance("throughput")) == ("nat64", 0.1, 0.01)
    assert c.acceptance("cps", {"acceptance": 0.2}) == 0.2 and not c.experiment_session
    assert StoredCampaign.parse("kind: natbench-experiment\n").experiment_session
    for text in ("", "a: [", "- a list\n"):
        assert (StoredCampaign.parse(text).family, StoredCampaign.parse(text).acceptance("cps")) == (None, None)


def test_a_stored_campaign_that_states_no_acceptance_accepts_no_loss() -> None:
    """traffic.acceptance unset is the schema's 0 (RFC 2544: no loss), for every metric without its own."""
    for text in ("traffic: {family: nat44}\n", "metrics: {cps: {repetitions: 3}}\n", "name: bare\n"):
        assert StoredCampaign.parse(text).acceptance("cps") == 0.0
        assert StoredCampaign.parse(text).acceptance("cps", {"error": 10}) == 0.0  # an override of something else
    stated = StoredCampaign.parse("traffic: {acceptance: 0.25}\nmetrics: {cps: {repetitions: 3}}\n")
    assert stated.acceptance("cps") == 0.25


def test_a_stored_campaign_that_is_no_yaml_keeps_its_text_and_says_nothing() -> None:
    """A file that does not parse (or holds a value YAML cannot convert) is kept as it is, unreadable."""
    for text in ("a: [", "date: 2024-13-45\n", "- a list\n", "just text"):
        stored = StoredCampaign.parse(text)
        assert (stored.text, stored.readable, stored.kind, stored.family) == (text, False, None, None)


def test_a_stored_campaign_states_kind_and_family_only_where_written() -> None:
    """kind and traffic.family are None when the file leaves them out or writes null, else the text they hold."""
    for text in ("traffic: {acceptance: 0.1}\n", "kind: ~\ntraffic: {family: null}\n", "name: bare\n"):
        stored = StoredCampaign.parse(text)
        assert stored.readable and (stored.kind, stored.family) == (None, None)
    stored = StoredCampaign.parse("kind: 3\ntraffic: {family: nat44}\n")
    assert (stored.kind, stored.family) == ("3", "nat44") and not stored.experiment_session


def test_a_stored_campaign_reads_each_metric_section_that_is_a_mapping_and_skips_the_others() -> None:
    """A metric section that is no mapping states nothing; repetitions count only when a whole number."""
    stored = StoredCampaign.parse(
        "metrics:\n  cps: 3\n  latency: [1, 2]\n  teardown: text\n"
        "  throughput: {acceptance: 0.1, repetitions: 2}\n"
        "  fill: {repetitions: '3'}\n  lifetime: {repetitions: true}\n  memory: {repetitions: 2.0}\n"
        "  capacity: {acceptance: 0.2}\n"
    )
    assert stored.readable
    assert stored.metric_acceptance == {"throughput": 0.1, "capacity": 0.2}
    assert stored.metric_repetitions == {"throughput": 2}
    assert (stored.acceptance("cps"), stored.acceptance("throughput")) == (0.0, 0.1)


def test_a_stored_campaign_of_more_values_than_a_campaign_file_may_hold_still_reads() -> None:
    """The run's file was checked when the run started: its size is not limited again (only nesting and aliases)."""
    many = ", ".join(str(i) for i in range(MAX_NODES + 1))
    stored = StoredCampaign.parse(f"traffic: {{family: nat64}}\nsweep: [{many}]\n")
    assert stored.readable and stored.family == "nat64"


def test_a_stored_campaign_beyond_the_yaml_limits_is_refused_saying_which_limit() -> None:
    """Too deep gets the hint that a campaign nests only a few levels; an alias cycle or bomb says what it is."""
    with pytest.raises(NestingError) as deep:
        StoredCampaign.parse("[" * (YAML_DEPTH + 1) + "]" * (YAML_DEPTH + 1))
    assert str(deep.value) == f"nested more than {YAML_DEPTH} levels deep (a campaign nests a few)"
    with pytest.raises(NestingError) as cycle:
        StoredCampaign.parse("a: &a [*a]\n")
    assert (
        str(cycle.value)
        == "a YAML alias refers to the mapping or list that holds it (a value that would contain itself)"
    )
    bomb = "a: &a [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n" + "".join(
        f"{n}: &{n} [{', '.join(['*' + p] * 10)}]\n" for p, n in zip("abcde", "bcdef", strict=True)
    )
    with pytest.raises(NestingError) as expanded:
        StoredCampaign.parse(bomb)
    assert str(expanded.value).startswith("expands to more than ") and "campaign nests" not in str(expanded.value)


def test_a_campaign_file_that_is_no_utf8_or_beyond_the_yaml_limits_is_one_error_naming_the_file() -> None:
    """decode_campaign names the file and the byte that is no UTF-8, or the limit the YAML goes beyond."""
    path = Path("runs/r/campaign.yaml")
    with pytest.raises(StoreError) as binary:
        decode_campaign(b"name: caf\xe9\n", path)
    assert str(binary.value) == f"{path}: cannot be read as UTF-8 text (byte at offset 9)"
    with pytest.raises(StoreError) as deep:
        decode_campaign(b"[" * (YAML_DEPTH + 1) + b"]" * (YAML_DEPTH + 1), path)
    assert str(deep.value) == f"{path}: nested more than {YAML_DEPTH} levels deep (a campaign nests a few)"
    assert decode_campaign("name: caf\u00e9\n".encode(), path).readable  # UTF-8 text reads


# ----------------------------------------------------------------------------- record lines
TRIAL = trial_record("p", "cps", 0, 0, rate=1000.0)
RESULT = result_record("p", "cps", 0, 1000.0, "cps", error=10.0)


@pytest.mark.parametrize(
    ("record", "change", "message"),
    [
        (TRIAL, {"intended_rate": "fast"}, "intended_rate: expected a finite number, got 'fast'"),
        (TRIAL, {"repetition": True}, "repetition: expected a whole number, got True"),
        (TRIAL, {"counts": {"forward": {"sent": 1.5}}}, "counts.forward.sent: expected a whole number, got 1.5"),
        (TRIAL, {"counts": []}, "counts: expected an object, got []"),
        (TRIAL, {"counts": {"forward": 5}}, "counts.forward: expected an object, got 5"),
        (TRIAL, {"verdict": "maybe"}, "verdict: expected one of pass, fail, invalid, got 'maybe'"),
        (TRIAL, {"verdict": 1}, "verdict: expected one of pass, fail, invalid, got 1"),
        (TRIAL, {"lower": "low"}, "lower: expected a finite number, got 'low'"),
        (TRIAL, {"upper": -1.0}, "upper: expected a finite number >= 0, got -1.0"),
        (TRIAL, {"extra": []}, "extra: expected an object, got []"),
        (TRIAL, {"colour": "red"}, "colour: not a field of a trial record"),
        (RESULT, {"value": "x" * 100}, f"value: expected a finite number, got '{'x' * 56}..."),
        (RESULT, {"unit": None}, "unit: expected a string, got None"),
    ],
)
def test_a_record_field_of_the_wrong_type_is_named_with_what_it_holds(
    record: TrialRecord | RepetitionResult, change: dict[str, object], message: str
) -> None:
    data = {"type": "trial" if isinstance(record, TrialRecord) else "result", **record.to_dict(), **change}
    with pytest.raises(FieldError) as err:
        decode_record(data)
    assert str(err.value) == message


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e999", "-1e999"])
def test_a_record_line_holding_a_non_finite_number_is_refused_naming_the_number(token: str) -> None:
    with pytest.raises(NonFinite) as err:
        parse_line(f'{{"type": "trial", "intended_rate": {token}}}')
    assert str(err.value) == f"non-finite number {token}"


def test_a_key_named_twice_in_a_record_line_is_refused_naming_the_key() -> None:
    with pytest.raises(DuplicateKey) as err:
        parse_line('{"counts": {"sent": 1, "valid": 1}, "seq": 1, "counts": {}}')
    assert err.value.key == "counts"
    assert str(err.value) == "duplicate key 'counts' in one object (natbench writes each key once)"


def test_the_key_named_twice_is_the_one_named_wherever_it_comes_in_the_object() -> None:
    # the object's first key is named once: the error names the later key that comes again, not the first one
    with pytest.raises(DuplicateKey) as err:
        no_duplicate_keys([("seq", 1), ("type", "trial"), ("counts", {}), ("counts", {"forward": {}})])
    assert err.value.key == "counts"
    with pytest.raises(DuplicateKey) as err:
        parse_line('{"seq": 1, "type": "trial", "type": "result"}')
    assert str(err.value) == "duplicate key 'type' in one object (natbench writes each key once)"
    assert no_duplicate_keys([("seq", 1), ("type", "trial")]) == {"seq": 1, "type": "trial"}


def test_a_line_of_no_record_type_is_named_by_its_type_field() -> None:
    for kind, named in (("abandoned", "'abandoned'"), (None, "None")):
        data = {"type": kind, **TRIAL.to_dict()} if kind is not None else TRIAL.to_dict()
        with pytest.raises(FieldError) as err:
            decode_record(data)
        assert (err.value.field, err.value.problem) == ("type", f"expected 'trial' or 'result', got {named}")
        assert str(err.value) == f"type: expected 'trial' or 'result', got {named}"


def test_the_checksum_is_the_crc32_of_the_canonical_json_and_refuses_what_json_cannot_hold() -> None:
    # canonical: sorted keys, no spaces, text as UTF-8 (not escaped), crc32 itself left out
    body = {"reason": "d\u00e9bit \u2192 0", "seq": 3, "type": "trial"}
    canonical = '{"reason":"d\u00e9bit \u2192 0","seq":3,"type":"trial"}'.encode()
    assert checksum({**body, "crc32": "00000000"}) == f"{zlib.crc32(canonical):08x}"
    for number in (math.nan, math.inf, -math.inf):  # no JSON form: no checksum either
        with pytest.raises(ValueError, match=r"^Out of range float values are not JSON compliant"):
            checksum({**body, "value": number})


def test_a_record_json_cannot_hold_is_refused_before_it_is_stored() -> None:
    # NaN values become null; a NaN key cannot, and an object that is no JSON value has no form at all
    nan_key = RepetitionResult("p", "latency", 0, 1.0, "s", None, {math.nan: 1.0})
    with pytest.raises(ValueError, match=r"^Out of range float values are not JSON compliant"):
        record_data(nan_key)
    with pytest.raises(TypeError, match=r"^Object of type object is not JSON serializable"):
        record_data(dataclasses.replace(TRIAL, extra={"handle": object()}))
    assert record_data(dataclasses.replace(RESULT, value=math.nan))["value"] is None


def test_a_wrong_value_is_named_whole_up_to_sixty_characters_and_cut_beyond() -> None:
    fits = "x" * (SHOWN_CHARS - 2)  # its repr, quotes included, is exactly SHOWN_CHARS long
    with pytest.raises(FieldError) as err:
        decode_record({"type": "trial", **TRIAL.to_dict(), "intended_rate": fits})
    assert str(err.value) == f"intended_rate: expected a finite number, got '{fits}'"
    longer = fits + "y"
    with pytest.raises(FieldError) as err:
        decode_record({"type": "trial", **TRIAL.to_dict(), "intended_rate": longer})
    shown_part = repr(longer)[: SHOWN_CHARS - 3] + "..."
    assert str(err.value) == f"intended_rate: expected a finite number, got {shown_part}"
    assert len(shown_part) == SHOWN_CHARS


def test_a_rate_reads_from_zero_to_the_largest_measure_and_not_beyond() -> None:
    for rate in (0.0, 0, MAX_MEASURE):
        assert decode_record({"type": "trial", **TRIAL.to_dict(), "intended_rate": rate}).intended_rate == rate
    beyond = math.nextafter(MAX_MEASURE, math.inf)
    with pytest.raises(FieldError) as err:
        decode_record({"type": "trial", **TRIAL.to_dict(), "intended_rate": beyond})
    assert str(err.value) == f"intended_rate: expected at most {MAX_MEASURE:g}, got {beyond!r}"
    below = -math.ulp(0.0)
    with pytest.raises(FieldError) as err:
        decode_record({"type": "trial", **TRIAL.to_dict(), "intended_rate": below})
    assert str(err.value) == f"intended_rate: expected a finite number >= 0, got {below!r}"


def test_a_count_reads_from_zero_to_two_to_the_63_minus_one_and_not_beyond() -> None:
    for step in (0, 2**63 - 1):
        assert decode_record({"type": "trial", **TRIAL.to_dict(), "step": step}).step == step
    for beyond in (2**63, -1):
        with pytest.raises(FieldError) as err:
            decode_record({"type": "trial", **TRIAL.to_dict(), "step": beyond})
        assert (err.value.field, err.value.problem) == ("step", f"expected a whole number >= 0, got {beyond}")
        assert str(err.value) == f"step: expected a whole number >= 0, got {beyond}"


def test_a_file_nested_as_deep_as_allowed_reads_and_one_level_more_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    fits = b"[" * MAX_DEPTH + b"]" * MAX_DEPTH
    assert depth(load_json(fits, path)) == MAX_DEPTH
    too_deep = b"[" + fits + b"]"
    assert depth(json.loads(too_deep)) == MAX_DEPTH + 1
    with pytest.raises(StoreError) as err:
        load_json(too_deep, path)
    assert str(err.value) == f"{path}: nested more than {MAX_DEPTH} levels deep (natbench writes a dozen at most)"


def test_a_scalar_nests_no_level_and_each_object_or_list_one_more() -> None:
    assert [depth(value) for value in (7, "x", None, 1.5)] == [0, 0, 0, 0]
    assert [depth(value) for value in ([], {}, [1], {"a": []}, [[{"b": 1}]])] == [1, 1, 1, 2, 3]


def test_a_file_nested_beyond_the_json_reader_s_own_limit_is_refused_like_one_level_too_deep(tmp_path: Path) -> None:
    # so deep that the JSON reader itself gives up (a RecursionError inside it): the same one line naming the file
    path = tmp_path / "points.json"
    with pytest.raises(StoreError) as err:
        load_json(b"[" * 100_000 + b"]" * 100_000, path)
    assert str(err.value) == f"{path}: nested more than {MAX_DEPTH} levels deep (natbench writes a dozen at most)"


def test_a_file_that_is_no_utf8_or_names_a_key_twice_is_one_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    with pytest.raises(StoreError) as err:
        load_json(b'{"name": "caf\xe9"}', path)
    assert str(err.value) == f"{path}: not UTF-8 text (byte at offset 13)"
    for text, key in (
        (b'{"status": "running", "seq": 1, "seq": 2}', "seq"),
        (b'[{"id": "a"}, {"id": "b", "cores": 1, "id": "c"}]', "id"),
    ):
        with pytest.raises(StoreError) as err:
            load_json(text, path)
        assert str(err.value) == f"{path}: duplicate key '{key}' in one object (natbench writes each key once)"
    assert load_json(b'{"seq": 1, "status": "running"}', path) == {"seq": 1, "status": "running"}


def test_a_missing_required_field_is_named_and_optional_ones_take_their_defaults() -> None:
    data = {"type": "result", **RESULT.to_dict()}
    del data["unit"]
    with pytest.raises(FieldError, match=r"^unit: missing \(every result record has it\)$"):
        decode_record(data)
    bare = {k: v for k, v in TRIAL.to_dict().items() if k not in ("lower", "upper", "value", "extra")}
    assert decode_record({"type": "trial", **bare}) == dataclasses.replace(TRIAL, extra={})


def test_a_record_of_an_unknown_type_is_refused_naming_the_type_field_and_the_value() -> None:
    with pytest.raises(FieldError) as err:
        decode_record({"type": "trials", **TRIAL.to_dict()})
    assert err.value.field == "type"
    assert str(err.value) == "type: expected 'trial' or 'result', got 'trials'"
    with pytest.raises(FieldError) as missing:
        decode_record(dict(TRIAL.to_dict()))
    assert str(missing.value) == "type: expected 'trial' or 'result', got None"


def test_a_line_with_a_wrong_field_type_is_damage_of_its_repetition_like_a_checksum_mismatch(tmp_path: Path) -> None:
    run = damaged_runs.damaged_copy({"damage": []}, tmp_path)
    lines = (run / "trials.jsonl").read_bytes().splitlines(keepends=True)
    obj = json.loads(lines[1])
    obj.pop("crc32")
    kind, seq = obj.pop("type"), obj.pop("seq")
    obj["achieved_rate"] = "fast"  # a valid checksum over a value of the wrong type
    lines[1] = encode(kind, obj, seq).encode()
    (run / "trials.jsonl").write_bytes(b"".join(lines))
    found = read_run(run)
    assert found.damage == [f"{run / 'trials.jsonl'}:2: achieved_rate: expected a finite number, got 'fast'"]
    point0 = damaged_runs.make_points()[0].id
    assert found.damaged_repetitions == [(point0, "cps", 0)]  # the line's own repetition, nothing else
    assert len(found.trials) == 28  # the other records read (for --allow-damaged)
    with pytest.raises(StoreError, match="achieved_rate: expected a finite number"):
        RunDirectory.open(run).trials()


def test_the_writer_refuses_a_record_that_would_not_read_back(tmp_path: Path) -> None:
    refused = r"^cannot store a trial record of cps: intended_rate: expected a finite"
    with (
        RunStore.create(tmp_path / "run", campaign_text="name: t\n", points=[]) as store,
        pytest.raises(StoreError, match=refused),
    ):
        store.append_trial(dataclasses.replace(TRIAL, intended_rate=math.nan))  # NaN is stored as null
    assert (tmp_path / "run" / "trials.jsonl").read_text() == ""


# ----------------------------------------------------------------------------- the synthetic writer
def test_synthetic_run_directories_are_written_as_a_run_writes_them(tmp_path: Path) -> None:
    p = make_point(0, (1, 10), (1, 10))
    trial, result = dataclasses.replace(TRIAL, point_id=p.id), dataclasses.replace(RESULT, point_id=p.id)
    numbered = write_run_dir(tmp_path / "new", [p], [trial, result])
    lines = [json.loads(ln) for ln in (numbered / "trials.jsonl").read_text().splitlines()]
    assert [ln["seq"] for ln in lines] == [1, 2] and all("crc32" in ln for ln in lines)
    meta = read_run(numbered).meta
    assert meta.records == RecordCounts(written=2, trial=1, result=1) and meta.status == "complete"
    old = write_run_dir(tmp_path / "old", [p], [trial, result], legacy=True)
    assert all("seq" not in json.loads(ln) for ln in (old / "trials.jsonl").read_text().splitlines())
    assert read_run(old).meta.records is None
    for run in (numbered, old):
        data = read_run(run)
        assert (data.trials, data.results, data.damage, data.warnings) == ([trial], [result], [], [])


# ----------------------------------------------------------------------------- one frame builder
def test_the_parquet_export_and_the_report_build_their_frames_alike(tmp_path: Path) -> None:
    p = make_point(0, (1, 100), (1, 10))
    step = dataclasses.replace(TRIAL, point_id=p.id)
    cps = dataclasses.replace(RESULT, point_id=p.id)
    fill = trial_record(p.id, "teardown", 0, 0, rate=1000.0, kind="fill")
    teardown = result_record(p.id, "teardown", 0, 500.0, "conn/s", extra={"T_N": 2.5, "T_0": 0.5, "connections": 900})
    run_dir = write_run_dir(tmp_path / "run", [p], [step, cps, fill, teardown])
    strict, report = RunDirectory.open(run_dir), natbench.load(run_dir)
    pd.testing.assert_frame_equal(strict.trials_frame(), report.trials)
    joined = strict.results_frame()
    derived = ["dut_cpu_busy", *BOUND_COLUMNS]  # what the report adds from the trials and the DUT facts
    pd.testing.assert_frame_equal(
        joined.drop(columns=[*frames.POINT_COLUMNS, "dut_cpu_busy"]), report.results.drop(columns=derived)
    )
    # one meaning of "connections": the working point's 100 x 10; the fill created 900 of them
    assert joined["connections"].tolist() == [1000, 1000] and joined["unit"].astype(str).tolist() == ["cps", "cps"]
    assert joined["created_connections"].fillna(-1).tolist() == [-1, 900]
    path = strict.export_parquet()
    back = pd.read_parquet(path)
    assert back["kind"].astype(str).tolist() == ["phase1", "fill"] == report.trials["kind"].astype(str).tolist()
    assert back["forward_sent"].tolist() == [1000, 1000] and back["reverse_sent"].isna().all()


def test_the_progress_observers_do_not_import_the_report() -> None:
    code = "import sys, natbench.run.observers; print(sorted(m for m in sys.modules if m.startswith('natbench.rep')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# ----------------------------------------------------------------------------- the boundary (docs/architecture.md)
def _documented_block(language: str, after: str) -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index(after)
    body_start = text.index(f"```{language}\n", start) + len(language) + 4
    return text[body_start : text.index("```", body_start)]


def test_no_code_outside_the_format_reads_run_directory_files_as_the_architecture_page_says() -> None:
    """The greps of docs/architecture.md ("The run-directory format", "The boundary, checked"), run as written."""
    script = _documented_block("sh", "The boundary, checked")
    expected = _documented_block("text", "The boundary, checked")
    out = subprocess.run(["sh", "-c", script], cwd=ROOT, capture_output=True, text=True, check=False)
    assert out.stderr == ""
    assert out.stdout == expected
