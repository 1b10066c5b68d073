"""File formats recipes write text in, at their boundaries (natbench.duts.recipes.formats; docs/recipes.md):

* a format's writer refuses each character its strings cannot hold, each alone (pf.conf and nft: a double quote, a
  backslash, a control character; nft also ``$``, which it expands), and writes any other text as one string;
* where a statement begins: at the start of the text, after a format's own statement characters (pf.conf: a new
  line; nft: a new line, ``;``, ``{`` and ``}``; json: nowhere else), and in text of an unknown format after anything
  but an ASCII letter or digit or one of ``_ . : / , + = @ % -``."""

from __future__ import annotations

import pytest

from natbench.duts.recipes import parse_recipe
from natbench.duts.recipes.formats import FORMATS, MAX_TEXT_CHARS, UNKNOWN, Format
from natbench.errors import RecipeError

PF, NFT, JSON = FORMATS["pf.conf"], FORMATS["nft"], FORMATS["json"]


@pytest.mark.parametrize(
    "bad", ['a"b', "a\\b", "\x00", "a\x1fb", "a\nb", "a\tb", "a\x7fb", "a\x9fb", "a\u2028b", "a\u2029"]
)
@pytest.mark.parametrize("name", ["pf.conf", "nft"])
def test_a_quoted_string_refuses_each_character_it_cannot_hold(name: str, bad: str) -> None:
    with pytest.raises(ValueError, match=f"a {name} string cannot hold a double quote, a backslash or a control"):
        FORMATS[name].write(bad)


def test_only_nft_refuses_a_dollar() -> None:
    assert PF.write("$ext_if pass") == '"$ext_if pass"'
    with pytest.raises(ValueError, match=r"an nft string cannot hold '\$'"):
        NFT.write("a$b")


@pytest.mark.parametrize("text", ["my rule; flush ruleset", "é ü {} # '", "", "a b", "~", "a\xa0b", "\u202f"])
def test_any_other_text_is_one_string_of_the_format(text: str) -> None:
    assert PF.write(text) == NFT.write(text) == f'"{text}"'


def test_json_writes_every_text_escaped() -> None:
    assert JSON.write('a"b\\c\n$é') == '"a\\"b\\\\c\\n$\\u00e9"'


def test_a_campaigns_text_value_is_refused_by_its_formats_writer() -> None:
    r = parse_recipe(
        "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\n"
        "params:\n  note: {type: text, format: pf.conf, default: x}\n"
        "steps:\n  setup:\n    - run: echo pass on {{ note }} >> /tmp/pf.conf\n      format: pf.conf\n",
        "r.yaml",
    )
    assert r.render("setup", {"note": "$if y"}) == ["echo pass on '\"$if y\"' >> /tmp/pf.conf"]
    with pytest.raises(RecipeError, match="cannot hold a double quote") as info:
        r.resolve({"note": 'x" pass all'}, file="c.yaml")
    assert info.value.field == "note"


def test_a_text_value_is_at_most_max_text_chars_long() -> None:
    r = parse_recipe(
        "recipe: t\nfamily: forwarding\nos: linux\nstateful: false\n"
        "params:\n  note: {type: text, format: json, default: x}\n"
        "steps:\n  setup:\n    - run: echo x {{ note }} > /tmp/x.json\n      format: json\n",
        "r.yaml",
    )
    assert MAX_TEXT_CHARS == 1024
    assert r.resolve({"note": "a" * MAX_TEXT_CHARS})["note"] == "a" * MAX_TEXT_CHARS
    with pytest.raises(RecipeError, match="is longer than 1024 characters"):
        r.resolve({"note": "a" * (MAX_TEXT_CHARS + 1)})


@pytest.mark.parametrize(
    ("fmt", "previous", "starts"),
    [
        (PF, "", True),
        (PF, "pass\n", True),
        (PF, "set skip on {", False),
        (PF, "pass;", False),
        (NFT, "", True),
        (NFT, "add rule ip t c\n", True),
        (NFT, "add rule ip t c counter;", True),
        (NFT, "add chain ip t c {", True),
        (NFT, "}", True),
        (NFT, "oifname", False),
        (NFT, "ip saddr 10.0.0.1,", False),
        (JSON, "", True),
        (JSON, "[", False),
        (JSON, '{"a":', False),
        (JSON, "[1,\n", False),
    ],
)
def test_a_known_format_begins_a_statement_after_its_own_characters(fmt: Format, previous: str, starts: bool) -> None:
    assert fmt.starts_statement(previous) is starts


@pytest.mark.parametrize("plain", ["key", "x1", "Z", "key_", "a.", "a:", "a/", "a,", "a+", "key=", "a@", "a%", "a-"])
def test_an_unknown_format_continues_after_a_plain_character(plain: str) -> None:
    assert not UNKNOWN.starts_statement(plain)


@pytest.mark.parametrize("other", ["", "a {", "[", "a;", "a\n", "a)", "clé", "ü", "x²", "a\t"])
def test_an_unknown_format_begins_a_statement_after_anything_else(other: str) -> None:
    assert UNKNOWN.starts_statement(other)
    with pytest.raises(ValueError, match="no writer for text of an unknown format"):
        UNKNOWN.write("x")
