"""A reply written as orjson writes its reading hides no key written twice and no misread
number: the fast path settles both with one comparison (see outform/parse/as_read.py)."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import outform
from outform.errors import InputError
from outform.parse.as_read import writing, written_as_read
from outform.parse.duplicates import find

_SPACES = st.sampled_from(["", "", " ", "\n  ", "\t", "\r\n"])
_KEYS = st.sampled_from(["a", "b", "a b", "é", "x:y"])
"""Few keys, so that objects often write one twice; a space and a colon inside some."""
_NUMBERS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda f: orjson.dumps(f).decode()),
    st.from_regex(r"-?(0|[1-9][0-9]{0,24})(\.[0-9]{1,24})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
)
_STRINGS = st.text(st.characters(codec="utf-8"), max_size=8).flatmap(
    lambda s: st.sampled_from([orjson.dumps(s).decode(), json.dumps(s)])
)


@st.composite
def _json_text(draw: st.DrawFn, depth: int = 0) -> str:
    """Strict JSON as a model may write it: any spacing, keys written twice, numbers of any
    length, strings with and without escapes."""
    kind = draw(st.sampled_from(["scalar"] * 2 + (["array", "object"] if depth < 3 else [])))
    if kind == "scalar":
        return str(draw(st.one_of(_NUMBERS, _STRINGS, st.sampled_from(["true", "null"]))))
    items = draw(st.lists(_json_text(depth + 1), max_size=4))
    if kind == "array":
        parts = [draw(_SPACES) + item + draw(_SPACES) for item in items]
        return "[" + ",".join(parts) + draw(_SPACES) + "]"
    members = [
        draw(_SPACES) + json.dumps(draw(_KEYS)) + draw(_SPACES) + ":" + draw(_SPACES) + item
        for item in items
    ]
    return "{" + ",".join(members) + draw(_SPACES) + "}"


def _numbers_read_as_written(literal_tree: Any, read: Any) -> bool:
    """Whether each number of the text (kept as its literal) is what orjson writes of its
    reading."""
    if isinstance(literal_tree, list) and literal_tree and isinstance(literal_tree[0], tuple):
        return all(_numbers_read_as_written(v, read[k]) for k, v in literal_tree)
    if isinstance(literal_tree, list):
        return all(_numbers_read_as_written(a, b) for a, b in zip(literal_tree, read, strict=True))
    if isinstance(literal_tree, _Literal):
        return orjson.dumps(read).decode() == literal_tree
    return True


class _Literal(str):
    """A number as written."""


@settings(max_examples=400, deadline=None)
@given(_json_text())
def test_a_reply_written_as_its_reading_hides_no_repeat_and_no_misread_number(text: str) -> None:
    try:
        read = orjson.loads(text)
    except orjson.JSONDecodeError:
        return  # (a number orjson refuses: not what this rule is about)
    written = writing(read)
    assert written is not None
    if not written_as_read(text, written):
        return
    # An independent reader: the standard library, keeping every member and every literal.
    literals = json.loads(text, object_pairs_hook=list, parse_float=_Literal, parse_int=_Literal)
    assert find(text) == []
    assert _numbers_read_as_written(literals, read)


@pytest.mark.parametrize(
    "text",
    ['{"a":1,"b":[true,null,"x y"]}', '{"n":18446744073709551615,"f":0.1,"g":-0.0,"s":"é"}'],
)
def test_compact_replies_are_written_as_read(text: str) -> None:
    assert written_as_read(text, orjson.dumps(orjson.loads(text)))


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',  # a key written twice
        '{"a": 1, "a": 1}',  # even with the same value
        '{"n":18446744073709551617}',  # past 64 bits: read as a float
        '{"f":9007199254740993.5}',  # a fraction a float drops
        '{"f":1e-400}',  # read as 0.0
        '{"p":1.50}',  # spelled otherwise, though read exactly: checked the long way
        '{"s":"\\u00e9"}',
        '{"s":"a\\u0020b"}',
        '{\n  "a": 1\n}',  # pretty-printed: checked the long way too
    ],
)
def test_other_replies_are_checked_the_long_way(text: str) -> None:
    assert not written_as_read(text, orjson.dumps(orjson.loads(text)))


@pytest.mark.parametrize(
    "reply",
    ['{"paid":true,"paid":false}', '{\n  "paid": true,\n  "paid": false\n}'],
)
def test_a_key_written_twice_is_still_recorded_on_the_fast_path(reply: str) -> None:
    result = outform.parse(reply, {"type": "object"})
    assert result.data == {"paid": False}
    assert [c.transform for c in result.changes] == ["drop_duplicate_key"]


@pytest.mark.parametrize("spacing", ["", " "])
def test_an_integer_past_64_bits_keeps_every_digit(spacing: str) -> None:
    reply = '{"n":' + spacing + "18446744073709551617}"
    assert outform.parse(reply, {"type": "object"}).data == {"n": 2**64 + 1}


def test_a_compact_reply_nested_past_max_depth_is_refused() -> None:
    # Padding makes the reply longer than two characters per allowed level, so that the
    # nesting is measured, not assumed.
    reply = '{"pad":"' + "x" * 40 + '","v":' + "[" * 11 + "]" * 11 + "}"
    assert written_as_read(reply, orjson.dumps(orjson.loads(reply)))
    with pytest.raises(InputError, match="max_depth"):
        outform.parse(reply, {"type": "object"}, max_depth=10)
    assert outform.parse(reply, {"type": "object"}, max_depth=12).ok
