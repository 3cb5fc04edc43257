"""Stage *decode*: strict JSON first, then JSON5 (tier 1), then json-repair (tier 2)."""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform.parse.decode import (
    TIER_NAMES,
    Decoded,
    DecodeFailure,
    decode,
    decode_tier,
    strict_failure,
)

OBJECT = {"type": "object"}


def test_strict_json_is_decoded_at_tier_zero() -> None:
    assert decode('{"a": 1}', 2) == Decoded({"a": 1}, 0)


def test_a_strict_failure_names_the_message_and_the_offset() -> None:
    failure = decode('{"a": }', 0)
    assert isinstance(failure, DecodeFailure)
    assert failure.position == 6
    assert failure.message


def test_json5_syntax_needs_tier_one() -> None:
    text = "{a: 1, /* note */ b: [1, 2,], c: 'x',}"
    assert isinstance(decode(text, 0), DecodeFailure)
    decoded = decode(text, 1)
    assert decoded == Decoded({"a": 1, "b": [1, 2], "c": "x"}, 1, "accepted JSON5 syntax")


def test_python_literals_need_tier_two() -> None:
    text = "{'a': True, 'b': None}"
    assert isinstance(decode(text, 1), DecodeFailure)
    decoded = decode(text, 2)
    assert isinstance(decoded, Decoded)
    assert (decoded.value, decoded.tier) == ({"a": True, "b": None}, 2)


def test_a_truncated_document_is_completed_at_tier_two_with_what_was_done() -> None:
    decoded = decode('{"a": [1, 2,', 2)
    assert isinstance(decoded, Decoded)
    assert decoded.value == {"a": [1, 2]}
    assert decoded.detail


def test_one_tier_can_be_tried_on_its_own() -> None:
    assert decode_tier('{"a": 1,}', 1) == Decoded({"a": 1}, 1, "accepted JSON5 syntax")
    assert isinstance(decode_tier('{"a": 1', 1), DecodeFailure)


@pytest.mark.parametrize("text", ["", "nothing here at all"])
def test_text_with_nothing_to_salvage_fails_even_at_tier_two(text: str) -> None:
    assert isinstance(decode_tier(text, 2), DecodeFailure)


def test_strict_failure_is_none_for_valid_json() -> None:
    assert strict_failure("[1]") is None
    assert strict_failure("[1,]") is not None


def test_the_text_around_a_failure_is_clipped_with_ellipses() -> None:
    text = "0123456789" * 10
    around = DecodeFailure("x", 50).around(text)
    assert around.startswith("…")
    assert around.endswith("…")
    assert text[40:60] in around


def test_the_tiers_are_named() -> None:
    assert TIER_NAMES == ("orjson", "pyjson5", "json_repair")


# -- in the pipeline ------------------------------------------------------------------------


def test_malformed_json_is_refused_at_level_minimal_with_a_syntax_hint() -> None:
    with pytest.raises(outform.OutputError) as caught:
        outform.parse('{"a": 1,}', OBJECT)
    assert caught.value.hint.is_syntax
    assert "trailing comma" in caught.value.hint.message()


def test_malformed_json_is_repaired_at_level_full_and_the_tier_recorded() -> None:
    result = outform.parse('{"a": 1,}', OBJECT, level="full")
    assert result.value == {"a": 1}
    (change,) = result.changes
    assert (change.path, change.stage, change.transform) == ("", "tolerant", "pyjson5")
    assert change.detail == "accepted JSON5 syntax"


def test_the_change_of_a_tolerant_decode_shows_the_text_around_the_problem() -> None:
    result = outform.parse('{"a": 1,}', OBJECT, level="full")
    assert result.changes[0].before == '{"a": 1,}'
    assert result.changes[0].after == '{"a":1}'


def test_the_tolerance_option_enables_a_tier_at_any_level() -> None:
    result = outform.parse("{a: 1}", OBJECT, tolerance=1)
    assert result.value == {"a": 1}
    with pytest.raises(outform.OutputError):
        outform.parse("{'a': None}", OBJECT, tolerance=1)


def test_json_repair_salvages_python_literals_at_level_full() -> None:
    result = outform.parse("{'a': 1, 'b': True, 'c': None}", OBJECT, level="full")
    assert result.value == {"a": 1, "b": True, "c": None}
    assert [c.transform for c in result.changes] == ["json_repair"]


@pytest.mark.parametrize("reply", ["{a: 1}", '{"a": 1,}', "{'a': 1}", '{"a": 1'])
def test_without_the_decode_stage_nothing_changes_at_level_off(reply: str) -> None:
    with pytest.raises(outform.OutputError):
        outform.parse(reply, OBJECT, level="off")


def test_each_tier_is_tried_on_every_candidate_before_the_next_tier() -> None:
    """A strict piece of the reply wins over a tolerant reading of another piece."""
    reply = 'Draft: {a: 1}\nFinal: {"a": 2}'
    result = outform.parse(reply, OBJECT, level="full")
    assert result.value == {"a": 2}
    assert not any(c.stage == "tolerant" for c in result.changes)


def test_a_decoded_value_is_plain_python_json() -> None:
    value: Any = outform.parse('{"a": 1.5e2, "b": [true, null]}', OBJECT).value
    assert value == {"a": 150.0, "b": [True, None]}
    assert isinstance(value["a"], float)
