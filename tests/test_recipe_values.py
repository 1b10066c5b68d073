"""What a recipe value's text can be, at its boundaries (natbench.duts.recipes.values; docs/recipes.md):

* the class of a declared type after its filters (``number`` within ``datum`` within ``word`` within ``phrase``;
  ``text`` and ``runtime`` within nothing but themselves), which decides where a recipe may put a placeholder;
* the checks of one rendered word: a number, a datum (by type, or a value learnt at run time starting with a digit),
  one plain token, plain tokens separated by single blanks: each matches the whole word, not a prefix of it."""

from __future__ import annotations

import pytest

from natbench.duts.recipes import parse_recipe
from natbench.duts.recipes.params import ParamSpec
from natbench.duts.recipes.values import (
    RUNTIME,
    ValueClass,
    builtin_class,
    class_of,
    is_datum,
    is_number,
    is_phrase,
    is_token,
)
from natbench.errors import RecipeError

ORDER = ("number", "datum", "word", "phrase")


def recipe(commands: str, params: str) -> str:
    head = "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\n"
    return head + "params:\n" + params + "steps:\n  setup:\n" + commands


def spec(declaration: str) -> ParamSpec:
    """The declared parameter ``v: <declaration>`` of a recipe."""
    return parse_recipe(recipe("    - ip link\n", f"  v: {declaration}\n"), "r.yaml").params["v"]


def loads(command: str, declaration: str) -> None:
    parse_recipe(recipe(f"    - {command}\n", f"  v: {declaration}\n"), "r.yaml")


# --- the order of the classes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "wider"),
    [
        ("number", {"number", "datum", "word", "phrase"}),
        ("datum", {"datum", "word", "phrase"}),
        ("word", {"word", "phrase"}),
        ("phrase", {"phrase"}),
    ],
)
def test_a_class_is_within_itself_and_every_wider_one_only(kind: str, wider: set[str]) -> None:
    assert {other for other in ORDER if ValueClass(kind).within(other)} == wider


def test_text_and_a_value_learnt_at_run_time_are_within_their_own_class_only() -> None:
    text = ValueClass("text", format="nft")
    assert text.within("text") and RUNTIME.within("runtime")
    for kind in ORDER:
        assert not text.within(kind) and not RUNTIME.within(kind)  # answered, not raised
        assert not ValueClass(kind).within("text") and not ValueClass(kind).within("runtime")
    assert not text.within("runtime") and not RUNTIME.within("text")


def test_each_class_is_described_for_messages() -> None:
    assert ValueClass("text", format="pf.conf").describe() == "text (pf.conf)"
    assert [ValueClass(k).describe() for k in ORDER] == ["a number", "an address, number or mask", "a word", "a string"]
    assert RUNTIME.describe() == "a value learnt at run time"


def test_a_recipe_error_names_a_text_parameter_by_its_format() -> None:
    with pytest.raises(RecipeError, match=r"placeholder \{\{ v \}\} is text \(nft\) and stands in"):
        loads("ip link set {{ v }} up", "{type: text, format: nft, default: x}")


# --- the class of a declared type, after its filters -----------------------------------------------------------


def test_a_variable_no_parameter_declares_is_checked_when_rendered() -> None:
    assert class_of(None, ()) == RUNTIME
    assert class_of(None, ("len",)) == RUNTIME  # filters do not make a value learnt at run time any safer


def test_the_variables_natbench_supplies_have_the_class_of_what_it_supplies() -> None:
    assert builtin_class("cores") == ValueClass("number")
    assert builtin_class("cpus") == ValueClass("number", True)  # a list of CPU numbers
    assert builtin_class("dut") == ValueClass("word")
    assert builtin_class("orig_ip_forward") == RUNTIME  # a saved output


@pytest.mark.parametrize(
    ("declaration", "expected"),
    [
        ("{type: int, default: 1}", ValueClass("number")),
        ("{type: bool, default: true}", ValueClass("number")),
        ("{type: float, default: 0.5}", ValueClass("number")),
        ("{type: ip, default: 10.0.0.1}", ValueClass("datum")),
        ("{type: ipv4, default: 10.0.0.1}", ValueClass("datum")),
        ("{type: ipv6, default: '::1'}", ValueClass("datum")),
        ("{type: net, default: 10.0.0.0/8}", ValueClass("datum")),
        ("{type: ipv4_net, default: 10.0.0.0/8}", ValueClass("datum")),
        ("{type: ipv6_net, default: '64:ff9b::/96'}", ValueClass("datum")),
        ("{type: mac, default: '02:00:00:00:00:01'}", ValueClass("datum")),
        ("{type: port_range, default: 1-2}", ValueClass("datum")),
        ("{type: interface, default: eth0}", ValueClass("word")),
        ("{type: str, default: a}", ValueClass("word")),  # without a pattern: one plain token
        ("{type: str, pattern: '[a-z ]+', default: a}", ValueClass("phrase")),  # the pattern may allow a blank
        ("{type: choice, choices: [fast, slow], default: fast}", ValueClass("word")),
        ("{type: choice, choices: [fast path, slow], default: slow}", ValueClass("phrase")),
        ("{type: list, items: str, default: [a]}", ValueClass("word", True)),
        ("{type: list, items: ipv4, default: [10.0.0.1]}", ValueClass("datum", True)),
        ("{type: list, items: int, default: [1]}", ValueClass("number", True)),
        ("{type: text, format: pf.conf, default: x}", ValueClass("text", format="pf.conf")),
    ],
)
def test_the_class_of_each_type(declaration: str, expected: ValueClass) -> None:
    assert class_of(spec(declaration), ()) == expected


