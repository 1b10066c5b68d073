"""The recipe template language: exact rendered text for every filter, its boundaries and its errors."""

from __future__ import annotations

from typing import Any

import pytest

from natbench.duts.recipes.shell import analyze
from natbench.duts.recipes.template import (
    Placeholder,
    TemplateSyntaxError,
    cpu_hexmask,
    parse_template,
    quoted_placeholder,
    render_template,
    rendered_words,
    shown_value,
)
from natbench.duts.recipes.values import RUNTIME, FormatText, ValueClass
from natbench.traffic.ports import PortRange
from natbench.values import MAX_CORES


def one(filters: str, value: Any) -> str:
    """Render ``{{ v | filters }}`` with ``v = value`` (quoted, as in a command)."""
    return render_template(f"{{{{ v{filters} }}}}", {"v": value})


# -- hexmask --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cpus", "mask"),
    [
        ([31], "80000000"),  # bit 31: the top bit of the first 32-bit group
        ([32], "00000001,00000000"),  # bit 32 starts a second group
        ([63], "80000000,00000000"),  # the top bit of the second group
        ([0, 63], "80000000,00000001"),
        ([64], "00000001,00000000,00000000"),  # a third group
        ([16, 17, 18, 19, 20, 21, 22, 23], "00ff0000"),
        (["3", "1"], "0000000a"),  # CPU numbers as text: bits 1 and 3 = 0b1010
        ([], "00000000"),  # no CPU: still 8 digits
        (0, "00000000"),  # int n: CPUs 0..n-1, none here
        (1, "00000001"),
        (32, "ffffffff"),  # CPUs 0..31 fill the first group
        (33, "00000001,ffffffff"),
    ],
)
def test_hexmask_groups_32_cpus_per_8_hex_digits(cpus: Any, mask: str) -> None:
    assert cpu_hexmask(cpus) == mask


def test_hexmask_renders_through_the_template_as_one_word() -> None:
    # commas are no shell syntax: the mask stays unquoted
    assert one(" | hexmask", [0, 32]) == "00000001,00000001"


def test_hexmask_rejects_a_negative_cpu_naming_it() -> None:
    with pytest.raises(ValueError) as info:
        cpu_hexmask([2, -1])
    assert str(info.value) == "negative CPU number -1"


def test_hexmask_names_cpus_a_dut_can_have_only_and_stays_short() -> None:
    """A campaign's number (10**12 is one) never becomes a mask of a trillion bits: CPU numbers stop below
    MAX_CORES, as the campaign's cores do."""
    groups = MAX_CORES // 32
    assert cpu_hexmask([MAX_CORES - 1]) == ",".join(["80000000"] + ["00000000"] * (groups - 1))
    assert cpu_hexmask(MAX_CORES) == ",".join(["ffffffff"] * groups)
    with pytest.raises(ValueError) as info:
        cpu_hexmask([0, MAX_CORES])
    assert str(info.value) == f"CPU number {MAX_CORES}: a DUT has at most {MAX_CORES} CPUs (0 to {MAX_CORES - 1})"
    with pytest.raises(ValueError, match=f"{MAX_CORES + 1} CPUs: a DUT has at most {MAX_CORES}"):
        cpu_hexmask(MAX_CORES + 1)
    with pytest.raises(ValueError, match="CPU number 1000000000000"):
        one(" | hexmask", [10**12])
    with pytest.raises(ValueError, match="1000000000000 CPUs"):
        one(" | hexmask", 10**12)


# -- first / last / csv / words / len / upper / lower ---------------------------------------------


def test_first_and_last_of_a_port_range_list_and_tuple() -> None:
    assert one(" | first", PortRange(24576, 32767)) == "24576"
    assert one(" | last", PortRange(24576, 32767)) == "32767"
    assert one(" | first", [5, 6, 7]) == "5"
    assert one(" | last", [5, 6, 7]) == "7"
    assert one(" | first", ("a", "b")) == "a"
    assert one(" | last", ("a", "b")) == "b"


@pytest.mark.parametrize("name", ["first", "last"])
def test_first_and_last_of_a_scalar_say_what_they_need(name: str) -> None:
    with pytest.raises(ValueError) as info:
        one(f" | {name}", "1-4000")
    assert str(info.value) == f"filter '{name}' needs a port range or list"


