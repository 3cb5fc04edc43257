"""Stage *unescape*: JSON that arrived encoded inside a JSON string, once or twice."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given, settings

import outform
from outform.parse.unescape import looks_escaped, unescape_text, unescape_value
from tests.parse.strategies import json_objects

OBJECT = {"type": "object"}


def transforms(result: outform.ParseResult[Any]) -> list[str]:
    return [change.transform for change in result.changes]


@pytest.mark.parametrize("text", ['{\\"a\\": 1}', '[\\"x\\"]', '[{\\"a\\": 1}]'])
def test_json_with_every_quote_escaped_looks_escaped(text: str) -> None:
    assert looks_escaped(text)


@pytest.mark.parametrize("text", ['{"a": 1}', "plain text", '"quoted"'])
def test_ordinary_json_and_text_do_not_look_escaped(text: str) -> None:
    assert not looks_escaped(text)


def test_escaped_text_is_read_as_the_body_of_a_json_string() -> None:
    assert unescape_text('{\\"a\\": 1}') == '{"a": 1}'


def test_text_that_is_no_string_body_or_unchanged_gives_none() -> None:
    assert unescape_text("dangling \\") is None
    assert unescape_text('{"a": 1}') is None


def test_a_string_holding_json_is_decoded_once_per_level() -> None:
    assert unescape_value('{"a": 1}', 2) == ({"a": 1}, 1)
    assert unescape_value('"{\\"a\\": 1}"', 2) == ({"a": 1}, 2)


def test_decoding_stops_at_the_depth_limit() -> None:
    assert unescape_value('"{\\"a\\": 1}"', 1) == ('{"a": 1}', 1)
    assert unescape_value('{"a": 1}', 0) == ('{"a": 1}', 0)


def test_strings_that_hold_no_container_are_left_alone() -> None:
    assert unescape_value("hello", 2) == ("hello", 0)
    assert unescape_value('"\\"just text\\""', 2) == ('"\\"just text\\""', 0)
    assert unescape_value("{not json", 2) == ("{not json", 0)


def test_values_that_are_not_strings_are_left_alone() -> None:
    value = {"a": "{}"}
    assert unescape_value(value, 2) == (value, 0)


def test_a_reply_that_is_a_json_string_of_an_object_is_unwrapped() -> None:
    result = outform.parse('"{\\"a\\": 1}"', OBJECT)
    assert result.value == {"a": 1}
    assert transforms(result) == ["decode_nested_json"]
    assert result.changes[0].stage == "syntactic"


def test_a_reply_with_escaped_quotes_and_no_outer_quotes_is_unescaped() -> None:
    result = outform.parse('{\\"a\\": 1}', OBJECT)
    assert result.value == {"a": 1}
    assert transforms(result) == ["unescape_text"]


def test_a_twice_encoded_object_is_unwrapped_at_the_default_depth() -> None:
    twice = orjson.dumps(orjson.dumps({"a": 1}).decode()).decode()
    reply = orjson.dumps(twice).decode()
    assert outform.parse(reply, OBJECT).value == {"a": 1}


def test_a_string_schema_takes_an_encoded_object_as_written() -> None:
    reply = '"{\\"a\\": 1}"'
    result = outform.parse(reply, {"type": "string"})
    assert result.value == reply
    assert result.changes == ()


def test_without_the_unescape_stage_an_escaped_reply_is_not_read() -> None:
    with pytest.raises(outform.OutputError):
        outform.parse('{\\"a\\": 1}', OBJECT, stages=("extract", "decode", "coerce"))


@settings(max_examples=100, deadline=None)
@given(value=json_objects)
def test_any_object_encoded_as_a_json_string_reads_back(value: dict[str, Any]) -> None:
    reply = orjson.dumps(orjson.dumps(value).decode()).decode()
    result = outform.parse(reply, OBJECT)
    assert orjson.dumps(result.value) == orjson.dumps(value)


def nested(value: Any, levels: int) -> str:
    """`value` as JSON, then encoded as a JSON string `levels` more times."""
    text = orjson.dumps(value).decode()
    for _ in range(levels):
        text = orjson.dumps(text).decode()
    return text


@pytest.mark.parametrize("levels", [3, 5, 8])
def test_unescape_depth_works_at_every_depth(levels: int) -> None:
    """Issue 11: a depth above 2 had no effect (three levels still failed at depth 10)."""
    reply = nested({"a": 1}, levels)
    result = outform.parse(reply, {"type": "object", "required": ["a"]}, unescape_depth=10)
    assert result.value == {"a": 1}
    assert unescape_value(orjson.loads(reply), 10) == ({"a": 1}, levels)


def test_the_depth_setting_bounds_the_levels_decoded() -> None:
    reply = nested({"a": 1}, 4)
    assert unescape_value(orjson.loads(reply), 2)[1] == 0  # stopped inside quotes: undone
    with pytest.raises(outform.OutputError):
        outform.parse(reply, {"type": "object", "required": ["a"]}, unescape_depth=1)


def test_escaped_json_without_its_quotes_is_unescaped_level_after_level() -> None:
    reply = nested({"a": 1}, 2)[1:-1]  # the outer quotes were lost on the way
    result = outform.parse(reply, {"type": "object", "required": ["a"]}, unescape_depth=3)
    assert result.value == {"a": 1}


@pytest.mark.parametrize(
    "value",
    [
        {"": [None, {"": {}, "[": "{"}]},
        {"note": "[Answer] {braces}", "n": {}},
    ],
)
def test_brackets_inside_an_encoded_object_are_its_strings_not_prose_labels(
    value: dict[str, Any],
) -> None:
    """Inside a reply written as a JSON string, `[\\":\\"{\\"}]` is part of the string: it is
    read back whole, never cut out as a prose label (which left `{}`, found inside it)."""
    reply = orjson.dumps(orjson.dumps(value).decode()).decode()
    assert outform.parse(reply, OBJECT).value == value
