"""Values as the reply wrote them (trial of 2026-11-30, second round).

- A float's spelling of an integer no float holds is that integer with an exponent too
  (`9007199254740993e0`), as with a fraction (`9007199254740993.0`): docs/pipeline.md, "An
  integer no float holds" and Values.
- A number turned into text is the literal the reply wrote, also for such an integer.
- An object or list is written as its JSON text only where the reply wrote it: never after
  `wrap_in_array` moved it into a list.
- The type's validators never run on a value the schema refuses.
- Without the extract stage, a byte order mark opening the reply is named, whatever the root.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ValidationInfo, field_validator

import outform
from outform import OutputError
from outform.jsontext import loads, may_be_inexact, written_may_be_inexact
from outform.parse.values import ordinary_numbers

LEVELS = ["off", "minimal", "full"]
EXPONENT_SPELLINGS = ["9007199254740993e0", "9007199254740993E0", "9007199254740993e+0"]


class IntField(BaseModel):
    x: int


class FloatField(BaseModel):
    x: float


class Either(BaseModel):
    x: int | float


class Anything(BaseModel):
    x: Any


class Text(BaseModel):
    x: str


# -- a long mantissa with an exponent ----------------------------------------------------


@pytest.mark.parametrize("literal", [*EXPONENT_SPELLINGS, "-9007199254740993e0"])
def test_a_long_mantissa_with_an_exponent_is_read_exactly(literal: str) -> None:
    text = f'{{"x": {literal}}}'
    assert may_be_inexact(text)
    assert written_may_be_inexact(text.encode())
    assert not ordinary_numbers(text)
    assert loads(text) == {"x": int(literal.replace("e+0", "").rstrip("0").rstrip("eE"))}


def test_a_short_mantissa_with_an_exponent_stays_a_float() -> None:
    assert loads('{"x": 123456789012345e5}') == {"x": 1.23456789012345e19}
    assert ordinary_numbers('{"x": 123456789012345e5}')


@pytest.mark.parametrize("literal", EXPONENT_SPELLINGS)
@pytest.mark.parametrize("output", [IntField, Either, Anything])
def test_an_integer_written_with_an_exponent_is_that_integer_recorded(
    literal: str, output: type[BaseModel]
) -> None:
    result = outform.parse(f'{{"x": {literal}}}', type=output)
    assert result.value.x == 9007199254740993
    assert type(result.value.x) is int
    (change,) = result.changes
    assert (change.path, change.transform) == ("/x", "number_to_integer")
    assert change.before == change.after == 9007199254740993
    assert literal in (change.detail or "")


@pytest.mark.parametrize("literal", [*EXPONENT_SPELLINGS, "9007199254740993.0"])
def test_a_float_field_refuses_an_integer_written_with_an_exponent_it_would_round(
    literal: str,
) -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse(f'{{"x": {literal}}}', type=FloatField)
    (violation,) = caught.value.hint.violations
    assert violation.path == "/x"
    assert "9007199254740992" in violation.line()


@pytest.mark.parametrize("literal", EXPONENT_SPELLINGS)
def test_a_schema_s_integer_keeps_every_digit_written_with_an_exponent(literal: str) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "integer"}}}
    assert outform.parse(f'{{"x": {literal}}}', schema).data == {"x": 9007199254740993}


# -- a number turned into text ------------------------------------------------------------


@pytest.mark.parametrize(
    "literal",
    ["9007199254740993.0", "9.007199254740993e15", "12345678901234567e1", "9007199254740993e0"],
)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_an_integer_spelled_as_a_float_turned_into_text_keeps_the_literal(
    literal: str, level: str
) -> None:
    result = outform.parse(f'{{"x": {literal}}}', type=Text, level=level)
    assert result.value == Text(x=literal)
    (change,) = result.changes
    assert (change.transform, change.after, change.lost) == ("number_to_string", literal, 0)
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert outform.parse(f'{{"x": {literal}}}', schema, level=level).data == {"x": literal}


class Version(StrEnum):
    long = "9007199254740993.0"
    other = "other"


class Pick(BaseModel):
    x: Version


class PickLiteral(BaseModel):
    x: Literal["9007199254740993.0", "z"]


@pytest.mark.parametrize("output", [Pick, PickLiteral])
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_string_member_spelled_as_the_number_written_is_matched(
    output: type[BaseModel], level: str
) -> None:
    result = outform.parse('{"x": 9007199254740993.0}', type=output, level=level)
    assert result.data == {"x": "9007199254740993.0"}
    assert [(c.transform, c.lost) for c in result.changes] == [("match_enum", 0)]


# -- a value moved into a list ------------------------------------------------------------


class Tags(BaseModel):
    tags: list[str]


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    ("reply", "output"),
    [('{"tags": {"a": 1}}', Tags), ('{"name": "Ana"}', list[str])],
)
def test_an_object_moved_into_a_list_is_never_its_json_text(
    reply: str, output: Any, level: str
) -> None:
    try:
        result = outform.parse(reply, type=output, level=level)
    except OutputError as error:
        assert level == "minimal"
        assert [v.kind for v in error.hint.violations] == ["type"]
        tried = error.result
        assert tried is not None
        changes = tried.changes
    else:
        assert level == "full"
        changes = result.changes
        # The object's one value is taken, the key it drops recorded as lost.
        assert result.lossy
        assert "unwrap_single_key" in [c.transform for c in changes]
    assert "json_to_string" not in [c.transform for c in changes]


def test_an_object_written_as_an_item_is_still_its_json_text_at_full() -> None:
    result = outform.parse('{"tags": [{"a": 1}]}', type=Tags, level="full")
    assert result.value == Tags(tags=['{"a":1}'])
    assert [(c.path, c.transform) for c in result.changes] == [("/tags/0", "json_to_string")]


@pytest.mark.parametrize("level", LEVELS[1:])
def test_a_scalar_is_still_wrapped_into_a_list(level: str) -> None:
    result = outform.parse('{"tags": "x"}', type=Tags, level=level)
    assert result.value == Tags(tags=["x"])


# -- validators on a reply the schema refuses ---------------------------------------------


class Ordered(BaseModel):
    a: int
    b: int

    @field_validator("b")
    @classmethod
    def exceeds_a(cls, value: int, info: ValidationInfo) -> int:
        if value <= info.data["a"]:
            raise ValueError("b must exceed a")
        return value


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("fenced", [False, True])
def test_a_validator_reading_a_sibling_never_runs_on_a_reply_the_schema_refuses(
    level: str, fenced: bool
) -> None:
    reply = '{"a": "x", "b": 2}'
    if fenced:
        if level == "off":
            return  # no fence is read at off
        reply = f"```json\n{reply}\n```"
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, type=Ordered, level=level)
    (violation,) = caught.value.hint.violations
    assert violation.path == "/a"
    assert 'expected integer, found string "x"' in violation.line()


def test_the_validator_still_runs_on_a_reply_the_schema_takes() -> None:
    assert outform.parse('{"a": 1, "b": 2}', type=Ordered).value == Ordered(a=1, b=2)
    with pytest.raises(OutputError, match="b must exceed a"):
        outform.parse('{"a": 3, "b": 2}', type=Ordered)
    result = outform.parse('{"a": "1", "b": 2}', type=Ordered, level="minimal")
    assert result.value == Ordered(a=1, b=2)


# -- a byte order mark at off -------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "output"),
    [("\ufeff[1, 2]", list[int]), ("\ufeff42", int), ('\ufeff{"a": 1, "b": 2}', Ordered)],
)
def test_a_byte_order_mark_at_off_is_named_whatever_the_root(reply: str, output: Any) -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse(reply, type=output, level="off")
    (violation,) = caught.value.hint.violations
    assert "byte order mark (U+FEFF)" in violation.line()
    assert "remove the byte order mark" in str(caught.value)
    assert outform.parse(reply, type=output, level="minimal").changes[0].transform == "strip_bom"


def test_a_plain_string_keeps_the_mark_at_off() -> None:
    assert outform.parse("\ufeff42", type=str, level="off").value == "\ufeff42"
