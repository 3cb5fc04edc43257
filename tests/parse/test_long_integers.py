"""An integer longer than Python reads from text (its int-string limit, 4,300 digits by
default) is refused at every level, on every path, naming the limit: never read as a string, a
float or infinity (docs/pipeline.md#values). outform never changes the limit: it holds for the
whole process."""

from __future__ import annotations

import sys

import pytest
from pydantic import BaseModel

import outform
from outform import OutputError
from outform.errors import StreamAbortedError
from outform.streaming import parse_stream

LONG = "1" * 5000
LIMIT = "over the 4,300 Python reads from text"


class Counted(BaseModel):
    n: int


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize(
    "reply", [f"[{LONG}]", f'{{"n": {LONG}}}', f"[-{LONG}]"], ids=["array", "object", "negative"]
)
def test_refused_at_every_level_naming_the_limit(reply: str, level: str) -> None:
    """In an array it was "number is infinity when parsed as double" with `fix: level 'full'`;
    at full, json-repair read it as a string."""
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, {"type": ["object", "array"]}, level=level)
    error = caught.value
    (violation,) = error.hint.violations
    assert violation.kind == "syntax"
    assert "the JSON writes an integer of more than 4,300 digits" in violation.found
    assert "integer of 5,000 digits" in violation.found and LIMIT in violation.found
    assert "write at most 4,300 digits, or the number as a string" in violation.found
    assert error.fix == (
        "no level reads an integer of more than 4,300 digits: the model must write it again"
    )


def test_a_string_field_does_not_get_the_integer_as_text_at_full() -> None:
    with pytest.raises(OutputError, match="integer of 5,000 digits"):
        outform.parse(f'{{"n": {LONG}}}', {"properties": {"n": {"type": "string"}}}, level="full")


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_refused_for_a_typed_output(level: str) -> None:
    with pytest.raises(OutputError, match="integer of 5,000 digits"):
        outform.parse(f'{{"n": {LONG}}}', type=Counted, level=level)


def test_a_json5_reply_is_refused_too() -> None:
    with pytest.raises(OutputError, match="integer of 5,000 digits"):
        outform.parse(f"{{n: {LONG},}}", {"type": "object"}, level="full")


def test_as_the_whole_reply_the_error_says_why() -> None:
    """A scalar root still tries the reply's text as the value; the error names the limit."""
    with pytest.raises(OutputError) as caught:
        outform.parse(LONG, {"type": "integer"})
    assert LIMIT in caught.value.what


def test_a_stream_stops_at_it_naming_the_limit() -> None:
    with pytest.raises(StreamAbortedError) as caught:
        list(parse_stream(['{"n": ', LONG, "}"], {"type": "object"}))
    assert caught.value.reason == "syntax"
    assert "integer of 5,000 digits" in caught.value.hint.violations[0].found


def test_an_integer_of_4300_digits_is_read_exactly() -> None:
    assert outform.parse(f"[{'7' * 4300}]", {"type": "array"}).value == [int("7" * 4300)]


def test_the_same_digits_in_a_string_are_text() -> None:
    assert outform.parse(f'{{"n": "{LONG}"}}', {"type": "object"}).value == {"n": LONG}


def test_the_limit_is_the_process_s_own(monkeypatch: pytest.MonkeyPatch) -> None:
    """Read from sys.get_int_max_str_digits() (an application may set it), never set."""
    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 100)
    with pytest.raises(OutputError, match="integer of 200 digits, over the 100 Python reads"):
        outform.parse(f"[{'3' * 200}]", {"type": "array"})


# -- the same digits, quoted, where an integer is wanted ------------------------------------
# "1" and 400 zeros unquoted are kept exactly ("integers keep every digit"); quoted, for an
# integer field, they were refused with no reason (a number was read from a string of at most
# 64 characters).

QUOTED = "1" + "0" * 400


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_quoted_integer_keeps_every_digit(level: str) -> None:
    untyped = outform.parse(f'{{"n": "{QUOTED}"}}', {"properties": {"n": {"type": "integer"}}})
    typed = outform.parse(f'{{"n": "{QUOTED}"}}', type=Counted, level=level)
    for result in (untyped, typed):
        assert result.data == {"n": 10**400}
        ((path, transform, after),) = [(c.path, c.transform, c.after) for c in result.changes]
        assert (path, transform, after) == ("/n", "string_to_integer", 10**400)
    assert typed.value == Counted(n=10**400)
    assert outform.parse(f'"-{QUOTED}"', type=int, level=level).value == -(10**400)


def test_a_quoted_integer_is_not_converted_at_level_off() -> None:
    with pytest.raises(OutputError, match="expected integer, found string"):
        outform.parse(f'{{"n": "{QUOTED}"}}', type=Counted, level="off")


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_quoted_integer_over_the_limit_is_refused_naming_it(level: str) -> None:
    """As unquoted: the violation names the limit (here beside the string, which stays)."""
    for output in ({"type": "object", "properties": {"n": {"type": "integer"}}}, Counted):
        kind = {"type": output} if isinstance(output, type) else {"schema": output}
        with pytest.raises(OutputError) as caught:
            outform.parse(f'{{"n": "{LONG}"}}', level=level, **kind)
        (violation,) = caught.value.hint.violations
        assert violation.path == "/n" and violation.found.startswith("string")
        assert "integer of 5,000 digits" in violation.found and LIMIT in violation.found
        assert "write at most 4,300 digits" in violation.found


def test_a_quoted_integer_follows_the_process_s_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "get_int_max_str_digits", lambda: 100)
    with pytest.raises(OutputError, match="integer of 200 digits, over the 100 Python reads"):
        outform.parse(f'{{"n": "{"3" * 200}"}}', type=Counted)
    assert outform.parse(f'{{"n": "{"3" * 100}"}}', type=Counted).value.n == int("3" * 100)
