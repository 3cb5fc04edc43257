"""Google Gemini: `responseJsonSchema` (JSON Schema) and `responseSchema` (OpenAPI subset).

`gemini` — facts (Gemini's structured-output guide, the python-genai `response_json_schema`
docstring, the Nov 2025 announcement): supported keywords are `$id`, `$defs`, `$ref`,
`$anchor`, `type`, `format`, `title`, `description`, `enum` (strings and numbers), `items`,
`prefixItems`, `minItems`, `maxItems`, `minimum`, `maximum`, `anyOf`, `oneOf` (read as anyOf),
`properties`, `additionalProperties` (boolean or schema), `required`, `propertyOrdering`; null
through a type list; documented formats `date-time`, `date`, `time`. A `$ref` may have only
`$`-keywords beside it; a cyclic `$ref` may only sit in a property that is not required.
Unsupported keywords are ignored rather than refused, so outform removes them and checks them.

`gemini_openapi` — the older `responseSchema` (OpenAPI 3.0 `Schema`, as google-genai sends it):
no `$ref` (inlined, so no recursion), upper-case types, `nullable` instead of a null type,
string-only `enum`, no `additionalProperties`, explicit `propertyOrdering` (Gemini 2.0 needs it).
The keyword list is the conservative one the API's older `Schema` message reports (type, format,
description, nullable, enum, items, minItems, maxItems, properties, required) plus `anyOf` and
`propertyOrdering`.
"""

from __future__ import annotations

from typing import Any

from outform.schema.dialects.rules import DialectRules

RULES = DialectRules(
    name="gemini",
    provider="Google Gemini",
    wire="generationConfig.responseJsonSchema (with responseMimeType application/json)",
    source="ai.google.dev/gemini-api/docs/structured-output; python-genai response_json_schema",
    enforcing=True,
    accepted=frozenset(
        {
            "$defs",
            "$ref",
            "type",
            "format",
            "title",
            "description",
            "enum",
            "items",
            "prefixItems",
            "minItems",
            "maxItems",
            "minimum",
            "maximum",
            "anyOf",
            "oneOf",
            "properties",
            "additionalProperties",
            "required",
            "propertyOrdering",
            "$id",
            "$anchor",
        }
    ),
    refs=True,
    recursion="optional_only",
    ref_siblings="dollar",
    type_lists="any",
    enum_types=frozenset({"string", "number", "integer"}),
    formats=frozenset({"date-time", "date", "time"}),
    notes=(
        "JSON mode: responseMimeType application/json without a schema",
        "structured output together with function tools only on Gemini 3",
        "no strict flag and no schema name",
    ),
)

OPENAPI_RULES = DialectRules(
    name="gemini_openapi",
    provider="Google Gemini (responseSchema)",
    wire="generationConfig.responseSchema (OpenAPI Schema object)",
    source="ai.google.dev/gemini-api/docs/structured-output; google-genai response_schema",
    enforcing=True,
    accepted=frozenset(
        {
            "type",
            "format",
            "description",
            "nullable",
            "enum",
            "items",
            "minItems",
            "maxItems",
            "properties",
            "required",
            "propertyOrdering",
            "anyOf",
        }
    ),
    typed_nodes=True,
    schema_maps=False,
    refs=False,
    recursion="no",
    type_lists="nullable",
    enum_types=frozenset({"string"}),
    formats=frozenset({"date-time"}),
    boolean_schemas=False,
    render="openapi",
    notes=("types are upper-case; null is `nullable: true`", "Gemini 2.0 needs propertyOrdering"),
)


def to_openapi(node: Any) -> Any:
    """Write a (standard) wire schema as Gemini's OpenAPI `Schema` object."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    nullable = False
    for key, value in node.items():
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            nullable = nullable or ("null" in kinds and len(kinds) > 1)
            named = [k for k in kinds if k != "null"] or ["null"]
            out["type"] = named[0].upper()
        elif key == "enum":
            nullable = nullable or None in value
            out["enum"] = [v for v in value if v is not None]
        elif key == "anyOf":
            members = [m for m in value if m != {"type": "null"}]
            nullable = nullable or len(members) < len(value)
            if len(members) == 1 and set(node) <= {"anyOf", "description"}:
                inner = to_openapi(members[0])
                out.update({k: v for k, v in inner.items() if k not in out})
                nullable = nullable or inner.get("nullable", False)
            else:
                out["anyOf"] = [to_openapi(m) for m in members]
        elif key == "properties":
            out["properties"] = {name: to_openapi(child) for name, child in value.items()}
            if value:
                out["propertyOrdering"] = list(value)
        elif key == "items":
            out["items"] = to_openapi(value)
        else:
            out[key] = value
    if nullable:
        out["nullable"] = True
    return out
