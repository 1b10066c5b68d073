"""Limits of the input readers at their edges (the corpus in test_malformed_corpus.py covers the refusals)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from natbench.config.source import parse_yaml, read_user_file
from natbench.duts.recipes.template import quoted_placeholder
from natbench.errors import ConfigError
from natbench.values import parse_count, parse_number


def test_a_power_up_to_2_pow_64_is_computed_and_beyond_it_refused() -> None:
    assert parse_count("2^64") == 18_446_744_073_709_551_616  # 2^64
    assert parse_count("4^32") == 2**64  # (2^2)^32
    assert parse_count("3^40") == 12_157_665_459_056_928_801  # 3^40 < 2^64
    for beyond in ("2^65", "3^41", "10^20"):  # 3^41 = 3.6e19 and 10^20 exceed 2^64 = 1.8e19
        with pytest.raises(ValueError, match="too large"):
            parse_count(beyond)
    assert parse_number("0^99999999999") == 0.0 and parse_number("1^99999999999") == 1.0


def test_yaml_errors_do_not_quote_anchors_or_tags_of_the_file() -> None:
    for text in ("a: *CANARYANCHOR", "a: !!python/object:CANARYTAG {}"):
        with pytest.raises(ConfigError) as info:
            parse_yaml(text, "f.yaml")
        assert "CANARY" not in str(info.value) and str(info.value).startswith("f.yaml:1: ")


def test_reused_anchors_within_the_limit_are_read() -> None:
    # one anchored list of 1,000 numbers used 50 times: 50 x 1,001 + 51 = 50,101 values, under 100,000
    text = "a: &a [" + ", ".join(["1"] * 1000) + "]\nb: [" + ", ".join(["*a"] * 49) + "]\n"
    data, _ = parse_yaml(text, "f.yaml")
    assert len(data["b"]) == 49 and data["b"][48] == [1] * 1000


def test_placeholders_after_escaped_or_closed_quotes_are_outside_quotes() -> None:
    assert quoted_placeholder("echo \\' {{ x }}") is None  # \' outside quotes is a literal quote
    assert quoted_placeholder('echo "it\'s" {{ x }}') is None  # ' inside "..." opens nothing
    assert quoted_placeholder("echo '\\' {{ x }}") is None  # inside '...' a backslash is literal: ' closes
    assert quoted_placeholder('echo "a\\"b {{ x }}"') == "{{ x }}"  # \" inside "..." does not close it


def test_a_file_of_proc_or_sys_is_refused_unread(tmp_path: Path) -> None:
    """/proc files report st_size 0 and may never end, fail or hold secrets (/proc/self/environ): refused by where
    they lead, a symlink to one as well; a regular file elsewhere is read."""
    for path in ("/proc/self/status", "/proc/self/environ", "/sys/kernel/mm/transparent_hugepage/enabled"):
        if not os.path.exists(path):
            continue
        with pytest.raises(ConfigError, match=r"is a file of /(proc|sys) \(a view of the kernel, not data\)"):
            read_user_file(path, "campaign file")
    (tmp_path / "link.yaml").symlink_to("/proc/self/status")
    with pytest.raises(ConfigError, match="is a file of /proc"):
        read_user_file(tmp_path / "link.yaml", "campaign file")
    (tmp_path / "plain.yaml").write_text("name: x\n")
    assert read_user_file(tmp_path / "plain.yaml") == "name: x\n"


def test_validate_testbed_accepts_a_good_testbed_file() -> None:
    from click.testing import CliRunner

    from natbench.cli import cli

    root = Path(__file__).resolve().parent.parent
    result = CliRunner().invoke(cli, ["validate", "--testbed", str(root / "docs" / "examples" / "lab-testbed.yaml")])
    assert result.exit_code == 0 and result.output.startswith("OK "), result.output
    assert "tester software, 1 DUT(s)" in result.output  # the example: the software tester and one lab DUT


# -- issue 43: aliases, numbers, paths, credentials at their edges ---------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "x: &r {<<: *r}",  # a merge key naming its own mapping (a RecursionError before)
        "x: &r [1, *r]",
        "x: &r {a: {b: [{c: *r}]}}",
        "x: &r {<<: [{a: 1}, *r]}",
    ],
)
def test_an_alias_inside_the_value_it_names_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match="a YAML alias refers to the mapping or list that holds it"):
        parse_yaml(text, "f.yaml")


def test_an_alias_after_the_value_it_names_is_read() -> None:
    data, _ = parse_yaml("a: &a {k: 1}\nb: {<<: *a, j: 2}\nc: [*a, *a]\n", "f.yaml")
    assert data["b"] == {"k": 1, "j": 2} and data["c"] == [{"k": 1}, {"k": 1}]


def _chain(last: int) -> str:
    """``l1: [1]`` and ``lN: [*lN-1]`` up to ``l<last>``: written three levels deep (mapping, list, scalar), the
    top mapping then nests ``last + 2`` levels (as the composer counts: every value, a scalar too, is a level)."""
    lines = ["l1: &l1 [1]"] + [f"l{i}: &l{i} [*l{i - 1}]" for i in range(2, last + 1)]
    return "\n".join(lines) + "\n"


def _levels(value: object) -> int:
    return 1 + _levels(value[0]) if isinstance(value, list) else 1


def test_nesting_counts_the_levels_aliases_add() -> None:
    data, _ = parse_yaml(_chain(62), "f.yaml")  # 64 levels: the limit, read
    assert 1 + _levels(data["l62"]) == 64
    with pytest.raises(ConfigError, match="nested more than 64 levels deep once its YAML aliases are expanded"):
        parse_yaml(_chain(63), "f.yaml")  # 65


def test_a_run_directory_campaign_may_be_large_but_no_alias_bomb() -> None:
    """campaign.yaml of a run (an experiment session's record grows with every measurement) has no limit on the
    values written, only on what aliases add (MAX_EXPANDED_NODES); a limit error names which limit."""
    from natbench.config.source import MAX_EXPANDED_NODES, MAX_NODES, YamlLimitError, load_yaml_data

    big = "items:\n" + "".join(f"  - {{a: {i}, b: {i}}}\n" for i in range(MAX_NODES))  # 5 values each
    assert len(load_yaml_data(big, max_values=None)["items"]) == MAX_NODES
    with pytest.raises(YamlLimitError) as info:
        load_yaml_data(big)  # a campaign file: MAX_NODES values written at most
    assert info.value.limit == "values"
    bomb = (
        "a: &a [" + ", ".join(["x"] * 1000) + "]\nb: [" + ", ".join(["*a"] * (MAX_EXPANDED_NODES // 1000 + 2)) + "]\n"
    )
    with pytest.raises(YamlLimitError) as info:
        load_yaml_data(bomb, max_values=None)
    assert info.value.limit == "expanded"
    with pytest.raises(ConfigError, match="a value cannot be converted"):
        load_yaml_data("when: 2024-13-45\n")


@pytest.mark.parametrize("text", ["5", "  5 ", "5.5", ".5", "5.", "1e3", "-2", "1_000", "2^10", "5k"])
def test_ascii_numbers_are_read(text: str) -> None:
    assert parse_number(text) > -10


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("٥", "expected a number"),  # ARABIC-INDIC DIGIT FIVE: float() reads it as 5.0
        ("۵", "expected a number"),  # EXTENDED ARABIC-INDIC DIGIT FIVE
        ("५", "expected a number"),  # DEVANAGARI DIGIT FIVE
        ("５", "expected a number"),  # FULLWIDTH DIGIT FIVE
        ("٥^٢", "expected a number"),
        ("٥k", "expected a number"),
        ("inf", "expected a finite number"),
        ("-Infinity", "expected a finite number"),
        ("nan", "expected a finite number"),
        ("1e999", "expected a finite number"),
        ("9" * 5000, "expected a number"),  # beyond 64 characters: not read as a number at all
    ],
)
def test_numbers_other_than_ascii_and_finite_are_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_number(text)
    with pytest.raises(ValueError):
        parse_count(text)


def test_fail_thresholds_read_numbers_as_campaigns_do() -> None:
    from natbench.report.compare import parse_threshold

    assert (parse_threshold("median:5%").amount, parse_threshold("median:5%").percent) == (5.0, True)
    assert parse_threshold("min:2k").amount == 2000.0 and parse_threshold("max:0").amount == 0.0
    for bad, message in [
        ("median:٥%", "expected a number"),
        ("min:" + "9" * 5000, "expected a number"),
        ("median:inf", "expected a finite number"),
        ("median:nan%", "expected a finite number"),
        ("median:-0.5%", "must not be negative"),
        ("mean:5%", "expected STAT:AMOUNT"),
        ("median", "expected STAT:AMOUNT"),
    ]:
        with pytest.raises(ConfigError, match=message) as info:
            parse_threshold(bad)
        assert len(str(info.value)) < 200


def test_paths_are_checked_against_path_max_and_name_max_on_both_sides() -> None:
    from natbench.config.paths import NAME_MAX, PATH_MAX, path_problem

    assert path_problem("/".join(["a" * 200] * 20)[: PATH_MAX - 1]) is None  # 4,095 bytes: the longest taken
    assert "more than PATH_MAX" in (path_problem("/".join(["a" * 200] * 21)[:PATH_MAX]) or "")  # 4,096
    assert path_problem("/x/" + "b" * NAME_MAX) is None
    assert "more than NAME_MAX" in (path_problem("/x/" + "b" * (NAME_MAX + 1)) or "")
    assert "NUL" in (path_problem("a\x00b") or "")


def test_env_paths_name_the_variable_and_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    from natbench.config.paths import env_path, env_paths

    monkeypatch.setenv("NATBENCH_RECIPES", f"/a:{'x' * 10_000}")
    with pytest.raises(ConfigError) as info:
        env_paths("NATBENCH_RECIPES")
    assert str(info.value) == (
        "environment variable NATBENCH_RECIPES: entry 2 is 10,000 bytes long: more than PATH_MAX allows"
        " (4,095 bytes): not a directory name"
    )
    monkeypatch.setenv("NATBENCH_RECIPES", "/a::/b:")
    assert env_paths("NATBENCH_RECIPES") == [Path("/a"), Path("/b")]
    monkeypatch.setenv("NATBENCH_IMAGE_CACHE", "y" * 300)
    with pytest.raises(ConfigError, match=r"^environment variable NATBENCH_IMAGE_CACHE: is a path with a component"):
        env_path("NATBENCH_IMAGE_CACHE")
    monkeypatch.delenv("NATBENCH_IMAGE_CACHE")
    assert env_path("NATBENCH_IMAGE_CACHE") is None


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("https://me:s3cret@host/x.tar.gz", "https://me:***@host/x.tar.gz"),
        ("cannot reach http://tok3n@host:8080/a (refused)", "cannot reach http://***@host:8080/a (refused)"),
        ("ftp://a:b:c@h/ and https://u:p@h2/", "ftp://a:***@h/ and https://u:***@h2/"),
        ("https://host/path@v1 and mail user@example.org", "https://host/path@v1 and mail user@example.org"),
    ],
)
def test_passwords_in_urls_are_redacted(text: str, shown: str) -> None:
    from natbench.cli.group import printable
    from natbench.config.redact import redact_credentials, split_credentials

    assert redact_credentials(text) == shown == printable(text)
    bare, auth = split_credentials("https://me:s3%20cret@host:8443/x")
    assert bare == "https://host:8443/x" and auth == "Basic bWU6czMgY3JldA=="  # me:s3 cret
    assert split_credentials("https://host/x") == ("https://host/x", None)


def test_a_directory_list_variable_holds_at_most_256_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    from natbench.config.paths import MAX_PATH_ENTRIES, env_paths

    monkeypatch.setenv("NATBENCH_RECIPES", ":".join(["/a"] * MAX_PATH_ENTRIES))
    assert len(env_paths("NATBENCH_RECIPES")) == MAX_PATH_ENTRIES
    monkeypatch.setenv("NATBENCH_RECIPES", ":".join(["/a"] * (MAX_PATH_ENTRIES + 1)))
    with pytest.raises(ConfigError, match="257 entries, more than the 256 a directory list may hold"):
        env_paths("NATBENCH_RECIPES")
