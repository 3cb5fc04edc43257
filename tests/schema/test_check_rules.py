"""The rule checker catches what each provider documents as refused (sources in each dialect)."""

from __future__ import annotations

from typing import Any

import pytest

from outform.schema.dialects import check_rules


def rules_broken(schema: Any, dialect: str) -> set[str]:
    return {problem.rule for problem in check_rules(schema, dialect)}


def closed(**props: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": list(props),
        "additionalProperties": False,
    }


def test_a_good_openai_strict_schema_passes() -> None:
    assert check_rules(closed(a={"type": ["string", "null"]}), "openai_strict") == []


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        ({"type": "object", "properties": {}, "required": []}, "closed"),
        ({**closed(a={"type": "string"}), "required": []}, "all_required"),
        ({"type": "array", "items": {"type": "string"}}, "object_root"),
        ({"anyOf": [closed(), closed()]}, "object_root"),
        (closed(a={"allOf": [{"type": "string"}]}), "keyword"),
        (closed(a={"type": "string", "minLength": 1}), "keyword"),
        (closed(a={"type": "string", "pattern": "a(?=b)"}), "pattern"),
        (closed(a={"type": "string", "format": "uri"}), "format"),
        (closed(a={"type": "array"}), "items"),
        (closed(a={"description": "anything"}), "typed"),
        (closed(a={"$ref": "#/$defs/x", "description": "d"}), "ref_siblings"),
        (closed(a={"type": ["string", "integer"]}), "type_list"),
        (closed(a={"enum": [{"x": 1}], "type": "object"}), "enum"),
    ],
)
def test_openai_strict_refusals(schema: dict[str, Any], rule: str) -> None:
    assert rule in rules_broken(schema, "openai_strict")


def test_openai_strict_nesting_limit() -> None:
    schema = closed(a={"type": "string"})
    for _ in range(10):
        schema = closed(a=schema)
    assert "limit" in rules_broken(schema, "openai_strict")


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        (closed(a={"type": "array", "items": {"type": "string"}, "minItems": 2}), "min_items"),
        (closed(a={"type": "integer", "maximum": 3}), "keyword"),
        (closed(a={"type": "string", "pattern": "(a)\\1"}), "pattern"),
        (
            {
                **closed(n={"$ref": "#/$defs/n"}),
                "$defs": {"n": closed(n={"anyOf": [{"$ref": "#/$defs/n"}, {"type": "null"}]})},
            },
            "recursion",
        ),
        (
            {
                "type": "object",
                "properties": {f"p{i}": {"type": "string"} for i in range(25)},
                "additionalProperties": False,
            },
            "limit",
        ),
    ],
)
def test_anthropic_refusals(schema: dict[str, Any], rule: str) -> None:
    assert rule in rules_broken(schema, "anthropic")


def test_bedrock_accepts_string_lengths_but_not_numeric_bounds() -> None:
    assert rules_broken(closed(a={"type": "string", "maxLength": 3}), "bedrock") == set()
    assert "keyword" in rules_broken(closed(a={"type": "number", "minimum": 3}), "bedrock")


def test_gemini_rules() -> None:
    assert (
        check_rules({"type": "object", "additionalProperties": {"type": "integer"}}, "gemini") == []
    )
    described_ref = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/a", "description": "x"}},
        "$defs": {"a": {"type": "string"}},
    }
    assert "ref_siblings" in rules_broken(described_ref, "gemini")
    required_cycle = {"type": "object", "properties": {"n": {"$ref": "#"}}, "required": ["n"]}
    assert "recursion" in rules_broken(required_cycle, "gemini")
    optional_cycle = {"type": "object", "properties": {"n": {"$ref": "#"}}}
    assert "recursion" not in rules_broken(optional_cycle, "gemini")
    assert "enum" in rules_broken({"type": "boolean", "enum": [True]}, "gemini")


def test_gemini_openapi_rules() -> None:
    good = {
        "type": "OBJECT",
        "properties": {"a": {"type": "STRING", "nullable": True}},
        "propertyOrdering": ["a"],
    }
    assert check_rules(good, "gemini_openapi") == []
    assert "type" in rules_broken({"type": "object"}, "gemini_openapi")
    assert "ref" in rules_broken(
        {"type": "OBJECT", "properties": {"a": {"$ref": "#"}}}, "gemini_openapi"
    )
    assert "ordering" in rules_broken(
        {"type": "OBJECT", "properties": {"a": {"type": "STRING"}}, "propertyOrdering": ["b"]},
        "gemini_openapi",
    )
    assert "enum" in rules_broken({"type": "INTEGER", "enum": [1]}, "gemini_openapi")


def test_xai_and_llama_cpp_rules() -> None:
    assert "boolean_schema" in rules_broken({"type": "object", "properties": {"a": True}}, "xai")
    assert "items" in rules_broken({"type": "array", "items": [{"type": "string"}]}, "xai")
    assert "pattern" in rules_broken({"type": "string", "pattern": "[a-z]+"}, "llama_cpp")
    assert "ref" in rules_broken({"$defs": {}, "$ref": "#/$defs/a"}, "llama_cpp")
