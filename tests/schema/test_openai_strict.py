"""OpenAI strict: closed objects, every property required, only the documented keywords."""

from __future__ import annotations

from typing import Any

import pytest

from outform.errors import DialectError, SchemaError
from outform.schema.dialects import NotRepresentableError, translate
from tests.schema.helpers import entry, obeys_rules, round_trip

PERSON: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string", "format": "email"},
    },
    "required": ["name"],
}


def test_every_object_is_closed_and_lists_every_property() -> None:
    result = translate(PERSON, "openai_strict")
    assert result.schema["additionalProperties"] is False
    assert result.schema["required"] == ["name", "age", "email"]
    obeys_rules(result)


def test_an_optional_property_is_sent_nullable_and_its_null_comes_back_absent() -> None:
    result = translate(PERSON, "openai_strict")
    assert result.schema["properties"]["age"]["type"] == ["integer", "null"]
    assert result.reverse({"name": "Ada", "age": None, "email": None}) == {"name": "Ada"}
    assert round_trip(result, {"name": "Ada"}) == {"name": "Ada", "age": None, "email": None}


def test_unsupported_keywords_move_to_the_description_and_are_checked_locally() -> None:
    result = translate(PERSON, "openai_strict")
    name = result.schema["properties"]["name"]
    assert "maxLength" not in name
    assert name["description"] == "maxLength: 40"
    assert entry(result, "/properties/name", "maxLength").disposition == "checked_locally"
    assert entry(result, "/properties/age", "minimum").disposition == "enforced"
    assert entry(result, "/properties/email", "format").disposition == "enforced"


def test_a_look_around_pattern_is_moved_out_and_a_plain_one_is_kept() -> None:
    schema = {
        "type": "object",
        "properties": {
            "price": {"type": "string", "pattern": "\\d+(?=USD)"},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        },
        "required": ["price", "code"],
    }
    result = translate(schema, "openai_strict")
    assert "pattern" not in result.schema["properties"]["price"]
    assert result.schema["properties"]["code"]["pattern"] == "^[A-Z]{3}$"
    assert entry(result, "/properties/price", "pattern").disposition == "checked_locally"


def test_a_non_object_root_is_wrapped_and_unwrapped() -> None:
    result = translate({"type": "array", "items": {"type": "integer"}}, "openai_strict")
    assert result.wrapped_root
    assert result.schema["properties"]["value"] == {"type": "array", "items": {"type": "integer"}}
    assert round_trip(result, [1, 2]) == {"value": [1, 2]}
    obeys_rules(result)


def test_wrapping_can_be_refused_and_then_the_error_names_the_options() -> None:
    with pytest.raises(DialectError) as caught:
        translate({"type": "string"}, "openai_strict", wrap_root=False)
    assert caught.value.where == "schema at /"
    assert any("wrap_root" in option for option in caught.value.options)
    assert any("json_object" in option for option in caught.value.options)


def test_a_map_is_written_as_key_value_pairs() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    result = translate(
        {"type": "object", "properties": {"m": schema}, "required": ["m"]}, "openai_strict"
    )
    pairs = result.schema["properties"]["m"]
    assert pairs["type"] == "array"
    assert pairs["items"]["properties"]["value"] == {"type": "integer"}
    assert round_trip(result, {"m": {"a": 1, "b": 2}}) == {
        "m": [{"key": "a", "value": 1}, {"key": "b", "value": 2}]
    }
    assert entry(result, "/properties/m", "additionalProperties").disposition == "enforced"


def test_a_free_form_object_travels_as_a_json_string() -> None:
    schema = {"type": "object", "properties": {"extra": {"type": "object"}}, "required": ["extra"]}
    result = translate(schema, "openai_strict")
    assert result.schema["properties"]["extra"]["type"] == "string"
    assert round_trip(result, {"extra": {"any": [1, None]}}) == {"extra": '{"any":[1,null]}'}
    assert result.reverse({"extra": "not json"}) == {"extra": "not json"}


