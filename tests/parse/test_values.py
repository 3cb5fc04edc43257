"""Values never change silently: exact integers, no invented infinities, valid Unicode, and an
enum member is never picked out of JSON's keys (issue 9)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

import outform
from outform import InputError, OutputError
from outform.errors import StreamAbortedError
from outform.parse.values import decode_exact, encode, flaw, nonfinite_literal, number_text
from outform.streaming import StreamParser

BIG = "12345678901234567890123"


def field(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"a": schema}, "required": ["a"]}


# -- integers beyond 64 bits ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "level"),
    [
        (f'{{"a": {BIG}}}', "minimal"),
        (f'{{"a": {BIG}}}', "full"),
        (f'{{"a": [{BIG}]}}', "minimal"),
        (f"Sure: {{'a': {BIG}}}", "full"),  # pyjson5
        (f"{{'a': {BIG},", "full"),  # json-repair
    ],
)
def test_a_big_integer_coerced_to_a_string_keeps_every_digit(reply: str, level: str) -> None:
    result = outform.parse(reply, field({"type": "string"}), level=level)
    assert result.value == {"a": BIG}


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_a_big_integer_in_a_list_wanted_as_text_is_written_exactly(level: str) -> None:
    schema = field({"type": "string"})
    reply = f'{{"a": [1, {BIG}, -{BIG}]}}'
    if level == "minimal":
        with pytest.raises(OutputError):  # a list becomes its JSON text only at level full
            outform.parse(reply, schema, level=level)
        return
    assert outform.parse(reply, schema, level=level).value == {"a": f"[1,{BIG},-{BIG}]"}


@pytest.mark.parametrize(
    ("reply", "schema", "expected"),
    [
        (f'{{"a": {BIG}}}', field({"type": "integer"}), {"a": int(BIG)}),
        (f'{{"a": -{BIG}}}', field({"type": ["integer", "null"]}), {"a": -int(BIG)}),
        (BIG, {"type": "integer"}, int(BIG)),
        (f'{{"a": {BIG}}}', field({"type": "integer", "maximum": 10**30}), {"a": int(BIG)}),
    ],
)
def test_an_integer_field_holds_an_integer_beyond_64_bits_exactly(
    reply: str, schema: dict[str, Any], expected: Any
) -> None:
    """orjson reads such an integer as a float, which an integer field accepts (its value is
    whole): every path reads a reply holding 19 digits in a row again exactly."""
    result = outform.parse(reply, schema)
    assert result.value == expected
    assert isinstance(result.value["a"] if isinstance(expected, dict) else result.value, int)
    assert not result.changes


def test_a_big_integer_matches_an_enum_member_written_as_text() -> None:
    assert outform.parse(f'{{"a": {BIG}}}', field({"enum": [BIG, "0"]})).value == {"a": BIG}


def test_a_reply_valid_only_as_orjson_reads_it_is_judged_as_written() -> None:
    """Found by the fuzzer: both branches of this oneOf take the exact integer, so the reply
    is not valid; orjson's float matched the first branch only, and the fast path returned it.
    A reply that may hold an integer beyond 64 bits is read exactly, whatever the schema."""
    schema = {
        "oneOf": [
            {"type": "object", "additionalProperties": {"type": "number"}},
            {"type": "object", "properties": {"a": {"enum": [int(BIG), "x"]}}},
        ]
    }
    with pytest.raises(OutputError):
        outform.parse(f'{{"a": {BIG}}}', schema)
    assert outform.parse('{"a": 1.5}', schema).value == {"a": 1.5}


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
def test_an_integer_beyond_64_bits_is_judged_as_written_by_one_of(level: str) -> None:
    """Found by the fuzzer: `2**64` is an integer and a number, so this oneOf refuses it. The
    fast path judged orjson's float under integer fields bounded to 64 bits, which the integer
    branch then refused, leaving the number branch the one match."""
    schema = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    with pytest.raises(OutputError, match="18446744073709551616"):
        outform.parse("18446744073709551616", schema, level=level)
    assert outform.parse("1.5", schema, level=level).value == 1.5


@pytest.mark.parametrize(
    "schema", [{}, {"type": "array"}, {"type": "array", "items": {"type": "number"}}]
)
def test_an_integer_beyond_64_bits_valid_as_sent_keeps_every_digit(schema: Any) -> None:
    """A field typed `number`, or not typed, is no reason to return orjson's float."""
    result = outform.parse(f"[{BIG}1]", schema)
    assert result.value == [int(BIG + "1")]
    assert not result.changes


