"""A Decimal keeps every digit the reply wrote (parse/decimals.py): Pydantic reads a JSON
number through a float before it makes a Decimal of it."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

import outform


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
