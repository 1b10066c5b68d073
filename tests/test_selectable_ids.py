"""Every test can be selected again by its id: parameters pytest would escape are spelled (selectable_ids)."""

from __future__ import annotations

import pytest
from selectable_ids import selectable, spelled


def test_every_collected_test_has_an_id_it_can_be_selected_by(request: pytest.FixtureRequest) -> None:
    unselectable = [item.nodeid for item in request.session.items if not selectable(item.nodeid)]
    assert unselectable == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [(" ", True), ("~", True), ("a b[1-x]::y/z.py", True), ("\x1f", False), ("\x7f", False), ("\\", False)],
    ids=["space", "tilde", "nodeid", "unit-separator", "delete", "backslash"],
)
def test_only_printable_ascii_without_a_backslash_is_selectable(text: str, expected: bool) -> None:
    assert selectable(text) is expected


def test_spelling_names_each_character_pytest_would_escape_and_keeps_the_rest() -> None:
    assert spelled("a\\b\n\t\r c~") == "a<backslash>b<newline><tab><return> c~"
    assert spelled("é\x00\u202f") == "<U+00E9><U+0000><U+202F>"
    assert spelled(b"x\xff") == "x<U+00FF>"
    assert selectable(spelled("printf '%b\\n' {{ x }}\n\xa0é"))


def test_a_parameter_pytest_would_escape_gets_the_spelled_id_and_any_other_keeps_pytests(
    pytestconfig: pytest.Config,
) -> None:
    hook = pytestconfig.hook.pytest_make_parametrize_id
    assert hook(config=pytestconfig, val="a\nb", argname="text") == "a<newline>b"
    assert hook(config=pytestconfig, val=b"\\", argname="raw") == "<backslash>"
    assert hook(config=pytestconfig, val="plain text", argname="text") is None
    assert hook(config=pytestconfig, val=1.5, argname="rate") is None