class Count(BaseModel):
    n: int


def test_the_data_of_a_typed_reply_valid_as_sent_keeps_every_digit() -> None:
    """The typed fast path leaves `data` to be read from the text on first use: read exactly,
    as `value` is, not as orjson's float (1.1805916207174113e+21)."""
    result = outform.parse("1180591620717411303424", type=int)
    assert result.value == 1180591620717411303424
    assert result.data == 1180591620717411303424
    assert isinstance(result.data, int)
    typed = outform.parse(f'{{"n": {BIG}}}', type=Count)
    assert typed.data == {"n": int(BIG)} == typed.value.model_dump()
    assert outform.parse('{"n": 7}', type=Count).data == {"n": 7}


@pytest.mark.parametrize("level", ["minimal", "full"])
def test_an_integer_too_long_for_python_to_read_is_refused_at_every_level(level: str) -> None:
    """Over Python's limit of 4300 digits for int <-> str. At full it was kept as the text of a
    string field (json-repair's reading), a value the reply did not write: refused now, on
    every path alike (tests/parse/test_long_integers.py)."""
    digits = "9" * 5000
    with pytest.raises(OutputError, match="integer of 5,000 digits"):
        outform.parse(f'{{"a": {digits}}}', field({"type": "string"}), level=level)


def test_the_exact_reader_keeps_digits_and_refuses_what_json_cannot_hold() -> None:
    assert decode_exact(f"[{BIG}, 1.5]") == [int(BIG), 1.5]
    for text in ("[NaN]", "[Infinity]", "[1e400]"):
        with pytest.raises(ValueError):
            decode_exact(text)


def test_numbers_are_written_with_every_digit_or_not_at_all() -> None:
    assert number_text(int(BIG)) == BIG
    assert number_text(0.1) == "0.1"
    assert number_text(float("inf")) is None
    assert number_text(float("nan")) is None


def test_encoding_never_writes_an_infinity_as_null() -> None:
    assert encode([float("inf"), int(BIG)]) == f"[Infinity,{BIG}]"
    assert encode({"a": [1, 2]}) == '{"a":[1,2]}'


# -- numbers out of range -------------------------------------------------------------------


@pytest.mark.parametrize("schema", [{"type": "string"}, {"type": "number"}, {}])
def test_1e400_never_becomes_null_or_infinity(schema: dict[str, Any]) -> None:
    with pytest.raises(OutputError) as caught:
        outform.parse('{"a": 1e400}', field(schema), level="full")
    assert "out of range" in caught.value.what


def test_1e400_as_the_whole_reply_for_a_string_is_the_text_as_written() -> None:
    assert outform.parse("1e400", {"type": "string"}, level="full").value == "1e400"


