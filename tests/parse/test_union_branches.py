"""Union branches: the first declared branch a coercion fits wins, and a value valid as sent in a
later branch is never coerced into an earlier one; in `parse` and in the stream's snapshots
alike (found by a trial: the stream showed `"1"` for `bool | int` as 1, the final parse True)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform.streaming import StreamParser


class BoolOrInt(BaseModel):
    x: bool | int


class IntOrBool(BaseModel):
    x: int | bool


class BoolOrStr(BaseModel):
    x: bool | str


class IntOrStr(BaseModel):
    x: int | str


class FloatOrInt(BaseModel):
    x: float | int


def shown(output: Any, reply: str) -> list[Any]:
    """The values of `x` the stream shows (a number is shown once something ends it), the reply
    fed in two chunks, then the final value."""
    parser: StreamParser[Any] = StreamParser(output, level="full")
    values = [s.value.x for chunk in (reply[:-1], reply[-1:]) for s in parser.feed(chunk)]
    final = parser.finish().value.x
    return [value for value in values if value is not None] + [final]


@pytest.mark.parametrize(
    ("output", "reply", "expected", "branch"),
    [
        (BoolOrInt, '{"x": "1"}', True, 0),  # both branches convert "1": the first declared
        (IntOrBool, '{"x": "1"}', 1, 0),
        (IntOrBool, '{"x": "true"}', True, 1),
        (BoolOrStr, '{"x": 1}', True, 0),
        (IntOrStr, '{"x": true}', "true", 1),
    ],
)
def test_the_first_declared_branch_a_conversion_fits_wins_in_parse_and_stream(
    output: Any, reply: str, expected: Any, branch: int
) -> None:
    result = outform.parse(reply, type=output, level="full")
    assert result.value.x == expected and type(result.value.x) is type(expected)
    assert [c.branch_index for c in result.changes] == [branch]
    values = shown(output, reply)
    assert values == [expected] * len(values)
    assert all(type(v) is type(expected) for v in values)


@pytest.mark.parametrize(
    ("output", "reply", "expected"),
    [
        (IntOrStr, '{"x": "5"}', "5"),
        (BoolOrStr, '{"x": "yes"}', "yes"),
        (FloatOrInt, '{"x": 2}', 2),
    ],
)
def test_a_value_valid_as_sent_in_a_later_branch_is_kept_in_parse_and_stream(
    output: Any, reply: str, expected: Any
) -> None:
    result = outform.parse(reply, type=output, level="full")
    assert result.value.x == expected and not result.changes
    values = shown(output, reply)
    assert values == [expected] * len(values)
    assert all(type(v) is type(expected) for v in values)


def test_a_converted_value_is_the_union_s_reading_of_it_as_in_the_final_parse() -> None:
    """`"2"` for `float | int`: the float branch takes the integer 2, which the union reads as
    the int 2, as the final parse does (the branch's own reading would show 2.0)."""
    values = shown(FloatOrInt, '{"x": "2"}')
    assert values == [2] * len(values)
    assert all(type(v) is int for v in values)
