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


# -- the limits count the schema as sent: a definition once, however often it is used ---------


def shared(optional: int, uses: int) -> dict[str, Any]:
    """A definition of `optional` optional properties, used by `uses` required properties."""
    body = {"type": "object", "properties": {f"o{i}": {"type": "string"} for i in range(optional)}}
    return {
        "$defs": {"D": body},
        "type": "object",
        "properties": {f"p{i}": {"$ref": "#/$defs/D"} for i in range(uses)},
        "required": [f"p{i}" for i in range(uses)],
    }


def test_a_definition_used_from_several_places_counts_once() -> None:
    """20 optional properties in one definition used 3 times: 20, under the limit of 24 (a
    count per use would say 60). The definition stays one `$defs` entry on the wire, which is
    what Anthropic counts."""
    from outform.schema.dialects.analysis import measure

    result = translate(shared(20, 3), "anthropic")
    assert list(result.schema["$defs"]) == ["D"]
    assert measure(result.schema).optional_properties == 20
    with pytest.raises(DialectError, match="25 optional properties"):
        translate(shared(25, 1), "anthropic")


def test_a_union_definition_counts_once_as_a_union_typed_property() -> None:
    from outform.schema.dialects.analysis import measure

    union = {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    schema = {
        "$defs": {"U": union},
        "type": "object",
        "properties": {f"u{i}": {"$ref": "#/$defs/U"} for i in range(20)},
        "required": [f"u{i}" for i in range(20)],
    }
    assert measure(translate(schema, "anthropic").schema).union_properties == 1


def test_described_references_over_the_union_limit_are_sent_as_plain_references() -> None:
    """Anthropic counts "parameters with type arrays or anyOf": the one-branch `anyOf` outform
    writes to keep a description beside a `$ref` is one of them. Up to 16 keep their
    description; past the limit every such `$ref` is sent alone, as Anthropic's SDK sends
    every `$ref`, and the ledger says each description was dropped (it guides the model and
    does not change what is valid)."""
    from outform.schema.dialects.analysis import measure

    schema = shared(0, 16)
    for name in schema["properties"]:
        schema["properties"][name]["description"] = f"the {name}"
    kept = translate(schema, "anthropic")
    obeys_rules(kept)
    assert kept.schema["properties"]["p0"] == {
        "anyOf": [{"$ref": "#/$defs/D"}],
        "description": "the p0",
    }
    assert not [e for e in kept.ledger if e.keyword == "description"]

    schema["properties"]["p16"] = {"$ref": "#/$defs/D", "description": "the p16"}
    schema["required"].append("p16")
    plain = translate(schema, "anthropic")
    obeys_rules(plain)
    assert measure(plain.schema).union_properties == 0
    assert all(p == {"$ref": "#/$defs/D"} for p in plain.schema["properties"].values())
    dropped = {e.path for e in plain.ledger if e.keyword == "description"}
    assert dropped == {f"/properties/p{i}" for i in range(17)}
    assert all(e.disposition == "dropped" for e in plain.ledger if e.keyword == "description")


def test_real_unions_over_the_limit_are_still_refused() -> None:
    schema = {
        "type": "object",
        "properties": {f"u{i}": {"type": ["string", "integer"]} for i in range(17)},
        "required": [f"u{i}" for i in range(17)],
        "additionalProperties": False,
    }
    with pytest.raises(DialectError, match="17 properties with a union type"):
        translate(schema, "anthropic")
