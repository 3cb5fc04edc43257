"""xAI Grok structured outputs (`response_format` json_schema; tools are always strict).

Facts (docs.x.ai structured outputs): draft 2020-12 (draft-07
accepted); `additionalProperties` defaults to false (outform writes true when the original
allows other keys); properties not in `required` stay optional; `$ref`/`$defs` only
non-circular; `oneOf` is read as anyOf; `allOf` with one member only; enforced formats `date`,
`time`, `date-time`, `email`, `uuid`, `ipv4`, `ipv6`, `uri`; string lengths enforced up to 2048,
item counts up to 256, property counts up to 64 (beyond: best effort); `not` and `if` only best
effort; refused (400): empty `enum`/`anyOf`, boolean sub-schemas, `minContains`/`maxContains`,
array-form `items`; regexes without back-references, `\\p{}`, `\\b`, look-arounds or inline
flags.
"""

from __future__ import annotations

from outform.schema.dialects.rules import DialectRules, ecmascript_subset

RULES = DialectRules(
    name="xai",
    provider="xAI",
    wire="response_format.json_schema.schema (tools: function.parameters, always strict)",
    source="docs.x.ai/developers/model-capabilities/text/structured-outputs",
    enforcing=True,
    accepted=frozenset(
        {
            "type",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "anyOf",
            "enum",
            "const",
            "$ref",
            "$defs",
            "description",
            "title",
            "format",
            "pattern",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "minProperties",
            "maxProperties",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
        }
    ),
    closed_by_default=True,
    refs=True,
    recursion="no",
    formats=frozenset({"date", "time", "date-time", "email", "uuid", "ipv4", "ipv6", "uri"}),
    pattern_ok=ecmascript_subset,
    bounds={
        "minLength": 2048,
        "maxLength": 2048,
        "minItems": 256,
        "maxItems": 256,
        "minProperties": 64,
        "maxProperties": 64,
    },
    boolean_schemas=False,
    notes=("structured output together with tools only on Grok 4 models",),
)
