"""Limits of the input readers at their edges (the corpus in test_malformed_corpus.py covers the refusals)."""

from __future__ import annotations

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


def test_a_proc_file_of_size_zero_is_read() -> None:
    # /proc files report st_size 0 but have content: the reader reads up to its cap, not st_size bytes
    assert "Name:" in read_user_file("/proc/self/status")


def test_validate_testbed_accepts_a_good_testbed_file() -> None:
    from click.testing import CliRunner

    from natbench.cli import cli

    root = Path(__file__).resolve().parent.parent
    result = CliRunner().invoke(cli, ["validate", "--testbed", str(root / "docs" / "examples" / "lab-testbed.yaml")])
    assert result.exit_code == 0 and result.output.startswith("OK "), result.output
    assert "tester software, 1 DUT(s)" in result.output  # the example: the software tester and one lab DUT