def test_untyped_array_items_travel_as_json_strings() -> None:
    schema = {"type": "object", "properties": {"xs": {"type": "array"}}, "required": ["xs"]}
    result = translate(schema, "openai_strict")
    assert result.schema["properties"]["xs"]["items"]["type"] == "string"
    round_trip(result, {"xs": [1, "two", {"three": 3}]})
    obeys_rules(result)


def test_declared_keys_only_unless_the_caller_keeps_objects_open() -> None:
    closed = translate(PERSON, "openai_strict")
    with pytest.raises(NotRepresentableError) as caught:
        closed.forward({"name": "Ada", "nickname": "A"})
    assert caught.value.kind == "closed_object"
    assert caught.value.path == "/nickname"
    assert "closed" in entry(closed, "", "additionalProperties").reason

    kept = translate(PERSON, "openai_strict", open_objects="keep")
    wire = round_trip(kept, {"name": "Ada", "nickname": "A"})
    assert wire["additional_properties"] == [{"key": "nickname", "value": '"A"'}]


def test_one_of_is_sent_as_any_of_and_exclusivity_is_checked_locally() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"oneOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["v"],
    }
    result = translate(schema, "openai_strict")
    assert result.schema["properties"]["v"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert entry(result, "/properties/v", "oneOf").disposition == "checked_locally"


def test_keywords_beside_a_union_are_distributed_into_its_branches() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
    }
    result = translate(schema, "openai_strict")
    branches = result.schema["properties"]["value"]["anyOf"]
    assert [b["properties"]["a"]["type"] for b in branches] == ["string", ["string", "null"]]
    assert [b["properties"]["b"]["type"] for b in branches] == [["string", "null"], "string"]
    round_trip(result, {"a": "x"})
    round_trip(result, {"b": "y"})
    obeys_rules(result)


def test_all_of_is_merged_and_const_becomes_enum() -> None:
    schema = {
        "allOf": [
            {"type": "object", "properties": {"kind": {"const": "cat"}}, "required": ["kind"]},
            {"properties": {"lives": {"type": "integer", "maximum": 9}}},
        ]
    }
    result = translate(schema, "openai_strict")
    assert result.schema["properties"]["kind"] == {"type": "string", "enum": ["cat"]}
    assert result.schema["properties"]["lives"]["maximum"] == 9
    assert entry(result, "", "allOf").disposition == "enforced"
    round_trip(result, {"kind": "cat", "lives": 3})


def test_recursion_is_kept_through_defs() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#"}},
        },
        "required": ["name", "children"],
    }
    result = translate(schema, "openai_strict")
    assert result.schema["properties"]["children"]["items"] == {"$ref": "#/$defs/root"}
    assert result.schema["$defs"]["root"]["additionalProperties"] is False
    round_trip(result, {"name": "a", "children": [{"name": "b", "children": []}]})
    obeys_rules(result)


def test_draft_04_exclusive_bounds_and_definitions_are_read_as_draft_04() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "definitions": {"pct": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
        "properties": {"p": {"$ref": "#/definitions/pct", "description": "ignored sibling"}},
        "required": ["p"],
    }
    result = translate(schema, "openai_strict")
    assert result.schema["$defs"]["pct"] == {"type": "number", "exclusiveMinimum": 0}
    assert "$schema" not in result.schema


def test_a_schema_over_the_nesting_limit_fails_before_any_request() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(11):
        schema = {"type": "object", "properties": {"x": schema}, "required": ["x"]}
    with pytest.raises(DialectError) as caught:
        translate(schema, "openai_strict")
    assert "11 levels of object nesting" in caught.value.what
    assert caught.value.dialect == "openai_strict"


def test_a_schema_that_accepts_no_value_is_refused() -> None:
    with pytest.raises(SchemaError, match="the schema accepts no value"):
        translate({"allOf": [{"type": "string"}, {"type": "integer"}]}, "openai_strict")


def test_an_invalid_schema_is_a_schema_error() -> None:
    with pytest.raises(SchemaError):
        translate({"type": "object", "properties": {"a": {"type": 5}}}, "openai_strict")
