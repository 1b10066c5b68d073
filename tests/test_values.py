"""Readable numbers and port ranges: exact values at the boundaries and the exact message for bad input."""

from __future__ import annotations

from typing import Any

import pytest

from natbench.traffic.ports import PortRange
from natbench.values import (
    MAX_VALUE,
    format_bytes,
    format_count,
    parse_bytes,
    parse_count,
    parse_number,
    parse_port_range,
    parse_power,
)

NUMBER_HELP = "expected a number such as 200000, 200k or 2^17, got "
RANGE_HELP = "expected a port range such as '1-4000', {first: 1, last: 4000} or a count 4000, got "

# -- parse_number ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2^0", 1.0),  # B^0 = 1
        ("2^23", 8_388_608.0),  # seed 000 table size: 2^23 = 8388608
        ("2**10", 1024.0),
        ("10^3", 1000.0),  # base and exponent must not be swapped: 3^10 would be 59049
        (" 2 ^ 3 ", 8.0),  # 2*3 = 6 and 3^3 = 27 would be wrong
        ("200k", 200_000.0),
        ("3K", 3_000.0),
        ("1.5M", 1_500_000.0),
        ("7.44M", 7_440_000.0),
        ("1G", 1_000_000_000.0),
        (" 7 k ", 7_000.0),
        ("1_000", 1000.0),
        ("1_000k", 1_000_000.0),  # underscores go before the suffix is read: 1000 * 1000
        ("1.5", 1.5),
        ("  42  ", 42.0),
        ("1e3", 1000.0),
    ],
)
def test_parse_number_reads_powers_si_suffixes_and_plain_numbers(text: str, value: float) -> None:
    assert parse_number(text) == value


def test_parse_number_takes_ints_and_floats_as_they_are() -> None:
    got = parse_number(5)
    assert got == 5.0 and isinstance(got, float)
    assert parse_number(2.5) == 2.5


def test_parse_number_rejects_a_bool_naming_it() -> None:
    with pytest.raises(ValueError) as info:
        parse_number(True)
    assert str(info.value) == "expected a number, got True"


@pytest.mark.parametrize(
    ("bad", "shown"), [("x", "'x'"), ("2^", "'2^'"), ("", "''"), ("1.5X", "'1.5X'"), (None, "None")]
)
def test_parse_number_names_the_bad_value_and_shows_examples(bad: Any, shown: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_number(bad)
    assert str(info.value) == NUMBER_HELP + shown


def test_a_bad_value_of_40_characters_is_shown_whole_and_a_longer_one_cut_to_40() -> None:
    # repr of 38 letters is 40 characters with its quotes: shown as it is
    with pytest.raises(ValueError) as info:
        parse_number("x" * 38)
    assert str(info.value) == NUMBER_HELP + "'" + "x" * 38 + "'"
    # 39 letters: 41 characters, cut to 40 (the opening quote, 36 letters and '...')
    with pytest.raises(ValueError) as info:
        parse_number("x" * 39)
    assert str(info.value) == NUMBER_HELP + "'" + "x" * 36 + "..."


# -- parse_count ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "count"),
    [
        (8_388_608, 8_388_608),
        ("8388608", 8_388_608),
        ("2^23", 8_388_608),
        ("4M", 4_000_000),
        ("1.5M", 1_500_000),  # whole after scaling: 1.5 * 10^6
        (" 1_000 ", 1000),
        (4.0, 4),  # a whole float is a count
        ("2^0", 1),
    ],
)
def test_parse_count_gives_an_int(value: Any, count: int) -> None:
    got = parse_count(value)
    assert got == count and type(got) is int


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        (True, "True"),
        (1.5, "1.5"),  # a float that is not whole
        ("1.5", "'1.5'"),  # text that parses to a fraction
        ("1.0005k", "'1.0005k'"),  # 1000.5
    ],
)
def test_parse_count_rejects_fractions_naming_the_value(bad: Any, shown: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_count(bad)
    assert str(info.value) == f"expected a whole number, got {shown}"


def test_parse_count_of_text_that_is_no_number_shows_the_number_forms() -> None:
    with pytest.raises(ValueError) as info:
        parse_count("lots")
    assert str(info.value) == NUMBER_HELP + "'lots'"


# -- format_count ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0"),
        (1, "1"),  # 2^0, but below 2^10: written out
        (512, "512"),  # 2^9: written out
        (1000, "1,000"),
        (1023, "1,023"),
        (1024, "2^10"),  # the smallest power written as a power
        (1025, "1,025"),
        (8_388_608, "2^23"),
        (3_145_728, "3,145,728"),  # 3 * 2^20 is no power of two
    ],
)
def test_format_count_writes_powers_of_two_from_2_10_as_powers(n: int, text: str) -> None:
    assert format_count(n) == text


