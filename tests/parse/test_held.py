"""Long strings held out of json-repair (parse/held.py): read as JSON reads them, in linear time.

json-repair copies a string it builds at every character, so its time grows with the square
of a string's length (issue 9, the fuzzer's `long_escapes` family). Pinned here by what
json-repair is handed and by counting outform's own work, never by timing it.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson
import pytest

import outform
from outform import OutputError
from outform.parse import decode, repair
from outform.parse.decode import DecodeFailure, decode_tier
from outform.parse.held import LONGER_THAN, Held, hold
from tests.parse.test_bounds import opcodes_run

ESCAPED = 'a line\\n with \\"quotes\\" and \\u00e9, \\\\ a slash \\/ '
"""A unit of string body holding JSON's escapes (as written in the reply)."""


def body(units: int, unit: str = ESCAPED) -> str:
    return unit * units


def long_units(unit: str = ESCAPED) -> int:
    """Units enough for a body over LONGER_THAN characters."""
    return LONGER_THAN // len(unit) + 2


def broken(text: str) -> str:
    """An object json-repair must read (a comma missing between two items of a list), whose
    first value is `text` between quotes."""
    return '{"text": "' + text + '", "n": 1, "m": [1 2]}'


def handed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts outform hands json-repair from now on."""
    texts: list[str] = []
    real = repair.repair

    def spy(text: str, *args: Any, **kwargs: Any) -> Any:
        texts.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(decode, "repair", spy)
    return texts


def test_json_repair_is_handed_a_placeholder_not_the_long_string(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = handed(monkeypatch)
    for units in (long_units(), 4 * long_units()):
        written = body(units)
        result = outform.parse(broken(written), {}, level="full")
        assert result.value == {"text": orjson.loads(f'"{written}"'), "n": 1, "m": [1, 2]}
    assert len(texts) == 2
    assert len(texts[0]) == len(texts[1]) < 100  # the same short text, whatever the length


def test_the_work_on_a_long_string_grows_with_its_length() -> None:
    def work(units: int) -> object:
        return outform.parse(broken(body(units)), {}, level="full")

    small = long_units()
    assert opcodes_run(lambda: work(2 * small)) / opcodes_run(lambda: work(small)) <= 2.2


def test_a_string_up_to_the_length_is_left_to_json_repair(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = handed(monkeypatch)
    reply = broken("x" * LONGER_THAN)
    assert outform.parse(reply, {}, level="full").value["text"] == "x" * LONGER_THAN
    assert texts == [reply]


@pytest.mark.parametrize(
    ("unit", "read"),
    [
        ("\\/", "/"),  # json-repair keeps the backslash
        ("\\f", "\f"),  # json-repair keeps the backslash
        ("\\ud83d\\ude00", "😀"),  # json-repair reads two lone surrogates (then refused)
        ('\\\\\\"', '\\"'),  # json-repair reads a quote alone
        ("x\\n", "x\n"),  # json-repair drops a final line break
    ],
)
def test_a_held_string_is_read_as_json_reads_it(unit: str, read: str) -> None:
    units = LONGER_THAN // len(unit) + 1
    result = outform.parse(broken(unit * units), {}, level="full")
    assert result.value["text"] == read * units
    (change,) = result.changes
    assert change.transform == "json_repair"
    assert "read 1 string as JSON (over 4,096 characters, or escaped)" in change.detail


def test_an_unknown_escape_keeps_its_backslash_as_json_repair_keeps_it() -> None:
    short, long = broken("\\x1"), broken("\\x1" * long_units("\\x1"))
    assert outform.parse(short, {}, level="full").value["text"] == "\\x1"
    assert outform.parse(long, {}, level="full").value["text"] == "\\x1" * long_units("\\x1")


def test_an_escape_json_lacks_keeps_its_backslash_short_or_long() -> None:
    # json-repair alone reads \x41 as "A"; every tolerant tier reads the text with such a
    # backslash kept (escapes.py), as a held string and a string the delimit pass rewrites do
    assert outform.parse(broken("\\x41"), {}, level="full").value["text"] == "\\x41"
    units = long_units("\\x41")
    assert outform.parse(broken("\\x41" * units), {}, level="full").value["text"] == (
        "\\x41" * units
    )


def test_a_lone_surrogate_in_a_held_string_is_refused_as_in_json_repairs_reading() -> None:
    for units in (1, long_units("\\ud800")):
        outcome = decode_tier(broken("\\ud800" * units), 2)
        assert isinstance(outcome, DecodeFailure)
        assert outcome.refused
        assert "json_repair read a lone surrogate (\\ud800)" in outcome.message


def test_a_string_cut_off_at_the_end_is_held_too(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = handed(monkeypatch)
    written = body(long_units())
    result = outform.parse('{"n": 1, "m": [1 2], "text": "' + written, {}, level="full")
    assert result.value == {"n": 1, "m": [1, 2], "text": orjson.loads(f'"{written}"')}
    assert all(len(text) < 100 for text in texts)


@pytest.mark.parametrize(
    "reply",
    [
        # a key is never held
        '{"' + "k" * (LONGER_THAN + 1) + '": 1, "m": [1 2]}',
        # a quote the rule does not confirm as the end (a word that is no key after it)
        '{"text": "' + "x\\n" * LONGER_THAN + '" more words}',
        # a single-quoted string, and a string at the top level: json-repair reads brackets
        # inside them as structure
        "{'text': '" + "x\\n" * LONGER_THAN + '\', "n": 1, "m": [1 2]}',
        '"' + "x\\n" * LONGER_THAN + '\\u12"',  # (an escape no reader but json-repair takes)
    ],
)
def test_what_the_rule_does_not_delimit_is_left_to_json_repair(
    monkeypatch: pytest.MonkeyPatch, reply: str
) -> None:
    texts = handed(monkeypatch)
    with contextlib.suppress(OutputError):
        outform.parse(reply, {}, level="full")
    assert texts == [reply]


def test_a_placeholder_json_repair_changed_leaves_the_reading_to_it() -> None:
    held = Held('["\ue0000\ue000"]', ("long",), "\ue000")
    assert held.put_back(["\ue0000\ue000", {"a": ["\ue0000\ue000"]}]) == (
        ["long", {"a": ["long"]}],
        True,
    )
    assert held.put_back("\ue0000\ue000") == ("long", True)
    assert held.put_back(["\ue0000\ue000 and more"])[1] is False
    assert held.put_back({"\ue0000\ue000": 1})[1] is False
    assert held.put_back(["\ue0001\ue000"])[1] is False  # no such string


def test_the_marker_is_a_character_the_text_lacks() -> None:
    text = '["' + "\ue000" * (LONGER_THAN + 1) + '"]'
    held = hold(text)
    assert held is not None
    assert held.marker != "\ue000"
    assert held.strings == ("\ue000" * (LONGER_THAN + 1),)
    assert hold('["short"]') is None
