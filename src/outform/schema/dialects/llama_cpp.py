"""llama.cpp `llama-server` (`json_schema`, `response_format`), through its JSON Schema to grammar
converter.

Facts (llama.cpp `grammars/README.md`, the JSON Schema to grammar section): `additionalProperties`
defaults to false (true may produce keys with raw newlines); unsupported features are skipped
silently (so outform removes them and checks them); `properties` cannot be mixed with
`anyOf`/`oneOf` in one node; `prefixItems` is broken; `minimum`/`maximum` work only for
integers; nested `$ref`s are broken (outform inlines every reference, so recursion is refused);
no remote refs; `pattern` must start with `^` and end with `$` (and its regex converter has no
`\\p{...}` Unicode classes); the string formats lack `uri` and `email`; no `patternProperties`,
`uniqueItems`, `contains`, `not`, `if`/`then`/`else`.
"""

from __future__ import annotations

from outform.schema.dialects.rules import DialectRules, anchored_simple

RULES = DialectRules(
    name="llama_cpp",
    provider="llama.cpp",
    wire="json_schema (native /completion) or response_format.json_schema.schema",
    source="llama.cpp tools/server/README.md; grammars/README.md",
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
            "description",
            "title",
            "default",
            "pattern",
            "format",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
            "minimum",
            "maximum",
        }
    ),
    closed_by_default=True,
    refs=False,
    recursion="no",
    type_lists="any",
    formats=frozenset({"date", "time", "date-time", "uuid"}),
    numeric_bounds=frozenset({"integer"}),
    pattern_ok=anchored_simple,
    notes=(
        "the schema is not shown to the model: describe it in the prompt too",
        "minimum/maximum are enforced for integers only",
    ),
)
