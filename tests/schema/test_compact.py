"""The compact shape used in prompts: shorter than JSON Schema, nothing a model needs lost."""

from __future__ import annotations

from typing import Any, Literal

import orjson
from pydantic import BaseModel, Field

from outform.format import ResponseFormat
from outform.plan import schema_instructions
from outform.schema.compact import render
from outform.schema.derive import schema_of


class Line(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-\d+$", description="stock keeping unit")
    quantity: int = Field(ge=1, le=999)


class Order(BaseModel):
    number: str
    status: Literal["open", "paid", "void"] = "open"
    lines: list[Line] = Field(min_length=1)
    notes: str | None = None


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


def test_every_name_constraint_enum_default_and_description_is_kept() -> None:
    shape = render(schema_of(Order))
    for needed in (
        "number: string",
        'status?: "open" | "paid" | "void" = "open"',
        "minItems: 1",
        "sku: string",
        'pattern: "^[A-Z]{3}-\\\\d+$"',
        "// stock keeping unit",
        "minimum: 1",
        "maximum: 999",
        "notes?: string | null = null",
    ):
        assert needed in shape, needed
    assert len(shape) < len(orjson.dumps(schema_of(Order)))


def test_a_recursive_definition_is_a_named_type_written_once() -> None:
    shape = render(schema_of(Tree))
    assert shape.count("type Tree = {") == 1
    assert "children?: Tree[] = []" in shape


def test_a_definition_used_twice_is_named_and_one_used_once_is_inlined() -> None:
    schema = {
        "type": "object",
        "properties": {
            "home": {"$ref": "#/$defs/Address"},
            "work": {"$ref": "#/$defs/Address"},
            "owner": {"$ref": "#/$defs/Owner"},
        },
        "$defs": {
            "Address": {"type": "object", "properties": {"city": {"type": "string"}}},
            "Owner": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }
    shape = render(schema)
    assert "home?: Address" in shape and "work?: Address" in shape
    assert "type Address = {" in shape
    assert "Owner" not in shape and "name?: string" in shape


def test_keywords_without_a_notation_reach_the_model_verbatim() -> None:
    schema = {"type": "string", "format": "email", "x-vendor": {"a": 1}}
    assert render(schema) == 'string (format: "email", x-vendor: {"a":1})'


def test_unions_tuples_maps_and_quoted_bars() -> None:
    assert render({"enum": ["a | b", "c"]}) == '"a | b" | "c"'
    union = {
        "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": ["integer", "null"]}}]
    }
    assert render(union) == "string | (integer | null)[]"
    pair: dict[str, Any] = {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "number"}],
    }
    assert render(pair) == "[string, number, ...any[]]"
    table = {"type": "object", "additionalProperties": {"type": "integer"}}
    assert render(table) == "{\n  [key: string]: integer\n}"
    assert render({"allOf": [{"$ref": "#/$defs/A"}, {"required": ["x"]}], "$defs": {"A": {}}}) == (
        "any & {\n  x: any\n}"
    )


def test_instructions_use_the_shape_when_shorter_and_the_raw_schema_otherwise() -> None:
    text = schema_instructions(ResponseFormat.of(Order))
    assert "JSON" in text and "lines: {" in text and '"properties"' not in text
    small = schema_instructions(ResponseFormat.json_schema({"type": "string"}))
    assert small.endswith('JSON Schema:\n{"type":"string"}')