# -- parse_port_range -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "first", "last"),
    [
        ("1-4000", 1, 4000),
        (" 1024 - 2047 ", 1024, 2047),
        ("5-9", 5, 9),
        ({"first": 1, "last": 4000}, 1, 4000),
        ({"first": "2^10", "last": "2^11"}, 1024, 2048),
        ({"first": 1024, "count": 4000}, 1024, 5023),  # 1024 + 4000 - 1
        ({"first": 7, "count": 1}, 7, 7),  # one port
        (4000, 1, 4000),  # a count N means 1..N (seed 004)
        ("250", 1, 250),
        ("2^10", 1, 1024),
        (1, 1, 1),
        (65535, 1, 65535),
    ],
)
def test_port_range_forms_give_the_exact_range(value: Any, first: int, last: int) -> None:
    assert parse_port_range(value) == PortRange(first, last)


def test_a_port_range_is_returned_unchanged() -> None:
    r = PortRange(3, 4)
    assert parse_port_range(r) is r


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (0, "port count must be at least 1, got 0"),
        (-5, "port count must be at least 1, got -5"),
        ({"first": 5, "count": 0}, "port count must be at least 1, got 0"),
        (
            {"first": 1},
            "a port range mapping needs keys first and last (or first and count), got ['first']",
        ),
        (
            {"first": 1, "last": 2, "count": 2},
            "a port range mapping needs keys first and last (or first and count), got ['count', 'first', 'last']",
        ),
        ("x", RANGE_HELP + "'x'"),
        ("1.5", RANGE_HELP + "'1.5'"),
        (True, RANGE_HELP + "True"),
        ("70000-1", "invalid port range 70000-1: need 1 <= first <= last <= 65535"),
        ({"first": 65000, "count": 1000}, "invalid port range 65000-65999: need 1 <= first <= last <= 65535"),
        (65536, "invalid port range 1-65536: need 1 <= first <= last <= 65535"),
    ],
)
def test_bad_port_ranges_say_what_is_wrong(bad: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_port_range(bad)
    assert str(info.value) == message


# -- parse_power ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "power"),
    [
        ("2^23", 8_388_608),
        ("2**10", 1024),
        ("10^3", 1000),  # not 3^10
        (" 2 ^ 1_0 ", 1024),  # blanks around, underscores inside, as parse_number reads them
        ("3^0", 1),
    ],
)
def test_parse_power_gives_the_integer_a_power_stands_for(value: str, power: int) -> None:
    got = parse_power(value)
    assert got == power and isinstance(got, int)


@pytest.mark.parametrize("value", ["200k", "1024", "2^", "^3", "2^-1", "2.5^2", 1024, 2.0, None, ["2^3"]])
def test_parse_power_is_none_for_anything_but_a_power(value: Any) -> None:
    assert parse_power(value) is None


# -- parse_port_range(one_port=True): a recipe parameter naming DUT ports -------------------

PORTS_HELP = "expected a port range such as '1-4000', [1024, 65535] or a port 1024, got "


