"""OpenAI Structured Outputs with `strict: true` (Chat `response_format`, Responses `text.format`,
strict function tools).

Facts (OpenAI's structured-outputs guide; pydantic-ai's empirical
list, §18.3): the root is an object, not a union; every object says
`additionalProperties: false` and lists every property in `required` (an optional field is
written as nullable); `$defs` and recursion are fine; the supported keywords are `pattern`,
`format` (nine formats), numeric bounds and `multipleOf`, `minItems`/`maxItems`; `allOf`, `not`,
`if`/`then`/`else`, `dependent*`, `minLength`/`maxLength`, `patternProperties`, `propertyNames`,
`min/maxProperties`, `uniqueItems`, `contains` and regex look-arounds are refused (a 400, not a
silent drop). Size: 5000 properties, 10 levels of nesting, 1000 enum values, 120,000 characters
of names and values; a string enum of more than 250 values at most 15,000 characters.
"""

from __future__ import annotations

from outform.schema.dialects.rules import PRIMITIVES, DialectRules, Limits, no_lookaround

RULES = DialectRules(
    name="openai_strict",
    provider="OpenAI",
    wire="response_format.json_schema.schema (Chat) or text.format.schema (Responses), "
    "with strict: true; tools[].function.parameters with strict: true",
    source="platform.openai.com/docs/guides/structured-outputs; pydantic-ai's transformer",
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
            "$ref",
            "$defs",
            "description",
            "title",
            "pattern",
            "format",
            "multipleOf",
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "minItems",
            "maxItems",
        }
    ),
    object_root=True,
    closed_objects=True,
    all_required=True,
    typed_nodes=True,
    schema_maps=False,
    refs=True,
    recursion="yes",
    ref_siblings="none",
    type_lists="nullable",
    enum_types=PRIMITIVES,
    formats=frozenset(
        {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
    ),
    pattern_ok=no_lookaround,
    boolean_schemas=False,
    limits=Limits(
        properties=5000,
        depth=10,
        enum_values=1000,
        characters=120_000,
        large_enum=(250, 15_000),
    ),
    notes=(
        "JSON mode (json_object) needs the word 'json' in the input messages",
        "not compatible with parallel tool calls: send parallel_tool_calls: false",
    ),
)
