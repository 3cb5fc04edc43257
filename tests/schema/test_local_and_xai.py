"""Grammar converters (llama.cpp, Ollama) and xAI."""

from __future__ import annotations

import pytest

from outform.errors import DialectError
from outform.schema.dialects import translate
from tests.schema.helpers import entry, obeys_rules, round_trip


def test_llama_cpp_inlines_references_and_closes_objects_by_default() -> None:
    schema = {
        "$defs": {"pt": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/pt"}, "b": {"$ref": "#/$defs/pt"}},
    }
    result = translate(schema, "llama_cpp")
    assert result.schema["properties"]["a"] == result.schema["properties"]["b"]
    assert "$ref" not in str(result.schema)
    assert result.schema["additionalProperties"] is False
    obeys_rules(result)


def test_llama_cpp_keeps_only_anchored_patterns_and_folds_tuples() -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": "^[0-9]+$"},
            "word": {"type": "string", "pattern": "cat"},
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
        },
    }
    result = translate(schema, "llama_cpp")
    props = result.schema["properties"]
    assert props["id"]["pattern"] == "^[0-9]+$"
    assert "pattern" not in props["word"]
    assert props["pair"] == {
        "type": "array",
        "items": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        "maxItems": 2,
    }
    assert entry(result, "/properties/pair", "prefixItems").disposition == "checked_locally"
    round_trip(result, {"pair": ["a", 1]})


def test_ollama_is_llama_cpp_under_another_name() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    assert translate(schema, "ollama").schema == translate(schema, "llama_cpp").schema
    assert translate(schema, "ollama").rules.provider == "Ollama"


def test_xai_writes_additional_properties_true_when_objects_stay_open() -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    closed = translate(schema, "xai")
    assert "additionalProperties" in closed.schema
    assert closed.schema["additionalProperties"] is False
    kept = translate(schema, "xai", open_objects="keep")
    assert kept.schema["additionalProperties"] is True
    round_trip(kept, {"x": "a", "y": 1})


def test_xai_enforces_lengths_only_up_to_2048() -> None:
    schema = {
        "type": "object",
        "properties": {
            "short": {"type": "string", "maxLength": 100},
            "long": {"type": "string", "maxLength": 5000},
        },
    }
    result = translate(schema, "xai")
    assert result.schema["properties"]["long"]["maxLength"] == 5000
    assert entry(result, "/properties/short", "maxLength").disposition == "enforced"
    assert entry(result, "/properties/long", "maxLength").disposition == "checked_locally"
    obeys_rules(result)


def test_xai_refuses_circular_references() -> None:
    with pytest.raises(DialectError, match="recursive"):
        translate({"type": "object", "properties": {"n": {"$ref": "#"}}}, "xai")
