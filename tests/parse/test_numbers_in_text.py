"""At `full`, a sentence's one number is its value only when nothing in the sentence makes it
another number: a scale word, a bound, an accounting negative or a negation is refused, and the
refusal says why (src/outform/parse/scalars.py)."""

from __future__ import annotations

import json

import pytest

import outform
from outform import OutputError


def amount(text: str, kind: str = "number") -> object:
    schema = {"type": "object", "properties": {"amount": {"type": kind}}}
    value = outform.parse(json.dumps({"amount": text}), schema=schema, level="full").value
    assert isinstance(value, dict)
    return value["amount"]


@pytest.mark.parametrize(
    "scale", ["thousand", "million", "billion", "dozen", "k", "bn", "Millions"]
)
@pytest.mark.parametrize("kind", ["number", "integer"])
def test_a_scale_word_after_the_number(scale: str, kind: str) -> None:
    with pytest.raises(OutputError, match=f"scale word {scale.casefold()!r}"):
        amount(f"2 {scale} units", kind)


@pytest.mark.parametrize(
    "bound", ["more than", "less than", "at least", "at most", "up to", "over", "under", "above"]
)
def test_a_bound_before_the_number(bound: str) -> None:
    with pytest.raises(OutputError, match="a bound, not a value"):
        amount(f"It was {bound} 100 people")


@pytest.mark.parametrize("text", ["<100", ">= 5", "≥5"])
def test_a_comparison_sign(text: str) -> None:
    with pytest.raises(OutputError):
        amount(text)


@pytest.mark.parametrize("text", ["(1,234.50)", "(42)", "Net: (7.5)."])
def test_an_accounting_negative(text: str) -> None:
    with pytest.raises(OutputError, match="accounting negative"):
        amount(text)


def test_a_negated_number() -> None:
    with pytest.raises(OutputError, match="negated"):
        amount("not 42")


@pytest.mark.parametrize(
    ("text", "value"),
    [("about 42 apples", 42), ("roughly 12.5 kg", 12.5), ("It costs 1,234.50 dollars.", 1234.5)],
)
def test_a_plain_number_in_a_sentence_is_still_read(text: str, value: float) -> None:
    assert amount(text) == value
