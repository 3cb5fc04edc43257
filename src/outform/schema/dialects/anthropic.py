"""Anthropic structured outputs (`output_config.format`) and strict tools.

Facts (Anthropic's structured-outputs guide and the official SDK's `transform_schema`):
every object says `additionalProperties: false` (but `required` may list only some
properties); `$ref`/`$defs` are fine but recursion is not; no numeric bounds, no string lengths;
`minItems` only 0 or 1; `enum` of primitive values; `const`, `anyOf`, formats from a list of ten;
simple regexes only (no back-references, look-arounds or `\\b`). The grammar compiler refuses
schemas over 24 optional properties or 16 union-typed properties per request (secondary source,
consistent with reported "schema is too complex" errors). Unsupported keywords are a 400.
"""

from __future__ import annotations

from outform.schema.dialects.rules import PRIMITIVES, DialectRules, Limits, simple_regex

ACCEPTED = frozenset(
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
        "minItems",
    }
)
FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

RULES = DialectRules(
    name="anthropic",
    provider="Anthropic",
    wire="output_config.format.schema (type json_schema); tools[].input_schema with strict: true",
    source="docs.anthropic.com/en/docs/build-with-claude/structured-outputs; SDK transform_schema",
    enforcing=True,
    accepted=ACCEPTED,
    object_root=True,
    closed_objects=True,
    typed_nodes=True,
    schema_maps=False,
    refs=True,
    recursion="no",
    ref_siblings="none",
    type_lists="none",
    enum_types=PRIMITIVES,
    formats=FORMATS,
    pattern_ok=simple_regex,
    min_items=frozenset({0, 1}),
    boolean_schemas=False,
    limits=Limits(optional_properties=24, union_properties=16),
    notes=(
        "no JSON-object mode",
        "extended thinking refuses a forced tool_choice; output_config.format works with it",
        "JSON outputs are incompatible with citations and with assistant prefill",
    ),
)
