"""What each provider accepts and enforces in a JSON Schema, stated once, as data.

A `DialectRules` is the fact sheet of one dialect, written from the providers' documentation
(see docs/dialects.md for the sources). The transformer in `base.py` reads it to decide what
to send; the checker in `check.py` reads it to verify what was sent. Each module of this
package that defines a dialect builds one `DialectRules` and says where its facts come from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "example",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
        "$schema",
        "$id",
        "id",
        "$anchor",
        "$dynamicAnchor",
        "$vocabulary",
        "contentMediaType",
        "contentEncoding",
        "contentSchema",
        "discriminator",
        "nullable",
    }
)
"""Keywords that inform but never make a value invalid (`nullable` is OpenAPI's, not JSON
Schema's: a JSON Schema validator ignores it)."""

CORE = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "anyOf", "$ref"}
)
"""The structure every constrained decoder enforces: types, keys, items, choices."""

STANDARD = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "propertyNames",
        "minProperties",
        "maxProperties",
        "dependentRequired",
        "dependentSchemas",
        "items",
        "prefixItems",
        "contains",
        "minContains",
        "maxContains",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
        "$defs",
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
"""The draft 2020-12 vocabulary outform emits (every wire schema is written in 2020-12 form)."""

JSON_TYPES = frozenset({"null", "boolean", "integer", "number", "string", "array", "object"})
PRIMITIVES = frozenset({"null", "boolean", "integer", "number", "string"})


@dataclass(frozen=True)
class Limits:
    """Documented size limits; None means no documented limit."""

    properties: int | None = None
    """Object properties in the whole schema (OpenAI: 5000)."""
    depth: int | None = None
    """Levels of object nesting (OpenAI: 10)."""
    enum_values: int | None = None
    """Enum values across the schema (OpenAI: 1000)."""
    characters: int | None = None
    """Characters of property names, definition names, enum and const values (OpenAI: 120,000)."""
    large_enum: tuple[int, int] | None = None
    """(values, characters): a string enum with more values may total at most that many
    characters (OpenAI: 250, 15,000)."""
    optional_properties: int | None = None
    """Properties not listed in `required`, summed over the schema (Anthropic: 24)."""
    union_properties: int | None = None
    """Properties whose schema is a union (`anyOf` or a type list) (Anthropic: 16)."""


@dataclass(frozen=True)
class DialectRules:
    """The fact sheet of one dialect: what may be sent, what the provider enforces."""

    name: str
    provider: str
    wire: str
    """Where the schema travels in the request, for people (e.g. `output_config.format.schema`)."""
    source: str
    """Where the facts come from: the provider's documentation, an official SDK."""
    enforcing: bool
    """Whether the provider constrains decoding with the schema (False: guidance only)."""
    accepted: frozenset[str]
    """Keywords the wire schema may contain, annotations included."""
    unenforced: frozenset[str] = frozenset()
    """Accepted keywords the provider is not documented to enforce: sent as guidance, and
    recorded as checked locally."""
    object_root: bool = False
    """The root must be a plain object (not a union, not a `$ref`)."""
    closed_objects: bool = False
    """Every object must say `additionalProperties: false`."""
    closed_by_default: bool = False
    """The provider reads a missing `additionalProperties` as false (xAI, llama.cpp)."""
    all_required: bool = False
    """Every property must be listed in `required` (optional ones are made nullable)."""
    typed_nodes: bool = False
    """Every node needs `type`, `anyOf` or `$ref`: a node accepting any value is not allowed."""
    typed_items: bool = False
    """Every array must give `items`."""
    schema_maps: bool = True
    """`additionalProperties` may be a schema or true (a map with free keys)."""
    refs: bool = True
    """`$ref` to `$defs` is accepted (False: every reference is inlined)."""
    recursion: Literal["yes", "no", "optional_only"] = "yes"
    """Recursive references: accepted, refused, or only through properties that are not
    required (Gemini)."""
    ref_siblings: Literal["any", "none", "dollar"] = "any"
    """What may stand beside `$ref`: anything, nothing, or only keywords starting with `$`."""
    type_lists: Literal["any", "nullable", "none"] = "any"
    """`type` as a list: any list, only `[T, "null"]`, or never (write `anyOf`)."""
    enum_types: frozenset[str] = JSON_TYPES
    """JSON types allowed as enum values."""
    formats: frozenset[str] | None = None
    """String formats accepted; None means any."""
    pattern_ok: Callable[[str], bool] | None = None
    """Whether a regular expression is within the provider's regex subset."""
    min_items: frozenset[int] | None = None
    """Values `minItems` may take (Anthropic: 0 or 1); None means any."""
    numeric_bounds: frozenset[str] = frozenset({"integer", "number"})
    """Types on which the provider enforces minimum / maximum (llama.cpp: integers only)."""
    bounds: Mapping[str, int] = field(default_factory=dict)
    """Largest value the provider enforces for a keyword (xAI: maxLength 2048, ...)."""
    boolean_schemas: bool = True
    """`true` / `false` may stand for a sub-schema."""
    limits: Limits = Limits()
    render: Literal["json_schema", "openapi"] = "json_schema"
    """How the schema is written: JSON Schema, or Gemini's OpenAPI `Schema` object."""
    payload: Literal["object", "string"] = "object"
    """How the schema travels: as an object, or JSON-encoded in a string (Bedrock)."""
    notes: tuple[str, ...] = ()
    """Facts that are not rules of the schema, for the documentation table."""

    def claims(self, keyword: str) -> bool:
        """Whether a keyword sent under this dialect is enforced by the provider."""
        return self.enforcing and keyword in self.accepted and keyword not in self.unenforced

    @property
    def closes_open_objects(self) -> bool:
        """Whether an object that does not say `additionalProperties` is closed by default."""
        return self.closed_objects or self.closed_by_default or not self.schema_maps


