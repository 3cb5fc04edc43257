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


class Counts(BaseModel):
    flag: bool | int
    rows: list[int]
    anything: object
    ratio: float


def test_an_integral_float_is_the_integer_a_union_wants_and_recorded_in_parse_and_stream() -> None:
    """`1.0` for `bool | int`: JSON Schema counts it an integer, so it is the integer 1, recorded
    as `number_to_integer`; Pydantic's lax reading alone made it True with nothing recorded."""
    result = outform.parse('{"x": 1.0}', type=BoolOrInt, level="full")
    assert result.value.x == 1 and type(result.value.x) is int
    assert [(c.path, c.transform, c.before, c.after) for c in result.changes] == [
        ("/x", "number_to_integer", 1.0, 1)
    ]
    assert result.data == {"x": 1}
    values = shown(BoolOrInt, '{"x": 1.0}')
    assert values == [1] * len(values) and all(type(v) is int for v in values)


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_integral_floats_become_integers_only_where_the_type_wants_integers(level: str) -> None:
    reply = '{"flag": 1.0, "rows": [2.0, 3], "anything": 1.0, "ratio": 4.0}'
    result = outform.parse(reply, type=Counts, level=level)
    assert result.value == Counts(flag=1, rows=[2, 3], anything=1.0, ratio=4.0)
    assert type(result.value.flag) is int and type(result.value.anything) is float
    assert sorted(c.path for c in result.changes if c.transform == "number_to_integer") == [
        "/flag",
        "/rows/0",
    ]


def test_a_fraction_for_an_integer_union_is_still_refused() -> None:
    with pytest.raises(outform.OutputError, match=r"expected boolean \| integer"):
        outform.parse('{"x": 1.5}', type=BoolOrInt, level="full")


def test_an_integral_float_at_the_root_is_the_integer() -> None:
    result = outform.parse("1.0", type=bool | int, level="full")
    assert result.value == 1 and type(result.value) is int
    assert [c.transform for c in result.changes] == ["number_to_integer"]


def test_a_float_that_only_looks_integral_is_still_refused_not_made_an_integer() -> None:
    """`1.0000000000000001` reads as the float 1.0: its fraction is lost, so no integer is made
    of it (the reply wrote no integer); the violation says how to write it."""
    with pytest.raises(outform.OutputError, match="lose its fraction"):
        outform.parse('{"x": 1.0000000000000001}', type=BoolOrInt, level="full")
