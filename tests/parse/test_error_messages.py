"""Violations read as outform's sentences: "at PATH: expected WHAT, found WHAT (why)", whoever
found them (the JSON Schema validator, the type's own validator, the coercion rules)."""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal
from uuid import UUID

import pytest
from pydantic import BaseModel, Field, field_validator

import outform
from outform import OutputError
from outform.parse import Processor


def explained(reply: str, output: Any = None, **options: Any) -> str:
    kind = {"type": output} if isinstance(output, type) else {"schema": output}
    with pytest.raises(outform.OutputError) as caught:
        outform.parse(reply, **kind, **options)
    assert caught.value.hint is not None
    return caught.value.hint.explain()


class Day(BaseModel):
    day: date


class Item(BaseModel):
    price: Decimal
    count: int = 1

    @field_validator("count")
    @classmethod
    def odd(cls, count: int) -> int:
        if count % 2 == 0:
            raise ValueError("must be odd")
        return count


class Items(BaseModel):
    items: list[Item]


class Ident(BaseModel):
    id: UUID


def test_a_type_validators_message_is_phrased_as_expected_and_why() -> None:
    assert explained('{"day": "May 1"}', Day) == (
        '- at day: expected a valid date or datetime, found string "May 1" (input is too short)'
    )
    # (A decimal's string is checked by the schema outform holds for the type, and "$1.10" is
    # read as a number: see test_decimals.py.)
    assert explained('{"id": "abc"}', Ident) == (
        '- at id: expected a valid UUID, found string "abc" (invalid length: found 3)'
    )


def test_a_message_of_another_form_is_the_reason_not_the_expectation() -> None:
    line = explained('{"items": [{"price": 1, "count": 2}]}', Items)
    assert line == (
        "- at items[0].count: expected a value the type accepts, found integer 2 "
        "(value error, must be odd)"
    )
    assert "expected Datetimes" not in explained('{"day": "2024-05-01T10:00:00Z"}', Day)


class Count(BaseModel):
    n: int


@pytest.mark.parametrize("level", ["off", "full"])
def test_an_integer_past_64_bits_written_as_a_float_names_how_to_write_it(level: str) -> None:
    """JSON Schema takes `1e20` as an integer; Pydantic's int takes it only in digits, and
    says "unable to parse input string". The hint says what the model must write."""
    assert explained('{"n": 1e20}', Count, level=level) == (
        "- at n: expected an integer, found number 1e+20 (an integer past 64 bits written with "
        "an exponent or a fraction, which the type takes only written out in digits)"
    )
    assert outform.parse('{"n": 100000000000000000000}', type=Count).value.n == 10**20


class Cat(BaseModel):
    kind: Literal["cat"]
    good: bool


class Dog(BaseModel):
    kind: Literal["dog"]
    good: bool


class Home(BaseModel):
    pet: Annotated[Cat | Dog, Field(discriminator="kind")]


@pytest.mark.parametrize("level", ["off", "full"])
def test_a_discriminated_union_says_which_tag_is_missing_and_its_values(level: str) -> None:
    assert explained('{"pet": {"good": true}}', Home, level=level) == (
        '- at pet: missing required field \'kind\' (one of "cat", "dog")'
    )
    assert explained('{"pet": {"kind": "cow", "good": true}}', Home, level=level) == (
        '- at pet.kind: expected one of "cat", "dog", found string "cow"'
    )
    assert explained('{"pet": {"kind": "cat"}}', Home, level=level) == (
        "- at pet: missing required field 'good' (for kind \"cat\")"
    )


def test_a_union_told_apart_by_a_constant_says_so_without_a_discriminator_keyword() -> None:
    schema = {
        "oneOf": [
            {"type": "object", "properties": {"t": {"const": "a"}}, "required": ["t"]},
            {"type": "object", "properties": {"t": {"enum": ["b", "c"]}}, "required": ["t"]},
        ]
    }
    assert explained('{"x": 1}', schema) == (
        '- at (root): missing required field \'t\' (one of "a", "b", "c")'
    )


NUMBER = {"type": "object", "properties": {"a": {"type": "number"}}}


def test_a_value_valid_under_two_branches_of_a_one_of_says_so() -> None:
    # not "expected integer | number, found number 5.0", which contradicts itself
    schema = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert explained("5.0", schema) == (
        "- at (root): expected exactly one of integer | number (oneOf), found number 5.0, "
        "valid under branches 0, 1"
    )


@pytest.mark.parametrize("written", ["1 234 567", "1 234,50 €", "€1 234.50", "1\u202f234"])
def test_digits_grouped_by_spaces_are_refused_saying_why(written: str) -> None:
    line = explained(f'{{"a": "{written}"}}', NUMBER, level="full")
    assert "(not converted: spaces between digit groups mark thousands" in line


def test_a_processor_returning_nan_is_a_usage_error_naming_it() -> None:
    nan = Processor("after_decode", lambda value: {"a": float("nan")}, "nanify")
    with pytest.raises(outform.UsageError) as caught:
        outform.parse('{"a": 1}', NUMBER, processors=[nan])
    assert "processor 'nanify' returned a value that is not JSON" in caught.value.what
    assert "nan" in caught.value.what and caught.value.where == "after_decode"


def test_a_schema_regex_that_does_not_compile_is_named_with_its_location() -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"properties": {"a": {"type": "string", "pattern": "(?<=a"}}}, "/properties/a/pattern"),
        ({"patternProperties": {"[a-": {}}}, "/patternProperties/[a-"),
    ]
    for schema, where in cases:
        with pytest.raises(outform.SchemaError) as caught:
            outform.parse("{}", schema)
        assert "cannot be compiled" in caught.value.what
        assert caught.value.where == f"schema at {where}"
        assert caught.value.fix is not None and "regular expression" in caught.value.fix


@pytest.mark.parametrize(
    ("options", "advice"),
    [
        ({"level": "off"}, "level 'minimal' reads JSON out of prose"),
        ({"level": "minimal", "stages": []}, "add 'extract' to the stages"),
        ({"level": "full", "stages": []}, "and 'decode' to repair malformed JSON"),
        ({"level": "full", "stages": ["extract"]}, "add 'decode' to the stages"),
        ({"level": "minimal"}, "level 'full' also repairs malformed JSON"),
    ],
)
def test_the_fix_for_unreadable_json_names_what_is_missing(
    options: dict[str, Any], advice: str
) -> None:
    """With `stages = []` the fix said "level 'minimal' reads JSON out of prose" although the
    level was minimal already: the stage left out of the stages set is what to name."""
    with pytest.raises(OutputError) as caught:
        outform.parse('Here: {"a": 1,}', {"type": "object"}, **options)
    assert caught.value.fix is not None and advice in caught.value.fix