@pytest.mark.parametrize("name", ["first", "last"])
def test_first_and_last_of_an_empty_list_say_it_has_no_item(name: str) -> None:
    with pytest.raises(ValueError) as info:
        one(f" | {name}", [])
    assert str(info.value) == f"filter '{name}' of an empty list has no item"
    assert one(f" | {name}", ["a"]) == "a"  # one item: the first and the last


def test_csv_joins_a_list_into_one_quoted_word() -> None:
    assert one(" | csv", [1, 2, 3]) == "1,2,3"
    assert one(" | csv", ("a b", "c")) == "'a b,c'"
    assert one(" | csv", []) == "''"


def test_csv_of_a_scalar_says_it_needs_a_list() -> None:
    with pytest.raises(ValueError) as info:
        one(" | csv", "a,b")
    assert str(info.value) == "filter 'csv' needs a list"


def test_words_makes_each_item_one_word_and_a_scalar_a_single_word() -> None:
    assert one(" | words", ["a b", "c"]) == "'a b' c"
    assert one(" | words", ("x",)) == "x"
    assert one(" | words", "x y") == "'x y'"  # not split into characters
    assert one(" | words", 5) == "5"


def test_len_upper_lower() -> None:
    assert one(" | len", [1, 2, 3]) == "3"
    assert one(" | len", PortRange(1, 4000)) == "4000"
    assert one(" | upper", "eth0") == "ETH0"
    assert one(" | lower", "ABC") == "abc"


# -- addr / plen ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "addr"),
    [
        ("198.18.0.1/24", "198.18.0.1"),
        ("2001:db8::1/64", "2001:db8::1"),
        ("198.18.0.1", "198.18.0.1"),  # no prefix length: the whole value
        ("a/b/c", "a"),  # everything before the first slash
    ],
)
def test_addr_is_the_text_before_the_first_slash(value: str, addr: str) -> None:
    assert one(" | addr", value) == addr


def test_plen_is_the_prefix_length() -> None:
    assert one(" | plen", "198.18.0.1/24") == "24"
    assert one(" | plen", "2001:db8::/64") == "64"


def test_plen_without_a_prefix_length_names_the_value() -> None:
    with pytest.raises(ValueError) as info:
        one(" | plen", "198.18.0.1")
    assert str(info.value) == "'198.18.0.1' has no prefix length"


def test_plen_after_the_first_slash_must_be_a_whole_number() -> None:
    # '10.0.0.0/8/1': the prefix length would be '8/1', not 8 (first part) nor 1 (last part)
    with pytest.raises(ValueError, match="8/1"):
        one(" | plen", "10.0.0.0/8/1")


# -- hms ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00:00"),
        (59, "0:00:59"),
        (60, "0:01:00"),  # 60 s is one minute, not '0:00:60'
        (3599, "0:59:59"),
        (3600, "1:00:00"),  # Jool's 1-hour timeout
        (86399, "23:59:59"),  # one second short of a day
        (90061, "25:01:01"),  # 25*3600 + 60 + 1: hours do not wrap at 24
        (7200.0, "2:00:00"),  # a whole float has no fraction
        (1.5, "0:00:01.500"),
        (0.25, "0:00:00.250"),
        (90.75, "0:01:30.750"),  # 0.75 s = 750 ms
        (59.9996, "0:01:00"),  # 59999.6 ms rounds to 60000 ms: a whole minute, not '0:00:59.1000'
        (1.9999, "0:00:02"),
        (1.001, "0:00:01.001"),  # one millisecond still shows
        (0.0004, "0:00:00"),  # under half a millisecond: no '.000'
    ],
)
def test_hms_renders_hours_minutes_seconds(seconds: float, text: str) -> None:
    assert one(" | hms", seconds) == text


@pytest.mark.parametrize(("bad", "shown"), [(-1, "-1"), (-0.5, "-0.5"), (True, "True"), ("60", "'60'")])
def test_hms_rejects_what_is_not_a_number_of_seconds(bad: Any, shown: str) -> None:
    with pytest.raises(ValueError) as info:
        one(" | hms", bad)
    assert str(info.value) == f"filter 'hms' needs a number of seconds, got {shown}"


# -- values, quoting and errors of render_template --------------------------------------------


def test_bools_render_as_1_and_0() -> None:
    assert render_template("{{ a }} {{ b }}", {"a": True, "b": False}) == "1 0"
    assert render_template("{{ l }}", {"l": [True, False]}) == "1 0"


