"""A Decimal keeps every digit the reply wrote (parse/decimals.py): Pydantic reads a JSON
number through a float before it makes a Decimal of it."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

import orjson
import pytest
from pydantic import BaseModel, Field

import outform
from outform.errors import StreamAbortedError
from outform.streaming import parse_stream


class Price(BaseModel):
    amount: Decimal


class Prices(BaseModel):
    amount: Decimal | str
    discount: Decimal | None = None
    history: list[Decimal] = []


class Nested(BaseModel):
    price: Price
    weight: float = 0


@dataclass
class Plain:
    amount: Decimal


class Aliased(BaseModel):
    amount: Decimal = Field(alias="Amount")


class Bounded(BaseModel):
    amount: Annotated[Decimal, Field(max_digits=3)]


LONG = "12345678901234567890.123456789"
SMALL = "0.1000000000000000000001"


@pytest.mark.parametrize("literal", [LONG, SMALL, "1.10", "1e2"])
def test_a_decimal_reply_valid_as_sent_keeps_every_digit(literal: str) -> None:
    """`Decimal('12345678901234567000')` and `Decimal('0.1')` before, with nothing recorded."""
    result = outform.parse(literal, type=Decimal)
    assert result.value == Decimal(literal)
    assert str(result.value) == str(Decimal(literal))
    assert not result.lossy


@pytest.mark.parametrize(
    "reply",
    [
        f'{{"amount": {SMALL}}}',  # valid as sent
        f'{{"amount": {SMALL},}}',  # pyjson5
        f"Sure: {{'amount': {SMALL}}} done",  # in prose, single quotes
        f'{{"amount": {SMALL}, "note": tru',  # json-repair
    ],
)
@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_decimal_field_keeps_every_digit_on_every_path(reply: str, level: str) -> None:
    try:
        result = outform.parse(reply, type=Price, level=level)
    except outform.OutputError:
        assert level == "minimal"  # a reply that needs a tolerant reading
        return
    assert str(result.value.amount) == SMALL


@pytest.mark.parametrize(
    ("output", "reply", "expected"),
    [
        (Nested, f'{{"price": {{"amount": {LONG}}}, "weight": 1.10}}', Decimal(LONG)),
        (Plain, f'{{"amount": {SMALL}}}', Decimal(SMALL)),
        (Aliased, f'{{"Amount": {SMALL}}}', Decimal(SMALL)),
    ],
)
def test_decimals_are_found_wherever_the_type_holds_them(
    output: Any, reply: str, expected: Decimal
) -> None:
    value = outform.parse(reply, type=output).value
    amount = value.price.amount if isinstance(value, Nested) else value.amount
    assert str(amount) == str(expected)


def test_a_decimal_in_a_union_list_or_optional_keeps_its_spelling() -> None:
    """Given as a Decimal (not as its text), so `Decimal | str` still picks the Decimal."""
    result = outform.parse(
        '{"amount": 1.10, "discount": 1e2, "history": [1.10, 2.5, 3]}', type=Prices
    )
    value = result.value
    assert (value.amount, value.discount) == (Decimal("1.10"), Decimal("1E+2"))
    assert isinstance(value.amount, Decimal)
    assert [str(d) for d in value.history] == ["1.10", "2.5", "3"]


def test_a_float_field_beside_a_decimal_stays_a_float() -> None:
    value = outform.parse('{"price": {"amount": 1.10}, "weight": 1.10}', type=Nested).value
    assert value.weight == 1.1 and isinstance(value.weight, float)


def test_the_digits_written_are_checked_against_the_decimals_constraints() -> None:
    """Read as the float 0.1, `0.1000000000000000000001` passed `max_digits=3`."""
    assert outform.parse('{"amount": 1.25}', type=Bounded).value.amount == Decimal("1.25")
    with pytest.raises(outform.OutputError) as caught:
        outform.parse(f'{{"amount": {SMALL}}}', type=Bounded)
    assert "3 digits" in str(caught.value)


def test_a_decimal_whose_spelling_is_not_known_is_recorded_as_lossy() -> None:
    """`1.1` and `1.10` are one float: which one a field was is not known."""
    result = outform.parse('{"amount": 1.1, "discount": 1.10}', type=Prices)
    assert result.value.amount == Decimal("1.1")
    assert [(c.path, c.transform, c.lost) for c in result.changes] == [
        ("/amount", "decimal_from_float", 1),
        ("/discount", "decimal_from_float", 1),
    ]
    assert result.lossy


# -- a decimal's string ---------------------------------------------------------------------
# A Decimal is `anyOf: [number, string]` in its JSON Schema: any string passed the schema, so
# coercion never saw `"$1,234.50"`, and Pydantic refused it ("expected a valid decimal") at
# every level, where a float field converts it (recorded). outform checks the string as what
# the type reads (a decimal literal) and converts the others as a number field does.


class Money(BaseModel):
    price: Decimal
    tax: Decimal | None = None
    lines: list[Decimal] = []


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize(
    ("written", "exact", "how"),
    [
        ("$1,234.50", "1234.50", "currency+thousands"),
        ("1,234.50", "1234.50", "thousands"),
        ("€12.5", "12.5", "currency+plain"),
        ("$12,345,678,901,234,567.89", "12345678901234567.89", "currency+thousands"),
        ("0.1000000000000000000001 ", "0.1000000000000000000001", "plain"),
        ("3/4", "0.75", "fraction"),
        ("12%", "12", "percent+plain"),
    ],
)
def test_a_decimal_string_is_converted_as_for_a_number_field_exactly(
    written: str, exact: str, how: str, level: str
) -> None:
    """The same recorded change as a float field gets, and the decimal holds the digits the
    string wrote (never a float's: `12345678901234567.89` is not `12345678901234568`)."""
    reply = orjson.dumps({"price": written, "lines": [written]}).decode()
    result = outform.parse(reply, type=Money, level=level)
    assert str(result.value.price) == exact and str(result.value.lines[0]) == exact
    changes = [(c.path, c.transform, c.detail, c.before, c.lost) for c in result.changes]
    assert changes == [
        ("/price", "string_to_number", how, written, 0),
        ("/lines/0", "string_to_number", how, written, 0),
    ]
    assert not result.lossy
    as_float = orjson.dumps({"x": written}).decode()
    if float(exact).is_integer() and Decimal(exact) != Decimal(exact).to_integral_value():
        # A float would drop the fraction: a float field refuses what a decimal field keeps.
        with pytest.raises(outform.OutputError, match="lose its fraction"):
            outform.parse(as_float, type=Floats, level=level)
        return
    converted = outform.parse(as_float, type=Floats, level=level)
    assert [(c.transform, c.detail) for c in converted.changes] == [("string_to_number", how)]


class Floats(BaseModel):
    x: float


def test_a_decimal_string_is_not_converted_at_level_off() -> None:
    """As for a float field: no coercion at off; the violation says what the string must be."""
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('{"price": "$1,234.50"}', type=Money, level="off")
    (violation,) = caught.value.hint.violations
    assert violation.path == "/price" and violation.found == 'string "$1,234.50"'
    assert violation.expected.startswith("number | string matching ^[+-]?")


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize("written", ["1.10", "-0.5", "1E+5", "12", ".5"])
def test_a_decimal_literal_as_a_string_is_valid_as_sent(written: str, level: str) -> None:
    result = outform.parse(f'{{"price": "{written}"}}', type=Money, level=level)
    assert (str(result.value.price), result.changes) == (str(Decimal(written)), ())
    assert result.data == {"price": written}


@pytest.mark.parametrize(
    ("written", "note"),
    [
        ("1_000", None),  # Python's spelling, which Pydantic read as 1000 with no change
        ("1,234", "it may mean 1234 or 1.234"),  # a locale's
    ],
)
def test_a_string_no_number_field_reads_is_refused_saying_why(
    written: str, note: str | None
) -> None:
    for level in ("off", "minimal", "full"):
        with pytest.raises(outform.OutputError) as caught:
            outform.parse(orjson.dumps({"price": written}).decode(), type=Money, level=level)
        (violation,) = caught.value.hint.violations
        assert violation.path == "/price"
        if note is not None and level != "off":
            assert note in violation.found


def test_whitespace_around_a_decimal_string_is_a_recorded_change() -> None:
    """Pydantic read `" 1.5"` silently, on the fast path too."""
    result = outform.parse('{"price": " 1.5"}', type=Money)
    assert result.value.price == Decimal("1.5")
    assert [(c.transform, c.before) for c in result.changes] == [("string_to_number", " 1.5")]
    with pytest.raises(outform.OutputError):
        outform.parse('{"price": " 1.5"}', type=Money, level="off")


def test_a_fraction_with_no_exact_decimal_is_recorded_as_lossy() -> None:
    result = outform.parse('{"price": "1/3"}', type=Money)
    assert result.value.price == Decimal(str(1 / 3))  # the float's shortest digits
    assert [(c.transform, c.lost) for c in result.changes] == [
        ("string_to_number", 0),
        ("decimal_from_float", 1),
    ]


def test_the_schema_hash_is_the_published_schemas() -> None:
    """The schema outform checks holds the decimal's pattern; the hash is the format's."""
    fmt = outform.ResponseFormat.of(Money)
    result = outform.parse('{"price": "1.5"}', type=Money)
    assert result.schema_hash == fmt.schema_hash == outform.Pipeline(Money).schema_hash
    assert "pattern" not in orjson.dumps(fmt.schema).decode()


def test_a_hand_written_schema_with_the_type_is_taken_as_it_is() -> None:
    """The pattern is only added to the schema Pydantic generates for the type."""
    schema = {"type": "object", "properties": {"amount": {}}, "required": ["amount"]}
    fmt = outform.JsonSchemaFormat(name="m", schema=schema, output_type=Price)
    with pytest.raises(outform.OutputError, match="valid decimal"):
        outform.parse('{"amount": "$1"}', fmt)


def test_the_stream_agrees_with_parse_on_a_decimal_string() -> None:
    reply = '{"price": "$1,234.50", "lines": []}'
    for level in ("minimal", "full"):
        final = list(parse_stream(iter(reply), type=Money, level=level))[-1].result
        parsed = outform.parse(reply, type=Money, level=level)
        assert final is not None
        assert (final.value, final.changes) == (parsed.value, parsed.changes)
        assert str(final.value.price) == "1234.50"
    with pytest.raises(StreamAbortedError):  # parse refuses it at off: the stream stops
        list(parse_stream(iter(reply), type=Money, level="off"))
