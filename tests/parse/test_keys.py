"""A tolerant reading may use as keys only text the reply writes as keys (parse/keys.py)."""

from __future__ import annotations

import pytest

import outform
from outform.parse.decode import DecodeFailure, decode_tier
from outform.parse.keys import before_colons, invented


def test_a_value_read_as_a_key_is_refused_with_a_hint() -> None:
    """json-repair reads `[1, 2, {bad}, 3]` as `[1, 2, {"3": ""}]`: `3` was an item."""
    outcome = decode_tier("[1, 2, {bad}, 3]", 2)
    assert isinstance(outcome, DecodeFailure) and outcome.refused
    assert "makes a key of '3'" in outcome.message
    with pytest.raises(outform.OutputError) as caught:
        outform.parse("[1, 2, {bad}, 3]", {}, level="full")
    assert caught.value.hint.is_syntax
    assert "a value read as a key" in caught.value.what


def test_a_value_after_the_members_is_not_made_a_key() -> None:
    reply = '{ "key": ["a"], "key3": "value3", ["arrayvalue1"] }'
    with pytest.raises(outform.OutputError) as caught:
        outform.parse(reply, {"type": "object"}, level="full")
    assert "arrayvalue1" in caught.value.what


def test_a_key_written_before_a_colon_inside_an_open_string_is_a_key() -> None:
    # The string `"first` is left open; json-repair reads `b` as the next key, which the reply
    # writes before a colon.
    assert outform.parse('{"a": "first, b: 1}', level="full").data == {"a": "first", "b": 1}


def test_keys_are_compared_by_their_letters_and_digits() -> None:
    assert invented({"unit price": 1, "café": 2}, {"unitprice", "café"}) is None
    assert invented([{"a": {"b": 1}}], {"a"}) == "b"
    assert invented({"": 1, "--": 2}, set()) is None  # no content: nothing to ask


def test_the_words_and_quoted_names_before_colons() -> None:
    assert before_colons('{"unit price": 1, b : 2, x: "k:v"}') >= {"unitprice", "price", "b"}