def test_unquoted_rendering_keeps_values_as_they_are() -> None:
    assert render_template("{{ v }}", {"v": "x y"}, quote=False) == "x y"
    assert render_template("{{ l }}", {"l": ["a b", "c"]}, quote=False) == "a b c"
    assert render_template("{{ l }}", {"l": ["a b", "c"]}) == "'a b' c"


def test_filters_apply_left_to_right_and_spaces_do_not_matter() -> None:
    assert render_template("{{a|addr|upper}}", {"a": "2001:db8::a/64"}) == "2001:DB8::A"
    assert render_template("x={{   l   |   csv   }}", {"l": ["p", "q"]}) == "x=p,q"


def test_an_unknown_variable_is_a_key_error_naming_it() -> None:
    with pytest.raises(KeyError) as info:
        render_template("echo {{ nope }}", {"v": 1})
    assert info.value.args == ("nope",)


def test_a_missing_value_tells_how_to_guard_the_command() -> None:
    with pytest.raises(ValueError) as info:
        render_template("echo {{ v }}", {"v": None})
    assert str(info.value) == "v has no value (guard the command with 'when: v')"


# -- parse_template -------------------------------------------------------------------------


def test_parse_template_lists_names_and_filters_in_order() -> None:
    text = "a {{ x }} b {{y|csv | upper}} {{ x | hms }}"
    assert parse_template(text) == [
        Placeholder("x", ()),
        Placeholder("y", ("csv", "upper")),
        Placeholder("x", ("hms",)),
    ]
    assert parse_template("no placeholders, {single} braces") == []


def test_a_bad_placeholder_is_shown_whole() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template("echo {{ 1x }}")
    assert str(info.value) == "bad placeholder '{{ 1x }}': expected {{ name }} or {{ name | filter }}"


def test_an_unknown_filter_lists_the_known_ones() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template("echo {{ x | csv | nope }}")
    known = "addr, csv, first, hexmask, hms, last, len, lower, plen, upper, words"  # alphabetical
    assert str(info.value) == f"unknown filter 'nope' in '{{{{ x | csv | nope }}}}' (known: {known})"


def test_a_bad_placeholder_of_60_characters_is_shown_whole_and_a_longer_one_cut_to_60() -> None:
    whole = "{{ 1" + "x" * 53 + " }}"  # 60 characters
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template(f"echo {whole}")
    assert str(info.value) == f"bad placeholder '{whole}': expected {{{{ name }}}} or {{{{ name | filter }}}}"
    longer = "{{ 1" + "x" * 54 + " }}"  # 61 characters: its first 57 and '...'
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template(f"echo {longer}")
    assert str(info.value) == "bad placeholder '{{ 1" + "x" * 53 + "...': expected {{ name }} or {{ name | filter }}"


def test_an_unknown_filter_of_61_characters_is_cut_to_60_in_its_message() -> None:
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template("echo {{ x | " + "f" * 61 + " }}")
    assert str(info.value).startswith("unknown filter '" + "f" * 57 + "...' in '{{ x | " + "f" * 50 + "...' (known: ")


def test_a_value_whose_repr_has_40_characters_is_shown_whole_and_a_longer_one_cut_to_40() -> None:
    assert shown_value("x" * 38) == "'" + "x" * 38 + "'"
    assert shown_value("x" * 39) == "'" + "x" * 35 + "...'"  # 36 characters of the repr and ...'
    assert shown_value("x" * 39, limit=41) == "'" + "x" * 39 + "'"


@pytest.mark.parametrize(
    ("value", "shown"),
    [("-" + "a" * 37, "'-" + "a" * 37 + "'"), ("-" + "a" * 38, "'-" + "a" * 34 + "...'")],
)
def test_a_value_that_does_not_fit_its_place_is_named_cut_to_40_characters(value: str, shown: str) -> None:
    text = "ip link show {{ x }}"
    with pytest.raises(ValueError) as info:
        render_template(text, {"x": value}, slots=analyze(text))
    assert str(info.value).startswith(f"x: {shown} starts with '-': ip would read it as an option")


@pytest.mark.parametrize("text", ["echo {{}}", "echo {{ }}"])
def test_an_empty_placeholder_is_a_bad_placeholder_not_unbalanced_braces(text: str) -> None:
    # its '}}' follows its '{{' at once: the placeholder is found, and it names nothing
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template(text)
    assert str(info.value) == f"bad placeholder '{text[5:]}': expected {{{{ name }}}} or {{{{ name | filter }}}}"


