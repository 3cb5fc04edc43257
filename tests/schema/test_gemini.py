"""Gemini: responseJsonSchema (JSON Schema subset) and responseSchema (OpenAPI subset)."""

from __future__ import annotations

from typing import Any

import pytest

from outform.errors import DialectError
from outform.schema.dialects import translate
from tests.schema.helpers import entry, obeys_rules, round_trip

PROFILE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z]+$"},
        "nick": {"type": ["string", "null"]},
        "born": {"type": "string", "format": "date"},
        "site": {"type": "string", "format": "uri"},
        "score": {"type": "integer", "exclusiveMinimum": 0},
        "tags": {"type": "object", "additionalProperties": {"type": "integer"}},
        "kind": {"const": "person"},
    },
    "required": ["name"],
}


def test_gemini_keeps_maps_type_lists_and_documented_formats() -> None:
    result = translate(PROFILE, "gemini")
    props = result.schema["properties"]
    assert props["tags"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["nick"] == {"type": ["string", "null"]}
    assert props["born"] == {"type": "string", "format": "date"}
    assert props["kind"] == {"type": "string", "enum": ["person"]}
    assert result.schema["required"] == ["name"]
    assert "additionalProperties" not in result.schema
    assert not result.reshapes
    round_trip(result, {"name": "ada", "tags": {"x": 1}, "extra": True})
    obeys_rules(result)


def test_gemini_moves_out_what_it_ignores() -> None:
    result = translate(PROFILE, "gemini")
    props = result.schema["properties"]
    assert props["name"] == {"type": "string", "description": "pattern: ^[a-z]+$"}
    assert props["site"] == {"type": "string", "description": "format: uri"}
    # exclusiveMinimum is not supported, but on integers "> 0" is exactly ">= 1"
    assert props["score"] == {"type": "integer", "minimum": 1}
    assert entry(result, "/properties/score", "exclusiveMinimum").disposition == "enforced"
    ratio = translate({"type": "number", "exclusiveMinimum": 0}, "gemini")
    assert ratio.schema == {"type": "number", "minimum": 0, "description": "exclusiveMinimum: 0"}
    assert entry(ratio, "", "exclusiveMinimum").disposition == "checked_locally"
    assert entry(result, "/properties/name", "pattern").disposition == "checked_locally"


def test_gemini_wraps_a_described_reference_so_that_nothing_but_dollar_keys_sit_beside_ref() -> (
    None
):
    schema = {
        "$defs": {"pt": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/pt", "description": "start"}},
    }
    result = translate(schema, "gemini")
    assert result.schema["properties"]["a"] == {
        "anyOf": [{"$ref": "#/$defs/pt"}],
        "description": "start",
    }
    obeys_rules(result)


def test_gemini_takes_recursion_only_through_optional_properties() -> None:
    optional = {"type": "object", "properties": {"next": {"$ref": "#"}}}
    result = translate(optional, "gemini")
    round_trip(result, {"next": {"next": {}}})
    obeys_rules(result)
    required = {"type": "object", "properties": {"next": {"$ref": "#"}}, "required": ["next"]}
    with pytest.raises(DialectError, match="not required"):
        translate(required, "gemini")


def test_gemini_openapi_uses_upper_case_types_nullable_and_property_ordering() -> None:
    result = translate(PROFILE, "gemini_openapi")
    schema = result.schema
    assert schema["type"] == "OBJECT"
    assert schema["propertyOrdering"] == list(PROFILE["properties"])
    assert schema["properties"]["nick"] == {"type": "STRING", "nullable": True}
    assert schema["properties"]["born"] == {"type": "STRING", "description": "format: date"}
    assert schema["properties"]["tags"]["type"] == "ARRAY"
    assert result.validation_schema["properties"]["nick"] == {"type": ["string", "null"]}
    round_trip(result, {"name": "ada", "nick": None, "tags": {"x": 1}})
    obeys_rules(result)


def test_gemini_openapi_inlines_references_and_refuses_recursion() -> None:
    schema = {
        "definitions": {"pt": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/pt"}},
    }
    result = translate(schema, "gemini_openapi")
    assert result.schema["properties"]["a"]["properties"] == {"x": {"type": "NUMBER"}}
    assert "$defs" not in result.schema
    with pytest.raises(DialectError, match="recursive"):
        translate({"type": "object", "properties": {"next": {"$ref": "#"}}}, "gemini_openapi")


def test_gemini_openapi_takes_only_string_enums() -> None:
    schema = {"type": "object", "properties": {"n": {"enum": [1, 2]}}, "required": ["n"]}
    result = translate(schema, "gemini_openapi")
    assert result.schema["properties"]["n"] == {"type": "INTEGER", "description": "enum: [1,2]"}
    assert entry(result, "/properties/n", "enum").disposition == "checked_locally"


# -- recursion: one rule for properties, arrays and maps --------------------------------------


def tree(children: dict[str, Any], *, required: bool = True) -> dict[str, Any]:
    """A recursive Node whose `children` holds more Nodes (an array or a map of them)."""
    node: dict[str, Any] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "children": children},
        "required": ["name", "children"] if required else ["name"],
    }
    return {"$defs": {"Node": node}, "$ref": "#/$defs/Node"}


NODE = {"$ref": "#/$defs/Node"}
ARRAY = {"type": "array", "items": NODE}
MAP = {"type": "object", "additionalProperties": NODE}


@pytest.mark.parametrize("children", [ARRAY, MAP], ids=["array", "map"])
def test_gemini_takes_a_required_array_or_map_of_itself_which_may_be_empty(
    children: dict[str, Any],
) -> None:
    """A map and an array are one case: either may be empty, which ends the recursion where
    Gemini stops unrolling it, so every reply it lets the model write is valid and the ledger
    says `enforced` for what is sent."""
    result = translate(tree(children), "gemini")
    obeys_rules(result)
    assert result.schema["$defs"]["Node"]["required"] == ["name", "children"]
    assert entry(result, "/$defs/Node", "required").disposition == "enforced"
    assert entry(result, "/$defs/Node/properties/children", "type").disposition == "enforced"
    leaf: dict[str, Any] = {"name": "b", "children": [] if children is ARRAY else {}}
    value = {"name": "a", "children": [leaf] if children is ARRAY else {"b": leaf}}
    round_trip(result, value)


@pytest.mark.parametrize(
    "children",
    [
        {**ARRAY, "minItems": 1},
        {"type": "array", "prefixItems": [NODE], "minItems": 1},
        {"type": "object", "additionalProperties": NODE, "required": ["first"]},
    ],
    ids=["array-min-1", "tuple-min-1", "map-with-a-required-key"],
)
def test_gemini_refuses_an_array_or_map_of_itself_which_may_not_be_empty(
    children: dict[str, Any],
) -> None:
    with pytest.raises(DialectError, match="not required") as caught:
        translate(tree(children), "gemini")
    assert caught.value.where is not None
    assert caught.value.where.startswith("schema at /$defs/Node/properties/children/")


def test_gemini_recursion_error_names_the_ref_that_closes_the_loop() -> None:
    """The required key of a map is written on the wire as a declared property; the error
    names the user's `$ref` (under `additionalProperties`), not that wire-only place, and its
    fix mentions maps too."""
    node: dict[str, Any] = {
        "type": "object",
        "properties": {
            "x": {"type": "integer"},
            "children": {"type": "object", "additionalProperties": NODE, "required": ["x"]},
        },
        "required": ["x", "children"],
    }
    with pytest.raises(DialectError, match="recursive") as caught:
        translate({"$defs": {"Node": node}, "$ref": "#/$defs/Node"}, "gemini")
    assert caught.value.where == "schema at /$defs/Node/properties/children/additionalProperties"
    assert "children/properties/x" not in str(caught.value)
    assert "map" in " ".join(caught.value.options)


@pytest.mark.parametrize("children", [{**ARRAY, "minItems": 1}, NODE], ids=["array", "node"])
def test_gemini_takes_any_loop_that_passes_an_optional_property(children: dict[str, Any]) -> None:
    result = translate(tree(children, required=False), "gemini")
    obeys_rules(result)


def test_gemini_takes_a_loop_with_one_way_out_anywhere_along_it() -> None:
    """a -> b through a required property, b -> a through an optional one: the loop ends."""
    schema: dict[str, Any] = {
        "$defs": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}, "required": ["b"]},
            "B": {"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}},
        },
        "$ref": "#/$defs/A",
    }
    obeys_rules(translate(schema, "gemini"))
    schema["$defs"]["B"]["required"] = ["a"]
    with pytest.raises(DialectError, match="recursive"):
        translate(schema, "gemini")


def test_gemini_does_not_take_a_nullable_union_as_a_way_out() -> None:
    """Gemini's documentation: nullable properties are not sufficient."""
    nullable = {"anyOf": [NODE, {"type": "null"}]}
    with pytest.raises(DialectError, match="recursive"):
        translate(tree(nullable), "gemini")


def test_the_rule_checker_reads_loops_as_the_translator_does() -> None:
    from outform.schema.dialects import check_rules

    wire = translate(tree(ARRAY), "gemini").schema
    assert check_rules(wire, "gemini") == []
    wire["$defs"]["Node"]["properties"]["children"]["minItems"] = 1
    (problem,) = check_rules(wire, "gemini")
    assert problem.path == "/$defs/Node/properties/children/items"
    assert "array that may be empty" in problem.message
