"""Schemas and values may hold integers beyond 64 bits (JSON has no bound; orjson writes up to
64 bits): every dialect translates them, every wire form writes them digit for digit, and values
mapped to JSON text and back keep them exactly. Found by the fuzzer (tests/fuzz): the
translators raised orjson's TypeError (an InternalError), Bedrock's schema string could not be
written."""

from __future__ import annotations

from typing import Any

import pytest

from outform.jsontext import dumps, loads
from outform.schema.dialects import check_rules, names, translate

BIG = 2**64
LONGER = 12345678901234567890123
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "maximum": BIG},
        "code": {"enum": [LONGER, "x"]},
    },
    "required": ["count"],
}


@pytest.mark.parametrize("dialect", names())
def test_every_dialect_translates_a_schema_with_long_integers(dialect: str) -> None:
    result = translate(SCHEMA, dialect)
    assert not check_rules(result.schema, dialect)
    payload = result.payload()
    text = payload if isinstance(payload, str) else dumps(payload).decode()
    assert str(LONGER) in text  # every enum member reaches the wire, digit for digit


def test_bedrock_sends_the_schema_as_a_string_holding_every_digit() -> None:
    payload = translate({"enum": [LONGER, BIG]}, "bedrock").payload()
    assert isinstance(payload, str)
    assert loads(payload)["properties"]["value"]["enum"] == [LONGER, BIG]


def test_a_value_sent_as_json_text_comes_back_exactly() -> None:
    """A schema the dialect cannot express is sent as JSON text and read back: the integer
    keeps every digit both ways."""
    result = translate({}, "openai_strict")
    sent = result.forward([BIG, {"n": LONGER}])
    assert str(LONGER) in str(sent)
    assert result.reverse(sent) == [BIG, {"n": LONGER}]


def test_json_text_writes_and_reads_any_integer() -> None:
    value = {"a": [BIG, -(2**70), 1.5, "é"]}
    assert dumps(value) == b'{"a":[18446744073709551616,-1180591620717411303424,1.5,"\xc3\xa9"]}'
    assert loads(dumps(value).decode()) == value
    with pytest.raises(TypeError):
        dumps({1, 2})  # not JSON data
