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
