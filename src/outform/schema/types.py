"""Which JSON types a schema node accepts, as far as its keywords say."""

from __future__ import annotations

from typing import Any

from outform.schema.compiled import CompiledSchema

ALL_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
_TYPE_HINTS = {
    "properties": "object",
    "additionalProperties": "object",
    "patternProperties": "object",
    "required": "object",
    "items": "array",
    "prefixItems": "array",
    "minItems": "array",
    "maxItems": "array",
    "minLength": "string",
    "maxLength": "string",
    "pattern": "string",
}


JSON_TYPE_NAMES: dict[type, str] = {
    type(None): "null",
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    tuple: "array",
    dict: "object",
}
"""`json_type` by the exact type of a value."""


def json_type(value: Any) -> str:
    """The JSON Schema type name of a Python JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def choices(schema: dict[str, Any]) -> list[Any] | None:
    """The values `const` or `enum` allow, or None when the node has neither."""
    if "const" in schema:
        return [schema["const"]]
    enum = schema.get("enum")
    return enum if isinstance(enum, list) else None


def own_types(schema: dict[str, Any]) -> frozenset[str] | None:
    """Types allowed by the node's own keywords (not its combinators); None = unconstrained."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset({kind})
    if isinstance(kind, list):
        return frozenset(k for k in kind if isinstance(k, str))
    values = choices(schema)
    if values is not None:
        kinds = set(map(type, values))  # (one pass in C: enums may have a million members)
        if kinds <= JSON_TYPE_NAMES.keys():
            return frozenset(JSON_TYPE_NAMES[k] for k in kinds)
        return frozenset(json_type(v) for v in values)
    hinted = {hint for key, hint in _TYPE_HINTS.items() if key in schema}
    return frozenset(hinted) if len(hinted) == 1 else None


def accepted_types(compiled: CompiledSchema, location: str = "", depth: int = 0) -> frozenset[str]:
    """Types a node accepts, looking through `$ref`, `anyOf`, `oneOf` and `allOf`."""
    location, schema = compiled.resolve(location)
    if schema is False:
        return frozenset()
    if not isinstance(schema, dict) or depth > 8:
        return ALL_TYPES
    result = own_types(schema) or ALL_TYPES
    for keyword in ("anyOf", "oneOf"):
        branches = schema.get(keyword)
        if isinstance(branches, list):
            union: frozenset[str] = frozenset()
            for index in range(len(branches)):
                union |= accepted_types(compiled, f"{location}/{keyword}/{index}", depth + 1)
            result &= union
    branches = schema.get("allOf")
    if isinstance(branches, list):
        for index in range(len(branches)):
            result &= accepted_types(compiled, f"{location}/allOf/{index}", depth + 1)
    if "number" in result:
        result |= {"integer"}
    return result
