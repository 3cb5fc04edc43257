"""At `full`, a sentence is never read as the value it denies: a boolean word or an enum member
a negation governs names nothing (src/outform/parse/negation.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

import outform
from outform import OutputError

FLAG = {"type": "object", "properties": {"ok": {"type": "boolean"}}}
LEVEL = {"enum": ["LOW", "MEDIUM", "HIGH"]}


def full(reply: str, schema: Mapping[str, Any]) -> object:
    return outform.parse(reply, schema=schema, level="full").value


@pytest.mark.parametrize(
    "sentence", ["not true", "The answer is: not true.", "true is not right", "It isn't false"]
)
def test_a_negated_boolean_is_refused_with_the_reason(sentence: str) -> None:
    with pytest.raises(OutputError, match="negated"):
        full(json.dumps({"ok": sentence}), FLAG)


@pytest.mark.parametrize(
    ("sentence", "value"), [("The answer is: true.", True), ("It is false, not true", False)]
)
def test_a_clause_without_negation_still_gives_its_word(sentence: str, value: bool) -> None:
    assert full(json.dumps({"ok": sentence}), FLAG) == {"ok": value}


@pytest.mark.parametrize(
    "sentence", ["Not HIGH", "HIGH is not right", "never medium", "I don't think it's LOW"]
)
def test_a_member_named_only_under_a_negation_is_no_match(sentence: str) -> None:
    with pytest.raises(OutputError):
        full(sentence, LEVEL)


@pytest.mark.parametrize(
    ("sentence", "member"),
    [
        ("It is low, not HIGH", "LOW"),  # the negated HIGH does not outrank by its case
        ("I'd say MEDIUM, not high", "MEDIUM"),
        ("Not low: HIGH", "HIGH"),
    ],
)
def test_the_one_member_outside_a_negated_clause_is_the_value(sentence: str, member: str) -> None:
    assert full(sentence, LEVEL) == member


def test_a_member_that_is_itself_a_negation_word_is_named() -> None:
    assert full("I'd say no", {"enum": ["yes", "no"]}) == "no"


def test_inside_an_object_too() -> None:
    schema = {"type": "object", "properties": {"s": {"enum": ["positive", "negative"]}}}
    with pytest.raises(OutputError):
        full('{"s": "not positive"}', schema)