_LOOKAROUND = re.compile(r"\(\?<?[=!]")
_BACKREFERENCE = re.compile(r"\\[1-9]|\\k<")
_WORD_BOUNDARY = re.compile(r"\\[bB]")
_UNICODE_CLASS = re.compile(r"\\[pP]\{")
_INLINE_FLAGS = re.compile(r"\(\?[a-zA-Z]+[:)]")


def _escaped(pattern: str, regex: re.Pattern[str]) -> bool:
    """Whether `regex` matches in `pattern` at a position not preceded by a backslash escape."""
    for match in regex.finditer(pattern):
        before = match.start()
        while before and pattern[before - 1] == "\\":
            before -= 1  # only the run of backslashes is read: linear in the pattern
        if (match.start() - before) % 2 == 0:
            return True
    return False


def no_lookaround(pattern: str) -> bool:
    """OpenAI strict: look-ahead and look-behind are refused."""
    return not _escaped(pattern, _LOOKAROUND)


def simple_regex(pattern: str) -> bool:
    """Anthropic / Bedrock: no back-references, look-arounds or word boundaries."""
    return not (
        _escaped(pattern, _LOOKAROUND)
        or _escaped(pattern, _BACKREFERENCE)
        or _escaped(pattern, _WORD_BOUNDARY)
    )


def ecmascript_subset(pattern: str) -> bool:
    """xAI: simple regexes, and also no `\\p{...}` classes or inline flags."""
    return simple_regex(pattern) and not (
        _escaped(pattern, _UNICODE_CLASS) or _escaped(pattern, _INLINE_FLAGS)
    )


def anchored_simple(pattern: str) -> bool:
    """llama.cpp's grammar converter: the pattern must start with ^ and end with $, and use
    no `\\p{...}` class (ECMA's Unicode properties: the converter has none; it copies `\\p`
    as an escape and reads `{L}` as a repetition count, which fails or constrains something
    else)."""
    return (
        pattern.startswith("^")
        and pattern.endswith("$")
        and not pattern.endswith("\\$")
        and simple_regex(pattern)
        and not _escaped(pattern, _UNICODE_CLASS)
    )


__all__ = [
    "ANNOTATIONS",
    "CORE",
    "JSON_TYPES",
    "PRIMITIVES",
    "STANDARD",
    "DialectRules",
    "Limits",
    "anchored_simple",
    "ecmascript_subset",
    "no_lookaround",
    "simple_regex",
]
