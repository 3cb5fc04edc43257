"""Schemas that accept no value are refused, by the rules of outform/schema/satisfiable.py;
schemas that accept some value never are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema_rs
import orjson
import pytest

import outform
from outform.cli import EXIT_USAGE, main
from outform.errors import SchemaError
from outform.schema.satisfiable import find_empty
from tests.vendored import corpus

SAMPLES: list[Any] = [
    None, True, False, 0, 1, 2, 3, 5, -1, 1.5, 0.25, 1e9, "", "a", "abc", "abcdef",
    [], [1], [1, 2], ["a", "b", "c"], {}, {"a": 1}, {"a": "x", "b": 2}, {"n": {}},
]  # fmt: skip
"""Values of every kind: none of them may be valid under a schema called empty."""

EMPTY: list[tuple[dict[str, Any], str, str]] = [
    # (schema, where the proof is, a phrase of the reason)
    ({"type": "integer", "minimum": 5, "maximum": 1}, "", "no integer is at least 5 and at most 1"),
    ({"type": "integer", "minimum": 1.2, "maximum": 1.8}, "", "no integer"),
    ({"type": "number", "exclusiveMinimum": 1, "maximum": 1}, "", "no number is above 1"),
    ({"type": "integer", "multipleOf": 5, "minimum": 6, "maximum": 9}, "", "a multiple of 5"),
    ({"type": "number", "multipleOf": 0.5, "minimum": 1.2, "maximum": 1.4}, "", "no number"),
    ({"enum": []}, "", "'enum' is empty"),
    ({"type": "integer", "const": "a"}, "", "'const' does not fit"),
    ({"type": "string", "enum": ["abc", "de"], "maxLength": 1}, "", "no member of 'enum'"),
    ({"const": 1, "enum": [2, 3]}, "", "'const' is not a member of 'enum'"),
    # members of several types: each judged by the rules of its own type
    (
        {"type": ["string", "integer"], "enum": ["ab", 7, None], "minLength": 3, "maximum": 5},
        "",
        "no member",
    ),
    ({"enum": ["abc", [1, 2]], "maxLength": 2, "minItems": 3}, "", "no member of 'enum'"),
    ({"type": "string", "minLength": 3, "maxLength": 2}, "", "'minLength' 3 is above"),
    ({"type": "array", "minItems": 3, "maxItems": 2}, "", "'minItems' 3 is above"),
    ({"type": "object", "required": ["a", "b"], "maxProperties": 1}, "", "2 properties"),
    ({"type": "object", "properties": {"a": False}, "required": ["a"]}, "", "property 'a'"),
    ({"type": "object", "additionalProperties": False, "required": ["a"]}, "", "property 'a'"),
    ({"type": "array", "minItems": 1, "items": False}, "", "'minItems' 1 needs items"),
    # a required property matches its `properties` entry and every matching pattern at once
    (
        {
            "type": "object",
            "properties": {"a": {"type": "string"}},
            "patternProperties": {"^a$": {"type": "integer"}},
            "required": ["a"],
        },
        "",
        "property 'a' must match every schema",
    ),
    (
        {
            "type": "object",
            "patternProperties": {"^a": {"type": "string"}, "a$": {"type": "number"}},
            "required": ["a"],
        },
        "",
        "(/patternProperties/^a, /patternProperties/a$)",
    ),
    ({"type": "array", "prefixItems": [False], "minItems": 1}, "", "item 0"),
    ({"type": "array", "contains": False}, "", "'contains' accepts no value"),
    ({"allOf": [{"type": "string"}, {"type": "integer"}]}, "", "'allOf' branch 1"),
    ({"allOf": [{"type": "integer"}, {"not": {"type": "integer"}}]}, "", "'allOf'"),
    ({"anyOf": [{"type": "string", "maxLength": 0, "minLength": 1}, False]}, "", "'anyOf'"),
    ({"type": "string", "oneOf": [{"type": "integer"}, {"type": "null"}]}, "", "'oneOf'"),
    ({"not": {}}, "", "'not' refuses"),
    ({"type": "integer", "if": {}, "then": {"type": "string"}, "else": False}, "", "'then'"),
    (
        {"$ref": "#/$defs/x", "$defs": {"x": {"type": "integer", "minimum": 3, "maximum": 2}}},
        "",
        "at /$defs/x: no integer",
    ),
    (
        {
            "$schema": "http://json-schema.org/draft-04/schema#",
            "type": "number",
            "minimum": 1,
            "exclusiveMinimum": True,
            "maximum": 1,
        },
        "",
        "no number is above 1",
    ),
    # a sub-schema whose own keywords contradict each other, even where it is optional
    (
        {"type": "object", "properties": {"age": {"type": "integer", "minimum": 5, "maximum": 1}}},
        "/properties/age",
        "no integer",
    ),
    (
        {"$defs": {"unused": {"type": "string", "enum": []}}, "type": "string"},
        "/$defs/unused",
        "'enum' is empty",
    ),
]

SATISFIABLE: list[tuple[dict[str, Any], Any]] = [
    # (schema, a value valid under it)
    ({"minimum": 5, "maximum": 1}, "not a number"),  # the bounds only constrain numbers
    ({"type": "integer", "minimum": 1, "maximum": 1}, 1),
    ({"type": "number", "multipleOf": 0.1, "minimum": 0.3, "maximum": 0.3}, 0.3),
    ({"type": "integer", "multipleOf": 0.5, "minimum": 1.2, "maximum": 2}, 2),
    ({"type": "number", "minimum": 1.2, "maximum": 1.8}, 1.5),
    ({"type": "object", "properties": {"a": False}}, {}),  # forbids a, on purpose
    ({"type": "array", "items": False}, []),
    # a required property's schemas that agree on a kind, or patterns that do not match it
    (
        {
            "properties": {"a": {"type": "number"}},
            "patternProperties": {"^a$": {"type": "integer"}},
            "required": ["a"],
        },
        {"a": 1},
    ),
    (
        {
            "properties": {"a": {"type": "string"}},
            "patternProperties": {"^b$": {"type": "integer"}},
            "required": ["a"],
        },
        {"a": "x"},
    ),
    (  # optional: the object is valid without the key
        {"properties": {"a": {"type": "string"}}, "patternProperties": {"^a$": {"type": "null"}}},
        {},
    ),
    (  # ECMA 262 \d is ASCII only (Python's `re` would match the Arabic-Indic digit)
        {
            "properties": {"\u0663": {"type": "string"}},
            "patternProperties": {"^\\d$": {"type": "integer"}},
            "required": ["\u0663"],
        },
        {"\u0663": "x"},
    ),
    ({"type": ["integer", "string"], "minimum": 5, "maximum": 1}, "text"),
    ({"type": "string", "pattern": "^$", "minLength": 1}, None),  # pattern: not decided
    ({"type": "object", "properties": {"n": {"$ref": "#"}}}, {}),  # recursion
    ({"anyOf": [False, {"type": "null"}]}, None),
    ({"type": "integer", "if": {"minimum": 0}, "then": {"maximum": 9}}, 3),
    ({"not": {"type": "integer"}, "type": "number"}, 1.5),
    ({"type": ["string", "integer"], "enum": ["abc", 7, None], "maxLength": 2}, 7),
    ({"enum": ["abc", "a", [1, 2]], "maxLength": 2, "minItems": 3}, "a"),
    ({"type": "string", "enum": [True, 1, "x"], "minLength": 1}, "x"),
]


@pytest.mark.parametrize(("schema", "where", "phrase"), EMPTY)
def test_an_empty_schema_is_found_with_the_rule_that_proves_it(
    schema: dict[str, Any], where: str, phrase: str
) -> None:
    empty = find_empty(schema)
    assert empty is not None
    assert (empty.location, phrase in empty.reason) == (where, True), empty
    if where == "":
        validator = jsonschema_rs.validator_for(schema)
        assert not [v for v in SAMPLES if validator.is_valid(v)]  # a false proof would show


@pytest.mark.parametrize(("schema", "witness"), SATISFIABLE)
def test_a_schema_that_accepts_a_value_is_never_refused(
    schema: dict[str, Any], witness: Any
) -> None:
    if witness is not None or schema.get("anyOf"):
        assert jsonschema_rs.validator_for(schema).is_valid(witness)
    assert find_empty(schema) is None


def test_parse_refuses_an_empty_schema_naming_the_place() -> None:
    schema = {
        "type": "object",
        "properties": {"age": {"type": "integer", "minimum": 5, "maximum": 1}},
    }
    with pytest.raises(SchemaError) as caught:
        outform.parse("{}", schema)
    assert (
        caught.value.what == "a sub-schema accepts no value: no integer is at least 5 and at most 1"
    )
    assert caught.value.where == "schema at /properties/age"
    assert caught.value.fix is not None and "write false" in caught.value.fix


def test_the_cli_refuses_the_schema_the_issue_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.json"
    path.write_bytes(orjson.dumps({"type": "integer", "minimum": 5, "maximum": 1}))
    assert main(["schema", str(path), "--dialect", "openai_strict"]) == EXIT_USAGE
    err = " ".join(capsys.readouterr().err.split())
    assert "the schema accepts no value: no integer is at least 5 and at most 1" in err


def test_no_real_world_schema_is_refused() -> None:
    refused = [
        row["id"] for row in corpus("jsonschemabench_dev.jsonl") if find_empty(row["schema"])
    ]
    assert refused == []


def test_translate_refuses_a_required_property_its_pattern_contradicts() -> None:
    """The `allOf` form of this contradiction was refused; the `patternProperties` form too."""
    from outform.schema.dialects import translate

    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "patternProperties": {"^a$": {"type": "integer"}},
        "required": ["a"],
    }
    with pytest.raises(SchemaError, match="accepts no value") as caught:
        translate(schema, "openai_strict")
    assert "'a' must match every schema" in str(caught.value)