@pytest.mark.parametrize(
    ("value", "first", "last"),
    [
        (1024, 1024, 1024),  # one port, not a count
        ("1024", 1024, 1024),
        ("2^10", 1024, 1024),
        ([1024, 65535], 1024, 65535),
        (("1024", "2^11"), 1024, 2048),
        ("1024-65535", 1024, 65535),
        ({"first": 1024, "last": 2047}, 1024, 2047),
        ({"first": 1024, "count": 1024}, 1024, 2047),
        (65535, 65535, 65535),
    ],
)
def test_one_port_forms_give_the_exact_range(value: Any, first: int, last: int) -> None:
    assert parse_port_range(value, one_port=True) == PortRange(first, last)


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("x", PORTS_HELP + "'x'"),
        (True, PORTS_HELP + "True"),
        ([1], PORTS_HELP + "[1]"),
        ([1, 2, 3], PORTS_HELP + "[1, 2, 3]"),
        ("1024-", PORTS_HELP + "'1024-'"),
        (0, "invalid port range 0-0: need 1 <= first <= last <= 65535"),
        (65536, "invalid port range 65536-65536: need 1 <= first <= last <= 65535"),
        ([2048, 1024], "invalid port range 2048-1024: need 1 <= first <= last <= 65535"),
    ],
)
def test_bad_one_port_ranges_say_what_is_wrong(bad: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_port_range(bad, one_port=True)
    assert str(info.value) == message


def test_a_pair_is_no_port_range_of_a_campaign() -> None:
    """In a campaign a list is a sweep, never a range: [1024, 65535] stays an error there."""
    with pytest.raises(ValueError) as info:
        parse_port_range([1024, 65535])
    assert str(info.value) == RANGE_HELP + "[1024, 65535]"


# -- the limit of 2^64, on each side --------------------------------------------------------

TOO_LARGE = " is too large: the limit is 2^64"


@pytest.mark.parametrize("text", ["2^64", "4^32", "16^16", "256^8", "18446744073709551615^1", "1^99999999999"])
def test_a_power_of_at_most_2_64_is_computed_exactly(text: str) -> None:
    base, exp = (int(part) for part in text.split("^"))
    assert parse_power(text) == base**exp
    assert parse_count(text) == base**exp


@pytest.mark.parametrize(
    "text",
    [
        "2^65",  # refused from its logarithm, 65 > 64
        "2^99999999999",  # refused at once, never computed
        "18446744073709551617^1",  # 2^64 + 1: its logarithm rounds to 64, the exact check refuses it
    ],
)
def test_a_power_beyond_2_64_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_power(text)
    assert str(info.value) == text + TOO_LARGE


def test_a_count_written_as_a_power_is_exact_beyond_a_floats_53_bits() -> None:
    # 3^39 = 4,052,555,153,018,976,267 needs 62 bits: through a float it would end in ...976,256
    assert parse_count("3^39") == 4_052_555_153_018_976_267


@pytest.mark.parametrize("parse", [parse_number, parse_count])
def test_an_int_of_at_most_2_64_in_magnitude_is_taken_and_a_larger_one_refused(parse: Any) -> None:
    assert parse(2**64) == 2**64 and parse(-(2**64)) == -(2**64)
    for beyond in (2**64 + 1, -(2**64) - 1):
        with pytest.raises(ValueError) as info:
            parse(beyond)
        assert str(info.value) == str(beyond) + TOO_LARGE


def test_a_float_of_at_most_2_64_is_taken_and_the_next_float_refused() -> None:
    assert parse_number(float(2**64)) == 2.0**64
    beyond = float(2**64) * (1 + 2**-52)  # the next float above 2^64
    with pytest.raises(ValueError) as info:
        parse_number(beyond)
    assert str(info.value) == repr(beyond) + TOO_LARGE


@pytest.mark.parametrize("bad", [float("inf"), float("-inf"), float("nan")])
def test_a_float_that_is_no_finite_number_is_refused_naming_it(bad: float) -> None:
    with pytest.raises(ValueError) as info:
        parse_number(bad)
    assert str(info.value) == f"expected a finite number, got {bad!r}"


@pytest.mark.parametrize("text", ["inf", "-Infinity", "nan", "1e999"])
def test_text_that_reads_as_no_finite_number_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_number(text)
    assert str(info.value) == f"expected a finite number, got {text!r}"


@pytest.mark.parametrize("text", ["99999999999999999999G", "1e30", "2e19"])
def test_text_beyond_2_64_after_its_suffix_or_exponent_is_refused_naming_it(text: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_number(text)
    assert str(info.value) == repr(text) + TOO_LARGE


def test_a_number_of_64_characters_is_read_and_one_of_65_refused() -> None:
    assert parse_number("200k".rjust(64)) == 200_000.0
    with pytest.raises(ValueError) as info:
        parse_number("200k".rjust(65))
    assert str(info.value) == NUMBER_HELP + "'" + " " * 36 + "..."


def test_a_port_count_beyond_2_64_says_it_is_too_large_not_that_it_is_no_range() -> None:
    with pytest.raises(ValueError) as info:
        parse_port_range("2^65")
    assert str(info.value) == "2^65" + TOO_LARGE


# -- parse_bytes, format_bytes --------------------------------------------------------------

BYTES_HELP = "expected a memory size such as 64Gi, 256G or 68719476736 (bytes), got "


@pytest.mark.parametrize("size", [0, 1, MAX_VALUE])
def test_a_whole_number_of_bytes_from_0_to_2_64_is_taken_as_it_is(size: int) -> None:
    assert parse_bytes(size) == size


@pytest.mark.parametrize("bad", [-1, MAX_VALUE + 1])
def test_a_number_of_bytes_below_0_or_above_2_64_is_refused_naming_it(bad: int) -> None:
    with pytest.raises(ValueError) as info:
        parse_bytes(bad)
    assert str(info.value) == BYTES_HELP + str(bad)


def test_a_memory_size_of_64_characters_is_read_and_one_of_65_refused() -> None:
    assert parse_bytes("64Gi".rjust(64)) == 64 * 2**30  # blanks around a size are allowed
    with pytest.raises(ValueError) as info:
        parse_bytes("64Gi".rjust(65))
    assert str(info.value) == BYTES_HELP + "'" + " " * 36 + "..."


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("4096", 4096),  # no unit: bytes
        ("4096B", 4096),
        ("2^36", 2**36),
        ("256G", 256 * 10**9),  # decimal
        ("256GB", 256 * 10**9),
        ("1.5k", 1500),
        ("64Gi", 64 * 2**30),  # binary
        ("1Ki", 1024),
        ("3Mi", 3 * 2**20),
        ("2Ti", 2 * 2**40),
        ("0.5KiB", 512),
    ],
)
def test_a_memory_size_reads_bytes_decimal_and_binary_units(text: str, size: int) -> None:
    got = parse_bytes(text)
    assert got == size and type(got) is int


