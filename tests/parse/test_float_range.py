"""A number a 64-bit float cannot hold is refused at every level, on every path: never read as
infinity, and never as 0 when one of its digits is not 0 (docs/pipeline.md#values)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError
from outform.errors import StreamAbortedError
from outform.parse.values import out_of_range
from outform.streaming import parse_stream


class Reading(BaseModel):
    x: float


TOO_LARGE = ["1e400", "-1e999", "1E+309", "1" + "0" * 400 + ".5"]
TOO_SMALL = ["1e-400", "-2.5e-999", "0." + "0" * 400 + "1"]
OUT = TOO_LARGE + TOO_SMALL


@pytest.mark.parametrize("literal", OUT)
@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_refused_untyped_and_typed_at_every_level(literal: str, level: str) -> None:
    reply = f'{{"x": {literal}}}'
    with pytest.raises(OutputError, match="out of range"):
        outform.parse(reply, schema={"type": "object"}, level=level)
    with pytest.raises(OutputError, match="out of range"):
        outform.parse(reply, type=Reading, level=level)  # the typed fast path included


@pytest.mark.parametrize("literal", OUT)
def test_refused_in_arrays_and_as_the_root(literal: str) -> None:
    with pytest.raises(OutputError):
        outform.parse(f"[{literal}]", type=list[float])
    with pytest.raises(OutputError):
        outform.parse(literal, type=float)
    with pytest.raises(OutputError):  # a number written as a string: the same rule
        outform.parse(f'{{"x": "{literal}"}}', type=Reading)


def test_the_refusal_says_why_and_asks_again() -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse('{"x": 1e-400}', type=Reading)
    assert caught.value.hint is not None
    message = caught.value.hint.message()
    assert "1e-400 is out of range: too small for a float (read as 0)" in message


@pytest.mark.parametrize(
    "literal", ["0.0e-999", "-0.000e500", "0e-400", "1e308", "2.2e-308", "5e-324"]
)
def test_zero_and_numbers_within_range_are_read(literal: str) -> None:
    result = outform.parse(f'{{"x": {literal}}}', type=Reading)
    assert result.value.x == float(literal)
    assert outform.parse(f'{{"x": "{literal}"}}', type=Reading).value.x == float(literal)
    assert result.data == {"x": float(literal)}


def test_an_integer_beyond_a_float_is_exact_untyped_but_refused_for_a_float_field() -> None:
    big = "9" * 400
    assert outform.parse(f'{{"x": {big}}}', schema={"type": "object"}).data == {"x": int(big)}
    with pytest.raises(OutputError):
        outform.parse(f'{{"x": {big}}}', type=Reading)


def test_words_inside_strings_are_text() -> None:
    reply = '{"id": "550e8400-e29b", "note": "1e400 and 1e-400"}'
    assert out_of_range(reply) is None
    assert outform.parse(reply, schema={"type": "object"}).data["note"] == "1e400 and 1e-400"


@pytest.mark.parametrize("literal", OUT)
@pytest.mark.parametrize("size", [1, 3, 64])
def test_a_stream_never_yields_it_and_never_fails_outside_outform(literal: str, size: int) -> None:
    reply = f'{{"x": {literal}}}'
    chunks = [reply[i : i + size] for i in range(0, len(reply), size)]
    with pytest.raises((OutputError, StreamAbortedError)):
        for snapshot in parse_stream(chunks, type=Reading):
            x = snapshot.data.get("x") if isinstance(snapshot.data, dict) else None
            assert x not in (0.0, float("inf"), float("-inf"))


def test_digit_runs_joined_by_signs_are_read_as_written() -> None:
    """The fast path's screen reads a sign as a digit, so a date's hyphens join its numbers into
    a long run: at worst a needless exact reading, never another value."""
    reply = '{"when": "2026-11-29-10-30-45-123456", "n": 12345678901234567890, "m": -1e-40}'
    expected = {"when": "2026-11-29-10-30-45-123456", "n": 12345678901234567890, "m": -1e-40}
    assert outform.parse(reply, schema={"type": "object"}).data == expected
    assert out_of_range(reply) is None


# -- the same literals, quoted --------------------------------------------------------------


@pytest.mark.parametrize("literal", OUT)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_quoted_number_a_float_cannot_hold_is_refused_with_the_reason(
    literal: str, level: str
) -> None:
    """`"1e400"` was refused as "expected number, found string" with no reason; the string
    is never read as infinity (or as 0)."""
    for output in (Reading, Maybe, {"properties": {"x": {"type": "number"}}}):
        kind = {"type": output} if isinstance(output, type) else {"schema": output}
        with pytest.raises(OutputError) as caught:
            outform.parse(f'{{"x": "{literal}"}}', level=level, **kind)
        (violation,) = caught.value.hint.violations
        assert violation.path == "/x" and violation.found.startswith("string")
        assert "(not converted: " in violation.found and "is out of range: too" in violation.found


class Maybe(BaseModel):
    x: float | None


def test_a_quoted_integer_beyond_a_float_is_refused_for_a_float_field() -> None:
    """Exact for a number schema (as unquoted), refused for a float field, never infinity."""
    digits = "1" + "0" * 400
    untyped = outform.parse(f'{{"x": "{digits}"}}', {"properties": {"x": {"type": "number"}}})
    assert untyped.data == {"x": 10**400}
    with pytest.raises(OutputError):
        outform.parse(f'{{"x": "{digits}"}}', type=Reading)


# A float holds 15 to 17 significant digits, and past 2**53 only integers: a literal with a
# fraction may read as an integer. An integer field would take it, a float field would hold
# another number: refused, except by a decimal field, which keeps every digit.

DROPPED = [
    "9007199254740993.5",
    "-12345678901234567890.5",
    "1.00000000000000000001",
    "1.00000000000000001e16",
]


class Whole(BaseModel):
    n: int


@pytest.mark.parametrize("literal", DROPPED)
@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_a_fraction_a_float_drops_is_refused_for_integer_and_number_fields(
    literal: str, level: str
) -> None:
    reply = f'{{"n": [1, {literal}]}}'
    for wanted in ("integer", "number"):
        items = {"type": "array", "items": {"type": wanted}}
        schema = {"type": "object", "properties": {"n": items}}
        with pytest.raises(OutputError) as caught:
            outform.parse(reply, schema=schema, level=level)
        (violation,) = caught.value.hint.violations
        assert violation.path == "/n/1" and "lose its fraction" in violation.found
    with pytest.raises(OutputError):  # (past 64 bits, Pydantic's own refusal comes first)
        outform.parse(f'{{"n": {literal}}}', type=Whole, level=level)  # the typed fast path
    with pytest.raises(OutputError, match="lose its fraction"):
        outform.parse(f'{{"x": {literal}}}', type=Reading, level=level)


def test_a_fraction_a_float_keeps_is_read() -> None:
    """Rounding that keeps a fraction is what reading a number as a float is; an integer
    written with a fraction past 2**53 keeps its digits; a fraction written as text stays."""
    number = {"type": "object", "properties": {"x": {"type": "number"}}}
    assert outform.parse('{"x": 3.14159265358979323846}', schema=number).value == {
        "x": 3.141592653589793
    }
    assert outform.parse('{"x": 9007199254740993.0}', schema=number).value == {
        "x": 9007199254740993
    }
    text = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert outform.parse('{"x": 9007199254740993.5}', schema=text, level="minimal").value == {
        "x": "9007199254740993.5"
    }


def test_a_decimal_field_keeps_the_fraction_a_float_field_beside_it_may_not() -> None:
    from decimal import Decimal

    class Priced(BaseModel):
        price: Decimal
        weight: float = 0

    kept = outform.parse('{"price": 12345678901234567890.5}', type=Priced).value
    assert kept.price == Decimal("12345678901234567890.5")
    with pytest.raises(OutputError) as caught:
        outform.parse('{"price": 1.5, "weight": 12345678901234567890.5}', type=Priced)
    assert [v.path for v in caught.value.hint.violations] == ["/weight"]


def test_a_fraction_a_float_drops_in_a_string_is_not_converted_for_a_float() -> None:
    with pytest.raises(OutputError, match="lose its fraction"):
        outform.parse('{"x": "$9,007,199,254,740,993.5"}', type=Reading, level="minimal")


def test_the_stream_ends_as_parse_does() -> None:
    reply = '{"n": 9007199254740993.5}'
    with pytest.raises(OutputError, match="lose its fraction"):
        for _ in parse_stream([reply[:10], reply[10:]], type=Whole):
            pass