@pytest.mark.parametrize("level", ["off", "minimal", "full"])
@pytest.mark.parametrize("word", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused_at_every_level_never_read_or_nulled(
    level: str, word: str
) -> None:
    class Invoice(BaseModel):
        total: float

    reply = f'{{"total": {word}}}'
    number = {"type": "object", "properties": {"total": {"type": "number"}}}
    for output in ({"type": Invoice}, {"schema": number}, {"schema": None}):
        with pytest.raises(OutputError) as caught:
            outform.parse(reply, level=level, **output)
        (violation,) = caught.value.hint.violations
        assert violation.kind == "syntax"
        assert f"writes {word}, which is not a JSON number" in violation.found
        assert "level 'full'" not in str(caught.value)  # no level reads it


def test_nan_inside_a_string_or_a_word_is_text() -> None:
    result = outform.parse('{"note": "NaN or Infinity", "tag": "NaNa"}', {"type": "object"})
    assert result.value == {"note": "NaN or Infinity", "tag": "NaNa"}
    assert nonfinite_literal('["x\\"NaN", 1]') is None
    assert nonfinite_literal("[1, -Infinity]") == (4, "-Infinity")


def test_nan_is_refused_even_where_json5_syntax_is_repaired() -> None:
    with pytest.raises(OutputError):
        outform.parse("{total: NaN,}", {"type": "object"}, level="full")


def test_a_value_with_a_flaw_says_which() -> None:
    assert flaw({"a": [float("inf")]}) is not None
    assert "surrogate" in (flaw(["\ud800"]) or "")
    assert "key" in (flaw({1: "a"}) or "")
    assert flaw({"a": ["é", 1.5, None]}) is None


# -- lone surrogates ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "schema", "level", "where"),
    [
        ('["\ud800"]', {"type": "integer"}, "full", "character 2"),
        ("\ud800", {"type": "string"}, "minimal", "character 0"),
        ('{"a": "x\udfff"}', {"type": "object"}, "minimal", "character 8"),
    ],
)
def test_a_reply_with_a_lone_surrogate_is_an_input_error_naming_the_character(
    reply: str, schema: dict[str, Any], level: str, where: str
) -> None:
    with pytest.raises(InputError) as caught:
        outform.parse(reply, schema, level=level)
    assert caught.value.where == where
    assert "surrogate" in caught.value.what


def test_a_lone_surrogate_written_as_an_escape_is_refused_not_crashed() -> None:
    """json-repair reads "\\ud800" into a lone surrogate; orjson and pyjson5 refuse it."""
    with pytest.raises(OutputError) as caught:
        outform.parse('["\\ud800"', {"type": "array"}, level="full")
    assert "surrogate" in caught.value.what


def test_the_stream_parser_raises_only_outform_errors_on_a_lone_surrogate() -> None:
    parser: StreamParser[Any] = StreamParser({"type": "object"})
    try:
        parser.feed('{"a": "x\ud800')
        parser.feed('"}')
        parser.finish()
    except (InputError, OutputError, StreamAbortedError):
        return
    pytest.fail("a reply with a lone surrogate was accepted")


# -- enum members are words of the reply, not keys of its JSON ------------------------------


@pytest.mark.parametrize("level", ["minimal", "full"])
@pytest.mark.parametrize("reply", ['{"a": 1}', "{'a': 1}", '[{"b": 2}]'])
def test_an_enum_member_is_never_picked_out_of_a_key(reply: str, level: str) -> None:
    with pytest.raises(OutputError):
        outform.parse(reply, {"enum": ["a", "b"]}, level=level)


def test_an_enum_member_named_in_a_sentence_is_still_found() -> None:
    assert outform.parse("I would say b.", {"enum": ["a", "b"]}, level="full").value == "b"
    assert outform.parse('{"answer": "b"}', {"enum": ["a", "b"]}, level="full").value == "b"


class _Count(BaseModel):
    n: int


@pytest.mark.parametrize(
    ("literal", "integer"),
    [("9007199254740993.0", 9007199254740993), ("12345678901234567890.0", 12345678901234567890)],
)
@pytest.mark.parametrize(
    "schema",
    [
        _Count,
        {"type": "object", "properties": {"n": {"type": "integer"}}},
        {"type": "object", "properties": {"n": {"type": "number"}}},
    ],
)
def test_an_integer_written_with_a_fraction_keeps_every_digit(
    literal: str, integer: int, schema: Any
) -> None:
    """Found by a new-user trial: read through a float, `9007199254740993.0` became
    ...992 with no record (a float holds only some integers past 2**53)."""
    result = outform.parse('{"n": ' + literal + "}", schema)
    assert (result.value.n if isinstance(result.value, _Count) else result.value["n"]) == integer


def test_a_float_spelled_as_json_writers_spell_it_stays_a_float() -> None:
    """Its shortest spelling is the float itself: no digit the float does not hold."""
    assert decode_exact("1.8446744073709552e19") == 1.8446744073709552e19
    assert isinstance(decode_exact("9007199254740992.0"), float)