@pytest.mark.parametrize(
    ("declaration", "filters", "expected"),
    [
        ("{type: list, items: str, default: [a]}", ("len",), ValueClass("number")),
        ("{type: ipv4_net, default: 10.0.0.0/8}", ("plen",), ValueClass("number")),
        ("{type: ipv4_net, default: 10.0.0.0/8}", ("addr",), ValueClass("datum")),
        ("{type: list, items: int, default: [1]}", ("hexmask",), ValueClass("datum")),
        ("{type: int, default: 60}", ("hms",), ValueClass("datum")),  # 0:01:00 is no number
        ("{type: port_range, default: 1-2}", ("first",), ValueClass("number")),
        ("{type: port_range, default: 1-2}", ("last",), ValueClass("number")),
        ("{type: list, items: port_range, default: [1-2]}", ("first",), ValueClass("datum")),  # a range: 1-2
        ("{type: list, items: port_range, default: [1-2]}", ("last",), ValueClass("datum")),
        ("{type: list, items: int, default: [1]}", ("last",), ValueClass("number")),
        ("{type: ipv4, default: 10.0.0.1}", ("first",), ValueClass("datum")),  # only a port range's ends are numbers
        ("{type: list, items: str, default: [a]}", ("csv",), ValueClass("word")),
        ("{type: str, default: a}", ("words",), ValueClass("word", True)),
        ("{type: list, items: str, default: [a]}", ("csv", "words"), ValueClass("word", True)),
        ("{type: int, default: 1}", ("upper",), ValueClass("number")),
    ],
)
def test_the_class_after_filters(declaration: str, filters: tuple[str, ...], expected: ValueClass) -> None:
    assert class_of(spec(declaration), filters) == expected


ARITHMETIC = "n={{ v }}; echo $((n + 1))"


def test_where_a_recipe_may_put_a_value_follows_its_class_after_filters() -> None:
    """Load-time rules a recipe's author meets: a number reaches $(( )), one word is assigned, a list is not."""
    loads(ARITHMETIC.replace("v", "v | plen"), "{type: ipv4_net, default: 10.0.0.0/8}")
    loads(ARITHMETIC.replace("v", "v | last"), "{type: port_range, default: 1-2}")
    with pytest.raises(RecipeError, match="is an address, number or mask and reaches arithmetic"):
        loads(ARITHMETIC.replace("v", "v | hms"), "{type: int, default: 60}")
    with pytest.raises(RecipeError, match="is an address, number or mask and reaches arithmetic"):
        loads(ARITHMETIC.replace("v", "v | first"), "{type: list, items: port_range, default: [1-2]}")
    with pytest.raises(RecipeError, match="is a word and reaches arithmetic"):
        loads(ARITHMETIC, "{type: choice, choices: [fast, slow], default: fast}")
    with pytest.raises(RecipeError, match="is a string and reaches arithmetic"):
        loads(ARITHMETIC, "{type: str, pattern: '[a-z ]+', default: a}")
    with pytest.raises(RecipeError, match="is a list"):
        loads("x={{ v }}; ip addr add $x dev eth0", "{type: list, items: ipv4, default: [10.0.0.1]}")
    with pytest.raises(RecipeError, match="is a list"):
        loads("x={{ v | words }}; ip link set $x up", "{type: str, default: a}")
    loads("x={{ v | csv }}; ip link set $x up", "{type: list, items: ipv4, default: [10.0.0.1]}")


# --- one rendered word -----------------------------------------------------------------------------------------


def test_a_number_is_the_whole_word() -> None:
    for word in ("12", "-12", "0.5", "1e-05", "2E+3"):
        assert is_number(word), word
    for word in ("12abc", "1 2", "1.", "0x10", "", "-", "1e"):
        assert not is_number(word), word


def test_a_datum_by_type_or_learnt_at_run_time_starting_with_a_digit() -> None:
    assert is_datum("anything", ValueClass("datum")) and is_datum("1", ValueClass("number"))
    assert is_datum("1", RUNTIME) and is_datum("262144", RUNTIME) and is_datum("-1", RUNTIME)
    assert not is_datum("block", RUNTIME) and not is_datum("x1", RUNTIME) and not is_datum("-x", RUNTIME)
    assert not is_datum("1;x", RUNTIME) and not is_datum("1 block", RUNTIME)  # the whole word, not its start
    assert not is_datum("1", ValueClass("word")) and not is_datum("1", ValueClass("phrase"))  # typed: the type decides


def test_a_token_and_a_phrase_are_the_whole_word() -> None:
    assert is_token("eth0.1") and is_token("a_b:c/d,e+f-g")
    for word in ("a b", "a;b", "eth0 ", "", "a\n"):
        assert not is_token(word), word
    assert is_phrase("a b") and is_phrase("CE 11b") and is_phrase("x")
    for word in ("a;reboot", "a  b", " a", "a ", "a\tb", "a\n", ""):
        assert not is_phrase(word), word