@pytest.mark.parametrize(
    "text", ["echo {{ x", "echo x }}", "echo {{ x }} }}", "echo }{{ x }}}", "echo }}{{ x }}", "}}{{ x }}"]
)
def test_unbalanced_braces_are_rejected(text: str) -> None:
    # "echo }{{ x }}}": with the placeholder taken out, the braces on either side meet as '}}'; a '}}' right
    # before a placeholder closes nothing: the placeholder's own '}}' comes after its '{{'
    with pytest.raises(TemplateSyntaxError) as info:
        parse_template(text)
    assert str(info.value) == "unbalanced '{{' or '}}'"


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("'{{ x }}'", "{{ x }}"),  # a quote as the very first character opens
        ('"{{ x }}" -v', "{{ x }}"),
        ("{{ x }} '{{ y }}'", "{{ y }}"),  # the first placeholder inside quotes, not the first placeholder
        ("'{{ x }} {{ y }}'", "{{ x }}"),  # one placeholder: up to its own '}}'
        ("echo }} '{{ x }}'", "{{ x }}"),  # a '}}' before the placeholder closes nothing
        ("{{ x }}'{{ y }}'", "{{ y }}"),  # a quote right after a placeholder opens
        ("{{ x' }} {{ y }}", None),  # a quote inside a placeholder is no shell quote
        ("{{ x '{{ y", None),  # an unclosed placeholder outside quotes runs to the end of the text
        ("echo \\a'{{ x }}'", "{{ x }}"),  # a backslash escapes one character: the quote after it opens
        ("iptables -X {{ chain }}", None),  # only ' and " open quotes
        ("echo '{{ x", "{{ x"),  # an unclosed placeholder inside quotes: the rest of the text
        ("echo {{ x }} 'a' \"b\"", None),  # quotes closed before and after: outside
        ("{{ x }}", None),
    ],
)
def test_quoted_placeholder_finds_the_first_placeholder_inside_shell_quotes(text: str, found: str | None) -> None:
    assert quoted_placeholder(text) == found


@pytest.mark.parametrize(
    ("text", "rendered"),
    [
        (FormatText("a; flush ruleset", "nft"), "'\"a; flush ruleset\"'"),  # one nft string, then one shell word
        (FormatText('say "hi"', "json"), '\'"say \\"hi\\""\''),  # a JSON string, its quotes escaped
    ],
)
def test_a_text_value_is_written_by_its_formats_writer_then_quoted(text: FormatText, rendered: str) -> None:
    assert render_template("nft add rule ip t c comment {{ x }}", {"x": text}) == (
        "nft add rule ip t c comment " + rendered
    )


def test_rendered_words_says_whether_a_value_renders_as_a_list() -> None:
    assert rendered_words("a b", ()) == (["a b"], False)  # one word, whatever it holds
    assert rendered_words(["a b"], ()) == (["a b"], True)  # a list of one item is still a list
    assert rendered_words(["a", "b"], ("csv",)) == (["a,b"], False)  # csv makes one word of a list
    assert rendered_words(4, ("hexmask",)) == (["0000000f"], False)


def test_each_placeholder_is_checked_against_its_own_place() -> None:
    # three places in order: echo's text, an argument of ip (no leading '-'), a file after '--' (any)
    text = "echo {{ a }}; ip link show {{ b }}; cat -- {{ c }}"
    slots = analyze(text)
    assert (
        render_template(text, {"a": "x", "b": "eth0", "c": "-f"}, slots=slots) == "echo x; ip link show eth0; cat -- -f"
    )
    with pytest.raises(ValueError, match=r"^b: '-f' starts with '-': ip would read it as an option"):
        render_template(text, {"a": "x", "b": "-f", "c": "-f"}, slots=slots)


def test_a_value_is_checked_as_the_class_of_its_variable_after_its_filters() -> None:
    # '3' may begin the line echo writes; a word may not: a parameter whose values are words is refused there even
    # when this value is a number, a value learnt at run time only for what it is
    text = "echo {{ x | lower }} > f"
    slots = analyze(text)

    def classes(name: str, filters: tuple[str, ...]) -> ValueClass:
        return {("x", ("lower",)): ValueClass("word")}.get((name, filters), RUNTIME)

    with pytest.raises(ValueError) as info:
        render_template(text, {"x": "3"}, slots=slots, classes=classes)
    assert str(info.value).startswith("x: '3' begins a statement of text echo writes")
    assert render_template(text, {"x": "3"}, slots=slots) == "echo 3 > f"
