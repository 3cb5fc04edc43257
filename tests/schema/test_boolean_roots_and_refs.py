"""A boolean root schema (`true`, `false`) and a `$ref` that points at nothing: read as JSON
Schema defines them, at every entry point, with errors that name the place."""

from __future__ import annotations

from typing import Any

import pytest

import outform
from outform import SchemaError
from outform.schema.check import check_schema
from outform.schema.compiled import compile_schema
from outform.schema.dialects import translate

# -- `true` is any JSON value, `false` no value ----------------------------------------------

TRUE: Any = True  # (parse's signature names dicts; a boolean schema is JSON Schema too)
FALSE: Any = False


@pytest.mark.parametrize("text", ['{"a": [1, "x"]}', "[1, 2]", '"text"', "3.5", "null"])
def test_true_accepts_any_json_value_as_the_empty_schema_does(text: str) -> None:
    assert outform.parse(text, schema=TRUE).value == outform.parse(text, schema={}).value


@pytest.mark.parametrize("dialect", ["openai_strict", "gemini", "anthropic", "llama_cpp"])
def test_true_translates_as_the_empty_schema(dialect: str) -> None:
    assert translate(True, dialect).schema == translate({}, dialect).schema


def test_true_compiles_as_the_empty_schema() -> None:
    assert compile_schema(True) is compile_schema({})
    check_schema(True)


@pytest.mark.parametrize(
    "call",
    [
        lambda: outform.parse("{}", schema=FALSE),
        lambda: translate(False, "gemini"),
        lambda: compile_schema(False),
        lambda: check_schema(False),
    ],
    ids=["parse", "translate", "compile", "check"],
)
def test_false_is_a_schema_error_saying_it_accepts_no_value(call: Any) -> None:
    with pytest.raises(SchemaError, match="accepts no value") as caught:
        call()
    assert caught.value.where is not None and caught.value.where.endswith(" at /")
    assert caught.value.fix is not None and "true" in caught.value.fix


def test_a_boolean_inside_a_schema_is_still_read_as_before() -> None:
    schema = {"type": "object", "properties": {"a": True, "b": False}}
    assert outform.parse('{"a": [1]}', schema).value == {"a": [1]}


# -- a local `$ref` that points at nothing ---------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "where", "said"),
    [
        (
            {
                "type": "object",
                "properties": {
                    "a": {"type": "object", "properties": {"b": {"items": {"$ref": "#/$defs/N"}}}}
                },
            },
            "schema at /properties/a/properties/b/items/$ref",
            "the root has no '$defs'",
        ),
        (
            {
                "$defs": {"X": {"properties": {"y": {"$ref": "#/$defs/Nope"}}}},
                "properties": {"x": {"$ref": "#/$defs/X"}},
            },
            "schema at /$defs/X/properties/y/$ref",
            "/$defs has no 'Nope', only: X",
        ),
        (
            {"properties": {"default": {"$ref": "#/properties/zz"}}},
            "schema at /properties/default/$ref",
            "/properties has no 'zz', only: default",
        ),
    ],
    ids=["deep-in-properties", "inside-a-definition", "a-property-named-default"],
)
def test_a_missing_ref_is_named_where_it_is_and_by_what_it_points_at(
    schema: dict[str, Any], where: str, said: str
) -> None:
    for call in (compile_schema, lambda s: translate(s, "openai_strict")):
        with pytest.raises(SchemaError) as caught:
            call(schema)
        assert caught.value.where == where
        assert "which is not in the schema" in caught.value.what
        assert said in caught.value.what


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": {"a": {"$ref": "#/$defs/a%20b"}}, "$defs": {"a b": {}}},
        {"properties": {"a": {"$ref": "#/$defs/a~1b"}}, "$defs": {"a/b": {}}},
        {"properties": {"a": {"$ref": "#"}}},
        {"properties": {"a": {"$ref": "#here"}}, "$defs": {"x": {"$anchor": "here"}}},
        {  # resolved inside the resource its `$id` opens
            "$defs": {
                "A": {
                    "$id": "https://example.invalid/a.json",
                    "$defs": {"B": {"type": "string"}},
                    "properties": {"b": {"$ref": "#/$defs/B"}},
                }
            },
            "properties": {"a": {"$ref": "#/$defs/A"}},
        },
    ],
    ids=["percent-encoded", "escaped-slash", "root", "anchor", "inside-an-id"],
)
def test_refs_that_resolve_are_not_reported(schema: dict[str, Any]) -> None:
    compile_schema(schema)