def test_a_memory_size_that_is_a_bool_is_refused_naming_it() -> None:
    with pytest.raises(ValueError) as info:
        parse_bytes(True)
    assert str(info.value) == "expected a memory size, got True"


def test_a_memory_size_that_is_no_size_is_named_with_the_forms_it_may_take() -> None:
    with pytest.raises(ValueError) as info:
        parse_bytes("lots")
    assert str(info.value) == BYTES_HELP + "'lots'"


def test_a_memory_size_beyond_2_64_after_its_unit_names_the_size_as_written() -> None:
    # 20 nines of TiB: about 1.1 x 10^32 bytes, far beyond 2^64 (1.8 x 10^19)
    with pytest.raises(ValueError) as info:
        parse_bytes("99999999999999999999Ti")
    assert str(info.value) == "'99999999999999999999Ti' is too large: the limit is 2^64"


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (999_999, "999,999 B"),  # below 1 MB: bytes
        (1_000_000, "1.0 MB"),  # 1 MB exactly: megabytes
        (1_750_000, "1.8 MB"),  # 1.75 exactly rounds up to 1.8 (a hair less would give 1.7)
        (2**30 - 1, "1,073.7 MB"),  # one byte below 1 GiB: still MB alone
        (2**30, "1.1 GB (1.0 GiB)"),  # 1 GiB = 1.073741824 GB: both figures from here on
        (280 * 10**9, "280.0 GB (260.8 GiB)"),  # 280e9 / 2^30 = 260.77
        (10**18, "1,000,000,000.0 GB (931,322,574.6 GiB)"),  # 10^18 / 2^30 = 931,322,574.615
    ],
)
def test_format_bytes_writes_megabytes_from_10_6_and_gigabytes_with_gibibytes_from_2_30(n: int, text: str) -> None:
    assert format_bytes(n) == text
