"""An escape JSON does not know keeps its backslash at every tolerant reading (escapes.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import outform
from outform.parse.escapes import keep_unknown

REGEX_AND_PATH = r'{"pattern": "\d{3}-\d{4}", "path": "C:\Program Files\app", trailing: 1,}'


def test_a_regex_and_a_windows_path_keep_their_backslashes_at_full() -> None:
    result = outform.parse(REGEX_AND_PATH, level="full")
    assert result.data == {
        "pattern": r"\d{3}-\d{4}",
        "path": r"C:\Program Files\app",
        "trailing": 1,
    }
    (change,) = result.changes
    assert r"kept the backslash of escapes JSON does not know (\d, \P, \a)" in change.detail


def test_the_json5_reading_is_the_one_that_keeps_them() -> None:
    result = outform.parse(r"{'a': '\x41 \v \0', b: 'it\'s'}", level="full")
    assert result.data == {"a": r"\x41 \v \0", "b": "it's"}
    assert result.changes[0].transform == "pyjson5"


def test_a_broken_reply_keeps_them_through_json_repair_too() -> None:
    result = outform.parse(r'{"pattern": "\w+\s", "n": 1 "m": 2}', level="full")
    assert result.data == {"pattern": r"\w+\s", "n": 1, "m": 2}


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        (r'"\n\t\"\\\/\b\f\r\u0041"', r'"\n\t\"\\\/\b\f\r\u0041"'),  # JSON's own: as they are
        (r'"a\\d"', r'"a\\d"'),  # an escaped backslash, then a letter
        (r'"\\\d"', r'"\\\\d"'),  # an escaped backslash, then an unknown escape
        (r'"it\'s"', r'"it\'s"'),  # a quote, as JSON5 reads it
        ('"one \\\ntwo"', '"one \\\ntwo"'),  # JSON5's line continuation
        ("\\d \\", "\\\\d \\"),  # a backslash ending the text escapes nothing
    ],
)
def test_only_an_escape_json_does_not_know_is_rewritten(text: str, kept: str) -> None:
    assert keep_unknown(text)[0] == kept


def test_strict_json_is_never_rewritten() -> None:
    assert outform.parse(r'{"a": "\\d"}', level="full").data == {"a": "\\d"}


def test_a_text_holding_every_mark_character_is_rewritten_alike() -> None:
    """The escaped backslashes are set aside under a private-use character the text does not
    hold; a text that holds them all takes the slower way, to the same result and kinds."""
    from outform.parse.escapes import _MARKS

    assert keep_unknown("\\\\d \\d \\x " + _MARKS) == (
        "\\\\d \\\\d \\\\x " + _MARKS,
        ["\\d", "\\x"],
    )
    assert keep_unknown("\\\\d \\d \\x " + _MARKS[1:]) == (
        "\\\\d \\\\d \\\\x " + _MARKS[1:],
        ["\\d", "\\x"],
    )
    assert keep_unknown("\\\\d \\d \\x ") == ("\\\\d \\\\d \\\\x ", ["\\d", "\\x"])


@given(st.text(alphabet=["\\", "\\", "\\", "d", "n", "u", '"', "'", "„", "\n", "x", " ", "\ue000"]))
def test_the_passes_in_c_double_the_backslashes_the_pattern_finds(text: str) -> None:
    """The rule written as one pattern (a backslash after an even run of backslashes, before
    a character JSON does not know), against the passes of `str.replace` that apply it."""
    from outform.parse.escapes import _PAIRED

    assert keep_unknown(text)[0] == _PAIRED.sub(r"\1\\\\", text)


@given(st.text(alphabet=["\\", "\\", "\\", "d", "n", '"', "x"]))
def test_the_rewrite_window_by_window_is_the_rewrite_of_the_whole(text: str) -> None:
    """Where no mark is free the pattern rewrites the text a window at a time, the deadline
    read between them; a window never ends after a backslash, so none cuts an escape."""
    from outform.parse import escapes

    saved = escapes._WINDOW
    escapes._WINDOW = 3
    try:
        windowed = escapes._paired(text, None)
    finally:
        escapes._WINDOW = saved
    assert windowed == escapes._PAIRED.sub(r"\1\\\\", text)


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"s": """\\d \\n"""}', "\\d \\n"),  # a triple-quoted value is raw
        ('{"s": `C:\\Program Files`}', "C:\\Program Files"),
        ('{"s": ```\n\\d+\n```}', "\\d+"),
    ],
)
def test_a_raw_value_keeps_its_backslashes_as_written(reply: str, value: str) -> None:
    """Found by a new-user trial: the escapes JSON does not know were doubled before the
    delimit pass read the raw values, which then kept both backslashes. It reads the reply
    as written now, and the escapes are kept for the readers after it."""
    assert outform.parse(reply, level="full").data == {"s": value}


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"s": "the "best" a\\\nb"}', 'the "best" ab'),
        ('{"s": "the "best" a\\\r\nb"}', 'the "best" ab'),
        ('{"s": "the "best" \\\n\\„"}', 'the "best" „'),
        ('{"s": "the "best" \\\n\\n"}', 'the "best" \n'),
    ],
)
def test_a_line_continuation_joins_the_lines_in_a_string_rewritten(reply: str, value: str) -> None:
    """A string with quotes inside is rewritten as JSON by the delimit pass: a backslash ending
    a line joins the lines there too, as JSON5 reads it (found by a new-user trial)."""
    assert outform.parse(reply, level="full").data == {"s": value}
