"""Integral numbers past 2**53 in a typed output: every change recorded, and a float field never
holds another integer than the reply wrote (docs/pipeline.md#typed-outputs, #values)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError

ODD = 9007199254740993
"""2**53 + 1: the first integer no float holds (a float reads it as 2**53)."""


class Whole(BaseModel):
    n: int


class Anything(BaseModel):
    a: Any


class Measured(BaseModel):
    x: float


class Either(BaseModel):
    u: int | float


def changes(result: outform.ParseResult[Any]) -> list[tuple[str, str]]:
    return [(c.path, c.transform) for c in result.changes if c.stage == "semantic"]


def fenced(reply: str) -> str:
    return f"```json\n{reply}\n```"


@pytest.mark.parametrize("fence", [False, True])
def test_a_float_s_spelling_of_an_integer_for_an_int_is_recorded_as_5_0_is(fence: bool) -> None:
    """`9007199254740993.0` is the integer it writes (no float holds it); an `int` field took it
    with nothing recorded, while `5.0` records `number_to_integer`."""
    for literal, number in ((f"{ODD}.0", ODD), ("5.0", 5)):
        reply = f'{{"n": {literal}}}'
        result = outform.parse(fenced(reply) if fence else reply, type=Whole)
        assert result.value == Whole(n=number) and result.data == {"n": number}
        assert changes(result) == [("/n", "number_to_integer")]


def test_the_change_names_the_literal_written() -> None:
    result = outform.parse(f'{{"n": {ODD}.0}}', type=Whole)
    (change,) = result.changes
    assert (change.before, change.after) == (ODD, ODD)
    assert f"written {ODD}.0" in change.detail


def test_an_integer_written_as_digits_is_no_change() -> None:
    result = outform.parse(f'{{"n": {ODD}}}', type=Whole)
    assert result.value == Whole(n=ODD) and result.changes == ()


@pytest.mark.parametrize(("output", "field"), [(Anything, "a"), (Either, "u")])
def test_a_type_taking_any_number_holds_the_integer_written_with_the_change(
    output: type[BaseModel], field: str
) -> None:
    """No float holds 9007199254740993: `Any` (and `int | float`) holds the integer, as `data`
    does, and the float's spelling is recorded."""
    result = outform.parse(f'{{"{field}": {ODD}.0}}', type=output)
    assert getattr(result.value, field) == ODD and type(getattr(result.value, field)) is int
    assert result.data == {field: ODD}
    assert changes(result) == [(f"/{field}", "number_to_integer")]
    kept = outform.parse(f'{{"{field}": 5.0}}', type=output)
    assert type(getattr(kept.value, field)) is float and kept.changes == ()  # keeps its type


@pytest.mark.parametrize(
    "reply",
    [
        pytest.param(f'{{"x": {ODD}}}', id="as digits (the fast path)"),
        pytest.param(f'{{"x": {ODD}.0}}', id="as a float's spelling"),
        pytest.param(f'{{"x": "{ODD}"}}', id="in a string coercion reads"),
        pytest.param('{"x": 12345678901234567890}', id="past 64 bits"),
        pytest.param(fenced(f'{{"x": {ODD}}}'), id="fenced"),
    ],
)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_float_field_never_holds_another_integer_than_written(reply: str, level: str) -> None:
    """It held 9007199254740992.0 while `data` said 9007199254740993, nothing recorded."""
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, type=Measured, level=level)
    assert caught.value.hint is not None
    (violation,) = caught.value.hint.violations
    assert violation.path == "/x"
    assert violation.expected == "a number a float holds as written"
    assert "another integer: write at most 15 significant digits" in violation.found


class Readings(BaseModel):
    maybe: float | None = None
    many: list[float] = []
    either: float | int = 0


def test_the_refusal_is_at_the_value_s_place_in_a_union_or_a_list() -> None:
    for reply, path in (
        (f'{{"maybe": {ODD}}}', "/maybe"),
        (f'{{"many": [1.5, {ODD}]}}', "/many/1"),
    ):
        with pytest.raises(OutputError) as caught:
            outform.parse(reply, type=Readings)
        assert caught.value.hint is not None
        assert [v.path for v in caught.value.hint.violations] == [path]
    # A union with an integer takes it as one, as written: nothing to refuse or record.
    result = outform.parse(f'{{"either": {ODD}}}', type=Readings)
    assert result.value.either == ODD and result.changes == ()


def test_at_level_off_too() -> None:
    with pytest.raises(OutputError):
        outform.parse(f'{{"x": {ODD}}}', type=Measured, level="off")


def test_an_integer_a_float_holds_is_read() -> None:
    for number in (2**54, 10**20, 9007199254740992):
        result = outform.parse(f'{{"x": {number}}}', type=Measured)
        assert result.value.x == number and result.changes == ()


def test_an_integer_past_a_float_s_range_is_refused_at_the_field() -> None:
    for reply in ('{"x": 1' + "0" * 400 + "}", '{"x": "1' + "0" * 400 + '"}'):
        with pytest.raises(OutputError) as caught:
            outform.parse(reply, type=Measured)
        assert caught.value.hint is not None
        (violation,) = caught.value.hint.violations
        assert violation.path == "/x" and "infinity" in violation.found


@pytest.mark.parametrize("literal", ["9007199254740992.0", "1e16", "1.5e17"])
def test_an_integral_float_past_2_53_for_an_int_is_recorded(literal: str) -> None:
    """These were read laxly (a run of 17 digits, or a float past 2**53), nothing recorded."""
    result = outform.parse(f'{{"n": {literal}}}', type=Whole)
    assert result.value.n == int(float(literal))
    assert changes(result) == [("/n", "number_to_integer")]
    assert result.data == {"n": int(float(literal))}


def test_the_integer_is_the_one_the_float_s_spelling_writes() -> None:
    """The float of 1.111111111111111e18 is 1111111111111111040; the reply wrote ...000 (and
    that float's shortest spelling writes it too)."""
    result = outform.parse('{"n": 1.111111111111111e18}', type=Whole)
    assert result.value.n == 1111111111111111000
    assert changes(result) == [("/n", "number_to_integer")]


def test_past_64_bits_an_int_takes_only_digits() -> None:
    with pytest.raises(OutputError, match="written out in digits"):
        outform.parse('{"n": 1e20}', type=Whole)
