"""Anthropic and Bedrock: closed objects, optional properties allowed, no bounds, no recursion."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from outform.errors import DialectError
from outform.schema.dialects import translate
from tests.schema.helpers import entry, obeys_rules, round_trip

ORDER: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {"type": "array", "items": {"type": "string"}, "minItems": 3, "maxItems": 9},
        "total": {"type": "number", "minimum": 0, "multipleOf": 0.01},
        "code": {"type": "string", "minLength": 2, "maxLength": 8},
        "kind": {"const": "order"},
    },
    "required": ["items", "kind"],
}


def test_optional_properties_stay_optional() -> None:
    result = translate(ORDER, "anthropic")
    assert result.schema["required"] == ["items", "kind"]
    assert result.schema["additionalProperties"] is False
    assert round_trip(result, {"items": ["a", "b", "c"], "kind": "order"}) == {
        "items": ["a", "b", "c"],
        "kind": "order",
    }
    obeys_rules(result)


def test_bounds_are_moved_out_and_min_items_is_kept_as_far_as_allowed() -> None:
    result = translate(ORDER, "anthropic")
    items = result.schema["properties"]["items"]
    assert items["minItems"] == 1
    assert "maxItems" not in items
    assert items["description"] == "minItems: 3, maxItems: 9"
    assert entry(result, "/properties/items", "minItems").disposition == "checked_locally"
    assert entry(result, "/properties/total", "minimum").disposition == "checked_locally"
    assert result.schema["properties"]["kind"] == {"type": "string", "const": "order"}
    assert entry(result, "/properties/kind", "const").disposition == "enforced"


def test_recursion_fails_before_any_request_with_the_path_and_the_options() -> None:
    schema = {
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/node"}},
    }
    with pytest.raises(DialectError) as caught:
        translate(schema, "anthropic")
    error = caught.value
    assert "recursive" in error.what
    assert error.where == "schema at /$defs/node/properties/next"
    assert any("openai_strict" in option for option in error.options)
    assert any("json_object" in option for option in error.options)


def test_more_than_24_optional_properties_fail_before_any_request() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(25)}}
    with pytest.raises(DialectError, match="25 optional properties"):
        translate(schema, "anthropic")


def test_bedrock_sends_the_schema_as_a_json_string() -> None:
    result = translate(ORDER, "bedrock")
    payload = result.payload()
    assert isinstance(payload, str)
    assert orjson.loads(payload) == result.schema
    assert translate(ORDER, "anthropic").payload() == translate(ORDER, "anthropic").schema


def test_bedrock_sends_string_lengths_without_counting_them_as_enforced() -> None:
    result = translate(ORDER, "bedrock")
    code = result.schema["properties"]["code"]
    assert (code["minLength"], code["maxLength"]) == (2, 8)
    assert entry(result, "/properties/code", "maxLength").disposition == "checked_locally"
    assert "guidance" in entry(result, "/properties/code", "maxLength").reason
    obeys_rules(result)
